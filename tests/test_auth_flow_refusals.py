"""What the OAuth flow refuses, and that it stops there: metadata that names no authorization
server, lacks PKCE S256 or an endpoint, or advertises a plain-HTTP one; no way to get a client
id; an on_authorize that fails; an authorization response carrying an error or no code; a
token that is not a Bearer token; a server that refuses the token it was just given. Each one
is an AuthorizationError naming its step and URL, before anything further is sent."""

from __future__ import annotations

from typing import Any, Callable
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from oauthkit import World, failing, follow

import mcp_sync

from httpkit import Reply, Request, json_reply

pytestmark = pytest.mark.timeout(20)


def prm_url(world: World) -> str:
    return f"http://127.0.0.1:{world.rs.port}/.well-known/oauth-protected-resource/mcp"


def test_metadata_that_names_no_authorization_server_is_refused(world: World, no_leaks: None) -> None:
    def resource(request: Request) -> Reply | None:
        if request.path == "/.well-known/oauth-protected-resource/mcp":
            return json_reply({"resource": world.rs.url, "authorization_servers": ["", 7]})
        return world.resource(request)

    world.rs.override = resource
    error = failing(world)
    assert (error.step, error.url) == ("discovery", prm_url(world))
    assert "names no authorization server" in str(error)
    assert not world.auth.seen(http_method="GET") and not world.calls("register")


@pytest.mark.parametrize("methods", [["plain"], None])
def test_an_authorization_server_without_pkce_s256_is_refused(
    world: World, methods: list[str] | None, no_leaks: None
) -> None:
    world.metadata_changes = {"code_challenge_methods_supported": methods}
    error = failing(world)
    assert (error.step, error.url) == ("discovery", world.issuer)
    assert "does not advertise PKCE S256" in str(error) and repr(methods) in str(error)
    assert not world.calls("register") and not world.calls("authorize")


def test_a_legacy_server_without_pkce_s256_is_refused(world: World, no_leaks: None) -> None:
    """A 2025-03-26 server (no Protected Resource Metadata) is its own authorization server:
    its root metadata saying it supports only ``plain`` PKCE ends the flow."""
    origin = f"http://127.0.0.1:{world.rs.port}"

    def legacy(request: Request) -> Reply | None:
        if request.path == "/.well-known/oauth-authorization-server":
            endpoints = {"authorization_endpoint": f"{origin}/authorize", "token_endpoint": f"{origin}/token"}
            return json_reply({"issuer": origin, **endpoints, "code_challenge_methods_supported": ["plain"]})
        if request.path.startswith("/.well-known/"):
            return Reply(404)
        return Reply(401, {"WWW-Authenticate": "Bearer"}, b"")  # no resource_metadata

    world.rs.override = legacy
    error = failing(world)
    assert (error.step, error.url) == ("discovery", origin)
    assert "does not support PKCE S256" in str(error)
    assert not [r for r in world.rs.seen() if r.path.startswith(("/authorize", "/token", "/register"))]


def test_metadata_without_an_authorization_endpoint_is_refused_before_the_user_is_asked(
    world: World, no_leaks: None
) -> None:
    asked: list[str] = []
    world.metadata_changes = {"authorization_endpoint": None}
    error = failing(world, on_authorize=lambda url: asked.append(url) or follow(url))
    assert (error.step, error.url) == ("discovery", world.issuer)
    assert "has no authorization_endpoint" in str(error)
    assert not asked


def test_a_plain_http_endpoint_elsewhere_is_refused(world: World, no_leaks: None) -> None:
    """Codes travel over HTTPS only (loopback excepted): a plain-HTTP authorization endpoint on
    another host is never shown to the user."""
    asked: list[str] = []
    world.metadata_changes = {"authorization_endpoint": "http://as.example.com/authorize?tenant=1"}
    error = failing(world, on_authorize=lambda url: asked.append(url) or follow(url))
    assert (error.step, error.url) == ("authorization", "http://as.example.com/authorize")
    assert "refusing a non-HTTPS endpoint" in str(error) and "tenant" not in str(error)
    assert not asked


def test_no_client_id_and_no_registration_is_refused(world: World, no_leaks: None) -> None:
    world.metadata_changes = {"registration_endpoint": None}
    error = failing(world, client_metadata_url="https://app.example.com/client.json")  # CIMD not advertised
    assert (error.step, error.url) == ("registration", world.issuer)
    assert "no client id" in str(error) and "OAuth(client_id=...)" in str(error)
    assert not world.calls("register") and not world.calls("authorize")


class Refused(mcp_sync.AuthorizationError):
    pass


def _raises_authorization_error(url: str) -> str:
    raise Refused("the user closed the window", step="authorization")


def _raises_value_error(url: str) -> str:
    raise ValueError("no display")


def _returns_none(url: str) -> Any:
    return None


@pytest.mark.parametrize(
    ("on_authorize", "message"),
    [
        (_raises_authorization_error, "the user closed the window"),
        (_raises_value_error, "on_authorize failed: ValueError: no display"),
        (_returns_none, "on_authorize must return the redirect URL, not <class 'NoneType'>"),
    ],
    ids=["its-own-error", "another-exception", "not-a-url"],
)
def test_a_failing_on_authorize_ends_the_flow(
    world: World, on_authorize: Callable[[str], str], message: str, no_leaks: None
) -> None:
    error = failing(world, on_authorize=on_authorize)
    assert message in str(error) and error.step == "authorization"
    if on_authorize is _raises_authorization_error:
        assert type(error) is Refused  # passed on as it is, not wrapped
    else:
        assert error.url == f"{world.issuer}/authorize"
        assert isinstance(error.__cause__, ValueError) == (on_authorize is _raises_value_error)
    assert not world.calls("token")


def answering(world: World, **params: str) -> Callable[[str], str]:
    """An on_authorize whose authorization server answers with ``params`` (state and iss added)."""

    def user(url: str) -> str:
        query = parse_qs(urlsplit(url).query)
        back = {**params, "state": query["state"][0], "iss": world.issuer}
        return f"{query['redirect_uri'][0]}?{urlencode(back)}"

    return user


def test_a_refused_authorization_says_why(world: World, no_leaks: None) -> None:
    error = failing(world, on_authorize=answering(world, error="access_denied", error_description="the user said no"))
    assert (error.step, error.url) == ("authorization", f"{world.issuer}/authorize")
    assert str(error).endswith("authorization refused: access_denied the user said no")
    assert not world.calls("token")


@pytest.mark.parametrize("params", [{}, {"code": ""}], ids=["absent", "empty"])
def test_an_authorization_response_without_a_code_is_refused(
    world: World, params: dict[str, str], no_leaks: None
) -> None:
    error = failing(world, on_authorize=answering(world, **params))
    assert error.step == "authorization" and "carries no code" in str(error)
    assert not world.calls("token")


def test_a_token_that_is_not_a_bearer_token_is_refused(world: World, no_leaks: None) -> None:
    world.token_changes = {"token_type": "mac"}
    error = failing(world)
    assert (error.step, error.url) == ("token", f"{world.issuer}/token")
    assert "unsupported token_type 'mac' (Bearer only)" in str(error)
    assert not [r for r in world.rs.seen(http_method="POST") if r.headers.get("authorization")]  # never sent


def test_protected_resource_metadata_with_a_malformed_port_is_refused(world: World, no_leaks: None) -> None:
    world.prm_resource = "http://127.0.0.1:99999999/mcp"  # no port: it cannot name this server
    error = failing(world)
    assert (error.step, error.url) == ("discovery", prm_url(world))
    assert "99999999" in str(error) and "refusing to authorize for it" in str(error)
    assert not world.auth.seen()


def test_a_server_refusing_the_token_it_was_just_given_fails_at_once(world: World, no_leaks: None) -> None:
    """A resource server that rejects every token (say, it expects another audience): one flow,
    then an error, not a loop of authorizations."""

    def never(request: Request) -> Reply | None:
        if request.path.startswith("/.well-known/"):
            return world.resource(request)
        challenge = f'Bearer resource_metadata="{prm_url(world)}"'
        return Reply(401, {"WWW-Authenticate": challenge}, b"")

    world.rs.override = never
    error = failing(world)
    assert (error.step, error.url) == ("token", world.rs.url)
    assert "refused the token it was just given (HTTP 401)" in str(error)
    assert len(world.calls("authorize")) == 1 and len(world.calls("token")) == 1


@pytest.mark.parametrize("challenge", ['Bearer error="invalid_token"', None])
def test_a_403_that_is_not_about_scope_is_no_reason_to_authorize(
    world: World, challenge: str | None, no_leaks: None
) -> None:
    """Forbidden for another reason than scope: the call fails with the server's 403, and the
    user is not sent to authorize again."""

    def forbidden(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call" and request.headers.get("authorization"):
            return Reply(403, {"WWW-Authenticate": challenge} if challenge else {}, b"not for you")
        return world.resource(request)

    world.rs.override = forbidden
    error = failing(world)
    assert error.step is None and "HTTP 403" in str(error) and "not for you" in str(error)
    assert len(world.calls("authorize")) == 1 and len(world.calls("token")) == 1
