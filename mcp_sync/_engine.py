"""The JSON-RPC engine: ids, pending requests, timeouts, cancellation, routing.

The engine is the only code that allocates request ids and matches answers to
the application threads waiting for them. It is the transport's
:class:`~mcp_sync.transports.base.MessageSink`: the transport's reader thread
calls :meth:`Engine.message`, which does no user work: it settles futures,
answers ``ping`` and queues everything else (notifications, progress, server
requests) for the dispatch thread or a handler thread.

Routing is total: whatever JSON value (or any other object) a transport hands
to :meth:`Engine.message`, :meth:`Engine.fail` or :meth:`Engine.closed`, no
exception comes out. A malformed message is logged and skipped; one that names
a waiting request (by its id) fails that request with ProtocolError, and no other.

Closing (:meth:`Engine.close`) releases every waiting request with
ConnectionClosed at once, before the transport is shut down. A server-request
handler still running in user code cannot be stopped: close waits a second for
the handlers, then returns; such a handler runs to its end on its own daemon
thread and its answer is dropped.
"""

from __future__ import annotations

import collections
import itertools
import logging
import math
import reprlib
import threading
import time
from typing import Any, Callable, Mapping

from ._ids import normalize_id
from ._options import ProgressCallback
from ._threads import Dispatcher, Outcome, Workers
from ._values import clean_json, walk_json
from .cancellation import CancellationToken
from .exceptions import (
    INTERNAL_ERROR,
    METHOD_NOT_FOUND,
    Cancelled,
    ClientStateError,
    ConnectionClosed,
    MCPError,
    ProtocolError,
    RequestTimeout,
    ServerRequestError,
    server_error_from,
)
from .transports.base import Transport, declared

log = logging.getLogger("mcp_sync")
_CANCEL_WRITE_TIMEOUT = 1.0  # seconds a background notifications/cancelled write may block
_PROGRESS_WRITE_TIMEOUT = 5.0  # seconds a handler's notifications/progress write may block (stdio)
#: Cancellation notices waiting for the background writer; past this (a server that stopped
#: reading while calls keep timing out) new ones are dropped: they are best effort.
MAX_QUEUED_CANCELS = 64

NotificationCallback = Callable[[str, dict], None]
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: Answers one server-to-client request: ``(method, params, request) -> result``, ``request``
#: its :class:`ServerRequest` (id, cancel token, progress); raise ServerRequestError to answer
#: with an error. Runs on a handler thread.
ServerRequestHandler = Callable[[str, dict, "ServerRequest"], dict]
#: ``(method, request_id, progress_token, progress, total, message)``: a request's progress, for
#: whoever watches every request (the client-wide ``on_progress``). Runs on the dispatch thread.
ProgressEventCallback = Callable[[str, Any, Any, float, "float | None", "str | None"], None]

_INVALID_REQUEST = -32600  # JSON-RPC: the request object is not valid (here: its id)

#: Server-to-client requests answered at once, each on its own thread; more are refused with an error.
MAX_CONCURRENT_HANDLERS = 64

#: Timeouts above this many seconds (and ``inf``) mean "wait for ever": the OS
#: wait primitives overflow on huge values.
_FOREVER_S = 1e6
#: Waits are cut into slices this long so an interrupt (Ctrl-C) is seen promptly everywhere.
_WAIT_SLICE_S = 0.5

_preview = reprlib.Repr()
_preview.maxstring = _preview.maxother = 200
_preview.maxlevel = 4


def preview(value: Any) -> str:
    """A short repr for logs and messages; safe on values nested arbitrarily deep."""
    try:
        return _preview.repr(value)
    except Exception:  # a hostile __repr__ (not JSON-born) must not break routing
        return f"<{type(value).__name__}>"


def non_finite_path(value: Any, root: str = "params") -> str | None:
    """Where ``value`` holds NaN or an infinity, as ``"params.arguments.x (NaN)"``; None if nowhere.

    JSON has no such numbers; the engine refuses to send them rather than write
    invalid JSON. One pass of the C encoder in the common case; iterative and
    cycle-safe otherwise (a value that contains itself ends, and the encoder then refuses it).

    Example: ``non_finite_path({"x": [1.0, float("inf")]}) == "params.x[1] (inf)"``
    """
    if clean_json(value):  # the common case, kept cheap: no paths built
        return None
    for path, item in walk_json(value, root):
        if isinstance(item, float) and not math.isfinite(item):
            return f"{path} ({'NaN' if math.isnan(item) else item})"
    return None


def _text_of(error: Any) -> str:
    """An exception's text for a message, whatever the object (its ``str()`` may raise)."""
    try:
        return str(error)
    except Exception:
        return type(error).__name__


def _seconds(value: Any, name: str) -> float | None:
    """``value`` as a wait in seconds: None (or huge, or inf) means for ever."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, not {type(value).__name__}")
    if math.isnan(value):
        raise ValueError(f"{name} must be a number of seconds or None, not NaN")
    return None if value > _FOREVER_S else float(value)


#: Progress deliveries one request may have waiting on the dispatch thread. Up to this many,
#: every notification reaches the callback, in order; past it (the callback is that far
#: behind) the newest value replaces the last waiting one, so a flood cannot grow the queue.
MAX_QUEUED_PROGRESS = 1000


class ServerRequest:
    """A server-to-client request being answered: its id, a cancel token the server's
    ``notifications/cancelled`` for it sets, and its ``progressToken`` (None: it wants none)."""

    __slots__ = ("_engine", "_last", "cancel", "given_up", "id", "progress_token")

    def __init__(self, engine: Engine, request_id: Any, progress_token: Any) -> None:
        self._engine = engine
        self.id = request_id
        self.cancel = CancellationToken()
        #: set on the reader thread as the server's notifications/cancelled is read (the token
        #: itself is cancelled on the dispatch thread: its callbacks are user code)
        self.given_up = False
        self.progress_token = progress_token
        self._last: float | None = None

    def progress(self, progress: float, total: float | None = None, message: str | None = None) -> bool:
        """Send ``notifications/progress`` for this request; False (nothing sent) when it carried no
        progressToken, was cancelled or the connection is gone. ValueError when ``progress`` does
        not increase or is not a finite number."""
        if not _is_number(progress) or (total is not None and not _is_number(total)):
            raise ValueError(f"progress and total must be finite numbers, not {progress!r:.40} and {total!r:.40}")
        if message is not None and not isinstance(message, str):
            raise TypeError(f"message must be a str, not {type(message).__name__}")
        if self.progress_token is None or self.given_up or self.cancel.cancelled or not self._engine.alive:
            return False
        if self._last is not None and progress <= self._last:
            raise ValueError(f"progress must increase with each notification: {progress} after {self._last}")
        self._last = progress
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        try:
            self._engine.notify("notifications/progress", params, timeout=_PROGRESS_WRITE_TIMEOUT)
        except MCPError as exc:
            log.debug("mcp_sync: progress for server request %r not sent: %s", self.id, exc)
            return False
        return True


class _Pending(Outcome):
    """One request in flight: its outcome (the answer, or why there is none) and its progress."""

    __slots__ = ("coalesced", "event", "last_progress", "method", "ordered", "progress", "progress_queued",
                 "request_id", "tail", "token")

    def __init__(self, method: str, progress: ProgressCallback | None, ordered: bool) -> None:
        Outcome.__init__(self)
        self.method, self.progress, self.ordered = method, progress, ordered
        #: ``last_progress``: the monotonic time of the last progress notification. ``tail``: the
        #: delivery queued last, while it has not run: past the bound a newer value replaces its
        #: arguments (it is the last one queued, so the order is kept).
        self.last_progress: float | None = None
        self.tail: list[Any] | None = None
        #: progress deliveries queued on the dispatcher and not yet run; notifications replaced
        #: past the bound (logged once the call ends)
        self.progress_queued = self.coalesced = 0
        #: the client-wide watcher (``progress_event``), this request's id and progress token
        self.event: ProgressEventCallback | None = None
        self.request_id: Any = None
        self.token: Any = None


class Engine:
    """Matches requests to answers over one transport.

    Thread-safe: any number of threads may call :meth:`request` and
    :meth:`notify` at once. ``on_notification(method, params)`` and progress
    callbacks run on the dispatch thread, in arrival order.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        on_notification: NotificationCallback | None = None,
        on_server_request: ServerRequestHandler | None = None,
        before_notification: NotificationCallback | None = None,
        dispatcher: Dispatcher | None = None,
        on_closed: Callable[[ConnectionClosed], None] | None = None,
        on_session_renewed: Callable[[], None] | None = None,
    ) -> None:
        self.transport = transport
        self.name = transport.name
        features = declared(transport)
        self.on_notification = on_notification
        self.on_server_request = on_server_request
        #: Runs on the reader thread before a notification is queued: must be quick
        #: and run no user code (the client invalidates its cache here). (C6)
        self.before_notification = before_notification
        #: Runs on the dispatch thread once the connection has ended, after every
        #: notification queued before the end (subscriptions end their iteration here).
        self.on_closed = on_closed
        #: Runs on the dispatch thread when the transport replaced an expired legacy
        #: HTTP session by itself: session state (subscriptions, log level) is gone. (LG3)
        self.on_session_renewed = on_session_renewed
        #: Whether requests from the server are answered. The session turns it off where the
        #: protocol has no server-to-client requests (a modern connection: they are dropped,
        #: and logged, never answered). (J3)
        self.answers_server_requests = True
        self.dispatcher = dispatcher or Dispatcher(self.name)
        self._owns_dispatcher = dispatcher is None  # a shared one is stopped by its owner (the client)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[Any, _Pending] = {}
        self._progress: dict[Any, _Pending] = {}
        self._streams: dict[Any, NotificationCallback] = {}
        self._handlers = Workers(self.name)  # server requests answered by user handlers
        #: the server's requests being answered, by id: a notifications/cancelled sets their token
        self._serving: dict[Any, ServerRequest] = {}
        # notifications/cancelled that could not be written at once go out on one background
        # thread, so that a timed-out call returns at its deadline (#17.9)
        self._cancels: collections.deque[dict[str, Any]] = collections.deque()
        self._cancel_writer: Workers = Workers(self.name)
        self._cancel_writing = False
        self._closed_error: ConnectionClosed | None = None
        self._closed_by_client = False  # close() was called: no server diagnostics in the errors
        self._started = False
        #: ``send_inline(message, headers=..., deadline=...)``: a transport that can read a
        #: request's answer on the requesting thread (see HttpTransport.send_inline).
        self._send_inline: Callable[..., None] | None = features.send_inline if features.inline_sends else None
        # A transport whose send can block (stdio: a server that stops reading its stdin) takes
        # the request's deadline for the write; one that declares no bound is called without. (8.1)
        self._send_takes_timeout = features.bounded_writes

    # -- lifecycle -----------------------------------------------------------------

    @property
    def alive(self) -> bool:
        """True while the transport is up."""
        return self._started and self._closed_error is None

    @property
    def closed_error(self) -> ConnectionClosed | None:
        """How the connection ended, or None while it is up."""
        return self._closed_error

    def start(self) -> None:
        self.transport.start(self)
        self._started = True

    def close(self, reason: str = "the client was closed") -> None:
        """Fail every waiting request with ConnectionClosed at once, then shut the transport down.

        Idempotent. Returns within the transport's shutdown bound plus one second
        for server-request handlers; a handler still running in user code after
        that runs to its end on its daemon thread, and its answer is dropped.
        """
        self._closed_by_client = True
        self.closed(ConnectionClosed(reason))  # (9.7) waiters first: they must not wait on the shutdown
        try:
            self.transport.close()
        except Exception:
            log.exception("mcp_sync: closing the %s transport failed", self.name)
        finally:
            self._handlers.close(1.0)
            self._cancel_writer.close(0.5)  # the transport is closed: a pending write ends at once
            if self._owns_dispatcher:
                self.dispatcher.stop()

    # -- outgoing --------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = 60.0,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        headers: Mapping[str, str | None] | None = None,
        cancel_on_timeout: bool = True,
        on_stream: NotificationCallback | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        on_request_id: Callable[[Any], None] | None = None,
        checked: bool = False,
        progress_token: str | int | None = None,
        progress_event: ProgressEventCallback | None = None,
    ) -> dict[str, Any]:
        """Send a request and block for its result (a dict).

        Raises ServerError for a JSON-RPC error answer, RequestTimeout,
        Cancelled, ConnectionClosed or ProtocolError; ValueError before anything
        is sent when ``params`` hold NaN or an infinity (JSON has neither). A
        request that timed out or was cancelled after it was written is
        cancelled on the wire, once; a late answer to it is ignored. So is a
        request whose waiting thread is interrupted (``KeyboardInterrupt`` or any
        other exception raised in it while it waits): the interrupt then propagates.

        ``timeout`` is in seconds; None, ``inf`` or anything above a million
        seconds waits for ever. With ``reset_timeout_on_progress`` each progress
        notification for this request restarts the timeout; ``max_total_timeout``
        bounds the whole wait whatever arrives. ``on_stream(method, params)``
        receives, on the dispatch thread, the notifications whose
        ``_meta["io.modelcontextprotocol/subscriptionId"]`` is this request's id
        while it is open (``subscriptions/listen``). ``checked=True`` says the params were
        already checked for values JSON cannot carry and the timeouts resolved (the facade
        checks what callers pass, once per call: CallOptions, check_json), so neither is
        checked again here. ``progress_token`` is the caller's own token (kept on the wire;
        ValueError when a request in flight uses it); ``progress_event`` is told of every
        progress notification with the request's method, id and token.
        """
        # (K1, K3, T3, U3, 9.1, 9.19, 8.7)
        if checked:  # resolved and checked once, at the top (CallOptions); params are the caller's own copy
            limit, total_limit = timeout, max_total_timeout
            params = {} if params is None else params  # the session's own fresh dict: no copy
        else:
            limit = _seconds(timeout, "timeout")
            total_limit = _seconds(max_total_timeout, "max_total_timeout")
        if cancel is not None and cancel.cancelled:
            raise Cancelled(
                _cancelled_text(f"{method} cancelled before it was sent", cancel.reason),
                reason=cancel.reason,
                method=method,
            )
        if self._closed_error is not None or not self._started:
            self._check_open(method)
        if not checked:
            params = dict(params) if params else {}
            bad = non_finite_path(params)
            if bad is not None:  # (9.4) never write invalid JSON; say where the value is
                raise ValueError(f"{method}: {bad} is not a finite number, which JSON cannot represent")
        request_id = next(self._ids)
        if on_request_id is not None:  # the caller's errors name the request (ToolError, ResourceNotFound)
            on_request_id(request_id)
        # Callbacks must all run before the call returns: route the answer through
        # the dispatch queue too, except when the caller *is* the dispatch thread.
        watched = progress is not None or progress_event is not None
        pending = _Pending(method, progress, ordered=watched and not self.dispatcher.on_thread())
        wants_progress = watched or reset_timeout_on_progress or progress_token is not None
        token: Any = ""
        if wants_progress:
            if progress_token is None:
                token = f"mcp_sync-{request_id}"
            elif type(progress_token) in (str, int):
                token = progress_token  # the caller's own: kept on the wire
            else:
                raise ValueError(
                    f"{method}: a progressToken must be a string or an integer, not {progress_token!r:.40}"
                )
            pending.event, pending.request_id, pending.token = progress_event, request_id, token
            params = dict(params or {})  # never the caller's dict: the token is this request's
            meta = params.get("_meta")
            params["_meta"] = {**(meta if isinstance(meta, dict) else {}), "progressToken": token}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        with self._lock:
            if wants_progress and token in self._progress:  # str and int never equal; bools were refused
                raise ValueError(f"{method}: progressToken {token!r:.40} is in use by a request in flight; "
                                 "each request in flight needs its own")  # P1
            self._pending[request_id] = pending
            if wants_progress:
                self._progress[token] = pending
            if on_stream is not None:
                self._streams[request_id] = on_stream
        # A plain request may be exchanged on this thread by a transport that can (HTTP: saves a
        # thread per request); a cancel or the deadline then ends the exchange from another thread.
        plain = on_stream is None and not reset_timeout_on_progress and total_limit is None
        inline = self._send_inline if plain else None
        remove_callback: Callable[[], None] | None = None
        if cancel is not None:

            def on_cancel(reason: str | None) -> None:  # runs on the cancelling thread
                error = Cancelled(
                    _cancelled_text(f"{method} was cancelled", reason),
                    reason=reason,
                    method=method,
                    request_id=request_id,
                )
                if pending.settle(error=error) and inline is not None:
                    self._abort_quietly(request_id)

            remove_callback = cancel.add_callback(on_cancel)
        sending = written = False
        try:
            if self._closed_error is not None:  # closed between the check and registration
                raise self._closed_copy(method, request_id)
            sending = True
            sent_at = time.monotonic()  # the deadline covers the write too (8.1)
            write_limit = limit if total_limit is None or (limit is not None and limit < total_limit) else total_limit
            if inline is not None:
                inline(message, headers=headers, deadline=None if limit is None else sent_at + limit)
            elif write_limit is not None and self._send_takes_timeout:
                self.transport.send(message, headers=headers, timeout=write_limit)  # type: ignore[call-arg]
            else:
                self.transport.send(message, headers=headers)
            written = True
            expired = self._wait(pending, sent_at, limit, total_limit, reset_timeout_on_progress)
            if expired is not None:
                timed_out = RequestTimeout(f"{method}: {expired}", method=method, request_id=request_id)
                pending.settle(error=timed_out)
        except MCPError as exc:  # from the transport: make it name this request, like every error
            exc.method = exc.method or method
            if exc.request_id is None:
                exc.request_id = request_id
            pending.settle(error=exc)
        except BaseException as exc:
            # Interrupted while sending or waiting (Ctrl-C, an async exception), or a
            # transport that could not encode the message. An interrupted request is
            # abandoned exactly like a cancelled one, then the interrupt propagates.
            abandoned = pending.settle(
                error=Cancelled(f"{method} was interrupted", reason=type(exc).__name__, method=method)
            )
            if abandoned and (written or (sending and not isinstance(exc, Exception))):
                self._cancel_on_wire(request_id, f"interrupted ({type(exc).__name__})")
            raise
        finally:
            if remove_callback is not None:
                remove_callback()
            with self._lock:
                self._pending.pop(request_id, None)
                if wants_progress:
                    self._progress.pop(token, None)
                if on_stream is not None:
                    self._streams.pop(request_id, None)
            if pending.coalesced:
                log.debug("mcp_sync: %s: %s: the progress callback fell %d behind; %d values coalesced",
                          self.name, method, MAX_QUEUED_PROGRESS, pending.coalesced)
        try:
            return pending.result()  # type: ignore[no-any-return]
        except (Cancelled, RequestTimeout) as exc:
            if written and (cancel_on_timeout or isinstance(exc, Cancelled)):
                reason = exc.reason if isinstance(exc, Cancelled) else "timeout"
                self._cancel_on_wire(request_id, reason)
            if isinstance(exc, RequestTimeout):
                self._explain(exc)
            raise
        except ConnectionClosed as exc:
            self._explain(exc)
            raise

    def _wait(
        self, pending: _Pending, start: float, limit: float | None, total_limit: float | None, reset_on_progress: bool
    ) -> str | None:
        """Wait for ``pending`` (sent at ``start``); None once settled, else why the wait ended.

        Waits in short slices: an interrupt is seen promptly on every platform and
        no OS wait is ever given a huge value.
        """
        hard_end = start + total_limit if total_limit is not None else math.inf
        while True:
            last = pending.last_progress if reset_on_progress else None
            if limit is None:
                end = math.inf
            else:
                end = (last if last is not None else start) + limit
            remaining = min(end, hard_end) - time.monotonic()
            if remaining <= 0:
                if hard_end <= end:
                    return f"no answer within max_total_timeout={total_limit} s"
                if last is not None:
                    return f"no answer within {limit} s of the last progress notification"
                return f"no answer within {limit} s"
            if pending.wait(_WAIT_SLICE_S if remaining > _WAIT_SLICE_S else remaining):
                return None

    def _explain(self, error: MCPError) -> None:
        """Append what the transport knows (skipped lines, last stderr lines) to ``error``. (9.12)"""
        if self._closed_by_client and isinstance(error, ConnectionClosed):
            return
        try:
            text = declared(self.transport).diagnostics()
        except Exception:
            log.debug("mcp_sync: the %s transport's diagnostics() failed", self.name, exc_info=True)
            return
        text = text.strip() if isinstance(text, str) else ""
        if text and text not in error.message:
            error.message = f"{error.message}\n{text}"
            error.args = (error.message, *error.args[1:])

    def notify(self, method: str, params: dict[str, Any] | None = None, *, timeout: float | None = None) -> None:
        """Send a notification (no answer expected).

        Raises ValueError before sending when ``params`` hold NaN or an infinity.
        ``timeout`` bounds the write on transports whose writes can block (stdio).
        """
        self._check_open(method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            bad = non_finite_path(params)
            if bad is not None:
                raise ValueError(f"{method}: {bad} is not a finite number, which JSON cannot represent")
            message["params"] = params
        if timeout is not None and self._send_takes_timeout:
            self.transport.send(message, timeout=timeout)  # type: ignore[call-arg]
        else:
            self.transport.send(message)

    def _abort_quietly(self, request_id: Any) -> bool:
        """End a request at the transport level; True when that *is* its cancellation. A failure
        is logged: the call is cancelled already, and the wire is told by a notice instead."""
        try:
            return bool(self.transport.abort(request_id))
        except Exception:
            log.debug("mcp_sync: aborting %s on the %s transport failed", request_id, self.name, exc_info=True)
            return False

    def _cancel_on_wire(self, request_id: Any, reason: str | None) -> None:
        """Tell the server a request is abandoned, without waiting for it (#17.9).

        This runs on the caller's thread after the call's deadline, so it never blocks: a
        transport that can end the exchange (``abort``) does; on stdio the notice is written
        now if the pipe takes it without waiting (so it precedes the caller's next request);
        otherwise, and on transports whose writes have no timeout (an HTTP POST), it goes to
        one background writer, each write bounded by _CANCEL_WRITE_TIMEOUT (stdio) or the
        transport's own bound, at most MAX_QUEUED_CANCELS waiting (more are dropped).
        """
        if self._closed_error is not None:
            return
        params: dict[str, Any] = {"requestId": request_id}
        if reason:
            params["reason"] = reason
        if self._abort_quietly(request_id):
            return
        try:
            if self._send_takes_timeout:
                # timeout=0: written only if it needs no wait. A line started but not finished
                # is completed by the next write, so the background copy may repeat it; a
                # repeated cancellation of the same request is ignored by the server.
                self.notify("notifications/cancelled", params, timeout=0)
                return
        except RequestTimeout:
            pass  # the server is not reading now: the background writer tries for longer
        except MCPError as exc:
            log.debug("mcp_sync: could not send the cancellation of %s: %s", request_id, exc)
            return
        with self._lock:
            if len(self._cancels) >= MAX_QUEUED_CANCELS:
                log.debug("mcp_sync: %s: %d cancellations wait already; not sending the one of %s",
                          self.name, MAX_QUEUED_CANCELS, request_id)
                return
            self._cancels.append(params)
            if self._cancel_writing:
                return
            self._cancel_writing = True
        if self._cancel_writer.spawn(self._write_cancels, "cancel") is None:  # closing
            with self._lock:
                self._cancels.clear()
                self._cancel_writing = False

    def _write_cancels(self) -> None:
        """Background: write the queued cancellations in order, then end (no idle thread)."""
        while True:
            with self._lock:
                if not self._cancels or self._closed_error is not None:
                    self._cancels.clear()
                    self._cancel_writing = False
                    return
                params = self._cancels.popleft()
            try:
                self.notify("notifications/cancelled", params, timeout=_CANCEL_WRITE_TIMEOUT)
            except MCPError as exc:
                log.debug("mcp_sync: could not send the cancellation of %s: %s", params["requestId"], exc)
            except Exception:  # a transport bug must not end the writer with work queued
                log.exception("mcp_sync: sending the cancellation of %s failed", params["requestId"])

    def _check_open(self, method: str) -> None:
        if not self._started:
            raise ClientStateError(f"{method}: the connection is not started", method=method)
        if self._closed_error is not None:
            raise self._closed_copy(method, None)

    def _closed_copy(self, method: str, request_id: Any) -> ConnectionClosed:
        error = self._closed_error
        assert error is not None
        return _copy_closed(error, method, request_id)

    # -- incoming (transport threads) ----------------------------------------------

    def message(self, message: Any) -> None:
        """Route one message from the server. Never raises, never runs user code.

        Any value is accepted: a dict, a list (a 2025-03-26 batch), or anything
        else (skipped with a warning).
        """
        try:
            if isinstance(message, list):  # a batch: one level only, never recursion
                for item in message:
                    self._route(item)
            else:
                self._route(message)
        except Exception:  # a bug here must cost one message, never the reader thread (8.5)
            log.exception("mcp_sync: routing a message from %s failed (skipped)", self.name)

    def _route(self, message: Any) -> None:
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            log.warning(
                "mcp_sync: %s sent a message that is not JSON-RPC 2.0 (skipped): %s", self.name, preview(message)
            )
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._server_request(message["id"], method, message.get("params"))
            else:
                self._notification(method, message.get("params"))
        elif "id" in message and ("result" in message or "error" in message):
            self._response(message)
        else:
            log.warning("mcp_sync: %s sent an unrecognized message (skipped): %s", self.name, preview(message))

    def stream_for(self, request_id: Any) -> NotificationCallback | None:
        """The ``on_stream`` callback of the open request ``request_id``, or None.

        Lets the reader-thread hook find a subscription stream. Ids compare as
        :func:`~mcp_sync._ids.normalize_id` says: ``"1"`` never matches 1.
        """
        key = normalize_id(request_id)
        if type(key) is not int:
            return None
        with self._lock:
            return self._streams.get(key)

    def session_renewed(self) -> None:
        """Transport thread: a new session replaced an expired one."""
        try:
            if self.on_session_renewed is not None:
                self.dispatcher.submit(self.on_session_renewed)
        except Exception:
            log.exception("mcp_sync: session_renewed failed")

    def fail(self, request_id: Any, error: MCPError) -> None:
        """Transport thread: the answer to ``request_id`` could not be read. Never raises."""
        pending: _Pending | None = None
        try:
            key = normalize_id(request_id)
            with self._lock:
                pending = self._pending.get(key) if type(key) is int else None
            if pending is None:
                log.debug("mcp_sync: %s: failure for unknown request %s: %s", self.name, preview(request_id),
                          _text_of(error))
                return
            if not isinstance(error, MCPError):
                error = ProtocolError(_text_of(error) or "the answer could not be read", method=pending.method,
                                      request_id=key)
            error.method = error.method or pending.method
            if error.request_id is None:  # the error names its request, like every other
                error.request_id = key
            pending.settle(error=error)
        except Exception:
            log.exception("mcp_sync: fail(%s) failed", preview(request_id))
            if pending is not None:  # whatever the transport handed over, the waiter is released
                pending.settle(error=ProtocolError(
                    f"{pending.method}: the answer could not be read", method=pending.method, request_id=key))

    def closed(self, error: ConnectionClosed) -> None:
        """The connection ended: every waiting request raises ConnectionClosed now. Never raises."""
        if not isinstance(error, ConnectionClosed) or not isinstance(getattr(error, "message", None), str):
            error = ConnectionClosed(_text_of(error) or "the connection closed")  # whatever the transport gave
        with self._lock:
            if self._closed_error is not None:
                return
            self._closed_error = error
            pending = list(self._pending.items())
            serving = list(self._serving.values())
        for request in serving:  # a handler still answering the server can stop: nobody will read it
            request.cancel.cancel(f"the connection ended: {_text_of(error)}")
        for request_id, entry in pending:
            try:
                entry.settle(error=_copy_closed(error, entry.method, request_id))
            except Exception:
                log.exception("mcp_sync: releasing request %s failed", request_id)
                fallback = ConnectionClosed(_text_of(error), method=entry.method, request_id=request_id)
                entry.settle(error=fallback)
        if self.on_closed is not None:
            self.dispatcher.submit(self.on_closed, error)

    def _response(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        if type(request_id) is not int:
            request_id = normalize_id(request_id)  # (8.8) 7.0 answers request 7
        with self._lock:
            pending = self._pending.get(request_id) if type(request_id) is int else None
        if pending is None:
            log.debug(
                "mcp_sync: %s answered unknown or finished request %s (ignored)", self.name, preview(message["id"])
            )
            return
        value: Any = None
        error: MCPError | None = None
        if "error" in message:
            try:
                error = server_error_from(message["error"], method=pending.method, request_id=request_id)
            except Exception:  # e.g. an error object too deep to describe
                error = ProtocolError(
                    f"{pending.method}: malformed JSON-RPC error: {preview(message['error'])}",
                    method=pending.method,
                    request_id=request_id,
                )
        elif isinstance(message["result"], dict):
            value = message["result"]
        else:
            error = ProtocolError(
                f"{pending.method}: result is not an object: {preview(message['result'])}",
                method=pending.method,
                request_id=request_id,
            )
        if not (pending.ordered and self.dispatcher.submit(pending.settle, value, error)):
            pending.settle(value, error)

    def _notification(self, method: str, params: Any) -> None:
        params = params if isinstance(params, dict) else {}
        if method == "notifications/progress":
            if self._progress_for_request(params):
                return
        elif method == "notifications/cancelled":  # the server gave up one of its requests to us
            cancelled_id = normalize_id(params.get("requestId"))
            with self._lock:
                serving = self._serving.get(cancelled_id) if type(cancelled_id) in (str, int) else None
            if serving is not None:
                reason = params.get("reason")
                serving.given_up = True  # no answer is sent from now on
                self.dispatcher.submit(serving.cancel.cancel, reason if isinstance(reason, str) else None)
        if self.before_notification is not None:
            try:
                self.before_notification(method, params)
            except Exception:
                log.exception("mcp_sync: before_notification failed")
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            subscription = normalize_id(meta[SUBSCRIPTION_ID])
            with self._lock:  # ids compare type-exactly, so "1" never matches 1 (U3)
                stream = self._streams.get(subscription) if type(subscription) is int else None
            if stream is not None:
                self.dispatcher.offer(stream, method, params)
        if self.on_notification is not None:
            self.dispatcher.offer(self.on_notification, method, params)

    def _progress_for_request(self, params: dict[str, Any]) -> bool:
        """Record a progress notification for its request; True when its callback will get it.

        Every notification is queued for the callback, in arrival order, while fewer than
        MAX_QUEUED_PROGRESS of the request's deliveries wait (#18.19: a burst of 50 used to
        reach the callback once). Past the bound the newest value replaces the arguments of
        the request's last queued delivery, so a flood costs at most MAX_QUEUED_PROGRESS
        queued deliveries per request, and the callback still sees the newest value. (8.9)
        """
        token = params.get("progressToken")
        with self._lock:
            pending = self._progress.get(token) if type(token) in (str, int) else None
        if pending is None or pending.done:
            log.debug("mcp_sync: progress for an unknown or finished request (dropped): %s", preview(params))
            return False
        pending.last_progress = time.monotonic()  # (9.19) restarts a reset_timeout_on_progress wait
        progress = params.get("progress")
        if (pending.progress is None and pending.event is None) or not _is_number(progress):
            return False
        total = params.get("total")
        text = params.get("message")
        args = (progress, total if _is_number(total) else None, text if isinstance(text, str) else None)
        with self._lock:
            if pending.progress_queued >= MAX_QUEUED_PROGRESS and pending.tail is not None:
                pending.tail[0] = args  # the callback is far behind: coalesce into the last one queued
                pending.coalesced += 1
                return True
            slot: list[Any] = [args]
            pending.tail = slot
            pending.progress_queued += 1
        self.dispatcher.submit(self._deliver_progress, pending, slot)
        return True

    def _deliver_progress(self, pending: _Pending, slot: list[Any]) -> None:
        with self._lock:
            args = slot[0]
            pending.progress_queued -= 1
            if pending.tail is slot:  # no later value may be written into a delivery under way
                pending.tail = None
        callback, event = pending.progress, pending.event
        if callback is not None:
            callback(*args)
        if event is not None:
            event(pending.method, pending.request_id, pending.token, *args)

    def _server_request(self, raw_id: Any, method: str, params: Any) -> None:
        if not self.answers_server_requests:
            log.warning("mcp_sync: %s sent a %s request, which this connection does not take (not answered)",
                        self.name, preview(method))
            return
        request_id = normalize_id(raw_id)
        if request_id is None:  # JSON-RPC: answer with a null id when the id is unusable
            log.warning("mcp_sync: %s sent a %s request with an invalid id %s", self.name, method, preview(raw_id))
            self._answer(None, error={"code": _INVALID_REQUEST, "message": "Invalid Request: bad id"})
            return
        params = params if isinstance(params, dict) else {}
        if method == "ping":  # answer at once, no user code involved (LG7)
            self._answer(request_id, result={})
            return
        handler = self.on_server_request
        if handler is None:
            self._answer(request_id, error={"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
            return
        if len(self._handlers) >= MAX_CONCURRENT_HANDLERS:  # a server cannot make us start threads without end
            log.warning("mcp_sync: %s: %d server requests already in progress; refusing %s", self.name,
                        MAX_CONCURRENT_HANDLERS, method)
            self._answer(request_id, error={"code": INTERNAL_ERROR, "message": "client busy: too many requests"})
            return
        meta = params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        serving = ServerRequest(self, request_id, token if type(token) in (str, int) else None)
        with self._lock:  # on the reader thread: a notifications/cancelled read next finds it
            self._serving[request_id] = serving
        self._handlers.spawn(lambda: self._run_handler(handler, serving, method, params), "handler")

    def _run_handler(self, handler: ServerRequestHandler, serving: ServerRequest, method: str, params: dict) -> None:
        request_id = serving.id
        try:
            self._answer_unless_cancelled(handler, serving, method, params)
        finally:
            with self._lock:
                if self._serving.get(request_id) is serving:
                    del self._serving[request_id]

    def _answer_unless_cancelled(
        self, handler: ServerRequestHandler, serving: ServerRequest, method: str, params: dict
    ) -> None:
        request_id = serving.id
        try:
            result = handler(method, params, serving)
        except ServerRequestError as exc:
            if serving.given_up or serving.cancel.cancelled:  # the server gave up on it: no answer
                return
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            self._answer(request_id, error=error)
        except Exception as exc:  # a handler bug becomes an answer, never silence
            if serving.given_up or serving.cancel.cancelled:
                log.debug("mcp_sync: handler for %s raised after the server cancelled it: %s", method, exc)
                return
            log.exception("mcp_sync: handler for %s raised", method)
            self._answer(request_id, error={"code": INTERNAL_ERROR, "message": f"client handler failed: {exc}"})
        else:
            if serving.given_up or serving.cancel.cancelled:
                # the server cancelled it, or the connection ended (the token's reason says which)
                log.debug("mcp_sync: %s %r was cancelled (%s): its answer is not sent", method, request_id,
                          serving.cancel.reason or "by the server")
                return
            self._answer(request_id, result=result)

    def _answer(
        self, request_id: Any, *, result: Any = None, error: dict[str, Any] | None = None, fallback: bool = False
    ) -> None:
        """Send one answer; an answer JSON cannot carry becomes an error answer (``fallback``),
        so the server always gets one. Never raises."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        bad = non_finite_path(error if error is not None else result, "error" if error is not None else "result")
        if bad is not None:
            log.error("mcp_sync: the answer to server request %r holds NaN or an infinity at %s", request_id, bad)
            error = {"code": INTERNAL_ERROR, "message": f"client handler returned a non-finite number at {bad}"}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        try:
            self.transport.send(message)
        except MCPError as exc:
            log.debug("mcp_sync: could not answer server request %r: %s", request_id, exc)
        except Exception as exc:  # the value cannot be encoded (not JSON, too deep): say so to the server
            log.error("mcp_sync: the answer to server request %r cannot be sent: %s", request_id, exc)
            if fallback:  # the transport refuses even the plain error answer: nothing more to try
                return
            # Not judged by the error's code: a handler's own -32603 refusal with data JSON cannot
            # carry was once taken for the fallback and left the server waiting (#22.7).
            replacement = {"code": INTERNAL_ERROR, "message": f"client handler returned an invalid value: {exc}"}
            self._answer(request_id, error=replacement, fallback=True)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _cancelled_text(text: str, reason: str | None) -> str:
    return f"{text}: {reason}" if reason else text


def _copy_closed(error: ConnectionClosed, method: str | None, request_id: Any) -> ConnectionClosed:
    """A per-request copy of the connection's end (same class, exit code, stderr, unread input)."""
    try:
        return type(error)(
            error.message,
            exit_code=error.exit_code,
            stderr_tail=error.stderr_tail,
            method=method,
            request_id=request_id,
            unread_input=error.unread_input,
        )
    except Exception:  # a subclass with another constructor
        return ConnectionClosed(error.message, exit_code=error.exit_code, stderr_tail=error.stderr_tail,
                                method=method, request_id=request_id, unread_input=error.unread_input)
