"""``mcp-sync`` / ``python -m mcp_sync``: try a server from a shell.

::

    mcp-sync tools     <target> [--json]
    mcp-sync call      <target> <tool> [key=value ...] [--json-args '{...}'] [--json]
    mcp-sync resources|prompts|info <target> [--json]
    mcp-sync read      <target> <uri>
    mcp-sync prompt    <target> <name> [key=value ...]

``<target>`` is a URL, a quoted command line, or ``--config FILE --server NAME``.
Exit status: 0 success, 1 an MCP error or a tool result with ``isError``, 2 bad
usage, 130 after Ctrl-C (the request is cancelled on the server first).
"""

from __future__ import annotations

import argparse
import base64
import json
import logging
import mimetypes
import shutil
import sys
import tempfile
import textwrap
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence, TextIO

from ._client import Client
from ._connect import connect
from .cancellation import CancellationToken
from .exceptions import MCPError
from .models import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_CANCEL_GRACE = 5.0  # seconds the cancelled request gets to wind down after Ctrl-C


_NEEDS = {"call": "<tool>", "read": "<uri>", "prompt": "<name>"}  # the word each command needs after <target>


class UsageError(Exception):
    """Bad command line or config: exit 2 with the message."""


# -- arguments ----------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print machine-readable JSON (the wire shapes)")
    common.add_argument("--config", metavar="FILE", help="a config file (mcpServers, VS Code servers, ...)")
    common.add_argument("--server", metavar="NAME", help="the server of --config to use")
    common.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds per request (default 60)")
    common.add_argument("--save-dir", metavar="DIR", help="where images and blobs are saved (default: a new temp dir)")
    common.add_argument("-v", "--verbose", action="count", default=0, help="log to stderr (-vv: debug)")
    parser = argparse.ArgumentParser(
        prog="mcp-sync",
        description="Talk to an MCP server from the shell. <target> is a URL, a quoted command line "
        "(e.g. 'python server.py'), or --config FILE --server NAME.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    usage = {
        "tools": ("list the tools", "<target>"),
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


def parse_value(text: str) -> Any:
    """``key=value`` values: JSON when they parse as JSON (``3``, ``true``, ``{"a": 1}``), else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_pairs(pairs: Iterable[str]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"expected key=value, got {pair!r}")
        arguments[key] = parse_value(value)
    return arguments


def _split_target(args: argparse.Namespace, needed: int) -> tuple[Any, list[str]]:
    """The target (a URL, a command line or a config entry) and the remaining words."""
    words = list(args.words)
    if args.config:
        target: Any = _config_entry(args.config, args.server)
    elif args.server:
        raise UsageError("--server needs --config FILE")
    elif not words:
        raise UsageError("missing <target>: a URL, a quoted command line, or --config FILE --server NAME")
    else:
        target = words.pop(0)
    if len(words) < needed:
        raise UsageError(f"{args.command}: missing {_NEEDS[args.command]}")
    return target, words


def _config_entry(path: str, server: str | None) -> Any:
    try:
        from ._config import load_config  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        raise UsageError("--config needs mcp_sync.load_config, which this version of mcp_sync lacks") from None
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


def table(rows: Sequence[tuple[str, str]], out: TextIO) -> None:
    """Two aligned columns; the second wrapped to the terminal's width."""
    if not rows:
        return
    left = min(max(len(name) for name, _ in rows), 30)
    wrap = max(20, _width() - left - 2)
    for name, text in rows:
        lines = textwrap.wrap(" ".join(text.split()), wrap) or [""]
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

    def save(self, data_b64: str, mime_type: str | None, stem: str) -> Path:
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="mcp-sync-"))
        self._directory.mkdir(parents=True, exist_ok=True)
        self._count += 1
        suffix = mimetypes.guess_extension(mime_type or "") or ".bin"
        path = self._directory / f"{stem}-{self._count}{suffix}"
        path.write_bytes(base64.b64decode(data_b64, validate=False))
        return path.resolve()


def print_content(blocks: Iterable[Any], saver: Saver, out: TextIO) -> None:
    for block in blocks:
        if isinstance(block, TextContent):
            out.write(block.text if block.text.endswith("\n") else block.text + "\n")
        elif isinstance(block, (ImageContent, AudioContent)):
            path = saver.save(block.data, block.mime_type, block.type)
            out.write(f"[{block.type} {block.mime_type} saved to {path}]\n")
        elif isinstance(block, ResourceLink):
            out.write(f"[resource link {block.uri}{' ' + block.name if block.name else ''}]\n")
        elif isinstance(block, EmbeddedResource):
            print_resource_contents([block.resource], saver, out)
        else:
            out.write(json.dumps(getattr(block, "raw", block)) + "\n")


def print_resource_contents(contents: Iterable[Any], saver: Saver, out: TextIO) -> None:
    for item in contents:
        if isinstance(item, TextResourceContents):
            out.write(item.text if item.text.endswith("\n") else item.text + "\n")
        elif isinstance(item, BlobResourceContents):
            path = saver.save(item.blob, item.mime_type, "blob")
            out.write(f"[{item.uri} ({item.mime_type or 'blob'}) saved to {path}]\n")


def _dump(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


class Progress:
    """One live progress line on stderr (rewritten in place on a terminal, one line each otherwise)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._live = stream.isatty()
        self._shown = False
        self._lock = threading.Lock()

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        amount = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        line = f"progress {amount}" + (f": {message}" if message else "")
        with self._lock:
            if self._live:
                self._stream.write("\r\x1b[K" + line[: _width() - 1])
            else:
                self._stream.write(line + "\n")
            self._stream.flush()
            self._shown = True

    def done(self) -> None:
        with self._lock:
            if self._live and self._shown:
                self._stream.write("\r\x1b[K")
                self._stream.flush()


# -- commands -----------------------------------------------------------------------------


def run_command(client: Client, args: argparse.Namespace, words: list[str], cancel: CancellationToken) -> int:
    """Run one command on a connected client; returns the exit status."""
    out, saver = sys.stdout, Saver(args.save_dir)
    if args.command == "tools":
        tools = list(client.tools(cancel=cancel))
        if args.json:
            _dump([tool.raw for tool in tools], out)
        else:
            table([(f"{t.name}({_signature(t.input_schema)})", t.description or t.title or "") for t in tools], out)
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
        result = client.read_resource(words[0], cancel=cancel)
        if args.json:
            _dump(result.raw, out)
        else:
            print_resource_contents(result.contents, saver, out)
    elif args.command == "prompt":
        rendered = client.get_prompt(words[0], {k: v if isinstance(v, str) else json.dumps(v)
                                                for k, v in parse_pairs(words[1:]).items()}, cancel=cancel)
        if args.json:
            _dump(rendered.raw, out)
        else:
            for message in rendered.messages:
                out.write(f"{message.role}: ")
                print_content([message.content], saver, out)
    elif args.command == "call":
        return _call(client, args, words, cancel, saver)
    return EXIT_OK


def _call(client: Client, args: argparse.Namespace, words: list[str], cancel: CancellationToken, saver: Saver) -> int:
    arguments: dict[str, Any] = {}
    if args.json_args:
        loaded = parse_value(args.json_args)
        if not isinstance(loaded, dict):
            raise UsageError("--json-args must be a JSON object")
        arguments.update(loaded)
    arguments.update(parse_pairs(words[1:]))
    progress = Progress(sys.stderr)
    try:
        result: CallToolResult = client.call_tool(words[0], arguments, progress=progress, cancel=cancel)
    finally:
        progress.done()
    if args.json:
        _dump(result.raw, sys.stdout)
    else:
        print_content(result.content, saver, sys.stdout)
        if not result.content and result.structured_content is not None:
            _dump(result.structured_content, sys.stdout)
    return EXIT_ERROR if result.is_error else EXIT_OK


# -- main ---------------------------------------------------------------------------------


def _in_worker(work: Callable[[], int], cancel: CancellationToken, on_interrupt: Callable[[], None]) -> int:
    """Run ``work`` on a thread so the main thread stays free for Ctrl-C: the first cancels the
    request on the server and waits a little for that to go out; a second one leaves at once."""
    outcome: dict[str, Any] = {}
    finished = threading.Event()  # not Thread.join: an interrupted join can leave the thread looking ended

    def run() -> None:
        try:
            outcome["status"] = work()
        except BaseException as exc:  # handed to the main thread
            outcome["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=run, name="mcp-sync-cli", daemon=True).start()
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
    if "error" in outcome:
        raise outcome["error"]
    return int(outcome["status"])


class _LogFormat(logging.Formatter):
    """``mcp_sync: ...`` messages as they are; other loggers (server stderr, server logs) named."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        return message if message.startswith("mcp_sync:") else f"{record.name}: {message}"


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
    client: list[Client] = []

    def work() -> int:
        target, words = _split_target(args, needed)
        client.append(connect(target, timeout=args.timeout))
        return run_command(client[0], args, words, cancel)

    def close() -> None:
        for opened in client:
            opened.close()

    try:
        return _in_worker(work, cancel, close)
    except UsageError as exc:
        parser.exit(EXIT_USAGE, f"mcp-sync: error: {exc}\n")
    except (MCPError, OSError, ValueError) as exc:  # one line, no traceback
        kind = type(exc).__name__
        sys.stderr.write(f"mcp-sync: error: {kind}: {exc}\n")
        # a bad target or config file is bad usage; what the server did is an MCP error
        usage = kind == "ConfigError" or (isinstance(exc, ValueError) and not isinstance(exc, MCPError))
        return EXIT_USAGE if usage else EXIT_ERROR
    finally:
        close()
        sys.stdout.flush()
    return EXIT_ERROR  # not reached: parser.exit raises SystemExit


def entry_point() -> None:
    """The ``mcp-sync`` console script. Example: ``mcp-sync tools "python server.py"``."""
    try:
        status = main()
    except KeyboardInterrupt:  # during start-up or shutdown
        status = EXIT_INTERRUPTED
    sys.exit(status)
