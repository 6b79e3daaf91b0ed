"""The OAuth test world, in one place (#22.10): a fake resource server and authorization server
(two httpkit servers on 127.0.0.1 with overrides) and ``follow``, which plays the user agent.

The authorization server approves at once: ``/authorize`` redirects to the redirect URI with
``code``, ``state`` and ``iss``; ``follow`` requests the URL without following the redirect,
as the conformance client does. The ``world`` fixture is in conftest.py. ``JwtWorld`` and
``IdentityProvider`` add the machine grants: private_key_jwt, client_credentials, cross-app access.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

import mcp_sync
from mcp_sync._oauth_flow import s256

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
        self.metadata_changes: dict[str, Any] = {}  # merged into the AS metadata; None removes a field
        self.token_changes: dict[str, Any] = {}  # merged into every token answer; None removes a field
        self.revocation_status = 200  # what /revoke (RFC 7009) answers; offered when metadata_changes names it
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
            return json_reply(changed(meta, self.metadata_changes))
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
        if path == f"{self.as_prefix}/revoke":  # RFC 7009: 200 revokes (or the token was not valid anyway)
            form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
            with self.lock:
                self.log.append(("revoke", form))
                if self.revocation_status != 200:
                    return json_reply({"error": "temporarily_unavailable"}, self.revocation_status)
                self.tokens.pop(form["token"], None)
                self.refresh.pop(form["token"], None)
            return Reply(200, {}, b"")
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
            answer = {"access_token": f"at-{n}", "token_type": "Bearer", "expires_in": 60, "refresh_token": f"rt-{n}"}
            return json_reply(changed(answer, self.token_changes))
        return Reply(404)


def changed(document: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``document`` with ``changes`` merged in, a None value removing its field."""
    merged = {**document, **changes}
    return {key: value for key, value in merged.items() if value is not None}


def client_for(world: World, auth: mcp_sync.OAuth | None = None, **options: Any) -> mcp_sync.Client:
    """A client of the world's resource server through ``auth``, or ``OAuth(**options)`` following
    the redirect itself."""
    oauth = auth or mcp_sync.OAuth(**{"on_authorize": follow, "timeout": 5, **options})
    return mcp_sync.Client.http(world.rs.url, auth=oauth, mode="modern", timeout=10)


def failing(world: World, auth: mcp_sync.OAuth | None = None, **options: Any) -> mcp_sync.AuthorizationError:
    """The AuthorizationError a tool call through :func:`client_for` fails with (the client is closed)."""
    client = client_for(world, auth, **options)
    try:
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            client.call_tool("echo", {})
    finally:
        client.close()
    return caught.value


# -- browser_authorize (test_auth_browser*): the user's browser and an approving server -------------


class Browser:
    """Follows URLs in a thread (redirects included), like the user's browser."""

    def __init__(self) -> None:
        self.visits: list[requests.Response] = []
        self.threads: list[threading.Thread] = []

    def open(self, url: str) -> bool:
        def visit() -> None:
            self.visits.append(requests.get(url, timeout=5))

        thread = threading.Thread(target=visit)
        thread.start()
        self.threads.append(thread)
        return True

    def join(self) -> None:
        for thread in self.threads:
            thread.join(10)


def approve(request: Request) -> Reply | None:
    """An authorization server that approves at once: /authorize redirects to redirect_uri with
    a code and the state (the ``authorization_server`` fixture)."""
    params = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
    back = urlencode({"code": "the-code", "state": params["state"]})
    return Reply(302, {"Location": f"{params['redirect_uri']}?{back}"})


def authorization_url(server: FakeServer, redirect_uri: str, state: str = "st4te") -> str:
    return f"http://127.0.0.1:{server.port}/authorize?" + urlencode({"redirect_uri": redirect_uri, "state": state})


# -- private_key_jwt and cross-app access -------------------------------------------------------


def pem(key: Any) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


class JwtWorld(World):
    """The World's resource server, with an authorization server that takes client_credentials
    and jwt-bearer grants, authenticating the client by private_key_jwt or client_secret_basic."""

    def __init__(self, rs: FakeServer, auth: FakeServer, public_key: Any, methods: list[str]) -> None:
        super().__init__(rs, auth)
        self.public_key = public_key
        self.methods = methods
        self.jag_key = ec.generate_private_key(ec.SECP256R1())  # what the IdP signs ID-JAGs with
        self.assertions: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (header, claims) verified
        auth.override = self.authorization

    def authorization(self, request: Request) -> Reply | None:
        path = request.path.split("?")[0]
        if request.method == "GET" and path == "/.well-known/oauth-authorization-server":
            return json_reply(
                {
                    "issuer": self.issuer,
                    "token_endpoint": f"{self.issuer}/token",
                    "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                    "token_endpoint_auth_methods_supported": self.methods,
                    "token_endpoint_auth_signing_alg_values_supported": ["ES256", "RS256"],
                }
            )
        if path != "/token":
            return Reply(404)
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        with self.lock:
            self.log.append(("token", form))
        if "client_assertion" in form:
            assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            header = jwt.get_unverified_header(form["client_assertion"])
            claims = jwt.decode(
                form["client_assertion"], self.public_key, algorithms=["ES256", "RS256"], audience=self.issuer
            )
            self.assertions.append((header, claims))
        elif request.headers.get("authorization", "").startswith("Basic "):
            user, _, secret = base64.b64decode(request.headers["authorization"][6:]).decode().partition(":")
            if (user, secret) != ("xaa-client", "xaa-secret"):
                return json_reply({"error": "invalid_client"}, 401)
        else:
            return json_reply({"error": "invalid_client"}, 401)
        if form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            grant = jwt.decode(form["assertion"], self.jag_key.public_key(), algorithms=["ES256"], audience=self.issuer)
            assert jwt.get_unverified_header(form["assertion"])["typ"] == "oauth-id-jag+jwt"
            if grant["resource"] != self.rs.url or grant["client_id"] != "xaa-client":
                return json_reply({"error": "invalid_grant"}, 400)
        with self.lock:
            token = f"at-{len(self.log)}"
            self.tokens[token] = form.get("scope", "").split()
        return json_reply({"access_token": token, "token_type": "Bearer", "expires_in": 3600})


class IdentityProvider:
    """The enterprise IdP: exchanges the user's ID token (RFC 8693) for an ID-JAG for the given
    audience (an authorization server) and resource, signed with the key that server trusts."""

    def __init__(self, server: FakeServer, world: JwtWorld) -> None:
        self.server, self.world = server, world
        self.exchanges: list[dict[str, str]] = []
        server.override = self.answer

    def answer(self, request: Request) -> Reply | None:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        self.exchanges.append(form)
        if form.get("subject_token") != "the-users-id-token":
            return json_reply({"error": "invalid_grant"}, 400)
        claims = {
            "iss": f"http://127.0.0.1:{self.server.port}",
            "sub": "alice",
            "aud": form["audience"],
            "resource": form["resource"],
            "client_id": "xaa-client",
            "exp": int(time.time()) + 300,
            "jti": str(len(self.exchanges)),
        }
        grant = jwt.encode(claims, self.world.jag_key, algorithm="ES256", headers={"typ": "oauth-id-jag+jwt"})
        return json_reply(
            {"access_token": grant, "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag", "token_type": "N_A"}
        )
