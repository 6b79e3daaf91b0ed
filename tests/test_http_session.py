"""The requests.Session under the HTTP transports: credentials from netrc (and a caller's
session that trusts no environment), a header removed by setting it to None (as requests
does), the per-URL senders, and closing: a closed transport sends nothing, and a session that
fails to close does not make close() fail."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import requests

import mcp_sync
from mcp_sync.transports.http import HttpTransport

from httpkit import FakeServer, Reply, Request, Sink

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def netrc_for_localhost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A netrc file (NETRC) with credentials for 127.0.0.1; the expected Authorization header."""
    path = tmp_path / "netrc"
    path.write_text("machine 127.0.0.1 login alice password wonderland\n", encoding="utf-8")
    path.chmod(0o600)
    monkeypatch.setenv("NETRC", str(path))
    return requests.auth._basic_auth_str("alice", "wonderland")


def test_netrc_credentials_are_sent_as_requests_would(netrc_for_localhost: str, no_leaks: None) -> None:
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.call_tool("echo", {})
        assert {r.headers.get("authorization") for r in fake.requests} == {netrc_for_localhost}


def test_a_session_that_trusts_no_environment_reads_no_netrc(netrc_for_localhost: str, no_leaks: None) -> None:
    session = requests.Session()
    session.trust_env = False
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, session=session) as client:
        client.call_tool("echo", {})
        assert {r.headers.get("authorization") for r in fake.requests} == {None}
    session.close()


def test_a_header_set_to_none_is_left_out(no_leaks: None) -> None:
    """A caller's session sends a key meant for another service; headers={"X-Api-Key": None}
    keeps it off this server's requests, while the session's other headers still go."""
    session = requests.Session()
    session.headers.update({"X-Api-Key": "for-another-service", "X-Team": "blue"})
    headers: dict = {"X-Api-Key": None}
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, headers=headers, session=session) as client:
        client.call_tool("echo", {})
        assert fake.requests
        assert all("x-api-key" not in r.headers and r.headers.get("x-team") == "blue" for r in fake.requests)
    session.close()


def test_requests_to_many_urls_keep_the_sender_cache_bounded(no_leaks: None) -> None:
    """Each call redirected to a URL of its own (same origin): all are answered, and what is
    worked out per URL is kept for 16 URLs at most."""
    with FakeServer("modern") as fake:

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "tools/call" and request.path == "/mcp":
                return Reply(307, {"Location": f"/mcp/{len(fake.seen('tools/call'))}"})
            return None

        fake.override = override
        with mcp_sync.Client.http(fake.url) as client:
            for n in range(20):
                assert client.call_tool("echo", {"n": n}).text == f'{{"n": {n}}}'
            transport = client.transport
            assert isinstance(transport, HttpTransport)
            assert len(transport._senders) == 16
        assert len({r.path for r in fake.seen("tools/call")}) == 21


def test_a_closed_transport_sends_nothing(no_leaks: None) -> None:
    with FakeServer("modern") as fake:
        transport = HttpTransport(fake.url)
        transport.start(Sink())
        transport.close()
        for message in ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                        {"jsonrpc": "2.0", "method": "notifications/initialized"}):
            with pytest.raises(mcp_sync.ConnectionClosed, match="the HTTP transport is closed"):
                transport.send(message)
        assert not fake.requests


def test_a_session_that_fails_to_close_does_not_fail_close(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """A connection pool half torn down raises while the session closes: close() still
    completes (the client is closed) and the failure is logged for debugging."""
    with FakeServer("modern") as fake:
        client = mcp_sync.Client.http(fake.url)
        client.call_tool("echo", {})
        transport = client.transport
        assert isinstance(transport, HttpTransport)

        def broken_close() -> None:
            raise OSError("a pool half torn down")

        monkeypatch.setattr(transport.session.get_adapter(fake.url), "close", broken_close)
        with caplog.at_level(logging.DEBUG, logger="mcp_sync"):
            client.close()
    assert client.state is mcp_sync.ClientState.CLOSED
    assert any(r.getMessage() == "mcp_sync: closing the requests session failed" and r.exc_info
               for r in caplog.records)
