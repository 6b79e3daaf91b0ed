"""Tokens are renewed before they expire (issue #12.4): 60 s ahead, or half their lifetime
for tokens living under two minutes; by one thread for many; and still on a 401."""

from __future__ import annotations

import json
import time
from typing import Any, Iterator

import pytest
from helpers import run_workers
from hypothesis import given
from hypothesis import strategies as st
from oauthkit import World, follow

import mcp_sync
from mcp_sync.auth import REFRESH_MARGIN, refresh_due

from httpkit import FakeServer, Reply, Request, json_reply

pytestmark = pytest.mark.timeout(30)


class ExpiringWorld(World):
    """Tokens expire for real here: each token answer takes the next ``lifetimes`` entry as its
    expires_in, and the resource server refuses a token past its expiry."""

    def __init__(self, rs: FakeServer, auth: FakeServer) -> None:
        super().__init__(rs, auth)
        self.lifetimes: list[float] = []
        self.expiry: dict[str, float] = {}
        self.refuse_refresh = False
        rs.override, auth.override = self.resource, self.authorization

    def authorization(self, request: Request) -> Reply | None:
        if request.path.startswith("/token") and self.refuse_refresh and b"refresh_token" in request.body:
            with self.lock:
                self.log.append(("token", {"grant_type": "refresh_token", "refused": True}))
            return json_reply({"error": "invalid_grant"}, 400)
        reply = super().authorization(request)
        if request.path.startswith("/token") and reply is not None and reply.status == 200:
            body = json.loads(reply.body)  # type: ignore[arg-type]
            body["expires_in"] = self.lifetimes.pop(0) if self.lifetimes else 3600
            with self.lock:
                self.expiry[body["access_token"]] = time.monotonic() + body["expires_in"]
            return json_reply(body)
        return reply

    def resource(self, request: Request) -> Reply | None:
        token = request.headers.get("authorization", "")[len("Bearer ") :]
        with self.lock:
            if token in self.expiry and time.monotonic() > self.expiry[token]:
                self.tokens.pop(token, None)
        return super().resource(request)


@pytest.fixture
def world() -> Iterator[ExpiringWorld]:
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        yield ExpiringWorld(rs, auth)


def sent_tokens(world: World, since: float) -> list[str | None]:
    return [r.headers.get("authorization") for r in world.rs.seen(http_method="POST") if r.at >= since]


def test_eight_threads_one_early_refresh(world: ExpiringWorld, no_leaks: None) -> None:
    world.lifetimes = [2.0]  # lives 2 s: renewed 1 s before expiry
    auth = mcp_sync.OAuth(on_authorize=follow, timeout=5)
    with mcp_sync.Client.http(world.rs.url, auth=auth, mode="modern", timeout=10) as client:
        client.connect()
        time.sleep(1.1)  # now inside the margin, still valid
        world.token_delay = 0.3  # a slow token endpoint: the other threads must wait, not refresh too
        start = time.monotonic()
        run_workers(client.call_tool, [("echo", {})] * 8, timeout=20)  # each worker must finish, none may raise
    grants = [t["grant_type"] for t in world.calls("token")]
    assert grants == ["authorization_code", "refresh_token"]  # exactly one refresh for the 8 threads
    new = f"Bearer at-{len(world.log)}"
    assert sent_tokens(world, start) == [new] * 8  # all sent with the renewed token, no 401 round trip


def test_long_lived_tokens_are_not_refreshed_early(world: ExpiringWorld, no_leaks: None) -> None:
    with mcp_sync.Client.http(world.rs.url, auth=mcp_sync.OAuth(on_authorize=follow), mode="modern") as client:
        for _ in range(5):
            client.call_tool("echo", {})
    assert [t["grant_type"] for t in world.calls("token")] == ["authorization_code"]


def test_client_credentials_are_renewed_early_by_the_grant_again(no_leaks: None) -> None:
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        world = ExpiringWorld(rs, auth)
        grants: list[str] = []

        def token_endpoint(request: Request) -> Reply | None:
            if request.path == "/token":
                grants.append(request.body.decode())
                token = f"cc-{len(grants)}"
                with world.lock:
                    world.tokens[token] = []
                return json_reply({"access_token": token, "token_type": "Bearer", "expires_in": 1.0})
            return world.authorization(request)

        auth.override = token_endpoint
        oauth = mcp_sync.OAuth(client_id="svc", client_secret="s3", grant_type="client_credentials", timeout=5)
        with mcp_sync.Client.http(rs.url, auth=oauth, mode="modern", timeout=10) as client:
            client.connect()
            time.sleep(0.6)
            client.call_tool("echo", {})
        assert len(grants) == 2 and all("grant_type=client_credentials" in g for g in grants)
        assert sent_tokens(world, 0)[-1] == "Bearer cc-2"


def test_failed_early_refresh_falls_back_to_the_401_flow(world: ExpiringWorld, no_leaks: None) -> None:
    world.lifetimes = [1.0, 3600]
    with mcp_sync.Client.http(world.rs.url, auth=mcp_sync.OAuth(on_authorize=follow), mode="modern") as client:
        client.connect()
        world.refuse_refresh = True
        time.sleep(1.1)  # expired: the early refresh fails, the request gets a 401, the flow authorizes again
        client.call_tool("echo", {})
        client.call_tool("echo", {})  # the new token: no further refresh attempt
    grants = [(t["grant_type"], t.get("refused")) for t in world.calls("token")]
    # one failed early refresh, one failed refresh on the 401, then a new authorization
    assert grants == [
        ("authorization_code", None),
        ("refresh_token", True),
        ("refresh_token", True),
        ("authorization_code", None),
    ]
    assert len(world.calls("authorize")) == 2


@given(lifetime=st.integers(min_value=1, max_value=10**7), elapsed=st.integers(min_value=0, max_value=10**7))
def test_refresh_margin_property(lifetime: int, elapsed: int) -> None:
    issued = 1_000_000.0
    tokens: dict[str, Any] = {"issued_at": issued, "expires_at": issued + lifetime}
    margin = REFRESH_MARGIN if lifetime >= 2 * REFRESH_MARGIN else lifetime / 2
    assert refresh_due(tokens, now=issued + elapsed) == (elapsed >= lifetime - margin)
    assert refresh_due({"expires_at": None}, now=issued) is False


def test_margin_examples() -> None:
    hour = {"issued_at": 0.0, "expires_at": 3600.0}
    assert not refresh_due(hour, now=3539.0) and refresh_due(hour, now=3540.0)  # 60 s ahead
    minute = {"issued_at": 0.0, "expires_at": 60.0}
    assert not refresh_due(minute, now=29.9) and refresh_due(minute, now=30.0)  # half of a short lifetime
