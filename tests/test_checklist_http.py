"""Issue #21: Streamable HTTP and authorization requirements, against the scriptable
HTTP server of tests/httpkit.py (what real servers do not show on demand) and the
SDK server over HTTP."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from oauthkit import World, follow

import mcp_sync
from mcp_sync.auth import MemoryTokenStore

from httpkit import FakeServer, Reply, Request, json_reply, result, sse_reply

pytestmark = pytest.mark.timeout(60)


def bodies(fake: FakeServer) -> list[Any]:
    return [r.json for r in fake.seen(http_method="POST")]


def event(message: dict) -> str:
    return f"event: message\ndata: {json.dumps(message)}"


# -- Streamable HTTP -------------------------------------------------------------


def test_h3_every_post_is_one_request_or_notification(no_leaks: None) -> None:
    """H3: each POST body is a single JSON-RPC request or notification: no batch, no response,
    also with calls in parallel and a cancellation."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, mode="modern", timeout=10) as client:
        fake.override = lambda r: Reply(202) if isinstance(r.json, dict) and "id" not in r.json else None
        client.list_tools()
        for text in ("a", "b", "c"):
            client.call_tool("echo", {"text": text})
        client.notify("notifications/whatever", {})
    posts = bodies(fake)
    assert len(posts) >= 5
    for body in posts:
        assert isinstance(body, dict) and isinstance(body.get("method"), str), body
        assert "result" not in body and "error" not in body


def test_h3_a_modern_server_request_is_not_answered_by_post(no_leaks: None) -> None:
    """H3: "MUST NOT send JSON-RPC responses" on 2026-07-28, even if the server asks."""
    with FakeServer("modern") as fake:
        def stream(request: Request) -> Reply | None:
            if request.rpc_method != "tools/call":
                return None
            ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
            done = result(request, {"resultType": "complete", "content": [{"type": "text", "text": "ok"}]})
            return sse_reply(event(ask), event(done))

        fake.override = stream
        with mcp_sync.Client.http(fake.url, mode="modern", timeout=10) as client:
            assert client.call_tool("echo", {}).text == "ok"
            client.list_tools()
    assert all("method" in body for body in bodies(fake)), bodies(fake)


def test_h5_a_notification_post_carries_the_version_header(no_leaks: None) -> None:
    """H5 (found while covering H3): "Every POST request ... MUST include an MCP-Protocol-Version header"."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, mode="modern", timeout=10) as client:
        client.list_tools()
        try:  # the fake server knows no such notification (404, -32601): only the headers matter here
            client.notify("notifications/whatever", {})
        except mcp_sync.ProtocolError as refused:
            assert "-32601" in str(refused)
    (note,) = [r for r in fake.seen(http_method="POST") if r.rpc_method == "notifications/whatever"]
    assert note.headers.get("mcp-protocol-version") == "2026-07-28"


def test_h11_header_names_are_compared_case_insensitively(no_leaks: None) -> None:
    """H11: header names in any case are understood (session id, content type); the values
    keep their case."""
    with FakeServer("legacy") as fake:
        def shouting(request: Request) -> Reply | None:
            if request.rpc_method != "initialize":
                return None
            fake.sessions.add("SeSsIoN-AbC")
            init = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                    "serverInfo": {"name": "loud", "version": "1"}}
            return Reply(200, {"CONTENT-TYPE": "application/json", "mcp-SESSION-id": "SeSsIoN-AbC"},
                         json.dumps(result(request, init)).encode())

        fake.override = shouting
        with mcp_sync.Client.http(fake.url, mode="legacy", timeout=10) as client:
            assert [t.name for t in client.list_tools()] == ["echo"]
    later = [r for r in fake.seen(http_method="POST") if r.rpc_method != "initialize"]
    assert later and all(r.headers.get("mcp-session-id") == "SeSsIoN-AbC" for r in later)


def test_h16_statuses_of_a_modern_server(no_leaks: None) -> None:
    """H16: 404 with -32601 is "unknown method" (not a legacy server: no initialize follows);
    400 with -32602 is invalid params; a notification's 202 is success."""
    with FakeServer("modern") as fake:
        def invalid(request: Request) -> Reply | None:
            if request.rpc_method == "prompts/get":
                error = {"code": -32602, "message": "bad arguments"}
                return json_reply({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, 400)
            if request.json and "id" not in request.json:
                return Reply(202)
            return None

        fake.override = invalid
        with mcp_sync.Client.http(fake.url, timeout=10) as client:
            assert client.era == "modern"
            with pytest.raises(mcp_sync.ServerError) as unknown:
                client.request("no/such-method", {})
            assert unknown.value.code == -32601
            with pytest.raises(mcp_sync.ServerError) as bad:
                client.request("prompts/get", {"name": "x"})
            assert bad.value.code == -32602
            client.notify("notifications/something", {})
            assert client.call_tool("echo", {"x": 1}).text == '{"x": 1}'
            assert client.era == "modern"
    assert not fake.seen("initialize")


def test_h16_sdk_server_unknown_method(sdk_http_url: str, no_leaks: None) -> None:
    """H16: a real modern HTTP server's answer to an unknown method is -32601, and the client
    stays modern."""
    with mcp_sync.Client.http(sdk_http_url, timeout=20) as client:
        assert client.era == "modern"
        with pytest.raises(mcp_sync.ServerError) as unknown:
            client.request("no/such-method", {})
        assert unknown.value.code == -32601
        assert client.call_tool("echo", {"text": "still"}).text == "still" and client.era == "modern"


def test_lg4_legacy_http_posts_the_answer_to_a_server_request(no_leaks: None) -> None:
    """LG4: on a legacy session the client POSTs its response to a server's request (a ping in
    the call's SSE stream) as a body of its own, with the session id; the server says 202."""
    with FakeServer("legacy") as fake:
        def stream(request: Request) -> Reply | None:
            if request.rpc_method != "tools/call":
                return None
            ask = {"jsonrpc": "2.0", "id": "srv-9", "method": "ping"}
            return sse_reply(event(ask), event(result(request, {"content": [{"type": "text", "text": "ok"}]})))

        fake.override = stream
        with mcp_sync.Client.http(fake.url, mode="legacy", timeout=10) as client:
            assert client.call_tool("echo", {}).text == "ok"
            client.list_tools()  # the answer went out before this
            session = next(r for r in fake.seen(http_method="POST") if r.rpc_method == "tools/call")
    answers = [r for r in fake.seen(http_method="POST") if isinstance(r.json, dict) and r.json.get("id") == "srv-9"]
    assert [a.json for a in answers] == [{"jsonrpc": "2.0", "id": "srv-9", "result": {}}]
    assert answers[0].headers.get("mcp-session-id") == session.headers.get("mcp-session-id")


# -- authorization ------------------------------------------------------------------------


def test_a3_registration_state_is_kept_per_authorization_server(no_leaks: None) -> None:
    """A3: one token store, two MCP servers behind two authorization servers: each has its own
    client registration and tokens, and a token from one never reaches the other."""
    store = MemoryTokenStore()
    with FakeServer("modern") as rs1, FakeServer("modern") as as1, \
            FakeServer("modern") as rs2, FakeServer("modern") as as2:
        one, two = World(rs1, as1), World(rs2, as2)
        one.client_prefix, two.client_prefix = "one", "two"
        for world in (one, two):
            oauth = mcp_sync.OAuth(on_authorize=follow, token_store=store, timeout=5)
            with mcp_sync.Client.http(world.rs.url, auth=oauth, mode="modern", timeout=10) as client:
                client.call_tool("echo", {})
        first, second = store.load(one.issuer), store.load(two.issuer)
        assert first is not None and second is not None and one.issuer != two.issuer
        assert first["client"]["client_id"] == "one-1" and second["client"]["client_id"] == "two-1"
        assert two.calls("authorize")[0]["client_id"] == "two-1" and len(one.calls("register")) == 1
        assert set(first["tokens"]) == {rs1.url} and set(second["tokens"]) == {rs2.url}


class NoRefreshWorld(World):
    """An authorization server that never issues refresh tokens."""

    def authorization(self, request: Request) -> Reply | None:
        reply = super().authorization(request)
        if reply is not None and request.path.startswith(f"{self.as_prefix}/token") and reply.status == 200:
            body = json.loads(reply.body)  # type: ignore[arg-type]
            body.pop("refresh_token", None)
            reply = json_reply(body)
        return reply


def test_a11_no_refresh_token_is_assumed(no_leaks: None) -> None:
    """A11: without a refresh token, an expired access token leads to a new authorization,
    never to a refresh_token grant."""
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        world = NoRefreshWorld(rs, auth)
        oauth = mcp_sync.OAuth(on_authorize=follow, timeout=5)
        with mcp_sync.Client.http(rs.url, auth=oauth, mode="modern", timeout=10) as client:
            client.call_tool("echo", {})
            world.revoke()
            client.call_tool("echo", {})
        grants = [t["grant_type"] for t in world.calls("token")]
        assert grants == ["authorization_code", "authorization_code"]
        assert len(world.calls("authorize")) == 2


@pytest.mark.parametrize("with_metadata", [True, False])
def test_lg15_2025_03_26_server_without_protected_resource_metadata(with_metadata: bool, no_leaks: None) -> None:
    """LG15: a 2025-03-26 server publishes no resource metadata; its origin is the authorization
    server: metadata at the origin's root if there is one, else /authorize, /token, /register."""
    with FakeServer("legacy") as rs:
        world = World(rs, rs)
        world.prm_paths, world.prm_in_header = set(), False
        if not with_metadata:
            world.metadata_path = "/nowhere"

        def both(request: Request) -> Reply | None:
            path = request.path.split("?")[0]
            if path in ("/authorize", "/token", "/register", "/.well-known/oauth-authorization-server"):
                return world.authorization(request) or Reply(404)
            return world.resource(request)

        rs.override = both
        oauth = mcp_sync.OAuth(on_authorize=follow, timeout=5)
        with mcp_sync.Client.http(rs.url, auth=oauth, mode="legacy", protocol_version="2025-03-26",
                                  timeout=10) as client:
            assert client.call_tool("echo", {"x": 1}).text == '{"x": 1}'
        assert len(world.calls("register")) == 1 and len(world.calls("authorize")) == 1
        assert world.calls("token")[0]["grant_type"] == "authorization_code"
        gets = [r.path for r in rs.seen(http_method="GET")]
        assert "/.well-known/oauth-authorization-server" in gets


# -- a real legacy server that asks back (LG4, M2, L2) --------------------------------------------------


def test_lg4_m2_l2_server_everything_asks_back_over_http(everything_http_url: str, no_leaks: None) -> None:
    """LG4: server-everything (2025-11-25, Streamable HTTP) asks for sampling and elicitation in
    the middle of a call; the client POSTs the answers. M2: the sampling handler gets maxTokens
    as the server set it. L2: a decline from the handler reaches the server as a decline."""
    sampled: list[dict] = []

    def sampling(params: dict) -> dict:
        sampled.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "from the handler"}, "model": "test-model"}

    with mcp_sync.Client.http(everything_http_url, on_sampling=sampling,
                              on_elicitation=lambda params: {"action": "decline"}, timeout=30) as client:
        assert client.era == "legacy"
        answer = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 7}).text
        assert "from the handler" in answer and "test-model" in answer
        declined = client.call_tool("trigger-elicitation-request", {}).text
    assert sampled[0]["maxTokens"] == 7 and "hello" in sampled[0]["messages"][0]["content"]["text"]
    assert "declined" in declined


def test_n1_server_everything_lists_the_file_roots(everything_http_url: str, no_leaks: None) -> None:
    """N1: the client declares roots and a real server gets them as file:// URIs."""
    asked = threading.Event()

    def roots() -> list[str]:
        asked.set()
        return ["file:///tmp/project-n1"]

    with mcp_sync.Client.http(everything_http_url, on_roots=roots, timeout=30) as client:
        client.connect()
        assert asked.wait(10)  # the server asks for the roots on its own after initialized
        listed = client.call_tool("get-roots-list", {}).text
        deadline = time.monotonic() + 5
        while "file:///tmp/project-n1" not in listed and time.monotonic() < deadline:
            listed = client.call_tool("get-roots-list", {}).text  # it stores the answer asynchronously
    assert "file:///tmp/project-n1" in listed
