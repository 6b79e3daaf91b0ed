"""``mcp-sync`` / ``python -m mcp_sync``: try a server from a shell.

::

    mcp-sync tools     <target> [--json]
    mcp-sync call      <target> <tool> [key=value ...] [--json-args '{...}'] [--json]
    mcp-sync resources|prompts|info <target> [--json]
    mcp-sync read      <target> <uri>
    mcp-sync prompt    <target> <name> [key=value ...]

``<target>`` is a URL, a quoted command line, or ``--config FILE --server NAME``
(``tools --config FILE`` alone lists every server's tools).
Exit status: 0 success, 1 an MCP error or a tool result with ``isError``, 2 bad
usage, 130 after Ctrl-C (the request is cancelled on the server first), 141 when
stdout was closed early (``mcp-sync tools ... | head -1``: 128 + SIGPIPE, as a
shell tool killed by that signal; nothing is printed).

Text from a server (names, descriptions, instructions, URIs, error messages, its
log lines) is shown with control characters escaped (``\x1b`` rather than the raw
byte), so a server cannot drive the terminal; results are escaped too when stdout
is a terminal, and written as they are when piped or with ``--raw``.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import io
import json
import logging
import mimetypes
import os
import shutil
import signal
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence, TextIO

from ._client import Client
from ._connect import _client_for
from ._media import human_size, image_size
from ._terminal import _JSON, _RAW, escape
from ._threads import spawn
from .cancellation import CancellationToken
from .exceptions import InvalidArguments, MCPError
from .models import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)
from .transports.base import ENV_OPTIONS

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141
_CANCEL_GRACE = 5.0  # seconds the cancelled request gets to wind down after Ctrl-C


_NEEDS = {"call": "<tool>", "read": "<uri>", "prompt": "<name>"}  # the word each command needs after <target>
_CLI_ENV_OPTIONS = '(--env NAME=VALUE or --inherit-env, "env" in a --config entry)'


class UsageError(Exception):
    """Bad command line or config: exit 2 with the message."""


# -- text for a terminal -------------------------------------------------------------------

def json_text(value: Any) -> str:
    """``value`` as indented JSON whose strings show C1 controls, DEL, bidirectional overrides and
    lone surrogates as ``\\uXXXX`` escapes: the same JSON to a parser, inert on a terminal, and
    always encodable (``ensure_ascii=False`` keeps the rest readable; JSON escapes C0 itself).

    Example: ``json_text({"a": "\\x9b"}) == '{\\n  "a": "\\\\u009b"\\n}'``
    """
    return json.dumps(value, indent=2, ensure_ascii=False).translate(_JSON)


# -- arguments ----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print machine-readable JSON (the wire shapes)")
    common.add_argument("--config", metavar="FILE", help="a config file (mcpServers, VS Code servers, ...)")
    common.add_argument("--server", metavar="NAME", help="the server of --config to use")
    common.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds per request (default 60)")
    common.add_argument("--save-dir", metavar="DIR", help="where images and blobs are saved (default: a new temp dir)")
    common.add_argument("--raw", action="store_true",
                        help="write results as the server sent them, control characters included "
                             "(the default when stdout is not a terminal)")
    common.add_argument("-e", "--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for a command-line server (repeatable); it gets only "
                             "an allow-list of this environment otherwise (PATH, HOME, proxies, ...)")
    common.add_argument("--inherit-env", action="store_true",
                        help="give a command-line server this whole environment")
    common.add_argument("-v", "--verbose", action="count", default=0, help="log to stderr (-vv: debug)")
    parser = argparse.ArgumentParser(
        prog="mcp-sync",
        description="Talk to an MCP server from the shell. <target> is a URL, a quoted command line "
        "(e.g. 'python server.py'), or --config FILE --server NAME.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    usage = {
        "tools": ("list the tools (of every server of --config FILE without --server)", "<target>"),
        "call": ("call a tool", "<target> <tool> [key=value ...]"),
        "resources": ("list the resources", "<target>"),
        "prompts": ("list the prompts", "<target>"),
        "info": ("the server's identity, protocol and capabilities", "<target>"),
        "read": ("read a resource", "<target> <uri>"),
        "prompt": ("render a prompt", "<target> <name> [key=value ...]"),
    }
    for name, (summary, words) in usage.items():
        sub = commands.add_parser(name, parents=[common], help=summary, description=summary,
                                  usage=f"mcp-sync {name} {words} [options]")
        sub.add_argument("words", nargs="*", metavar="ARG", help=words)
        if name == "call":
            sub.add_argument("--json-args", metavar="JSON", help="the arguments as one JSON object")
    return parser


def _says_string(schema: Any) -> bool:
    """Whether a property's schema takes a string: ``"type": "string"`` (alone or in a list), an
    ``enum``/``const`` of strings, or (one level) an ``anyOf``/``oneOf`` branch saying so."""
    if not isinstance(schema, Mapping):
        return False
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    if kind is None:
        values = schema["enum"] if isinstance(schema.get("enum"), list) else []
        values = [schema["const"]] if "const" in schema else values
        if values and all(isinstance(value, str) for value in values):
            return True
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and any(
                    isinstance(branch, Mapping) and (branch.get("type") == "string" or (
                        isinstance(branch.get("type"), list) and "string" in branch["type"])) for branch in branches):
                return True
    return False


def parse_value(text: str, schema: Any = None) -> Any:
    """A ``key=value`` value: the text itself where the property's ``schema`` takes a string
    (``message=123`` stays ``"123"``), else JSON when it parses (``3``, ``true``, ``{"a": 1}``),
    else the text.

    Example: ``parse_value("123") == 123 and parse_value("123", {"type": "string"}) == "123"``
    """
    if _says_string(schema):
        return text
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: "[" * 100000 typed or pasted
        return text


def parse_pairs(pairs: Iterable[str], schema: Any = None, raw: bool = False) -> dict[str, Any]:
    """``key=value`` words as arguments, each value read as the tool's input ``schema`` says
    (see :func:`parse_value`); ``raw=True`` keeps every value as text (prompt arguments).

    Example: ``parse_pairs(["n=3", "name=Ada"]) == {"n": 3, "name": "Ada"}``
    """
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    properties = properties if isinstance(properties, Mapping) else {}
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        arguments[key] = value if raw else parse_value(value, properties.get(key))
    return arguments


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'echo'?)`` for a mistyped tool name, or ``""``. Names longer than 200
    characters are not compared (difflib's cost grows with the product of the lengths).

    Example: ``did_you_mean("ecko", ["echo", "add"]) == " (did you mean 'echo'?)"``
    """
    candidates = [candidate for candidate in names if len(candidate) <= 200]
    close = difflib.get_close_matches(name[:200], candidates, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(escape(c, one_line=True)) for c in close)}?)" if close else ""


def _split_target(args: argparse.Namespace, needed: int) -> tuple[Any, list[str]]:
    """The target (a URL, a command line, a config entry, or for ``tools`` without ``--server``
    the whole config as ``{name: entry}``) and the remaining words."""
    words = list(args.words)
    if args.config and args.command == "tools" and args.server is None:
        from ._config import load_config

        target: Any = _AllServers(load_config(args.config))
    elif args.config:
        target = _config_entry(args.config, args.server)
    elif args.server:
        raise UsageError("--server needs --config FILE")
    elif not words:
        raise UsageError("missing <target>: a URL, a quoted command line, or --config FILE --server NAME")
    else:
        target = words.pop(0)
    if len(words) < needed:
        raise UsageError(f"{args.command}: missing {_NEEDS[args.command]}")
    return target, words


class _AllServers(dict):  # type: ignore[type-arg]
    """Every server of a config file: ``tools --config FILE`` without ``--server``."""


def _config_entry(path: str, server: str | None) -> Any:
    from ._config import load_config

    servers = load_config(path)
    if server is None:
        if len(servers) != 1:
            raise UsageError(f"{path}: choose one with --server NAME: {', '.join(sorted(servers)) or '(none)'}")
        return next(iter(servers.values()))
    if server not in servers:
        raise UsageError(f"{path}: no server {server!r}; it has: {', '.join(sorted(servers)) or '(none)'}")
    return servers[server]


# -- output -------------------------------------------------------------------------------


def _width() -> int:
    return max(40, shutil.get_terminal_size((100, 24)).columns)


def wrap_words(text: str, width: int) -> list[str]:
    """``text``'s words in lines of at most ``width`` characters; a longer word is cut in pieces.

    Linear in ``len(text)``: ``textwrap.wrap`` re-slices the rest of a long word for each piece,
    which is quadratic (0.4 s for one 800 kB word, and a server's description can be megabytes).

    Example: ``wrap_words("a bb ccccc", 4) == ["a bb", "cccc", "c"]``
    """
    lines: list[str] = []
    line = ""
    for word in text.split():
        pieces = [word[i : i + width] for i in range(0, len(word), width)] if len(word) > width else [word]
        for piece in pieces:
            if line and len(line) + 1 + len(piece) <= width:
                line += " " + piece  # a line stays under width: each join is bounded
            else:
                if line:
                    lines.append(line)
                line = piece
    if line:
        lines.append(line)
    return lines


def table(rows: Sequence[tuple[str, str]], out: TextIO) -> None:
    """Two aligned columns; the second wrapped to the terminal's width. Both come from a server:
    they are escaped (:func:`escape`), names on one line."""
    if not rows:
        return
    rows = [(escape(name, one_line=True), escape(text)) for name, text in rows]
    left = min(max(len(name) for name, _ in rows), 30)
    wrap = max(20, _width() - left - 2)
    for name, text in rows:
        lines = wrap_words(text, wrap) or [""]
        if len(name) > left:
            out.write(f"{name}\n")
            lines_out = [" " * (left + 2) + line for line in lines]
        else:
            lines_out = [f"{name.ljust(left)}  {lines[0]}".rstrip()] + [" " * (left + 2) + line for line in lines[1:]]
        out.write("\n".join(lines_out) + "\n")


def _signature(schema: dict[str, Any]) -> str:
    properties = schema.get("properties")
    required: list[Any] = schema["required"] if isinstance(schema.get("required"), list) else []
    if not isinstance(properties, dict):
        return ""
    return ", ".join(name if name in required else f"{name}?" for name in properties)


class Saver:
    """Writes images, audio and blobs to files in one directory (made on first use)."""

    def __init__(self, directory: str | None) -> None:
        self._directory = Path(directory) if directory else None
        self._count = 0

    def save(self, data_b64: str, mime_type: str | None, stem: str) -> tuple[Path, list[str]]:
        """Write the content to a new file; its path, and what it holds: its pixel dimensions
        when it is an image whose header can be read, and its size (e.g. ``["16x16 px", "1.2 KiB"]``)."""
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="mcp-sync-"))
        self._directory.mkdir(parents=True, exist_ok=True)
        self._count += 1
        suffix = mimetypes.guess_extension(mime_type or "") or ".bin"
        path = self._directory / f"{stem}-{self._count}{suffix}"
        data = base64.b64decode(data_b64, validate=False)
        path.write_bytes(data)
        size = image_size(data)
        return path.resolve(), [*([f"{size[0]}x{size[1]} px"] if size else []), human_size(len(data))]


def print_content(blocks: Iterable[Any], saver: Saver, out: TextIO, clean: Callable[[str], str]) -> None:
    """A result's content blocks: text through ``clean`` (:func:`escape` for a terminal, or only
    unencodable characters replaced), files saved, anything else as JSON."""
    for block in blocks:
        if isinstance(block, TextContent):
            text = clean(block.text)
            out.write(text if text.endswith("\n") else text + "\n")
        elif isinstance(block, (ImageContent, AudioContent)):
            path, facts = saver.save(block.data, block.mime_type, block.type)
            out.write(f"[{block.type} {escape(str(block.mime_type), one_line=True)} ({', '.join(facts)})"
                      f" saved to {path}]\n")
        elif isinstance(block, ResourceLink):
            name = " " + escape(block.name, one_line=True) if block.name else ""
            out.write(f"[resource link {escape(block.uri, one_line=True)}{name}]\n")
        elif isinstance(block, EmbeddedResource):
            print_resource_contents([block.resource], saver, out, clean)
        else:
            out.write(json_text(getattr(block, "raw", block)) + "\n")


def print_resource_contents(contents: Iterable[TextResourceContents | BlobResourceContents], saver: Saver,
                            out: TextIO, clean: Callable[[str], str]) -> None:
    for item in contents:
        if isinstance(item, TextResourceContents):
            text = clean(item.text)
            out.write(text if text.endswith("\n") else text + "\n")
        else:  # the only other kind: models.ResourceContents is text or blob
            path, facts = saver.save(item.blob, item.mime_type, "blob")
            kind = escape(item.mime_type or "blob", one_line=True)
            out.write(f"[{escape(item.uri, one_line=True)} ({', '.join([kind, *facts])}) saved to {path}]\n")


def _dump(value: Any, out: TextIO) -> None:
    out.write(json_text(value) + "\n")


def _result_cleaner(args: argparse.Namespace, out: TextIO) -> Callable[[str], str]:
    """How results are written: escaped on a terminal; as sent (lone surrogates replaced, so that
    they can be encoded) when piped or with ``--raw``."""
    if args.raw or not _isatty(out):
        return lambda text: text.translate(_RAW)
    return escape


def _bar_wanted() -> bool:
    """A progress bar on stderr for a call that may take long: on a terminal, never when piped."""
    return _isatty(sys.stderr)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


# -- commands -----------------------------------------------------------------------------


def run_command(client: Client, args: argparse.Namespace, words: list[str], cancel: CancellationToken) -> int:
    """Run one command on a connected client; returns the exit status."""
    out, saver = sys.stdout, Saver(args.save_dir)
    clean = _result_cleaner(args, out)
    if args.command == "tools":
        tools = list(client.tools(cancel=cancel))
        if args.json:
            _dump([tool.raw for tool in tools], out)
        else:
            _tool_table(tools, out)
    elif args.command == "resources":
        resources = list(client.resources(cancel=cancel))
        if args.json:
            _dump([r.raw for r in resources], out)
        else:
            table([(r.uri, " - ".join(x for x in (r.name, r.mime_type or "", r.description or "") if x))
                   for r in resources], out)
    elif args.command == "prompts":
        prompts = list(client.prompts(cancel=cancel))
        if args.json:
            _dump([p.raw for p in prompts], out)
        else:
            rows = [(f"{p.name}({', '.join(a.name if a.required else a.name + '?' for a in p.arguments)})",
                     p.description or p.title or "") for p in prompts]
            table(rows, out)
    elif args.command == "info":
        info = {
            "server": client.server_implementation,
            "era": client.era,
            "protocolVersion": client.protocol_version,
            "capabilities": client.server_capabilities,
            "instructions": client.instructions,
        }
        if args.json:
            _dump(info, out)
        else:
            impl = client.server_implementation or {}
            table([
                ("server", f"{impl.get('name', '?')} {impl.get('version', '')}".strip()),
                ("protocol", f"{client.protocol_version} ({client.era})"),
                ("capabilities", ", ".join(sorted(client.server_capabilities)) or "(none)"),
                *([("instructions", client.instructions)] if client.instructions else []),
            ], out)
    elif args.command == "read":
        result = client.read_resource(words[0], cancel=cancel, progress=_bar_wanted())
        if args.json:
            _dump(result.raw, out)
        else:
            print_resource_contents(result.contents, saver, out, clean)
    elif args.command == "prompt":
        # prompt arguments are strings: each value as typed ('"quoted"' keeps its quotes)
        rendered = client.get_prompt(words[0], parse_pairs(words[1:], raw=True), cancel=cancel,
                                     progress=_bar_wanted())
        if args.json:
            _dump(rendered.raw, out)
        else:
            for message in rendered.messages:
                out.write(f"{escape(str(message.role), one_line=True)}: ")
                print_content([message.content], saver, out, clean)
    else:  # "call": argparse takes no other command
        return _call(client, args, words, cancel, saver)
    return EXIT_OK


def _env_options(args: argparse.Namespace, target: Any) -> dict[str, Any]:
    """``env`` and ``inherit_env`` for a command-line server from ``--env`` / ``--inherit-env``;
    UsageError when they are given for anything else (a URL; a config file's server has its "env")."""
    if not args.env and not args.inherit_env:
        return {}
    if not isinstance(target, str) or _is_remote(target):
        raise UsageError('--env and --inherit-env are for a command-line server (a config entry has its "env")')
    env: dict[str, str] = {}
    for pair in args.env:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"--env expects NAME=VALUE, got {pair!r}")
        env[name] = value
    return {"env": env, "inherit_env": bool(args.inherit_env)}


def _is_remote(target: str | Mapping[str, Any]) -> bool:
    """Whether ``target`` (a URL or command line, or a config entry) is reached over HTTP (no
    stderr to show), as ``_client_for`` decides."""
    if isinstance(target, str):
        return target.startswith(("http://", "https://"))
    kind = str(target.get("type", target.get("transport", ""))).lower()
    return "url" in target and kind != "stdio"


def _stderr_shower(label: Mapping[str, str]) -> Callable[[str], None]:
    """Each stderr line of a server, on our stderr as ``[name] line``, escaped: it is the
    server's text (the library's default writes it as it is)."""
    def show(line: str) -> None:
        sys.stderr.write(f"[{escape(label['name'], one_line=True)}] {escape(line, one_line=True)}\n")

    return show


def _tool_table(tools: Sequence[Tool], out: TextIO) -> None:
    table([(f"{t.name}({_signature(t.input_schema)})", t.description or t.title or "") for t in tools], out)


def _all_tools(servers: Mapping[str, Any], args: argparse.Namespace, cancel: CancellationToken,
               opened: Callable[[Any], None]) -> int:
    """``tools --config FILE`` without ``--server``: every server's tools, grouped by server (in
    the config's order); a server that fails is reported on stderr and the status is 1."""
    from ._group import ClientGroup

    out = sys.stdout
    status = EXIT_OK
    listed: dict[str, Any] = {}
    shown = False
    options = {name: {"stderr": _stderr_shower({"name": name})} for name, entry in servers.items()
               if not _is_remote(entry)}
    group = ClientGroup(dict(servers), timeout=args.timeout, options=options)
    opened(group)  # closed by main's close(), also after Ctrl-C
    with group:
        for name in servers:
            client = group.clients.get(name)
            error = group.errors.get(name) if client is None else None  # any exception: a bad entry too
            tools: list[Tool] = []
            if client is not None:
                try:
                    tools = list(client.tools(cancel=cancel))
                except MCPError as exc:
                    if cancel.cancelled:
                        raise
                    error = exc
            if error is not None:
                sys.stderr.write(f"mcp-sync: error: server {escape(name, one_line=True)}: "
                                 f"{type(error).__name__}: {escape(str(error), one_line=True)}\n")
                status = EXIT_ERROR
                continue
            if args.json:
                listed[name] = [tool.raw for tool in tools]
            else:  # a blank line between servers, none before the first one shown
                out.write(f"{chr(10) if shown else ''}[{escape(name, one_line=True)}]\n")
                _tool_table(tools, out)
                shown = True
    if args.json:
        _dump(listed, out)
    return status


def _call(client: Client, args: argparse.Namespace, words: list[str], cancel: CancellationToken, saver: Saver) -> int:
    name = words[0]
    try:  # the schema says how to read key=value, and what to check
        tools = list(client.tools(cancel=cancel))
    except MCPError:
        if cancel.cancelled:
            raise
        tools = []  # no listing (no tools capability, a broken page): call as before, unchecked
    tool = next((t for t in tools if t.name == name), None)
    arguments: dict[str, Any] = {}
    if args.json_args:
        loaded = parse_value(args.json_args)
        if not isinstance(loaded, dict):
            raise UsageError("--json-args must be a JSON object")
        arguments.update(loaded)
    arguments.update(parse_pairs(words[1:], tool.input_schema if tool is not None else None))
    try:
        # a listed tool: the arguments are checked against its inputSchema before anything is
        # sent (InvalidArguments names the mismatch); an unlisted name is still tried (a server
        # may take tools it does not list), and its error gets a suggestion
        result: CallToolResult = client.call_tool(tool if tool is not None else name, arguments, cancel=cancel,
                                                  progress=_bar_wanted(), validate=tool is not None)
    except MCPError as exc:
        if tool is None:
            exc.cli_hint = did_you_mean(name, [t.name for t in tools])  # type: ignore[attr-defined]
        raise
    if args.json:
        _dump(result.raw, sys.stdout)
    else:
        print_content(result.content, saver, sys.stdout, _result_cleaner(args, sys.stdout))
        if not result.content and result.structured_content is not None:
            _dump(result.structured_content, sys.stdout)
    if result.is_error and tool is None and tools:
        # many servers answer an unknown tool with an error result, not a protocol error
        # (server-everything, the Python SDK): the same suggestion, from the listed tools
        sys.stdout.flush()
        sys.stderr.write(f"mcp-sync: the server lists no tool named {escape(name, one_line=True)!r}"
                         f"{did_you_mean(name, [t.name for t in tools])}\n")
    return EXIT_ERROR if result.is_error else EXIT_OK


# -- main ---------------------------------------------------------------------------------


def _on_thread(work: Callable[[], Any], role: str) -> tuple[threading.Event, dict[str, Any]]:
    """Start ``work`` on a thread; the event is set when it ends (not Thread.join: an interrupted
    join can leave the thread looking ended), the dict then holds its "value" or its "error"."""
    outcome: dict[str, Any] = {}
    finished = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the main thread
            outcome["error"] = exc
        finally:
            finished.set()

    spawn(run, "cli", role)  # the library's one home for threads
    return finished, outcome


def _outcome(outcome: dict[str, Any]) -> Any:
    """What the work of :func:`_on_thread` returned, or its error raised here."""
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _in_worker(work: Callable[[], int], cancel: CancellationToken, on_interrupt: Callable[[], None]) -> int:
    """Run ``work`` on a thread so the main thread stays free for Ctrl-C: the first cancels the
    request on the server and waits a little for that to go out; a second one leaves at once."""
    finished, outcome = _on_thread(work, "main")
    try:
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        cancel.cancel("interrupted by the user")
        try:
            finished.wait(_CANCEL_GRACE)
        except KeyboardInterrupt:
            pass
        on_interrupt()
        return EXIT_INTERRUPTED
    return int(_outcome(outcome))


def _uninterrupted(work: Callable[[], None]) -> None:
    """Run ``work`` (closing the servers, which is bounded) to its end whatever Ctrl-C comes
    meanwhile: an interrupted close left a server that ignores the end of its stdin running."""
    finished, outcome = _on_thread(work, "close")
    while True:
        try:
            finished.wait()
            break
        except KeyboardInterrupt:
            continue
    _outcome(outcome)


class _LogFormat(logging.Formatter):
    """``mcp_sync: ...`` messages as they are; other loggers (server stderr, server logs) named."""

    def format(self, record: logging.LogRecord) -> str:
        # a server's stderr lines and log messages, and the names they carry, are its text
        message = escape(record.getMessage(), one_line=True)
        return message if message.startswith("mcp_sync:") else f"{escape(record.name, one_line=True)}: {message}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``mcp-sync`` command line; returns the exit status.

    Example::

        import mcp_sync._cli
        status = mcp_sync._cli.main(["tools", "python examples/demo_server.py", "--json"])
    """
    parser = _parser()
    args, extra = parser.parse_known_args(argv)  # key=value words may follow options
    unknown = [word for word in extra if word.startswith("-")]
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.words = [*getattr(args, "words", []), *extra]
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogFormat())
    logging.basicConfig(level=level, handlers=[handler])
    needed = 1 if args.command in _NEEDS else 0
    cancel = CancellationToken()
    client: list[Any] = []  # what close() closes: the Client, or the ClientGroup of tools --config

    def work() -> int:
        target, words = _split_target(args, needed)
        if isinstance(target, _AllServers):
            _env_options(args, target)  # refused with a config file's servers: their entries have "env"
            return _all_tools(target, args, cancel, client.append)
        label = {"name": "server"}
        options: dict[str, Any] = {} if _is_remote(target) else {"stderr": _stderr_shower(label)}
        options.update(_env_options(args, target))
        opened = _client_for(target, timeout=args.timeout, **options)
        label["name"] = opened.name  # set before it starts: no line comes earlier
        client.append(opened)
        opened.connect()
        return run_command(opened, args, words, cancel)

    def close() -> None:
        def close_all() -> None:
            for opened in client:
                opened.close()

        _uninterrupted(close_all)

    try:
        status = _in_worker(work, cancel, close)
    except BrokenPipeError:  # stdout closed early (| head): end quietly
        status = EXIT_BROKEN_PIPE
    except UsageError as exc:
        close()
        parser.exit(EXIT_USAGE, f"mcp-sync: error: {escape(str(exc), one_line=True)}\n")
    except (MCPError, OSError, ValueError) as exc:  # one line, no traceback
        kind = type(exc).__name__
        hint = getattr(exc, "cli_hint", "")
        text = str(exc).replace(ENV_OPTIONS, _CLI_ENV_OPTIONS)  # our options, not Client.stdio's arguments
        sys.stderr.write(f"mcp-sync: error: {kind}: {escape(text, one_line=True)}{hint}\n")
        # a bad target or config file, or arguments that do not fit the tool's schema, is bad
        # usage; what the server did is an MCP error
        usage = kind == "ConfigError" or isinstance(exc, InvalidArguments) or (
            isinstance(exc, ValueError) and not isinstance(exc, MCPError))
        status = EXIT_USAGE if usage else EXIT_ERROR
    finally:
        close()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        status = EXIT_BROKEN_PIPE
    if status == EXIT_BROKEN_PIPE:
        _stdout_to_devnull()
    return status


def _stdout_to_devnull() -> None:
    """After a broken pipe: what is still buffered for stdout goes nowhere, so that neither this
    process's exit nor a later write prints a second error (the recipe of Python's signal docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's StringIO): nothing to silence
        pass


def _buffered_stdout() -> None:
    """Under ``PYTHONUNBUFFERED=1`` (``python -u``) stdout writes straight to its file, and a
    write the pipe takes only in part is dropped without an error (a text stream over a raw file
    ignores short writes): ``| head -1`` then lost output quietly and exited 0 instead of seeing
    the closed pipe. A buffered writer completes every write or raises; lines still go out at
    once (line buffering)."""
    stdout = sys.stdout
    if isinstance(getattr(stdout, "buffer", None), io.RawIOBase):
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(stdout.buffer), encoding=stdout.encoding,
                                      errors="replace", line_buffering=True)


def _closed_streams_to_devnull() -> None:
    """A stdout or stderr whose file descriptor is closed (``mcp-sync ... >&-``, a daemon's
    closed stderr) is None in Python: what goes there is dropped, as ``print()`` drops it, and
    the command still runs (a closed stderr failed even a successful call, with status 1)."""
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, open(os.devnull, "w", encoding="utf-8"))  # open until the process ends


def entry_point() -> None:
    """The ``mcp-sync`` console script. Example: ``mcp-sync tools "python server.py"``."""
    _closed_streams_to_devnull()
    _buffered_stdout()
    for stream in (sys.stdout, sys.stderr):  # a terminal in a non-UTF-8 locale: "?" beats a crash
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    try:
        status = main()
    except KeyboardInterrupt:  # during start-up or shutdown
        status = EXIT_INTERRUPTED
    # The command is over and its servers are closed: what is left is the interpreter's own
    # teardown. A Ctrl-C there (one more of the several a user presses) would end the process
    # by the signal (status -2 instead of 130, or a traceback from an atexit hook): Python puts
    # back the default SIGINT action partway through its teardown, but keeps "ignore".
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(status)
