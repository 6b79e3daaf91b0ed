"""When a token due for renewal is sent as it is: one the authorization server gave no usable
lifetime (expires_in 0 or negative), one without a refresh token (only a user could renew it),
and one whose renewal would have to wait for another thread's interactive flow longer than
``timeout``. None of them stalls a request or loops on the token endpoint."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlsplit

import pytest
from helpers import in_thread
from oauthkit import World, client_for, follow

from httpkit import Request

pytestmark = pytest.mark.timeout(30)


def sent_tokens(world: World) -> list[str | None]:
    return [r.headers.get("authorization") for r in world.rs.seen(http_method="POST")]


@pytest.mark.parametrize("expires_in", [0, -30])
def test_a_token_without_a_usable_lifetime_is_not_renewed_early(
    world: World, expires_in: int, no_leaks: None
) -> None:
    """expires_in 0 or negative is nonsense, not "renew at once": the token is used until a 401."""
    world.token_changes = {"expires_in": expires_in}
    with client_for(world) as client:
        for _ in range(3):
            client.call_tool("echo", {})
    assert [t["grant_type"] for t in world.calls("token")] == ["authorization_code"]
    assert sent_tokens(world)[-3:] == ["Bearer at-3"] * 3


def test_a_due_token_without_a_refresh_token_is_sent_as_it_is(world: World, no_leaks: None) -> None:
    """Renewing it would take the user: the request goes with it (the server still takes it),
    no token request, no new authorization."""
    world.token_changes = {"expires_in": 0.001, "refresh_token": None}  # due from the start
    with client_for(world) as client:
        for _ in range(3):
            client.call_tool("echo", {})
    assert [t["grant_type"] for t in world.calls("token")] == ["authorization_code"]
    assert len(world.calls("authorize")) == 1
    assert sent_tokens(world)[-3:] == ["Bearer at-3"] * 3


def test_an_early_renewal_waits_for_another_threads_flow_no_longer_than_timeout(
    world: World, no_leaks: None
) -> None:
    """One thread is in a step-up authorization, waiting for its user; another thread's token is
    due for renewal. That one gives up waiting for the flow after ``timeout`` and sends its
    still-valid token, rather than waiting for the user."""
    world.call_scope = "write"  # tools/call steps up: a second, interactive authorization
    world.token_changes = {"expires_in": 0.001}  # every request renews first (a refresh token)
    in_flow, release = threading.Event(), threading.Event()

    def user(url: str) -> str:
        if parse_qs(urlsplit(url).query).get("scope") == ["write"]:  # the step-up
            in_flow.set()
            release.wait(20)
        return follow(url)

    with client_for(world, on_authorize=user, timeout=2) as client:
        client.connect()
        stepping_up, outcome = in_thread(lambda: client.call_tool("echo", {}))
        try:
            assert in_flow.wait(10)
            tokens_before = len(world.calls("token"))
            client.ping()  # would hang until release without the bound
            assert not release.is_set() and len(world.calls("token")) == tokens_before
            ping: Request = world.rs.seen("server/discover")[-1]  # a modern server's ping
            assert ping.headers["authorization"] == f"Bearer {list(world.tokens)[-1]}"  # the newest token
        finally:
            release.set()
            stepping_up.join(10)
        assert "error" not in outcome and outcome["value"].text
    assert [a.get("scope") for a in world.calls("authorize")] == [None, "write"]
