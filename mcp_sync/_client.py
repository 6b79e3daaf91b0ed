"""The blocking facade: :class:`Client`.

Methods build params, ask the engine, and turn answers into models; they never
touch the wire. The era logic lives in :mod:`._lifecycle`, the threads in
:mod:`._engine` and the transports.
"""

from __future__ import annotations

import atexit
import enum
import functools
import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

import attrs

from ._cache import CACHEABLE_METHODS, ResultCache, check_mode, is_retry
from ._engine import Engine, ProgressCallback
from ._handlers import INPUT_METHODS, Handlers, Roots
from ._headers import HEADER_MISMATCH, HeaderField
from ._hosted_tasks import TASK_METHODS, HostedTasks
from ._lifecycle import Lifecycle, Negotiated
from ._listing import ListingMixin
from ._llm_formats import LLMFormatsMixin
from ._resources import Attempt, Resources, collect, default_name, describe_target, weakly
from ._schemas import ToolSchemas
from ._sentinels import USE_CLIENT_DEFAULT, _Default
from ._subscriptions import Subscription, Subscriptions
from ._tasks import TASKS_EXTENSION, Task, TasksMixin
from ._threads import Dispatcher, run_concurrently, spawn
from ._values import Timeout, check_env, check_json, check_timeout, command_line, http_options
from ._version import __version__
from .cancellation import CancellationToken
from .exceptions import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND_LEGACY,
    Cancelled,
    CapabilityError,
    ClientStateError,
    ConnectionClosed,
    HandlerError,
    InputRequiredError,
    MCPError,
    ProtocolError,
    RequestTimeout,
    ResourceNotFound,
    ServerError,
    ServerRequestError,
    ToolError,
)
from .models import (
    CallToolResult,
    Completion,
    DiscoverResult,
    GetPromptResult,
    Prompt,
    ReadResourceResult,
    ResourceTemplate,
    Tool,
)

if TYPE_CHECKING:
    from .transports.base import Transport

log = logging.getLogger("mcp_sync")

T = TypeVar("T")


#: The server's log levels (syslog's eight) as standard logging levels; the three logging
#: has no name for keep theirs in the message ("[notice] ...").
_LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
_UNNAMED_LOG_LEVELS = ("notice", "alert", "emergency")
_INPUT_METHODS_ALLOWED = ("tools/call", "resources/read", "prompts/get")  # R1
_LOAD_SHED_BACKOFF = (0.05, 0.25)  # first delay, cap (seconds)
RELATED_TASK = "io.modelcontextprotocol/related-task"
#: Subscriptions restart a dead stdio server by themselves, at most this often (then they end).
_MAX_RESTARTS, _RESTART_WINDOW = 3, 30.0
#: The capability each request needs (checked once connected, when a call connected first).
_CAPABILITY_OF = {
    "tools/call": "tools", "tools/list": "tools", "prompts/get": "prompts", "prompts/list": "prompts",
    "resources/read": "resources", "resources/list": "resources", "resources/templates/list": "resources",
    "completion/complete": "completions",
}
#: Requests without side effects: re-sent once if their answer stream breaks (H13); never tools/call.
_REPEATABLE = frozenset({
    "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
    "resources/read", "prompts/get", "completion/complete", "tasks/get",
})


#: Clients with a live connection, closed at interpreter exit so no server process is orphaned.
#: Weak: the registry never keeps a client alive (an unreferenced one is collected and closed).
_OPEN_CLIENTS: weakref.WeakSet[Client] = weakref.WeakSet()
#: Every client, so that a forked child can make each forget its parent's connection.
_ALL_CLIENTS: weakref.WeakSet[Client] = weakref.WeakSet()
#: What forked children inherited from their parent (engines, processes, sockets, threads):
#: kept referenced and never touched, so nothing in the child closes, signals or flushes them.
_LEFT_TO_PARENT: list[Any] = []


def _forget_parent_connections() -> None:
    """In a forked child: every client drops its parent's connection and reconnects on first use."""
    for client in list(_ALL_CLIENTS):
        client._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_parent_connections)


def _client_gone(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A server request that arrives after its client was collected."""
    raise ServerRequestError(f"{method}: the client is gone", code=-32603)


@atexit.register
def _close_open_clients() -> None:
    for client in list(_OPEN_CLIENTS):
        try:
            client.close()
        except Exception:  # at exit, closing is best effort
            log.debug("mcp_sync: closing a client at exit failed", exc_info=True)


class ClientState(enum.Enum):
    """Where a client is in its life.

    Example::

        client = mcp_sync.Client.stdio("python", ["server.py"])
        assert client.state is mcp_sync.ClientState.NEW
        client.connect()   # now OPEN; after client.close(), CLOSED
    """

    NEW = "new"  #: created, not connected yet (the first request connects)
    OPEN = "open"  #: connected (a stdio server that died is started again by the next request)
    CLOSED = "closed"  #: close() was called; requests raise ClientStateError, connect() opens it afresh


class Client(ListingMixin, TasksMixin, LLMFormatsMixin):
    """A blocking MCP client. Thread-safe: share one between many threads.

    Build one with :meth:`stdio`, :meth:`http`, :meth:`sse` or
    :func:`mcp_sync.connect`; use it as a context manager or call
    :meth:`close`. Every method may be called from any thread, including from
    inside a callback (callbacks run on the client's dispatch thread).
    ``name=`` names it in reprs, thread names and loggers (see :attr:`name`).

    After ``os.fork()`` (gunicorn ``--preload``, multiprocessing), a client in
    the child leaves the parent's server process, sockets and threads alone and
    connects afresh on first use; the parent's connection is unaffected. A
    client built on a transport object cannot make a new one: in the child it
    is closed. An unclosed client that is no longer referenced is closed by
    the garbage collector, with a ``ResourceWarning``.

    Handlers: ``on_elicitation(params) -> ElicitResult`` (``url_elicitation=True``
    also accepts URL-mode requests), ``on_sampling(params) -> CreateMessageResult``,
    ``on_roots`` (a list, or a callable returning one). A handler that raises, or
    answers with something invalid, makes the call that led the server to ask
    raise :class:`HandlerError` (its exception as ``__cause__``), in both eras;
    raise :class:`ServerRequestError` to refuse on purpose. Arguments are
    checked before anything is sent: a wrong type is a TypeError, a value JSON
    cannot carry (NaN, infinity, a lone surrogate) a ValueError, naming it.

    Example::

        with mcp_sync.Client.stdio("python", ["server.py"]) as client:
            for tool in client.tools():
                print(tool.name)
            print(client.call_tool("echo", {"text": "hi"}).text)
    """

    def __init__(
        self,
        transport: Transport | Callable[[], Transport],
        *,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "auto",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
        url_elicitation: bool = False,
        name: str | None = None,
    ) -> None:
        timeout = check_timeout(timeout, allow_default=False)
        probe_timeout = check_timeout(probe_timeout, "probe_timeout", allow_default=False)
        if max_pages < 1 or input_required_max_rounds < 1:
            raise ValueError("max_pages and input_required_max_rounds must be at least 1")
        if log_level is not None and log_level not in _LOG_LEVELS:
            raise ValueError(f"log_level must be one of {list(_LOG_LEVELS)}")
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name must be a non-empty str, not {name!r}")
        if callable(transport) and not hasattr(transport, "send"):
            self._factory: Callable[[], Transport] | None = transport if restart else None
            self._transport_factory: Callable[[], Transport] = transport
            self._reopenable = True
            first: Transport = transport()  # made now: name, target and repr are known before connecting
        else:
            first = transport  # type: ignore[assignment]
            self._factory = None
            self._transport_factory = lambda: first
            self._reopenable = False
        #: the transport the next connect uses first (then the factory makes new ones)
        self._spare: Transport | None = first
        self._transport: Transport = first
        self._name = name or default_name(first)
        self._target = describe_target(first)
        self.timeout = timeout
        self.max_message_bytes = max_message_bytes
        self.max_pages = max_pages
        self.input_required_max_rounds = input_required_max_rounds
        self.on_notification = on_notification
        self.cache_enabled = cache
        #: list/read/discover results kept while their ttlMs lasts (C1-C7); None with cache=False
        self._cache: ResultCache | None = ResultCache() if cache else None
        self._handlers = Handlers(
            on_elicitation=on_elicitation,
            on_sampling=on_sampling,
            on_roots=on_roots,
            sampling_tools=sampling_tools,
            host_tasks=host_tasks,
            extensions=dict(extensions or {}),
            url_elicitation=url_elicitation,
        )
        self._lifecycle = Lifecycle(
            mode=mode,
            protocol_version=protocol_version,
            client_info=dict(client_info or {"name": "mcp-sync", "version": __version__}),
            capabilities=self._handlers.capabilities,
            probe_timeout=probe_timeout,
            log_level=log_level,
        )
        self._lock = threading.RLock()
        # x-mcp-header (H8): each listed tool's inputSchema, for mirroring call arguments into headers
        self._tool_schemas: dict[str, tuple[HeaderField, ...]] = {}  # a listed tool's mirrored arguments
        self._tool_schemas_lock = threading.Lock()
        self._schemas = ToolSchemas(validate_output, validate_input)  # outputSchema/inputSchema checks
        self._state = ClientState.NEW
        self._negotiated: Negotiated | None = None
        self._entered = 0  # nesting depth of `with client:` blocks; the outermost exit closes
        self._auto_restarts: list[float] = []  # when subscriptions last restarted a dead server
        self._res = self._new_resources()
        self._finalizer = self._arm_finalizer()
        _ALL_CLIENTS.add(self)

    # -- constructors -------------------------------------------------------------
    # Each factory spells out every Client option (a typed API: a misspelt option is a
    # TypeError at once and a mypy error), then hands them to __init__ unchanged.

    @classmethod
    def stdio(
        cls,
        command: str | os.PathLike[str],
        args: Sequence[str | os.PathLike[str]] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        inherit_env: bool = False,
        stderr: Any = None,
        name: str | None = None,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "auto",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
    ) -> Client:
        """A client for a server run as a subprocess (stdio transport).

        ``command`` is resolved on ``PATH``; ``args`` is a list of strings (not
        one string). The child gets an allow-listed environment with ``env`` on
        top, or the whole environment with ``inherit_env=True``. The allow-list:
        HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_ALL, TMPDIR (on Windows
        APPDATA, PATH, SYSTEMROOT, TEMP, USERPROFILE, ...) and the proxy and CA
        settings (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, ALL_PROXY and lower-case
        forms, SSL_CERT_FILE, SSL_CERT_DIR, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
        NODE_EXTRA_CA_CERTS); API keys and package-index settings go in ``env``.
        ``stderr``: None (the default) shows each line of the server's stderr on
        ``sys.stderr`` prefixed with ``[<name>]``; ``"log"`` logs it to
        ``mcp_sync.stderr.<name>`` at INFO; or a file, or a callable taking each
        line. If the server dies, the next request starts it again;
        ``restart=False`` turns that off. The other options are the
        :class:`Client` options.

        Example::

            client = mcp_sync.Client.stdio("python", ["server.py"], env={"DEBUG": "1"})
        """
        from .transports.stdio import StdioTransport

        program, arguments = command_line(command, args)
        check_env(env)
        if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
            raise TypeError(f"Client.stdio: cwd must be a path or None, not {type(cwd).__name__}")

        def factory() -> Transport:
            return StdioTransport(
                program,
                arguments,
                env=env,
                cwd=cwd,
                inherit_env=inherit_env,
                stderr=stderr,
                max_message_bytes=max_message_bytes,
            )

        return cls(
            factory, name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        *,
        session: Any = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        name: str | None = None,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "auto",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
    ) -> Client:
        """A client for a Streamable HTTP server (falls back to HTTP+SSE for old servers).

        HTTP options: ``session`` (your ``requests.Session``, used as is),
        ``verify`` (bool or CA bundle path), ``cert``, ``proxies``,
        ``connect_timeout`` (seconds) and ``max_retries`` (only where nothing
        reached the server). The other options are the :class:`Client` options.

        Example::

            client = mcp_sync.Client.http("http://127.0.0.1:8000/mcp", headers={"X-Team": "a"})
        """
        from .transports.http import HttpTransport

        transport_options = http_options(
            HttpTransport, "Client.http", url, session=session, verify=verify, cert=cert, proxies=proxies,
            connect_timeout=connect_timeout, max_retries=max_retries,
        )
        return cls(
            lambda: HttpTransport(url, headers=headers, auth=auth, max_message_bytes=max_message_bytes,
                                  **transport_options),
            name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
        )

    @classmethod
    def sse(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        *,
        session: Any = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        name: str | None = None,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "legacy",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
    ) -> Client:
        """A client for a deprecated HTTP+SSE (2024-11-05) server; always legacy.

        Takes the HTTP options of :meth:`http` and the :class:`Client` options.

        Example::

            client = mcp_sync.Client.sse("http://127.0.0.1:3001/sse")
        """
        from .transports.sse import SseTransport

        transport_options = http_options(
            SseTransport, "Client.sse", url, session=session, verify=verify, cert=cert, proxies=proxies,
            connect_timeout=connect_timeout, max_retries=max_retries,
        )
        return cls(
            lambda: SseTransport(url, headers=headers, auth=auth, max_message_bytes=max_message_bytes,
                                 **transport_options),
            name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
        )

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> Client:
        """Connect (opening a closed client afresh); blocks may nest: only the outermost exit closes."""
        with self._lock:
            self._entered += 1
        try:
            self.connect()
        except BaseException:
            with self._lock:
                self._entered = max(0, self._entered - 1)
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        with self._lock:
            self._entered = max(0, self._entered - 1)
            outermost = self._entered == 0
        if outermost:
            self.close()

    @property
    def state(self) -> ClientState:
        """:class:`ClientState`: NEW, OPEN or CLOSED."""
        return self._state

    @property
    def name(self) -> str:
        """What this client is called in its repr, its thread names and its loggers.

        ``name=`` sets it; by default it is what the server is called, not the
        interpreter that runs it: for stdio, the script or package a runner runs
        (``python demo_server.py`` -> ``"demo_server"``, ``npx -y
        @modelcontextprotocol/server-everything`` -> ``"server-everything"``,
        ``node .../server-everything/dist/index.js`` -> ``"server-everything"``,
        ``uvx mcp-server-time`` -> ``"mcp-server-time"``), else the command's
        name; for HTTP, the host (and port). The server's stderr goes to the
        logger ``mcp_sync.stderr.<name>`` and its log messages to
        ``mcp_sync.server.<name>``.

        Example: ``mcp_sync.Client.stdio("python", ["demo_server.py"]).name == "demo_server"``
        """
        return self._name

    @property
    def transport(self) -> Transport:
        """The transport of the current connection (before the first connect: the one it will use).

        Example: ``client.transport.session_id`` (Streamable HTTP, legacy servers)
        """
        engine = self._res.engine
        return engine.transport if engine is not None else self._transport

    @property
    def pid(self) -> int | None:
        """The stdio server's process id while it runs; None for HTTP or when no process runs.

        Example: ``os.kill(client.pid, 0)`` (the server is alive)
        """
        engine = self._res.engine
        if self._state is ClientState.CLOSED or (engine is not None and not engine.alive):
            return None
        pid = getattr(self.transport, "pid", None)
        return pid if isinstance(pid, int) else None

    def connect(
        self, *, timeout: float | _Default | None = USE_CLIENT_DEFAULT, cancel: CancellationToken | None = None
    ) -> dict[str, Any]:
        """Connect (probe / handshake) if not yet connected; returns the server_info dict.

        The first request also connects, within that request's own ``timeout`` and
        ``cancel``; ``connect()`` waits, unless given a ``timeout``, as long as the
        connect takes. The connect runs on its own thread, bounded by the client's
        ``timeout`` and ``probe_timeout``; a caller that stops waiting (its
        timeout: :class:`RequestTimeout`; its token: :class:`Cancelled`) leaves it
        running, and later calls wait for the same connect; if it fails, every
        caller waiting for it gets the error and the next call tries again.
        ``close()`` interrupts a connect at once (its waiters get
        :class:`ClientStateError`). If connecting fails, everything the attempt
        started is stopped before the exception propagates. On a closed client,
        ``connect()`` opens it afresh (a new server process or HTTP session;
        subscriptions closed by ``close()`` stay closed).

        Example: ``client.connect(timeout=30); print(client.era, client.protocol_version)``
        """
        with self._lock:
            if self._state is ClientState.CLOSED:
                self._reopen()
        return self._connected(None if timeout is USE_CLIENT_DEFAULT else timeout, cancel, "connect").server_info

    def reconnect(
        self, *, timeout: float | _Default | None = USE_CLIENT_DEFAULT, cancel: CancellationToken | None = None
    ) -> dict[str, Any]:
        """Drop the connection and connect afresh; returns the new server_info dict.

        For a server that lost its state under the client (restarted, session
        gone): stdio starts a new server process, HTTP a new session. Requests
        waiting on the old connection fail with :class:`ConnectionClosed`. What
        the client asked for survives, as after a restart: subscriptions are
        re-established (each delivers ``("mcp_sync/resubscribed", {...})``),
        roots and the log level are given to the new session, cached results
        are dropped. Raises :class:`ClientStateError` on a closed client or one
        built on a transport object (it cannot make a new one).

        Example::

            try:
                client.call_tool("echo", {"text": "hi"})
            except mcp_sync.ConnectionClosed:
                client.reconnect()
        """
        with self._lock:
            if self._state is ClientState.CLOSED:
                raise ClientStateError("reconnect: the client is closed (connect() opens it afresh)")
            if not self._reopenable:
                raise ClientStateError("reconnect: a client built on a transport object cannot make a new one")
            engine = self._res.engine
            if engine is not None and self._res.attempt is None:
                self._res.engine = None
        if engine is not None and self._res.attempt is None:
            engine.closed(ConnectionClosed("the client is reconnecting"))  # waiters first, then the transport
            engine.close("the client is reconnecting")
        return self._connected(None if timeout is USE_CLIENT_DEFAULT else timeout, cancel, "reconnect").server_info

    def _connected(
        self, timeout: float | None = None, cancel: CancellationToken | None = None, method: str = "connect"
    ) -> Negotiated:
        """The live connection, connecting first if needed (waiting at most ``timeout``; None: as
        long as the connect takes, which the client's ``timeout`` and ``probe_timeout`` bound)."""
        negotiated, engine = self._negotiated, self._res.engine
        if negotiated is not None and engine is not None and engine.alive:
            return negotiated
        begun = self._begin_connect(method)
        if not isinstance(begun, Attempt):
            return begun
        return self._wait_connect(begun, timeout, cancel, method)

    def _connected_within(
        self, method: str, timeout: Any, cancel: CancellationToken | None
    ) -> tuple[Negotiated, Any]:
        """For a request: the connection, and what is left of the request's ``timeout``.

        A connect done inside a call counts against that call's deadline; then the
        call's capability is checked (the check was deferred until connected)."""
        negotiated, engine = self._negotiated, self._res.engine
        if negotiated is not None and engine is not None and engine.alive:
            return negotiated, timeout
        wait = self.timeout if timeout is USE_CLIENT_DEFAULT else timeout
        started = time.monotonic()
        negotiated = self._connected(wait, cancel, method)
        capability = _CAPABILITY_OF.get(method)
        if capability is not None and capability not in negotiated.server_capabilities:
            self._require(capability, method)
        if wait is None or isinstance(wait, bool) or not isinstance(wait, (int, float)):
            return negotiated, wait
        return negotiated, max(wait - (time.monotonic() - started), 0.001)

    def _begin_connect(self, method: str) -> Negotiated | Attempt:
        """Under the lock: the live connection, the connect in progress, or a new one started."""
        with self._lock:
            if self._state is ClientState.CLOSED:
                raise ClientStateError(f"{method}: the client is closed (connect() opens it afresh)", method=method)
            res = self._res
            engine = res.engine
            if self._negotiated is not None and engine is not None and engine.alive:
                return self._negotiated
            if res.attempt is not None:
                return res.attempt
            if engine is not None and self._factory is None:  # cannot restart: report how it ended
                raise engine.closed_error or ConnectionClosed("the connection is closed")
            attempt = Attempt(previous=engine, restarted=self._negotiated is not None)
            res.attempt, res.engine, res.open = attempt, None, True
            _OPEN_CLIENTS.add(self)  # a connect in progress is also ended at interpreter exit
            if res.connecting.spawn(functools.partial(weakly(self._run_connect), attempt), "connect") is None:
                res.attempt = None
                raise ClientStateError(f"{method}: the client is closed", method=method)
            return attempt

    def _wait_connect(self, attempt: Attempt, timeout: Any, cancel: CancellationToken | None, method: str
                      ) -> Negotiated:
        waiter = attempt.join()
        remove: Callable[[], None] | None = None
        if cancel is not None:

            def on_cancel(reason: str | None) -> None:
                waiter.settle(error=Cancelled(f"{method} cancelled while connecting", reason=reason, method=method))

            remove = cancel.add_callback(on_cancel)
        try:
            if not waiter.wait(timeout):
                waiter.settle(error=RequestTimeout(
                    f"{method}: not connected within {timeout} s (the connect to {self._name} goes on "
                    "in the background; a later call waits for it)",
                    method=method,
                ))
        finally:
            if remove is not None:
                remove()
            attempt.leave(waiter)
        return waiter.result()  # type: ignore[no-any-return]

    def _run_connect(self, attempt: Attempt) -> None:
        """The connect thread: probe / handshake, then publish the connection."""
        previous = attempt.previous
        if previous is not None:
            log.info("mcp_sync: the connection to %s ended; starting it again", self._name)
            previous.close("restarting")
        try:
            engine = self._start_engine(attempt)
            restart = functools.partial(self._start_engine, attempt) if self._factory else None
            engine, negotiated = self._lifecycle.connect(engine, timeout=self.timeout, restart=restart)
            engine.transport.configure(era=negotiated.era, protocol_version=negotiated.protocol_version)
            self._prepare(engine, negotiated, restarted=attempt.restarted)
        except BaseException as exc:
            for each in attempt.engines:
                each.close("connecting failed")
            with self._lock:
                if self._res.attempt is attempt:
                    self._res.attempt = None
                    if self._negotiated is None:  # never connected: leave nothing running
                        self._res.open = False
                        dispatcher, self._res.dispatcher = self._res.dispatcher, None
                        if dispatcher is not None:
                            dispatcher.stop()
            attempt.finish(error=attempt.aborted or exc)
            return
        with self._lock:
            published = (
                self._res.attempt is attempt and attempt.aborted is None and self._state is not ClientState.CLOSED
            )
            if published:
                self._res.attempt, self._res.engine = None, engine
                self._negotiated = negotiated
                self._state = ClientState.OPEN
                self._transport = engine.transport
                _OPEN_CLIENTS.add(self)
        if not published:
            engine.close("the client was closed while connecting")
            attempt.finish(error=attempt.aborted or ClientStateError("connect: the client was closed"))
            return
        attempt.finish(negotiated)
        error = engine.closed_error
        if error is not None:  # it died at once: its on_closed may have run before it was published
            self._connection_lost(engine, error)
        elif attempt.restarted:
            self._subscriptions.reconnected(engine, negotiated)  # U7, T6

    def _start_engine(self, attempt: Attempt) -> Engine:
        """Make and start one transport and its engine for ``attempt`` (a restart makes another)."""
        with self._lock:
            if self._res.attempt is not attempt or attempt.aborted is not None:  # closed meanwhile
                raise attempt.aborted or ClientStateError("connect: the client was closed")
            transport, self._spare = self._spare or self._transport_factory(), None
            if self._res.dispatcher is None:
                self._res.dispatcher = Dispatcher(self._name)
            dispatcher = self._res.dispatcher
        if getattr(transport, "name", None) != self._name:
            try:
                transport.name = self._name  # thread and logger names follow the client's name
            except AttributeError:
                pass
        engine = Engine(
            transport,
            on_notification=weakly(self._dispatch_notification),
            on_server_request=weakly(self._answer_server_request, _client_gone),
            dispatcher=dispatcher,
            on_closed=None,
            on_session_renewed=None,
        )
        # The engine's callbacks hold the client weakly: its threads never keep it alive.
        engine.before_notification = functools.partial(weakly(self._before_notification), engine)
        engine.on_closed = functools.partial(weakly(self._connection_lost), engine)
        engine.on_session_renewed = functools.partial(weakly(self._session_renewed), engine)
        engine.start()
        if not attempt.add_engine(engine):  # close() came first: stop what was just started
            engine.close("the client was closed while connecting")
            raise attempt.aborted or ClientStateError("connect: the client was closed")
        return engine

    def _connection_lost(self, engine: Engine, error: ConnectionClosed) -> None:
        """Dispatch thread (engine ``on_closed``): suspend its subscriptions, and bring the
        server back for them (when restart is on) so they resume by themselves."""
        subscriptions = self._subscriptions
        subscriptions.connection_lost(engine)
        if engine is not self._res.engine or self._state is not ClientState.OPEN:
            return  # closed, reconnecting, or a connect attempt's engine: not a loss to repair
        if not subscriptions.suspended():
            return
        if self._factory is None:
            subscriptions.end_suspended(f"the connection was lost and restart is off: {error.message}")
            return
        now = time.monotonic()
        self._auto_restarts = [t for t in self._auto_restarts if now - t < _RESTART_WINDOW] + [now]
        if len(self._auto_restarts) > _MAX_RESTARTS:  # a server that dies as soon as it starts
            subscriptions.end_suspended(
                f"the server keeps exiting ({_MAX_RESTARTS} restarts within {_RESTART_WINDOW:.0f} s); "
                f"last: {error.message}"
            )
            return
        try:
            begun = self._begin_connect("subscriptions/listen")
        except MCPError as exc:
            subscriptions.end_suspended(f"the connection was lost: {exc}")
            return
        if isinstance(begun, Attempt):
            begun.on_failure(lambda exc: subscriptions.end_suspended(f"starting the server again failed: {exc}"))

    def close(self) -> None:
        """Close the connection; idempotent. Ends every thread and child process the client started.

        First every waiting call is released at once with
        :class:`ConnectionClosed` (a connect in progress: its waiters get
        :class:`ClientStateError`), then subscriptions end, then the transport
        shuts down (the stdio server is asked to exit, then signalled) and the
        threads are joined. A handler of yours (elicitation, sampling, roots)
        still running cannot be stopped: ``close()`` waits about a second for
        it, then returns; the handler runs on to its end on its daemon thread
        and whatever it returns is dropped. After ``close()``, requests raise
        :class:`ClientStateError`; ``connect()`` (or ``with client:``) opens the
        client afresh. A client that is garbage-collected unclosed is closed
        then, with a ``ResourceWarning``.

        Example: ``client.close()`` (a ``with mcp_sync.Client.stdio(...) as client:`` block does it on exit)
        """
        with self._lock:
            if self._state is ClientState.CLOSED and not self._res.open:
                return
            self._state = ClientState.CLOSED
            self._entered = 0
            _OPEN_CLIENTS.discard(self)
            resources = self._res
        resources.shut_down("the client was closed")

    # -- what the client owns (kept apart so that it can be collected) ----------------------

    def _new_resources(self) -> Resources:
        ref = weakref.ref(self)

        def subscriptions() -> Subscriptions:
            client = ref()
            if client is None:
                raise ClientStateError("the client is gone")
            return Subscriptions(client)

        label = f"mcp_sync.Client {self._name!r} ({self._target})"
        return Resources(subscriptions, lambda: HostedTasks("client"), label)

    def _arm_finalizer(self) -> weakref.finalize:
        finalizer = weakref.finalize(self, collect, self._res)
        finalizer.atexit = False  # at exit, _close_open_clients closes what is still open, quietly
        return finalizer

    def _reopen(self) -> None:
        """Under the lock, on a closed client: fresh parts, state NEW (connect() opens it afresh)."""
        if not self._reopenable:
            raise ClientStateError("connect: the client is closed, and one built on a transport object "
                                   "cannot be opened again; build a new client")
        self._res.renew()
        self._state = ClientState.NEW
        self._negotiated = None
        if self._cache is not None:
            self._cache.clear()

    def _forget_after_fork(self) -> None:
        """In a forked child (at-fork hook, one thread): forget the parent's connection.

        Nothing of it is closed, signalled or flushed (the parent still uses its
        process, pipes, sockets and threads); the next use connects afresh."""
        self._lock = threading.RLock()
        self._tool_schemas_lock = threading.Lock()
        old = self._res
        _LEFT_TO_PARENT.append(old)
        old.subscriptions.forget_after_fork()
        self._finalizer.detach()
        if self._cache is not None:
            self._cache = type(self._cache)()
        self._res = self._new_resources()
        self._finalizer = self._arm_finalizer()
        _OPEN_CLIENTS.discard(self)
        self._negotiated = None
        self._spare = None
        if not self._reopenable:  # its one transport object is the parent's: it cannot go on here
            self._state = ClientState.CLOSED
            return
        try:
            self._transport = self._spare = self._transport_factory()
        except Exception:  # made again on first use
            log.debug("mcp_sync: making a transport after fork failed", exc_info=True)
        if self._state is ClientState.OPEN:
            self._state = ClientState.NEW

    @property
    def _engine(self) -> Engine | None:  # type: ignore[override]  # declared as an attribute by the mixins
        return self._res.engine

    @property
    def _dispatcher(self) -> Dispatcher | None:
        return self._res.dispatcher

    @property
    def _subscriptions(self) -> Subscriptions:
        return self._res.subscriptions

    @property
    def _hosted_tasks(self) -> HostedTasks:
        return self._res.hosted_tasks

    # -- what was negotiated ------------------------------------------------------------

    @property
    def era(self) -> str:
        """``"modern"`` or ``"legacy"`` (connects if needed)."""
        return self._connected().era

    @property
    def protocol_version(self) -> str:
        """The protocol revision in use, e.g. ``"2026-07-28"``."""
        return self._connected().protocol_version

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's capabilities (from discover or initialize)."""
        return self._connected().server_capabilities

    @property
    def server_implementation(self) -> dict[str, Any] | None:
        """The server's ``{"name", "version"}``, or None if it did not say."""
        return self._connected().server_implementation

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model, if any."""
        return self._connected().instructions

    @property
    def server_info(self) -> dict[str, Any]:
        """The raw InitializeResult or DiscoverResult."""
        return self._connected().server_info

    def meta(self) -> dict[str, Any]:
        """The ``_meta`` envelope this client adds to modern requests.

        Example: ``client.meta()["io.modelcontextprotocol/protocolVersion"]`` (e.g. ``"2026-07-28"``)
        """
        negotiated = self._connected()
        return self._lifecycle.meta(negotiated.protocol_version)

    # -- the request path ------------------------------------------------------------------

    def _send(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        on_stream: Callable[[str, dict], None] | None = None,
        extensions: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        on_request_id: Callable[[Any], None] | None = None,
    ) -> dict[str, Any]:
        """The one request path: envelope, engine, resultType check.

        ``headers`` are extra HTTP headers for this request (x-mcp-header);
        ``on_stream`` receives the notifications of a subscription stream;
        ``extensions`` are declared on this request only (E3: per request);
        ``on_request_id`` is told each JSON-RPC id used, so errors can name it.
        """
        timeout = check_timeout(timeout)
        max_total_timeout = check_timeout(max_total_timeout, "max_total_timeout", allow_default=False)
        if meta is not None:
            if not isinstance(meta, Mapping):
                raise TypeError(f"{method}: meta must be a dict, not {type(meta).__name__}")
            check_json(dict(meta), f"{method}: meta")
        negotiated, timeout = self._connected_within(method, timeout, cancel)
        engine = self._engine
        if engine is None:
            raise ClientStateError("the client is closed")
        wire_params = self._lifecycle.params(negotiated, params, dict(meta) if meta else None, extensions)
        options: dict[str, Any] = {
            "timeout": self.timeout if timeout is USE_CLIENT_DEFAULT else timeout,
            "cancel": cancel,
            "progress": progress,
            "headers": headers,
            "on_stream": on_stream,
            "reset_timeout_on_progress": reset_timeout_on_progress,
            "max_total_timeout": max_total_timeout,
        }
        if on_request_id is not None:
            options["on_request_id"] = on_request_id
        try:
            result = engine.request(method, wire_params, **options)
        except ConnectionClosed:
            # H13: a modern response stream that broke while the connection lives on is
            # re-issued once, as a new request with a new id, if it is safe to repeat.
            if not (engine.alive and negotiated.era == "modern" and method in _REPEATABLE):
                raise
            log.info("mcp_sync: %s: the answer stream broke; sending it again", method)
            result = engine.request(method, wire_params, **options)
        kind = result.get("resultType", "complete")  # J5: absent means complete
        if kind == "complete" or negotiated.era == "legacy":
            return result
        if kind == "input_required" and method in _INPUT_METHODS_ALLOWED:
            return result
        if kind == "task" and method == "tools/call" and self._declares_tasks(extensions):
            return result  # X2: only tools/call, only when the extension was declared
        raise ProtocolError(f"{method}: unexpected resultType {kind!r}", method=method)  # J4, R1

    def _declares_tasks(self, extensions: Mapping[str, Any] | None) -> bool:
        return TASKS_EXTENSION in (extensions or {}) or TASKS_EXTENSION in self._handlers.extensions

    def _send_with_input(self, method: str, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """Send, then drive ``input_required`` rounds (MRTR, R2-R8) to a complete result.

        A handler that fails makes this raise its HandlerError in both eras (legacy
        servers ask with requests of their own: see Handlers.attributing_failures).
        """
        with self._handlers.attributing_failures():
            return self._input_rounds(method, params, **kwargs)

    def _input_rounds(self, method: str, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        responses = kwargs.pop("input_responses", None)
        state = kwargs.pop("request_state", None)
        cache = kwargs.pop("cache", None)
        if responses is not None:
            if not isinstance(responses, Mapping):
                raise TypeError(f"{method}: input_responses must be a dict, not {type(responses).__name__}")
            check_json(dict(responses), f"{method}: input_responses")
        if state is not None and not isinstance(state, str):
            raise TypeError(f"{method}: request_state must be the string the server sent, not {type(state).__name__}")
        delay = _LOAD_SHED_BACKOFF[0]
        for _round in range(self.input_required_max_rounds + 1):
            round_params = dict(params)
            if responses is not None:
                round_params["inputResponses"] = responses
            if state is not None:
                round_params["requestState"] = state  # R3: echoed exactly, never inspected
            result = self._send_cached(method, round_params, cache, **kwargs)  # C2: retries bypass
            if result.get("resultType", "complete") != "input_required":
                return result
            requests = result.get("inputRequests")
            new_state = result.get("requestState")
            if requests is not None and not isinstance(requests, dict):
                raise ProtocolError(f"{method}: inputRequests is not an object", method=method)
            if new_state is not None and not isinstance(new_state, str):
                raise ProtocolError(f"{method}: requestState is not a string", method=method)
            state = new_state
            if not requests:  # load shedding: retry with the state after a short backoff
                responses = None
                time.sleep(delay)
                delay = min(delay * 2, _LOAD_SHED_BACKOFF[1])
                continue
            responses = self._answer_input_requests(method, requests, state)
        raise InputRequiredError(
            f"{method}: still input_required after {self.input_required_max_rounds} rounds",
            method=method,
            request_state=state,
        )

    def _answer_input_requests(self, method: str, requests: dict[str, Any], state: str | None) -> dict[str, Any]:
        missing = {
            key: req
            for key, req in requests.items()
            if not (
                isinstance(req, dict)
                and req.get("method") in INPUT_METHODS
                and self._handlers.can_answer(req["method"])
            )
        }
        if missing:
            raise InputRequiredError(
                f"{method}: the server asks for input no handler can give: {sorted(missing)}",
                input_requests=requests,
                request_state=state,
                method=method,
            )
        # Handlers may take minutes (a person answering): run them side by side.
        outcomes = run_concurrently(
            {key: (self._handlers.answer, req["method"], req.get("params") or {}) for key, req in requests.items()},
            self._engine.name if self._engine else "server",
        )
        answers: dict[str, Any] = {}
        for key, (value, error) in outcomes.items():
            if isinstance(error, ServerRequestError):
                raise InputRequiredError(
                    f"{method}: the handler for {requests[key]['method']} refused: {error.message}",
                    input_requests=requests,
                    request_state=state,
                    method=method,
                ) from error
            if error is not None:
                raise error  # a HandlerError (MCPError) with the handler's exception as __cause__
            answers[key] = value
        return answers

    def _require(self, capability: str, method: str) -> None:
        """Raise CapabilityError, before anything is sent, if the server lacks ``capability``.

        Modern: the capabilities come from a DiscoverResult, which may be stale (its
        ttlMs ran out, C3); before relying on it to refuse, a stale one is re-fetched
        (a fresh one is reused from the cache), so a server that gained the
        capability is not refused on old information.
        """
        if self._state is ClientState.CLOSED:
            raise ClientStateError(f"{method}: the client is closed", method=method)
        engine = self._engine
        if self._negotiated is None or engine is None or not engine.alive:
            return  # not connected (or the server died): the request connects within its own deadline, then checks
        negotiated = self._connected()
        if capability in negotiated.server_capabilities:
            return
        if negotiated.era == "modern" and method != "server/discover":
            self.discover()  # reuses a fresh answer; re-fetches a stale one and updates the capabilities
            negotiated = self._connected()
        if capability not in negotiated.server_capabilities:
            raise CapabilityError(f"{method}: the server did not declare the {capability!r} capability", method=method)

    # -- caching and connection hooks (C1-C7, U7) ----------------------------------------------

    def _send_cached(self, method: str, params: dict[str, Any] | None, cache: str | None, **kwargs: Any) -> dict:
        """:meth:`_send` through the result cache (see :mod:`._cache`); ``cache`` is the per-call mode."""
        mode = check_mode(cache)
        store = self._cache
        if store is None or mode == "bypass" or method not in CACHEABLE_METHODS or is_retry(params):  # C2
            return self._send(method, params, **kwargs)
        _negotiated, kwargs["timeout"] = self._connected_within(
            method, kwargs.get("timeout", USE_CLIENT_DEFAULT), kwargs.get("cancel")
        )
        auth = self._auth_context()
        if mode == "use":
            hit = store.get(method, params, auth)
            if hit is not None:
                return hit
        generation = store.generation  # C6: an answer overtaken by an invalidation is not stored
        result = self._send(method, params, **kwargs)
        store.put(method, params, auth, result, generation=generation)
        return result

    def _auth_context(self, engine: Engine | None = None) -> Any:
        """C5: the key of the credentials in use (the transport's ``auth_context``; stdio has none)."""
        engine = engine or self._engine
        context = getattr(engine.transport, "auth_context", None) if engine is not None else None
        try:
            hash(context)
        except TypeError:
            context = repr(context)
        return context

    def _before_notification(self, engine: Engine, method: str, params: dict[str, Any]) -> None:
        """Reader thread, before anyone sees the notification: invalidate (C6), note listen acks."""
        if self._cache is not None:
            self._cache.notification(method, params)
        self._subscriptions.before_notification(engine, method, params)

    def _prepare(self, engine: Engine, negotiated: Negotiated, *, restarted: bool) -> None:
        """Connect thread, before the new connection is published: cache and session state."""
        if self._cache is not None:
            if restarted:
                self._cache.clear()  # C6: notifications were missed while it was down
            if negotiated.era == "modern":
                store, auth = self._cache, self._auth_context(engine)
                store.put("server/discover", None, auth, negotiated.server_info, generation=store.generation)
        level = self._lifecycle.log_level
        if negotiated.era == "legacy" and level is not None and "logging" in negotiated.server_capabilities:
            try:  # LG8: session-wide, so a new session needs it again
                engine.request("logging/setLevel", {"level": level}, timeout=self.timeout)
            except MCPError as exc:
                log.warning("mcp_sync: logging/setLevel %s failed: %s", level, exc)

    def _session_renewed(self, engine: Engine) -> None:
        """Dispatch thread: the transport replaced an expired legacy HTTP session (LG3).

        The new session knows nothing of the old one: cached results may be stale,
        the log level and resource subscriptions must be asked for again (in the
        background: this thread must not wait on the server)."""
        negotiated = self._negotiated
        if negotiated is None or engine is not self._engine or self._state is ClientState.CLOSED:
            return
        if self._cache is not None:
            self._cache.clear()
        level = self._lifecycle.log_level
        if level is not None and "logging" in negotiated.server_capabilities:
            spawn(lambda: self._resend_log_level(engine, level), "renew", engine.name)
        self._subscriptions.session_renewed(engine, negotiated)

    def _resend_log_level(self, engine: Engine, level: str) -> None:
        try:
            engine.request("logging/setLevel", {"level": level}, timeout=self.timeout)
        except MCPError as exc:
            log.warning("mcp_sync: logging/setLevel %s on the new session failed: %s", level, exc)

    # -- callbacks (dispatch and handler threads) -----------------------------------------

    def _dispatch_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            logger = logging.getLogger(f"mcp_sync.server.{self._name}")
            mcp_level = params.get("level")
            level = _LOG_LEVELS.get(mcp_level, logging.INFO) if isinstance(mcp_level, str) else logging.INFO
            if logger.isEnabledFor(level):
                source = params.get("logger")
                tag = f"[{mcp_level}] " if mcp_level in _UNNAMED_LOG_LEVELS else ""
                logger.log(level, "%s[%s] %s" if source else "%s%s%s", tag, source or "", params.get("data"))
        self._subscriptions.dispatch(method, params)  # legacy: the session's own stream (LG9)
        if self.on_notification is not None:
            self.on_notification(method, params)

    def _answer_server_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A legacy server-to-client request (LG10), on a handler thread."""
        if self._handlers.host_tasks:  # LG12: client-hosted tasks
            if method in TASK_METHODS:
                return self._hosted_tasks.answer(method, params)
            if isinstance(params.get("task"), dict) and method in ("sampling/createMessage", "elicitation/create"):
                return self._hosted_tasks.start(params, lambda: self._handlers.answer(method, params))
        try:
            result = self._handlers.answer(method, params)
        except HandlerError as exc:
            self._handlers.failed(exc)  # the call in flight raises it too, as on a modern server
            raise
        meta = params.get("_meta")
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        if related is not None:  # LG12: answers about a task carry its id back
            result = {**result, "_meta": {**(result.get("_meta") or {}), RELATED_TASK: related}}
        return result

    def set_roots(self, roots: Roots) -> None:
        """Replace the roots given to the server (a list, or a callable asked each time).

        Legacy servers are told with ``notifications/roots/list_changed``; modern
        servers ask for roots per request, so they see the new ones next time.

        Example: ``client.set_roots(["file:///home/me/project"])``
        """
        if isinstance(roots, (str, bytes)) or not (callable(roots) or isinstance(roots, Sequence)):
            raise TypeError(f"set_roots: roots must be a list of URIs or a callable, not {type(roots).__name__}")
        self._handlers.on_roots = roots
        negotiated = self._negotiated
        if negotiated is not None and negotiated.era == "legacy" and self._engine is not None:
            self._engine.notify("notifications/roots/list_changed")

    # -- operations ---------------------------------------------------------------------
    # Every public method spells out its options; each checks its arguments before
    # anything is sent (TypeError/ValueError naming the parameter), so a server never
    # sees NaN, a lone surrogate or a list where an object belongs.

    def _tool_arguments(
        self, label: str, name: Any, arguments: Any, meta: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        """A tool call's name and arguments, checked; returns the arguments as a dict."""
        if not isinstance(name, str):
            raise TypeError(f"{label}: the tool name must be a string, not {type(name).__name__}")
        check_json(name, f"{label}: the tool name")
        if arguments is None:
            return {}
        if not isinstance(arguments, Mapping):
            raise TypeError(
                f"{label}({name!r}): arguments must be a dict of argument names to values, "
                f"not {type(arguments).__name__}"
            )
        args = dict(arguments)
        check_json(args, f"{label}({name!r}): argument")
        return args

    def call_tool(
        self,
        name: str | Tool,
        arguments: Mapping[str, Any] | None = None,
        *,
        validate: bool | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        progress: ProgressCallback | None = None,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
        raise_on_error: bool = False,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> CallToolResult:
        """Call a tool and return its :class:`CallToolResult`.

        ``progress(progress, total, message)`` runs on the dispatch thread for
        each progress notification, all before this returns. With
        ``reset_timeout_on_progress=True`` each progress notification restarts
        ``timeout``; ``max_total_timeout`` bounds the whole call. ``raise_on_error``
        turns an ``isError`` result into :class:`ToolError`. ``arguments`` must
        be JSON: NaN, infinities and lone surrogates raise ValueError before
        anything is sent. ``name`` may be a :class:`Tool`. ``validate=True``
        checks the arguments against the tool's ``inputSchema`` first
        (:class:`InvalidArguments`, nothing sent; default: the client's
        ``validate_input``); the result is checked against its ``outputSchema``
        as the client's ``validate_output`` says.

        Example::

            result = client.call_tool("echo", {"text": "hi"}, timeout=5)
            print(result.text)
        """
        tool = name if isinstance(name, Tool) else None
        tool_name = name.name if isinstance(name, Tool) else name
        args = self._tool_arguments("call_tool", tool_name, arguments, meta)
        timeout = check_timeout(timeout)
        self._require("tools", "tools/call")
        self._schemas.check_arguments(self, tool_name, tool, args, validate)
        request_ids: list[Any] = []

        def send() -> dict[str, Any]:
            return self._send_with_input(
                "tools/call",
                {"name": tool_name, "arguments": args},
                timeout=timeout,
                progress=progress,
                cancel=cancel,
                meta=meta,
                input_responses=input_responses,
                request_state=request_state,
                headers=self._param_headers(tool_name, args),
                reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=max_total_timeout,
                on_request_id=request_ids.append,
            )

        try:
            raw = send()
        except ServerError as exc:
            if exc.code != HEADER_MISMATCH or not self._mirrors_param_headers():
                raise
            log.info("mcp_sync: %s answered HeaderMismatch for %r; listing tools again", self, tool_name)  # H10
            list(self.tools())  # refreshes the remembered schemas
            raw = send()  # once: a second mismatch is raised
        if raw.get("resultType") == "task":  # X2: a task handle, unasked: wait for it like a call
            wait = self.timeout if timeout is USE_CLIENT_DEFAULT else timeout
            result = Task.from_wire(raw, "modern", self).wait(timeout=wait)
        else:
            result = CallToolResult.from_wire(raw)
        self._schemas.check_result(self, tool_name, tool, result)
        if raise_on_error and result.is_error:
            raise ToolError(
                f"tool {tool_name!r} failed: {result.text[:200]}",
                result=result,
                method="tools/call",
                request_id=request_ids[-1] if request_ids else None,
            )
        return result

    def read_resource(
        self,
        uri: str,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        cache: str | None = None,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> ReadResourceResult:
        """Read a resource. Raises :class:`ResourceNotFound` if it does not exist.

        ``cache="use"|"refresh"|"bypass"``: see :meth:`clear_cache`.

        Example: ``text = client.read_resource("file:///notes.txt").text``
        """
        if not isinstance(uri, str):
            raise TypeError(f"read_resource: uri must be a string, not {type(uri).__name__}")
        check_json(uri, "read_resource: uri")
        check_mode(cache)
        self._require("resources", "resources/read")
        try:
            raw = self._send_with_input(
                "resources/read", {"uri": uri}, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
                cache=cache, input_responses=input_responses, request_state=request_state,
                reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
            )
        except ServerError as exc:
            if exc.code in (INVALID_PARAMS, RESOURCE_NOT_FOUND_LEGACY):  # Q1: either code, in both eras
                raise ResourceNotFound(
                    exc.code, exc.message, exc.data, method="resources/read", request_id=exc.request_id
                ) from exc
            raise
        return ReadResourceResult.from_wire(raw)

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> GetPromptResult:
        """Render a prompt; ``arguments`` maps argument names to strings.

        Example: ``client.get_prompt("greet", {"name": "Ada"}).messages``
        """
        if not isinstance(name, str):
            raise TypeError(f"get_prompt: the prompt name must be a string, not {type(name).__name__}")
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            if not isinstance(arguments, Mapping):
                raise TypeError(
                    f"get_prompt({name!r}): arguments must be a dict of names to strings, "
                    f"not {type(arguments).__name__}"
                )
            wrong = [key for key, value in arguments.items() if not isinstance(value, str)]
            if wrong:
                raise TypeError(f"get_prompt({name!r}): prompt arguments are strings; {wrong[0]!r} is not")
            if arguments:
                params["arguments"] = dict(arguments)
        check_json(params, f"get_prompt({name!r}):")
        self._require("prompts", "prompts/get")
        return GetPromptResult.from_wire(
            self._send_with_input(
                "prompts/get", params, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
                input_responses=input_responses, request_state=request_state,
                reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
            )
        )

    def complete(
        self,
        ref: Mapping[str, Any] | Prompt | ResourceTemplate,
        argument: Mapping[str, str] | tuple[str, str],
        context: Mapping[str, str] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Completion:
        """Ask for completions of a prompt or resource-template argument.

        ``ref`` is a wire dict (``{"type": "ref/prompt", "name": "greet"}``), a
        :class:`Prompt` or a :class:`ResourceTemplate`; ``argument`` is
        ``{"name": ..., "value": ...}`` or a ``(name, value)`` pair; ``context``
        maps already-filled argument names to values.

        Example: ``client.complete(prompt, ("name", "Al")).values``
        """
        if isinstance(ref, Prompt):
            ref = {"type": "ref/prompt", "name": ref.name}
        elif isinstance(ref, ResourceTemplate):
            ref = {"type": "ref/resource", "uri": ref.uri_template}
        elif not isinstance(ref, Mapping):
            raise TypeError(f"complete: ref must be a Prompt, a ResourceTemplate or a dict, not {type(ref).__name__}")
        if isinstance(argument, (tuple, list)) and len(argument) == 2:
            argument = {"name": argument[0], "value": argument[1]}
        if not isinstance(argument, Mapping):
            raise TypeError(f"complete: argument must be a (name, value) pair or a dict, not {argument!r:.60}")
        params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
        if context:
            if not isinstance(context, Mapping):
                raise TypeError(f"complete: context must be a dict of names to values, not {type(context).__name__}")
            params["context"] = {"arguments": dict(context)}
        check_json(params, "complete:")
        self._require("completions", "completion/complete")
        return Completion.from_wire(
            self._send(
                "completion/complete", params, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
                reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
            )
        )

    def discover(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> DiscoverResult:
        """``server/discover`` (modern servers): versions, capabilities, identity.

        Cached like the lists (the connect-time answer seeds the cache): a fresh
        one is reused within its ttlMs, a stale one re-fetched, and a re-fetched
        one updates :attr:`server_capabilities` and :attr:`instructions`.
        Example: ``client.discover(cache="refresh").capabilities``
        """
        check_mode(cache)
        negotiated = self._connected()
        if negotiated.era != "modern":
            raise CapabilityError("server/discover: the server is a legacy server", method="server/discover")
        raw = self._send_cached("server/discover", None, cache, timeout=timeout, cancel=cancel, meta=meta)
        result = DiscoverResult.from_wire(raw)
        with self._lock:
            if self._negotiated is negotiated and raw is not negotiated.server_info:
                self._negotiated = attrs.evolve(
                    negotiated,
                    server_capabilities=result.capabilities,
                    instructions=result.instructions,
                    server_info=raw,
                )
        return result

    def ping(
        self,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        """Check the server is alive. Legacy: ``ping``; modern servers have no ping,
        so a ``server/discover`` round trip stands in for it.

        Example: ``client.ping(timeout=5)`` (raises :class:`RequestTimeout` if no answer in 5 s)
        """
        timeout = check_timeout(timeout)
        method = "ping" if self._connected().era == "legacy" else "server/discover"
        self._send(method, None, timeout=timeout, cancel=cancel, meta=meta)

    def set_log_level(self, level: str) -> None:
        """Ask the server for log messages at ``level`` and above.

        Modern: sent as ``io.modelcontextprotocol/logLevel`` in each request's
        ``_meta`` from now on; legacy: ``logging/setLevel`` now.

        Example: ``client.set_log_level("debug")`` (messages go to the ``mcp_sync.server.<name>`` logger)
        """
        if not isinstance(level, str) or level not in _LOG_LEVELS:
            raise ValueError(f"level must be one of {list(_LOG_LEVELS)}, not {level!r:.40}")
        self._lifecycle.log_level = level
        if self._connected().era == "legacy":
            self._require("logging", "logging/setLevel")
            self._send("logging/setLevel", {"level": level})

    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send any request and return the raw result dict (the escape hatch).

        Example: ``client.request("tools/list", {"cursor": None})["tools"]``
        """
        wire_params = self._raw_params("request", method, params)
        return self._send(
            method, wire_params, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send any notification.

        Example: ``client.notify("notifications/roots/list_changed")``
        """
        wire_params = self._raw_params("notify", method, params)
        self._connected()
        engine = self._engine
        if engine is None:
            raise ClientStateError("the client is closed")
        engine.notify(method, wire_params)

    @staticmethod
    def _raw_params(label: str, method: Any, params: Any) -> dict[str, Any] | None:
        if not isinstance(method, str):
            raise TypeError(f"{label}: method must be a string, not {type(method).__name__}")
        if params is None:
            return None
        if not isinstance(params, Mapping):
            raise TypeError(f"{label}({method!r}): params must be a dict, not {type(params).__name__}")
        wire_params = dict(params)
        check_json(wire_params, f"{label}({method!r}): params")
        return wire_params

    def listen(
        self,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_uris: Sequence[str] = (),
        on_notification: Callable[[str, dict], None] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
    ) -> Subscription:
        """Subscribe to change notifications; returns a live :class:`Subscription`.

        Modern servers: one ``subscriptions/listen`` request, returned from once
        acknowledged (``timeout``, default the client's, then
        :class:`RequestTimeout` and the listen is cancelled). Legacy servers:
        ``resources/subscribe`` per URI and a ``ping``. Only what the server's
        capabilities allow is asked for; :class:`CapabilityError` if that
        leaves nothing. ``on_notification(method, params)`` runs on the
        dispatch thread for each event, and may call the client. After a server
        restart the subscription is re-established and delivers
        ``("mcp_sync/resubscribed", {...})``.

        Example::

            with client.listen(tools_list_changed=True) as sub:
                for method, params in sub:
                    print(method, [t.name for t in client.tools()])
        """
        timeout = check_timeout(timeout)
        if isinstance(resource_uris, str) or not all(isinstance(uri, str) for uri in resource_uris):
            raise TypeError("listen: resource_uris must be a list of URI strings")
        return self._subscriptions.listen(
            tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed,
            resource_uris=resource_uris,
            on_notification=on_notification,
            timeout=self.timeout if timeout is USE_CLIENT_DEFAULT else timeout,
        )

    def clear_cache(self) -> None:
        """Forget cached list, read and discover results.

        The cache (``cache=True``, the default) reuses a result while its
        ``ttlMs`` lasts (absent or 0 means never; at most a day), keeps
        ``cacheScope: "private"`` results per authorization context, and drops
        entries when a list_changed or resources/updated notification arrives or
        the server restarts. Per call, the list/read methods and ``discover``
        take ``cache="use"`` (default), ``"refresh"`` (re-fetch and store) or
        ``"bypass"`` (neither read nor store).

        Example: ``client.clear_cache(); client.list_tools(cache="refresh")``
        """
        if self._cache is not None:
            self._cache.clear()

    def __repr__(self) -> str:
        negotiated = self._negotiated
        is_open = negotiated is not None and self._state is ClientState.OPEN
        era = f" {negotiated.era} {negotiated.protocol_version}" if is_open and negotiated else ""
        pid = self.pid
        where = f" {self._target}" + (f" pid={pid}" if pid is not None else "")
        return f"<mcp_sync.Client {self._name!r} {self._state.value}{era}{where}>"
