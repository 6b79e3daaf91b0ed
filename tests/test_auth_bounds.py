"""Issue 17.8a: every exchange of the OAuth flow has an overall deadline.

A socket timeout bounds each read, not the exchange: a server that sends one byte a
second never trips it. These tests run a loopback server that does exactly that and
check that the flow gives up within its bound. Margins allow for a loaded 2-core machine.
"""

from __future__ import annotations

import socket
import threading
import time
from types import SimpleNamespace
from typing import Iterator

import pytest

import mcp_sync
from mcp_sync._oauth_flow import DISCOVERY, MAX_BODY, Http
from mcp_sync.transports._http_common import Slot

from httpkit import FakeServer, gzip_reply

TRICKLE_BYTES = 30  # the old code read on for this many seconds: the bounds below are far shorter
MARGIN = 3.0  # seconds of slack on top of each bound (a loaded, shared machine)


class SlowServer:
    """A loopback HTTP server that answers ``/.well-known/...`` one byte a second
    (headers and all with ``whole=True``, else prompt headers and a trickled body),
    and anything else with a 401 whose challenge points at its slow metadata."""

    def __init__(self, *, whole: bool = False) -> None:
        self.whole = whole
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self) -> None:
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self.threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            head = b""
            try:
                while b"\r\n\r\n" not in head and len(head) < 65536:
                    data = conn.recv(4096)
                    if not data:
                        return
                    head += data
            except OSError:
                return
            if b" /.well-known/" not in head.split(b"\r\n", 1)[0]:
                challenge = f'Bearer resource_metadata="{self.url}/.well-known/oauth-protected-resource/mcp"'
                conn.sendall(
                    f"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: {challenge}\r\n"
                    "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
                )
                return
            body = b" " * TRICKLE_BYTES
            head_out = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            head_out += b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            if self.whole:
                body, head_out = head_out + body, b""
            try:
                conn.sendall(head_out)
                for i in range(len(body)):
                    if self.stop.wait(1.0):
                        return
                    conn.sendall(body[i : i + 1])
            except OSError:
                return  # the client gave up: what the tests want

    def close(self) -> None:
        self.stop.set()
        self.accepter.join(5)
        self.listener.close()
        for thread in self.threads:
            thread.join(5)


@pytest.fixture(params=[False, True], ids=["slow-body", "slow-headers"])
def slow(request: pytest.FixtureRequest) -> Iterator[SlowServer]:
    server = SlowServer(whole=request.param)
    try:
        yield server
    finally:
        server.close()


def test_one_exchange_ends_at_its_timeout(slow: SlowServer) -> None:
    http = Http(2.0)
    started = time.monotonic()
    try:
        with pytest.raises(mcp_sync.AuthorizationError, match="deadline") as caught:
            http.get_json(f"{slow.url}/.well-known/oauth-protected-resource", DISCOVERY)
    finally:
        http.close()
    elapsed = time.monotonic() - started
    assert elapsed < 2.0 + MARGIN, f"a one-byte-a-second answer held the exchange {elapsed:.1f} s"
    assert caught.value.step == DISCOVERY


def test_the_flow_deadline_bounds_every_exchange(slow: SlowServer) -> None:
    """The caller's deadline wins over the (longer) per-exchange timeout."""
    oauth = mcp_sync.OAuth(timeout=30.0)
    challenge = f'Bearer resource_metadata="{slow.url}/.well-known/oauth-protected-resource/mcp"'
    response = SimpleNamespace(
        status_code=401, headers={"WWW-Authenticate": challenge}, url=f"{slow.url}/mcp", request=None
    )
    started = time.monotonic()
    with pytest.raises(mcp_sync.AuthorizationError):
        oauth.handle_challenge(response, deadline=started + 2.0)
    elapsed = time.monotonic() - started
    assert elapsed < 2.0 + MARGIN, f"the flow ran {elapsed:.1f} s past a 2 s deadline"


def test_a_passed_deadline_sends_nothing() -> None:
    http = Http(30.0, deadline=time.monotonic() - 1)
    try:
        with pytest.raises(mcp_sync.AuthorizationError, match="deadline has passed"):
            http.get_json("http://127.0.0.1:9/.well-known/oauth-protected-resource")
    finally:
        http.close()


def test_connect_is_not_held_by_trickled_metadata(slow: SlowServer) -> None:
    """End to end: the 401's resource metadata arrives a byte a second; connect fails in time."""
    oauth = mcp_sync.OAuth(timeout=2.0)
    started = time.monotonic()
    with pytest.raises(mcp_sync.AuthorizationError):
        with mcp_sync.Client.http(f"{slow.url}/mcp", auth=oauth, mode="modern", timeout=10) as client:
            client.connect()
    elapsed = time.monotonic() - started
    assert elapsed < 2.0 + MARGIN, f"connect was held {elapsed:.1f} s by a one-byte-a-second server"


def test_another_threads_flow_is_awaited_no_longer_than_the_deadline() -> None:
    oauth = mcp_sync.OAuth(timeout=30.0)
    response = SimpleNamespace(status_code=401, headers={}, url="http://127.0.0.1:9/mcp", request=None)
    with oauth._flow_lock:  # another thread's interactive flow, waiting for its user
        started = time.monotonic()
        with pytest.raises(mcp_sync.AuthorizationError, match="deadline"):
            oauth.handle_challenge(response, deadline=started + 0.5)
        elapsed = time.monotonic() - started
    assert elapsed < 0.5 + MARGIN


def test_the_clients_timeout_bounds_the_whole_flow(slow: SlowServer) -> None:
    """End to end with the OAuth default (30 s per exchange): the client's 3 s timeout wins."""
    started = time.monotonic()
    client = mcp_sync.Client.http(f"{slow.url}/mcp", auth=mcp_sync.OAuth(), mode="modern", timeout=3)
    try:
        with pytest.raises(mcp_sync.MCPError):
            client.connect()
    finally:
        client.close()
    elapsed = time.monotonic() - started
    assert elapsed < 3.0 + MARGIN, f"a 3 s client was held {elapsed:.1f} s by a one-byte-a-second server"


def test_a_compressed_body_is_capped_after_decompression() -> None:
    """A few kilobytes of gzip that expand past MAX_BODY are refused as they expand."""
    with FakeServer("modern") as server:
        server.override = lambda request: gzip_reply(b" " * (MAX_BODY * 4))
        http = Http(10.0)
        try:
            with pytest.raises(mcp_sync.AuthorizationError, match=f"exceeds {MAX_BODY} bytes"):
                http.get_json(f"{server.url}/.well-known/oauth-protected-resource")
        finally:
            http.close()


def test_an_exchange_inside_a_transport_exchange_leaves_its_slot_alone() -> None:
    """OAuth.headers_for may renew a token (an exchange of the flow) while the transport's own
    exchange is being sent on this thread: the transport's slot must still track its sockets after."""
    from mcp_sync.transports import _http_common

    outer = Slot()
    with FakeServer("modern") as server:
        server.override = lambda request: gzip_reply(b"{}")
        http = Http(10.0)
        _http_common._local.slot = outer
        try:
            assert http.get_json(f"{server.url}/.well-known/oauth-protected-resource") == {}
            assert _http_common._local.slot is outer
        finally:
            _http_common._local.slot = None
            http.close()
