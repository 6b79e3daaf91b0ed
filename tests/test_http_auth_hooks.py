"""The HTTP transports' auth extension points: an auth object's ``handle_challenge(response,
attempt)`` answering a 401 (accepted, declined, running past the call's deadline), and
``client.bind(auth=...)`` with a ``requests`` auth object and with an :class:`mcp_sync.OAuth`
that holds a token (its ``headers_for``)."""

from __future__ import annotations

import base64
import time

import pytest
import requests
from oauthkit import World, follow

import mcp_sync

from httpkit import FakeServer, Reply, Request

pytestmark = pytest.mark.timeout(60)


class TicketAuth:
    """A ``requests`` auth object with the challenge hook: a 401 makes it fetch a new ticket
    (after ``delay`` seconds), and ``grant`` says whether to have the request sent again."""

    def __init__(self, grant: bool = True, delay: float = 0.0) -> None:
        self.ticket = "none"
        self.grant = grant
        self.delay = delay
        self.challenges: list[tuple[int, int]] = []  # (status, attempt)

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Ticket {self.ticket}"
        return request

    def handle_challenge(self, response: requests.Response, attempt: int) -> bool:
        self.challenges.append((response.status_code, attempt))
        time.sleep(self.delay)
        self.ticket = "valid"
        return self.grant


def _tickets_required(request: Request) -> Reply | None:
    if request.method == "POST" and request.headers.get("authorization") != "Ticket valid":
        return Reply(401, {"WWW-Authenticate": "Ticket"}, b"a ticket, please")
    return None


def test_a_challenge_answered_by_the_auth_object_is_sent_again(no_leaks: None) -> None:
    auth = TicketAuth()
    with FakeServer("modern") as fake:
        fake.override = _tickets_required
        with mcp_sync.Client.http(fake.url, auth=auth) as client:
            assert client.call_tool("echo", {"n": 1}).text == '{"n": 1}'
        assert auth.challenges == [(401, 0)]  # once: the new ticket holds for every later request
        assert [r.headers["authorization"] for r in fake.seen("server/discover")] == ["Ticket none", "Ticket valid"]


def test_a_challenge_the_auth_object_declines_fails_the_call(no_leaks: None) -> None:
    auth = TicketAuth(grant=False)
    with FakeServer("modern") as fake:
        fake.override = _tickets_required
        client = mcp_sync.Client.http(fake.url, auth=auth, mode="modern", timeout=10)
        with pytest.raises(mcp_sync.AuthorizationError, match=r"HTTP 401 .*: a ticket, please"):
            client.connect()
        client.close()
        assert auth.challenges == [(401, 0)] and len(fake.seen("server/discover")) == 1


def test_a_challenge_the_auth_object_fails_fails_the_call_with_its_error(no_leaks: None) -> None:
    """handle_challenge raises (the user refused to log in): that error is the call's."""

    class Refusing(TicketAuth):
        def handle_challenge(self, response: requests.Response, attempt: int) -> bool:
            raise mcp_sync.AuthorizationError("the user closed the login window")

    with FakeServer("modern") as fake:
        fake.override = _tickets_required
        client = mcp_sync.Client.http(fake.url, auth=Refusing(), mode="modern", timeout=10)
        with pytest.raises(mcp_sync.AuthorizationError, match="the user closed the login window"):
            client.connect()
        client.close()
        assert len(fake.seen("server/discover")) == 1


def test_a_challenge_answered_after_the_deadline_is_not_sent_again(no_leaks: None) -> None:
    """The auth object (which takes no deadline) returns after the call's timeout: the call
    times out and the request is not sent again with the new ticket."""
    auth = TicketAuth()
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, auth=auth) as client:
        client.connect()
        auth.ticket, auth.delay = "expired", 0.6
        fake.override = _tickets_required
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {"n": 2}, timeout=0.2)
        assert auth.challenges[-1] == (401, 0)
        assert len([r for r in fake.seen("tools/call") if r.json["params"]["arguments"] == {"n": 2}]) == 1
        auth.delay = 0.0
        assert client.call_tool("echo", {"n": 3}).text == '{"n": 3}'  # the ticket it got meanwhile


def test_a_view_bound_to_a_requests_auth_object_sends_its_credentials(no_leaks: None) -> None:
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        view = client.bind(auth=requests.auth.HTTPBasicAuth("ann", "s3cret"))
        assert view.call_tool("echo", {"who": "ann"}).text == '{"who": "ann"}'
        client.call_tool("echo", {"who": "client"})
        sent = {r.json["params"]["arguments"]["who"]: r.headers.get("authorization") for r in fake.seen("tools/call")}
    assert sent == {"ann": "Basic " + base64.b64encode(b"ann:s3cret").decode(), "client": None}


class PublicDiscoveryWorld(World):
    """The OAuth world whose server answers server/discover to anyone; everything else needs a token."""

    def resource(self, request: Request) -> Reply | None:
        return None if request.rpc_method == "server/discover" else super().resource(request)


def test_a_view_bound_to_an_oauth_object_sends_its_current_token(no_leaks: None) -> None:
    """An OAuth object that holds a token (another client authorized it): a view of a client
    without auth sends that token, read from the object on each request (headers_for)."""
    with FakeServer("modern") as rs, FakeServer("modern") as auth_server:
        world = PublicDiscoveryWorld(rs, auth_server)
        oauth = mcp_sync.OAuth(on_authorize=follow, timeout=5)
        with mcp_sync.Client.http(rs.url, auth=oauth, mode="modern", timeout=10) as authorized:
            authorized.call_tool("echo", {})
        token = next(iter(world.tokens))
        with mcp_sync.Client.http(rs.url, mode="modern", timeout=10) as plain:
            with pytest.raises(mcp_sync.AuthorizationError):
                plain.call_tool("echo", {"via": "client"})
            view = plain.bind(auth=oauth)
            assert view.call_tool("echo", {"via": "view"}).text == '{"via": "view"}'
        sent = {r.json["params"]["arguments"]["via"]: r.headers.get("authorization")
                for r in rs.seen("tools/call") if "via" in r.json["params"]["arguments"]}
    assert sent == {"client": None, "view": f"Bearer {token}"}
    assert len(world.calls("token")) == 1  # the view ran no flow of its own
