"""mcp_sync.auth.browser_authorize (issue #12.2) against a local authorization server (a
real HTTP server); the browser is stood in for by a thread that requests the authorization
URL and follows its redirect to the loopback server, as a browser would."""

from __future__ import annotations

import functools
import io
import threading
import time
import webbrowser
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from helpers import ipv6_loopback_usable
from oauthkit import Browser, World, authorization_url

import mcp_sync
from mcp_sync.auth import browser_authorize

from httpkit import FakeServer

pytestmark = pytest.mark.timeout(20)


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
def test_catches_the_redirect(reserve_port: Any, browser: Browser, authorization_server: FakeServer, host: str) -> None:
    if host == "[::1]" and not ipv6_loopback_usable():  # #22.8: can ::1 be bound, not a compile-time flag
        pytest.skip("::1 cannot be bound on this machine (no IPv6 loopback)")
    redirect_uri = f"http://{host}:{reserve_port(host)}/callback"
    landed = browser_authorize(authorization_url(authorization_server, redirect_uri), timeout=5)
    assert landed == f"{redirect_uri}?code=the-code&state=st4te"
    browser.join()
    assert browser.visits[0].status_code == 200 and "close this window" in browser.visits[0].text


def test_prints_the_url_when_no_browser_can_open(
    monkeypatch: pytest.MonkeyPatch, authorization_server: FakeServer, reserve_port: Any
) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: pytest.fail("no browser should be started"))
    out = io.StringIO()
    url = authorization_url(authorization_server, f"http://127.0.0.1:{reserve_port()}/cb")

    def user() -> None:  # reads the printed URL and pastes it into a browser elsewhere
        deadline = time.monotonic() + 5
        while url not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        requests.get(url, timeout=5)

    thread = threading.Thread(target=user)
    thread.start()
    try:
        assert "code=the-code" in browser_authorize(url, timeout=5, out=out)
    finally:
        thread.join(10)
    assert url in out.getvalue()


def test_times_out(reserve_port: Any, monkeypatch: pytest.MonkeyPatch, authorization_server: FakeServer) -> None:
    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: True)  # a browser that never comes back
    monkeypatch.setenv("DISPLAY", ":0")
    redirect_uri = f"http://127.0.0.1:{reserve_port()}/callback"
    started = time.monotonic()
    with pytest.raises(mcp_sync.AuthorizationError, match="timed out") as caught:
        browser_authorize(authorization_url(authorization_server, redirect_uri), timeout=0.5)
    assert time.monotonic() - started < 3
    assert caught.value.step == "authorization"
    with pytest.raises(requests.ConnectionError):  # the one-shot server is gone
        requests.get(redirect_uri, timeout=2)


def test_wrong_state_and_other_paths_are_ignored(
    reserve_port: Any, browser: Browser, authorization_server: FakeServer
) -> None:
    port = reserve_port()
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    answers: list[int] = []

    def forger() -> None:  # a page in another tab tries to inject its own code first
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                answers.append(requests.get(f"{redirect_uri}?code=evil&state=forged", timeout=2).status_code)
                answers.append(requests.get(f"http://127.0.0.1:{port}/favicon.ico", timeout=2).status_code)
                break
            except requests.ConnectionError:
                time.sleep(0.02)
        time.sleep(0.1)
        browser.open(authorization_url(authorization_server, redirect_uri))

    forging = threading.Thread(target=forger)
    forging.start()
    try:
        url = authorization_url(authorization_server, redirect_uri)
        landed = browser_authorize(url, timeout=5, open_browser=False, out=io.StringIO())
    finally:
        forging.join(10)
    assert answers == [400, 404]
    assert parse_qs(urlsplit(landed).query) == {"code": ["the-code"], "state": ["st4te"]}


@pytest.mark.parametrize(
    "redirect_uri", ["https://app.example.com/callback", "http://10.0.0.1:8000/cb", "http://127.0.0.1/no-port"]
)
def test_redirect_uri_must_be_loopback_with_a_port(redirect_uri: str, authorization_server: FakeServer) -> None:
    with pytest.raises(mcp_sync.AuthorizationError, match="loopback"):
        browser_authorize(authorization_url(authorization_server, redirect_uri), timeout=1)


def test_whole_flow_with_oauth(reserve_port: Any, browser: Browser, no_leaks: None) -> None:
    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        world = World(rs, auth)
        oauth = mcp_sync.OAuth(
            redirect_uri=f"http://127.0.0.1:{reserve_port()}/callback",
            on_authorize=functools.partial(browser_authorize, timeout=5),
            timeout=5,
        )
        with mcp_sync.Client.http(rs.url, auth=oauth, mode="modern", timeout=10) as client:
            assert client.call_tool("echo", {"x": 1}).text
        (authorize,) = world.calls("authorize")
        assert authorize["redirect_uri"] == oauth.redirect_uri
        assert [t["grant_type"] for t in world.calls("token")] == ["authorization_code"]
