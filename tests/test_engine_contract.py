"""The engine's public methods at their edges (mcp_sync/_engine.py): what is refused before
anything is sent, requests on an engine not started or already closed, and each way a
transport or an application callback can fail, without a waiting request hanging, the server
being left unanswered or the reader thread dying. The engine runs on in-memory wires here
(tests/wirekit.py); test_engine_stdio.py has the cases a real stdio server can act out."""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any

import pytest
from helpers import in_thread, wait_until
from wirekit import LockedWire

import mcp_sync
from mcp_sync._engine import Engine
from mcp_sync._threads import Dispatcher

pytestmark = pytest.mark.timeout(30)


def started(wire: LockedWire | None = None, **options: Any) -> tuple[Any, Engine]:
    wire = wire if wire is not None else LockedWire()
    engine = Engine(wire, **options)  # type: ignore[arg-type]
    engine.start()
    return wire, engine


def nth_request(wire: LockedWire, n: int = 1) -> dict:
    """The n-th request the engine wrote, once it is written."""
    assert wait_until(lambda: len(wire.requests()) >= n, 5), f"request {n} was never written"
    return wire.requests()[n - 1]


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


def cancellations(wire: LockedWire) -> list[dict]:
    with wire.lock:
        return [m for m in wire.sent if m.get("method") == "notifications/cancelled"]


# -- refused before anything is sent ------------------------------------------------------------


def test_timeouts_that_are_not_seconds_are_refused_before_anything_is_sent() -> None:
    """A timeout must be a number of seconds or None: a string, a bool or NaN is refused with
    the option's name, before a request id is spent or a byte written."""
    wire, engine = started()
    try:
        with pytest.raises(TypeError, match=r"^timeout must be a number of seconds or None, not str$"):
            engine.request("tools/list", timeout="5")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^max_total_timeout must be a number of seconds or None, not bool$"):
            engine.request("tools/list", timeout=1, max_total_timeout=True)
        with pytest.raises(ValueError, match=r"^timeout must be a number of seconds or None, not NaN$"):
            engine.request("tools/list", timeout=float("nan"))
        assert wire.sent == []
    finally:
        engine.close()


def test_a_non_finite_number_is_found_among_finite_values() -> None:
    """The error names the one non-finite value's path; finite floats, strings and nulls
    beside it (walked first) are not taken for it. Nothing is written."""
    wire, engine = started()
    params = {"name": "t", "arguments": {"c": [{"d": -float("inf")}, None, 2.5], "b": "x", "a": 1.5}}
    try:
        with pytest.raises(ValueError, match=r"^tools/call: params\.arguments\.c\[0\]\.d \(-inf\) is not a finite"):
            engine.request("tools/call", params, timeout=1)
        with pytest.raises(ValueError, match=r"^notifications/x: params\.arguments\.c\[0\]\.d \(-inf\)"):
            engine.notify("notifications/x", params)
        assert wire.sent == []
    finally:
        engine.close()


def test_an_engine_not_started_or_closed_refuses_without_sending() -> None:
    """Before start(): ClientStateError; after close(): ConnectionClosed with the close's
    reason, naming the method. close() may be called again."""
    wire = LockedWire()
    engine = Engine(wire)  # type: ignore[arg-type]
    with pytest.raises(mcp_sync.ClientStateError, match=r"^tools/list: the connection is not started$"):
        engine.request("tools/list")
    with pytest.raises(mcp_sync.ClientStateError, match="not started"):
        engine.notify("notifications/initialized")
    engine.start()
    assert engine.alive
    engine.close("the test is over")
    assert not engine.alive
    with pytest.raises(mcp_sync.ConnectionClosed, match="the test is over") as info:
        engine.request("tools/list")
    assert info.value.method == "tools/list" and info.value.request_id is None
    with pytest.raises(mcp_sync.ConnectionClosed, match="the test is over"):
        engine.notify("notifications/initialized")
    engine.close()  # idempotent
    assert wire.sent == []


def test_a_connection_that_ends_while_a_request_registers_fails_it_at_once() -> None:
    """The connection ends after the open check and before the request is registered (here
    from on_request_id, the moment in between): the request raises that ConnectionClosed at
    once, naming itself, and is never written. Without the second check it was written and,
    with timeout=None, waited for an answer for ever."""
    wire, engine = started()

    def end_now(request_id: Any) -> None:
        engine.closed(mcp_sync.ConnectionClosed("the server exited", exit_code=3))

    with pytest.raises(mcp_sync.ConnectionClosed, match="the server exited") as info:
        engine.request("tools/call", {"name": "x"}, timeout=None, on_request_id=end_now)
    assert (info.value.method, info.value.request_id, info.value.exit_code) == ("tools/call", 1, 3)
    assert wire.sent == []
    engine.close()


# -- routing is total -----------------------------------------------------------------------------


def _raise(*_: Any) -> Any:
    raise RuntimeError("hostile")


#: An int subclass whose class is named "int": reprlib formats it as an int, unguarded.
HostileInt = type("int", (int,), {"__repr__": _raise})


class HostileMapping(dict):
    """A dict whose every lookup raises (a transport may hand the engine any object)."""

    get = _raise


def test_any_object_handed_to_message_is_skipped_and_the_next_answer_arrives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """message() never raises, whatever it is given: a value whose repr raises is logged by
    its type name, a mapping that raises on lookup costs that one message; the waiting
    request is not settled by either and gets its real answer afterwards."""
    wire, engine = started()
    thread, box = in_thread(lambda: engine.request("tools/list", timeout=10))
    request = nth_request(wire)
    with caplog.at_level(logging.WARNING, logger="mcp_sync"):
        engine.message(HostileInt(5))
        engine.message(HostileMapping(jsonrpc="2.0", id=request["id"], result={"wrong": 1}))
        engine.message([HostileInt(6), HostileMapping()])
    assert "not JSON-RPC 2.0 (skipped): <int>" in caplog.text
    assert caplog.text.count("routing a message from wire failed (skipped)") == 2
    assert box == {}
    engine.message({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": []}})
    thread.join(5)
    assert box.get("value") == {"tools": []}
    engine.close()


def test_plain_exceptions_given_to_fail_and_closed_become_the_library_errors() -> None:
    """A transport may hand fail() and closed() any exception: the waiting request still
    raises ProtocolError / ConnectionClosed, with the text, its method and its id."""
    wire, engine = started()
    thread, box = in_thread(lambda: engine.request("tools/list", timeout=10))
    request = nth_request(wire)
    engine.fail(request["id"], ValueError("the answer is 70 MB"))  # type: ignore[arg-type]
    thread.join(5)
    error = box["error"]
    assert type(error) is mcp_sync.ProtocolError and error.message == "the answer is 70 MB"
    assert (error.method, error.request_id) == ("tools/list", request["id"])

    thread, box = in_thread(lambda: engine.request("prompts/list", timeout=10))
    request = nth_request(wire, 2)
    engine.closed(OSError("the pipe broke"))  # type: ignore[arg-type]
    thread.join(5)
    error = box["error"]
    assert isinstance(error, mcp_sync.ConnectionClosed) and error.message == "the pipe broke"
    assert (error.method, error.request_id) == ("prompts/list", request["id"])
    assert not engine.alive and isinstance(engine.closed_error, mcp_sync.ConnectionClosed)
    engine.close()

    _, silent = started()
    silent.closed(OSError())  # type: ignore[arg-type]
    assert silent.closed_error is not None and silent.closed_error.message == "the connection closed"
    silent.close()


def test_an_invalid_error_object_too_deep_to_print_is_a_protocol_error() -> None:
    """An error member that is not a JSON-RPC error (its code is no integer) and is nested
    past the recursion limit: describing it must not fail the routing, the request gets a
    ProtocolError saying the error was malformed."""
    wire, engine = started()
    thread, box = in_thread(lambda: engine.request("tools/list", timeout=10))
    request = nth_request(wire)
    bad = {"code": "not a number", "data": nested(sys.getrecursionlimit() * 3)}
    engine.message({"jsonrpc": "2.0", "id": request["id"], "error": bad})
    thread.join(5)
    error = box["error"]
    assert type(error) is mcp_sync.ProtocolError and "tools/list: malformed JSON-RPC error" in error.message
    assert error.request_id == request["id"]
    engine.close()


# -- callbacks that fail ----------------------------------------------------------------------------


def test_a_failing_before_notification_hook_does_not_cost_the_notification(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The reader-thread hook (the client invalidates its cache there) raises: that is
    logged, and the notification still reaches on_notification."""
    seen: list[str] = []
    arrived = threading.Event()

    def note(method: str, params: dict) -> None:
        seen.append(method)
        arrived.set()

    _, engine = started(before_notification=_raise, on_notification=note)
    with caplog.at_level(logging.ERROR, logger="mcp_sync"):
        engine.message({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        assert arrived.wait(5)
    assert seen == ["notifications/tools/list_changed"]
    assert "before_notification failed" in caplog.text
    engine.close()


def test_a_callback_that_raises_does_not_stop_the_ones_after_it(caplog: pytest.LogCaptureFixture) -> None:
    """One notification callback raises: it is logged, and the next notifications are still
    delivered, in order, on the same dispatch thread."""
    seen: list[tuple[str, str]] = []

    def note(method: str, params: dict) -> None:
        seen.append((method, threading.current_thread().name))
        if method == "notifications/first":
            raise RuntimeError("a bug in the application")

    _, engine = started(on_notification=note)
    with caplog.at_level(logging.ERROR, logger="mcp_sync"):
        for method in ("notifications/first", "notifications/second", "notifications/third"):
            engine.message({"jsonrpc": "2.0", "method": method})
        assert wait_until(lambda: len(seen) == 3, 5)
    assert [method for method, _ in seen] == ["notifications/first", "notifications/second", "notifications/third"]
    assert {thread for _, thread in seen} == {"mcp_sync-dispatch-wire"}
    assert "a callback raised (ignored)" in caplog.text
    engine.close()


def test_stream_for_finds_an_open_request_by_its_exact_id() -> None:
    """stream_for(id) is the on_stream callback of the open request with that id: 1.0 names
    request 1, "1", True and [1] name nothing; once the request ends, nothing."""
    wire, engine = started()

    def stream(method: str, params: dict) -> None: ...

    thread, box = in_thread(lambda: engine.request("subscriptions/listen", timeout=10, on_stream=stream))
    request_id = nth_request(wire)["id"]
    assert engine.stream_for(request_id) is stream and engine.stream_for(float(request_id)) is stream
    for other in (str(request_id), True, [request_id], request_id + 1):
        assert engine.stream_for(other) is None, other
    engine.message({"jsonrpc": "2.0", "id": request_id, "result": {}})
    thread.join(5)
    assert box.get("value") == {} and engine.stream_for(request_id) is None
    engine.close()


class ExhaustedDispatcher(Dispatcher):
    """A dispatcher that cannot start its thread (the process is out of threads)."""

    def submit(self, callback: Any, *args: Any) -> bool:
        raise RuntimeError("can't start new thread")


def test_session_renewed_runs_its_callback_on_the_dispatch_thread_and_never_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The transport's thread reports a renewed session: the callback runs on the dispatch
    thread; without a callback nothing happens (no thread is started); when the dispatcher
    cannot take it, the transport's thread gets no exception (it is logged)."""
    ran: list[str] = []
    done = threading.Event()
    _, engine = started(on_session_renewed=lambda: (ran.append(threading.current_thread().name), done.set()))
    engine.session_renewed()
    assert done.wait(5) and ran == ["mcp_sync-dispatch-wire"]
    engine.close()

    _, plain = started()
    plain.session_renewed()
    assert plain.dispatcher.thread is None
    plain.close()

    _, exhausted = started(dispatcher=ExhaustedDispatcher("wire"), on_session_renewed=lambda: None)
    with caplog.at_level(logging.ERROR, logger="mcp_sync"):
        exhausted.session_renewed()
    assert "session_renewed failed" in caplog.text
    exhausted.close()


def test_nothing_reaches_the_application_after_close(no_leaks: None) -> None:
    """A notification or a server request routed after close() (a reader thread's last
    lines) runs no callback, starts no handler thread and writes no answer."""
    noted: list[str] = []
    handled: list[str] = []
    wire, engine = started(
        on_notification=lambda method, params: noted.append(method),
        on_server_request=lambda method, params, request: handled.append(method) or {},
    )
    engine.close()
    threads = set(threading.enumerate())
    engine.message({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "late"}})
    engine.message({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
    assert set(threading.enumerate()) <= threads  # nothing was started to run either
    assert noted == [] and handled == [] and wire.sent == []


# -- transports that fail ------------------------------------------------------------------------------


class BrokenClose(LockedWire):
    def close(self) -> None:
        raise OSError("the socket was already gone")


def test_a_transport_whose_close_fails_still_releases_everything(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """close() on a transport that raises: the failure is logged, close() returns, the
    waiting request raises ConnectionClosed and the dispatch thread is ended."""
    arrived = threading.Event()
    wire, engine = started(BrokenClose(), on_notification=lambda method, params: arrived.set())
    engine.message({"jsonrpc": "2.0", "method": "notifications/message"})
    assert arrived.wait(5)
    dispatch = engine.dispatcher.thread
    assert dispatch is not None and dispatch.is_alive()
    thread, box = in_thread(lambda: engine.request("tools/list", timeout=None))
    nth_request(wire)
    with caplog.at_level(logging.ERROR, logger="mcp_sync"):
        engine.close()
    thread.join(5)
    assert isinstance(box.get("error"), mcp_sync.ConnectionClosed) and "the client was closed" in str(box["error"])
    assert not dispatch.is_alive()
    assert "closing the wire transport failed" in caplog.text


class BrokenDiagnostics(LockedWire):
    def diagnostics(self) -> str:
        raise RuntimeError("diagnostics bug")


def test_failing_diagnostics_leave_the_timeout_message_as_it_is() -> None:
    """The engine adds the transport's diagnostics() to a timeout; when that raises, the
    timeout is raised with its own message, not the diagnostics' exception."""
    _, engine = started(BrokenDiagnostics())
    with pytest.raises(mcp_sync.RequestTimeout) as info:
        engine.request("tools/list", timeout=0.05)
    assert info.value.message == "tools/list: no answer within 0.05 s"
    engine.close()


class InlineWire(LockedWire):
    """A transport that exchanges each plain request on the calling thread (as Streamable HTTP
    does) and whose abort() raises the first ``failures`` times (a socket already gone)."""

    inline_sends = True

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures
        self.aborts: list[Any] = []

    def send_inline(self, message: dict, *, headers: Any = None, deadline: float | None = None) -> None:
        self.send(message, headers=headers)  # written; the answer would reach the sink later

    def abort(self, request_id: Any) -> bool:
        self.aborts.append(request_id)
        if len(self.aborts) <= self.failures:
            raise OSError("the socket is gone")
        return True  # closing the exchange is the cancellation (modern HTTP)


def cancel_inline(wire: InlineWire, engine: Engine) -> tuple[dict, dict]:
    token = mcp_sync.CancellationToken()
    thread, box = in_thread(lambda: engine.request("tools/call", {"name": "slow"}, timeout=10, cancel=token))
    request = nth_request(wire)
    token.cancel("user pressed stop")  # the engine aborts the exchange on this thread
    thread.join(5)
    assert not thread.is_alive()
    return request, box


def test_an_abort_that_fails_on_the_cancelling_thread_does_not_undo_the_cancel(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The exchange's abort raises on the cancelling thread: that is logged, the caller
    raises Cancelled with the reason, and the wire is told again after the wait (which
    works), so no notifications/cancelled is needed."""
    wire = InlineWire(failures=1)
    _, engine = started(wire)
    with caplog.at_level(logging.DEBUG, logger="mcp_sync"):
        request, box = cancel_inline(wire, engine)
    error = box.get("error")
    assert isinstance(error, mcp_sync.Cancelled) and error.reason == "user pressed stop", box
    assert wire.aborts == [request["id"], request["id"]]
    assert cancellations(wire) == []
    assert "aborting 1 on the wire transport failed" in caplog.text
    engine.close()


def test_a_cancelled_request_raises_cancelled_whatever_abort_raises() -> None:
    """A transport whose abort() always raises: the cancelled caller must still get Cancelled
    (the cancel has succeeded), not the transport's exception."""
    wire = InlineWire(failures=99)
    _, engine = started(wire)
    try:
        _, box = cancel_inline(wire, engine)
        if isinstance(box.get("error"), OSError):
            raise box["error"]
        assert isinstance(box.get("error"), mcp_sync.Cancelled), box
    finally:
        engine.close()


class EndingWire(LockedWire):
    """Writes the request, then, before the caller waits, the user cancels and the
    connection ends (both from other threads in life; here in this order, on purpose)."""

    engine: Engine
    token: mcp_sync.CancellationToken

    def send(self, message: dict, *, headers: Any = None) -> None:
        super().send(message, headers=headers)
        if "id" in message and "method" in message:
            self.token.cancel("stop")
            self.engine.closed(mcp_sync.ConnectionClosed("the server exited"))


def test_a_cancel_racing_the_end_of_the_connection_raises_cancelled_and_writes_nothing(no_leaks: None) -> None:
    """The cancel came first, so the caller raises Cancelled; the connection has ended by the
    time the engine would tell the server, so no notifications/cancelled is attempted."""
    wire = EndingWire()
    wire.token = mcp_sync.CancellationToken()
    _, engine = started(wire)
    wire.engine = engine
    with pytest.raises(mcp_sync.Cancelled, match="stop"):
        engine.request("tools/call", {"name": "slow"}, timeout=10, cancel=wire.token)
    assert [m.get("method") for m in wire.sent] == ["tools/call"]
    engine.close()


class FlakyCancelWire(LockedWire):
    """Fails the first notifications/cancelled (a transport bug), after holding it until the
    test has queued the next one behind it."""

    def __init__(self) -> None:
        super().__init__()
        self.first_taken = threading.Event()
        self.release = threading.Event()
        self.cancel_writes = 0

    def send(self, message: dict, *, headers: Any = None) -> None:
        if message.get("method") == "notifications/cancelled":
            self.cancel_writes += 1  # only the one background writer sends these
            if self.cancel_writes == 1:
                self.first_taken.set()
                self.release.wait(10)
                raise RuntimeError("an encoder bug")
        super().send(message, headers=headers)


def test_the_cancellation_writer_goes_on_after_a_notice_fails(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """Timed-out requests are cancelled on the wire by one background writer. The transport
    raises on the first notice while the second waits in the queue: the failure is logged
    and the second notice is still written (the writer does not die with work queued)."""
    wire = FlakyCancelWire()
    _, engine = started(wire)
    with caplog.at_level(logging.ERROR, logger="mcp_sync"):
        with pytest.raises(mcp_sync.RequestTimeout):
            engine.request("tools/call", {"name": "a"}, timeout=0.05)
        assert wire.first_taken.wait(5)
        with pytest.raises(mcp_sync.RequestTimeout):
            engine.request("tools/call", {"name": "b"}, timeout=0.05)
        wire.release.set()
        assert wait_until(lambda: bool(cancellations(wire)), 5)
    assert [m["params"]["requestId"] for m in cancellations(wire)] == [2]
    assert "sending the cancellation of 1 failed" in caplog.text
    engine.close()


class RefusingWire(LockedWire):
    """Raises on every answer to a server request (a transport that cannot encode anything)."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts: list[dict] = []

    def send(self, message: dict, *, headers: Any = None) -> None:
        if "method" not in message:
            with self.lock:
                self.attempts.append(message)
            raise RuntimeError("the encoder is broken")
        super().send(message, headers=headers)


def test_an_answer_no_transport_will_send_is_retried_once_as_an_error_then_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The handler's answer cannot be sent: a plain error answer is tried instead; when the
    transport refuses that too, the engine stops there (two attempts, no loop) and routing
    goes on."""
    wire, engine = started(RefusingWire(), on_server_request=lambda method, params, request: {"roots": []})
    with caplog.at_level(logging.ERROR, logger="mcp_sync"):
        engine.message({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
        assert wait_until(lambda: len(wire.attempts) >= 2, 5)
    thread, box = in_thread(lambda: engine.request("tools/list", timeout=10))
    engine.message({"jsonrpc": "2.0", "id": nth_request(wire)["id"], "result": {"tools": []}})
    thread.join(5)
    assert box.get("value") == {"tools": []}
    engine.close()  # joins the handler thread: no third attempt can follow
    first, second = wire.attempts
    assert first["result"] == {"roots": []} and "error" not in first
    assert second["error"]["code"] == -32603
    assert "client handler returned an invalid value" in second["error"]["message"]
    assert caplog.text.count("the answer to server request 's1' cannot be sent") == 2


class MessagelessClosed(mcp_sync.ConnectionClosed):
    """A ConnectionClosed subclass whose constructor never sets ``message`` (a transport's own)."""

    def __init__(self, text: str) -> None:
        Exception.__init__(self, text)


class UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


@pytest.mark.parametrize("end", ["closed with a messageless ConnectionClosed", "failed with an unprintable error"])
def test_the_sink_methods_release_the_waiter_whatever_error_they_are_given(end: str) -> None:
    """closed() and fail() never raise and always settle the waiting request, whatever
    exception object the transport hands them."""
    wire, engine = started()
    thread, box = in_thread(lambda: engine.request("tools/list", timeout=1))  # released at once, or times out
    request = nth_request(wire)
    try:
        if end.startswith("closed"):
            engine.closed(MessagelessClosed("gone"))
        else:
            engine.fail(request["id"], UnprintableError())  # type: ignore[arg-type]
        thread.join(5)
        assert isinstance(box.get("error"), (mcp_sync.ConnectionClosed, mcp_sync.ProtocolError)), box
    finally:
        thread.join(5)
        engine.close()
