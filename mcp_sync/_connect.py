"""``mcp_sync.connect(target)``: one call from a URL, a command, a script or a config entry;
``mcp_sync.shared(target)``: the one client of this process for it."""

from __future__ import annotations

import atexit
import os
import shlex
import sys
import threading
from typing import Any, Callable, Mapping, Sequence, Union

from ._client import Client, ClientState
from ._notebook import untracked
from ._options import Roots
from ._tool_transform import ToolFilter, ToolTransform
from .exceptions import MCPError
from .models import ProgressEvent

Target = Union[str, Sequence[str], Mapping[str, Any]]

#: remote-entry keys handed to Client.http / Client.sse as keyword options
HTTP_OPTIONS = (
    "auth", "session", "verify", "cert", "proxies", "connect_timeout", "max_retries", "max_view_sessions",
)
_SCRIPT_RUNNERS = {".py": "python", ".js": "node", ".mjs": "node", ".cjs": "node"}


class _NotGiven:
    def __repr__(self) -> str:
        return "<not given>"


#: The default of the options of :func:`connect` and ``ClientGroup``: an option left out keeps
#: the config entry's value, else the constructor's default (they differ: ``Client.sse`` is legacy).
#: Typed ``Any`` so that each option keeps its own type in the signature.
NOT_GIVEN: Any = _NotGiven()


def given_options(parameters: Mapping[str, Any], *skip: str) -> dict[str, Any]:
    """The options a caller passed: ``parameters`` (a function's ``locals()`` on entry) without
    those left at :data:`NOT_GIVEN` and the ``skip`` names."""
    return {key: value for key, value in parameters.items() if value is not NOT_GIVEN and key not in skip}


# connect() and ClientGroup take the same options: the Client options plus those of
# Client.stdio and Client.http (a typed API, #9.18: a misspelt option is a TypeError at once
# and a mypy error). tests/test_typed_api.py checks they stay the constructors' keyword set.
def connect(
    target: Target,
    *,
    env: Mapping[str, str] | None = NOT_GIVEN,
    cwd: str | os.PathLike[str] | None = NOT_GIVEN,
    inherit_env: bool = NOT_GIVEN,
    stderr: Any = NOT_GIVEN,
    headers: Mapping[str, str] | None = NOT_GIVEN,
    auth: Any = NOT_GIVEN,
    session: Any = NOT_GIVEN,
    verify: bool | str | None = NOT_GIVEN,
    cert: str | tuple[str, str] | None = NOT_GIVEN,
    proxies: Mapping[str, str] | None = NOT_GIVEN,
    connect_timeout: float = NOT_GIVEN,
    max_retries: int = NOT_GIVEN,
    max_view_sessions: int = NOT_GIVEN,
    name: str | None = NOT_GIVEN,
    client_info: Mapping[str, Any] | None = NOT_GIVEN,
    mode: str = NOT_GIVEN,
    protocol_version: str | None = NOT_GIVEN,
    timeout: float | None = NOT_GIVEN,
    probe_timeout: float | None = NOT_GIVEN,
    max_message_bytes: int = NOT_GIVEN,
    max_pages: int = NOT_GIVEN,
    input_required_max_rounds: int = NOT_GIVEN,
    on_elicitation: Callable[..., dict[str, Any]] | None = NOT_GIVEN,
    on_sampling: Callable[..., dict[str, Any]] | None = NOT_GIVEN,
    on_roots: Roots | None = NOT_GIVEN,
    on_notification: Callable[[str, dict[str, Any]], None] | None = NOT_GIVEN,
    on_connection_lost: Callable[[MCPError], None] | None = NOT_GIVEN,
    on_reconnected: Callable[[Client], None] | None = NOT_GIVEN,
    on_progress: Callable[[ProgressEvent], None] | None = NOT_GIVEN,
    tracing: bool = NOT_GIVEN,
    log_level: str | None = NOT_GIVEN,
    extensions: Mapping[str, Any] | None = NOT_GIVEN,
    cache: bool = NOT_GIVEN,
    sampling_tools: bool = NOT_GIVEN,
    host_tasks: bool = NOT_GIVEN,
    restart: bool = NOT_GIVEN,
    url_elicitation: bool = NOT_GIVEN,
    validate_output: str | bool = NOT_GIVEN,
    validate_input: bool = NOT_GIVEN,
    discover_result: Any = NOT_GIVEN,
    tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = NOT_GIVEN,
    tool_filter: ToolFilter | Mapping[str, Any] | None = NOT_GIVEN,
    list_ttl: float | None = NOT_GIVEN,
    on_list_changed: Callable[[str, list[Any]], None] | None = NOT_GIVEN,
) -> Client:
    """Open a client for ``target`` and connect it.

    ``target`` is an ``http(s)://`` URL (Streamable HTTP), a command line as a
    string or list (stdio), or a dict shaped like one entry of an
    ``"mcpServers"`` config: ``{"command": ..., "args": [...], "env": {...}}``
    or ``{"url": ..., "headers": {...}, "type": "sse"}`` (``type`` or
    ``transport``: ``stdio``, ``http``, ``streamable-http``, ``sse``; a remote
    entry may also carry the HTTP options ``verify``, ``cert``, ``proxies``,
    ``connect_timeout``, ``max_retries``, ``max_view_sessions``). A whole config file (its path, or
    its dict) with a single server connects to that server. When the command
    is an existing ``.py`` file it runs with this interpreter;
    ``.js``/``.mjs``/``.cjs`` files run with ``node``. A command line starting
    ``npx:<package>`` runs ``npx -y <package>``, ``uvx:<package>`` runs ``uvx <package>``
    (the rest of the line is the server's arguments).

    The options are those of :meth:`Client.stdio` (``env``, ``cwd``,
    ``inherit_env``, ``stderr``) or :meth:`Client.http` (``headers``, ``auth``
    and the HTTP options), as the target's transport takes them, and the
    :class:`Client` options. An option left out keeps the entry's value (``env``
    and ``headers`` are merged into the entry's), else the constructor's default.

    In a notebook, a re-run of the cell that made a client closes that earlier
    client (same cell line, same target and options) when the new one is made,
    even if ``Out[]`` still holds it; a loop's clients in one run are all kept.

    Example::

        with mcp_sync.connect("server.py", timeout=30) as client:
            print([t.name for t in client.tools()])
        with mcp_sync.connect("npx:@modelcontextprotocol/server-everything stdio") as client:
            ...
    """
    options = given_options(locals(), "target")  # first: locals() holds only the parameters here
    client = _client_for(target, **options)
    try:
        client.connect()
    except BaseException:
        client.close()
        raise
    return client


def script_command(command: str, args: Sequence[str], cwd: str | None = None) -> tuple[str, list[str]]:
    """``(command, args)`` to run: a ``.py``/``.js``/``.mjs``/``.cjs`` file that exists (in
    ``cwd`` when relative) is run by this interpreter / ``node``; anything else is left as it is."""
    runner = _SCRIPT_RUNNERS.get(os.path.splitext(command)[1].lower())
    if runner is None or not os.path.isfile(os.path.join(cwd or "", command)):
        return command, list(args)
    return (sys.executable if runner == "python" else runner), [command, *args]


def _client_for(target: Target, **options: Any) -> Client:
    """An unconnected :class:`Client` for ``target`` (what :func:`connect` connects; ClientGroup
    builds its clients with it too)."""
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            _check_headers(options.get("headers"))
            return Client.http(target, **options)
        if target.lower().endswith((".json", ".jsonc")) and os.path.isfile(target):
            return _client_for_entry(_only_server(target), **options)
        target = shlex.split(target)
    if isinstance(target, Mapping):
        if is_whole_config(target):
            return _client_for_entry(_only_server(target), **options)
        return _client_for_entry(target, **options)
    parts = list(target)
    if not parts:
        raise ValueError("empty command")
    parts = package_command(parts)
    command, args = script_command(parts[0], parts[1:])
    return Client.stdio(command, args, **options)


#: ``npx:<package>`` and ``uvx:<package>``: the package runners' commands (npx without its prompt).
_PACKAGE_RUNNERS = {"npx:": ["npx", "-y"], "uvx:": ["uvx"]}


def package_command(parts: Sequence[str]) -> list[str]:
    """A command line whose first word is ``npx:<package>`` or ``uvx:<package>``, as the runner's
    own: ``["npx", "-y", <package>, ...]`` / ``["uvx", <package>, ...]``; anything else as it is.

    Example: ``package_command(["npx:@modelcontextprotocol/server-everything", "stdio"])`` is
    ``["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"]``
    """
    first = str(parts[0]) if parts else ""
    for prefix, runner in _PACKAGE_RUNNERS.items():
        if first.lower().startswith(prefix):
            package = first[len(prefix):]
            if not package or package.startswith("-"):
                raise ValueError(f"{first!r}: name the package after {prefix!r} (e.g. {prefix}some-mcp-server)")
            return [*runner, package, *parts[1:]]
    return list(parts)


def is_whole_config(target: Mapping[str, Any]) -> bool:
    """A whole config file's dict (``{"mcpServers": ...}`` and the like), not one server's entry."""
    return "command" not in target and "url" not in target and any(
        isinstance(target.get(key), Mapping) for key in ("mcpServers", "servers", "mcp"))


def _only_server(config: Any) -> Mapping[str, Any]:
    """The one server of a config file (or its dict); several need a ClientGroup."""
    from ._config import load_config

    servers = load_config(config)
    if len(servers) != 1:
        raise ValueError(
            f"the config has {len(servers)} servers ({', '.join(servers) or 'none'}); connect() opens one:"
            " use mcp_sync.ClientGroup(config) for all of them, or connect(load_config(config)[name])"
        )
    return next(iter(servers.values()))


def _check_headers(headers: Mapping[str, Any] | None) -> None:
    """Header names and values that can go on the wire, or a ConfigError naming the header."""
    from ._config import ConfigError, check_headers

    check_headers(headers, lambda message: ConfigError(message, field="headers"))


def _client_for_entry(entry: Mapping[str, Any], **options: Any) -> Client:
    from ._config import TRANSPORT_KINDS

    tools = entry.get("tools")  # the entry's "tools" section: its filter and transforms (options win)
    if isinstance(tools, Mapping):
        wanted = {key: tools[key] for key in ("include", "exclude", "tags", "exclude_tags") if key in tools}
        if wanted:
            options.setdefault("tool_filter", wanted)
        if tools.get("transform"):
            options.setdefault("tool_transforms", tools["transform"])

    kind_name = entry.get("type", entry.get("transport"))
    kind = TRANSPORT_KINDS.get(str(kind_name).lower()) if kind_name is not None else None
    if kind_name is not None and kind is None:
        raise ValueError(f"unknown transport {kind_name!r} in a server entry; one of {sorted(TRANSPORT_KINDS)}")
    if "url" in entry and kind != "stdio":
        http_options = {key: entry[key] for key in HTTP_OPTIONS if key in entry}
        headers = {**(entry.get("headers") or {}), **(options.pop("headers", None) or {})} or None
        _check_headers(headers)
        factory = Client.sse if kind == "sse" else Client.http
        return factory(entry["url"], headers=headers, **{**http_options, **options})
    if "command" not in entry:
        raise ValueError("a server config entry needs 'command' or 'url'")
    env = {**(entry.get("env") or {}), **(options.pop("env", None) or {})} or None
    cwd = options.pop("cwd", entry.get("cwd"))
    command, args = script_command(entry["command"], entry.get("args") or [], cwd)
    return Client.stdio(command, args, env=env, cwd=cwd, **options)


# -- one client per process (#19.5) ----------------------------------------------------------------

_shared_lock = threading.Lock()
_shared: dict[Any, Client] = {}
#: A forked child's inherited shared clients: kept referenced (never closed or collected there: they
#: forgot the parent's connection at the fork), never handed out again.
_shared_left_behind: list[Client] = []


def shared(
    target: Target,
    *,
    env: Mapping[str, str] | None = NOT_GIVEN,
    cwd: str | os.PathLike[str] | None = NOT_GIVEN,
    inherit_env: bool = NOT_GIVEN,
    stderr: Any = NOT_GIVEN,
    headers: Mapping[str, str] | None = NOT_GIVEN,
    auth: Any = NOT_GIVEN,
    session: Any = NOT_GIVEN,
    verify: bool | str | None = NOT_GIVEN,
    cert: str | tuple[str, str] | None = NOT_GIVEN,
    proxies: Mapping[str, str] | None = NOT_GIVEN,
    connect_timeout: float = NOT_GIVEN,
    max_retries: int = NOT_GIVEN,
    max_view_sessions: int = NOT_GIVEN,
    name: str | None = NOT_GIVEN,
    client_info: Mapping[str, Any] | None = NOT_GIVEN,
    mode: str = NOT_GIVEN,
    protocol_version: str | None = NOT_GIVEN,
    timeout: float | None = NOT_GIVEN,
    probe_timeout: float | None = NOT_GIVEN,
    max_message_bytes: int = NOT_GIVEN,
    max_pages: int = NOT_GIVEN,
    input_required_max_rounds: int = NOT_GIVEN,
    on_elicitation: Callable[..., dict[str, Any]] | None = NOT_GIVEN,
    on_sampling: Callable[..., dict[str, Any]] | None = NOT_GIVEN,
    on_roots: Roots | None = NOT_GIVEN,
    on_notification: Callable[[str, dict[str, Any]], None] | None = NOT_GIVEN,
    on_connection_lost: Callable[[MCPError], None] | None = NOT_GIVEN,
    on_reconnected: Callable[[Client], None] | None = NOT_GIVEN,
    on_progress: Callable[[ProgressEvent], None] | None = NOT_GIVEN,
    tracing: bool = NOT_GIVEN,
    log_level: str | None = NOT_GIVEN,
    extensions: Mapping[str, Any] | None = NOT_GIVEN,
    cache: bool = NOT_GIVEN,
    sampling_tools: bool = NOT_GIVEN,
    host_tasks: bool = NOT_GIVEN,
    restart: bool = NOT_GIVEN,
    url_elicitation: bool = NOT_GIVEN,
    validate_output: str | bool = NOT_GIVEN,
    validate_input: bool = NOT_GIVEN,
    discover_result: Any = NOT_GIVEN,
    tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = NOT_GIVEN,
    tool_filter: ToolFilter | Mapping[str, Any] | None = NOT_GIVEN,
    list_ttl: float | None = NOT_GIVEN,
    on_list_changed: Callable[[str, list[Any]], None] | None = NOT_GIVEN,
) -> Client:
    """The one client of this process for ``target`` and ``options``: made on first use.

    Thread-safe: every thread (and every later call with an equal target and
    equal options) gets the same :class:`Client`, which is not connected until
    its first request. In a forked child (gunicorn, Celery, multiprocessing) the
    first call makes a new one for that process. Closed at interpreter exit;
    one that was closed is replaced by a new one on the next call. Do not use
    it in a ``with`` block (that would close it for everyone). A notebook cell
    that calls it gets the same client on every re-run. ``target`` and
    the options are those of :func:`connect`; an unknown option is a TypeError.

    Example::

        def handle(job):   # in any worker process, any thread
            client = mcp_sync.shared("python server.py", timeout=30)
            return client.call_tool("echo", {"text": job}).text
    """
    options = given_options(locals(), "target")  # first: locals() holds only the parameters here
    key = _frozen((target, options))
    with _shared_lock:
        client = _shared.get(key)
        if client is None or client.state is ClientState.CLOSED:
            with untracked():  # the process owns it (closed at exit), not the cell that asked first (#29.4)
                client = _shared[key] = _client_for(target, **options)
        return client


def _frozen(value: Any) -> Any:
    """A hashable key, equal for equal targets and options: dicts (in any order) and lists by
    value, anything else by equality when hashable, else by identity. (Options are the
    caller's own values, a few levels deep.)"""
    if isinstance(value, Mapping):
        return ("dict", frozenset((_frozen(key), _frozen(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return ("seq", tuple(_frozen(item) for item in value))
    try:
        hash(value)
    except TypeError:
        return ("id", id(value))
    return ("value", type(value), value)


def _forget_shared_after_fork() -> None:
    global _shared_lock
    _shared_lock = threading.Lock()  # the parent's may have been held at the fork
    _shared_left_behind.extend(_shared.values())
    _shared.clear()


@atexit.register
def _close_shared() -> None:
    for client in list(_shared.values()):
        try:
            client.close()
        except Exception:  # at exit, closing is best effort
            pass


if hasattr(os, "register_at_fork"):  # pragma: no branch - false only where there is no fork (Windows)
    os.register_at_fork(after_in_child=_forget_shared_after_fork)
