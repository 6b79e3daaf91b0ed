"""One client's connection: connect, restart, reconnect, close, and life after ``fork()``.

A :class:`Connection` owns the state (:class:`ClientState`), the transport
factory, the negotiated session (:class:`~.lifecycle.Negotiated`) and the
:class:`~.resources.Resources` that ``close()`` shuts down. A connect runs on
its own thread (an :class:`~.resources.Attempt`), so every caller waits with
its own deadline and cancel token and ``close()`` fails it at once.

What happens on the connection (notifications, server requests, session
renewals, losses) goes to its :class:`ConnectionHooks`, the session. Nothing
here refers to a :class:`~mcp_sync.Client`: a client nobody references is
collected at once and its finalizer closes these resources.
"""

from __future__ import annotations

import atexit
import enum
import functools
import logging
import os
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .._engine import Engine, ServerRequest
from .._threads import Dispatcher
from ..exceptions import Cancelled, ClientStateError, ConnectionClosed, MCPError, RequestTimeout
from ..transports.base import BaseTransport, declared
from .hosted_tasks import HostedTasks
from .resources import Attempt, Resources, SubscriptionRegistry, collect

if TYPE_CHECKING:
    from ..cancellation import CancellationToken
    from ..transports.base import Transport
    from .lifecycle import Lifecycle, Negotiated

log = logging.getLogger("mcp_sync")

#: Connections with a live connection, closed at interpreter exit so no server process is orphaned.
#: Weak: the registry never keeps anything alive.
_OPEN: weakref.WeakSet[Connection] = weakref.WeakSet()
#: Every connection, so that a forked child can make each forget its parent's.
_ALL: weakref.WeakSet[Connection] = weakref.WeakSet()
#: What forked children inherited from their parent (engines, processes, sockets, threads):
#: kept referenced and never touched, so nothing in the child closes, signals or flushes them.
_LEFT_TO_PARENT: list[Any] = []


def _forget_parent_connections() -> None:
    """In a forked child: every connection drops its parent's and reconnects on first use."""
    for connection in list(_ALL):
        connection.forget_after_fork()


if hasattr(os, "register_at_fork"):  # pragma: no branch - POSIX has it (not Windows)
    os.register_at_fork(after_in_child=_forget_parent_connections)


@atexit.register
def _close_open_connections() -> None:
    for connection in list(_OPEN):
        try:
            connection.close()
        except Exception:  # pragma: no cover - at exit, closing is best effort (close() raises only on a bug)
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


ClientState.__module__ = "mcp_sync"


class ConnectionHooks(Protocol):
    """What a connection reports to (the session). Each runs on the thread named."""

    def dispatch_notification(self, method: str, params: dict[str, Any]) -> None:
        """Dispatch thread: a notification for the application."""

    def answer_server_request(self, method: str, params: dict[str, Any], request: ServerRequest) -> dict[str, Any]:
        """Handler thread: a legacy server's request to the client (``request``: its id, cancel token, progress)."""

    def before_notification(self, engine: Engine, method: str, params: dict[str, Any]) -> None:
        """Reader thread, before anyone sees the notification (quick, no user code)."""

    def prepare(self, engine: Engine, negotiated: Negotiated, *, restarted: bool) -> None:
        """Connect thread: the new connection is about to be published."""

    def session_renewed(self, engine: Engine) -> None:
        """Dispatch thread: the transport replaced an expired legacy HTTP session."""

    def connection_lost(self, engine: Engine, error: ConnectionClosed) -> None:
        """Dispatch thread: ``engine``'s connection ended, as ``error`` says."""

    def after_fork(self) -> None:
        """In a forked child: fresh state (a lock another thread held at the fork stays held)."""

    def reconnected(self, engine: Engine, negotiated: Negotiated) -> None:
        """Connect thread: a new connection replaced a lost or dropped one."""

    def lost(self, error: MCPError) -> None:
        """Any thread: part of the connection was lost (a listen stream); tell the application."""

    def came_back(self) -> None:
        """Any thread: what was lost came back; tell the application."""


class Connection:
    """The connect state machine of one client. Thread-safe."""

    def __init__(
        self,
        transport: Transport | Callable[[], Transport],
        *,
        restart: bool,
        name: str | None,
        lifecycle: Lifecycle,
        timeout: float | None,
        hooks: ConnectionHooks,
        make_subscriptions: Callable[[Connection], SubscriptionRegistry],
    ) -> None:
        if callable(transport) and not isinstance(transport, BaseTransport):  # a factory, not a transport
            self.factory: Callable[[], Transport] | None = transport if restart else None
            self.transport_factory: Callable[[], Transport] = transport
            self.reopenable = True
            first: Transport = transport()  # made now: name, target and repr are known before connecting
        else:
            first = transport  # type: ignore[assignment]
            self.factory = None
            self.transport_factory = lambda: first
            self.reopenable = False
        self._spare: Transport | None = first  # the transport the next connect uses first
        self.transport: Transport = first
        self.name = name or first.name or "server"
        self.target = declared(first).target or type(first).__name__
        self.lifecycle = lifecycle
        self.timeout = timeout
        self.hooks = hooks
        self._make_subscriptions = make_subscriptions
        self.lock = threading.RLock()
        self.state = ClientState.NEW
        self.negotiated: Negotiated | None = None
        self.entered = 0  # nesting depth of `with client:` blocks; the outermost exit closes
        #: Each transport defers its stream of server messages until a listen needs it (#29.3).
        self.server_stream_on_demand = False
        self.res = self._new_resources()
        self._finalizer: weakref.finalize | None = None  # see finalizer_for: set by the client
        self._owner: weakref.ref[object] | None = None
        #: Engines whose end the hooks were told of while each was the published connection: once each.
        self._ended: weakref.WeakSet[Engine] = weakref.WeakSet()
        _ALL.add(self)

    # -- what is live --------------------------------------------------------------------

    @property
    def engine(self) -> Engine | None:
        return self.res.engine

    @property
    def dispatcher(self) -> Dispatcher | None:
        return self.res.dispatcher

    @property
    def subscriptions(self) -> SubscriptionRegistry:
        return self.res.subscriptions

    @property
    def hosted_tasks(self) -> HostedTasks:
        return self.res.hosted_tasks

    def live(self) -> Negotiated | None:
        """The negotiated session when the connection is up, else None (no waiting)."""
        negotiated, engine = self.negotiated, self.res.engine
        return negotiated if negotiated is not None and engine is not None and engine.alive else None

    # -- connecting ----------------------------------------------------------------------

    def connected(
        self, timeout: float | None = None, cancel: CancellationToken | None = None, method: str = "connect"
    ) -> Negotiated:
        """The live connection, connecting first if needed (waiting at most ``timeout``; None: as
        long as the connect takes, which the client's ``timeout`` and ``probe_timeout`` bound)."""
        negotiated = self.live()
        if negotiated is not None:
            return negotiated
        begun = self.begin(method)
        if not isinstance(begun, Attempt):
            return begun
        return self._wait(begun, timeout, cancel, method)

    def begin(self, method: str) -> Negotiated | Attempt:
        """Under the lock: the live connection, the connect in progress, or a new one started."""
        with self.lock:
            if self.state is ClientState.CLOSED:
                raise ClientStateError(f"{method}: the client is closed (connect() opens it afresh)", method=method)
            res = self.res
            engine = res.engine
            if self.negotiated is not None and engine is not None and engine.alive:
                return self.negotiated
            if res.attempt is not None:
                return res.attempt
            if engine is not None and self.factory is None:  # cannot restart: report how it ended
                raise engine.closed_error or ConnectionClosed("the connection is closed")
            attempt = Attempt(previous=engine, restarted=self.negotiated is not None)
            res.attempt, res.engine, res.open = attempt, None, True
            _OPEN.add(self)  # a connect in progress is also ended at interpreter exit
            if res.connecting.spawn(functools.partial(self._run, attempt), "connect") is None:
                res.attempt = None
                raise ClientStateError(f"{method}: the client is closed", method=method)
            return attempt

    def _wait(self, attempt: Attempt, timeout: Any, cancel: CancellationToken | None, method: str) -> Negotiated:
        waiter = attempt.join()
        remove: Callable[[], None] | None = None
        if cancel is not None:

            def on_cancel(reason: str | None) -> None:
                waiter.settle(error=Cancelled(f"{method} cancelled while connecting", reason=reason, method=method))

            remove = cancel.add_callback(on_cancel)
        try:
            if not waiter.wait(timeout):
                waiter.settle(error=RequestTimeout(
                    f"{method}: not connected within {timeout} s (the connect to {self.name} goes on "
                    "in the background; a later call waits for it)",
                    method=method,
                ))
        finally:
            if remove is not None:
                remove()
            attempt.leave(waiter)
        return waiter.result()  # type: ignore[no-any-return]

    def _run(self, attempt: Attempt) -> None:
        """The connect thread: probe / handshake, then publish the connection."""
        previous = attempt.previous
        if previous is not None:
            log.info("mcp_sync: the connection to %s ended; starting it again", self.name)
            previous.close("restarting")
        try:
            engine = self._start_engine(attempt)
            restart = functools.partial(self._start_engine, attempt) if self.factory else None
            engine, negotiated = self.lifecycle.connect(engine, timeout=self.timeout, restart=restart)
            engine.transport.configure(era=negotiated.era, protocol_version=negotiated.protocol_version)
            # J3: a modern server sends no requests and the client sends no responses
            engine.answers_server_requests = negotiated.era == "legacy"
            self.hooks.prepare(engine, negotiated, restarted=attempt.restarted)
        except BaseException as exc:
            for each in attempt.engines:
                each.close("connecting failed")
            with self.lock:
                if self.res.attempt is attempt:
                    self.res.attempt = None
                    if self.negotiated is None:  # never connected: leave nothing running
                        self.res.open = False
                        dispatcher, self.res.dispatcher = self.res.dispatcher, None
                        if dispatcher is not None:
                            dispatcher.stop()
            attempt.finish(error=attempt.aborted or exc)
            return
        with self.lock:
            published = self.res.attempt is attempt and attempt.aborted is None and self.state is not ClientState.CLOSED
            if published:
                self.res.attempt, self.res.engine = None, engine
                self.negotiated = negotiated
                self.state = ClientState.OPEN
                self.transport = engine.transport
                _OPEN.add(self)
        if not published:
            engine.close("the client was closed while connecting")
            attempt.finish(error=attempt.aborted or ClientStateError("connect: the client was closed"))
            return
        attempt.finish(negotiated)
        error = engine.closed_error
        if error is not None:  # it died at once: its on_closed may have run before it was published
            self._engine_ended(engine, error)
        elif attempt.restarted:
            self.hooks.reconnected(engine, negotiated)  # subscriptions (U7, T6), then on_reconnected

    def _start_engine(self, attempt: Attempt) -> Engine:
        """Make and start one transport and its engine for ``attempt`` (a restart makes another)."""
        with self.lock:
            if self.res.attempt is not attempt or attempt.aborted is not None:  # closed meanwhile
                raise attempt.aborted or ClientStateError("connect: the client was closed")
            transport, self._spare = self._spare or self.transport_factory(), None
            if self.res.dispatcher is None:
                self.res.dispatcher = Dispatcher(self.name)
            dispatcher = self.res.dispatcher
        if self.server_stream_on_demand:
            declared(transport).defer_server_stream()
        if transport.name != self.name:
            try:
                transport.name = self.name  # thread and logger names follow the client's name
            except AttributeError:
                pass
        hooks = self.hooks
        engine = Engine(
            transport,
            on_notification=hooks.dispatch_notification,
            on_server_request=hooks.answer_server_request,
            dispatcher=dispatcher,
            on_closed=None,
            on_session_renewed=None,
        )
        engine.before_notification = functools.partial(hooks.before_notification, engine)
        engine.on_closed = functools.partial(self._engine_ended, engine)
        engine.on_session_renewed = functools.partial(hooks.session_renewed, engine)
        engine.start()
        if not attempt.add_engine(engine):  # close() came first: stop what was just started
            engine.close("the client was closed while connecting")
            raise attempt.aborted or ClientStateError("connect: the client was closed")
        return engine

    def _engine_ended(self, engine: Engine, error: ConnectionClosed) -> None:
        """``engine``'s on_closed (dispatch thread), and the connect thread for an engine that ended
        around its publication: the hooks hear of the end of the published connection once.

        An engine can end before it is published (then its on_closed is no loss of the
        connection, and the connect thread reports it once published) or right after (then
        on_closed and the connect thread's check may both see it): the first to find it
        published tells the hooks, the other does nothing."""
        with self.lock:
            if engine in self._ended:
                return
            if self.res.engine is engine:
                self._ended.add(engine)
        self.hooks.connection_lost(engine, error)

    def reconnect(self, method: str = "reconnect") -> None:
        """Drop the live connection (its waiters fail with ConnectionClosed); the next use connects."""
        with self.lock:
            if self.state is ClientState.CLOSED:
                raise ClientStateError(f"{method}: the client is closed (connect() opens it afresh)")
            if not self.reopenable:
                raise ClientStateError(f"{method}: a client built on a transport object cannot make a new one")
            engine = self.res.engine
            dropped = engine is not None and self.res.attempt is None
            if dropped:
                self.res.engine = None
        if dropped and engine is not None:
            engine.closed(ConnectionClosed("the client is reconnecting"))  # waiters first, then the transport
            engine.close("the client is reconnecting")

    # -- lifetime --------------------------------------------------------------------------

    def reopen_if_closed(self) -> None:
        """connect() on a closed client: fresh parts, state NEW."""
        with self.lock:
            if self.state is not ClientState.CLOSED:
                return
            if not self.reopenable:
                raise ClientStateError("connect: the client is closed, and one built on a transport object "
                                       "cannot be opened again; build a new client")
            self.res.renew()
            self.state = ClientState.NEW
            self.negotiated = None

    def close(self) -> None:
        """Idempotent; any thread. Waiters are released first, then everything is stopped."""
        with self.lock:
            if self.state is ClientState.CLOSED and not self.res.open:
                return
            self.state = ClientState.CLOSED
            self.entered = 0
            _OPEN.discard(self)
            resources = self.res
        resources.shut_down("the client was closed")

    def finalizer_for(self, owner: object) -> weakref.finalize:
        """Close what is open when ``owner`` (the client) is collected unclosed."""
        finalizer = weakref.finalize(owner, collect, self.res)
        finalizer.atexit = False  # at exit, _close_open_connections closes what is still open, quietly
        self._finalizer = finalizer
        self._owner = weakref.ref(owner)
        return finalizer

    def _new_resources(self) -> Resources:
        ref = weakref.ref(self)

        def subscriptions() -> SubscriptionRegistry:
            connection = ref()
            if connection is None:  # pragma: no cover - only Connection methods (re)make resources
                raise ClientStateError("the client is gone")
            return connection._make_subscriptions(connection)

        label = f"mcp_sync.Client {self.name!r} ({self.target})"
        return Resources(subscriptions, lambda: HostedTasks("client"), label)

    def forget_after_fork(self) -> None:
        """In a forked child (at-fork hook, one thread): forget the parent's connection.

        Nothing of it is closed, signalled or flushed (the parent still uses its
        process, pipes, sockets and threads); the next use connects afresh."""
        self.lock = threading.RLock()
        self.hooks.after_fork()
        old = self.res
        _LEFT_TO_PARENT.append(old)
        old.subscriptions.forget_after_fork()
        owner = self._owner() if self._owner is not None else None
        if self._finalizer is not None:  # pragma: no branch - the client sets it in its __init__
            self._finalizer.detach()
        self.res = self._new_resources()
        if owner is not None:
            self.finalizer_for(owner)
        _OPEN.discard(self)
        self.negotiated = None
        self._spare = None
        if not self.reopenable:  # its one transport object is the parent's: it cannot go on here
            self.state = ClientState.CLOSED
            return
        try:
            self.transport = self._spare = self.transport_factory()
        except Exception:  # made again on first use
            log.debug("mcp_sync: making a transport after fork failed", exc_info=True)
        if self.state is ClientState.OPEN:
            self.state = ClientState.NEW
