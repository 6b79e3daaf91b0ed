"""#29.2: a server restart under load: a real SDK HTTP server (tests/servers/sdk_server.py) is
killed while 12 threads call it through one client, stays down, and is started again on the
same port. What a web app needs from the client then:

- a request fails only inside the outage (from the kill until the server listens again, plus a
  small margin for a call already waiting out its retries);
- each failure is a :class:`mcp_sync.ServerUnavailable` (what the documented Flask pattern maps
  to 503 + Retry-After), never a bare ConnectionClosed;
- the same client serves again once the server is back, without being rebuilt.

Both eras: modern (stateless POSTs) and legacy (the restart loses the session: the transport
starts a new one).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from typing import Any, Callable, Iterator

import listening
import pytest

import mcp_sync
from mcp_sync.transports.http import HttpTransport

from conftest import PY, SDK_SERVER, refused_port
from httpkit import FakeServer, RawServer, Reply, Request, Sink, read_request

pytestmark = pytest.mark.timeout(120)

THREADS = 12
#: The outage: the server is down at least this long (then starting it takes its own time).
DOWN_S = 1.0
#: How long after the server listens again a failure may still be reported: a call that was
#: waiting out its retry backoff when the server came back (the backoff is at most 0.4 s, a
#: legacy session is renewed on the first refused request).
MARGIN_S = 1.5


def _start(port: int = 0) -> listening.Started:
    """The SDK server on ``port``: 0 (a free port, said by the server) the first time, then the
    port it had, when it is started again (a restart is on the same port)."""
    return listening.start([PY, SDK_SERVER, "http", "--port", str(port)], ready_timeout=30)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL, as a crash or an orchestrator's hard restart: no goodbye on any connection."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


@contextlib.contextmanager
def _server() -> Iterator[list[listening.Started]]:
    started = [_start()]
    try:
        yield started
    finally:
        for each in started:
            if each.proc.poll() is None:
                _kill(each.proc)


def _load(client: mcp_sync.Client, stop: threading.Event, log: list[tuple[float, float, Any]], n: int) -> None:
    """Calls in a row, alternating a tool call and a list, each logged as (start, end, outcome)."""
    i = 0
    while not stop.is_set():
        i += 1
        start = time.monotonic()
        try:
            if i % 2:
                outcome: Any = client.call_tool("echo", {"text": f"{n}-{i}"}).text == f"{n}-{i}"
            else:
                outcome = any(tool.name == "echo" for tool in client.list_tools().items)
        except Exception as exc:  # every failure is kept and judged below
            outcome = exc
        log.append((start, time.monotonic(), outcome))


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_restart_under_load(mode: str) -> None:
    log: list[tuple[float, float, Any]] = []
    stop = threading.Event()
    with _server() as servers, mcp_sync.Client.http(f"http://127.0.0.1:{servers[0].port}/mcp", mode=mode,
                                                    cache=False, timeout=10) as client:
        assert client.list_tools().items  # connected before the load starts
        threads = [threading.Thread(target=_load, args=(client, stop, log, n)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(1.5)
            killed = time.monotonic()
            _kill(servers[0].proc)
            time.sleep(DOWN_S)
            servers.append(_start(servers[0].port))
            back = time.monotonic()
            time.sleep(2.0)
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        assert not any(thread.is_alive() for thread in threads)
        # The same client, not rebuilt, still serves.
        assert client.call_tool("echo", {"text": "after"}).text == "after"

    failures = [(start, end, outcome) for start, end, outcome in log if outcome is not True]
    wrong = [outcome for _, _, outcome in failures if not isinstance(outcome, Exception)]
    assert not wrong, f"wrong answers: {wrong[:3]}"
    unmapped = [repr(outcome) for _, _, outcome in failures if not isinstance(outcome, mcp_sync.ServerUnavailable)]
    assert not unmapped, f"{len(unmapped)} failures an app cannot map to 503: {unmapped[:3]}"
    for _, _, outcome in failures:
        assert isinstance(outcome, mcp_sync.ServerUnavailable)
        assert outcome.retry_after is not None and 0 < outcome.retry_after <= 5, outcome.retry_after
    outside = [(round(end - killed, 2), repr(outcome)) for _, end, outcome in failures
               if not killed <= end <= back + MARGIN_S]
    assert not outside, f"failures outside the outage ({back - killed:.2f} s after the kill): {outside[:3]}"
    before = [ok for start, end, ok in log if end < killed]
    after = [ok for start, end, ok in log if start > back + MARGIN_S]
    assert before and all(ok is True for ok in before)
    assert after and all(ok is True for ok in after), "the client does not serve again after the restart"


# -- the classification, on scripted servers ------------------------------------------------
# (Below HTTP, for what a real server does only by accident of timing: reset mid-upload, die
# after reading a request.)


def _answer(conn: socket.socket, request: bytes) -> None:
    body = json.loads(request.split(b"\r\n\r\n", 1)[1])
    answer = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [], "content": []}}).encode()
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (len(answer), answer))


def _reset(conn: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0), as a process that dies with data unread does."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def _send(url: str, method: str, params: dict[str, Any], **options: Any) -> tuple[Sink, float]:
    sink = Sink()
    transport = HttpTransport(url, **options)
    transport.start(sink)
    started = time.monotonic()
    try:
        transport.send_inline({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
    finally:
        transport.close()
    return sink, time.monotonic() - started


def test_refused_connects_are_sent_again_then_raise_server_unreachable(no_leaks: None) -> None:
    """Nothing listens: the connects are refused, which proves the server saw nothing, so even a
    tools/call is tried again (max_retries times, with backoff); what is left is a
    ServerUnreachable (a ServerUnavailable, a ConnectionClosed) that says it never ran."""
    with refused_port() as port:
        sink, elapsed = _send(f"http://127.0.0.1:{port}/mcp", "tools/call", {"name": "charge"}, max_retries=2)
    [(request_id, error)] = sink.failures
    assert request_id == 7 and isinstance(error, mcp_sync.ServerUnreachable)
    assert isinstance(error, mcp_sync.ServerUnavailable) and isinstance(error, mcp_sync.ConnectionClosed)
    assert error.may_have_run is False and error.status is None and error.retry_after == 1.0
    assert "connection refused" in str(error) and "may have" not in str(error)
    assert elapsed >= 0.1 + 0.2  # two backoffs: it was tried three times


def test_a_tools_call_whose_upload_is_reset_is_sent_again(no_leaks: None) -> None:
    """The server reads the request's head and resets the connection while the body is still
    being written (as one that dies mid-upload): the write fails with bytes unsent, the server
    never had the whole request, so even a tools/call is sent again, and gets its answer."""
    seen: list[int] = []

    def behaviour(conn: socket.socket) -> None:
        seen.append(1)
        if len(seen) == 1:
            conn.recv(1024)  # the head, not the 8 MB body
            _reset(conn)
            return
        _answer(conn, read_request(conn))

    with RawServer(behaviour) as raw:
        sink, _ = _send(raw.url, "tools/call", {"name": "upload", "arguments": {"data": "x" * 8_000_000}})
    assert sink.failures == []
    assert [message["id"] for message in sink.messages] == [7]
    assert len(seen) == 2


def _read_then_close(seen: list[bytes]) -> Callable[[socket.socket], None]:
    """Read the whole request, then close without answering (a server killed while running it);
    a second request gets its answer."""

    def behaviour(conn: socket.socket) -> None:
        request = read_request(conn)
        seen.append(request)
        if len(seen) > 1:
            _answer(conn, request)

    return behaviour


def test_a_tools_call_cut_off_after_it_was_sent_is_not_sent_again(no_leaks: None) -> None:
    """Sent whole, then the connection ended without an answer: the call may have run, so it is
    not sent again, and the error (a ServerUnreachable, mapped to 503) says so."""
    seen: list[bytes] = []
    with RawServer(_read_then_close(seen)) as raw:
        sink, _ = _send(raw.url, "tools/call", {"name": "charge"})
    [(request_id, error)] = sink.failures
    assert request_id == 7 and isinstance(error, mcp_sync.ServerUnreachable)
    assert error.may_have_run is True
    assert "may have reached the server and run" in str(error)
    assert len(seen) == 1  # sent once


def test_a_list_cut_off_after_it_was_sent_is_sent_again(no_leaks: None) -> None:
    """The same failure for a list, which is safe to repeat: sent again, answered."""
    seen: list[bytes] = []
    with RawServer(_read_then_close(seen)) as raw:
        sink, _ = _send(raw.url, "tools/list", {})
    assert sink.failures == []
    assert [message["id"] for message in sink.messages] == [7]
    assert len(seen) == 2


def _half_then_gone() -> Iterator[bytes]:
    """A chunked body that stops in the middle: the server's connection ends there."""
    yield b'{"jsonrpc": "2.0", "id": '
    raise OSError("the server went away")


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_a_list_whose_answer_breaks_off_is_sent_again_by_the_client(mode: str, no_leaks: None) -> None:
    """The answer's body breaks off (headers, then half the body, then the end): the session
    sends a list again as a new request, in both eras; a tools/call is not, and raises a
    ServerUnreachable that says it may have run."""
    broken = {"count": 0}

    with FakeServer(mode) as fake, mcp_sync.Client.http(fake.url, mode=mode, cache=False, timeout=10) as client:
        client.connect()

        def override(request: Request) -> Reply | None:
            if request.rpc_method in ("tools/list", "tools/call") and broken["count"] < 1 + (
                request.rpc_method == "tools/call"
            ):
                broken["count"] += 1
                return Reply(200, {"Content-Type": "application/json"}, _half_then_gone())
            return None

        fake.override = override
        assert [tool.name for tool in client.list_tools().items] == ["echo"]
        broken["count"] = 0
        with pytest.raises(mcp_sync.ServerUnreachable, match="broke off") as caught:
            client.call_tool("echo", {"text": "x"})
        assert caught.value.may_have_run is True
