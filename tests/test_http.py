"""Streamable HTTP (both eras) and the HTTP+SSE fallback, against real peers and
a recording fake (tests/httpkit.py) for what real servers will not show.

Peers: the Python SDK MCPServer (mcp==2.3.0, dual-era) and
@modelcontextprotocol/server-everything (2025-11-25, streamableHttp and sse).
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
from typing import Any, Callable

import pytest
import requests
from helpers import in_thread, run_workers, wait_until

import mcp_sync
from mcp_sync._headers import encode_header_value, header_fields, param_headers, tool_header_problem
from mcp_sync.transports import http as http_module
from mcp_sync.transports.http import HttpTransport

from httpkit import FakeServer, Reply, Request, json_reply, result, sse_reply

pytestmark = pytest.mark.timeout(60)



def _transport(client: mcp_sync.Client) -> HttpTransport:
    engine = client._engine
    assert engine is not None
    return engine.transport  # type: ignore[return-value]


# -- real peers: modern -------------------------------------------------------------------


def test_modern_operations_against_sdk_server(sdk_http_url: str, no_leaks: None) -> None:
    """H1-H6: auto picks modern over HTTP; list, call, read and prompt all work statelessly."""
    with mcp_sync.Client.http(sdk_http_url) as client:
        assert client.era == "modern"
        assert client.protocol_version == "2026-07-28"
        assert {"echo", "add", "slow"} <= {tool.name for tool in client.tools()}
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
        assert client.read_resource("test://static").contents[0].text == "static content"
        assert client.read_resource("test://items/7").contents[0].text == "item 7"
        assert "Ada" in client.get_prompt("greet", {"name": "Ada"}).messages[0].content.text
        assert _transport(client).session_id is None  # H15: no session on modern


def test_modern_progress_over_sse_response_stream(sdk_http_url: str, no_leaks: None) -> None:
    """H4/H12: a call answered as an SSE stream delivers progress before the result."""
    seen: list[tuple[float, Any, Any]] = []
    with mcp_sync.Client.http(sdk_http_url) as client:
        result = client.call_tool("slow", {"seconds": 0.3}, progress=lambda p, t, m: seen.append((p, t, m)))
        assert result.text == "slept 0.3"
    assert [p for p, _, _ in seen] == [1, 2]
    assert seen[-1][2] == "step 2/2"


def test_modern_cancel_closes_the_stream(sdk_http_url: str, no_leaks: None) -> None:
    """H14: cancelling closes the request's stream at once (abort() is the cancellation) and the
    client keeps working; a timeout does the same."""
    with mcp_sync.Client.http(sdk_http_url) as client:
        token = mcp_sync.CancellationToken()
        threading.Timer(0.3, token.cancel).start()
        started = time.monotonic()
        with pytest.raises(mcp_sync.Cancelled):
            client.call_tool("slow", {"seconds": 5}, cancel=token)
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("slow", {"seconds": 5}, timeout=0.3, progress=lambda *a: None)
        assert time.monotonic() - started < 2.0
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
        assert not _transport(client)._inflight  # nothing left waiting for the slow calls


# -- real peers: legacy --------------------------------------------------------------------


def test_legacy_against_sdk_server(sdk_http_url: str, no_leaks: None) -> None:
    """LG1-LG3: initialize, a session id on every request, progress over the POST stream."""
    seen: list[float] = []
    with mcp_sync.Client.http(sdk_http_url, mode="legacy") as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert _transport(client).session_id
        assert client.call_tool("add", {"a": 2, "b": 3}).text == "5"
        assert client.read_resource("test://static").contents[0].text == "static content"
        assert client.call_tool("slow", {"seconds": 0.2}, progress=lambda p, t, m: seen.append(p)).text
        token = mcp_sync.CancellationToken()
        threading.Timer(0.2, token.cancel).start()
        with pytest.raises(mcp_sync.Cancelled):  # LG6: notifications/cancelled, not a closed stream
            client.call_tool("slow", {"seconds": 5}, cancel=token)
        assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert seen == [1, 2]


def test_legacy_session_deleted_on_close(sdk_http_url: str, no_leaks: None) -> None:
    """LG3: close() DELETEs the session, so the server no longer knows it."""
    with mcp_sync.Client.http(sdk_http_url, mode="legacy") as client:
        client.call_tool("echo", {"text": "x"})
        session = _transport(client).session_id
    assert session
    probe = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Mcp-Session-Id": session, "Accept": "application/json, text/event-stream"}
    assert requests.post(sdk_http_url, json=probe, headers=headers, timeout=5).status_code == 404


def test_legacy_session_expiry_renews_the_session(sdk_http_url: str, no_leaks: None) -> None:
    """LG3: a 404 on the session starts a new one transparently and the refused request is
    re-sent once on it, a tools/call too (a 404 proves the server did not run it, #9.8)."""
    with mcp_sync.Client.http(sdk_http_url, mode="legacy") as client:
        first = _transport(client).session_id
        requests.delete(sdk_http_url, headers={"Mcp-Session-Id": first}, timeout=5)  # the server forgets it
        assert "echo" in {tool.name for tool in client.tools()}
        second = _transport(client).session_id
        assert second and second != first
        requests.delete(sdk_http_url, headers={"Mcp-Session-Id": second}, timeout=5)
        assert client.call_tool("echo", {"text": "sent again"}).text == "sent again"
        assert client.call_tool("echo", {"text": "again"}).text == "again"


def test_auto_falls_back_to_legacy_against_everything(everything_http_url: str, no_leaks: None) -> None:
    """Section 4 step 5: server-everything answers the modern probe with a plain 400, so auto
    falls back to initialize; server requests on the GET stream are answered (LG5)."""
    seen: list[int] = []
    with mcp_sync.Client.http(everything_http_url) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert _transport(client).session_id
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
        out = client.call_tool(
            "trigger-long-running-operation", {"duration": 0.4, "steps": 2}, progress=lambda p, t, m: seen.append(p)
        )
        assert "completed" in out.text
    assert seen == [1, 2]


# -- the recording fake ------------------------------------------------------------------------


def test_modern_request_headers() -> None:
    """H2, H5, H6, H7: Accept, MCP-Protocol-Version = _meta version, Mcp-Method, Mcp-Name
    (base64 sentinel for a non-ASCII name); no session id, no GET (H15)."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.call_tool("echo", {"text": "hi"})
        client.call_tool("héllo", {})
        discover, call, odd = fake.seen("server/discover")[0], *fake.seen("tools/call")
    assert set(discover.headers["accept"].replace(" ", "").split(",")) >= {"application/json", "text/event-stream"}
    assert discover.headers["mcp-protocol-version"] == "2026-07-28"
    assert discover.json["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert discover.headers["mcp-method"] == "server/discover" and "mcp-name" not in discover.headers
    assert (call.headers["mcp-method"], call.headers["mcp-name"]) == ("tools/call", "echo")
    assert odd.headers["mcp-name"] == "=?base64?aMOpbGxv?="
    assert "mcp-session-id" not in call.headers
    assert not fake.seen(http_method="GET") and not fake.seen(http_method="DELETE")


def test_caller_headers_on_every_request(no_leaks: None) -> None:
    """H17 / issue 3: headers= go on every POST, the GET stream and the DELETE."""
    with FakeServer("legacy") as fake:
        with mcp_sync.Client.http(fake.url, headers={"X-Team": "blue"}) as client:
            client.call_tool("echo", {"a": 1})
            deadline = time.monotonic() + 3
            while not fake.seen(http_method="GET") and time.monotonic() < deadline:
                time.sleep(0.02)
        kinds = {r.method for r in fake.requests}
        assert kinds == {"POST", "GET", "DELETE"}
        assert all(r.headers.get("x-team") == "blue" for r in fake.requests)
        get = fake.seen(http_method="GET")[0]
        assert get.headers["mcp-session-id"] and get.headers["mcp-protocol-version"] == "2025-11-25"


def test_4xx_without_modern_body_falls_back_to_legacy(no_leaks: None) -> None:
    """Section 4 step 5: a plain 400 to the probe means legacy: initialize, then the session id
    and the negotiated MCP-Protocol-Version on later requests (LG2, LG3)."""
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url) as client:
        assert client.era == "legacy"
        assert json.loads(client.call_tool("echo", {"a": 1}).text) == {"a": 1}
        methods = [r.rpc_method for r in fake.seen(http_method="POST")]
        call = fake.seen("tools/call")[0]
        live = set(fake.sessions)  # before close: the DELETE on close ends the session
    assert methods[:3] == ["server/discover", "initialize", "notifications/initialized"]
    assert "mcp-protocol-version" not in fake.seen("initialize")[0].headers
    assert call.headers["mcp-session-id"] in live  # the id the server issued, not any id (#22.2)
    assert call.headers["mcp-protocol-version"] == "2025-11-25"
    assert "mcp-method" not in call.headers  # LG2: no modern headers on legacy


def test_recognized_modern_error_keeps_modern() -> None:
    """Section 4 step 3: a 400 with -32022 + supported is a modern answer, not a fallback."""

    def override(request: Request) -> Reply | None:
        version = request.json["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"]
        if version != "2026-07-28":
            return None
        error = {"code": -32022, "message": "nope", "data": {"supported": ["2099-01-01"]}}
        return json_reply({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, 400)

    with FakeServer("modern") as fake:
        fake.override = override
        with pytest.raises(mcp_sync.UnsupportedProtocolVersionError):
            mcp_sync.connect(fake.url)
        assert not fake.seen("initialize")


def test_cross_origin_redirect_refused(no_leaks: None) -> None:
    """Redirects are followed only within the origin: credentials never leave it."""
    with FakeServer("modern") as other, FakeServer("modern") as fake:
        target = other.url.replace("127.0.0.1", "localhost")
        fake.override = lambda r: Reply(307, {"Location": target})
        with pytest.raises(mcp_sync.ProtocolError, match="another origin"):
            mcp_sync.connect(fake.url, mode="modern", headers={"Authorization": "Bearer s3cret"})
        assert not other.requests


def test_same_origin_redirect_followed(no_leaks: None) -> None:
    with FakeServer("modern") as fake:
        fake.override = lambda r: Reply(308, {"Location": "/mcp"}) if r.path == "/old" else None
        with mcp_sync.Client.http(fake.url.replace("/mcp", "/old")) as client:
            assert client.era == "modern"
            client.call_tool("echo", {})


def test_gzip_bomb_refused(no_leaks: None) -> None:
    """A small gzip body that inflates past max_message_bytes fails its request with
    ProtocolError, without inflating it all; the client keeps working."""
    bomb = gzip.compress(b'{"jsonrpc":"2.0","id":2,"result":{"x":"' + b"0" * (8 << 20) + b'"}}')
    assert len(bomb) < 64 * 1024

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list" and not getattr(override, "done", False):
            override.done = True  # type: ignore[attr-defined]
            return Reply(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, bomb)
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, max_message_bytes=1 << 20) as client:
        fake.override = override
        with pytest.raises(mcp_sync.ProtocolError, match="max_message_bytes"):
            client.list_tools()
        assert [t.name for t in client.tools()] == ["echo"]


def test_gzip_body_decoded(no_leaks: None) -> None:
    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list":
            body = json.dumps(result(request, {"tools": [{"name": "zipped", "inputSchema": {}}]})).encode()
            return Reply(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, gzip.compress(body))
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = override
        assert [t.name for t in client.tools()] == ["zipped"]


def test_oversized_sse_event_refused(no_leaks: None) -> None:
    """The same bound holds for one SSE event."""

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list":
            return Reply(200, {"Content-Type": "text/event-stream"}, [b"data: " + b"x" * 4096 for _ in range(100)])
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, max_message_bytes=64 * 1024) as client:
        fake.override = override
        with pytest.raises(mcp_sync.ProtocolError, match="SSE event"):
            client.list_tools()


def test_503_with_retry_after_is_retried(no_leaks: None) -> None:
    """Robustness: 503 + Retry-After is retried after the delay the server asked for."""
    stamps: list[float] = []

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list":
            stamps.append(time.monotonic())
            if len(stamps) == 1:
                return Reply(503, {"Retry-After": "1"}, b"busy")
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = override
        assert [t.name for t in client.tools()] == ["echo"]
    assert len(stamps) == 2 and stamps[1] - stamps[0] >= 0.95


def test_http_error_becomes_clear_exception(no_leaks: None) -> None:
    """A 500 with a plain body: ProtocolError naming the status and the body's first bytes."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: Reply(500, {}, b"kaboom: database on fire")
        with pytest.raises(mcp_sync.ProtocolError, match=r"HTTP 500.*kaboom"):
            client.call_tool("echo", {})


def test_connection_refused_is_connection_closed(no_leaks: None) -> None:
    with FakeServer("modern") as fake:
        url = fake.url
    started = time.monotonic()
    with pytest.raises(mcp_sync.ConnectionClosed, match="refused"):
        mcp_sync.connect(url, mode="legacy", timeout=10)
    assert time.monotonic() - started < 3  # a few quick retries, then a clear error


def test_modern_broken_stream_raises_connection_closed(no_leaks: None) -> None:
    """H13: a modern stream that ends before the answer is not resumed: ConnectionClosed."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: sse_reply("id: 1\ndata:", "retry: 10") if r.rpc_method == "tools/call" else None
        with pytest.raises(mcp_sync.ConnectionClosed, match="ended before the answer"):
            client.call_tool("echo", {})


def test_modern_broken_stream_of_a_read_is_reissued(no_leaks: None) -> None:
    """H13: a safe request whose stream broke is re-issued once, with a new id."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        ids: list[Any] = []

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "tools/list":
                ids.append(request.json["id"])
                if len(ids) == 1:
                    return sse_reply("id: 1\ndata:")
            return None

        fake.override = override
        assert [tool.name for tool in client.tools()] == ["echo"]
        assert len(ids) == 2 and ids[0] != ids[1]


def test_legacy_stream_resumed_with_last_event_id(no_leaks: None) -> None:
    """LG6: a legacy POST stream that closes after a priming event is resumed by GET with
    Last-Event-ID, after the server's retry delay; comment lines are ignored (H12)."""

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call":
            return sse_reply(": keep-alive", "id: ev-1\nretry: 300\ndata:")
        if request.method == "GET" and request.headers.get("last-event-id") == "ev-1":
            answer = {"jsonrpc": "2.0", "id": call_id[0], "result": {"content": [{"type": "text", "text": "resumed"}]}}
            return sse_reply(f"id: ev-2\ndata: {json.dumps(answer)}")
        return None

    call_id: list[Any] = []
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        original = fake.answer

        def capture(request: Request) -> Reply:
            if request.rpc_method == "tools/call":
                call_id.append(request.json["id"])
            return original(request)

        fake.answer = capture  # type: ignore[method-assign]
        fake.override = override
        assert client.call_tool("echo", {}).text == "resumed"
        post = fake.seen("tools/call")[0]
        resume = next(r for r in fake.seen(http_method="GET") if "last-event-id" in r.headers)
    assert resume.headers["mcp-session-id"] == post.headers["mcp-session-id"]
    assert resume.at - post.at >= 0.29  # the server's retry: 300 was honoured


# -- x-mcp-header end to end (H8-H10) ------------------------------------------------------------

REGION_TOOL = {
    "name": "sql",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
    },
}
BAD_TOOL = {"name": "bad", "inputSchema": {"properties": {"n": {"type": "number", "x-mcp-header": "N"}}}}


def test_param_headers_mirrored_and_invalid_tools_dropped(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """H8/H9: invalid annotations drop the tool with a warning; valid ones are mirrored."""
    with FakeServer("modern", tools=[REGION_TOOL, BAD_TOOL]) as fake, mcp_sync.Client.http(fake.url) as client:
        with caplog.at_level(logging.WARNING, logger="mcp_sync"):
            assert [t.name for t in client.tools()] == ["sql"]
        assert "'bad'" in caplog.text and "type must be string, integer or boolean" in caplog.text
        client.call_tool("sql", {"region": "us-west1", "query": "SELECT 1"})
        client.call_tool("sql", {"region": None, "query": "SELECT 1"})
        first, second = fake.seen("tools/call")
    assert first.headers["mcp-param-region"] == "us-west1"
    assert "mcp-param-region" not in second.headers


def test_header_mismatch_relists_and_retries(no_leaks: None) -> None:
    """H10: on -32020 the client lists tools again (learning the annotation) and retries once."""
    plain = {"name": "sql", "inputSchema": {"type": "object", "properties": {"region": {"type": "string"}}}}

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call" and "mcp-param-region" not in request.headers:
            fake.tools = [REGION_TOOL]  # the tool changed since the client listed it
            error = {"code": -32020, "message": "Mcp-Param-Region header missing"}
            return json_reply({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, 400)
        return None

    with FakeServer("modern", tools=[plain]) as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = override
        assert [t.name for t in client.tools()] == ["sql"]
        assert json.loads(client.call_tool("sql", {"region": "eu"}).text) == {"region": "eu"}
        calls = fake.seen("tools/call")
    assert len(calls) == 2 and calls[1].headers["mcp-param-region"] == "eu"
    assert len(fake.seen("tools/list")) == 2


def test_transport_threads_are_named_and_joined(sdk_http_url: str, no_leaks: None) -> None:
    """Every transport thread is mcp_sync-<role>-<server>, daemon, and gone after close()."""
    names: set[str] = set()
    with mcp_sync.Client.http(sdk_http_url, mode="legacy") as client:
        client.call_tool(
            "slow", {"seconds": 0.2}, progress=lambda *a: names.update(t.name for t in threading.enumerate())
        )
    workers = {n for n in names if n.startswith("mcp_sync-http-") or n.startswith("mcp_sync-listen-")}
    assert workers and all("127.0.0.1:" in n for n in workers)


# -- x-mcp-header and value encoding, unit level (H7-H9) --------------------------------------


def tool(properties: dict[str, Any], **schema: Any) -> dict[str, Any]:
    return {"name": "t", "inputSchema": {"type": "object", "properties": properties, **schema}}


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("us-west1", "us-west1"),
        ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
        (" padded ", "=?base64?IHBhZGRlZCA=?="),
        ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
        ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
        ("tab\there", "=?base64?dGFiCWhlcmU=?="),
        ("", ""),
    ],
)
def test_h7_value_encoding(value: str, encoded: str) -> None:
    """H7: the spec's encoding table, plus a control character and the empty value."""
    assert encode_header_value(value) == encoded


def test_h9_valid_annotations() -> None:
    assert tool_header_problem(tool({"region": {"type": "string", "x-mcp-header": "Region"}})) is None
    nested = {"loc": {"type": "object", "properties": {"zone": {"type": "integer", "x-mcp-header": "Zone"}}}}
    assert tool_header_problem(tool(nested)) is None
    assert tool_header_problem(tool({"flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"}})) is None
    assert tool_header_problem({"name": "no-schema"}) is None
    # a property *named* x-mcp-header, and the key inside a default, are not annotations
    assert tool_header_problem(tool({"x-mcp-header": {"type": "object", "default": {"x-mcp-header": ""}}})) is None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (tool({"a": {"type": "string", "x-mcp-header": ""}}), "empty"),
        (tool({"a": {"type": "string", "x-mcp-header": 7}}), "empty or not a string"),
        (tool({"a": {"type": "string", "x-mcp-header": "Has Space"}}), "not an HTTP token"),
        (tool({"a": {"type": "string", "x-mcp-header": "Colon:"}}), "not an HTTP token"),
        (tool({"a": {"type": "string", "x-mcp-header": "CR\r\nX-Evil"}}), "not an HTTP token"),
        (tool({"a": {"type": "string", "x-mcp-header": "Ünï"}}), "not an HTTP token"),
        (
            tool({"a": {"type": "string", "x-mcp-header": "Dup"}, "b": {"type": "string", "x-mcp-header": "dUP"}}),
            "duplicates",
        ),
        (tool({"a": {"type": "number", "x-mcp-header": "A"}}), "type must be"),
        (tool({"a": {"type": "object", "x-mcp-header": "A"}}), "type must be"),
        (tool({"a": {"x-mcp-header": "A"}}), "type must be"),
        (tool({"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}), "not reachable"),
        (tool({"a": {"anyOf": [{"type": "string", "x-mcp-header": "A"}]}}), "not reachable"),
        (tool({"a": {"oneOf": [{"type": "string", "x-mcp-header": "A"}]}}), "not reachable"),
        (tool({"a": {"allOf": [{"type": "string", "x-mcp-header": "A"}]}}), "not reachable"),
        (tool({"a": {"not": {"type": "string", "x-mcp-header": "A"}}}), "not reachable"),
        (tool({}, **{"if": {"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}}), "not reachable"),
        (
            tool({"a": {"$ref": "#/$defs/S"}}, **{"$defs": {"S": {"type": "string", "x-mcp-header": "A"}}}),
            "not reachable",
        ),
        ({"name": "t", "inputSchema": {"type": "string", "x-mcp-header": "Root"}}, "not reachable"),
    ],
)
def test_h9_invalid_annotations(raw: dict[str, Any], reason: str) -> None:
    """H9: every rejection rule, each reported with a reason naming the problem."""
    problem = tool_header_problem(raw)
    assert problem is not None and reason in problem


def test_h8_param_headers() -> None:
    """H8: string as is, integer decimal, boolean true/false, null/absent omitted, nested paths."""
    schema = tool(
        {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry"},
            "note": {"type": "string", "x-mcp-header": "Note"},
            "gone": {"type": "string", "x-mcp-header": "Gone"},
            "loc": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
        }
    )["inputSchema"]
    args = {"region": "us-west1", "count": 42, "dry": False, "note": None, "loc": {"zone": "b ü"}}
    fields = header_fields(schema)  # what a listing keeps, so a call does not walk the schema again
    assert len(fields) == 6
    assert param_headers(fields, args) == {
        "Mcp-Param-Region": "us-west1",
        "Mcp-Param-Count": "42",
        "Mcp-Param-Dry": "false",
        "Mcp-Param-Zone": "=?base64?YiDDvA==?=",
    }
    assert param_headers(fields, {"count": 42.0}) == {"Mcp-Param-Count": "42"}
    assert param_headers(header_fields({"type": "object"}), {"x": 1}) == {}


def test_h9_integer_range_enforced_at_call_time() -> None:
    schema = tool({"n": {"type": "integer", "x-mcp-header": "N"}})["inputSchema"]
    assert param_headers(header_fields(schema), {"n": 2**53 - 1}) == {"Mcp-Param-N": str(2**53 - 1)}
    with pytest.raises(ValueError, match="2\\*\\*53"):
        param_headers(header_fields(schema), {"n": 2**53})


def test_legacy_stream_notification_callback_may_call_the_client(sdk_http_url: str, no_leaks: None) -> None:
    """A notification a legacy server sends on a POST's stream reaches on_notification, which
    may itself call the client (it runs on the dispatch thread: no deadlock)."""
    relisted: list[list[str]] = []
    done = threading.Event()

    def on_notification(method: str, params: dict) -> None:
        if method == "notifications/tools/list_changed":
            relisted.append([tool.name for tool in client.tools(cache="bypass")])
            done.set()

    with mcp_sync.Client.http(sdk_http_url, mode="legacy", on_notification=on_notification) as client:
        client.call_tool("add_tool", {"name": "from_stream"})
        assert done.wait(10)
    assert "from_stream" in relisted[0]


def test_sixteen_threads_share_one_http_client(sdk_http_url: str, caplog: pytest.LogCaptureFixture) -> None:
    """Many threads on one client (a web app): every answer reaches its caller, and the
    connections are reused rather than opened and discarded per extra concurrent call."""
    failures: list[str] = []
    with caplog.at_level(logging.WARNING, logger="urllib3"), mcp_sync.Client.http(sdk_http_url) as client:

        def worker(n: int) -> None:
            for i in range(50):
                text = f"{n}-{i}"
                got = client.call_tool("echo", {"text": text}).text
                if got != text:
                    failures.append(f"{text} != {got}")

        run_workers(worker, [(n,) for n in range(16)], timeout=60)  # a worker that raises fails the test
    assert not failures
    assert not [r for r in caplog.records if "pool is full" in r.getMessage()]


def test_cached_era_that_fails_is_forgotten(no_leaks: None) -> None:
    """V4: an origin cached as legacy skips the probe; if connecting then fails, the entry is
    dropped and the next client probes again (here the server has become modern-only)."""
    with FakeServer("modern") as fake:
        http_module._ERA_CACHE[http_module.origin(fake.url)] = "legacy"
        with pytest.raises(mcp_sync.MCPError):
            mcp_sync.Client.http(fake.url, timeout=5).connect()
        assert http_module.cached_era(fake.url) is None
        with mcp_sync.Client.http(fake.url) as client:
            assert client.era == "modern"


# -- #22.7: legacy sessions that expire (renewal failing, renewal from the GET stream, one-way posts)


Override = Callable[[Request], "Reply | None"]


def _hang_then(release: threading.Event, answer: Override) -> Override:
    """An override: tools/call "hang" waits for ``release`` (10 s at most); the rest goes to ``answer``."""

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call" and request.json["params"]["name"] == "hang":
            release.wait(10)
            return json_reply(result(request, {"content": [{"type": "text", "text": "late"}]}))
        return answer(request)

    return override


def test_a_legacy_renewal_that_fails_fails_every_waiting_call_at_once(no_leaks: None) -> None:
    """#22.7: the server forgets the session and refuses a new initialize: the call that met the
    404 gets SessionExpiredError, and so does a call already waiting on its own POST, at once
    (fixed: milliseconds; the regression waits for its 30 s timeout). Later calls are refused."""
    release = threading.Event()
    refuse = threading.Event()
    with FakeServer("legacy") as fake:
        fake.override = _hang_then(
            release, lambda r: Reply(500, {}, b"down") if refuse.is_set() and r.rpc_method == "initialize" else None
        )
        client = mcp_sync.Client.http(fake.url, mode="legacy", timeout=30)
        try:
            client.connect()
            waiter, box = in_thread(lambda: client.call_tool("hang", {}))
            assert wait_until(lambda: fake.seen("tools/call"), 5)
            fake.sessions.clear()  # the server restarted
            refuse.set()
            started = time.monotonic()
            with pytest.raises(mcp_sync.SessionExpiredError, match="could not start"):
                client.call_tool("echo", {"a": 1})
            waiter.join(5)
            assert not waiter.is_alive() and isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
            assert box["at"] - started < 5
            assert len(fake.seen("initialize")) == 2  # one renewal attempt, not a loop
            with pytest.raises(mcp_sync.MCPError):  # a new connection is refused too, while the server refuses
                client.call_tool("echo", {"a": 2}, timeout=5)
        finally:
            release.set()
            client.close()


def _listen_stream(fake: FakeServer) -> Override:
    """GET: an event stream while the session is known (it ends at once, asking for a retry in
    50 ms), 404 once the server has forgotten the session."""

    def override(request: Request) -> Reply | None:
        if request.method != "GET":
            return None
        if request.headers.get("mcp-session-id") not in fake.sessions:
            return Reply(404, {}, b"unknown session")
        return sse_reply("id: 1\nretry: 50")

    return override


def test_the_get_stream_renews_an_expired_legacy_session(no_leaks: None) -> None:
    """#22.7: a client that only listens recovers too: the GET stream meets the 404, replays
    initialize + initialized, and listens on the new session; the next call uses it without
    meeting a 404 itself."""
    with FakeServer("legacy") as fake:
        fake.override = _listen_stream(fake)
        with mcp_sync.Client.http(fake.url, mode="legacy") as client:
            client.connect()
            assert wait_until(lambda: fake.seen(http_method="GET"), 5)
            old = fake.seen("initialize")[0]
            fake.sessions.clear()
            assert wait_until(lambda: len(fake.seen("notifications/initialized")) == 2, 10), "not renewed"
            assert len(fake.seen("initialize")) == 2
            new_session = next(iter(fake.sessions))
            assert wait_until(
                lambda: any(r.headers.get("mcp-session-id") == new_session for r in fake.seen(http_method="GET")), 5
            )
            assert json.loads(client.call_tool("echo", {"a": 1}).text) == {"a": 1}
            call = fake.seen("tools/call")[0]
            assert call.headers["mcp-session-id"] == new_session and len(fake.seen("tools/call")) == 1
            assert old.at < fake.seen("initialize")[1].at


def test_a_legacy_notification_to_an_expired_session_renews_it_and_is_resent(no_leaks: None) -> None:
    """#22.7: a notification POST that meets the 404 renews the session and goes again, to the
    new session (it is not lost, and the caller is not failed)."""
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        fake.sessions.clear()
        client.notify("notifications/roots/list_changed")
        sent = fake.seen("notifications/roots/list_changed")
        assert len(sent) == 2, sent
        first, again = (r.headers["mcp-session-id"] for r in sent)
        assert again in fake.sessions and first not in fake.sessions
        assert len(fake.seen("initialize")) == 2


def test_a_legacy_answer_to_an_expired_session_is_dropped_without_renewal(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """#22.7: the answer to a server request, posted after the session expired, meets a 404:
    nobody waits for it on the new session, so it is dropped (no renewal, no error), and the
    call the request came with still gets its result."""
    asked = threading.Event()

    def on_roots() -> list[str]:
        fake.sessions.clear()  # the server forgets the session while we answer
        asked.set()
        return ["file:///tmp"]

    with FakeServer("legacy") as fake:

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "tools/call":
                ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}
                answer = result(request, {"content": [{"type": "text", "text": "done"}]})
                return sse_reply(f"data: {json.dumps(ask)}", f"data: {json.dumps(answer)}")
            return None

        fake.override = override
        with caplog.at_level(logging.WARNING, logger="mcp_sync"), mcp_sync.Client.http(
            fake.url, mode="legacy", on_roots=on_roots
        ) as client:
            assert client.call_tool("ask", {}).text == "done"
            assert asked.wait(5)
            assert wait_until(lambda: [r for r in fake.requests if r.json and r.json.get("id") == "srv-1"], 5)
            answers = [r for r in fake.requests if r.json and r.json.get("id") == "srv-1"]
            assert len(answers) == 1 and answers[0].json["result"] == {"roots": [{"uri": "file:///tmp"}]}
            assert len(fake.seen("initialize")) == 1  # not renewed for an answer
    assert not [r for r in caplog.records if r.name.startswith("mcp_sync") and r.levelno >= logging.WARNING]


# -- #22.7: a modern server that negotiates another modern revision ----------------------------------


@pytest.mark.parametrize("mode", ["auto", "modern"])
def test_a_modern_server_of_another_modern_revision_is_refused_clearly(mode: str, no_leaks: None) -> None:
    """#22.7: server/discover lists only a modern revision this client does not speak: connect()
    fails at once with UnsupportedProtocolVersionError naming it; it neither falls back to the
    legacy handshake (the server is modern) nor waits for its timeout."""
    with FakeServer("modern") as fake:
        def discover_answer(request: Request) -> Reply | None:
            if request.rpc_method != "server/discover":
                return None
            body = {"supportedVersions": ["2027-01-01"], "capabilities": {}}
            return json_reply(result(request, body))

        fake.override = discover_answer
        client = mcp_sync.Client.http(fake.url, mode=mode, timeout=20)
        started = time.monotonic()
        with pytest.raises(mcp_sync.UnsupportedProtocolVersionError, match="2027-01-01") as caught:
            client.connect()
        assert time.monotonic() - started < 5
        assert caught.value.supported == ["2027-01-01"]
        assert not fake.seen("initialize")  # a modern server: no legacy handshake
        client.close()


def test_mode_modern_retries_once_at_the_revision_a_32022_names(no_leaks: None) -> None:
    """#22.7 (V1 in mode="modern"): the first server/discover is refused with -32022 listing
    our revision: one retry at it connects; a second refusal would be final."""
    with FakeServer("modern") as fake:
        refusals = [0]

        def refuse_once(request: Request) -> Reply | None:
            if request.rpc_method == "server/discover" and not refusals[0]:
                refusals[0] += 1
                error = {"code": -32022, "message": "Unsupported protocol version",
                         "data": {"supported": ["2026-07-28"]}}
                return json_reply({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, 400)
            return None

        fake.override = refuse_once
        with mcp_sync.Client.http(fake.url, mode="modern") as client:
            assert client.era == "modern" and client.protocol_version == "2026-07-28"
        assert len(fake.seen("server/discover")) == 2
