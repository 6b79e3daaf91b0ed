"""Subscriptions: what ``Client.listen()`` returns, in both eras.

**Modern** (2026-07-28): one ``subscriptions/listen`` request per
:class:`Subscription`, sent on a ``mcp_sync-listen-<server>`` thread with no
timeout and its own :class:`~mcp_sync.CancellationToken`. ``listen()`` returns
once ``notifications/subscriptions/acknowledged`` arrives; notifications
whose ``_meta["io.modelcontextprotocol/subscriptionId"]`` is the request's id
are routed to it by the engine. Closing cancels the token: the engine
sends ``notifications/cancelled`` on stdio, or closes the response stream on
Streamable HTTP. The server ends it with a final result or a
``notifications/cancelled`` naming the listen.

**Legacy** (2025-11-25 and older): ``resources/subscribe`` for each URI
(reference-counted across subscriptions, so closing one never unsubscribes a
URI another still wants), then a ``ping`` confirms the session; the session's
own list_changed and resources/updated notifications are filtered by what
each subscription asked for.

**Reconnects**: when the connection is lost, the current iteration
ends; the subscription stays registered. When the client connects again (a
stdio server that died is started again at once for its subscriptions, when
``restart`` is on; else they end with a reason), every such subscription is
re-established by itself and delivers the synthetic event
``("mcp_sync/resubscribed", {"era", "subscriptionId", "notifications"})``
first, so the subscriber knows notifications may have been missed (re-list
now). Iterating the subscription again picks up from there. On modern HTTP, a
listen stream that breaks while the connection is up is re-sent at once (up to
3 times in a row, with a short backoff) without ending the iteration; the
resubscribed event marks the seam.

Threads: the acknowledgment and server cancellations are noticed on the
transport's reader thread (quick, no user code), so ``listen()`` works even
when called from a callback on the dispatch thread. Events are queued and the
per-subscription ``on_notification`` callback runs on the dispatch thread, so
it may call the client (also ``listen()`` or ``close()``).
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

from .._engine import SUBSCRIPTION_ID, Engine
from .._threads import Workers, join_quietly, spawn
from ..cancellation import CancellationToken
from ..exceptions import Cancelled, CapabilityError, ClientStateError, ConnectionClosed, MCPError, RequestTimeout
from ..transports.base import declared

if TYPE_CHECKING:
    from .connection import Connection
    from .lifecycle import Negotiated

log = logging.getLogger("mcp_sync")

#: The synthetic event delivered after a subscription was re-established.
RESUBSCRIBED = "mcp_sync/resubscribed"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
LISTEN = "subscriptions/listen"
#: list_changed notification -> (listen filter flag, capability name)
_LIST_CHANGED = {
    "notifications/tools/list_changed": ("toolsListChanged", "tools"),
    "notifications/prompts/list_changed": ("promptsListChanged", "prompts"),
    "notifications/resources/list_changed": ("resourcesListChanged", "resources"),
}
UPDATED = "notifications/resources/updated"
#: U8: request-scoped notifications never belong to a subscription.
_NEVER_DELIVERED = frozenset(
    {"notifications/message", "notifications/progress", ACKNOWLEDGED, "notifications/cancelled"}
)
_RELISTEN_BACKOFF = (0.1, 0.5, 1.0)  # seconds before each re-listen of a broken stream
_JOIN_TIMEOUT = 2.0
_CLOSING_GRACE = 1.0  # seconds a listen thread waits for a dying connection to be reported
_END = object()

EventCallback = Callable[[str, dict], None]


class _ServerEnded(MCPError):
    """Internal: the server cancelled a listen (U6); settles the pending listen request."""


def _capability(caps: dict[str, Any], name: str, flag: str) -> bool:
    value = caps.get(name)
    return isinstance(value, dict) and value.get(flag) is True


def _uri_matches(updated: Any, subscribed: Sequence[str]) -> bool:
    # U8: the updated URI "might be a sub-resource" of a subscribed one.
    return isinstance(updated, str) and any(updated == uri or updated.startswith(uri) for uri in subscribed)


class Subscription:
    """A live subscription to server notifications; made by :meth:`Client.listen`.

    Iterate it for ``(method, params)`` tuples; the iteration ends within a
    moment of :meth:`close`, of the server ending the subscription, or of the
    connection being lost (after a reconnect it is re-established and a new
    iteration yields ``("mcp_sync/resubscribed", {...})`` first). Thread-safe;
    meant for one consumer at a time. A context manager.

    Example::

        with client.listen(tools_list_changed=True) as sub:
            for method, params in sub:
                if method in ("notifications/tools/list_changed", "mcp_sync/resubscribed"):
                    tools = list(client.tools())

    Attributes: ``requested`` (the filter asked of the server, after dropping
    what its capabilities do not allow), ``acknowledged`` (the filter the
    server agreed to; legacy: same as requested), ``subscription_id`` (the
    listen request's id, modern), ``end_reason`` (why it ended, or None).
    """

    def __init__(self, registry: Subscriptions, requested: dict[str, Any], on_notification: EventCallback | None):
        self._registry = registry
        self.requested: dict[str, Any] = requested
        self.acknowledged: dict[str, Any] | None = None
        self.subscription_id: Any = None
        self.end_reason: str | None = None
        self._on_notification = on_notification
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._state = "new"  # new -> live <-> suspended -> ended | closed
        self._engine: Engine | None = None
        self._era: str | None = None
        self._token: CancellationToken | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()  # set by the acknowledgment, or by a failure before it
        self._error: MCPError | None = None
        self._resubscribing = False
        self._relistening = False  # the stream broke and is being listened again (#19.3)
        self._acks = 0  # acknowledgments seen, so a re-listen loop can tell progress from failure
        self._uris_held: tuple[str, ...] = ()

    # -- public -------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (or the client was closed)."""
        return self._closed.is_set()

    @property
    def state(self) -> str:
        """``"live"``, ``"suspended"`` (connection lost, waiting for a reconnect),
        ``"ended"`` (the server ended it) or ``"closed"``; ``"new"`` while starting."""
        return self._state

    def close(self) -> None:
        """End the subscription; idempotent, callable from any thread, callbacks included.

        Example: ``sub = client.listen(tools_list_changed=True); ...; sub.close()``
        """
        self._close(unsubscribe=True)

    def get(self, timeout: float | None = None) -> tuple[str, dict] | None:
        """The next ``(method, params)``, or None once the stream ended or was closed.

        Raises :class:`TimeoutError` when nothing arrives within ``timeout`` seconds.
        Example: ``method, params = sub.get(timeout=5)``
        """
        try:
            item = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no subscription event within {timeout} s") from None
        if item is _END or self.closed:
            return None
        return item  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        while True:
            item = self._queue.get()
            if item is _END or self.closed:
                return
            yield item

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<mcp_sync.Subscription {self._state} id={self.subscription_id!r} {self.requested}>"

    # -- delivery (dispatch thread) ---------------------------------------------------------

    def wants(self, method: str, params: dict[str, Any]) -> bool:
        """Whether ``method`` is one of the notification types this subscription asked for.

        Example: ``sub.wants("notifications/resources/updated", {"uri": "file:///notes.txt"})``
        """
        if method in _NEVER_DELIVERED:
            return False
        if method in _LIST_CHANGED:
            return bool(self.requested.get(_LIST_CHANGED[method][0]))
        if method == UPDATED:
            return _uri_matches(params.get("uri"), self.requested.get("resourceSubscriptions", ()))
        return self._era == "modern"  # an extension's type on our own stream (e.g. tasks)

    def _deliver(self, method: str, params: dict[str, Any]) -> None:
        if self.closed:
            return
        self._queue.put((method, params))  # queue first: a raising callback loses nothing
        if self._on_notification is not None:
            self._on_notification(method, params)

    def _on_stream(self, method: str, params: dict[str, Any]) -> None:
        """The engine's ``on_stream`` for this listen (U3): dispatch thread."""
        if method != ACKNOWLEDGED and self.wants(method, params):
            self._deliver(method, params)

    def _end_iteration(self) -> None:
        self._queue.put(_END)

    def _post(self, callback: Callable[..., None], *args: Any) -> None:
        """Run ``callback`` on the dispatch thread after what is already queued there."""
        self._registry.post(callback, *args)

    # -- establishing -------------------------------------------------------------------------

    def _establish(self, engine: Engine, negotiated: Negotiated, *, resubscribe: bool) -> None:
        self._engine, self._era = engine, negotiated.era
        if negotiated.era == "modern":
            self._start_listen(engine, negotiated, resubscribe=resubscribe)
        else:
            self._legacy_subscribe(engine, negotiated, resubscribe=resubscribe)

    def _wait_ready(self, timeout: float | None) -> None:
        """listen(): block until acknowledged (U2); RequestTimeout (and a cancel) past ``timeout``."""
        if not self._ready.wait(timeout):
            self._close(unsubscribe=False, reason="timeout")  # cancels the listen on the wire (K1)
            raise RequestTimeout(f"{LISTEN}: not acknowledged within {timeout} s", method=LISTEN)
        if self._error is not None:
            raise self._error

    def _start_listen(self, engine: Engine, negotiated: Negotiated, *, resubscribe: bool) -> None:
        self._ready.clear()
        self._error = None
        self._resubscribing = resubscribe
        token = CancellationToken()
        with self._lock:
            if self.closed:
                return
            self._token = token
        self._thread = spawn(lambda: self._run_listen(engine, negotiated, token), "listen", engine.name)

    def _run_listen(self, engine: Engine, negotiated: Negotiated, token: CancellationToken) -> None:
        """The listen thread: one open ``subscriptions/listen`` until it ends."""
        retries = 0
        while True:
            acks_before = self._acks
            params = self._registry.connection.lifecycle.params(negotiated, {"notifications": self.requested}, None)
            try:
                engine.request(LISTEN, params, timeout=None, cancel=token, on_stream=self._on_stream)
            except Cancelled:
                self._fail_before_ack(Cancelled(f"{LISTEN} was cancelled", method=LISTEN))
                return  # close() or the acknowledgment timeout: nothing more to do
            except _ServerEnded:
                self._ended("the server cancelled the subscription")
                return
            except MCPError as exc:
                if not self._ready.is_set():
                    resubscribing = self._resubscribing
                    self._fail_before_ack(exc)
                    if resubscribing and not self._connection_ending(engine, exc):
                        self._ended(f"re-establishing failed: {exc}")  # nobody waits on a re-listen: say why
                    return  # (a lost connection suspends it instead, and a reconnect resumes it)
                if not engine.alive:
                    return  # connection lost: on_closed suspends us, a reconnect resumes (U7)
                if self._acks > acks_before:
                    retries = 0  # that attempt went live: start counting afresh
                if self.closed or retries >= len(_RELISTEN_BACKOFF):
                    self._ended(f"the subscription stream failed: {exc}")
                    return
                # U6: a bare close of the stream alone (HTTP) is a trigger to listen again.
                log.info("mcp_sync: %s; listening again", exc)
                if not self._relistening:
                    self._relistening = True
                    self._registry.connection.hooks.lost(exc)  # #19.3; on_reconnected once it is back
                if self._closed.wait(_RELISTEN_BACKOFF[retries]):
                    return
                retries += 1
                self._resubscribing = True
                continue
            self._ended("the server ended the subscription")  # U6: graceful final result
            return

    def _connection_ending(self, engine: Engine, error: MCPError) -> bool:
        """True when ``engine``'s connection is gone or going (a failed write to a server that
        exited comes a moment before the engine hears of the exit: wait that moment)."""
        if isinstance(error, ConnectionClosed):
            deadline = time.monotonic() + _CLOSING_GRACE
            while engine.alive and time.monotonic() < deadline and not self._closed.wait(0.05):
                pass
        return not engine.alive

    def _fail_before_ack(self, error: MCPError) -> None:
        if not self._ready.is_set():
            self._error = error
            self._ready.set()

    def _acknowledged(self, subscription_id: Any, params: dict[str, Any]) -> None:
        """Reader thread: the server acknowledged our listen (U2)."""
        honored = params.get("notifications")
        honored = honored if isinstance(honored, dict) else {}
        with self._lock:
            if self.closed:
                self._ready.set()
                return
            self.subscription_id, self.acknowledged = subscription_id, honored
            self._acks += 1
        missing = [key for key, value in self.requested.items() if honored.get(key) != value]
        if missing:  # U2: handled gracefully: nothing of those types will arrive
            log.info("mcp_sync: the server did not acknowledge %s for subscription %r", missing, subscription_id)
        self._state = "live"
        if self._resubscribing:
            self._resubscribing = False
            self._post(self._deliver, RESUBSCRIBED, self._resubscribed_params())
        if self._relistening:  # #19.3: a listen stream that broke came back
            self._relistening = False
            self._registry.connection.hooks.came_back()
        self._ready.set()

    def _legacy_subscribe(self, engine: Engine, negotiated: Negotiated, *, resubscribe: bool) -> None:
        """LG9: subscribe each URI, then a ping confirms the session is there.

        A URI counts as held once the server took it (or another subscription holds it), one
        at a time, so a refusal or a close() from another thread releases exactly what is held.
        """
        registry = self._registry
        with self._lock:
            self._uris_held = ()  # what an earlier session held is not held on this one
        # Updates and list changes come on the session's stream of server messages, which a
        # session that only made requests has not opened (#29.3): open it before subscribing.
        declared(engine.transport).open_server_stream()
        try:
            for uri in self.requested.get("resourceSubscriptions", ()):
                registry.hold(engine, negotiated, uri)
                with self._lock:
                    closing = self.closed  # close() released what was held before this one
                    if not closing:
                        self._uris_held += (uri,)
                if closing:
                    registry.unhold(engine, uri, unsubscribe=engine.alive)
                    return
            registry.request(engine, negotiated, "ping", None)
        except BaseException:
            self._release_uris(engine, unsubscribe=engine.alive)
            raise
        self.acknowledged = dict(self.requested)
        if self.closed:
            return
        self._state = "live"
        if resubscribe:
            self._post(self._deliver, RESUBSCRIBED, self._resubscribed_params())
        self._ready.set()

    def _release_uris(self, engine: Engine | None, *, unsubscribe: bool) -> None:
        with self._lock:
            uris, self._uris_held = self._uris_held, ()
        if engine is not None:
            for uri in uris:
                self._registry.unhold(engine, uri, unsubscribe=unsubscribe and engine.alive)

    def _resubscribed_params(self) -> dict[str, Any]:
        return {"era": self._era, "subscriptionId": self.subscription_id, "notifications": self.acknowledged}

    # -- ending -----------------------------------------------------------------------------------

    def _ended(self, reason: str) -> None:
        """The server ended it (U6): end the iteration after what is already queued."""
        with self._lock:
            if self.closed or self._state == "ended":
                return
            self._state, self.end_reason = "ended", reason
        log.debug("mcp_sync: subscription %r ended: %s", self.subscription_id, reason)
        self._registry.remove(self)
        self._post(self._end_iteration)

    def _suspend(self) -> None:
        """Dispatch thread: the connection was lost; wait for a reconnect (U7)."""
        with self._lock:
            if self._state != "live":
                return
            self._state = "suspended"
        self._end_iteration()

    def _close(self, *, unsubscribe: bool, reason: str = "closed by the client") -> None:
        with self._lock:
            if self.closed:
                return
            self._closed.set()
            if self._state != "ended":
                self.end_reason = reason
            self._state = "closed"
            token = self._token
        self._fail_before_ack(Cancelled(f"{LISTEN} was closed before it was acknowledged", method=LISTEN))
        self._queue.put(_END)
        self._registry.remove(self)
        if token is not None:
            token.cancel(reason)  # U5: notifications/cancelled on stdio, stream close on HTTP
        if self._era == "legacy":
            self._release_uris(self._engine, unsubscribe=unsubscribe)
        join_quietly(self._thread, _JOIN_TIMEOUT)


class Subscriptions:
    """The client's registry of subscriptions: routing, reconnects, legacy URI counts."""

    def __init__(self, connection: Connection) -> None:
        self._connection = weakref.ref(connection)  # weak: listen threads must not keep the connection alive
        self._lock = threading.Lock()
        self._subs: list[Subscription] = []
        self._uri_refs: dict[str, int] = {}
        self._uri_locks: dict[str, threading.Lock] = {}
        self._uri_engine: Engine | None = None
        self._workers = Workers("client")  # re-establishing in the background

    @property
    def connection(self) -> Connection:
        connection = self._connection()
        if connection is None:
            raise ClientStateError("the client is gone")
        return connection

    def listen(
        self,
        *,
        tools_list_changed: bool,
        prompts_list_changed: bool,
        resources_list_changed: bool,
        resource_uris: Sequence[str],
        on_notification: EventCallback | None,
        timeout: float | None,
    ) -> Subscription:
        """Open a subscription and wait until it is live; see ``Client.listen`` (which checks the arguments)."""
        if not (tools_list_changed or prompts_list_changed or resources_list_changed or resource_uris):
            raise ValueError("listen() needs at least one notification type or resource URI")
        negotiated = self.connection.connected(timeout, None, LISTEN)
        engine = self.connection.engine
        if engine is None:
            raise ClientStateError("the client is closed")
        requested = self._filter(
            negotiated, tools_list_changed, prompts_list_changed, resources_list_changed, list(resource_uris)
        )
        sub = Subscription(self, requested, on_notification)
        with self._lock:
            self._subs.append(sub)
        try:
            sub._establish(engine, negotiated, resubscribe=False)
            sub._wait_ready(timeout)
        except BaseException:
            sub._close(unsubscribe=True, reason="listen failed")
            raise
        return sub

    @staticmethod
    def _filter(negotiated: Negotiated, tools: bool, prompts: bool, resources: bool, uris: list[str]) -> dict:
        """The listen filter the server's capabilities allow (U1, LG9); raises if none is left."""
        caps = negotiated.server_capabilities
        legacy = negotiated.era == "legacy"
        wanted = {"toolsListChanged": tools, "promptsListChanged": prompts, "resourcesListChanged": resources}
        requested: dict[str, Any] = {}
        dropped: list[str] = []
        for flag, asked in wanted.items():
            if not asked:
                continue
            capability = {"toolsListChanged": "tools", "promptsListChanged": "prompts"}.get(flag, "resources")
            # Legacy sessions get list_changed unsolicited (some servers send it undeclared),
            # so there the flag only filters; modern servers are asked only for what they declare.
            if legacy or _capability(caps, capability, "listChanged"):
                requested[flag] = True
            else:
                dropped.append(flag)
        if uris:
            if _capability(caps, "resources", "subscribe"):
                requested["resourceSubscriptions"] = uris
            else:
                dropped.append("resourceSubscriptions")
        if dropped:
            log.info("mcp_sync: the server's capabilities do not allow %s; not subscribed", dropped)  # U1
        if not requested:
            raise CapabilityError(f"{LISTEN}: the server supports none of the requested notifications {dropped}")
        return requested

    # -- plumbing used by Subscription -----------------------------------------------------------

    def request(self, engine: Engine, negotiated: Negotiated | None, method: str, params: dict | None) -> dict:
        connection = self.connection
        negotiated = negotiated or connection.negotiated
        wire = connection.lifecycle.params(negotiated, params, None) if negotiated else (params or {})
        return engine.request(method, wire, timeout=connection.timeout)

    def post(self, callback: Callable[..., None], *args: Any) -> None:
        connection = self._connection()
        dispatcher = connection.dispatcher if connection is not None else None
        if connection is None or dispatcher is None or connection.state.value == "closed":
            callback(*args)
        else:
            dispatcher.submit(callback, *args)

    # Legacy resource subscriptions are session-wide, so the subscriptions that want one URI
    # share it: counted per URI, subscribed by the first holder, unsubscribed by the last. The
    # wire requests for one URI go one at a time (its own lock, held across the request), so a
    # second holder waits for the first one's answer instead of counting on a subscription the
    # server may refuse, and an unsubscribe is answered before the URI is subscribed again.

    def _uri_lock(self, engine: Engine, uri: str) -> threading.Lock:
        """``uri``'s lock on ``engine``'s session (a new session starts with nothing held)."""
        with self._lock:
            if self._uri_engine is not engine:  # a new session holds no subscriptions yet
                self._uri_engine, self._uri_refs, self._uri_locks = engine, {}, {}
            return self._uri_locks.setdefault(uri, threading.Lock())

    def _wait_for(self, lock: threading.Lock, method: str, uri: str) -> None:
        timeout = self.connection.timeout
        if not lock.acquire(timeout=-1 if timeout is None else timeout):
            raise RequestTimeout(
                f"{method} {uri}: another subscription's request for it did not end within {timeout} s", method=method
            )

    def hold(self, engine: Engine, negotiated: Negotiated, uri: str) -> None:
        """Count one more holder of ``uri``, subscribing it on the wire when it is the first.
        Raises what the subscribe raised (nothing is counted then)."""
        lock = self._uri_lock(engine, uri)
        self._wait_for(lock, "resources/subscribe", uri)
        try:
            with self._lock:
                first = self._uri_engine is not engine or uri not in self._uri_refs
            if first:
                self.request(engine, negotiated, "resources/subscribe", {"uri": uri})
            with self._lock:
                if self._uri_engine is engine:  # else the legacy session was renewed meanwhile: nothing counts
                    self._uri_refs[uri] = self._uri_refs.get(uri, 0) + 1
        finally:
            lock.release()

    def unhold(self, engine: Engine, uri: str, *, unsubscribe: bool) -> None:
        """Count one holder of ``uri`` less; the last one unsubscribes it (when ``unsubscribe``,
        best effort: the session may be going away). A URI of an earlier session counts nothing."""
        with self._lock:
            if self._uri_engine is not engine or uri not in self._uri_refs:
                return
            lock = self._uri_locks.setdefault(uri, threading.Lock())
        locked = True
        try:
            self._wait_for(lock, "resources/unsubscribe", uri)
        except RequestTimeout as exc:  # still count it down; the notice then goes out unordered
            log.debug("mcp_sync: %s", exc)
            locked = False
        try:
            with self._lock:
                if self._uri_engine is not engine or uri not in self._uri_refs:
                    return
                self._uri_refs[uri] -= 1
                if self._uri_refs[uri] > 0:
                    return
                del self._uri_refs[uri]
            if unsubscribe:
                try:
                    self.request(engine, None, "resources/unsubscribe", {"uri": uri})
                except MCPError as exc:
                    log.debug("mcp_sync: resources/unsubscribe %s failed: %s", uri, exc)
        finally:
            if locked:
                lock.release()

    def remove(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subs:
                self._subs.remove(sub)

    def _live(self) -> list[Subscription]:
        with self._lock:
            return list(self._subs)

    # -- hooks called by the client -----------------------------------------------------------------

    def before_notification(self, engine: Engine, method: str, params: dict[str, Any]) -> None:
        """Reader thread: notice acknowledgments (U2) and server cancellations (U6) at once."""
        if method == ACKNOWLEDGED:
            meta = params.get("_meta")
            subscription_id = meta.get(SUBSCRIPTION_ID) if isinstance(meta, dict) else None
            owner = getattr(engine.stream_for(subscription_id), "__self__", None)
            if isinstance(owner, Subscription):
                owner._acknowledged(subscription_id, params)
        elif method == "notifications/cancelled":
            request_id = params.get("requestId")
            owner = getattr(engine.stream_for(request_id), "__self__", None)
            if isinstance(owner, Subscription):
                reason = params.get("reason")
                engine.fail(request_id, _ServerEnded(f"{LISTEN} cancelled by the server: {reason}", method=LISTEN))

    def dispatch(self, method: str, params: dict[str, Any]) -> None:
        """Dispatch thread: hand a session notification to the legacy subscriptions that want it."""
        for sub in self._live():
            if sub._era == "legacy" and sub.state == "live" and sub.wants(method, params):
                sub._deliver(method, params)

    def connection_lost(self, engine: Engine) -> None:
        """Dispatch thread (engine on_closed): suspend what ran on ``engine``."""
        for sub in self._live():
            if sub._engine is engine:
                sub._suspend()

    def change_feed(self, engine: Engine, flag: str) -> Any:
        """#19.2: while a live modern listen on ``engine`` that the server acknowledged for
        ``flag`` (e.g. ``"toolsListChanged"``) is open, a token naming it and its latest
        acknowledgment (a listen that broke and came back is a new token); else None."""
        for sub in self._live():
            acknowledged = sub.acknowledged or {}
            live = sub._era == "modern" and sub._engine is engine and sub.state == "live"
            if live and acknowledged.get(flag) is True:
                return (id(sub), sub._acks)
        return None

    def suspended(self) -> bool:
        """True when some subscription waits for the connection to come back."""
        return any(sub.state == "suspended" for sub in self._live())

    def end_suspended(self, reason: str) -> None:
        """The connection will not come back by itself: end every waiting subscription with ``reason``."""
        for sub in self._live():
            if sub.state == "suspended":
                sub._ended(reason)

    def reconnected(self, engine: Engine, negotiated: Negotiated) -> None:
        """The client connected again (U7, T6): re-establish everything, in the background."""
        subs = [sub for sub in self._live() if sub._engine is not engine and sub.state in ("live", "suspended")]

        def work() -> None:
            for sub in subs:
                if sub.state == "live":  # on_closed has not run yet: end that iteration first
                    sub._suspend()
                self._reestablish(sub, functools.partial(sub._establish, engine, negotiated, resubscribe=True))

        if subs:
            self._in_background(engine, work)

    def session_renewed(self, engine: Engine, negotiated: Negotiated) -> None:
        """A legacy HTTP session was replaced on the same connection (LG3): the new one holds
        no resource subscriptions, so subscribe again in the background and tell each
        subscriber with the resubscribed event."""
        subs = [sub for sub in self._live() if sub._engine is engine and sub._era == "legacy" and sub.state == "live"]
        if not subs:
            return
        with self._lock:
            self._uri_engine, self._uri_refs, self._uri_locks = None, {}, {}  # nothing is subscribed on the new session

        def work() -> None:
            for sub in subs:
                with sub._lock:
                    sub._uris_held = ()
                self._reestablish(sub, functools.partial(sub._legacy_subscribe, engine, negotiated, resubscribe=True))

        self._in_background(engine, work)

    @staticmethod
    def _reestablish(sub: Subscription, establish: Callable[[], None]) -> None:
        if sub.closed:
            return
        try:
            establish()
        except MCPError as exc:
            log.warning("mcp_sync: could not re-establish subscription %r: %s", sub.requested, exc)
            sub._ended(f"re-establishing failed: {exc}")

    def _in_background(self, engine: Engine, work: Callable[[], None]) -> None:
        """Run ``work`` on a thread that close_all() joins."""
        self._workers.spawn(work, "resubscribe")

    def forget_after_fork(self) -> None:
        """In a forked child: these subscriptions live on the parent's connection. End them here
        without a word on the wire and without the parent's locks or threads (the parent's go on)."""
        for sub in list(self._subs):
            sub._lock = threading.Lock()
            sub._state, sub.end_reason = "closed", "the process forked; the subscription stays with the parent"
            sub._closed = threading.Event()
            sub._closed.set()
            sub._token, sub._thread = None, None
            sub._queue.put(_END)
        self._subs = []

    def close_all(self) -> None:
        """The client is closing: close every subscription (no unsubscribe round trips)."""
        for sub in self._live():
            sub._close(unsubscribe=False, reason="the client was closed")
        self._workers.close(_JOIN_TIMEOUT)
