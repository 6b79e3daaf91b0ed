"""The client identities and machine grants of OAuth beyond the default flow: a public
pre-registered client, credentials pinned to another issuer (the client registers itself, for
client_credentials), scopes in the client_credentials and cross-app access requests, and what
these grants refuse: an identity provider issuing something else than an identity assertion
grant, an ID token source giving none, a stored private_key_jwt client without the key."""

from __future__ import annotations

from typing import Any, Iterator
from urllib.parse import parse_qs

import pytest
from oauthkit import IdentityProvider, JwtWorld, World, client_for, failing

import mcp_sync
from mcp_sync.auth import ID_JAG_TYPE, JWT_BEARER, TOKEN_EXCHANGE, MemoryTokenStore

from httpkit import FakeServer, Reply, Request, json_reply

pytestmark = pytest.mark.timeout(20)


def token_posts(server: FakeServer) -> list[Request]:
    return [r for r in server.seen(http_method="POST") if r.path == "/token"]


def test_a_public_pre_registered_client_sends_its_id_and_no_secret(world: World, no_leaks: None) -> None:
    with client_for(world, client_id="public-app") as client:
        client.call_tool("echo", {})
    assert not world.calls("register")
    assert world.calls("authorize")[0]["client_id"] == "public-app"
    (token,) = world.calls("token")
    assert token["client_id"] == "public-app" and "client_secret" not in token
    assert "authorization" not in token_posts(world.auth)[0].headers  # no Basic header either


def test_credentials_pinned_to_another_issuer_register_a_machine_client(world: World, no_leaks: None) -> None:
    """client_id/client_secret are for https://other-as.example only: this authorization server
    never sees them; the client registers for client_credentials (no redirect, no code)."""
    oauth = mcp_sync.OAuth(
        client_id="pinned", client_secret="pinned-secret", issuer="https://other-as.example",
        grant_type="client_credentials", timeout=5,
    )  # fmt: skip
    with client_for(world, oauth) as client:
        client.call_tool("echo", {})
    (register,) = world.calls("register")
    assert register["grant_types"] == ["client_credentials"] and register["response_types"] == []
    (token,) = world.calls("token")
    assert token["grant_type"] == "client_credentials" and token["client_id"] == "client-1"
    sent = b"".join(r.body + str(r.headers).encode() for r in world.auth.seen())
    assert b"pinned" not in sent and not world.calls("authorize")


def test_client_credentials_ask_for_the_challenges_scope(no_leaks: None) -> None:
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        world = JwtWorld(rs, auth, None, ["client_secret_basic"])
        world.challenge_scope = "files:read files:write"
        oauth = mcp_sync.OAuth(client_id="xaa-client", client_secret="xaa-secret", grant_type="client_credentials")
        with client_for(world, oauth) as client:
            client.call_tool("echo", {})
        (token,) = world.calls("token")
        assert token["grant_type"] == "client_credentials" and token["scope"] == "files:read files:write"
        assert sorted(world.tokens.values()) == [["files:read", "files:write"]]


@pytest.fixture
def machine() -> Iterator[tuple[JwtWorld, FakeServer]]:
    """A JwtWorld (client xaa-client/xaa-secret) and an identity provider's server."""
    with FakeServer("modern") as rs, FakeServer("modern") as auth, FakeServer("modern") as idp_server:
        yield JwtWorld(rs, auth, None, ["client_secret_basic"]), idp_server


def cross_app(idp_server: FakeServer, id_token: Any) -> mcp_sync.OAuth:
    return mcp_sync.OAuth(
        grant_type="cross_app_access", client_id="xaa-client", client_secret="xaa-secret", id_token=id_token,
        idp_token_endpoint=f"http://127.0.0.1:{idp_server.port}/token", timeout=5,
    )  # fmt: skip


def test_cross_app_access_asks_for_the_challenges_scope_at_both_servers(
    machine: tuple[JwtWorld, FakeServer], no_leaks: None
) -> None:
    world, idp_server = machine
    world.challenge_scope = "files:read"
    idp = IdentityProvider(idp_server, world)
    with client_for(world, cross_app(idp_server, "the-users-id-token")) as client:
        client.call_tool("echo", {})
    (exchange,) = idp.exchanges
    assert exchange["grant_type"] == TOKEN_EXCHANGE and exchange["scope"] == "files:read"
    (grant,) = world.calls("token")
    assert grant["grant_type"] == JWT_BEARER and grant["scope"] == "files:read"


@pytest.mark.parametrize("id_token", [lambda: "", lambda: None], ids=["empty", "none"])
def test_an_id_token_source_giving_none_is_refused_before_the_exchange(
    machine: tuple[JwtWorld, FakeServer], id_token: Any, no_leaks: None
) -> None:
    world, idp_server = machine
    error = failing(world, (cross_app(idp_server, id_token)))
    assert (error.step, error.url) == ("token", f"http://127.0.0.1:{idp_server.port}/token")
    assert "no ID token to exchange" in str(error)
    assert not idp_server.seen() and not world.calls("token")


def test_an_exchange_issuing_another_token_type_is_refused(
    machine: tuple[JwtWorld, FakeServer], no_leaks: None
) -> None:
    """An identity provider answering the exchange with an access token (not an ID-JAG): that
    token is never presented to the authorization server as a jwt-bearer assertion."""
    world, idp_server = machine
    access = "urn:ietf:params:oauth:token-type:access_token"

    def wrong_type(request: Request) -> Reply | None:
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        assert form["requested_token_type"] == ID_JAG_TYPE
        return json_reply({"access_token": "an-idp-access-token", "issued_token_type": access, "token_type": "Bearer"})

    idp_server.override = wrong_type
    error = failing(world, (cross_app(idp_server, "the-users-id-token")))
    assert error.step == "token" and error.url == f"http://127.0.0.1:{idp_server.port}/token"
    assert f"issued a {access!r}, not an identity assertion grant" in str(error)
    assert "an-idp-access-token" not in str(error) and not world.calls("token")


def test_a_stored_private_key_jwt_client_without_the_key_is_refused(world: World, no_leaks: None) -> None:
    """A store shared with an OAuth configured with a private key holds a private_key_jwt client;
    one without the key fails clearly, rather than asking for tokens unauthenticated."""
    store = MemoryTokenStore()
    store.save(world.issuer, {"client": {"client_id": "svc", "client_secret": None, "auth_method": "private_key_jwt"}})
    oauth = mcp_sync.OAuth(
        client_id="elsewhere", client_secret="s", issuer="https://other-as.example",
        grant_type="client_credentials", token_store=store, timeout=5,
    )  # fmt: skip
    error = failing(world, (oauth))
    assert (error.step, error.url) == ("token", f"{world.issuer}/token")
    assert "authenticates with private_key_jwt but has no private_key" in str(error)
    assert not world.calls("token") and not world.calls("register")
