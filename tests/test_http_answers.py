"""How Streamable HTTP reads the answer to a POST when the server's answer is unusual: bodies
that are not the answer, content types it cannot read, SSE events that are not JSON or come
after the answer, streams that break more than once, redirect loops, compressed bodies whose
last bytes come out of the decompressor only at its flush, and what a probe for the
deprecated HTTP+SSE transport finds. Real HTTP (the project's FakeServer) throughout."""

from __future__ import annotations

import json
import logging
import zlib
from typing import Any

import pytest
from helpers import wait_until

import mcp_sync
from mcp_sync.transports._sse_stream import CHUNK, decoded_chunks

from httpkit import FakeServer, Reply, Request, json_reply, sse_reply

pytestmark = pytest.mark.timeout(60)


def _on_tools_call(reply: Reply) -> Any:
    return lambda request: reply if request.rpc_method == "tools/call" else None


def _answer(request_id: Any, text: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": text}]}})


def test_a_json_body_that_is_not_the_answer_fails_the_call(no_leaks: None) -> None:
    """A JSON body holding only a notification: the notification is delivered, and the call
    fails with ProtocolError (it would otherwise wait for its timeout: no other answer can come)."""
    seen: list[tuple[str, dict]] = []
    with FakeServer("modern") as fake, mcp_sync.Client.http(
        fake.url, on_notification=lambda method, params: seen.append((method, params))
    ) as client:
        client.connect()
        changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}}
        fake.override = _on_tools_call(json_reply(changed))
        with pytest.raises(mcp_sync.ProtocolError, match=r"tools/call: the JSON body from .* is not the answer"):
            client.call_tool("echo", {}, timeout=30)
        assert wait_until(lambda: ("notifications/tools/list_changed", {}) in seen, 5)


def test_an_answer_of_a_type_it_cannot_read_fails_the_call(no_leaks: None) -> None:
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = _on_tools_call(Reply(200, {"Content-Type": "text/html"}, b"<p>hello</p>"))
        with pytest.raises(mcp_sync.ProtocolError, match=r"HTTP 200 .* with Content-Type 'text/html' and no answer"):
            client.call_tool("echo", {}, timeout=30)


def test_an_sse_event_that_is_not_json_is_skipped(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """The answer after it still reaches the caller; the skipped event is logged (a warning)."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: sse_reply("data: {not json", f"data: {_answer(r.json['id'], 'fine')}") if (
            r.rpc_method == "tools/call") else None
        with caplog.at_level(logging.WARNING, logger="mcp_sync"):
            assert client.call_tool("echo", {}).text == "fine"
    assert [r.getMessage() for r in caplog.records if "not JSON" in r.getMessage()] == [
        f"mcp_sync: {client.name} sent an SSE event that is not JSON (skipped): '{{not json'"
    ]


def test_an_unreadable_event_after_the_answer_does_not_fail_the_call(no_leaks: None) -> None:
    """The answer arrived; an event past max_message_bytes right after it (in the same chunk,
    so it is read before the stream is let go) only ends the stream."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, max_message_bytes=4096) as client:
        client.connect()

        def override(request: Request) -> Reply | None:
            if request.rpc_method != "tools/call":
                return None
            body = f"data: {_answer(request.json['id'], 'answered')}\n\ndata: {'x' * 10_000}\n\n".encode()
            return Reply(200, {"Content-Type": "text/event-stream"}, [body])

        fake.override = override
        assert client.call_tool("echo", {}).text == "answered"
        fake.override = None
        assert client.call_tool("echo", {"then": 1}).text == '{"then": 1}'


def test_a_legacy_stream_broken_twice_is_resumed_twice(no_leaks: None) -> None:
    """LG6: each resumed stream that ends before the answer is resumed again, from the last
    event id it carried (the first resumed stream is closed before the second opens)."""
    call_ids: list[Any] = []

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call":
            call_ids.append(request.json["id"])
            return sse_reply("id: ev-1\nretry: 10\ndata:")
        if request.method == "GET" and request.headers.get("last-event-id") == "ev-1":
            return sse_reply("id: ev-2\ndata:")
        if request.method == "GET" and request.headers.get("last-event-id") == "ev-2":
            return sse_reply(f"id: ev-3\ndata: {_answer(call_ids[0], 'third stream')}")
        return None

    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        fake.override = override
        assert client.call_tool("echo", {}).text == "third stream"
        resumes = [r.headers.get("last-event-id") for r in fake.seen(http_method="GET") if "last-event-id" in r.headers]
    assert resumes == ["ev-1", "ev-2"]
    assert len(call_ids) == 1  # resumed, never sent again


def test_a_resume_the_server_refuses_fails_the_call(no_leaks: None) -> None:
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "tools/call":
                return sse_reply("id: ev-1\nretry: 10\ndata:")
            if request.method == "GET" and "last-event-id" in request.headers:
                return Reply(404, {}, b"no such stream")
            return None

        fake.override = override
        with pytest.raises(mcp_sync.ConnectionClosed, match="tools/call: resuming the stream failed with HTTP 404"):
            client.call_tool("echo", {}, timeout=30)
        assert len(fake.seen("tools/call")) == 1


def test_a_redirect_loop_ends_after_five_redirects(no_leaks: None) -> None:
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: Reply(307, {"Location": f"/mcp?hop={len(fake.seen('tools/call'))}"}) if (
            r.rpc_method == "tools/call") else None
        with pytest.raises(mcp_sync.ProtocolError, match=r"POST .*: more than 5 redirects"):
            client.call_tool("echo", {}, timeout=30)
        assert len(fake.seen("tools/call")) == 6  # the request and five redirects, then no more


def _raw_deflate_with_a_tail(body: bytes) -> bytes:
    """``body``, padded with JSON whitespace and compressed as raw deflate, such that the
    decompressor gives its last byte only at flush(): every input byte consumed, the output
    bound reached. Fixed Huffman codes make such a stream at the first size past CHUNK."""
    for total in range(CHUNK + 1, CHUNK + 400):
        padded = body + b" " * (total - len(body))
        compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS, 8, zlib.Z_FIXED)
        data = compressor.compress(padded) + compressor.flush()
        decompressor = zlib.decompressobj(-zlib.MAX_WBITS)
        rest = data
        while rest:
            decompressor.decompress(rest, CHUNK)
            rest = decompressor.unconsumed_tail
        if decompressor.flush():
            return data
    raise AssertionError("no raw deflate stream with a flush tail was found")


def test_a_deflated_body_whose_last_byte_comes_at_the_flush_is_read_whole(no_leaks: None) -> None:
    """Content-Encoding: deflate (raw): the byte zlib still held when the input ran out is part
    of the body (without it this body would lose its last byte)."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        holder: dict[str, int] = {}

        def override(request: Request) -> Reply | None:
            if request.rpc_method != "tools/call":
                return None
            body = _answer(request.json["id"], "deflated").encode()
            data = _raw_deflate_with_a_tail(body)
            holder["size"] = len(zlib.decompress(data, -zlib.MAX_WBITS))
            return Reply(200, {"Content-Type": "application/json", "Content-Encoding": "deflate"}, data)

        fake.override = override
        assert client.call_tool("echo", {}).text == "deflated"
    assert holder["size"] > CHUNK


def test_a_response_of_an_older_urllib3_is_read_through_stream() -> None:
    """urllib3 1.26 (requests allows it) has no read1: bodies are read with stream(), whole."""

    class Urllib3v1Response:
        def __init__(self, data: bytes) -> None:
            self.data = data

        def stream(self, amount: int, decode_content: bool) -> Any:
            assert not decode_content  # the client decodes, bounded, itself
            for start in range(0, len(self.data), amount):
                yield self.data[start:start + amount]

    body = b'{"jsonrpc": "2.0"}' * 10_000
    assert b"".join(decoded_chunks(Urllib3v1Response(body), None)) == body
    assert b"".join(decoded_chunks(Urllib3v1Response(zlib.compress(body)), "deflate")) == body


# -- the probe for HTTP+SSE ------------------------------------------------------------------------


def test_a_broken_stream_at_the_http_sse_probe_fails_initialize_plainly(no_leaks: None) -> None:
    """initialize is refused (404), and the GET that looks for an HTTP+SSE endpoint event finds a
    stream that cannot be read: the handshake fails saying so, and nothing more is tried."""
    with FakeServer("legacy") as fake:

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "initialize":
                return Reply(404, {}, b"not here")
            if request.method == "GET":
                return Reply(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, b"\x1f\x8bcorrupt")
            return None

        fake.override = override
        client = mcp_sync.Client.http(fake.url, mode="legacy", timeout=30)
        with pytest.raises(mcp_sync.ProtocolError, match=r"initialize: HTTP 404 .*opens no HTTP\+SSE stream"):
            client.connect()
        client.close()
        assert len(fake.seen(http_method="GET")) == 1 and len(fake.seen("initialize")) == 1

