"""OAuth 2.1 (checklist 1.19, A1-A11) against a local fake resource server and
authorization server (two httpkit servers on 127.0.0.1 with overrides).

The authorization server approves at once: ``/authorize`` redirects to the
redirect URI with ``code``, ``state`` and ``iss``; ``on_authorize`` follows that
by requesting the URL without following the redirect, as the conformance client does.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
from helpers import run_workers
from oauthkit import World, client_for, follow

import mcp_sync
from mcp_sync._oauth_flow import as_metadata_candidates, check_redirect, parse_bearer_challenge, pkce_pair, s256

from httpkit import FakeServer, Reply, Request

# -- the full flow ---------------------------------------------------------------------------


def test_flow_pkce_resource_and_token_on_every_request(world: World, no_leaks: None) -> None:
    with client_for(world) as client:
        assert [tool.name for tool in client.tools()] == ["echo"]
        client.call_tool("echo", {"x": 1})
    (register,) = world.calls("register")
    assert register["application_type"] == "native" and "refresh_token" in register["grant_types"]  # A9, SEP-2207
    (authorize,) = world.calls("authorize")
    (token,) = world.calls("token")
    assert authorize["code_challenge_method"] == "S256"  # A4
    assert s256(token["code_verifier"]) == authorize["code_challenge"]
    assert authorize["resource"] == token["resource"] == world.rs.url  # A5: exactly the PRM resource
    assert "scope" not in authorize  # A8: neither the challenge nor the PRM names scopes
    posts = world.rs.seen(http_method="POST")
    assert posts[0].headers.get("authorization") is None  # the one that got the 401
    assert all(r.headers.get("authorization") == "Bearer at-3" for r in posts[1:])  # A7
    assert len(posts) == 4  # discover (401), discover, tools/list, tools/call: one flow, retried once


def test_scope_from_challenge_then_prm(world: World, no_leaks: None) -> None:
    world.challenge_scope, world.prm_scopes = "files:read", ["a", "b"]
    with client_for(world, scopes=["mine"]) as client:
        client.connect()
    assert world.calls("authorize")[0]["scope"] == "files:read"  # A8: the challenge is authoritative
    world.challenge_scope = None
    world.revoke()
    with client_for(world, scopes=["mine"]) as client:
        client.connect()
    assert world.calls("authorize")[1]["scope"] == "a b"  # else scopes_supported


def streams(rs: FakeServer) -> list[Request]:
    return [r for r in rs.seen(http_method="GET") if r.path == "/mcp"]


def test_token_on_legacy_get_stream_and_delete(no_leaks: None) -> None:
    with FakeServer("legacy") as rs, FakeServer("modern") as auth:
        world = World(rs, auth)
        with mcp_sync.Client.http(rs.url, auth=mcp_sync.OAuth(on_authorize=follow), timeout=10) as client:
            assert client.era == "legacy"
            client.call_tool("echo", {})
            deadline = time.monotonic() + 5
            while not streams(rs) and time.monotonic() < deadline:
                time.sleep(0.02)
        token = f"Bearer {next(iter(world.tokens))}"
        assert [r.headers.get("authorization") for r in streams(rs)][:1] == [token]
        assert [r.headers.get("authorization") for r in rs.seen(http_method="DELETE")] == [token]


# -- discovery (A1, A2) ---------------------------------------------------------------------------


def test_prm_well_known_order_without_header(world: World, no_leaks: None) -> None:
    world.prm_in_header = False
    world.prm_paths = {"/.well-known/oauth-protected-resource"}
    world.prm_resource = f"http://127.0.0.1:{world.rs.port}"  # a PRM for the whole origin covers /mcp
    with client_for(world) as client:
        client.connect()
    gets = [r.path for r in world.rs.seen(http_method="GET")]
    assert gets == ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]
    assert world.calls("authorize")[0]["resource"] == world.prm_resource  # as published, no "/" added


def test_as_metadata_discovery_order_with_path(world: World, no_leaks: None) -> None:
    assert as_metadata_candidates("https://as.example/t1") == [
        "https://as.example/.well-known/oauth-authorization-server/t1",
        "https://as.example/.well-known/openid-configuration/t1",
        "https://as.example/t1/.well-known/openid-configuration",
    ]
    assert as_metadata_candidates("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
    ]
    world.as_prefix, world.metadata_path = "/t1", "/t1/.well-known/openid-configuration"
    with client_for(world) as client:
        client.connect()
    gets = [r.path for r in world.auth.seen(http_method="GET") if r.path.startswith(("/.well", "/t1/.well"))]
    assert gets == [
        "/.well-known/oauth-authorization-server/t1",
        "/.well-known/openid-configuration/t1",
        "/t1/.well-known/openid-configuration",
    ]


def test_metadata_issuer_mismatch_is_refused(world: World, no_leaks: None) -> None:
    world.metadata_issuer = "https://attacker.example.com"
    client = client_for(world)
    with pytest.raises(mcp_sync.AuthorizationError, match="not identical"):
        client.connect()
    client.close()
    assert not world.calls("register") and not world.calls("authorize")


def test_resource_mismatch_is_refused(world: World, no_leaks: None) -> None:
    world.prm_resource = "https://evil.example.com/mcp"
    client = client_for(world)
    with pytest.raises(mcp_sync.AuthorizationError, match=r"evil\.example\.com"):
        client.connect()
    client.close()
    assert not world.calls("authorize")


# -- PKCE, iss (A4, A6) ------------------------------------------------------------------------------


def test_pkce_s256_rfc7636_vector() -> None:
    assert s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    verifier, challenge = pkce_pair()
    assert 43 <= len(verifier) <= 128 and challenge == s256(verifier) and pkce_pair()[0] != verifier


@pytest.mark.parametrize(
    ("query", "advertised", "error"),
    [
        ("code=c&state=s&iss=https%3A%2F%2Fas.example", True, None),
        ("code=c&state=s", False, None),
        ("code=c&state=s", True, "no iss"),
        ("code=c&state=s&iss=https%3A%2F%2Fevil.example", False, "not the recorded"),
        ("code=c&state=s&iss=https%3A%2F%2Fas.example%2F", True, "not the recorded"),  # no normalization
        ("code=c&state=s&iss=HTTPS%3A%2F%2FAS.EXAMPLE", True, "not the recorded"),
        ("code=c&state=x&iss=https%3A%2F%2Fas.example", True, "state"),
        ("error=access_denied&state=s&iss=https%3A%2F%2Fevil.example", True, "not the recorded"),  # error not shown
    ],
)
def test_iss_checks(query: str, advertised: bool, error: str | None) -> None:
    url = f"http://127.0.0.1:8765/callback?{query}"
    if error is None:
        assert check_redirect(url, issuer="https://as.example", iss_advertised=advertised, state="s") == "c"
    else:
        with pytest.raises(mcp_sync.AuthorizationError, match=error) as caught:
            check_redirect(url, issuer="https://as.example", iss_advertised=advertised, state="s")
        assert "access_denied" not in str(caught.value)


@pytest.mark.parametrize("mode", ["wrong", "slash", "omit"])
def test_bad_iss_never_reaches_the_token_endpoint(world: World, mode: str, no_leaks: None) -> None:
    world.iss_mode = mode
    client = client_for(world)
    with pytest.raises(mcp_sync.AuthorizationError):
        client.connect()
    client.close()
    assert world.calls("authorize") and not world.calls("token")


def test_challenge_parsing() -> None:
    header = 'Basic realm="x", Bearer error="insufficient_scope", scope="a b", resource_metadata="https://m/p"'
    assert parse_bearer_challenge(header) == {
        "error": "insufficient_scope",
        "scope": "a b",
        "resource_metadata": "https://m/p",
    }
    assert parse_bearer_challenge('Bearer realm="r", Basic realm="y"') == {"realm": "r"}


# -- step-up (A8) ----------------------------------------------------------------------------------------


def test_step_up_uses_the_union_of_scopes(world: World, no_leaks: None) -> None:
    world.challenge_scope, world.call_scope = "read", "write"
    with client_for(world) as client:
        client.call_tool("echo", {})
    assert [a["scope"] for a in world.calls("authorize")] == ["read", "read write"]


def test_step_up_is_bounded(world: World, no_leaks: None) -> None:
    world.call_scope = "admin"

    def deny(request: Request) -> Reply | None:  # a server whose step-ups never succeed
        if request.rpc_method == "tools/call" and request.headers.get("authorization"):
            return Reply(403, {"WWW-Authenticate": 'Bearer error="insufficient_scope", scope="admin"'}, b"")
        return world.resource(request)

    world.rs.override = deny
    with client_for(world, max_step_ups=2) as client:
        with pytest.raises(mcp_sync.AuthorizationError, match="retry limit"):
            client.call_tool("echo", {})
        assert len(world.calls("authorize")) == 3  # the first authorization and 2 step-ups


# -- threads, refresh -----------------------------------------------------------------------------------


def test_concurrent_401s_run_one_flow(world: World, no_leaks: None) -> None:
    with client_for(world) as client:
        client.connect()
        world.revoke()  # every thread's next request gets a 401 at about the same time
        world.token_delay = 0.3
        run_workers(client.call_tool, [("echo", {})] * 8, timeout=20)  # each worker must finish, none may raise
    tokens = world.calls("token")
    assert [t["grant_type"] for t in tokens] == ["authorization_code", "refresh_token"]  # one refresh, not 8
    assert len(world.calls("authorize")) == 1


def test_plain_requests_auth_still_works(no_leaks: None) -> None:
    with FakeServer("modern") as rs:
        with mcp_sync.Client.http(rs.url, auth=("user", "pw"), mode="modern", timeout=10) as client:
            client.connect()
        assert rs.seen("server/discover")[0].headers["authorization"].startswith("Basic ")


def test_authorization_server_change_reregisters(world: World, no_leaks: None) -> None:
    with FakeServer("modern") as other:
        with client_for(world) as client:
            client.connect()
            first = world.issuer
            moved = World(world.rs, other)  # the PRM now names another authorization server (A10)
            moved.client_prefix = "other"
            world.rs.override = moved.resource
            client.call_tool("echo", {})
        assert world.calls("register") and moved.calls("register")
        assert moved.calls("authorize")[0]["client_id"] == "other-1"  # its own registration, never client-1
        assert urlsplit(moved.issuer).port != urlsplit(first).port
