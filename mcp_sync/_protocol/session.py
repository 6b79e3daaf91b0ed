"""The session: one client's protocol state and its one request path.

:class:`Session` sits between the facade and the engine. It owns the
:class:`~.connection.Connection` (connect, restarts, close), the handlers,
the lifecycle (era, version, ``_meta``), the result cache, the tools' schema
checks and their mirrored header fields. Every request goes through
:meth:`Session.send`: connect within the caller's deadline, envelope, engine,
``resultType`` check. It answers the connection's hooks (notifications,
server requests, renewals, losses).

It holds no reference to a :class:`~mcp_sync.Client`, so a client nobody
references is collected at once.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import attrs

from .._options import DEFAULT, CallOptions, Roots
from .._sentinels import USE_CLIENT_DEFAULT
from .._threads import spawn
from .._version import __version__
from ..exceptions import (
    CapabilityError,
    ClientStateError,
    ConnectionClosed,
    HandlerError,
    MCPError,
    ProtocolError,
    ServerUnreachable,
    SessionExpiredError,
    UnsupportedProtocolVersionError,
)
from ..transports.base import declared
from .cache import CACHEABLE_METHODS, ResultCache, is_retry
from .connection import ClientState, Connection
from .handlers import Handlers, RequestContext, is_file_uri
from .hosted_tasks import TASK_METHODS
from .lifecycle import MODERN_VERSIONS, Lifecycle, Negotiated
from .subscriptions import Subscriptions
from .tool_headers import ToolHeaders
from .tracing import Tracing

if TYPE_CHECKING:
    from .._engine import Engine, ServerRequest
    from .._schemas import ToolSchemas
    from ..models import ProgressEvent
    from ..transports.base import Transport

log = logging.getLogger("mcp_sync")

#: The server's log levels (syslog's eight) as standard logging levels; the three logging
#: has no name for keep theirs in the message ("[notice] ...").
LOG_LEVELS = {
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
RELATED_TASK = "io.modelcontextprotocol/related-task"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
#: Subscriptions restart a dead stdio server by themselves, at most this often (then they end).
_MAX_RESTARTS, _RESTART_WINDOW = 3, 30.0
#: The capability each request needs (checked once connected, when a call connected first).
CAPABILITY_OF = {
    "tools/call": "tools", "tools/list": "tools", "prompts/get": "prompts", "prompts/list": "prompts",
    "resources/read": "resources", "resources/list": "resources", "resources/templates/list": "resources",
    "completion/complete": "completions",
}
#: The listen flag whose notifications tell that a list changed (#19.2).
_LIST_FLAG = {
    "tools/list": "toolsListChanged", "prompts/list": "promptsListChanged",
    "resources/list": "resourcesListChanged", "resources/templates/list": "resourcesListChanged",
}
#: Requests without side effects: re-sent once if their answer stream breaks (H13, and #29.2: a
#: server restart in either era); never tools/call.
_REPEATABLE = frozenset({
    "server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
    "resources/read", "prompts/get", "completion/complete", "tasks/get",
})


class Session:
    """One client's protocol layer. Thread-safe: every method may be called from any thread."""

    def __init__(
        self,
        transport: Transport | Callable[[], Transport],
        *,
        name: str | None,
        client_info: Mapping[str, Any] | None,
        mode: str,
        protocol_version: str | None,
        timeout: float | None,
        probe_timeout: float | None,
        max_message_bytes: int,
        max_pages: int,
        input_required_max_rounds: int,
        on_elicitation: Callable[..., dict] | None,
        on_sampling: Callable[..., dict] | None,
        on_roots: Roots | None,
        on_notification: Callable[[str, dict], None] | None,
        log_level: str | None,
        extensions: Mapping[str, Any] | None,
        cache: bool,
        sampling_tools: bool,
        host_tasks: bool,
        restart: bool,
        schemas: ToolSchemas,
        url_elicitation: bool,
        on_connection_lost: Callable[[MCPError], None] | None = None,
        on_reconnected: Callable[[], None] | None = None,
        tracing: bool = True,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        discover_result: dict[str, Any] | None = None,
        list_ttl: float | None = None,
        on_list_changed: Callable[[str], None] | None = None,
    ) -> None:
        self.timeout = timeout
        #: #31.5: every request's progress, with the request it belongs to (any thread may set it)
        self.on_progress = on_progress
        #: #19.3: the application's connection events, run on the dispatch thread
        self.on_connection_lost = on_connection_lost
        self.on_reconnected = on_reconnected
        #: #19.6: a client span per request when opentelemetry-api is installed; None: tracing=False
        self.tracing: Tracing | None = Tracing() if tracing else None
        self.max_message_bytes = max_message_bytes
        self.max_pages = max_pages
        self.input_required_max_rounds = input_required_max_rounds
        self.on_notification = on_notification
        #: list/read/discover results kept while their ttlMs lasts (C1-C7); None with cache=False
        self.cache: ResultCache | None = ResultCache(list_ttl=list_ttl) if cache else None
        #: #31.7: dispatch thread, after a list_changed notification: ``on_list_changed(kind)``
        self.on_list_changed = on_list_changed
        self.handlers = Handlers(
            on_elicitation=on_elicitation,
            on_sampling=on_sampling,
            on_roots=on_roots,
            sampling_tools=sampling_tools,
            host_tasks=host_tasks,
            extensions=dict(extensions or {}),
            url_elicitation=url_elicitation,
        )
        self.lifecycle = Lifecycle(
            mode=mode,
            protocol_version=protocol_version,
            client_info=dict(client_info or {"name": "mcp-sync", "version": __version__}),
            capabilities=self.handlers.capabilities,
            probe_timeout=probe_timeout,
            log_level=log_level,
            discovered=discover_result,
        )
        self.schemas = schemas  # outputSchema/inputSchema checks, compiled once per listing
        self.tool_headers = ToolHeaders()  # x-mcp-header (H8): each listed tool's mirrored arguments
        self.connection = Connection(
            transport, restart=restart, name=name, lifecycle=self.lifecycle, timeout=timeout, hooks=self,
            make_subscriptions=Subscriptions,
        )
        self._auto_restarts: list[float] = []  # when subscriptions last restarted a dead server

    # -- the connection -----------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.connection.name

    @property
    def engine(self) -> Engine | None:
        return self.connection.res.engine

    @property
    def subscriptions(self) -> Subscriptions:
        return self.connection.subscriptions  # type: ignore[return-value]  # made by make_subscriptions=Subscriptions

    @property
    def state(self) -> ClientState:
        return self.connection.state

    def connected(
        self, timeout: float | None = None, cancel: Any = None, method: str = "connect"
    ) -> Negotiated:
        return self.connection.connected(timeout, cancel, method)

    def connected_within(self, method: str, options: CallOptions) -> tuple[Negotiated, CallOptions]:
        """For a request: the connection, and the options with what is left of their timeout.

        A connect done inside a call counts against that call's deadline; then the
        call's capability is checked (the check was deferred until connected)."""
        negotiated = self.connection.live()
        if negotiated is not None:
            return negotiated, options
        wait = self.timeout if options.timeout is USE_CLIENT_DEFAULT else options.timeout
        started = time.monotonic()
        negotiated = self.connection.connected(wait, options.cancel, method)
        options = options.within(None if wait is None else max(wait - (time.monotonic() - started), 0.001))
        capability = CAPABILITY_OF.get(method)
        known = negotiated.discovered != "unknown"  # #31.6: unknown capabilities: the server decides
        if capability is not None and known and capability not in negotiated.server_capabilities:
            self.require(capability, method, options)  # within what is left of the call's timeout
        return negotiated, options

    def known(self, timeout: float | None = None, method: str = "connect") -> Negotiated:
        """What was negotiated, with the server's capabilities known: a client that connected
        without asking (pinned to a modern revision, #31.6) asks ``server/discover`` now, once.
        ``method`` names the caller's request in errors (a closed client, a failed connect)."""
        negotiated = self.connected(timeout, None, method)
        if negotiated.discovered == "unknown":
            self.discover(CallOptions(timeout=timeout) if timeout is not None else DEFAULT)
            negotiated = self.connected(timeout, None, method)
        return negotiated

    def reconnect(self, timeout: Any, cancel: Any) -> Negotiated:
        self.connection.reconnect()
        return self.connection.connected(timeout, cancel, "reconnect")

    def update_discovered(self, negotiated: Negotiated, raw: dict[str, Any], capabilities: dict[str, Any],
                          instructions: str | None) -> None:
        """A re-fetched DiscoverResult updates what was negotiated (capabilities, instructions)."""
        from ..models import DiscoverResult

        connection = self.connection
        with connection.lock:
            if connection.negotiated is negotiated and raw is not negotiated.server_info:
                connection.negotiated = attrs.evolve(
                    negotiated, server_capabilities=capabilities, instructions=instructions, server_info=raw,
                    server_implementation=DiscoverResult.from_wire(raw).server_info, discovered="fetched",
                )

    # -- the request path ------------------------------------------------------------------

    def send(self, method: str, params: dict[str, Any] | None = None, options: CallOptions = DEFAULT,
             traced: bool = False) -> dict[str, Any]:
        """The one request path: connect within the deadline, envelope, engine, resultType check
        (inside a client span when tracing, #19.6: the span sends with ``traced=True``)."""
        tracing = self.tracing
        if not traced and tracing is not None and tracing.active():  # no SDK set up: no span, no cost
            negotiated = self.connection.negotiated
            return tracing.request(
                method, params, options, protocol_version=negotiated.protocol_version if negotiated else None,
                target=self.connection.target, send=lambda with_trace: self.send(method, params, with_trace, True),
                session_id=self.http_session_id,
            )
        if options.credential is not None:
            self.check_request_headers(method)
        negotiated, options = self.connected_within(method, options)
        engine = self.connection.res.engine
        if engine is None:
            raise ClientStateError("the client is closed")
        wire_params = self.lifecycle.params(negotiated, params, options.meta, options.extensions)
        timeout = self.timeout if options.timeout is USE_CLIENT_DEFAULT else options.timeout
        # #31.5: a token the caller chose is kept (and its progress delivered); every request
        # carries one while a client-wide on_progress is set
        progress_token = options.meta.get("progressToken") if options.meta else None
        progress_event = self._progress_event if self.on_progress is not None else None
        for attempt in (1, 2):
            try:
                result = engine.request(
                    method, wire_params, timeout=timeout, cancel=options.cancel, progress=options.progress,
                    headers=options.headers, on_stream=options.on_stream,
                    reset_timeout_on_progress=options.reset_timeout_on_progress,
                    max_total_timeout=options.max_total_timeout, on_request_id=options.on_request_id,
                    checked=True,  # the facade checked every value it was given (CallOptions, check_json)
                    progress_token=progress_token, progress_event=progress_event,
                )
                break
            except UnsupportedProtocolVersionError as exc:
                # V1: a modern server that rejects the revision a request carried and lists one we
                # speak (even the very one sent) gets the request once more at it. A client that
                # connected without asking (pinned, #31.6) learns the server's revision this way.
                retry_at = self._revision_to_retry(negotiated, exc) if attempt == 1 else None
                if retry_at is None:
                    raise
                negotiated = retry_at
                wire_params = self.lifecycle.params(negotiated, params, options.meta, options.extensions)
                log.info("mcp_sync: %s: the server asked for revision %s; sending it again",
                         method, negotiated.protocol_version)
            except ConnectionClosed as exc:
                # H13: a modern response stream that broke while the connection lives on is
                # re-issued once, as a new request with a new id, if it is safe to repeat; so is
                # a legacy one whose HTTP exchange broke after it was sent (#29.2: a restart). One
                # that never got there was already sent again by the transport, as often as allowed.
                if isinstance(exc, ServerUnreachable):
                    broke = exc.may_have_run
                else:
                    broke = negotiated.era == "modern"
                if attempt == 2 or not (engine.alive and broke and method in _REPEATABLE):
                    raise
                log.info("mcp_sync: %s: the answer stream broke; sending it again", method)
        kind = result.get("resultType", "complete")  # J5: absent means complete
        if kind == "complete" or negotiated.era == "legacy":
            return result
        if kind == "input_required" and method in _INPUT_METHODS_ALLOWED:
            return result
        if kind == "task" and method == "tools/call" and self.declares_tasks(options.extensions):
            return result  # X2: only tools/call, only when the extension was declared
        raise ProtocolError(f"{method}: unexpected resultType {kind!r}", method=method)  # J4, R1

    def _revision_to_retry(self, negotiated: Negotiated, error: UnsupportedProtocolVersionError
                           ) -> Negotiated | None:
        """What to send a request rejected with -32022 again at (V1): the newest modern revision
        both sides speak, made the connection's own; None when there is none (legacy, or only
        revisions we do not speak: the error stands)."""
        if negotiated.era != "modern":
            return None
        mutual = [version for version in MODERN_VERSIONS if version in error.supported]
        if not mutual:
            return None
        if mutual[0] == negotiated.protocol_version:
            return negotiated
        connection = self.connection
        with connection.lock:
            current = connection.negotiated
            if current is negotiated:
                current = connection.negotiated = attrs.evolve(negotiated, protocol_version=mutual[0])
        return current if current is not None and current.era == "modern" else None

    def send_cached(self, method: str, params: dict[str, Any] | None, options: CallOptions = DEFAULT
                    ) -> dict[str, Any]:
        """:meth:`send` through the result cache (see :mod:`.cache`); ``options.cache`` is the mode."""
        store = self.cache
        if store is None or options.cache == "bypass" or method not in CACHEABLE_METHODS or is_retry(params):  # C2
            return self.send(method, params, options)
        if options.credential is not None:
            self.check_request_headers(method)
        negotiated, options = self.connected_within(method, options)
        auth = self.auth_context()
        if options.credential is not None:  # C5, #19.1: a caller's own credentials keep their own results
            auth = (auth, options.credential)
        hold = self.hold_token(method, negotiated)
        if options.cache == "use":
            hit = store.get(method, params, auth, hold)
            if hit is not None:
                return hit
        generation = store.generation  # C6: an answer overtaken by an invalidation is not stored
        result = self.send(method, params, options)
        store.put(method, params, auth, result, generation=generation, hold=hold)
        return result

    def http_session_id(self) -> str | None:
        """The legacy Streamable HTTP session's ``Mcp-Session-Id`` now, or None (stdio, modern HTTP)."""
        engine = self.connection.res.engine
        session_id = declared(engine.transport).session_id if engine is not None else None
        return session_id if isinstance(session_id, str) else None

    def hold_token(self, method: str, negotiated: Negotiated) -> Any:
        """#19.2: a token while ``method``'s list may be kept until it changes, else None.

        The server must declare ``listChanged`` for the list, and its change
        notifications must reach us now: on a legacy session, while the
        transport declares a notification stream (stdio: always; HTTP: while the
        GET stream is open); on a modern server, only while a live
        ``subscriptions/listen`` the server acknowledged for that list is open
        (modern servers send list_changed on listen streams only). The token
        changes when that delivery was interrupted, so what was kept before is
        not trusted after.
        """
        flag = _LIST_FLAG.get(method)
        if flag is None:
            return None
        capability = negotiated.server_capabilities.get(CAPABILITY_OF[method])
        if not (isinstance(capability, dict) and capability.get("listChanged") is True):
            return None
        engine = self.connection.res.engine
        if engine is None:
            return None
        if negotiated.era == "legacy":
            stream = declared(engine.transport).notification_stream
            return None if stream is None else ("session", id(engine), stream)
        feed = self.subscriptions.change_feed(engine, flag)
        return None if feed is None else ("listen", id(engine), feed)

    def check_request_headers(self, method: str) -> None:
        """#19.1: per-request headers need a transport that sends them (HTTP); TypeError before
        anything is sent (stdio has no headers)."""
        if not declared(self.connection.transport).per_request_headers:
            raise TypeError(
                f"{method}: per-request headers and credentials need an HTTP transport; "
                f"{self.connection.target!r} is not one (stdio has no headers: pass env= to Client.stdio)"
            )

    def declares_tasks(self, extensions: Mapping[str, Any] | None) -> bool:
        return TASKS_EXTENSION in (extensions or {}) or TASKS_EXTENSION in self.handlers.extensions

    def require(self, capability: str, method: str, options: CallOptions = DEFAULT) -> None:
        """Raise CapabilityError, before anything is sent, if the server lacks ``capability``.

        Modern: the capabilities come from a DiscoverResult, which may be stale (its
        ttlMs ran out, C3); before relying on it to refuse, a stale one is re-fetched
        (a fresh one is reused from the cache), so a server that gained the
        capability is not refused on old information. The re-fetch is part of the
        call ``options`` belong to: it keeps that call's timeout and cancel token.
        """
        if self.connection.state is ClientState.CLOSED:
            raise ClientStateError(f"{method}: the client is closed", method=method)
        negotiated = self.connection.live()
        if negotiated is None:
            return  # not connected (or the server died): the request connects within its own deadline, then checks
        if capability in negotiated.server_capabilities or negotiated.discovered == "unknown":
            return  # #31.6: nothing asked, nothing refused: the server answers the request itself
        if negotiated.era == "modern" and method != "server/discover":
            # reuses a fresh answer; re-fetches a stale one and updates the capabilities
            self.discover(CallOptions(timeout=options.timeout, cancel=options.cancel))
            negotiated = self.connected()
        if capability not in negotiated.server_capabilities:
            raise CapabilityError(f"{method}: the server did not declare the {capability!r} capability", method=method)

    def discover(self, options: CallOptions = DEFAULT) -> dict[str, Any]:
        """``server/discover`` through the cache; a re-fetched answer updates what was negotiated."""
        from ..models import DiscoverResult

        negotiated, options = self.connected_within("server/discover", options)
        if negotiated.era != "modern":
            raise CapabilityError("server/discover: the server is a legacy server", method="server/discover")
        raw = self.send_cached("server/discover", None, options)
        if raw is not negotiated.server_info:
            result = DiscoverResult.from_wire(raw)
            self.update_discovered(negotiated, raw, result.capabilities, result.instructions)
        return raw

    def ping(self, options: CallOptions = DEFAULT) -> None:
        """Legacy: ``ping``; modern servers have no ping, so a ``server/discover`` round trip
        stands in for it (uncached: it must reach the server)."""
        negotiated, options = self.connected_within("ping", options)
        self.send("ping" if negotiated.era == "legacy" else "server/discover", None, options)

    def auth_context(self, engine: Engine | None = None) -> Any:
        """C5: the key of the credentials in use (the transport's ``auth_context``; stdio has none)."""
        engine = engine or self.connection.res.engine
        context = declared(engine.transport).auth_context if engine is not None else None
        try:
            hash(context)
        except TypeError:
            context = repr(context)
        return context

    def notify(self, method: str, params: dict[str, Any] | None) -> None:
        self.connected()
        engine = self.connection.res.engine
        if engine is None:
            raise ClientStateError("the client is closed")
        engine.notify(method, params)

    def _progress_event(self, method: str, request_id: Any, token: Any, progress: float, total: float | None,
                        message: str | None) -> None:
        """Dispatch thread: one progress notification for the client-wide ``on_progress``."""
        callback = self.on_progress  # read now: a callback set to None mid-call is not called
        if callback is None:
            return
        from ..models import ProgressEvent

        callback(ProgressEvent(server=self.name, method=method, request_id=request_id, progress_token=token,
                               progress=progress, total=total, message=message))

    def set_handler(self, name: str, handler: Any) -> None:
        """Replace ``on_elicitation``, ``on_sampling`` or ``on_roots`` on a live client (#31.1).

        Modern servers read the client's capabilities from each request, so the next one declares
        the change. A legacy server learned them once, at ``initialize``: a handler whose
        capability was not declared then is refused (CapabilityError) while connected to it;
        replacing a declared one, or removing one, is fine. A roots change is told to a legacy
        server with ``notifications/roots/list_changed``."""
        capability = {"on_elicitation": "elicitation", "on_sampling": "sampling", "on_roots": "roots"}[name]
        handlers, connection = self.handlers, self.connection
        with connection.lock:  # one change at a time, judged against the connection it applies to
            negotiated = connection.negotiated if connection.state is ClientState.OPEN else None
            if (handler is not None and negotiated is not None and negotiated.era == "legacy"
                    and capability not in negotiated.client_capabilities):
                raise CapabilityError(
                    f"cannot set {name} now: the client told the legacy server {self.name!r} at connect that it "
                    f"has no {capability!r} capability, and a legacy server learns capabilities only then. "
                    f"Pass {name}= when the client is made, or close() the client, set {name}, and connect again"
                )
            setattr(handlers, name, handler)
        engine = connection.res.engine
        if name == "on_roots" and handler is not None and negotiated is not None and negotiated.era == "legacy" \
                and engine is not None:
            engine.notify("notifications/roots/list_changed")  # LG10

    def set_roots(self, roots: Roots) -> None:
        self.set_handler("on_roots", roots)

    def set_log_level(self, level: str) -> None:
        self.lifecycle.log_level = level
        if self.connected().era == "legacy":
            self.require("logging", "logging/setLevel")
            self.send("logging/setLevel", {"level": level})

    def mirrors_param_headers(self) -> bool:
        """x-mcp-header applies on modern connections over a transport that mirrors it (HTTP, H8)."""
        negotiated, engine = self.connection.negotiated, self.connection.res.engine
        if negotiated is None or negotiated.era != "modern" or engine is None:
            return False
        return declared(engine.transport).mirrors_param_headers

    def clear_cache(self) -> None:
        if self.cache is not None:
            self.cache.clear()

    # -- connection events (#19.3) --------------------------------------------------------------

    def lost(self, error: MCPError) -> None:
        """Any thread: ``on_connection_lost(error)``, queued on the dispatch thread."""
        self._event(self.on_connection_lost, error)

    def came_back(self) -> None:
        """Any thread: ``on_reconnected(client)``, queued on the dispatch thread."""
        self._event(self.on_reconnected)

    def _event(self, callback: Callable[..., None] | None, *args: Any) -> None:
        connection = self.connection
        dispatcher = connection.dispatcher
        if callback is None or dispatcher is None or connection.state is ClientState.CLOSED:
            return  # close() is no loss, and nobody is told after it
        dispatcher.submit(callback, *args)

    def reconnected(self, engine: Engine, negotiated: Negotiated) -> None:
        """Connect thread: a connection replaced one that was lost or dropped (restart, reconnect())."""
        self.subscriptions.reconnected(engine, negotiated)  # U7, T6
        self.came_back()

    # -- connection hooks ---------------------------------------------------------------------

    def after_fork(self) -> None:
        """In a forked child: a fresh cache and tool headers (their locks may be held by a thread
        of the parent that does not exist here); the results are the parent's session's anyway."""
        if self.cache is not None:
            self.cache = ResultCache(list_ttl=self.cache.list_ttl)
        self.tool_headers = ToolHeaders()

    def before_notification(self, engine: Engine, method: str, params: dict[str, Any]) -> None:
        """Reader thread, before anyone sees the notification: invalidate (C6), note listen acks."""
        if self.cache is not None:
            self.cache.notification(method, params)
        self.subscriptions.before_notification(engine, method, params)

    def prepare(self, engine: Engine, negotiated: Negotiated, *, restarted: bool) -> None:
        """Connect thread, before the new connection is published: cache and session state."""
        if self.cache is not None:
            if restarted:
                self.cache.clear()  # C6: notifications were missed while it was down
            if negotiated.era == "modern" and negotiated.discovered == "fetched":  # not the caller's old one
                store, auth = self.cache, self.auth_context(engine)
                store.put("server/discover", None, auth, negotiated.server_info, generation=store.generation)
        level = self.lifecycle.log_level
        if negotiated.era == "legacy" and level is not None and "logging" in negotiated.server_capabilities:
            self._set_log_level_on(engine, level)  # LG8: session-wide, so a new session needs it again

    def session_renewed(self, engine: Engine) -> None:
        """Dispatch thread: the transport replaced an expired legacy HTTP session (LG3).

        The new session knows nothing of the old one: cached results may be stale,
        the log level and resource subscriptions must be asked for again (in the
        background: this thread must not wait on the server)."""
        negotiated = self.connection.negotiated
        if negotiated is None or engine is not self.engine or self.state is ClientState.CLOSED:
            return
        self.clear_cache()
        self.lost(SessionExpiredError("the server no longer knew the HTTP session; a new one was started"))
        level = self.lifecycle.log_level
        if level is not None and "logging" in negotiated.server_capabilities:
            spawn(lambda: self._set_log_level_on(engine, level), "renew", engine.name)
        self.subscriptions.session_renewed(engine, negotiated)
        self.came_back()

    def _set_log_level_on(self, engine: Engine, level: str) -> None:
        try:
            engine.request("logging/setLevel", {"level": level}, timeout=self.timeout)
        except MCPError as exc:
            log.warning("mcp_sync: logging/setLevel %s failed: %s", level, exc)

    def connection_lost(self, engine: Engine, error: ConnectionClosed) -> None:
        """Dispatch thread (engine ``on_closed``): suspend its subscriptions, and bring the
        server back for them (when restart is on) so they resume by themselves."""
        connection = self.connection
        subscriptions = connection.subscriptions
        subscriptions.connection_lost(engine)
        if engine is not connection.res.engine or connection.state is not ClientState.OPEN:
            return  # closed, reconnecting, or a connect attempt's engine: not a loss to repair
        self.lost(error)
        if not subscriptions.suspended():
            return
        if connection.factory is None:
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
            begun = connection.begin("subscriptions/listen")
        except MCPError as exc:
            subscriptions.end_suspended(f"the connection was lost: {exc}")
            return
        if not isinstance(begun, Negotiated):
            begun.on_failure(lambda exc: subscriptions.end_suspended(f"starting the server again failed: {exc}"))

    def dispatch_notification(self, method: str, params: dict[str, Any]) -> None:
        """Dispatch thread: server log messages to logging, then subscriptions and the application."""
        if method == "notifications/message":
            logger = logging.getLogger(f"mcp_sync.server.{self.name}")
            mcp_level = params.get("level")
            level = LOG_LEVELS.get(mcp_level, logging.INFO) if isinstance(mcp_level, str) else logging.INFO
            if logger.isEnabledFor(level):
                source = params.get("logger")
                tag = f"[{mcp_level}] " if mcp_level in _UNNAMED_LOG_LEVELS else ""
                logger.log(level, "%s[%s] %s" if source else "%s%s%s", tag, source or "", params.get("data"))
        self.subscriptions.dispatch(method, params)  # legacy: the session's own stream (LG9)
        kind = CHANGED_LISTS.get(method)
        if kind is not None and self.on_list_changed is not None:
            self.on_list_changed(kind)  # it catches and logs its own errors
        if self.on_notification is not None:
            self.on_notification(method, params)

    def answer_server_request(self, method: str, params: dict[str, Any], request: ServerRequest) -> dict[str, Any]:
        """A legacy server-to-client request (LG10), on a handler thread."""
        handlers = self.handlers
        context = RequestContext(
            server=self.name, target=self.connection.target, era="legacy", method=method, request_id=request.id,
            cancel=request.cancel, progress_token=request.progress_token, progress=request.progress,
        )
        if handlers.host_tasks:  # LG12: client-hosted tasks
            hosted = self.connection.hosted_tasks
            if method in TASK_METHODS:
                return hosted.answer(method, params)
            if isinstance(params.get("task"), dict) and method in ("sampling/createMessage", "elicitation/create"):
                return hosted.start(params, lambda: handlers.answer(method, params, context))
        try:
            result = handlers.answer(method, params, context)
        except HandlerError as exc:
            handlers.failed(exc)  # the call in flight raises it too, as on a modern server
            raise
        meta = params.get("_meta")
        related = meta.get(RELATED_TASK) if isinstance(meta, dict) else None
        if related is not None:  # LG12: answers about a task carry its id back
            result = {**result, "_meta": {**(result.get("_meta") or {}), RELATED_TASK: related}}
        return result


#: #31.7: which list a change notification is about (``on_list_changed``'s kind)
CHANGED_LISTS = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}


def check_roots(roots: Any) -> None:
    """``set_roots``' argument: a list of URIs or a callable."""
    if isinstance(roots, (str, bytes)) or not (callable(roots) or isinstance(roots, Sequence)):
        raise TypeError(f"set_roots: roots must be a list of URIs or a callable, not {type(roots).__name__}")
    for item in () if callable(roots) else roots:  # N1: roots are file:// URIs
        uri = item.get("uri") if isinstance(item, Mapping) else item
        if isinstance(uri, str) and not is_file_uri(uri):
            raise ValueError(f"set_roots: a root must be a file:// URI, not {uri!r:.60}")

