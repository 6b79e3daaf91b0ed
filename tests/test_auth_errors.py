"""Clear failures (issue #12.6): every AuthorizationError names the step that failed
(discovery, registration, authorization, token) and the URL, never a secret; a step-up
that still fails is an InsufficientScopeError with the scope and the server's explanation."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from oauthkit import World, failing

import mcp_sync

from httpkit import Reply, Request, json_reply

pytestmark = pytest.mark.timeout(20)

SECRET = "s3cr3t-never-shown"


def refuse(world: World, path: str, reply: Reply) -> None:
    def answer(request: Request) -> Reply | None:
        return reply if request.path.split("?")[0] == path else World.authorization(world, request)

    world.auth.override = answer


def _mismatch(world: World) -> tuple[dict[str, Any], str, str]:
    world.prm_resource = "https://evil.example.com/mcp"
    return {}, "discovery", f"http://127.0.0.1:{world.rs.port}/.well-known/oauth-protected-resource/mcp"


def _no_metadata(world: World) -> tuple[dict[str, Any], str, str]:
    world.metadata_path = "/nowhere"
    return {}, "discovery", world.issuer


def _registration(world: World) -> tuple[dict[str, Any], str, str]:
    refuse(world, "/register", json_reply({"error": "invalid_client_metadata"}, 400))
    return {}, "registration", f"{world.issuer}/register"


def _authorization(world: World) -> tuple[dict[str, Any], str, str]:
    world.iss_mode = "wrong"
    return {}, "authorization", f"{world.issuer}/authorize"


def _no_on_authorize(world: World) -> tuple[dict[str, Any], str, str]:
    return {"on_authorize": None}, "authorization", f"{world.issuer}/authorize"


def _token(world: World) -> tuple[dict[str, Any], str, str]:
    refuse(world, "/token", json_reply({"error": "invalid_client", "error_description": "bad secret"}, 401))
    options = {"client_id": "svc", "client_secret": SECRET, "grant_type": "client_credentials"}
    return options, "token", f"{world.issuer}/token"


SETUPS = [_mismatch, _no_metadata, _registration, _authorization, _no_on_authorize, _token]


@pytest.mark.parametrize("setup", SETUPS, ids=lambda f: f.__name__)
def test_every_failure_names_its_step_and_url(
    world: World, setup: Callable[[World], tuple[dict[str, Any], str, str]], no_leaks: None
) -> None:
    options, step, url = setup(world)
    if "on_authorize" in options:
        client = mcp_sync.Client.http(world.rs.url, auth=mcp_sync.OAuth(**options), mode="modern", timeout=10)
        with pytest.raises(mcp_sync.AuthorizationError) as caught:
            client.connect()
        client.close()
        error = caught.value
    else:
        error = failing(world, **options)
    assert (error.step, error.url) == (step, url)
    assert str(error).startswith(f"OAuth {step} failed at {url}: ")
    assert SECRET not in str(error) and SECRET not in repr(error.args)
    assert "code-" not in str(error) and "state=" not in str(error)  # nothing from the authorization response


def test_step_up_that_still_fails_is_insufficient_scope(world: World, no_leaks: None) -> None:
    def deny(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call" and request.headers.get("authorization"):
            challenge = 'Bearer error="insufficient_scope", scope="admin", error_description="admins only"'
            return Reply(403, {"WWW-Authenticate": challenge}, b"")
        return World.resource(world, request)

    world.rs.override = deny
    error = failing(world, max_step_ups=1)
    assert isinstance(error, mcp_sync.InsufficientScopeError)
    assert (error.scope, error.error_description) == ("admin", "admins only")
    assert error.step == "authorization" and error.url == world.rs.url
    assert "admins only" in str(error) and len(world.calls("authorize")) == 2
