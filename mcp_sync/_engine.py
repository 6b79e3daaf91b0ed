"""The JSON-RPC engine: ids, pending requests, timeouts, cancellation, routing.

The engine is the only code that allocates request ids and matches answers to
the application threads waiting for them. It is the transport's
:class:`~mcp_sync.transports.base.MessageSink`: the transport's reader thread
calls :meth:`Engine.message`, which does no user work: it settles futures,
answers ``ping`` and queues everything else (notifications, progress, server
requests) for the dispatch thread or a handler thread.
"""

from __future__ import annotations

import itertools
import logging
import threading
from typing import Any, Callable, Mapping

from ._threads import Dispatcher, Outcome, Workers
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
from .transports.base import Transport, diagnostics_of

log = logging.getLogger("mcp_sync")

ProgressCallback = Callable[[float, "float | None", "str | None"], None]
NotificationCallback = Callable[[str, dict], None]
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
#: Answers one server-to-client request: ``(method, params) -> result``; raise
#: ServerRequestError to answer with an error. Runs on a handler thread.
ServerRequestHandler = Callable[[str, dict], dict]


class _Pending:
    __slots__ = ("method", "ordered", "outcome", "progress")

    def __init__(self, method: str, progress: ProgressCallback | None, ordered: bool) -> None:
        self.outcome = Outcome()
        self.method = method
        self.progress = progress
        self.ordered = ordered


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
        self.name = getattr(transport, "name", "server")
        self.on_notification = on_notification
        self.on_server_request = on_server_request
        #: Runs on the reader thread before a notification is queued: must be quick
        #: and run no user code (the client invalidates its cache here, C6).
        self.before_notification = before_notification
        #: Runs on the dispatch thread once the connection has ended, after every
        #: notification queued before the end (subscriptions end their iteration here).
        self.on_closed = on_closed
        #: Runs on the dispatch thread when the transport replaced an expired legacy
        #: HTTP session by itself (LG3): session state (subscriptions, log level) is gone.
        self.on_session_renewed = on_session_renewed
        self.dispatcher = dispatcher or Dispatcher(self.name)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._pending: dict[Any, _Pending] = {}
        self._progress: dict[Any, _Pending] = {}
        self._streams: dict[Any, NotificationCallback] = {}
        self._handlers = Workers(self.name)  # server requests answered by user handlers
        self._closed_error: ConnectionClosed | None = None
        self._started = False

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
        """Close the transport and fail every waiting request. Idempotent."""
        try:
            self.transport.close()
        finally:
            self.closed(ConnectionClosed(reason))
            self._handlers.close(1.0)

    # -- outgoing --------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = 60.0,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        headers: Mapping[str, str] | None = None,
        cancel_on_timeout: bool = True,
        on_stream: NotificationCallback | None = None,
    ) -> dict[str, Any]:
        """Send a request and block for its result (a dict).

        Raises ServerError for a JSON-RPC error answer, RequestTimeout,
        Cancelled, ConnectionClosed or ProtocolError. A request that timed out
        or was cancelled after it was written is cancelled on the wire (K1),
        once; a late answer to it is ignored (K3). ``on_stream(method, params)``
        receives, on the dispatch thread, the notifications whose
        ``_meta["io.modelcontextprotocol/subscriptionId"]`` is this request's id
        while it is open (T3, U3: ``subscriptions/listen``).
        """
        if cancel is not None and cancel.cancelled:
            raise Cancelled(f"{method} cancelled before it was sent", reason=cancel.reason, method=method)
        self._check_open(method)
        request_id = next(self._ids)
        params = dict(params) if params else {}
        # Callbacks must all run before the call returns: route the answer through
        # the dispatch queue too, except when the caller *is* the dispatch thread.
        pending = _Pending(method, progress, ordered=progress is not None and not self.dispatcher.on_thread())
        if progress is not None:
            token = f"mcp_sync-{request_id}"
            params["_meta"] = {**params.get("_meta", {}), "progressToken": token}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        with self._lock:
            self._pending[request_id] = pending
            if progress is not None:
                self._progress[token] = pending
            if on_stream is not None:
                self._streams[request_id] = on_stream
        remove_callback: Callable[[], None] | None = None
        if cancel is not None:

            def on_cancel(reason: str | None) -> None:  # runs on the cancelling thread
                error = Cancelled(f"{method} was cancelled", reason=reason, method=method, request_id=request_id)
                pending.outcome.settle(error=error)

            remove_callback = cancel.add_callback(on_cancel)
        written = False
        try:
            if self._closed_error is not None:  # closed between the check and registration
                raise self._closed_copy(method, request_id)
            self.transport.send(message, headers=headers)
            written = True
            if not pending.outcome.wait(timeout):
                said = diagnostics_of(self.transport)  # what the server printed instead, if anything
                pending.outcome.settle(
                    error=RequestTimeout(
                        f"{method}: no answer within {timeout} s" + (f"; {said}" if said else ""),
                        method=method,
                        request_id=request_id,
                    )
                )
        except MCPError as exc:
            pending.outcome.settle(error=exc)
        finally:
            if remove_callback is not None:
                remove_callback()
            with self._lock:
                self._pending.pop(request_id, None)
                if progress is not None:
                    self._progress.pop(token, None)
                self._streams.pop(request_id, None)
        try:
            return pending.outcome.result()  # type: ignore[no-any-return]
        except (Cancelled, RequestTimeout) as exc:
            if written and (cancel_on_timeout or isinstance(exc, Cancelled)):
                reason = exc.reason if isinstance(exc, Cancelled) else "timeout"
                self._cancel_on_wire(request_id, reason)
            raise

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (no answer expected)."""
        self._check_open(method)
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.transport.send(message)

    def _cancel_on_wire(self, request_id: Any, reason: str | None) -> None:
        if self._closed_error is not None:
            return
        try:
            if self.transport.abort(request_id):
                return
            params: dict[str, Any] = {"requestId": request_id}
            if reason:
                params["reason"] = reason
            self.notify("notifications/cancelled", params)
        except MCPError as exc:
            log.debug("mcp_sync: could not send the cancellation of %s: %s", request_id, exc)

    def _check_open(self, method: str) -> None:
        if not self._started:
            raise ClientStateError(f"{method}: the connection is not started", method=method)
        if self._closed_error is not None:
            raise self._closed_copy(method, None)

    def _closed_copy(self, method: str, request_id: Any) -> ConnectionClosed:
        error = self._closed_error
        assert error is not None
        return type(error)(
            error.message,
            exit_code=error.exit_code,
            stderr_tail=error.stderr_tail,
            method=method,
            request_id=request_id,
        )

    # -- incoming (transport threads) ----------------------------------------------

    def message(self, message: Any) -> None:
        """Route one message from the server. Never raises, never runs user code."""
        if isinstance(message, list):  # a 2025-03-26 batch
            for item in message:
                self.message(item)
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            log.warning("mcp_sync: %s sent a message that is not JSON-RPC 2.0 (skipped): %.200r", self.name, message)
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
            log.warning("mcp_sync: %s sent an unrecognized message (skipped): %.200r", self.name, message)

    def stream_for(self, request_id: Any) -> NotificationCallback | None:
        """The ``on_stream`` callback of the open request ``request_id`` (ids compare
        type-exactly, U3), or None. Lets the reader-thread hook find a listen (U2)."""
        if type(request_id) is not int:
            return None
        with self._lock:
            return self._streams.get(request_id)

    def session_renewed(self) -> None:
        """Transport thread: a new session replaced an expired one (LG3)."""
        if self.on_session_renewed is not None:
            self.dispatcher.submit(self.on_session_renewed)

    def fail(self, request_id: Any, error: MCPError) -> None:
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is not None:
            error.method = error.method or pending.method
            pending.outcome.settle(error=error)

    def closed(self, error: ConnectionClosed) -> None:
        """The connection ended: every waiting request raises ConnectionClosed now."""
        with self._lock:
            if self._closed_error is not None:
                return
            self._closed_error = error
            pending = list(self._pending.items())
        for request_id, entry in pending:
            entry.outcome.settle(
                error=type(error)(
                    error.message,
                    exit_code=error.exit_code,
                    stderr_tail=error.stderr_tail,
                    method=entry.method,
                    request_id=request_id,
                )
            )
        if self.on_closed is not None:
            self.dispatcher.submit(self.on_closed, error)

    def _response(self, message: dict[str, Any]) -> None:
        request_id = message["id"]
        with self._lock:
            pending = self._pending.get(request_id)
        if pending is None or (type(request_id) is not int):
            log.debug("mcp_sync: %s answered unknown or finished request %r (ignored)", self.name, request_id)
            return
        value: Any = None
        error: MCPError | None = None
        if "error" in message:
            error = server_error_from(message["error"], method=pending.method, request_id=request_id)
        elif isinstance(message["result"], dict):
            value = message["result"]
        else:
            error = ProtocolError(
                f"{pending.method}: result is not an object: {message['result']!r:.200}",
                method=pending.method,
                request_id=request_id,
            )
        if pending.ordered:
            self.dispatcher.submit(pending.outcome.settle, value, error)
        else:
            pending.outcome.settle(value, error)

    def _notification(self, method: str, params: Any) -> None:
        params = params if isinstance(params, dict) else {}
        if method == "notifications/progress":
            token = params.get("progressToken")
            with self._lock:
                pending = self._progress.get(token) if isinstance(token, (str, int)) else None
            if pending is not None and pending.progress is not None and not pending.outcome.done:
                progress = params.get("progress")
                if isinstance(progress, (int, float)):
                    self.dispatcher.submit(pending.progress, progress, params.get("total"), params.get("message"))
                    return
            log.debug("mcp_sync: progress for an unknown or finished request (dropped): %.200r", params)
        if self.before_notification is not None:
            try:
                self.before_notification(method, params)
            except Exception:
                log.exception("mcp_sync: before_notification failed")
        meta = params.get("_meta")
        if isinstance(meta, dict) and SUBSCRIPTION_ID in meta:
            subscription = meta[SUBSCRIPTION_ID]
            with self._lock:  # U3: ids compare type-exactly, so "1" never matches 1
                stream = self._streams.get(subscription) if type(subscription) is int else None
            if stream is not None:
                self.dispatcher.submit(stream, method, params)
        if self.on_notification is not None:
            self.dispatcher.submit(self.on_notification, method, params)

    def _server_request(self, request_id: Any, method: str, params: Any) -> None:
        params = params if isinstance(params, dict) else {}
        if method == "ping":  # LG7: answer at once, no user code involved
            self._answer(request_id, result={})
            return
        handler = self.on_server_request
        if handler is None:
            self._answer(request_id, error={"code": METHOD_NOT_FOUND, "message": f"Method not found: {method}"})
            return
        self._handlers.spawn(lambda: self._run_handler(handler, request_id, method, params), "handler")

    def _run_handler(self, handler: ServerRequestHandler, request_id: Any, method: str, params: dict) -> None:
        try:
            result = handler(method, params)
        except ServerRequestError as exc:
            error: dict[str, Any] = {"code": exc.code, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            self._answer(request_id, error=error)
        except Exception as exc:  # a handler bug becomes an answer, never silence
            log.exception("mcp_sync: handler for %s raised", method)
            self._answer(request_id, error={"code": INTERNAL_ERROR, "message": f"client handler failed: {exc}"})
        else:
            self._answer(request_id, result=result)

    def _answer(self, request_id: Any, *, result: Any = None, error: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
        if error is not None:
            message["error"] = error
        else:
            message["result"] = result
        try:
            self.transport.send(message)
        except MCPError as exc:
            log.debug("mcp_sync: could not answer server request %r: %s", request_id, exc)
