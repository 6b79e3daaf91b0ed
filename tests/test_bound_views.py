"""Views of a client (``Client.bind``): raw requests with their credentials, after the client
closed, and the legacy sessions of views (least recently used closed first).

Against the SDK server over Streamable HTTP (legacy sessions), and the scripted HTTP server of
``httpkit`` where the headers a request carried must be seen.
"""

from __future__ import annotations

import copy

import pytest

import mcp_sync
from mcp_sync import _client_constructors

from httpkit import FakeServer

pytestmark = pytest.mark.timeout(60)


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


def test_the_least_recently_used_view_session_is_closed_first(
    sdk_http_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy server's sessions belong to their credentials: each view's is kept, up to a bound
    (64; 2 here), and the least recently *used* one is closed when a new one is opened. A view
    whose session was closed gets a new one on its next request."""
    monkeypatch.setattr(_client_constructors, "MAX_VIEW_SESSIONS", 2)
    with mcp_sync.Client.http(sdk_http_url, mode="legacy", timeout=30) as client:
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
