"""Issue 17.8c: browser_authorize's deadline holds whatever a local program does to the
redirect listener: a connection dripping one byte a second, idle connections, a flood of
them. The old one-request-at-a-time server looked at the deadline only between requests.
Margins allow for a loaded 2-core machine. Loopback only."""

from __future__ import annotations

import errno
import io
import socket
import threading
import time
from typing import Any, Callable, Iterator

import pytest
import requests

import mcp_sync
from mcp_sync import _browser_auth
from mcp_sync.auth import browser_authorize

pytestmark = pytest.mark.timeout(60)
MARGIN = 3.0


def connect_when_listening(port: int, within: float = 5.0) -> socket.socket:
    deadline = time.monotonic() + within
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=2)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class Local:
    """Local programs poking at the listener, each in a thread."""

    def __init__(self) -> None:
        self.threads: list[threading.Thread] = []
        self.stop = threading.Event()
        self.socks: list[socket.socket] = []

    def run(self, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        self.threads.append(thread)

    def drip(self, port: int, data: bytes, closed: list[float] | None = None) -> None:
        """Send ``data`` one byte a second; note in ``closed`` when the server drops the connection."""

        def go() -> None:
            sock = connect_when_listening(port)
            self.socks.append(sock)
            sock.settimeout(1.0)
            for i in range(len(data)):
                try:
                    sock.sendall(data[i : i + 1])
                    if sock.recv(1) == b"":  # the server hung up
                        break
                except socket.timeout:
                    pass  # the byte went out, nothing came back: drip on
                except OSError:
                    break
                if self.stop.is_set():
                    return
            if closed is not None:
                closed.append(time.monotonic())

        self.run(go)

    def idle(self, port: int, count: int) -> threading.Event:
        """Open ``count`` connections that never send; the event is set once they all are."""
        opened = threading.Event()

        def go() -> None:
            for _ in range(count):
                if self.stop.is_set():
                    return
                try:
                    self.socks.append(connect_when_listening(port))
                except OSError:
                    return  # the listener is gone: the test is over
            opened.set()

        self.run(go)
        return opened

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)
        for sock in self.socks:
            sock.close()


@pytest.fixture
def local() -> Iterator[Local]:
    programs = Local()
    yield programs
    programs.close()


def url_for(port: int, state: str = "st4te") -> str:
    return f"http://127.0.0.1:9/authorize?redirect_uri=http%3A%2F%2F127.0.0.1%3A{port}%2Fcb&state={state}"


def authorize(port: int, timeout: float) -> str:
    return browser_authorize(url_for(port), timeout=timeout, open_browser=False, out=io.StringIO())


def test_a_dripping_client_does_not_hold_the_deadline(reserve_port: Any, local: Local) -> None:
    port = reserve_port()
    local.drip(port, b"GET /cb?state=st4te&code=x HTTP/1.1\r\n")  # 38 bytes: 38 s at a byte a second
    started = time.monotonic()
    with pytest.raises(mcp_sync.AuthorizationError, match="timed out"):
        authorize(port, timeout=3)
    elapsed = time.monotonic() - started
    assert elapsed < 3 + MARGIN, f"browser_authorize(timeout=3) was held {elapsed:.1f} s"


def real_redirect(
    port: int, answers: list[int], after: float, first: threading.Event | None = None
) -> Callable[[], None]:
    def go() -> None:
        time.sleep(after)
        if first is not None:
            first.wait(10)
        answers.append(requests.get(f"http://127.0.0.1:{port}/cb?code=the-code&state=st4te", timeout=5).status_code)

    return go


def test_the_redirect_is_served_while_other_connections_stall(reserve_port: Any, local: Local) -> None:
    port = reserve_port()
    local.drip(port, b"GET /cb?state=st4te HTTP/1.1\r\n")
    local.idle(port, 3)  # a browser's preconnects, or anything else that never sends
    answers: list[int] = []
    local.run(real_redirect(port, answers, after=0.5))
    started = time.monotonic()
    landed = authorize(port, timeout=10)
    assert landed == f"http://127.0.0.1:{port}/cb?code=the-code&state=st4te"
    assert time.monotonic() - started < 0.5 + MARGIN
    local.close()
    assert answers == [200]


def test_a_flood_of_idle_connections_does_not_keep_the_redirect_out(reserve_port: Any, local: Local) -> None:
    port = reserve_port()
    flooded = local.idle(port, 3 * getattr(_browser_auth, "MAX_CONNECTIONS", 16))
    answers: list[int] = []
    local.run(real_redirect(port, answers, after=0.0, first=flooded))
    started = time.monotonic()
    assert "code=the-code" in authorize(port, timeout=10)
    assert flooded.is_set()
    assert time.monotonic() - started < MARGIN
    local.close()
    assert answers == [200]


def test_slow_connections_are_dropped_at_their_own_deadline(
    reserve_port: Any, local: Local, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_browser_auth, "CONNECTION_TIMEOUT", 1.0, raising=False)
    port = reserve_port()
    closed: list[float] = []
    started = time.monotonic()
    local.drip(port, b"GET /cb?state=st4te HTTP/1.1\r\n", closed)
    answers: list[int] = []
    local.run(real_redirect(port, answers, after=1.0 + MARGIN + 1.0))
    assert "code=the-code" in authorize(port, timeout=20)
    assert closed and closed[0] - started < 1.0 + MARGIN, "the dripping connection was not dropped"


def test_an_oversized_request_head_is_refused(reserve_port: Any, local: Local) -> None:
    port = reserve_port()
    replies: list[bytes] = []

    def oversized() -> None:
        sock = connect_when_listening(port)
        with sock:
            try:
                sock.sendall(
                    b"GET /cb?state=st4te HTTP/1.1\r\nX: " + b"a" * (getattr(_browser_auth, "MAX_HEAD", 16384) + 10)
                )
                replies.append(sock.recv(100))
            except OSError:
                replies.append(b"reset")

    local.run(oversized)
    answers: list[int] = []
    local.run(real_redirect(port, answers, after=1.0))
    assert "code=the-code" in authorize(port, timeout=10)
    local.close()
    assert replies and (replies[0].startswith(b"HTTP/1.1 431") or replies[0] == b"reset")
    assert answers == [200]


@pytest.mark.parametrize(
    ("request_line", "status"),
    [(b"POST /cb?state=st4te HTTP/1.1", b"405"), (b"GET http://x/cb HTTP/1.1", b"400"), (b"nonsense", b"400")],
)
def test_malformed_requests_are_answered_and_ignored(
    reserve_port: Any, local: Local, request_line: bytes, status: bytes
) -> None:
    port = reserve_port()
    replies: list[bytes] = []

    def send() -> None:
        with connect_when_listening(port) as sock:
            sock.sendall(request_line + b"\r\nHost: x\r\n\r\n")
            replies.append(sock.recv(100))

    local.run(send)
    answers: list[int] = []
    local.run(real_redirect(port, answers, after=0.5))
    assert "code=the-code" in authorize(port, timeout=10)
    local.close()
    assert replies and replies[0].split(b" ")[1] == status


class _OutOfDescriptors(socket.socket):
    """A listener whose accept() fails as it does when the process has no file descriptor left."""

    def accept(self):  # type: ignore[no-untyped-def]
        raise OSError(errno.EMFILE, "Too many open files")


def test_out_of_file_descriptors_the_listener_backs_off_instead_of_spinning() -> None:
    """A connection is pending but accept() fails with EMFILE: the listener stays readable, and
    retrying at once spun a core until the deadline (about 1 s of CPU per second waited). Now it
    waits ACCEPT_BACKOFF between tries: well under half the wall time in CPU on a loaded machine."""
    listener = _OutOfDescriptors(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    pending = socket.create_connection(listener.getsockname(), timeout=2)
    try:
        wall, cpu = time.monotonic(), time.thread_time()
        assert _browser_auth._serve(listener, _browser_auth._Redirect("/cb", "s"), time.monotonic() + 1.0) is None
        wall, cpu = time.monotonic() - wall, time.thread_time() - cpu
    finally:
        pending.close()
        listener.close()
    assert 0.9 <= wall < 1.0 + MARGIN  # the deadline still holds
    assert cpu < 0.4, f"{cpu:.2f} s of CPU in {wall:.2f} s: spinning on a listener it cannot accept from"


def test_out_of_file_descriptors_the_oldest_connection_makes_room() -> None:
    """With connections open, EMFILE drops the oldest (freeing a descriptor) and accepts again."""
    import selectors

    calls: list[str] = []

    class FailsOnce(socket.socket):
        def accept(self):  # type: ignore[no-untyped-def]
            calls.append("accept")
            if len(calls) == 1:
                raise OSError(errno.EMFILE, "Too many open files")
            raise BlockingIOError

    listener = FailsOnce(socket.AF_INET, socket.SOCK_STREAM)
    old, new = socket.socketpair()
    selector = selectors.DefaultSelector()
    connections: dict[socket.socket, _browser_auth._Connection] = {}
    dropped: list[socket.socket] = []
    try:
        selector.register(old, selectors.EVENT_READ)
        connections[old] = _browser_auth._Connection(old, time.monotonic() + 5)

        def drop(connection: _browser_auth._Connection) -> None:
            dropped.append(connection.sock)
            connections.pop(connection.sock)
            selector.unregister(connection.sock)

        assert _browser_auth._accept(listener, selector, connections, drop, time.monotonic() + 5) is True
        assert dropped == [old] and calls == ["accept", "accept"]
    finally:
        selector.close()
        for sock in (listener, old, new):
            sock.close()
