"""OAuth 2.1 (checklist 1.19, A1-A11) against a local fake resource server and
authorization server (two httpkit servers on 127.0.0.1 with overrides).

The authorization server approves at once: ``/authorize`` redirects to the
redirect URI with ``code``, ``state`` and ``iss``; ``on_authorize`` follows that
by requesting the URL without following the redirect, as the conformance client does.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from helpers import run_workers

import mcp_sync
from mcp_sync._oauth_flow import as_metadata_candidates, check_redirect, parse_bearer_challenge, pkce_pair, s256

from httpkit import FakeServer, Reply, Request, json_reply


def follow(url: str) -> str:
    response = requests.get(url, allow_redirects=False, timeout=5)
    return response.headers["Location"]


class World:
    """A resource server (``rs``) protected by an authorization server (``auth``), both scriptable."""

    def __init__(self, rs: FakeServer, auth: FakeServer) -> None:
        self.rs, self.auth = rs, auth
        self.prm_paths = {"/.well-known/oauth-protected-resource/mcp"}
        self.prm_in_header = True
        self.prm_resource: str | None = None  # default: the MCP URL
        self.prm_scopes: list[str] | None = None
        self.challenge_scope: str | None = None
        self.as_prefix = ""
        self.metadata_path = "/.well-known/oauth-authorization-server"
        self.metadata_issuer: str | None = None  # default: the real issuer
        self.iss_mode = "correct"  # or "omit", "wrong", "slash"
        self.iss_advertised = True
        self.call_scope: str | None = None  # tools/call needs this scope (403 insufficient_scope otherwise)
        self.token_delay = 0.0
        self.tokens: dict[str, list[str]] = {}  # valid access token -> scopes
        self.refresh: dict[str, list[str]] = {}
        self.codes: dict[str, dict[str, Any]] = {}
        self.log: list[tuple[str, dict[str, Any]]] = []  # ("authorize" | "token" | "register", params)
        self.client_prefix = "client"
        self.lock = threading.Lock()
        rs.override, auth.override = self.resource, self.authorization

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.auth.port}{self.as_prefix}"

    def calls(self, kind: str) -> list[dict[str, Any]]:
        with self.lock:
            return [params for k, params in self.log if k == kind]

    def revoke(self) -> None:
        with self.lock:
            self.tokens.clear()

    # -- the resource server ----------------------------------------------------------

    def resource(self, request: Request) -> Reply | None:
        path = request.path.split("?")[0]
        if request.method == "GET" and path.startswith("/.well-known/"):
            if path not in self.prm_paths:
                return Reply(404)
            doc: dict[str, Any] = {"resource": self.prm_resource or self.rs.url, "authorization_servers": [self.issuer]}
            if self.prm_scopes is not None:
                doc["scopes_supported"] = self.prm_scopes
            return json_reply(doc)
        header = request.headers.get("authorization", "")
        token = header[len("Bearer ") :] if header.startswith("Bearer ") else None
        with self.lock:
            scopes = self.tokens.get(token or "")
        if scopes is None:
            challenge = "Bearer"
            if self.prm_in_header:
                challenge += f' resource_metadata="http://127.0.0.1:{self.rs.port}{sorted(self.prm_paths)[0]}"'
            if self.challenge_scope:
                challenge += f', scope="{self.challenge_scope}"'
            return Reply(401, {"WWW-Authenticate": challenge}, b"")
        if request.rpc_method == "tools/call" and self.call_scope and self.call_scope not in scopes:
            challenge = f'Bearer error="insufficient_scope", scope="{self.call_scope}"'
            return Reply(403, {"WWW-Authenticate": challenge}, b"")
        return None

    # -- the authorization server -----------------------------------------------------------

    def authorization(self, request: Request) -> Reply | None:
        path, _, query = request.path.partition("?")
        if request.method == "GET" and path == self.metadata_path:
            meta = {
                "issuer": self.metadata_issuer or self.issuer,
                "authorization_endpoint": f"{self.issuer}/authorize",
                "token_endpoint": f"{self.issuer}/token",
                "registration_endpoint": f"{self.issuer}/register",
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "authorization_response_iss_parameter_supported": self.iss_advertised,
            }
            return json_reply(meta)
        if path == f"{self.as_prefix}/register":
            body = json.loads(request.body)
            with self.lock:
                self.log.append(("register", body))
            return json_reply({"client_id": f"{self.client_prefix}-{len(self.calls('register'))}", **body}, 201)
        if path == f"{self.as_prefix}/authorize":
            params = {k: v[0] for k, v in parse_qs(query).items()}
            code = f"code-{len(self.codes)}"
            with self.lock:
                self.log.append(("authorize", params))
                self.codes[code] = params
            back = {"code": code, "state": params["state"]}
            if self.iss_mode != "omit":
                wrong = {"wrong": "https://evil.example.com", "slash": self.issuer + "/"}
                back["iss"] = wrong.get(self.iss_mode, self.issuer)
            return Reply(302, {"Location": f"{params['redirect_uri']}?{urlencode(back)}"})
        if path == f"{self.as_prefix}/token":
            form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
            time.sleep(self.token_delay)
            with self.lock:
                self.log.append(("token", form))
                if form["grant_type"] == "authorization_code":
                    granted = self.codes.pop(form["code"])
                    if s256(form["code_verifier"]) != granted["code_challenge"]:
                        return json_reply({"error": "invalid_grant"}, 400)
                    scopes = granted.get("scope", "").split()
                else:
                    scopes = self.refresh.get(form.get("refresh_token", ""), [])
                n = len(self.log)
                self.tokens[f"at-{n}"], self.refresh[f"rt-{n}"] = scopes, scopes
            return json_reply(
                {"access_token": f"at-{n}", "token_type": "Bearer", "expires_in": 60, "refresh_token": f"rt-{n}"}
            )
        return Reply(404)


@pytest.fixture
def world() -> Iterator[World]:
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        yield World(rs, auth)


def client_for(world: World, **options: Any) -> mcp_sync.Client:
    oauth = mcp_sync.OAuth(on_authorize=follow, timeout=5, **options)
    return mcp_sync.Client.http(world.rs.url, auth=oauth, mode="modern", timeout=10)


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
