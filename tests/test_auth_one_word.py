"""Issue #31.2: OAuth in one word. ``Client.http(url, auth="oauth")`` logs in with the browser
(authorization code + PKCE, dynamic registration) and keeps its tokens in a file per server URL
in the user's cache directory; any other string is refused when the client is made;
``client.authorize()`` logs in up front; ``client.logout()`` revokes (RFC 7009) and forgets.

Against the project's OAuth test world (tests/oauthkit.py: a resource server and an
authorization server on 127.0.0.1, both real HTTP servers) with the real ``browser_authorize``
listening on a reserved loopback port; the user's browser is the ``browser`` fixture.
"""

from __future__ import annotations

import json
import logging
import pickle
import stat
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
import mcp_sync.auth
from mcp_sync.auth import token_cache_path

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, reserve_port: Any) -> Path:
    """The user's cache directory (XDG_CACHE_HOME), and the one-word form's redirect on a port of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(mcp_sync.auth, "REDIRECT_URI", f"http://127.0.0.1:{reserve_port()}/callback")
    return tmp_path / "cache"


def one_word(world: Any) -> mcp_sync.Client:
    return mcp_sync.Client.http(world.rs.url, auth="oauth", mode="modern", timeout=20)


def stored(world: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(token_cache_path(world.rs.url).read_text())
    return data["issuers"][world.issuer]


@pytest.mark.parametrize("word", ["oath", "OAuth", "", "bearer", "oauth2"])
def test_any_other_string_is_refused_when_the_client_is_made(word: str) -> None:
    for make in (mcp_sync.Client.http, mcp_sync.Client.sse):
        with pytest.raises(ValueError, match=r"auth='oauth'.*mcp_sync\.OAuth") as caught:
            make("http://127.0.0.1:9/mcp", auth=word)
        assert repr(word) in str(caught.value)
    with pytest.raises(ValueError, match="auth='oauth'"):
        mcp_sync.connect("http://127.0.0.1:9/mcp", auth=word)  # refused before any connection is tried
    with pytest.raises(ValueError, match="auth='oauth'"):
        mcp_sync.connect({"url": "http://127.0.0.1:9/mcp", "auth": word})  # a config entry's auth too


def test_the_cache_file_is_per_server_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    a = token_cache_path("https://MCP.example.com/mcp")
    assert a.parent == tmp_path / "mcp_sync" / "oauth" and a.name.startswith("mcp.example.com-")
    assert a == token_cache_path("https://mcp.example.com/mcp#x")  # the canonical URL
    assert a != token_cache_path("https://mcp.example.com/other")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored, as XDG says
    assert token_cache_path("https://mcp.example.com/mcp").parent == Path.home() / ".cache" / "mcp_sync" / "oauth"


def test_one_word_logs_in_with_the_browser_and_keeps_the_tokens(cache: Path, world: Any, browser: Any) -> None:
    with one_word(world) as client:
        assert client.call_tool("echo", {"x": 1}).text
    (asked,) = world.calls("authorize")
    assert asked["code_challenge_method"] == "S256" and asked["redirect_uri"] == mcp_sync.auth.REDIRECT_URI
    assert asked["resource"] == world.rs.url
    assert len(world.calls("register")) == 1  # dynamic client registration
    path = token_cache_path(world.rs.url)
    assert path.parent == cache / "mcp_sync" / "oauth"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stored(world)["tokens"][world.rs.url]["access_token"] in world.tokens
    # the next run (another client, as after a restart) uses the kept tokens: no browser
    with one_word(world) as again:
        assert again.call_tool("echo", {"x": 2}).text
    assert len(world.calls("authorize")) == 1 and len(world.calls("register")) == 1
    copy = pickle.loads(pickle.dumps(one_word(world)))  # a worker's copy: the same word, the same file
    try:
        assert copy.call_tool("echo", {"x": 3}).text
    finally:
        copy.close()
    assert len(world.calls("authorize")) == 1


def test_authorize_logs_in_before_the_first_request(cache: Path, world: Any, browser: Any) -> None:
    client = one_word(world)
    try:
        client.authorize()
        assert len(world.calls("authorize")) == 1 and [t["grant_type"] for t in world.calls("token")] == [
            "authorization_code"
        ]
        assert world.rs.seen(http_method="POST") == []  # logged in without a request to the MCP server
        before = len(world.log)
        client.authorize()  # already authorized: nothing happens
        assert len(world.log) == before
        assert client.call_tool("echo", {"x": 1}).text
        posts = world.rs.seen(http_method="POST")
        assert posts and all(p.headers.get("authorization", "").startswith("Bearer at-") for p in posts)
    finally:
        client.close()
    later = one_word(world)  # another run: the kept tokens, no browser
    try:
        later.authorize()
        assert len(world.calls("authorize")) == 1
    finally:
        later.close()


def test_logout_revokes_at_the_authorization_server_and_forgets(cache: Path, world: Any, browser: Any) -> None:
    world.metadata_changes = {"revocation_endpoint": f"{world.issuer}/revoke"}
    with one_word(world) as client:
        client.call_tool("echo", {})
        tokens = dict(stored(world)["tokens"][world.rs.url])
        assert client.logout() is True
        revoked = world.calls("revoke")
        assert [(r["token"], r["token_type_hint"]) for r in revoked] == [
            (tokens["refresh_token"], "refresh_token"),
            (tokens["access_token"], "access_token"),
        ]
        assert all(r["client_id"] == stored(world)["client"]["client_id"] for r in revoked)
        assert tokens["access_token"] not in world.tokens  # no longer valid at the server
        assert world.rs.url not in stored(world)["tokens"]  # forgotten; the registration is kept
        assert stored(world)["client"]["client_id"]
        client.call_tool("echo", {})  # the next request logs in again
    assert len(world.calls("authorize")) == 2 and len(world.calls("register")) == 1


def test_logout_forgets_even_when_revocation_fails(
    cache: Path, world: Any, browser: Any, caplog: pytest.LogCaptureFixture
) -> None:
    world.metadata_changes = {"revocation_endpoint": f"{world.issuer}/revoke"}
    world.revocation_status = 503
    client = one_word(world)
    try:
        client.authorize()
        with caplog.at_level(logging.WARNING, logger="mcp_sync.auth"):
            assert client.logout() is False
        assert "revocation failed" in caplog.text and "HTTP 503" in caplog.text
        assert world.calls("revoke")
        assert world.rs.url not in stored(world)["tokens"]
        client.authorize()  # logged out here: the browser again
        assert len(world.calls("authorize")) == 2
    finally:
        client.close()


def test_logout_without_revocation_at_the_server(cache: Path, world: Any, browser: Any) -> None:
    client = one_word(world)
    try:
        client.authorize()
        assert client.logout() is False  # the server offers no revocation_endpoint
        assert world.calls("revoke") == [] and world.rs.url not in stored(world)["tokens"]
    finally:
        client.close()
    fresh = one_word(world)  # a logout in a new run finds the kept tokens through discovery
    try:
        fresh.authorize()
        world.metadata_changes = {"revocation_endpoint": f"{world.issuer}/revoke"}
        other = one_word(world)
        try:
            assert other.logout() is True
        finally:
            other.close()
        assert len(world.calls("revoke")) == 2 and world.rs.url not in stored(world)["tokens"]
    finally:
        fresh.close()


def test_authorize_and_logout_need_oauth(world: Any) -> None:
    for client in (mcp_sync.Client.http(world.rs.url), mcp_sync.Client.http(world.rs.url, auth=("u", "p"))):
        try:
            with pytest.raises(TypeError, match=r"authorize\(\) needs a client made with auth='oauth'"):
                client.authorize()
            with pytest.raises(TypeError, match=r"logout\(\) needs"):
                client.logout()
        finally:
            client.close()


def test_an_oauth_object_logs_in_up_front_too(world: Any) -> None:
    from oauthkit import follow

    oauth = mcp_sync.OAuth(on_authorize=follow, timeout=5)
    oauth.authorize(world.rs.url)
    assert oauth.headers_for(world.rs.url)["Authorization"].startswith("Bearer at-")
    with mcp_sync.Client.http(world.rs.url, auth=oauth, mode="modern", timeout=10) as client:
        client.call_tool("echo", {})
    assert len(world.calls("authorize")) == 1
    assert oauth.logout(world.rs.url) is False and oauth.headers_for(world.rs.url) == {}
