"""The blocking facade: :class:`Client`.

Methods build params, ask the engine, and turn answers into models; they never
touch the wire. The era logic lives in :mod:`._lifecycle`, the threads in
:mod:`._engine` and the transports.
"""

from __future__ import annotations

import atexit
import enum
import logging
import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

import attrs

from ._cache import ResultCache, check_mode, is_retry
from ._engine import Engine, ProgressCallback
from ._handlers import INPUT_METHODS, Handlers, Roots
from ._headers import HEADER_MISMATCH
from ._hosted_tasks import TASK_METHODS, HostedTasks
from ._lifecycle import Lifecycle, Negotiated
from ._listing import ListingMixin
from ._llm_formats import LLMFormatsMixin
from ._schemas import ToolSchemas
from ._sentinels import USE_CLIENT_DEFAULT
from ._subscriptions import Subscription, Subscriptions
from ._tasks import TASKS_EXTENSION, Task, TasksMixin
from ._threads import Dispatcher, run_concurrently, spawn
from ._values import Timeout, check_env, check_json, check_timeout, command_line, http_options
from ._version import __version__
from .cancellation import CancellationToken
from .exceptions import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND_LEGACY,
    CapabilityError,
    ClientStateError,
    ConnectionClosed,
    HandlerError,
    InputRequiredError,
    MCPError,
    ProtocolError,
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
#: Requests without side effects: re-sent once if their answer stream breaks (H13); never tools/call.
_REPEATABLE = frozenset({
    "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
    "resources/read", "prompts/get", "completion/complete", "tasks/get",
})


#: Clients with a live connection, closed at interpreter exit so no server process is orphaned.
_OPEN_CLIENTS: weakref.WeakSet[Client] = weakref.WeakSet()


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
    OPEN = "open"  #: connected
    CLOSED = "closed"  #: close() was called; every request raises ClientStateError


class Client(ListingMixin, TasksMixin, LLMFormatsMixin):
    """A blocking MCP client. Thread-safe: share one between many threads.

    Build one with :meth:`stdio`, :meth:`http`, :meth:`sse` or
    :func:`mcp_sync.connect`; use it as a context manager or call
    :meth:`close`. Every method may be called from any thread, including from
    inside a callback (callbacks run on the client's dispatch thread).

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
        if callable(transport) and not hasattr(transport, "send"):
            self._factory: Callable[[], Transport] | None = transport if restart else None
            self._transport_factory: Callable[[], Transport] = transport
        else:
            given: Transport = transport  # type: ignore[assignment]
            self._factory = None
            self._transport_factory = lambda: given
        self.timeout = timeout
        self.max_message_bytes = max_message_bytes
        self.max_pages = max_pages
        self.input_required_max_rounds = input_required_max_rounds
        self.on_notification = on_notification
        self.cache_enabled = cache
        #: list/read/discover results kept while their ttlMs lasts (C1-C7); None with cache=False
        self._cache: ResultCache | None = ResultCache() if cache else None
        self._subscriptions = Subscriptions(self)
        self._handlers = Handlers(
            on_elicitation=on_elicitation,
            on_sampling=on_sampling,
            on_roots=on_roots,
            sampling_tools=sampling_tools,
            host_tasks=host_tasks,
            extensions=dict(extensions or {}),
            url_elicitation=url_elicitation,
        )
        self._hosted_tasks = HostedTasks("client")
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
        self._tool_schemas: dict[str, dict[str, Any]] = {}
        self._tool_schemas_lock = threading.Lock()
        self._schemas = ToolSchemas(validate_output, validate_input)  # outputSchema/inputSchema checks
        self._state = ClientState.NEW
        self._engine: Engine | None = None
        self._negotiated: Negotiated | None = None
        self._dispatcher: Dispatcher | None = None

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
        one string). The child gets an allow-listed environment (HOME, LOGNAME,
        PATH, SHELL, TERM, USER, ...) with ``env`` on top, or the whole
        environment with ``inherit_env=True``. ``stderr``: None logs the
        server's stderr to ``mcp_sync.stderr.<server>``; or a file, or a
        callable taking each line. If the server dies, the next request starts
        it again; ``restart=False`` turns that off. The other options are the
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
        self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    @property
    def state(self) -> ClientState:
        """:class:`ClientState`: NEW, OPEN or CLOSED."""
        return self._state

    def connect(self) -> dict[str, Any]:
        """Connect (probe / handshake) if not yet connected; returns the server_info dict.

        Also done by the first request. If connecting fails, everything the
        attempt started is stopped before the exception propagates.

        Example: ``client.connect(); print(client.era, client.protocol_version)``
        """
        return self._connected().server_info

    def _connected(self) -> Negotiated:
        negotiated, engine = self._negotiated, self._engine
        if negotiated is not None and engine is not None and engine.alive:
            return negotiated
        with self._lock:
            if self._state is ClientState.CLOSED:
                raise ClientStateError("the client is closed")
            if self._negotiated is not None and self._engine is not None:
                if self._engine.alive:
                    return self._negotiated
                if self._factory is None:  # cannot restart: report how it ended
                    raise self._engine.closed_error or ConnectionClosed("the connection is closed")
                log.info("mcp_sync: the server connection ended; starting it again")
                self._engine.close("restarting")
            restarted = self._negotiated is not None
            engine = self._new_engine()
            try:
                engine, negotiated = self._lifecycle.connect(
                    engine, timeout=self.timeout, restart=self._new_engine if self._factory else None
                )
                engine.transport.configure(era=negotiated.era, protocol_version=negotiated.protocol_version)
            except BaseException:
                engine.close("connecting failed")
                if self._negotiated is None and self._dispatcher is not None:  # leave nothing running
                    self._dispatcher.stop()
                    self._dispatcher = None
                raise
            self._engine, self._negotiated = engine, negotiated
            self._state = ClientState.OPEN
            _OPEN_CLIENTS.add(self)
            self._after_connect(engine, negotiated, restarted=restarted)
            return negotiated

    def _new_engine(self) -> Engine:
        transport = self._transport_factory()
        if self._dispatcher is None:
            self._dispatcher = Dispatcher(getattr(transport, "name", "server"))
        engine = Engine(
            transport,
            on_notification=self._dispatch_notification,
            on_server_request=self._answer_server_request,
            dispatcher=self._dispatcher,
            before_notification=lambda method, params: self._before_notification(engine, method, params),
            on_closed=lambda error: self._subscriptions.connection_lost(engine),
            on_session_renewed=lambda: self._session_renewed(engine),
        )
        engine.start()
        return engine

    def close(self) -> None:
        """Close the connection; idempotent. Ends every thread and child process the client started.

        Example: ``client.close()`` (a ``with mcp_sync.Client.stdio(...) as client:`` block does it on exit)
        """
        with self._lock:
            if self._state is ClientState.CLOSED:
                return
            self._state = ClientState.CLOSED
            _OPEN_CLIENTS.discard(self)
            engine, dispatcher = self._engine, self._dispatcher
            self._engine = None
        self._subscriptions.close_all()
        if engine is not None:
            engine.close()
        self._hosted_tasks.close()
        if dispatcher is not None:
            dispatcher.stop()

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
        negotiated = self._connected()
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
        }
        if on_request_id is not None:
            options["on_request_id"] = on_request_id
        # Passed only when asked for, so an engine without them still serves every other call.
        if reset_timeout_on_progress:
            options["reset_timeout_on_progress"] = True
        if max_total_timeout is not None:
            options["max_total_timeout"] = max_total_timeout
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
        if store is None or mode == "bypass" or is_retry(params):  # C2: retries never cached
            return self._send(method, params, **kwargs)
        self._connected()
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

    def _after_connect(self, engine: Engine, negotiated: Negotiated, *, restarted: bool) -> None:
        """Under the client lock, right after (re)connecting."""
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
        if restarted:
            self._subscriptions.reconnected(engine, negotiated)  # U7, T6

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
            negotiated = self._negotiated
            name = (negotiated.server_implementation or {}).get("name") if negotiated else None
            logger = logging.getLogger(f"mcp_sync.server.{name if isinstance(name, str) and name else 'unknown'}")
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
        if negotiated is None:
            return f"<mcp_sync.Client {self._state.value}>"
        return f"<mcp_sync.Client {self._state.value} {negotiated.era} {negotiated.protocol_version}>"
