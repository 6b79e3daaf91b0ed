"""Client.bind views beyond the basics (mcp_sync/_client.py, _client_constructors.py; test_services.py
has the basics): a view of a view carries both sets of headers, a view with no credentials is the
client's own session, a tool's mirrored parameter headers travel with the caller's own headers, a
view's raw requests carry its credentials until the client closes, the least recently used view
session is closed first, and a client on a transport object has no view sessions. Peers: the
scripted HTTP server of tests/httpkit.py (records every request's headers) and the SDK server."""

from __future__ import annotations

import copy
import json

import pytest

import mcp_sync

from httpkit import FakeServer

pytestmark = pytest.mark.timeout(60)

REGION_TOOL = {
    "name": "sql",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
    },
}


def test_a_view_of_a_view_sends_both_sets_of_headers(no_leaks: None) -> None:
    """bind() on a view makes the client's view with the headers of both (the newer wins for
    a name given twice) and keeps the first view's auth unless it is given again."""
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url) as client:
        ada = client.bind(headers={"X-User": "ada", "X-Org": "old"}, auth=("ada", "pw"))
        both = ada.bind(headers={"X-Org": "acme"})
        other = ada.bind(headers={"X-Org": "acme"}, auth=("bob", "pw"))
        both.call_tool("echo", {"n": 1})
        other.call_tool("echo", {"n": 2})
        assert repr(both) == f"<mcp_sync.BoundClient of {client!r}>"  # a view of the client, not of ada
        first, second = server.seen("tools/call")
    assert (first.headers["x-user"], first.headers["x-org"]) == ("ada", "acme")
    assert first.headers["authorization"] == "Basic YWRhOnB3"  # ada:pw
    assert (second.headers["x-user"], second.headers["authorization"]) == ("ada", "Basic Ym9iOnB3")  # bob:pw


def test_a_view_without_credentials_is_the_clients_own_session(no_leaks: None) -> None:
    """bind() with no headers and no auth: calls go out on the client's own (legacy) session
    with nothing added, where a view with credentials gets a session of its own."""
    with FakeServer("legacy") as server, mcp_sync.Client.http(server.url, mode="legacy") as client:
        plain = client.bind()
        assert json.loads(plain.call_tool("echo", {"n": 1}).text) == {"n": 1}
        assert plain.transport.session_id == client.transport.session_id  # type: ignore[attr-defined]
        with_user = client.bind(headers={"X-User": "ada"})
        with_user.call_tool("echo", {"n": 2})
        assert with_user.transport.session_id != client.transport.session_id  # type: ignore[attr-defined]
        calls = server.seen("tools/call")
    assert "x-user" not in calls[0].headers and calls[1].headers["x-user"] == "ada"


def test_mirrored_parameter_headers_travel_with_the_callers_own_headers(no_leaks: None) -> None:
    """A tool that mirrors an argument into a header (x-mcp-header), called with headers= of
    the caller's own: the request carries both."""
    with FakeServer("modern", tools=[REGION_TOOL]) as server, mcp_sync.Client.http(server.url) as client:
        assert [tool.name for tool in client.tools()] == ["sql"]
        client.call_tool("sql", {"region": "eu-west", "query": "SELECT 1"}, headers={"X-Trace": "t-1"})
        (call,) = server.seen("tools/call")
    assert call.headers["mcp-param-region"] == "eu-west" and call.headers["x-trace"] == "t-1"


def test_a_views_raw_requests_carry_its_credentials_until_the_client_closes() -> None:
    """``request`` and ``ping`` through a view go on the shared connection with the view's headers;
    once the client is closed, a view's request raises ClientStateError naming why."""
    with FakeServer("modern") as server:
        client = mcp_sync.Client.http(server.url, headers={"X-Team": "a"}, timeout=10)
        with client:
            alice = client.bind(headers={"Authorization": "Bearer alice"})
            listed = alice.request("tools/list", {}, headers={"X-Request": "r1"})
            assert [tool["name"] for tool in listed["tools"]] == ["echo"]
            alice.ping()
            copied = copy.copy(alice._session)  # a copy of the view's session is the same view
            copied.send("tools/list", {})
            client.request("tools/list", {})
        seen = [(r.headers.get("authorization"), r.headers.get("x-team"), r.headers.get("x-request"))
                for r in server.seen("tools/list")]
        assert seen == [("Bearer alice", "a", "r1"), ("Bearer alice", "a", None), (None, "a", None)]
        [ping] = [r for r in server.seen("server/discover") if r.headers.get("authorization")]
        assert ping.headers["authorization"] == "Bearer alice"
        with pytest.raises(mcp_sync.ClientStateError, match="the client this view was bound from is closed"):
            alice.request("tools/list", {})
        assert len(server.seen("tools/list")) == 3  # nothing sent after the close


def test_the_least_recently_used_view_session_is_closed_first(sdk_http_url: str) -> None:
    """A legacy server's sessions belong to their credentials: each view's is kept, up to a bound
    (``max_view_sessions``, 64 by default; 2 here), and the least recently *used* one is closed
    when a new one is opened. A view whose session was closed gets a new one on its next request."""
    with mcp_sync.Client.http(sdk_http_url, mode="legacy", timeout=30, max_view_sessions=2) as client:
        views = {user: client.bind(headers={"Authorization": f"Bearer {user}"}) for user in ("ann", "bob", "cy")}

        def session_of(user: str) -> str:
            assert views[user].call_tool("echo", {"text": user}).text == user
            return views[user].transport.session_id  # type: ignore[no-any-return]

        ann, bob = session_of("ann"), session_of("bob")
        assert session_of("ann") == ann  # ann is now the most recently used
        cy = session_of("cy")  # a third session: bob's, the least recently used, is closed
        assert len({ann, bob, cy, client.transport.session_id}) == 4
        assert session_of("ann") == ann and session_of("cy") == cy
        assert session_of("bob") not in (bob, ann, cy)  # a new session for bob (ann's closed now)
        assert session_of("cy") == cy


def test_views_of_a_client_on_a_transport_object_cannot_open_sessions(sdk_http_url: str) -> None:
    """A legacy view needs a session of its own, made like the client: a client built on a
    transport object has no recipe to make one, so the view's request is a TypeError."""
    from mcp_sync.transports.http import HttpTransport

    with mcp_sync.Client(HttpTransport(sdk_http_url), mode="legacy", timeout=30) as client:
        view = client.bind(headers={"Authorization": "Bearer ann"})
        with pytest.raises(TypeError, match="a client built on a transport object cannot open sessions for views"):
            view.call_tool("echo", {"text": "x"})
        assert client.call_tool("echo", {"text": "own"}).text == "own"
