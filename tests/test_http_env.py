"""Streamable HTTP honours the environment and the caller's HTTP settings as ``requests`` does
(issue #11: the settings are now resolved once per client, not on every call), and a plain
request's exchange on the calling thread still ends on a timeout, a cancel or close() from
another thread.

Real local servers only: tests/httpkit.py's FakeServer as the MCP server, a forwarding proxy
that records what goes through it, and a TLS server whose self-signed certificate is made
by the test.
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator
from urllib.parse import urlsplit

import pytest
import requests
from helpers import self_signed_certificate
from requests.adapters import HTTPAdapter

import mcp_sync

from httpkit import FakeServer, Reply, Request, result

pytestmark = pytest.mark.timeout(30)

ENV_VARS = (
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
    "http_proxy", "https_proxy", "all_proxy", "no_proxy",
    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NETRC",
)  # fmt: skip


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each test sets exactly the variables it is about (and no real ~/.netrc is read); the era
    cache is reset for every test by conftest.py."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))


# -- a recording forward proxy --------------------------------------------------------------


class _ProxyHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def _forward(self) -> None:
        proxy: RecordingProxy = self.server.proxy  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with proxy.lock:
            proxy.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        target = urlsplit(self.path)  # a forward proxy gets the absolute URL
        upstream = http.client.HTTPConnection(target.hostname or "", target.port or 80, timeout=10)
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
            upstream.request(self.command, target.path or "/", body=body or None, headers=headers)
            answer = upstream.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            for name, value in answer.getheaders():
                if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        finally:
            upstream.close()

    do_GET = do_POST = do_DELETE = _forward


class RecordingProxy:
    """A forward HTTP proxy on 127.0.0.1 that records (method, absolute URL, headers) of each request."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _ProxyHandler)
        self._server.daemon_threads = True
        self._server.proxy = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="proxy", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


# -- proxies -----------------------------------------------------------------------------------


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_proxy_variable_is_used(variable: str, monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    with FakeServer("modern") as fake, RecordingProxy() as proxy:
        monkeypatch.setenv(variable, proxy.url)
        with mcp_sync.Client.http(fake.url) as client:
            assert client.call_tool("echo", {"text": "via proxy"}).text
            assert client.era == "modern"
        posts = [(method, url) for method, url, _ in proxy.seen if method == "POST"]
        assert posts and all(url == fake.url for _, url in posts)  # absolute-form: it went through the proxy
        assert len(posts) == len(fake.seen(http_method="POST"))


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.1", "*"])
def test_no_proxy_bypasses_the_proxy(no_proxy: str, monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    with FakeServer("modern") as fake, RecordingProxy() as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.setenv("NO_PROXY", no_proxy)
        with mcp_sync.Client.http(fake.url) as client:
            assert client.call_tool("echo", {"text": "direct"}).text
        assert proxy.seen == []
        assert fake.seen(http_method="POST")


def test_proxies_option_overrides_the_environment(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """``proxies=`` wins over HTTP_PROXY, exactly as the argument does in requests."""
    with FakeServer("modern") as fake, RecordingProxy() as chosen, RecordingProxy() as ignored:
        monkeypatch.setenv("HTTP_PROXY", ignored.url)
        with mcp_sync.Client.http(fake.url, proxies={"http": chosen.url}) as client:
            client.call_tool("echo", {"text": "x"})
        assert chosen.seen and not ignored.seen


def test_proxy_variable_read_when_the_client_is_made_not_per_call(
    monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """The environment is resolved once per client: a variable set afterwards changes nothing
    for that client (it would be per call with Session.request), and a new client sees it."""
    with FakeServer("modern") as fake, RecordingProxy() as proxy:
        with mcp_sync.Client.http(fake.url) as client:
            client.call_tool("echo", {"text": "1"})
            monkeypatch.setenv("HTTP_PROXY", proxy.url)
            client.call_tool("echo", {"text": "2"})
            assert proxy.seen == []
        with mcp_sync.Client.http(fake.url) as client:
            client.call_tool("echo", {"text": "3"})
        assert proxy.seen


# -- TLS: a CA bundle variable ----------------------------------------------------------------


@pytest.fixture(scope="module")
def self_signed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (cert.pem, key.pem), made with ``cryptography``."""
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(self_signed: tuple[Path, Path]) -> Iterator[FakeServer]:
    """The FakeServer behind TLS with the self-signed certificate; its url is https://."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed)
    fake = FakeServer("modern")
    fake._server.socket = context.wrap_socket(fake._server.socket, server_side=True)
    with fake:
        yield fake


def https(fake: FakeServer) -> str:
    return f"https://127.0.0.1:{fake.port}/mcp"


@pytest.mark.parametrize("variable", ["REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"])
def test_ca_bundle_variable_is_trusted(
    variable: str, tls_server: FakeServer, self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, str(self_signed[0]))
    with mcp_sync.Client.http(https(tls_server)) as client:
        assert client.call_tool("echo", {"text": "over TLS"}).text
        assert client.era == "modern"


def test_untrusted_certificate_is_refused(tls_server: FakeServer) -> None:
    """Without the variable the self-signed server is refused: verification is on by default."""
    with pytest.raises(mcp_sync.MCPError):
        mcp_sync.Client.http(https(tls_server), timeout=5, probe_timeout=5).connect()
    assert not tls_server.seen()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_verify_option(tls_server: FakeServer, self_signed: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """``verify=`` takes a CA bundle or False; with the bundle in the environment, a False
    still wins and True means "the environment's bundle", exactly the rules of requests."""
    with mcp_sync.Client.http(https(tls_server), verify=str(self_signed[0])) as client:
        client.call_tool("echo", {"text": "a"})
    with mcp_sync.Client.http(https(tls_server), verify=False) as client:
        client.call_tool("echo", {"text": "b"})
    with pytest.raises(mcp_sync.MCPError):
        mcp_sync.Client.http(https(tls_server), verify=True, timeout=5, probe_timeout=5).connect()
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(self_signed[0]))
    with mcp_sync.Client.http(https(tls_server), verify=True) as client:
        client.call_tool("echo", {"text": "c"})


# -- a caller's session, used as is -----------------------------------------------------------


class CountingAdapter(HTTPAdapter):
    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self.closed = 0

    def send(self, request: Any, *args: Any, **kwargs: Any) -> Any:
        self.sent += 1
        return super().send(request, *args, **kwargs)

    def close(self) -> None:
        self.closed += 1
        super().close()


def test_callers_session_used_as_is(no_leaks: None) -> None:
    session = requests.Session()
    adapter = CountingAdapter()
    session.mount("http://", adapter)
    session.headers["X-Corp"] = "blue"
    session.cookies.set("affinity", "node-7")
    hooked: list[int] = []
    session.hooks["response"].append(lambda response, **kwargs: hooked.append(response.status_code))
    with FakeServer("modern") as fake:
        with mcp_sync.Client.http(fake.url, session=session) as client:
            assert client.call_tool("echo", {"text": "x"}).text
        posts = fake.seen(http_method="POST")
        assert posts and adapter.sent == len(posts) == len(hooked)
        assert all(r.headers.get("x-corp") == "blue" for r in posts)  # its headers
        assert all("affinity=node-7" in r.headers.get("cookie", "") for r in posts)  # its cookies
        assert all(r.headers.get("accept-encoding") == "gzip, deflate" for r in posts)  # only bounded encodings
        assert adapter.closed == 0  # not closed with the client: it is the caller's
        assert session.headers["X-Corp"] == "blue" and "mcp-sync" not in session.headers["User-Agent"]
        assert session.post(fake.url, data=b"{}", timeout=5).status_code  # still usable


def test_session_subclass_overriding_request_is_called(no_leaks: None) -> None:
    """A session class that adds something in ``request`` (an OAuth session adding its token)
    is called the ordinary way, for every request."""

    class TokenSession(requests.Session):
        calls = 0

        def request(self, method: str, url: Any, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
            TokenSession.calls += 1
            headers = {**(kwargs.pop("headers", None) or {}), "Authorization": "Bearer from-the-session"}
            return super().request(method, url, *args, headers=headers, **kwargs)

    with FakeServer("modern") as fake:
        with mcp_sync.Client.http(fake.url, session=TokenSession()) as client:
            client.call_tool("echo", {"text": "x"})
        posts = fake.seen(http_method="POST")
        assert TokenSession.calls == len(posts)
        assert all(r.headers.get("authorization") == "Bearer from-the-session" for r in posts)


def test_server_cookies_kept_and_sent_back(no_leaks: None) -> None:
    """A cookie the server sets (load-balancer affinity) goes back on later requests, as with Session.request."""
    def override(request: Request) -> Reply | None:
        if request.rpc_method == "server/discover":
            reply = fake._modern(request, "server/discover")
            reply.headers["Set-Cookie"] = "lb=abc; Path=/"
            return reply
        return None

    with FakeServer("modern") as fake:
        fake.override = override
        with mcp_sync.Client.http(fake.url) as client:
            client.call_tool("echo", {"text": "x"})
        calls = fake.seen(rpc_method="tools/call")
        assert calls and "lb=abc" in calls[0].headers.get("cookie", "")


def test_auth_object_applied_to_every_request(no_leaks: None) -> None:
    applied: list[str] = []

    def auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
        applied.append(str(request.headers.get("Mcp-Method")))
        request.headers["Authorization"] = f"Bearer t{len(applied)}"
        return request

    with FakeServer("modern") as fake:
        with mcp_sync.Client.http(fake.url, auth=auth) as client:
            for _ in range(3):
                client.call_tool("echo", {"text": "x"})
        posts = fake.seen(http_method="POST")
        assert len(applied) == len(posts) and applied.count("tools/call") == 3
        assert len({r.headers["authorization"] for r in posts}) == len(posts)  # fresh each time


# -- the exchange on the calling thread ---------------------------------------------------------


def test_plain_request_is_exchanged_on_the_calling_thread(no_leaks: None) -> None:
    """No thread per request: the auth object (run while the request is sent) sees the caller's thread."""
    threads: list[threading.Thread] = []

    def auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
        if request.headers.get("Mcp-Method") == "tools/call":
            threads.append(threading.current_thread())
        return request

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url, auth=auth) as client:
        for _ in range(3):
            client.call_tool("echo", {"text": "x"})
    assert threads == [threading.current_thread()] * 3


def _hold_tools_call(fake: FakeServer, release: threading.Event) -> None:
    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/call" and request.json["params"]["arguments"].get("hold"):
            release.wait(10)
        return None

    fake.override = override


def test_timeout_ends_the_exchange_and_the_client_goes_on(no_leaks: None) -> None:
    release = threading.Event()
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        _hold_tools_call(fake, release)
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {"hold": True}, timeout=0.5)
        assert time.monotonic() - started < 3.0
        release.set()
        assert client.call_tool("echo", {"text": "after"}).text


def test_cancel_from_another_thread_ends_the_exchange(no_leaks: None) -> None:
    release = threading.Event()
    token = mcp_sync.CancellationToken()
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        _hold_tools_call(fake, release)
        timer = threading.Timer(0.3, token.cancel)
        timer.start()
        started = time.monotonic()
        with pytest.raises(mcp_sync.Cancelled):
            client.call_tool("echo", {"hold": True}, cancel=token, timeout=20)
        assert time.monotonic() - started < 3.0
        timer.join()
        release.set()
        assert client.call_tool("echo", {"text": "after"}).text


def test_close_from_another_thread_ends_the_exchange(no_leaks: None) -> None:
    release = threading.Event()
    with FakeServer("modern") as fake:
        client = mcp_sync.Client.http(fake.url)
        client.connect()
        _hold_tools_call(fake, release)
        timer = threading.Timer(0.3, client.close)
        timer.start()
        started = time.monotonic()
        try:
            with pytest.raises(mcp_sync.ConnectionClosed):
                client.call_tool("echo", {"hold": True}, timeout=20)
            assert time.monotonic() - started < 4.0
        finally:
            timer.join()
            release.set()
            client.close()


# -- connections kept across SSE answers --------------------------------------------------------


def _count_connects(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    connects: list[Any] = []
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> Any:
        connects.append(address)
        return original(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return connects


def _answer_tools_call_with_sse(fake: FakeServer, hold_open: float = 0.0) -> None:
    def override(request: Request) -> Reply | None:
        if request.rpc_method != "tools/call":
            return None
        event = f"event: message\ndata: {json.dumps(result(request, {'content': []}))}\n\n".encode()

        def body() -> Iterator[bytes]:
            yield event
            time.sleep(hold_open)  # a server that keeps the stream open after the answer

        return Reply(200, {"Content-Type": "text/event-stream"}, body())

    fake.override = override


def test_connection_reused_after_an_sse_answer(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """The end of a POST's stream is read after the answer, so the connection serves the next
    call (it was closed with the stream: one connect per call)."""
    with FakeServer("modern") as fake:
        _answer_tools_call_with_sse(fake)
        connects = _count_connects(monkeypatch)
        with mcp_sync.Client.http(fake.url) as client:
            for _ in range(20):
                client.call_tool("echo", {"text": "x"})
        assert len(fake.seen(rpc_method="tools/call")) == 20
        assert len(connects) <= 2, connects


def test_stream_kept_open_after_the_answer_does_not_delay_calls(no_leaks: None) -> None:
    with FakeServer("modern") as fake:
        _answer_tools_call_with_sse(fake, hold_open=1.5)
        with mcp_sync.Client.http(fake.url) as client:
            started = time.monotonic()
            for _ in range(5):
                client.call_tool("echo", {"text": "x"})
            assert time.monotonic() - started < 1.0
