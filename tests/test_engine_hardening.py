"""The engine's promises, one test each (issues #8 and #9): routing is total, ids follow one
rule, the dispatch queue is bounded, close() releases waiters at once, an interrupt cancels on
the wire, NaN is never written, huge timeouts wait for ever, progress may extend a deadline."""

from __future__ import annotations

import ctypes
import inspect
import json
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers import wait_until
from wirekit import EncodingWire, LockedWire

import mcp_sync
from mcp_sync import _engine, _threads, cancellation
from mcp_sync._engine import MAX_QUEUED_PROGRESS, Engine
from mcp_sync._ids import normalize_id
from mcp_sync._threads import Dispatcher

LOAD_SERVER = str(Path(__file__).resolve().parent / "servers" / "load_server.py")
pytestmark = pytest.mark.timeout(30)


Wire = LockedWire


class Call:
    """``engine.request`` on a thread; ``.value`` / ``.error`` once it ends."""

    def __init__(self, engine: Engine, method: str = "tools/list", params: dict | None = None, **kwargs: Any) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.ended_at: float | None = None

        def run() -> None:
            try:
                self.value = engine.request(method, params or {}, **kwargs)
            except BaseException as exc:
                self.error = exc
            self.ended_at = time.monotonic()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def join(self, timeout: float = 5.0) -> Call:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the call did not end"
        return self


def started_engine(wire: Wire | None = None, **kwargs: Any) -> tuple[Wire, Engine]:
    wire = wire or Wire()
    engine = Engine(wire, **kwargs)  # type: ignore[arg-type]
    engine.start()
    return wire, engine


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    assert wait_until(predicate, timeout, interval=0.005), "condition not reached"


def deep_list(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


# -- #8.5: routing is total ------------------------------------------------------------------


@pytest.mark.parametrize("bad_id", [[1], {}, {"id": 1}, deep_list(50), 1.5, None, True, float("nan")])
def test_any_id_in_an_answer_is_routed_without_raising(bad_id: Any) -> None:
    """#8.5: a list or object id raised TypeError (unhashable) out of message(), killing the reader."""
    wire, engine = started_engine()
    call = Call(engine, timeout=5)
    wait_for(lambda: bool(wire.requests()))
    engine.message({"jsonrpc": "2.0", "id": bad_id, "result": {}})
    engine.message({"jsonrpc": "2.0", "id": bad_id, "error": {"code": 1, "message": "x"}})
    engine.message([{"jsonrpc": "2.0", "id": bad_id, "result": {}}])
    engine.fail(bad_id, mcp_sync.ProtocolError("too large"))
    assert call.ended_at is None  # nothing named this call
    engine.message({"jsonrpc": "2.0", "id": wire.requests()[0]["id"], "result": {"ok": 1}})
    assert call.join().value == {"ok": 1}
    engine.close()


def test_values_nested_beyond_the_recursion_limit_are_routed() -> None:
    """#8.5: batches recursed (RecursionError) and messages formatted with repr() (RecursionError)."""
    wire, engine = started_engine()
    call = Call(engine, timeout=5)
    wait_for(lambda: bool(wire.requests()))
    request_id = wire.requests()[0]["id"]
    deep = deep_list(sys.getrecursionlimit() * 3)
    engine.message(deep)  # a "batch" of batches
    engine.message({"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": deep}})
    engine.message({"jsonrpc": "2.0", "id": request_id, "error": {"code": 5, "message": "m", "data": deep}})
    error = call.join().error
    assert isinstance(error, mcp_sync.ServerError) and error.request_id == request_id
    call = Call(engine, timeout=5)
    wait_for(lambda: len(wire.requests()) == 2)
    engine.message({"jsonrpc": "2.0", "id": wire.requests()[1]["id"], "result": deep})
    error = call.join().error
    assert isinstance(error, mcp_sync.ProtocolError) and "not an object" in str(error)
    engine.close()


def test_the_sink_methods_never_raise() -> None:
    """#8.5: fail() with an unhashable id raised; closed() trusts its argument's class."""
    wire, engine = started_engine()
    engine.fail([1], mcp_sync.ProtocolError("x"))
    engine.fail({"a": 1}, mcp_sync.ProtocolError("x"))
    call = Call(engine, timeout=5)
    wait_for(lambda: bool(wire.requests()))
    engine.fail(wire.requests()[0]["id"], mcp_sync.ProtocolError("answer too large"))
    assert isinstance(call.join().error, mcp_sync.ProtocolError)

    class OddClosed(mcp_sync.ConnectionClosed):
        def __init__(self, message: str, extra: int) -> None:  # another constructor
            super().__init__(message)

    call = Call(engine, timeout=5)
    wait_for(lambda: len(wire.requests()) == 2)
    engine.closed(OddClosed("gone", 1))
    error = call.join().error
    assert isinstance(error, mcp_sync.ConnectionClosed) and "gone" in str(error)


def test_a_server_request_with_an_unusable_id_gets_a_null_id_error() -> None:
    """#8.5: the id is never echoed back when it is not a valid id (a deep one broke the encoder)."""
    wire, engine = started_engine()
    engine.message({"jsonrpc": "2.0", "id": deep_list(5000), "method": "ping"})
    engine.message({"jsonrpc": "2.0", "id": 4.0, "method": "ping"})
    answers = [m for m in wire.sent if "method" not in m]
    assert answers[0]["id"] is None and answers[0]["error"]["code"] == -32600
    assert answers[1] == {"jsonrpc": "2.0", "id": 4, "result": {}}
    engine.close()


# -- #8.8: one id rule --------------------------------------------------------------------------


def test_normalize_id() -> None:
    assert normalize_id(7) == 7 and type(normalize_id(7.0)) is int and normalize_id(7.0) == 7
    assert normalize_id("7") == "7"
    for invalid in (True, False, 7.5, float("inf"), float("nan"), None, [7], {"id": 7}):
        assert normalize_id(invalid) is None


def test_an_answer_whose_id_is_n_point_0_answers_request_n() -> None:
    """#8.8: {"id": 1.0} counted as answered for the HTTP transport but not for the engine."""
    wire, engine = started_engine()
    call = Call(engine, timeout=3)
    wait_for(lambda: bool(wire.requests()))
    request_id = wire.requests()[0]["id"]
    engine.message({"jsonrpc": "2.0", "id": True, "result": {"wrong": 1}})  # a bool is not an id
    engine.message({"jsonrpc": "2.0", "id": str(request_id), "result": {"wrong": 2}})  # "1" is not 1
    engine.message({"jsonrpc": "2.0", "id": float(request_id), "result": {"right": 1}})
    assert call.join().value == {"right": 1}
    engine.close()


# -- #8.7: huge timeouts ------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [float("inf"), 1e10, 1e300])
def test_a_huge_timeout_waits_for_ever_without_overflow(timeout: float) -> None:
    """#8.7: timeout=inf or 1e10 raised OverflowError from the lock wait."""
    wire, engine = started_engine()
    call = Call(engine, timeout=timeout, max_total_timeout=timeout)
    wait_for(lambda: bool(wire.requests()))
    time.sleep(0.1)
    assert call.ended_at is None
    engine.message({"jsonrpc": "2.0", "id": wire.requests()[0]["id"], "result": {"ok": True}})
    assert call.join().value == {"ok": True}
    engine.close()


# -- #9.4: NaN is never written -------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_are_refused_before_sending(value: float) -> None:
    """#9.4: NaN / Infinity were written as-is (invalid JSON): the call then waited out its timeout."""
    wire, engine = started_engine()
    with pytest.raises(ValueError, match=r"params\.arguments\.deep\[1\]\.x"):
        engine.request("tools/call", {"name": "t", "arguments": {"deep": [1, {"x": value}]}}, timeout=1)
    with pytest.raises(ValueError, match=r"params\.level"):
        engine.notify("notifications/message", {"level": value})
    assert wire.sent == []
    engine.close()


def test_a_handler_answer_with_nan_becomes_an_error_answer() -> None:
    wire, engine = started_engine(on_server_request=lambda method, params, request: {"value": float("nan")})
    engine.message({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
    wait_for(lambda: bool(wire.sent))
    assert wire.sent[0]["id"] == "s1" and wire.sent[0]["error"]["code"] == -32603
    assert "result.value" in wire.sent[0]["error"]["message"]
    engine.close()


def test_the_wire_encoder_never_writes_nan_or_a_value_that_contains_itself() -> None:
    """#9.4 backstop: the one wire encoder every transport uses refuses non-finite numbers and
    circular values (ValueError), and a value JSON has no form for (TypeError)."""
    from mcp_sync.transports.base import encode_message

    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError):
            encode_message({"x": bad})
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match="Circular"):
        encode_message({"x": circular})
    with pytest.raises(TypeError, match="set"):
        encode_message({"x": {1, 2}})
    encoded = encode_message({"text": "é\ud800", "n": [1, 2.5, None, True]})
    assert encoded == b'{"text":"\xc3\xa9\\ud800","n":[1,2.5,null,true]}'  # UTF-8; a lone surrogate escaped



# -- #9.19: progress extends the deadline ---------------------------------------------------------


def feed_progress(engine: Engine, token: str, count: int, interval: float) -> threading.Thread:
    def run() -> None:
        for step in range(count):
            time.sleep(interval)
            engine.message({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": step}})

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_progress_restarts_the_timeout_when_asked() -> None:
    """#9.19: reset_timeout_on_progress=True restarts the per-call timeout on each progress."""
    wire, engine = started_engine()
    call = Call(engine, timeout=0.4, reset_timeout_on_progress=True, max_total_timeout=10)
    wait_for(lambda: bool(wire.requests()))
    request = wire.requests()[0]
    token = request["params"]["_meta"]["progressToken"]  # sent even without a progress callback
    feeder = feed_progress(engine, token, 8, 0.15)  # 1.2 s of progress, well past 0.4 s
    feeder.join()
    assert call.ended_at is None, call.error
    engine.message({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": 1}})
    assert call.join().value == {"ok": 1}
    # without the option the same progress does not extend anything
    plain = Call(engine, timeout=0.4, progress=lambda *a: None)
    wait_for(lambda: len(wire.requests()) == 2)
    started = time.monotonic()
    feed_progress(engine, wire.requests()[1]["params"]["_meta"]["progressToken"], 8, 0.15)
    assert isinstance(plain.join().error, mcp_sync.RequestTimeout)
    assert plain.ended_at is not None and plain.ended_at - started < 1.0
    engine.close()


def test_max_total_timeout_is_the_hard_bound() -> None:
    wire, engine = started_engine()
    started = time.monotonic()
    call = Call(engine, timeout=0.3, reset_timeout_on_progress=True, max_total_timeout=0.8)
    wait_for(lambda: bool(wire.requests()))
    feed_progress(engine, wire.requests()[0]["params"]["_meta"]["progressToken"], 30, 0.1)
    error = call.join().error
    assert isinstance(error, mcp_sync.RequestTimeout) and "max_total_timeout" in str(error)
    assert call.ended_at is not None and 0.7 < call.ended_at - started < 2.0
    # the timed-out request was cancelled on the wire (by the background writer: #17.9)
    wait_for(lambda: any(m.get("method") == "notifications/cancelled" for m in wire.sent))
    engine.close()


# -- #8.9: bounded dispatch, coalesced progress, nothing after close ------------------------------


def test_notifications_beyond_the_bound_are_dropped_and_counted() -> None:
    """#8.9: the dispatch queue was unbounded: a stuck callback let a server grow it for ever."""
    release = threading.Event()
    seen: list[int] = []

    def on_notification(method: str, params: dict) -> None:
        release.wait(10)
        seen.append(params["n"])

    dispatcher = Dispatcher("wire", max_queued=100)
    _wire, engine = started_engine(on_notification=on_notification, dispatcher=dispatcher)
    started = time.monotonic()
    for n in range(5000):
        engine.message({"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}})
    assert time.monotonic() - started < 3  # the reader never blocks
    assert dispatcher.dropped >= 4800
    release.set()
    wait_for(lambda: len(seen) >= 5000 - dispatcher.dropped)
    assert seen == sorted(seen) and len(seen) <= 102  # in order, bounded
    engine.close()
    dispatcher.stop()


def test_progress_is_coalesced_only_past_the_bound_while_callbacks_are_behind() -> None:
    """#18.19: every value up to MAX_QUEUED_PROGRESS waiting is delivered in order (a burst was
    coalesced to one); past it the newest value replaces the last waiting one."""
    release = threading.Event()
    block = Dispatcher("wire")
    block.submit(release.wait, 10)  # the dispatch thread is busy
    got: list[float] = []
    wire, engine = started_engine(dispatcher=block)
    call = Call(engine, timeout=10, progress=lambda p, total, message: got.append(p))
    wait_for(lambda: bool(wire.requests()))
    request = wire.requests()[0]
    for step in range(3 * MAX_QUEUED_PROGRESS):
        engine.message({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": request["params"]["_meta"]["progressToken"], "progress": step}})
    engine.message({"jsonrpc": "2.0", "id": request["id"], "result": {}})
    release.set()
    call.join()
    # the first MAX_QUEUED_PROGRESS in order, the last of them replaced by the latest value, all before the answer
    assert got == [*range(MAX_QUEUED_PROGRESS - 1), 3 * MAX_QUEUED_PROGRESS - 1]
    engine.close()
    block.stop()


def test_no_callback_runs_after_stop_returns() -> None:
    """#8.9: stop() let queued callbacks run on after it returned (293 seen after close())."""
    dispatcher = Dispatcher("wire")
    ran: list[int] = []
    first_started = threading.Event()

    def slow_first() -> None:
        first_started.set()
        time.sleep(1.0)

    dispatcher.submit(slow_first)
    for n in range(100):
        dispatcher.submit(ran.append, n)
    first_started.wait(5)
    dispatcher.stop(timeout=0.2)
    assert ran == []
    time.sleep(1.2)  # the running callback has ended by now
    assert ran == [] and not dispatcher.thread.is_alive()  # type: ignore[union-attr]
    assert dispatcher.submit(ran.append, 1) is False


# -- #9.7: close releases waiters at once ---------------------------------------------------------


def test_close_releases_every_waiter_before_the_server_is_gone(no_leaks: None) -> None:
    """#9.7: waiters were released only once the server process had exited (here it lingers 3 s)."""
    client = mcp_sync.Client.stdio(sys.executable, [LOAD_SERVER, "--linger", "3"], mode="legacy", timeout=30)
    client.connect()
    calls: list[tuple[float | None, BaseException | None]] = []
    lock = threading.Lock()

    def wait_forever() -> None:
        try:
            client.call_tool("stall", timeout=None)
            outcome: BaseException | None = None
        except BaseException as exc:
            outcome = exc
        with lock:
            calls.append((time.monotonic(), outcome))

    threads = [threading.Thread(target=wait_forever, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    wait_for(lambda: len(client._engine._pending) == 8, timeout=10)  # type: ignore[union-attr]  # all 8 sent
    closing = time.monotonic()
    client.close()
    closed = time.monotonic()
    for thread in threads:
        thread.join(5)
    assert len(calls) == 8
    assert all(isinstance(error, mcp_sync.ConnectionClosed) for _, error in calls)
    released = max(at for at, _ in calls if at is not None) - closing
    # fixed: released at once (milliseconds); the regression waits for the server's 3 s exit
    assert released < 1.5, f"waiters released {released:.2f} s after close() began"
    assert closed - closing < 8  # close() itself stays bounded (shutdown waits, then signals)


# -- #9.1: an interrupt cancels on the wire -----------------------------------------------------


def cancelled_ids(client: mcp_sync.Client) -> list:
    return json.loads(client.call_tool("cancelled_log", timeout=5).text)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_ctrl_c_cancels_the_request_on_the_wire(no_leaks: None) -> None:
    """#9.1: KeyboardInterrupt while waiting left the request running on the server."""
    assert threading.current_thread() is threading.main_thread()

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with mcp_sync.Client.stdio(sys.executable, [LOAD_SERVER], mode="legacy", timeout=10) as client:
            assert cancelled_ids(client) == []
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            started = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                client.call_tool("slow", {"seconds": 20}, timeout=30)
            assert time.monotonic() - started < 2
            wait_for(lambda: len(cancelled_ids(client)) == 1, timeout=5)
            assert client.call_tool("echo", {"text": "still here"}, timeout=5).text == "still here"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_an_async_exception_in_a_waiting_thread_cancels_its_request() -> None:
    """#9.1: any BaseException raised in the waiting thread; a wait with no timeout never saw it."""
    wire, engine = started_engine()

    class Stop(BaseException):
        pass

    call = Call(engine, timeout=None)
    wait_for(lambda: bool(wire.requests()))
    request_id = wire.requests()[0]["id"]
    time.sleep(0.1)
    ident = call.thread.ident
    assert ident is not None
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(Stop))
    call.join(5)
    assert isinstance(call.error, Stop)
    wait_for(lambda: any(m.get("method") == "notifications/cancelled" for m in wire.sent))  # in the background
    cancels = [m for m in wire.sent if m.get("method") == "notifications/cancelled"]
    assert [c["params"]["requestId"] for c in cancels] == [request_id]
    later = Call(engine, timeout=5)
    wait_for(lambda: len(wire.requests()) == 2)
    engine.message({"jsonrpc": "2.0", "id": request_id, "result": {"late": 1}})  # ignored
    engine.message({"jsonrpc": "2.0", "id": wire.requests()[1]["id"], "result": {"ok": 1}})
    assert later.join().value == {"ok": 1}
    engine.close()


# -- #9.12 hook, #9.17 wording ------------------------------------------------------------------


def test_timeouts_and_closed_connections_carry_the_transport_diagnostics() -> None:
    wire, engine = started_engine()
    wire.diagnostics = lambda: "skipped 1 line that is not JSON-RPC: 'Server ready'"  # type: ignore[attr-defined]
    with pytest.raises(mcp_sync.RequestTimeout, match="Server ready"):
        engine.request("initialize", {}, timeout=0.1)
    call = Call(engine, timeout=5)
    wait_for(lambda: len(wire.requests()) == 2)
    engine.closed(mcp_sync.ConnectionClosed("the server exited"))
    assert "Server ready" in str(call.join().error)


def test_cancelled_says_why() -> None:
    """#9.17: the reason given to cancel() was not in the message."""
    wire, engine = started_engine()
    token = mcp_sync.CancellationToken()
    call = Call(engine, timeout=5, cancel=token)
    wait_for(lambda: bool(wire.requests()))
    token.cancel(reason="user pressed stop")
    assert "user pressed stop" in str(call.join().error)
    with pytest.raises(mcp_sync.Cancelled, match="user pressed stop"):
        engine.request("tools/list", {}, cancel=token)
    engine.close()


CHECKLIST_CODE = re.compile(r"\b(?:[A-Z]{1,2}\d{1,2})\b")


@pytest.mark.parametrize("module", [_engine, _threads, cancellation])
def test_docstrings_have_no_internal_checklist_codes(module: Any) -> None:
    """#9.17: checklist codes (K1, LG3, ...) are for comments and tests, not for users."""
    docs = [module.__doc__ or ""]
    for _, member in inspect.getmembers(module, lambda m: inspect.isclass(m) or inspect.isfunction(m)):
        if getattr(member, "__module__", None) != module.__name__:
            continue
        docs.append(member.__doc__ or "")
        for _, method in inspect.getmembers(member, inspect.isfunction):
            docs.append(method.__doc__ or "")
    found = sorted({code for doc in docs for code in CHECKLIST_CODE.findall(doc)})
    assert found == []


# -- over a real stdio reader ---------------------------------------------------------------------


def test_odd_answer_ids_over_stdio_keep_the_reader_alive(no_leaks: None) -> None:
    """#8.5 / #8.8 end to end: a list or object id used to kill the stdio reader (every call then
    failed with ConnectionClosed and the server was restarted); a float id was never matched."""
    with mcp_sync.Client.stdio(sys.executable, [LOAD_SERVER], mode="legacy", timeout=10) as client:
        client.connect()
        pid = client._engine.transport.pid  # type: ignore[union-attr]
        assert client.call_tool("answer_with_id", {"id": "float"}, timeout=3).text == "odd id"
        for bad in ([1], {"x": 1}):
            with pytest.raises(mcp_sync.RequestTimeout):
                client.call_tool("answer_with_id", {"id": bad}, timeout=0.5)
        assert client.call_tool("echo", {"text": "alive"}, timeout=3).text == "alive"
        assert client._engine.transport.pid == pid  # type: ignore[union-attr]


def test_progress_extends_a_call_over_stdio(no_leaks: None) -> None:
    """#9.19 end to end through Client._send (the public methods pass the two options through it)."""
    with mcp_sync.Client.stdio(sys.executable, [LOAD_SERVER], mode="legacy", timeout=10) as client:
        params = {"name": "progress", "arguments": {"count": 6, "interval": 0.2}}
        result = client._send("tools/call", params, timeout=0.5, reset_timeout_on_progress=True, max_total_timeout=10)
        assert result["content"][0]["text"] == "done"
        with pytest.raises(mcp_sync.RequestTimeout):
            client._send("tools/call", params, timeout=0.5)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs signal.setitimer")
def test_ctrl_c_closes_the_stream_on_modern_http(sdk_http_url: str, no_leaks: None) -> None:
    """#9.1 on modern HTTP: the interrupted request's stream is closed (that is the cancellation)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        with mcp_sync.Client.http(sdk_http_url, timeout=10) as client:
            assert client.era == "modern"
            transport = client._engine.transport  # type: ignore[union-attr]
            aborted: list[Any] = []
            real_abort = transport.abort

            def abort(request_id: Any) -> bool:
                aborted.append(request_id)
                return real_abort(request_id)  # type: ignore[no-any-return]

            transport.abort = abort
            signal.setitimer(signal.ITIMER_REAL, 0.5)
            started = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                client.call_tool("slow", {"seconds": 10}, timeout=30)
            assert time.monotonic() - started < 2
            assert len(aborted) == 1
            assert client.call_tool("echo", {"text": "still here"}, timeout=5).text == "still here"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_failing_cancellation_callback_does_not_stop_the_others() -> None:
    token = mcp_sync.CancellationToken()
    seen: list[str | None] = []

    def broken(reason: str | None) -> None:
        raise RuntimeError("bug in a callback")

    token.add_callback(broken)
    token.add_callback(seen.append)
    token.cancel("stop")
    assert seen == ["stop"] and token.cancelled


def test_no_notification_callback_runs_after_close_returns(no_leaks: None) -> None:
    """#8.9 end to end: callbacks queued behind a slow one ran on for seconds after close()."""
    started_at: list[float] = []

    def on_notification(method: str, params: dict) -> None:
        if method == "notifications/flood":
            started_at.append(time.monotonic())
            time.sleep(0.01)

    client = mcp_sync.Client.stdio(sys.executable, [LOAD_SERVER], mode="legacy", timeout=10,
                                   on_notification=on_notification)
    assert client.call_tool("flood", {"count": 2000}).text == "flooded 2000"
    wait_for(lambda: len(started_at) > 5)
    client.close()
    closed_at = time.monotonic()
    time.sleep(0.5)
    late = [at for at in started_at if at > closed_at]
    assert late == [], f"{len(late)} callbacks started after close() returned"
    assert len(started_at) < 2000  # most were discarded, not run


def test_server_requests_beyond_the_bound_are_refused_not_threaded() -> None:
    """#8.9 (the same class): each server request took a thread, without bound."""
    release = threading.Event()

    def handler(method: str, params: dict, request: object) -> dict:
        release.wait(10)
        return {}

    wire, engine = started_engine(on_server_request=handler)
    before = threading.active_count()
    for n in range(_engine.MAX_CONCURRENT_HANDLERS + 50):
        engine.message({"jsonrpc": "2.0", "id": f"s{n}", "method": "roots/list"})
    assert threading.active_count() - before <= _engine.MAX_CONCURRENT_HANDLERS
    refused = [m for m in wire.sent if "error" in m]
    assert len(refused) == 50 and all("busy" in m["error"]["message"] for m in refused)
    release.set()
    wait_for(lambda: len(wire.sent) == _engine.MAX_CONCURRENT_HANDLERS + 50)
    engine.close()


def test_the_deadline_counts_from_before_the_write() -> None:
    """#8.1 (engine part): the timeout only started once the write had returned.

    The write takes 1.2 s against a 1.0 s timeout (#22.6): fixed, the deadline has passed
    when the write returns and the call ends at once; the regression waits a whole second
    more. The bound, 0.5 s after the write returned, leaves 0.5 s either way."""
    written: list[float] = []

    class SlowWire(Wire):
        def send(self, message: dict, *, headers: Any = None) -> None:
            if "id" in message:  # the request (not the cancellation after it)
                time.sleep(1.2)  # a pipe the server is slow to drain
                written.append(time.monotonic())
            super().send(message, headers=headers)

    _, engine = started_engine(SlowWire())
    with pytest.raises(mcp_sync.RequestTimeout):
        engine.request("tools/list", {}, timeout=1.0)
    after_write = time.monotonic() - written[0]
    assert after_write < 0.5, f"the call ended {after_write:.2f} s after the write (the regression: 1.0 s)"
    engine.close()


def test_a_cancellation_write_that_blocks_never_holds_the_caller() -> None:
    """#17.9: the notice of a timed-out request was written on the caller's thread after its
    deadline (1 s more on a stuck stdio pipe; a hung HTTP POST: its whole timeout). It now goes
    to one background writer: the call returns at its deadline, at most MAX_QUEUED_CANCELS
    notices wait (the rest are dropped) and close() ends the writer."""
    release = threading.Event()

    class StuckNotices(Wire):
        def send(self, message: dict, *, headers: Any = None) -> None:
            if message.get("method") == "notifications/cancelled":
                release.wait(10)  # a POST to a server that does not answer
            super().send(message, headers=headers)

    wire, engine = started_engine(StuckNotices())
    try:
        for _ in range(3):
            started = time.monotonic()
            with pytest.raises(mcp_sync.RequestTimeout):
                engine.request("tools/call", {}, timeout=0.2)
            assert time.monotonic() - started < 0.2 + 0.3  # was 0.2 + however long the write blocks
        threads_before = threading.active_count()
        calls = [Call(engine, timeout=0.05) for _ in range(2 * _engine.MAX_QUEUED_CANCELS)]
        for call in calls:
            assert isinstance(call.join().error, mcp_sync.RequestTimeout)
        assert threading.active_count() <= threads_before  # one writer, not a thread per notice
        assert len(engine._cancels) <= _engine.MAX_QUEUED_CANCELS
        release.set()
        wait_for(lambda: not engine._cancel_writing)
        cancels = [m for m in wire.sent if m.get("method") == "notifications/cancelled"]
        assert 3 <= len(cancels) <= 1 + _engine.MAX_QUEUED_CANCELS
    finally:
        release.set()
        engine.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp_sync-cancel")]


# -- #22.7: error paths that decide whether somebody hangs ------------------------------------------


@pytest.mark.parametrize(
    "behaviour",
    ["returns a set", "refuses with unencodable data", "refuses as internal error with unencodable data"],
)
def test_an_answer_that_cannot_be_encoded_still_answers_the_server(behaviour: str) -> None:
    """#22.7: a handler's answer JSON cannot carry (a result, or the data of its refusal) is
    replaced by an error answer: the server always gets one, or it waits for ever. The third
    case was the hole: a refusal coded -32603 whose data cannot be encoded was taken for the
    fallback itself and dropped without an answer."""

    def handler(method: str, params: dict, request: object) -> Any:
        if behaviour == "returns a set":
            return {"roots": {1, 2}}
        code = -32603 if "internal" in behaviour else -32000
        raise mcp_sync.ServerRequestError("no", code=code, data={"x": object()})

    wire, engine = started_engine(EncodingWire(), on_server_request=handler)
    try:
        engine.message({"jsonrpc": "2.0", "id": "s1", "method": "roots/list"})
        wait_for(lambda: any(m.get("id") == "s1" for m in wire.sent))
        answers = [m for m in wire.sent if m.get("id") == "s1"]
        assert len(answers) == 1 and answers[0]["error"]["code"] == -32603, answers
        assert "result" not in answers[0]
    finally:
        engine.close()


def test_the_timeout_fires_once_progress_stops() -> None:
    """#22.7: with reset_timeout_on_progress, each progress restarts the 0.4 s timeout; when
    progress stops, the call times out 0.4 s after the last one. Fixed: about 0.4 s after it;
    the regression (the timer no longer running) waits for max_total_timeout, 20 s. The
    bound, 3 s, leaves 2.6 s of margin on a loaded machine and 17 s to the regression."""
    wire, engine = started_engine()
    try:
        call = Call(engine, timeout=0.4, reset_timeout_on_progress=True, max_total_timeout=20)
        wait_for(lambda: bool(wire.requests()))
        token = wire.requests()[0]["params"]["_meta"]["progressToken"]
        feed_progress(engine, token, 4, 0.15).join()  # 0.6 s of progress: past the first 0.4 s
        last_progress = time.monotonic()
        assert call.ended_at is None, call.error
        call.join(10)
        assert isinstance(call.error, mcp_sync.RequestTimeout), call.error
        assert "of the last progress notification" in str(call.error)
        assert call.ended_at is not None
        after = call.ended_at - last_progress
        assert after < 3, f"timed out {after:.2f} s after the last progress"
        assert after >= 0.3  # and not before its 0.4 s had passed
    finally:
        engine.close()
