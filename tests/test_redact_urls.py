"""A URL that does not even parse is never shown: a server redirecting to a broken Location
carrying a token gets a ProtocolError that names the problem, not the URL."""

from __future__ import annotations

import pytest

import mcp_sync
from mcp_sync._urls import redact_url

from httpkit import FakeServer, Reply, Request

BROKEN = "http://[::1/mcp?access_token=s3cr3t-token"


def test_an_unparsable_url_is_not_shown() -> None:
    assert redact_url(BROKEN) == "<a URL that does not parse>"


def test_a_redirect_to_an_unparsable_location_is_refused_without_showing_it(no_leaks: None) -> None:
    def redirect(request: Request) -> Reply | None:
        return Reply(307, {"Location": BROKEN}, b"") if request.method == "POST" else None

    with FakeServer("modern") as fake:
        fake.override = redirect
        client = mcp_sync.Client.http(fake.url, mode="modern", timeout=10)
        try:
            with pytest.raises(mcp_sync.ProtocolError) as caught:
                client.connect()
        finally:
            client.close()
    message = str(caught.value)
    assert "refusing the redirect" in message and "'<a URL that does not parse>': Invalid IPv6 URL" in message
    assert "s3cr3t" not in message
