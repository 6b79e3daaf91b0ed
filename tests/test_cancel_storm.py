"""#29.2: a call cut by its own timeout or cancel never leaves another call a connection that
is already closed.

The cause: urllib3 hands a connection back to the pool the moment its response body has been
read, before the exchange that used it has finished; a cancel or a deadline arriving then (after
the answer) still found its slot holding the connection and shut its socket down, after the
next request had taken it from the pool (urllib3's dropped-connection check had passed): that
request went out on a shut-down socket and failed with "the server closed the connection
without answering". The property: an abort only ever affects its own exchange, and no request
is ever sent on a connection an abort touched.

The abort is injected at each point of the hand-over, on a scripted keep-alive server, so each
case fails every time without the fix. (The storm of the issue, 16 threads x 100 calls against
the SDK server, still fails now and then after this fix: a second cause is open, see #29.2.)
"""

from __future__ import annotations

import socket
from typing import Any, Callable, Iterator

import pytest
import urllib3.connectionpool

from mcp_sync.transports import _http_common
from mcp_sync.transports._http_common import Slot, _TrackedHTTPConnection, _TrackedPool
from mcp_sync.transports.http import HttpTransport

from httpkit import RawServer, read_request

pytestmark = pytest.mark.timeout(60)

ANSWER = b'{"jsonrpc": "2.0", "id": 1, "result": {}}'


def keep_alive(conn: socket.socket) -> None:
    """Answer every request on the connection with a small JSON body, keeping it open."""
    while True:
        request = read_request(conn)
        if not request:
            return
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER)
        )


@pytest.fixture
def raw() -> Iterator[RawServer]:
    with RawServer(keep_alive) as server:
        yield server


def _first_exchange(transport: HttpTransport, url: str) -> Slot:
    """An exchange read to its end (its connection is back in the pool) whose slot is not
    finished yet: where a late cancel or deadline finds it."""
    slot = Slot()
    response = transport.exchange("POST", url, slot, headers={}, body=b"{}", safe_to_resend=False)
    assert transport.read_json(response)["id"] == 1
    return slot


def _second_exchange(transport: HttpTransport, url: str) -> Any:
    """A tools/call-like exchange (not safe to send twice): it must get its answer."""
    slot = Slot()
    response = transport.exchange("POST", url, slot, headers={}, body=b"{}", safe_to_resend=False)
    try:
        return transport.read_json(response)
    finally:
        slot.finish()
        response.close()


def _once(action: Callable[[], None]) -> Callable[[], None]:
    done = []

    def run() -> None:
        if not done:
            done.append(True)
            action()

    return run


# Where the late abort of the first exchange lands, relative to the second exchange taking
# the first one's connection from the pool.
HOOKS = ["in the pool", "taken from the pool", "sending on it", "waiting on it"]


@pytest.mark.parametrize("where", HOOKS)
def test_a_late_abort_never_touches_a_connection_back_in_the_pool(
    raw: RawServer, where: str, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """The first exchange's cancel or deadline fires after its answer was read: whenever it
    lands, the second exchange (which reuses the connection) gets its answer, and the
    connection stays open (one connection in all)."""
    transport = HttpTransport(raw.url)
    try:
        first = _first_exchange(transport, raw.url)
        late_abort = _once(first.abort)
        if where == "in the pool":
            late_abort()
        elif where == "taken from the pool":  # after urllib3's dropped-connection check: the race of #29.2
            get_conn = _TrackedPool._get_conn

            def taken(self: Any, timeout: Any = None) -> Any:
                conn = get_conn(self, timeout)
                late_abort()
                return conn

            monkeypatch.setattr(_TrackedPool, "_get_conn", taken)
        else:
            name = "request" if where == "sending on it" else "getresponse"
            original = getattr(_TrackedHTTPConnection, name)

            def hooked(self: Any, *args: Any, **kwargs: Any) -> Any:
                late_abort()
                return original(self, *args, **kwargs)

            monkeypatch.setattr(_TrackedHTTPConnection, name, hooked)
        assert _second_exchange(transport, raw.url)["id"] == 1
        assert first.aborted
    finally:
        transport.close()
    assert raw.connections == 1  # the abort left the pooled connection alone


def test_a_connection_its_abort_shut_down_is_never_reused(
    raw: RawServer, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """The abort came while the exchange still held the connection, but its answer was read in
    full anyway (it was already buffered): the connection goes back to the pool with its socket
    shut down. It is closed there, not handed out, even when urllib3's dropped-connection check
    does not see the shutdown (it looks once, before the request; an abort may come after)."""
    put_conn = _TrackedPool._put_conn
    monkeypatch.setattr(urllib3.connectionpool, "is_connection_dropped", lambda conn: False)
    transport = HttpTransport(raw.url)
    try:
        slot = Slot()

        def aborted_first(self: Any, conn: Any) -> None:  # the abort lands just before the hand-back
            slot.abort()
            put_conn(self, conn)

        monkeypatch.setattr(_TrackedPool, "_put_conn", aborted_first)
        response = transport.exchange("POST", raw.url, slot, headers={}, body=b"{}", safe_to_resend=False)
        assert transport.read_json(response)["id"] == 1
        monkeypatch.setattr(_TrackedPool, "_put_conn", put_conn)
        assert slot.aborted
        assert _second_exchange(transport, raw.url)["id"] == 1
    finally:
        transport.close()
    assert raw.connections == 2  # the shut-down connection was closed, and a new one made


def test_a_released_exchange_no_longer_times_its_old_socket(raw: RawServer, no_leaks: None) -> None:
    """After the hand-back, the exchange's slot holds no socket: setting its timeout (the wait
    for a POST stream's end) must not reach the socket another request may be using."""
    transport = HttpTransport(raw.url)
    try:
        first = _first_exchange(transport, raw.url)
        assert first.conn is None and first.sock is None
        assert not first.set_socket_timeout(0.02)
    finally:
        transport.close()


def test_the_release_hook_is_on_both_pool_classes() -> None:
    """HTTP and HTTPS pools both hand connections back through the slot (#29.2)."""
    for pool in (_http_common._TrackedPool, _http_common._TrackedHTTPSPool):
        assert issubclass(pool, _http_common._Releasing)
