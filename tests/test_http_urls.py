"""URLs in the HTTP transports: which the transports accept, which a redirect or an endpoint
event may send them to (a URL the HTTP stack's parsers read differently proves nothing and is
refused), and what a client shows of its URL (never a password or a query value)."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest
import requests

import mcp_sync
from mcp_sync.transports._http_common import origin, same_origin
from mcp_sync.transports.http import HttpTransport
from mcp_sync.transports.sse import SseTransport

from httpkit import FakeServer, Reply, Sink, sse_reply

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://user:hunter2@127.0.0.1:99999/mcp", "it does not parse: Port out of range"),
        ("http://127.0.0.1:http/mcp", "it does not parse"),
        ("http://@127.0.0.1/mcp", "its parts read differently to different URL parsers"),  # empty user info
        ("http://127.0.0.%31/mcp", "its parts read differently to different URL parsers"),  # an escaped host
    ],
)
@pytest.mark.parametrize("transport", [HttpTransport, SseTransport])
def test_a_url_the_parsers_may_read_differently_is_refused(url: str, problem: str, transport: type) -> None:
    """ValueError at once (no request is made), the password hidden."""
    with pytest.raises(ValueError, match="ambiguous URL") as refused:
        transport(url)
    assert problem in str(refused.value)
    assert "hunter2" not in str(refused.value)
    with pytest.raises(ValueError, match=problem.split(":")[0]):
        origin(url)


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/mcp", "ws://127.0.0.1/mcp", "/mcp"])
def test_only_http_urls_are_taken(url: str) -> None:
    with pytest.raises(ValueError, match=r"not an http\(s\) URL"):
        HttpTransport(url)
    with pytest.raises(ValueError, match=r"not an http\(s\) URL"):  # at once, not when it connects
        mcp_sync.Client.http(url)


@pytest.mark.parametrize("url", ["http://:8080/mcp", "http:///mcp", "http://", "https://:443/mcp", "http://user@:80/"])
def test_a_url_without_a_host_is_refused_when_the_client_is_made(url: str) -> None:
    """Before: accepted, named "None:8080", and every request failed far from the cause."""
    for make in (mcp_sync.Client.http, mcp_sync.Client.sse):
        with pytest.raises(ValueError, match="the URL names no host"):
            make(url)


def test_a_redirect_to_a_location_that_does_not_parse_is_refused(no_leaks: None) -> None:
    """The server redirects the POST to a URL with an impossible port: ProtocolError, and the
    request goes nowhere else."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: Reply(307, {"Location": f"http://127.0.0.1:{10**6}/mcp"}) if (
            r.rpc_method == "tools/call") else None
        with pytest.raises(mcp_sync.ProtocolError, match=r"refusing the redirect .* it does not parse"):
            client.call_tool("echo", {}, timeout=30)
        assert len(fake.seen("tools/call")) == 1


def test_an_endpoint_event_that_does_not_parse_is_refused(no_leaks: None) -> None:
    with FakeServer("legacy") as fake:
        fake.override = lambda r: sse_reply("event: endpoint\ndata: http://[::1/message") if r.method == "GET" else None
        with pytest.raises(mcp_sync.ProtocolError, match=r"refusing the endpoint event's URL .* Invalid IPv6 URL"):
            SseTransport(fake.url).start(Sink())
        assert not fake.seen(http_method="POST")


def test_same_origin_resolves_relative_references() -> None:
    base = "https://example.com/mcp"
    assert same_origin("/message?s=1", base, "the endpoint") == "https://example.com/message?s=1"
    assert same_origin("https://EXAMPLE.com:443/x", base, "the redirect") == "https://EXAMPLE.com:443/x"
    with pytest.raises(mcp_sync.ProtocolError, match="another origin"):
        same_origin("https://example.com:8443/x", base, "the redirect")


def test_a_client_shows_its_url_without_secrets(no_leaks: None) -> None:
    """target and repr: scheme, host, port (when given) and path; never user info or the query.
    An HTTP client has no server process: pid is None."""
    assert HttpTransport("https://user:pw@example.com/mcp?key=SECRET").target == "https://example.com/mcp"
    assert SseTransport("http://example.com:8080/sse?token=SECRET").target == "http://example.com:8080/sse"
    with FakeServer("modern") as fake:
        with mcp_sync.Client.http(fake.url + "?key=SECRET") as client:
            client.connect()
            assert client.pid is None
            assert "SECRET" not in repr(client) and f"127.0.0.1:{fake.port}/mcp" in repr(client)


def test_urllib3_logs_of_other_requests_are_left_alone(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """The filter redacts the query values urllib3 logs for this library's exchanges only; the
    same request made by other code in the process is logged as urllib3 logs it."""
    with FakeServer("modern") as fake:
        with caplog.at_level(logging.DEBUG, logger="urllib3.connectionpool"):
            requests.get(fake.url + "?page=2", timeout=5).close()
            with mcp_sync.Client.http(fake.url + "?key=SECRET") as client:
                client.call_tool("echo", {})
    logged = [r.getMessage() for r in caplog.records if r.name == "urllib3.connectionpool"]
    assert any("/mcp?page=2" in m for m in logged), logged
    assert any("/mcp?key=***" in m for m in logged) and not any("SECRET" in m for m in logged)


def test_the_url_redacting_log_filter_is_installed_once(no_leaks: None) -> None:
    """Importing the HTTP plumbing again (importlib.reload, as a notebook does) does not add a
    second filter to urllib3's logger (it did: the filter there was of the class the reload
    replaced, so isinstance() did not recognise it)."""
    program = (
        "import importlib, logging\n"
        "import mcp_sync.transports._http_common as common\n"
        "importlib.reload(common)\n"
        "print(sum(type(f).__name__ == '_RedactExchangeUrls' "
        "for f in logging.getLogger('urllib3.connectionpool').filters))\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1"
