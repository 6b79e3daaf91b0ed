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
from typing import TYPE_CHECKING, Any, Mapping, Union

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
_VARIABLE = re.compile(r"\$\{([^}]*)\}")


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


def strip_jsonc(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as plain JSON.

    Strings are left alone (a URL's ``//`` stays), so this is safe on plain JSON too.

    Example: ``json.loads(strip_jsonc('{"a": 1, // one\\n}'))  # {'a': 1}``
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        elif char == ",":
            rest = i + 1  # a comma followed (past blanks and comments) by } or ] is dropped
            while True:
                while rest < n and text[rest].isspace():
                    rest += 1
                if text.startswith("//", rest):
                    end = text.find("\n", rest)
                    rest = n if end < 0 else end
                elif text.startswith("/*", rest):
                    end = text.find("*/", rest + 2)
                    rest = n if end < 0 else end + 2
                else:
                    break
            if rest >= n or text[rest] not in "}]":
                out.append(char)
            i += 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


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

    def expand(self, value: Any, server: str, field: str) -> Any:
        if isinstance(value, str):
            return _VARIABLE.sub(lambda m: self._variable(m.group(1), server, field), value)
        if isinstance(value, list):
            return [self.expand(item, server, f"{field}[{i}]") for i, item in enumerate(value)]
        if isinstance(value, Mapping):
            return {key: self.expand(item, server, f"{field}.{key}") for key, item in value.items()}
        return value

    def _variable(self, spec: str, server: str, field: str) -> str:
        def fail(message: str) -> ConfigError:
            return ConfigError(message, file=self.file, server=server, field=field)

        if spec.startswith("input:"):
            name = spec[len("input:"):]
            if name in self.inputs:
                return str(self.inputs[name])
            hint = f" ({self.declared[name]})" if self.declared.get(name) else ""
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
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise fail(f"cannot expand ${{{spec}}}: not an environment variable name")
        value = os.environ.get(name)
        if has_default and not value:  # shell rule: unset or empty takes the default
            return default
        if value is None:
            raise fail(f"environment variable {name} is not set (write ${{{name}:-default}} for a default)")
        return value


def _check_entry(entry: Mapping[str, Any], server: str, file: str | None) -> dict[str, Any]:
    def fail(field: str, message: str) -> ConfigError:
        return ConfigError(message, file=file, server=server, field=field)

    out = dict(entry)
    kind = out.get("type", out.get("transport"))
    if kind is not None:
        if not isinstance(kind, str) or kind.lower() not in TRANSPORT_KINDS:
            raise fail("type", f"unknown transport {kind!r}; one of {sorted(TRANSPORT_KINDS)}")
        kind = TRANSPORT_KINDS[kind.lower()]
    if "url" in out:
        if kind == "stdio":
            raise fail("type", "a stdio server has a 'command', not a 'url'")
        if not isinstance(out["url"], str) or not out["url"].startswith(("http://", "https://")):
            raise fail("url", f"must be an http(s) URL, not {out['url']!r}")
        headers = out.get("headers")
        if headers is not None and not (isinstance(headers, Mapping)
                                        and all(isinstance(v, str) for v in headers.values())):
            raise fail("headers", "must map header names to strings")
    elif "command" in out:
        if kind not in (None, "stdio"):
            raise fail("url", f"a {kind} server needs a 'url'")
        if not isinstance(out["command"], str) or not out["command"]:
            raise fail("command", "must be a non-empty string")
        args = out.get("args")
        if args is not None and not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            raise fail("args", "must be a list of strings")
        env = out.get("env")
        if env is not None and not (isinstance(env, Mapping) and all(isinstance(v, str) for v in env.values())):
            raise fail("env", "must map variable names to strings")
    else:
        raise fail("command", "an entry needs 'command' (a local server) or 'url' (a remote one)")
    return out


def _read_env_file(path: Path, server: str, file: str | None) -> dict[str, str]:
    """``KEY=VALUE`` lines of a .env file (``#`` comments, ``export``, quotes allowed)."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}", file=file, server=server,
                          field="envFile") from exc
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
    :class:`ConfigError` naming the file, server and field.

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
        try:
            text = path.read_text(encoding="utf-8-sig")
        except OSError as exc:
            raise ConfigError(f"cannot read: {exc.strerror or exc}", file=file) from exc
        try:
            data = json.loads(strip_jsonc(text))
        except ValueError as exc:
            raise ConfigError(f"not valid JSON: {exc}", file=file) from None
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
        entries[str(name)] = _check_entry(expanded, str(name), file)
    return entries
