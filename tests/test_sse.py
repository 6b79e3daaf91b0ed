"""The deprecated HTTP+SSE transport (2024-11-05, LG14): directly and as Client.http's fallback."""

from __future__ import annotations

import time
from typing import Iterator

import pytest
from helpers import in_thread, wait_until

import mcp_sync
from mcp_sync.transports import http as http_module
from mcp_sync.transports.sse import SseTransport

from httpkit import FakeServer, Reply, Request, Sink, SsePeer, sse_reply

pytestmark = pytest.mark.timeout(60)



def test_sse_transport_against_everything(everything_sse_url: str, no_leaks: None) -> None:
    """LG14: GET the stream, POST to the endpoint event's URL, answers arrive on the stream."""
    with mcp_sync.Client.sse(everything_sse_url) as client:
        assert client.era == "legacy"
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
        assert client.call_tool("get-sum", {"a": 2, "b": 3}).text == "The sum of 2 and 3 is 5."
        seen: list[float] = []
        out = client.call_tool(
            "trigger-long-running-operation", {"duration": 0.4, "steps": 2}, progress=lambda p, t, m: seen.append(p)
        )
        assert "completed" in out.text and seen == [1, 2]


def test_sse_cancel_sends_notification(no_leaks: None) -> None:
    """LG6: no per-request stream, so abort() is False and the engine sends notifications/cancelled
    naming the timed-out request (#22.3: the notification itself is checked, on the wire)."""
    with FakeServer("legacy") as fake, SsePeer(fake) as peer, mcp_sync.Client.sse(fake.url) as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("hang", {}, timeout=0.3)
        assert client.call_tool("echo", {"message": "after"}).text == '{"message": "after"}'
        hung = [m for m in peer.seen("tools/call") if m["params"]["name"] == "hang"]
        assert len(hung) == 1
        assert wait_until(lambda: peer.seen("notifications/cancelled"), 5)
        cancelled = peer.seen("notifications/cancelled")
        assert [m["params"]["requestId"] for m in cancelled] == [hung[0]["id"]]


def test_sse_stream_dropped_mid_session_fails_pending_calls_at_once(no_leaks: None) -> None:
    """#22.7: when the server ends the event stream mid-session, every call waiting for an
    answer fails at once with ConnectionClosed (their answers can only come on that stream),
    not at its timeout. Bound: 5 s against a 60 s call timeout (the regression waits 60 s)."""
    with FakeServer("legacy") as fake, SsePeer(fake) as peer:
        client = mcp_sync.Client.sse(fake.url, timeout=60)
        try:
            client.connect()
            waiter, box = in_thread(lambda: client.call_tool("hang", {}))
            assert wait_until(lambda: [m for m in peer.seen("tools/call") if m["params"]["name"] == "hang"], 5)
            started = time.monotonic()
            with pytest.raises(mcp_sync.ConnectionClosed):
                client.call_tool("drop", {})
            waiter.join(5)
            assert not waiter.is_alive(), "the waiting call was not failed when the stream ended"
            assert isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
            assert box["at"] - started < 5
        finally:
            client.close()


def test_http_falls_back_to_sse(everything_sse_url: str, no_leaks: None) -> None:
    """Section 4 step 6: Client.http on an HTTP+SSE URL: initialize gets 404, a GET shows the
    endpoint event, and the client carries on over HTTP+SSE; the era is cached per origin."""
    with mcp_sync.Client.http(everything_sse_url) as client:
        assert client.era == "legacy"
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
        assert client._engine is not None and client._engine.transport.delegate is not None  # type: ignore[attr-defined]
    assert http_module.cached_era(everything_sse_url) == "sse"
    with mcp_sync.Client.http(everything_sse_url) as client:  # straight to HTTP+SSE this time
        assert client.call_tool("echo", {"message": "again"}).text == "Echo: again"


def _sse_endpoint(data: str):  # type: ignore[no-untyped-def]
    def override(request: Request) -> Reply | None:
        if request.method == "GET":
            return sse_reply(f"event: endpoint\ndata: {data}")
        return None

    return override


def test_endpoint_on_another_origin_refused(no_leaks: None) -> None:
    """LG14: the endpoint is resolved against the SSE URL and must stay on its origin."""
    with FakeServer("legacy") as fake:
        fake.override = _sse_endpoint(f"http://localhost:{fake.port}/message")
        with pytest.raises(mcp_sync.ProtocolError, match="another origin"):
            mcp_sync.connect({"url": fake.url, "type": "sse", "headers": {"Authorization": "Bearer x"}})
        assert not fake.seen(http_method="POST")


def test_first_event_must_be_endpoint(no_leaks: None) -> None:
    with FakeServer("legacy") as fake:
        fake.override = lambda r: sse_reply('data: {"jsonrpc":"2.0","method":"x"}') if r.method == "GET" else None
        transport = SseTransport(fake.url, endpoint_timeout=5)
        with pytest.raises(mcp_sync.ProtocolError, match="not 'endpoint'"):
            transport.start(Sink())


def test_relative_endpoint_and_headers(no_leaks: None) -> None:
    """The endpoint may be relative; caller headers go on the GET and on every POST."""
    with FakeServer("legacy") as fake:
        session: list[str] = []

        def override(request: Request) -> Reply | None:
            if request.method == "GET":
                return Reply(200, {"Content-Type": "text/event-stream"}, _stream(session))
            if request.path.startswith("/message"):
                session.append(request.body.decode())
                return Reply(202)
            return None

        fake.override = override
        transport = SseTransport(fake.url, headers={"X-Team": "red"})
        transport.start(Sink())
        try:
            transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        finally:
            transport.close()
        assert transport.endpoint == f"http://127.0.0.1:{fake.port}/message?s=1"
        assert all(r.headers.get("x-team") == "red" for r in fake.requests)
        assert session == ['{"jsonrpc":"2.0","method":"notifications/initialized"}']


def _stream(session: list[str]) -> Iterator[bytes]:
    yield b"event: endpoint\ndata: /message?s=1\n\n"
    for _ in range(50):  # stay open a little, like a real stream, until the client closes
        if session:
            return
        time.sleep(0.05)
        yield b": ping\n\n"
