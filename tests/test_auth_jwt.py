"""private_key_jwt client authentication (RFC 7523 section 2.2) and cross-app access
(RFC 8693 token exchange for an ID-JAG at the identity provider, then the RFC 7523
jwt-bearer grant), issue #12.1, against local authorization servers (httpkit) that
verify every assertion with the public key, as a real server does."""

from __future__ import annotations

import base64
import json
import sys
import time
from typing import Any, Iterator
from urllib.parse import parse_qs

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from oauthkit import World

import mcp_sync

from httpkit import FakeServer, Reply, Request, json_reply

pytestmark = pytest.mark.timeout(30)


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


@pytest.fixture
def es256() -> Any:
    return ec.generate_private_key(ec.SECP256R1())


@pytest.fixture
def servers() -> Iterator[tuple[FakeServer, FakeServer]]:
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        yield rs, auth


def test_client_credentials_with_an_es256_pem_key(servers: Any, es256: Any, no_leaks: None) -> None:
    world = JwtWorld(*servers, es256.public_key(), ["private_key_jwt"])
    auth = mcp_sync.OAuth(client_id="svc", private_key=pem(es256), grant_type="client_credentials", timeout=5)
    with mcp_sync.Client.http(world.rs.url, auth=auth, mode="modern", timeout=10) as client:
        client.call_tool("echo", {})
        world.revoke()
        client.call_tool("echo", {})  # a second grant: a second, fresh assertion
    assert len(world.assertions) == 2
    (h1, c1), (_, c2) = world.assertions
    assert h1["alg"] == "ES256"
    assert c1["iss"] == c1["sub"] == "svc" and c1["aud"] == world.issuer  # RFC 7523 section 3
    assert 0 < c1["exp"] - c1["iat"] <= 60 and c1["exp"] > time.time()  # short-lived
    assert c1["jti"] != c2["jti"]  # never replayed
    form = world.calls("token")[0]
    assert form["grant_type"] == "client_credentials" and form["resource"] == world.rs.url
    assert "client_secret" not in form


def test_rs256_key_from_a_jwk_with_kid(servers: Any, no_leaks: None) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    jwk["kid"] = "key-1"
    world = JwtWorld(*servers, key.public_key(), ["private_key_jwt", "client_secret_basic"])
    auth = mcp_sync.OAuth(client_id="svc", private_key=jwk, grant_type="client_credentials", timeout=5)
    with mcp_sync.Client.http(world.rs.url, auth=auth, mode="modern", timeout=10) as client:
        client.connect()
    ((header, claims),) = world.assertions
    assert header["alg"] == "RS256" and header["kid"] == "key-1" and claims["sub"] == "svc"


def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch, es256: Any) -> None:
    monkeypatch.setitem(sys.modules, "jwt", None)  # as if PyJWT were not installed
    with pytest.raises(mcp_sync.AuthorizationError, match=r"pip install PyJWT cryptography"):
        mcp_sync.OAuth(client_id="svc", private_key=pem(es256), grant_type="client_credentials")


def test_an_unreadable_key_is_refused_without_showing_it() -> None:
    secret_looking = "-----BEGIN PRIVATE KEY-----\nTOPSECRETMATERIAL\n-----END PRIVATE KEY-----\n"
    with pytest.raises(mcp_sync.AuthorizationError) as caught:
        mcp_sync.OAuth(client_id="svc", private_key=secret_looking)
    assert "TOPSECRET" not in str(caught.value) and "TOPSECRET" not in repr(caught.value.__cause__)


# -- cross-app access ------------------------------------------------------------------------------


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


def test_cross_app_access_exchanges_the_id_token_then_uses_the_jwt_bearer_grant(servers: Any, no_leaks: None) -> None:
    world = JwtWorld(*servers, None, ["client_secret_basic"])
    with FakeServer("modern") as idp_server:
        idp = IdentityProvider(idp_server, world)
        auth = mcp_sync.OAuth(
            grant_type="cross_app_access",
            client_id="xaa-client",
            client_secret="xaa-secret",
            id_token=lambda: "the-users-id-token",
            idp_token_endpoint=f"http://127.0.0.1:{idp_server.port}/token",
            idp_client_id="idp-client",
            timeout=5,
        )
        with mcp_sync.Client.http(world.rs.url, auth=auth, mode="modern", timeout=10) as client:
            client.call_tool("echo", {})
    (exchange,) = idp.exchanges
    assert exchange == {
        "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
        "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
        "subject_token": "the-users-id-token",
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "audience": world.issuer,
        "resource": world.rs.url,
        "client_id": "idp-client",
    }
    (grant,) = world.calls("token")
    assert grant["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" and "assertion" in grant
    assert "client_secret" not in grant  # client_secret_basic: the secret went in the header only


def test_cross_app_access_refusal_names_the_identity_provider(servers: Any, no_leaks: None) -> None:
    world = JwtWorld(*servers, None, ["client_secret_basic"])
    with FakeServer("modern") as idp_server:
        IdentityProvider(idp_server, world)
        endpoint = f"http://127.0.0.1:{idp_server.port}/token"
        auth = mcp_sync.OAuth(
            grant_type="cross_app_access",
            client_id="xaa-client",
            client_secret="xaa-secret",
            id_token="an-expired-id-token",
            idp_token_endpoint=endpoint,
            timeout=5,
        )
        client = mcp_sync.Client.http(world.rs.url, auth=auth, mode="modern", timeout=10)
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            client.connect()
        client.close()
    assert caught.value.step == "token" and caught.value.url == endpoint
    assert "invalid_grant" in str(caught.value) and "an-expired-id-token" not in str(caught.value)
    assert not world.calls("token")
