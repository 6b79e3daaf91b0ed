"""The deprecated HTTP+SSE transport (2024-11-05) when things go wrong: a server that dies or
drops the stream mid-session (every waiting call fails at once), streams that never name an
endpoint or cannot be read, refused GETs and POSTs, requests the server never acknowledges,
events that are not messages or not JSON, and close() while Client.http falls back to it.
Real peers: server-everything's sse mode, and the scripted SsePeer (httpkit) for faults."""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from helpers import in_thread, wait_until

import mcp_sync
from mcp_sync.transports.http import HttpTransport
from mcp_sync.transports.sse import SseTransport

from conftest import everything_cmd, running_server
from httpkit import FakeServer, Reply, Request, Sink, SsePeer, endless_sse, json_reply, sse_reply

pytestmark = pytest.mark.timeout(60)


def _http_transport(client: mcp_sync.Client) -> HttpTransport:
    transport = client.transport
    assert isinstance(transport, HttpTransport)
    return transport


def test_server_everything_dying_mid_call_fails_the_waiting_call_at_once(everything_js: Path, no_leaks: None) -> None:
    """#22.7 with a real server: server-everything (sse mode) is stopped while a call waits for
    its answer on the stream: the call fails with ConnectionClosed at once (its answer could
    only come on that stream), not after its 60 s timeout, and the client knows it is down."""
    with running_server(everything_cmd(everything_js, "sse"), env={"PORT": "0"}) as server:
        client = mcp_sync.Client.sse(f"http://127.0.0.1:{server.port}/sse", timeout=60, restart=False)
        client.connect()
        progress = threading.Event()
        waiter, box = in_thread(lambda: client.call_tool(
            "trigger-long-running-operation", {"duration": 30, "steps": 30}, progress=lambda *_: progress.set()))
        assert progress.wait(10), "the long-running operation never reported progress"
        stopped = time.monotonic()
    try:
        waiter.join(10)
        assert not waiter.is_alive(), "the waiting call was not failed when the server went away"
        assert isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
        assert box["at"] - stopped < 5
        assert "HTTP+SSE stream" in str(box["error"])
    finally:
        client.close()


def test_a_stream_with_no_endpoint_event_times_out(no_leaks: None) -> None:
    """start() waits endpoint_timeout for the endpoint event, then fails and ends the stream."""
    with FakeServer("legacy") as fake:
        fake.override = lambda r: Reply(200, {"Content-Type": "text/event-stream"}, endless_sse()) if (
            r.method == "GET") else None
        transport = SseTransport(fake.url, endpoint_timeout=0.3)
        with pytest.raises(mcp_sync.ConnectionClosed, match=r"no 'endpoint' event within 0.3 s"):
            transport.start(Sink())
        assert transport.notification_stream is None


def test_a_stream_that_ends_before_the_endpoint_event(no_leaks: None) -> None:
    with FakeServer("legacy") as fake:
        fake.override = lambda r: sse_reply(": hello", "id: 1\nretry: 10") if r.method == "GET" else None
        with pytest.raises(mcp_sync.ConnectionClosed, match="the stream ended before the 'endpoint' event"):
            SseTransport(fake.url, endpoint_timeout=10).start(Sink())


def test_a_refused_connection_fails_start(no_leaks: None) -> None:
    with FakeServer("legacy") as fake:
        url = fake.url
    client = mcp_sync.Client.sse(url, max_retries=0)
    with pytest.raises(mcp_sync.ConnectionClosed, match=r"GET .* failed: connection refused"):
        client.connect()
    client.close()


def test_a_url_that_is_no_sse_stream_fails_start_with_its_status(no_leaks: None) -> None:
    """A Streamable HTTP (modern) server answers the GET 405: that status is the error."""
    with FakeServer("modern") as fake:
        client = mcp_sync.Client.sse(fake.url)
        with pytest.raises(mcp_sync.ProtocolError, match=r"GET \(HTTP\+SSE stream\): HTTP 405") as failure:
            client.connect()
        client.close()
    assert failure.value.status == 405


def test_events_before_the_endpoint_and_other_events_are_passed_over(no_leaks: None) -> None:
    """A priming event (an id and a retry, no data) may come before the endpoint event; events
    other than "message" (a ping with data) and blocks without data are not messages."""
    seen: list[str] = []
    with FakeServer("legacy") as fake, SsePeer(fake) as peer:
        peer.prelude = b"id: 0\nretry: 500\n\n"
        with mcp_sync.Client.sse(fake.url, on_notification=lambda method, params: seen.append(method)) as client:
            client.connect()
            peer.push(b'event: ping\ndata: {"jsonrpc": "2.0", "method": "notifications/ping-event"}\n\n')
            peer.push(b"id: 7\n\n")
            peer.push(b'event: message\ndata: {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}\n\n')
            assert client.call_tool("echo", {"n": 1}).text == '{"n": 1}'
            assert wait_until(lambda: "notifications/tools/list_changed" in seen, 5)
    assert "notifications/ping-event" not in seen


def test_a_message_that_is_not_json_is_skipped(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    with FakeServer("legacy") as fake, SsePeer(fake) as peer, mcp_sync.Client.sse(fake.url) as client:
        client.connect()
        with caplog.at_level(logging.WARNING, logger="mcp_sync"):
            peer.push(b"event: message\ndata: {oops\n\n")
            assert client.call_tool("echo", {"n": 2}).text == '{"n": 2}'
    assert any("an SSE event that is not JSON (skipped): '{oops'" in r.getMessage() for r in caplog.records)


def test_an_unreadable_event_ends_the_session_and_fails_waiting_calls(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """An event past max_message_bytes: the stream cannot be read on, so the transport ends
    (a warning says why) and the call waiting for its answer fails at once."""
    with FakeServer("legacy") as fake, SsePeer(fake) as peer:
        client = mcp_sync.Client.sse(fake.url, max_message_bytes=2048, timeout=60, restart=False)
        try:
            client.connect()
            waiter, box = in_thread(lambda: client.call_tool("hang", {}))
            assert wait_until(lambda: peer.seen("tools/call"), 5)
            with caplog.at_level(logging.WARNING, logger="mcp_sync"):
                peer.push(b"event: message\ndata: " + b"x" * 4096 + b"\n\n")
                waiter.join(10)
            assert isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
            assert "could not be read: SSE event of more than 2048 bytes" in str(box["error"])
            assert any("could not be read" in r.getMessage() for r in caplog.records)
        finally:
            client.close()


def test_a_json_rpc_refusal_of_a_post_is_the_answer(no_leaks: None) -> None:
    """A POST refused with a JSON-RPC error body (no answer will come on the stream): that error
    is the request's answer."""
    refusal = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "no such tool: nope"}}
    with FakeServer("legacy") as fake, SsePeer(fake), mcp_sync.Client.sse(fake.url) as client:
        client.connect()
        peer_answer = fake.override
        assert peer_answer is not None

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "tools/call" and request.json["params"]["name"] == "nope":
                return json_reply(refusal, 400)
            return peer_answer(request)

        fake.override = override
        with pytest.raises(mcp_sync.ServerError, match="no such tool: nope") as failure:
            client.call_tool("nope", {}, timeout=30)
        assert failure.value.code == -32602
        assert client.call_tool("echo", {"n": 3}).text == '{"n": 3}'


def test_a_request_never_acknowledged_is_aborted_and_cancelled(no_leaks: None) -> None:
    """Client.http fell back to HTTP+SSE; a tools/call whose POST the server never acknowledges
    times out: the POST is abandoned (its thread ends), the server is told with
    notifications/cancelled (abort() is False: there is no stream of the request's own to
    close), nothing else reports the abandoned POST, and the client goes on."""
    with FakeServer("legacy") as fake, SsePeer(fake) as peer, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        transport = _http_transport(client)
        assert transport.delegate is not None
        assert transport.notification_stream == transport.delegate.notification_stream == 0
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("stall", {}, timeout=0.5)
        stalled = [m for m in peer.seen("tools/call") if m["params"]["name"] == "stall"]
        assert wait_until(lambda: peer.seen("notifications/cancelled"), 5)
        assert [m["params"]["requestId"] for m in peer.seen("notifications/cancelled")] == [stalled[0]["id"]]
        assert wait_until(lambda: not [t for t in threading.enumerate() if t.name.startswith("mcp_sync-post-")], 5)
        assert client.call_tool("echo", {"n": 4}).text == '{"n": 4}'
    assert transport.notification_stream is None  # closed


def test_a_closed_transport_refuses_to_send(no_leaks: None) -> None:
    with FakeServer("legacy") as fake, SsePeer(fake):
        transport = SseTransport(fake.url)
        transport.start(Sink())
        assert transport.notification_stream == 0
        transport.close()
        with pytest.raises(mcp_sync.ConnectionClosed, match="not connected"):
            transport.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert transport.notification_stream is None


def test_the_repr_hides_the_endpoint_query(no_leaks: None) -> None:
    """The endpoint URL carries the server's session id in its query: a repr shows it redacted."""
    with FakeServer("legacy") as fake, SsePeer(fake):
        transport = SseTransport(fake.url)
        transport.start(Sink())
        try:
            assert transport.endpoint == f"http://127.0.0.1:{fake.port}/message?s=1"
            assert repr(transport) == f"<SseTransport {fake.url!r} endpoint='http://127.0.0.1:{fake.port}/message?s=***'>"
        finally:
            transport.close()


def test_close_while_falling_back_to_http_sse_ends_the_new_connection(no_leaks: None) -> None:
    """close() while the fallback to HTTP+SSE waits for the new stream's endpoint event: once
    the event comes, the new transport is closed at once, no initialize is posted on it, and
    nothing is reported for the abandoned handshake."""
    release = threading.Event()
    gets: list[Request] = []

    def late_endpoint() -> Iterator[bytes]:
        release.wait(10)
        yield b"event: endpoint\ndata: /message\n\n"
        yield from endless_sse()

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "initialize":
            return Reply(404, {}, b"no Streamable HTTP here")
        if request.method == "GET":
            gets.append(request)
            if len(gets) == 1:  # the probe: an HTTP+SSE stream is there
                return sse_reply("event: endpoint\ndata: /message")
            return Reply(200, {"Content-Type": "text/event-stream"}, late_endpoint())
        return Reply(202)

    with FakeServer("legacy") as fake:
        fake.override = override
        sink = Sink()
        transport = HttpTransport(fake.url)
        transport.start(sink)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2024-11-05"}}
        transport.send(init)
        assert wait_until(lambda: len(gets) == 2, 5)
        closer, box = in_thread(transport.close)
        assert wait_until(lambda: transport._closing, 5)
        release.set()
        closer.join(10)
        assert not closer.is_alive() and "error" not in box
        assert transport.delegate is None
        assert not sink.failures and not sink.messages
        assert not [r for r in fake.requests if r.method == "POST" and r.path.startswith("/message")]
