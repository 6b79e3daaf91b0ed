"""private_key_jwt client authentication (RFC 7523 section 2.2) and cross-app access
(RFC 8693 token exchange for an ID-JAG at the identity provider, then the RFC 7523
jwt-bearer grant), issue #12.1, against local authorization servers (httpkit) that
verify every assertion with the public key, as a real server does."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Iterator

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from oauthkit import IdentityProvider, JwtWorld, pem

import mcp_sync

from httpkit import FakeServer

pytestmark = pytest.mark.timeout(30)


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
