"""``load_config``: the MCP server configs that hosts write, as ``connect()`` entries.

Shapes read: ``{"mcpServers": {...}}`` (Claude Desktop, Cursor, Claude Code's
``.mcp.json``, Windsurf, Cline), ``{"servers": {...}}`` (VS Code
``.vscode/mcp.json``, JSON with comments and trailing commas) and
``{"mcp": {"servers": {...}}}`` (VS Code ``settings.json``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Union

from ._headers import header_problem
from .exceptions import MCPError

if TYPE_CHECKING:
    from pathlib import Path

ConfigSource = Union[str, "os.PathLike[str]", Mapping[str, Any]]

#: transport spellings found in the wild -> the Client constructor they mean
TRANSPORT_KINDS = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}
#: the largest config file read (bytes): host configs are a few kB; this bounds memory and time
MAX_CONFIG_BYTES = 8 * 1024 * 1024
#: the largest ``envFile`` read (bytes)
MAX_ENV_FILE_BYTES = 1024 * 1024
#: how deep objects and arrays may nest (host configs nest 4 or 5 levels); deeper is refused
#: before anything recurses, so a hostile file cannot reach Python's recursion limit
MAX_DEPTH = 64
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# an HTTP header name (RFC 9110 token); values are checked separately for CR, LF and NUL


class ConfigError(MCPError, ValueError):
    """A server config cannot be used; ``file``, ``server`` and ``field`` say where.

    Example::

        try:
            servers = mcp_sync.load_config(".vscode/mcp.json")
        except mcp_sync.ConfigError as e:
            print(e.file, e.server, e.field, e.message)
    """

    def __init__(self, message: str, *, file: str | None = None, server: str | None = None,
                 field: str | None = None) -> None:
        where = " ".join(part for part in (
            file and f"{file}:", server and f"server {server!r}", field and f"field {field!r}") if part)
        super().__init__(f"{where}: {message}" if where else message)
        self.file, self.server, self.field = file, server, field


_JSONC_SPECIAL = re.compile(r'["/,]')  # one character class: no backtracking, linear search
_STRING_SPECIAL = re.compile(r'["\\]')
_BRACKET_SPECIAL = re.compile(r'["\[\]{}]')


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as plain JSON.

    Strings are left alone (a URL's ``//`` stays), so this is safe on plain JSON too. Linear in
    the text's length (each character is looked at a bounded number of times).

    Example: ``json.loads(strip_jsonc('{"a": 1, // one\\n}'))  # {'a': 1}``
    """
    out: list[str] = []
    i, n = 0, len(text)

    def skip_blanks_and_comments(position: int) -> int:
        while True:
            while position < n and text[position].isspace():
                position += 1
            if text.startswith("//", position):
                end = text.find("\n", position)
                position = n if end < 0 else end
            elif text.startswith("/*", position):
                end = text.find("*/", position + 2)
                position = n if end < 0 else end + 2
            else:
                return position

    while i < n:
        found = _JSONC_SPECIAL.search(text, i)
        if found is None:
            out.append(text[i:])
            break
        if found.start() > i:
            out.append(text[i : found.start()])
        i = found.start()
        char = text[i]
        if char == '"':
            end = i + 1
            while True:  # to the closing quote, stepping over escapes
                special = _STRING_SPECIAL.search(text, end)
                if special is None:
                    end = n
                    break
                end = special.start()
                if text[end] == '"':
                    break
                end += 2
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i) or text.startswith("/*", i):
            i = skip_blanks_and_comments(i)
            out.append(" ")  # a comment separates what it stands between, as a blank does: 1/**/1 is not 11
        elif char == ",":
            # a comma followed (past blanks and comments) by } or ] is dropped; the blanks and
            # comments skipped here are skipped again by the main loop, which stops at the next
            # significant character, so each stretch is walked at most twice
            rest = skip_blanks_and_comments(i + 1)
            if rest >= n or text[rest] not in "}]":
                out.append(char)
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _check_depth(text: str, file: str | None) -> None:
    """Refuse JSON nested deeper than :data:`MAX_DEPTH` (linear; strings skipped), before
    ``json.loads`` or anything else recurses into it."""
    depth, i = 0, 0
    while True:
        found = _BRACKET_SPECIAL.search(text, i)
        if found is None:
            return
        i = found.start()
        char = text[i]
        if char == '"':
            end = i + 1
            while True:
                inner = _STRING_SPECIAL.search(text, end)
                if inner is None:
                    return  # an unclosed string: json.loads says where
                if text[inner.start()] == '"':
                    i = inner.start() + 1
                    break
                end = inner.start() + 2
            continue
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"nested more than {MAX_DEPTH} levels deep", file=file)
        else:
            depth -= 1
        i += 1


def _read_bounded(path: str | os.PathLike[str], limit: int, fail: Callable[[str], ConfigError]) -> str:
    """The text of a regular file of at most ``limit`` bytes, as UTF-8 (a BOM is dropped).

    A FIFO, a device (``/dev/zero``), a socket or a directory is refused: the file is opened
    non-blocking (opening a FIFO with no writer would block for ever) and the opened descriptor
    is checked with ``fstat`` (not the path: it could be swapped in between). The read stops at
    ``limit + 1`` bytes whatever ``st_size`` said (``/proc`` files say 0)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise fail(f"cannot read: {exc.strerror or exc}") from None
    except ValueError:  # a NUL in the path
        raise fail("cannot read: the path holds a NUL character") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = ("a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "not a file")
            raise fail(f"cannot read: {kind}, not a regular file")
        if info.st_size > limit:
            raise fail(f"cannot read: {info.st_size} bytes, more than the limit of {limit}")
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except OSError as exc:
                raise fail(f"cannot read: {exc.strerror or exc}") from None
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            raise fail(f"cannot read: more than the limit of {limit} bytes")
    finally:
        os.close(fd)
    data = b"".join(chunks)
    bom = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(f"not valid UTF-8 (byte {exc.start + bom}: {exc.reason})") from None


def _variables(text: str) -> Iterator[tuple[int, int, str]]:
    """``(start, end, spec)`` of each ``${spec}`` in ``text``, in linear time.

    Same matches as the regex ``\\$\\{([^}]*)\\}``, whose ``finditer`` is quadratic on
    ``"${" * n`` (68 s for n = 100,000): here, once no ``}`` follows, the scan stops."""
    position = 0
    while True:
        start = text.find("${", position)
        if start < 0:
            return
        end = text.find("}", start + 2)
        if end < 0:
            return  # no "}" after this "${", so none after any later one either
        yield start, end + 1, text[start + 2 : end]
        position = end + 1


def _short(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters for a message (a hostile file's text can be 1 MB)."""
    return text if len(text) <= limit else text[:limit] + "..."


def _servers_of(data: Any, file: str | None) -> Mapping[str, Any]:
    if isinstance(data, Mapping):
        for found in (data.get("mcpServers"), data.get("servers"), (data.get("mcp") or {}).get("servers")
                      if isinstance(data.get("mcp"), Mapping) else None):
            if isinstance(found, Mapping):
                return found
    raise ConfigError(
        'no servers found: expected "mcpServers" (Claude Desktop, Cursor, Claude Code), '
        '"servers" (VS Code mcp.json) or "mcp": {"servers"} (VS Code settings.json) at the top level',
        file=file or "<dict>",
    )


class _Expander:
    """``${VAR}``, ``${env:VAR}``, ``${VAR:-default}``, ``${input:NAME}``, ``${userHome}``,
    ``${workspaceFolder}`` in every string of one entry."""

    def __init__(self, inputs: Mapping[str, Any], workspace: Path | None, declared_inputs: Mapping[str, str],
                 file: str | None) -> None:
        self.inputs, self.workspace, self.declared, self.file = inputs, workspace, declared_inputs, file

    def expand(self, value: Any, server: str, field: str, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:  # a dict source can nest without limit; never reach the recursion limit
            raise ConfigError(f"nested more than {MAX_DEPTH} levels deep", file=self.file, server=server,
                              field=field)
        if isinstance(value, str):
            parts, position = [], 0
            for start, end, spec in _variables(value):
                parts += [value[position:start], self._variable(spec, server, field)]
                position = end
            return "".join(parts) + value[position:] if parts else value
        if isinstance(value, list):
            return [self.expand(item, server, f"{field}[{i}]", depth + 1) for i, item in enumerate(value)]
        if isinstance(value, Mapping):
            return {key: self.expand(item, server, f"{field}.{key}", depth + 1) for key, item in value.items()}
        return value

    def _variable(self, spec: str, server: str, field: str) -> str:
        def fail(message: str) -> ConfigError:
            return ConfigError(message, file=self.file, server=server, field=field)

        if spec.startswith("input:"):
            name = spec[len("input:"):]
            if name in self.inputs:
                return str(self.inputs[name])
            hint = f" ({_short(self.declared[name])})" if self.declared.get(name) else ""
            name = _short(name)
            raise fail(f"input {name!r}{hint} is not given: pass load_config(..., inputs={{{name!r}: ...}})")
        if spec == "userHome":
            return os.path.expanduser("~")
        if spec in ("workspaceFolder", "workspaceRoot"):
            if self.workspace is None:
                raise fail(f"${{{spec}}} needs the config's path (a dict has no workspace)")
            return str(self.workspace)
        if spec.startswith("env:"):
            spec = spec[len("env:"):]
        name, has_default, default = spec.partition(":-")
        if not _ENV_NAME.fullmatch(name):
            raise fail(f"cannot expand ${{{_short(spec)}}}: not an environment variable name")
        value = os.environ.get(name)
        if has_default and not value:  # shell rule: unset or empty takes the default
            return default
        if value is None:
            raise fail(f"environment variable {name} is not set (write ${{{name}:-default}} for a default)")
        return value


def _shown(raw: Any) -> str:
    """A field's value for an error message, as the config wrote it: never expanded, since a
    ``${VAR}`` may hold a secret (an API key in a URL). ``"${API_URL}"`` is shown as
    ``the value of ${API_URL}``; a literal is shown (cut short)."""
    if isinstance(raw, str):
        specs = [f"${{{_short(spec, 40)}}}" for _, _, spec in _variables(raw)]
        if specs:
            return "the value of " + ", ".join(specs[:3]) + (", ..." if len(specs) > 3 else "")
        return repr(_short(raw))
    return _short(repr(raw)) if isinstance(raw, (int, float, bool, type(None))) else f"a {type(raw).__name__}"


def check_headers(headers: Mapping[str, Any] | None, fail: Callable[[str], ConfigError]) -> None:
    """Refuse what cannot go on the wire as a header (the rules of
    :func:`mcp_sync._headers.header_problem`: a name that is not an RFC 9110 token, a header that
    frames the message, a value holding a control character or a character beyond Latin-1),
    naming the header (never its value: it is often a token). A line break would end the header
    early (header injection); requests would refuse some of it later as a connection failure
    naming nothing.

    Example: ``check_headers({"X-A": "1"}, lambda message: ConfigError(message))  # passes``
    """
    for name, value in (headers or {}).items():
        if not isinstance(name, str):
            raise fail(f"{_short(repr(name))} is not a valid header name")
        if not isinstance(value, str):
            raise fail(f"the value of header {name!r} must be a string")
        problem = header_problem(name, value)
        if problem is not None:
            raise fail(f"header {_short(repr(name))} {problem}")


def _check_strings(value: Any, what: str, fail: Callable[[str], ConfigError]) -> None:
    """A NUL cannot reach a command line or the environment (``ValueError: embedded null byte``
    later, from subprocess): refuse it here, naming ``what``, not the value."""
    if isinstance(value, str) and "\0" in value:
        raise fail(f"{what} holds a NUL character")


def _check_entry(entry: Mapping[str, Any], server: str, file: str | None,
                 raw: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Validate one expanded entry; ``raw`` is the entry before expansion, which messages show."""
    def fail(field: str, message: str) -> ConfigError:
        return ConfigError(message, file=file, server=server, field=field)

    raw = entry if raw is None else raw
    out = dict(entry)
    kind_field = "type" if "type" in out else "transport"
    kind = out.get(kind_field)
    if kind is not None:
        if not isinstance(kind, str) or kind.lower() not in TRANSPORT_KINDS:
            raise fail(kind_field, f"unknown transport {_shown(raw.get(kind_field))}; one of {sorted(TRANSPORT_KINDS)}")
        kind = TRANSPORT_KINDS[kind.lower()]
    if "url" in out:
        if kind == "stdio":
            raise fail("type", "a stdio server has a 'command', not a 'url'")
        if not isinstance(out["url"], str) or not out["url"].startswith(("http://", "https://")):
            raise fail("url", f"must be an http(s) URL, not {_shown(raw.get('url'))}")
        if any(char in out["url"] for char in "\r\n\0"):
            raise fail("url", f"{_shown(raw.get('url'))} holds a CR, LF or NUL character")
        headers = out.get("headers")
        if headers is not None and not (isinstance(headers, Mapping)
                                        and all(isinstance(v, str) for v in headers.values())):
            raise fail("headers", "must map header names to strings")
        check_headers(headers, lambda message: fail("headers", message))
    elif "command" in out:
        if kind not in (None, "stdio"):
            raise fail("url", f"a {kind} server needs a 'url'")
        if not isinstance(out["command"], str) or not out["command"]:
            raise fail("command", "must be a non-empty string")
        _check_strings(out["command"], "the command", lambda m: fail("command", m))
        args = out.get("args")
        if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            raise fail("args", "must be a list of strings")
        for i, arg in enumerate(args or []):
            _check_strings(arg, f"argument {i}", lambda m: fail("args", m))
        env = out.get("env")
        if env is not None and not (isinstance(env, Mapping) and all(isinstance(v, str) for v in env.values())):
            raise fail("env", "must map variable names to strings")
        for name, value in (env or {}).items():
            if not isinstance(name, str) or not name or "=" in name or "\0" in name:
                raise fail("env", f"{_short(repr(name))} is not a valid variable name")
            _check_strings(value, f"the value of {name}", lambda m: fail("env", m))
        cwd = out.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise fail("cwd", "must be a string (a folder)")
        _check_strings(cwd, "the folder", lambda m: fail("cwd", m))
    else:
        raise fail("command", "an entry needs 'command' (a local server) or 'url' (a remote one)")
    _check_tool_patterns(out.get("tools"), lambda m: fail("tools", m))
    return out


def _check_tool_patterns(tools: Any, fail: Callable[[str], ConfigError]) -> None:
    """``"tools": {"include": [...], "exclude": [...], "tags": [...], "exclude_tags": [...],
    "transform": {"<tool>": {"name", "description", "hide", "fill"}}}``: which tools the server's
    client shows (glob patterns, fastmcp tags) and how (see :class:`~mcp_sync.ToolTransform`)."""
    from ._tool_transform import ToolFilter, ToolTransform

    if tools is None:
        return
    if not isinstance(tools, Mapping):
        raise fail("must be an object with 'include', 'exclude', 'tags', 'exclude_tags' and/or 'transform'")
    keys = ("include", "exclude", "tags", "exclude_tags", "transform")
    unknown = sorted(str(key) for key in tools if key not in keys)
    if unknown:
        raise fail(f"unknown key(s) {unknown}; 'tools' takes {', '.join(repr(key) for key in keys)}")
    for key in keys[:4]:
        patterns = tools.get(key)
        if patterns is not None and not (isinstance(patterns, list) and all(isinstance(p, str) for p in patterns)):
            raise fail(f"'{key}' must be a list of {'glob patterns' if 'tags' not in key else 'tags'} (strings)")
    try:
        ToolFilter.from_config({key: tools[key] for key in keys[:4] if key in tools})
        transform = tools.get("transform")
        if transform is not None and not isinstance(transform, Mapping):
            raise TypeError("'transform' must map tool names to objects with name, description, hide, fill")
        for name, spec in (transform or {}).items():
            ToolTransform.from_config(spec, f"'transform' of {name!r}")
    except (TypeError, ValueError) as exc:
        raise fail(str(exc)) from None


def _read_env_file(path: Path, server: str, file: str | None) -> dict[str, str]:
    """``KEY=VALUE`` lines of a .env file (``#`` comments, ``export``, quotes allowed); a regular
    file of at most :data:`MAX_ENV_FILE_BYTES` (a FIFO or ``/dev/zero`` is refused, not read)."""
    def fail(message: str) -> ConfigError:
        return ConfigError(f"{path}: {message}", file=file, server=server, field="envFile")

    lines = _read_bounded(path, MAX_ENV_FILE_BYTES, fail).splitlines()
    env: dict[str, str] = {}
    for line in lines:
        line = line.strip()
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        if not sep or line.startswith("#") or not key.strip():
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def load_config(source: ConfigSource, inputs: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Read an MCP server config and return ``{name: entry}`` ready for ``connect()`` or ``ClientGroup``.

    ``source`` is a path (Claude Desktop ``claude_desktop_config.json``,
    Cursor ``.cursor/mcp.json``, Claude Code ``.mcp.json``, VS Code
    ``.vscode/mcp.json`` or ``settings.json``) or the parsed dict. Entries with
    ``"disabled": true`` are skipped without being expanded; in the others every
    string gets ``${VAR}``, ``${env:VAR}`` and ``${VAR:-default}`` from the
    environment, ``${input:NAME}`` from ``inputs``, ``${userHome}`` and
    ``${workspaceFolder}`` (the folder holding ``.vscode``/``.cursor``, or the
    file's folder); VS Code's ``envFile`` is read into ``env``. A variable that
    is not set is an error naming it, never an empty string. Raises
    :class:`ConfigError` naming the file, server and field (and a variable by its name: an
    expanded value, which may be a secret, is never shown). The file must be a regular file of
    at most :data:`MAX_CONFIG_BYTES` bytes of UTF-8 JSON (with comments) nested at most
    :data:`MAX_DEPTH` levels; reading it takes time linear in its size.

    Example::

        servers = mcp_sync.load_config(".vscode/mcp.json", inputs={"github-token": token})
        with mcp_sync.ClientGroup(servers) as group:
            print([tool.name for tool in group.tools()])
    """
    from pathlib import Path  # here: pathlib is not needed by `import mcp_sync`

    file: str | None = None
    workspace: Path | None = None
    if isinstance(source, Mapping):
        data: Any = source
    else:
        path = Path(source)
        file = str(path)
        text = _read_bounded(path, MAX_CONFIG_BYTES, lambda message: ConfigError(message, file=file))
        plain = strip_jsonc(text)
        _check_depth(plain, file)
        try:
            data = json.loads(plain)
        except RecursionError:  # pragma: no cover - _check_depth refused deep nesting; kept so no input can crash
            raise ConfigError(f"nested more than {MAX_DEPTH} levels deep", file=file) from None
        except ValueError as exc:  # also int("1" * 5000): Python refuses over 4300 digits
            raise ConfigError(f"not valid JSON: {_short(str(exc), 200)}", file=file) from None
        folder = path.resolve().parent
        workspace = folder.parent if folder.name in (".vscode", ".cursor") else folder
    servers = _servers_of(data, file)
    declared = {
        str(item.get("id")): str(item.get("description") or "")
        for item in (data.get("inputs") if isinstance(data.get("inputs"), list) else [])
        if isinstance(item, Mapping)
    }
    expander = _Expander(inputs or {}, workspace, declared, file)
    entries: dict[str, dict[str, Any]] = {}
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            raise ConfigError("an entry must be an object", file=file, server=str(name))
        if entry.get("disabled") is True:
            continue
        expanded = {key: expander.expand(value, str(name), key) for key, value in entry.items()}
        if isinstance(expanded.get("envFile"), str):  # VS Code: variables from a .env file, "env" wins
            env_file = Path(expanded["envFile"])
            if workspace is not None and not env_file.is_absolute():
                env_file = workspace / env_file
            expanded["env"] = {**_read_env_file(env_file, str(name), file), **(expanded.get("env") or {})}
        entries[str(name)] = _check_entry(expanded, str(name), file, raw=entry)
    return entries
