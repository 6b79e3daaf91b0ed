"""Hostile HTTP servers (issue #8: 4, 7, 9-13; issue #9: 8, 17): streams that never end and
cannot be told apart from the connection, connects that never complete, absurd values,
URLs that mean different hosts to different parsers, secrets in URLs, and non-idempotent
requests answered 503. Each test has a time bound and names the exact error class."""

from __future__ import annotations

import json
import logging
import threading
import time
import zlib
from typing import Any

import pytest
from helpers import open_fds as all_fds
from helpers import self_signed_certificate, wait_until
from hypothesis import example, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync.transports import _http_common
from mcp_sync.transports.http import HttpTransport
from mcp_sync.transports.sse import SseTransport

from httpkit import FakeServer, Reply, Request, Sink, answering, endless_sse, json_reply, result, sse_reply

pytestmark = pytest.mark.timeout(60)



def mcp_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp_sync")]


def open_fds() -> int:
    return len(all_fds())


def close_while_blocked(transport: Any, blocked: Any) -> BaseException | None:
    """Run ``blocked()`` on a thread, close ``transport`` from here 0.3 s later, and return what
    ``blocked`` raised; it must have returned within 2 s of the close."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            blocked()
        except Exception as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    time.sleep(0.3)
    started = time.monotonic()
    transport.close()
    thread.join(2)
    assert not thread.is_alive() and time.monotonic() - started < 2.0, "close() did not release the blocked call"
    return errors[0] if errors else None


# -- #8.4: close-delimited responses can be aborted --------------------------------------------


@pytest.fixture(scope="module")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1, made with ``cryptography`` (a test dependency:
    the case no longer depends on an ``openssl`` binary, #22.8)."""
    cert, key = self_signed_certificate(tmp_path_factory.mktemp("tls"))
    return str(cert), str(key)


def endless_close_delimited(rpc_method: str) -> Any:
    """An override answering ``rpc_method`` with an endless close-delimited SSE stream."""
    return lambda request: (
        Reply(200, {"Content-Type": "text/event-stream"}, endless_sse(), close_delimited=True)
        if request.rpc_method == rpc_method
        else None
    )


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_close_delimited_modern_stream_ends_on_timeout_and_close(
    scheme: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """A modern tools/call answered by an endless close-delimited SSE stream (Connection: close,
    no length, no chunking): the timeout ends the request AND its worker at once (the socket is
    shut down although http.client dropped it), and close() leaves no thread or descriptor.
    Over HTTPS the socket read is the TLS wrapper of the one that connected."""
    tls = request.getfixturevalue("tls_cert") if scheme == "https" else None
    if tls is not None:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", tls[0])
    with FakeServer("modern", tls=tls) as fake:
        fake.override = endless_close_delimited("tools/call")
        client = mcp_sync.Client.http(fake.url)
        client.connect()
        fds = open_fds()
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {}, timeout=0.5)
        assert time.monotonic() - started < 2.0
        assert wait_until(lambda: not [n for n in mcp_threads() if n.startswith("mcp_sync-http-")], 2.0), (
            f"the worker still reads the stream: {mcp_threads()}"
        )
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 3.0
        assert wait_until(lambda: open_fds() <= fds, 2.0), "a socket was left open"


def test_close_delimited_legacy_stream_ends_on_timeout_and_close(no_leaks: None) -> None:
    """Legacy: notifications/cancelled is the cancellation, but the timed-out request's stream
    is closed too, so its worker does not read on for as long as the server sends; close()
    ends everything at once."""
    with FakeServer("legacy") as fake:
        fake.override = endless_close_delimited("tools/call")
        client = mcp_sync.Client.http(fake.url, mode="legacy")
        client.connect()
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {}, timeout=0.5)
        assert wait_until(lambda: not [n for n in mcp_threads() if n.startswith("mcp_sync-http-")], 2.0), (
            f"the worker still reads the stream: {mcp_threads()}"
        )
        assert wait_until(lambda: fake.seen("notifications/cancelled"), 2.0)
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 3.0
        assert wait_until(lambda: not mcp_threads(), 2.0), f"threads left: {mcp_threads()}"


def test_close_delimited_sse_transport_stream_ends_on_close(no_leaks: None) -> None:
    """HTTP+SSE: the one GET stream, close-delimited and endless; close() ends its reader."""
    with FakeServer("legacy") as fake:
        fake.override = lambda r: (
            Reply(
                200,
                {"Content-Type": "text/event-stream"},
                endless_sse(b"event: endpoint\ndata: /message\n\n"),
                close_delimited=True,
            )
            if r.method == "GET"
            else None
        )
        transport = SseTransport(fake.url, endpoint_timeout=5)
        transport.start(Sink())
        time.sleep(0.2)
        started = time.monotonic()
        transport.close()
        assert time.monotonic() - started < 3.0
        assert wait_until(lambda: not mcp_threads(), 2.0), f"threads left: {mcp_threads()}"


def test_close_interrupts_a_connect_that_never_completes(blackhole: str, no_leaks: None) -> None:
    """A request connecting to a host that never answers the SYN: close() returns at once and
    the worker is gone (it used to live on for the whole connect_timeout)."""
    sink = Sink()
    transport = HttpTransport(blackhole, connect_timeout=30)
    transport.start(sink)
    fds = open_fds()
    transport.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    time.sleep(0.3)
    assert [n for n in mcp_threads() if n.startswith("mcp_sync-http-")]
    started = time.monotonic()
    transport.close()
    assert time.monotonic() - started < 1.5
    assert wait_until(lambda: not mcp_threads(), 1.0), f"threads left: {mcp_threads()}"
    assert open_fds() <= fds
    assert not sink.failures  # aborted by close: nobody to tell


def test_close_interrupts_the_sse_transport_connect(blackhole: str, no_leaks: None) -> None:
    transport = SseTransport(blackhole, connect_timeout=30, endpoint_timeout=30)
    error = close_while_blocked(transport, lambda: transport.start(Sink()))
    assert isinstance(error, mcp_sync.ConnectionClosed)
    assert wait_until(lambda: not mcp_threads(), 1.0), f"threads left: {mcp_threads()}"


# -- #8.9, #8.10: SSE framing end to end ---------------------------------------------------------


def _gzip_stream(prefix: bytes, filler: bytes, total: int) -> bytes:
    compressor = zlib.compressobj(1, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    parts = [compressor.compress(prefix)]
    block = filler * (1 << 20)
    for _ in range(total >> 20):
        parts.append(compressor.compress(block))
    parts.append(compressor.flush())
    return b"".join(parts)


def test_sse_gzip_bomb_fails_fast(no_leaks: None) -> None:
    """A gzip SSE body inflating to one 96 MiB line (limit 64 MiB): ProtocolError in a few
    seconds (parsing was quadratic: 24 s), and the client keeps working."""
    bomb = _gzip_stream(b"data: ", b"0", 96 << 20)
    assert len(bomb) < 1 << 20

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list" and not getattr(override, "done", False):
            override.done = True  # type: ignore[attr-defined]
            return Reply(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, bomb)
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = override
        started = time.monotonic()
        with pytest.raises(mcp_sync.ProtocolError, match="max_message_bytes"):
            client.list_tools()
        assert time.monotonic() - started < 6.0
        assert [t.name for t in client.tools()] == ["echo"]


def test_corrupt_gzip_is_a_protocol_error(no_leaks: None) -> None:
    corrupt = Reply(200, {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}, b"\x1f\x8bnot gzip")
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = answering("tools/list", corrupt)
        with pytest.raises(mcp_sync.ProtocolError, match="corrupt"):
            client.list_tools()


def test_cr_only_stream_delivers_its_last_event(no_leaks: None) -> None:
    """SSE lines may end with CR alone: the answer in the stream's last event is delivered."""

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list":
            answer = json.dumps(result(request, {"tools": [{"name": "cr", "inputSchema": {}}]}))
            return Reply(200, {"Content-Type": "text/event-stream"}, f"id: 1\rdata: {answer}\r\r".encode())
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = override
        assert [t.name for t in client.tools()] == ["cr"]


def test_absurd_retry_on_a_legacy_post_stream(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """retry: 10**20 on a legacy stream that breaks: the wait is clamped, so the call ends by
    its own timeout (RequestTimeout), not with an overflow inside the transport.

    The stream is read on a worker thread, so the test also checks what only shows there
    (#22.3): no error was logged (the transport logs an internal error before failing the
    call with it), the wait was not cut short (no resume GET before the timeout) and the
    call lasted its whole timeout."""
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        fake.override = lambda r: (
            sse_reply("id: e1\nretry: 100000000000000000000\ndata:") if (r.rpc_method == "tools/call") else None
        )
        started = time.monotonic()
        with caplog.at_level(logging.DEBUG, logger="mcp_sync"), pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {}, timeout=1.0)
        assert time.monotonic() - started >= 0.9
        assert not [r for r in fake.seen(http_method="GET") if r.headers.get("last-event-id") == "e1"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name.startswith("mcp_sync")], [
        r.getMessage() for r in caplog.records
    ]


def test_absurd_retry_does_not_kill_the_listen_thread(no_leaks: None) -> None:
    """The legacy GET stream announcing retry: 10**20 then ending: the listen thread waits (a
    clamped delay) instead of dying silently, and close() still ends it at once."""
    with FakeServer("legacy") as fake:
        gets: list[float] = []

        def override(request: Request) -> Reply | None:
            if request.method == "GET":
                gets.append(time.monotonic())
                return sse_reply("retry: 100000000000000000000\nid: x")
            return None

        fake.override = override
        client = mcp_sync.Client.http(fake.url, mode="legacy")
        client.connect()
        assert wait_until(lambda: gets, 3.0)
        time.sleep(0.3)
        assert [n for n in mcp_threads() if n.startswith("mcp_sync-listen-")], "the listen thread died"
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 3.0


# -- #8.7: every value from the server is checked ------------------------------------------------


@pytest.mark.parametrize(
    ("retry_after", "retried"),
    [
        ("\u00b2", True),  # a superscript two: str.isdigit() says yes, float() says no
        ("\u0661", True),  # an Arabic-Indic one: not delay-seconds
        ("-5", True),
        ("nan", True),
        ("99999999999999999999999999", False),
        ("Fri, 31 Dec 9999 23:59:59 GMT", False),
        ("Sat, 01 Jan 2000 00:00:00 GMT", True),  # in the past: now
        ("Mon, 99 Foo 12345678901234567890 99:99:99", True),
    ],
)
def test_retry_after_values(retry_after: str, retried: bool, no_leaks: None) -> None:
    """Retry-After from the server: absurd values fall back to the default backoff (or give up
    when asked to wait too long), never an exception from the transport."""
    calls: list[float] = []

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "tools/list":
            calls.append(time.monotonic())
            if len(calls) == 1:
                return Reply(503, {"Retry-After": retry_after}, b"busy")
        return None

    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = override
        started = time.monotonic()
        if retried:
            assert [t.name for t in client.tools()] == ["echo"]
        else:
            with pytest.raises(mcp_sync.ProtocolError, match="HTTP 503"):
                client.list_tools()
        assert time.monotonic() - started < 3.0
    assert len(calls) == (2 if retried else 1)


def test_malformed_response_header_is_an_mcp_error(no_leaks: None) -> None:
    """Content-Length the HTTP stack cannot read: the request fails with an MCPError."""
    malformed = Reply(200, {"Content-Type": "application/json", "Content-Length": "12, 13"}, b"{}")
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        fake.override = answering("tools/list", malformed)
        with pytest.raises(mcp_sync.ConnectionClosed, match="malformed header"):
            client.list_tools(timeout=5)
        fake.override = None
        assert [t.name for t in client.tools()] == ["echo"]


# -- #8.11: same origin, compared the way the HTTP stack connects -------------------------------


def _ambiguous(evil: FakeServer, fake: FakeServer) -> list[str]:
    return [
        f"http://127.0.0.1:{evil.port}\\@127.0.0.1:{fake.port}/mcp",
        f"http://127.0.0.1:{evil.port}\\\\@127.0.0.1:{fake.port}/mcp",
        f"http://user@127.0.0.1:{fake.port}/mcp",
        f"http://127.0.0.1:{fake.port}/m\tcp",
        f"http://127.0.0.1:{fake.port} /mcp",
    ]


def test_redirect_with_a_backslash_never_reaches_another_host(no_leaks: None) -> None:
    """A 307 to ``http://evil:port\\@legit/mcp`` (urlsplit reads legit, urllib3 connects to
    evil) is refused with ProtocolError; the evil listener receives nothing."""
    with FakeServer("modern") as evil, FakeServer("modern") as fake:
        for location in _ambiguous(evil, fake):
            fake.override = lambda r, location=location: Reply(307, {"Location": location})
            with pytest.raises(mcp_sync.ProtocolError, match="refusing the redirect"):
                mcp_sync.connect(fake.url, mode="modern", headers={"Authorization": "Bearer s3cret"}, timeout=5)
        assert not evil.requests


def test_sse_endpoint_with_a_backslash_never_reaches_another_host(no_leaks: None) -> None:
    with FakeServer("legacy") as evil, FakeServer("legacy") as fake:
        for endpoint in _ambiguous(evil, fake):
            fake.override = lambda r, endpoint=endpoint: (
                sse_reply(f"event: endpoint\ndata: {endpoint}") if r.method == "GET" else None
            )
            with pytest.raises(mcp_sync.ProtocolError, match="endpoint"):
                mcp_sync.connect({"url": fake.url, "type": "sse", "headers": {"Authorization": "Bearer x"}})
        assert not evil.requests
        assert not fake.seen(http_method="POST")


def test_origin_follows_the_connecting_parser() -> None:
    origin = _http_common.origin
    assert origin("HTTP://LocalHost:80/x") == ("http", "localhost", 80)
    assert origin("https://[::1]/mcp") == ("https", "::1", 443)
    for url in ("http://a:1\\@b/", "http://a\x00b/", "http://a b/", "http://a/\r\n"):
        with pytest.raises(ValueError):
            origin(url)


URL_PIECES = [
    "http://",
    "https://",
    "legit",
    "evil",
    "127.0.0.1",
    ":8000",
    ":9001",
    ":",
    "@",
    "\\",
    "/",
    "//",
    "%2F",
    "%40",
    "%5C",
    "?",
    "#",
    ".",
    "[::1]",
    " ",
    "\t",
    "\n",
    "\x00",
    "é",
    "\uff21\uff22",
    "user:pw",
    "mcp",
]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(URL_PIECES) | st.text(max_size=3), max_size=12).map("".join))
@example("http://evil:9001\\@legit:8000/mcp")
@example("http://evil:9001\\\\@legit:8000/mcp")
@example("//evil:9001\\@legit:8000/mcp")
@example("http://legit:8000@evil:9001/mcp")
@example("http://evil:9001#@legit:8000/mcp")
@example("http://evil:9001?@legit:8000/mcp")
@example("http://evil\t:9001/mcp")
@example("/\\evil:9001/mcp")
def test_same_origin_agrees_with_where_requests_connects(reference: str) -> None:
    """Whatever a server writes as a redirect or an endpoint, same_origin either refuses it
    (ProtocolError) or returns a URL that requests and urllib3 send to the base's host and port."""
    import requests
    from urllib3.util import parse_url

    base = "http://legit:8000/mcp"
    try:
        target = _http_common.same_origin(reference, base, "the test URL")
    except mcp_sync.ProtocolError:
        return
    try:
        prepared = requests.Request("GET", target).prepare().url
    except (requests.RequestException, ValueError):
        return  # requests will not send it at all
    assert prepared is not None
    where = parse_url(prepared)
    assert (where.scheme, where.host, where.port or 80) == ("http", "legit", 8000), (reference, target, prepared)


# -- #8.12: secrets in URLs are redacted ---------------------------------------------------------


def test_redact_url() -> None:
    from mcp_sync._urls import redact_url

    assert (
        redact_url("https://me:pw@example.com/mcp?key=abc&v=2#tok")
        == "https://me:***@example.com/mcp?key=***&v=***#***"
    )
    assert redact_url("https://TOKEN@example.com/mcp?bare") == "https://***@example.com/mcp?***"
    assert redact_url("http://127.0.0.1:8000/mcp") == "http://127.0.0.1:8000/mcp"


def test_secrets_in_the_url_stay_out_of_messages_reprs_and_logs(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    with FakeServer("modern") as fake:
        url = fake.url.replace("http://", "http://alice:hunter2@") + "?api_key=TOPSECRET"
        fake.override = lambda r: Reply(500, {}, b"kaboom") if r.rpc_method == "tools/call" else None
        with caplog.at_level(logging.DEBUG, logger="mcp_sync"), caplog.at_level(logging.DEBUG, logger="urllib3"):
            with mcp_sync.Client.http(url) as client:
                transport = client._engine.transport  # type: ignore[union-attr]
                with pytest.raises(mcp_sync.ProtocolError) as failure:
                    client.call_tool("echo", {})
                text = f"{failure.value} {transport!r}"
                assert "api_key=***" in text
        text += caplog.text
        assert "TOPSECRET" not in text and "hunter2" not in text


# -- #8.13: non-idempotent requests are never sent twice ----------------------------------------


def test_tools_call_answered_503_is_sent_once(no_leaks: None) -> None:
    """A 503 does not prove the server did nothing: tools/call fails (ProtocolError) after one
    POST; a read answered 503 is still retried."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: Reply(503, {"Retry-After": "0"}, b"busy") if r.rpc_method == "tools/call" else None
        with pytest.raises(mcp_sync.ProtocolError, match="HTTP 503"):
            client.call_tool("echo", {})
        assert len(fake.seen("tools/call")) == 1


def test_legacy_and_sse_tools_call_answered_503_is_sent_once(no_leaks: None) -> None:
    """The same over legacy Streamable HTTP and over HTTP+SSE (the POST to the endpoint)."""
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        fake.override = lambda r: Reply(503, {}, b"busy") if r.rpc_method == "tools/call" else None
        with pytest.raises(mcp_sync.ProtocolError, match="HTTP 503"):
            client.call_tool("echo", {})
        assert len(fake.seen("tools/call")) == 1

    posts: list[str] = []

    def override(request: Request) -> Reply | None:
        if request.method == "GET":
            return Reply(200, {"Content-Type": "text/event-stream"}, endless_sse(b"event: endpoint\ndata: /msg\n\n"))
        posts.append(str(request.rpc_method))
        return Reply(503, {}, b"busy") if request.rpc_method == "tools/call" else Reply(202)

    with FakeServer("legacy") as fake:
        fake.override = override
        sink = Sink()
        transport = SseTransport(fake.url)
        transport.start(sink)
        try:
            transport.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}})
            assert wait_until(lambda: sink.failures, 5.0)
        finally:
            transport.close()
        assert posts.count("tools/call") == 1
        assert isinstance(sink.failures[0][1], mcp_sync.ProtocolError)


# -- #9.8: a session the server forgot is renewed, and the refused request sent again ------------


def test_tools_call_refused_for_an_unknown_session_is_sent_again(no_leaks: None) -> None:
    """404 on a legacy session means the server refused the request (it did not run it): a new
    session is opened and the tools/call sent once more; its answer reaches the caller."""
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        fake.sessions.clear()  # the server forgets every session
        started = time.monotonic()
        assert json.loads(client.call_tool("echo", {"n": 1}, timeout=10).text) == {"n": 1}
        assert time.monotonic() - started < 5.0
        first, second = fake.seen("tools/call")
        assert first.headers["mcp-session-id"] != second.headers["mcp-session-id"]
        assert len(fake.seen("initialize")) == 2


def test_400_no_valid_session_is_recognised(no_leaks: None) -> None:
    """A 400 whose JSON-RPC error says the session is unknown (server-everything's wording)
    also renews the session; any other 400 does not."""
    refused = {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}}
    other = {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "Bad Request: invalid params"}}

    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        stale = set(fake.sessions)

        def override(request: Request) -> Reply | None:
            if request.method == "POST" and request.headers.get("mcp-session-id") in stale:
                return json_reply(refused if request.rpc_method == "tools/call" else other, 400)
            return None

        fake.override = override
        assert json.loads(client.call_tool("echo", {"n": 2}, timeout=10).text) == {"n": 2}
        assert len(fake.seen("tools/call")) == 2
        stale = set(fake.sessions)
        with pytest.raises(mcp_sync.MCPError):
            client.list_tools(timeout=5)  # 400 "invalid params": not about the session
        assert len(fake.seen("initialize")) == 2


def test_server_everything_restarted_under_the_client(everything_js: Any, no_leaks: None) -> None:
    """server-everything restarted on the same port forgets every session and answers 400
    "No valid session ID provided": the client renews the session by itself and the call
    (a tools/call) succeeds; the GET stream comes back on the new session too."""
    from conftest import everything_cmd, running_server

    command = everything_cmd(everything_js, "streamableHttp")
    with running_server(command, env={"PORT": "0"}) as first:
        port = first.port  # the restart binds it again: a restart is on the same port
        client = mcp_sync.Client.http(f"http://127.0.0.1:{port}/mcp", timeout=20)
        client.connect()
        assert client.call_tool("echo", {"message": "before"}).text == "Echo: before"
        first_session = client._engine.transport.session_id  # type: ignore[union-attr]
    try:
        with running_server(command, env={"PORT": str(port)}):
            started = time.monotonic()
            assert client.call_tool("echo", {"message": "after"}, timeout=20).text == "Echo: after"
            assert time.monotonic() - started < 10.0
            assert client._engine.transport.session_id not in (None, first_session)  # type: ignore[union-attr]
            assert client.call_tool("echo", {"message": "again"}).text == "Echo: again"
    finally:
        client.close()


# -- #9.17: messages for users --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("era", "error"),
    [("modern", mcp_sync.ProtocolError), ("legacy", mcp_sync.ConnectionClosed)],  # modern: the probe's verdict
)
def test_connection_errors_speak_plainly(era: str, error: type[Exception], no_leaks: None) -> None:
    """A refused connection says so, without the HTTP stack's class names and object reprs."""
    with FakeServer(era) as fake:
        url = fake.url + "?token=SECRET"
    with pytest.raises(error) as failure:
        mcp_sync.connect(url, mode=era, timeout=10)
    text = str(failure.value)
    assert "connection refused" in text
    for internal in ("HTTPConnectionPool", "NewConnectionError", "urllib3", "object at 0x", "Max retries", "SECRET"):
        assert internal not in text, text


def test_close_releases_a_notification_post_the_server_never_answers(no_leaks: None) -> None:
    """HTTP+SSE: a notification is POSTed on the calling thread; a server that never answers it
    must not hold that thread past close() (the POST was not abortable, with no read timeout)."""
    release = threading.Event()

    def override(request: Request) -> Reply | None:
        if request.method == "GET":
            return Reply(200, {"Content-Type": "text/event-stream"}, endless_sse(b"event: endpoint\ndata: /msg\n\n"))
        release.wait(20)
        return Reply(202)

    with FakeServer("legacy") as fake:
        fake.override = override
        transport = SseTransport(fake.url)
        transport.start(Sink())
        error = close_while_blocked(
            transport, lambda: transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        release.set()
        assert isinstance(error, mcp_sync.ConnectionClosed)


@pytest.mark.parametrize("session_id", ["\x0bfoo", "a b", "x" * 5000])
def test_unusable_session_id_is_refused_at_initialize(session_id: str, no_leaks: None) -> None:
    """An Mcp-Session-Id that is not visible ASCII would break (or be refused on) every later
    request: the handshake fails at once with a ProtocolError naming it."""

    def override(request: Request) -> Reply | None:
        if request.rpc_method == "initialize":
            init = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}
            return json_reply(result(request, init), **{"Mcp-Session-Id": session_id})
        return None

    with FakeServer("legacy") as fake:
        fake.override = override
        started = time.monotonic()
        with pytest.raises(mcp_sync.ProtocolError, match="Mcp-Session-Id"):
            mcp_sync.connect(fake.url, mode="legacy", timeout=5)
        assert time.monotonic() - started < 4.0


def test_tools_call_whose_connect_was_refused_is_sent_again(no_leaks: None) -> None:
    """The other half of the rule: a refused connect proves the server saw nothing, so even a
    tools/call is sent again (with backoff) and succeeds once the server is back."""
    with FakeServer("modern") as first:
        first.keep_alive = False  # no pooled connection outlives the server
        port = first.port
        client = mcp_sync.Client.http(first.url)
        client.connect()
    replacement = FakeServer("modern", port=port)
    timer = threading.Timer(0.15, replacement.__enter__)
    timer.start()
    try:
        assert json.loads(client.call_tool("echo", {"n": 3}, timeout=10).text) == {"n": 3}
        assert len(replacement.seen("tools/call")) == 1
    finally:
        timer.join()
        client.close()
        replacement.__exit__()


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_aborts_under_load_hit_only_their_own_request(sdk_http_url: str, mode: str, no_leaks: None) -> None:
    """Many threads, random timeouts and cancels on one client: an abort shuts down only its own
    exchange's socket (never a pooled connection now serving another call), so every call ends
    with its own answer, RequestTimeout or Cancelled, and close() during the load leaves nothing."""
    import random

    failures: list[str] = []
    outcomes: dict[str, int] = {}
    client = mcp_sync.Client.http(sdk_http_url, mode=mode)
    client.connect()

    def worker(n: int) -> None:
        rng = random.Random(n)
        for i in range(25):
            text = f"{n}-{i}"
            token = mcp_sync.CancellationToken()
            if rng.random() < 0.2:
                threading.Timer(rng.uniform(0.0, 0.1), token.cancel).start()
            try:
                if rng.random() < 0.5:
                    got = client.call_tool("echo", {"text": text}, cancel=token, timeout=10).text
                    outcome = "ok" if got == text else f"wrong answer {got!r} for {text}"
                else:
                    client.call_tool("slow", {"seconds": 0.1}, cancel=token, timeout=rng.choice([0.05, 10]))
                    outcome = "ok"
            except (mcp_sync.RequestTimeout, mcp_sync.Cancelled) as exc:
                outcome = type(exc).__name__
            except mcp_sync.MCPError as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            if outcome not in ("ok", "RequestTimeout", "Cancelled"):
                failures.append(outcome)
            outcomes[outcome.split(":")[0]] = outcomes.get(outcome.split(":")[0], 0) + 1

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not failures, failures[:5]
    assert outcomes.get("ok", 0) > 50
    started = time.monotonic()
    client.close()
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize(
    ("message", "gone"),
    [
        ("Bad Request: No valid session ID provided", True),  # server-everything
        ("Session not found", True),
        ("Invalid or expired session", True),
        ("Unknown session id", True),
        ("Bad Request: Mcp-Session-Id header missing", True),
        ("Invalid arguments: session_name missing", False),
        ("Bad Request: invalid params", False),
    ],
)
def test_session_refusal_wording(message: str, gone: bool) -> None:
    from mcp_sync.transports._http_legacy import session_refused

    body = ({"jsonrpc": "2.0", "error": {"code": -32000, "message": message}}, None)
    assert session_refused(400, body) is gone
    assert session_refused(500, body) is False
