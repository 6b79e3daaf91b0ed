"""The OAuth test world, in one place (#22.10): a fake resource server and authorization server
(two httpkit servers on 127.0.0.1 with overrides) and ``follow``, which plays the user agent.

The authorization server approves at once: ``/authorize`` redirects to the redirect URI with
``code``, ``state`` and ``iss``; ``follow`` requests the URL without following the redirect,
as the conformance client does. The ``world`` fixture is in conftest.py.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import parse_qs, urlencode

import requests

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


def client_for(world: World, **options: Any) -> mcp_sync.Client:
    oauth = mcp_sync.OAuth(on_authorize=follow, timeout=5, **options)
    return mcp_sync.Client.http(world.rs.url, auth=oauth, mode="modern", timeout=10)
