"""What an HTTP failure becomes for the caller: the error type, and a message that names the
cause in plain words (no library class names), for failures below HTTP (resets, silence,
garbage, TLS, DNS, connects that never complete) and for answers that are not what was asked
(statuses, bodies that break off or are not JSON, Retry-After)."""

from __future__ import annotations

import email.utils
import json
import logging
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
import urllib3
from helpers import self_signed_certificate, wait_until

import mcp_sync
from mcp_sync.transports._http_common import describe_failure
from mcp_sync.transports.http import HttpTransport

from httpkit import FakeServer, RawServer, Reply, Sink, read_request, sse_reply

pytestmark = pytest.mark.timeout(60)

#: What a user must never have to read in an error message.
INTERNALS = ("HTTPConnectionPool", "NewConnectionError", "urllib3", "object at 0x", "Max retries", "Caused by")


def _reset(conn: socket.socket) -> None:
    read_request(conn)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends RST


def _hang_up(conn: socket.socket) -> None:
    read_request(conn)  # and close without a word


def _garbage(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")


def _body_broken_off(conn: socket.socket) -> None:
    read_request(conn)
    conn.sendall(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
        b'{"jsonrpc": "2.0", "id": 1, "result": {"protocolVer'
    )


@pytest.mark.parametrize(
    ("behaviour", "expected"),
    [
        (_reset, "failed: the connection was reset by the server"),
        (_hang_up, "failed: the server closed the connection without answering"),
        (_garbage, "failed: the server's answer is not valid HTTP"),
        (_body_broken_off, "broke off: the connection broke off in the middle of the response"),
    ],
)
def test_a_server_failing_below_http_is_named_plainly(
    behaviour: Callable[[socket.socket], None], expected: str, no_leaks: None
) -> None:
    """ConnectionClosed naming what the server did; with max_retries=0 the handshake is sent once.
    (A server that hangs up used to read "reset by the server": RemoteDisconnected is a
    ConnectionResetError too, so the more precise words were never reached.)"""
    with RawServer(behaviour) as raw:
        client = mcp_sync.Client.http(raw.url, mode="legacy", max_retries=0, timeout=10)
        with pytest.raises(mcp_sync.ConnectionClosed) as failure:
            client.connect()
        client.close()
    text = str(failure.value)
    assert expected in text, text
    assert not any(internal in text for internal in INTERNALS), text
    assert raw.connections == 1


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path_factory.mktemp("tls"))


def test_an_untrusted_certificate_is_named(tls_files: tuple[Path, Path], no_leaks: None) -> None:
    """A self-signed certificate fails the connection with the verifier's own words. (It used to
    fail with "internal error in the HTTP transport": the walk down the exception chain met
    ssl.SSLError's ``reason``, a string, and crashed on it.) Nothing reaches the server."""
    with FakeServer("legacy", tls=(str(tls_files[0]), str(tls_files[1]))) as fake:
        client = mcp_sync.Client.http(fake.url, mode="legacy", max_retries=0, timeout=10)
        with pytest.raises(mcp_sync.ConnectionClosed, match="TLS certificate was not accepted: self-signed") as failure:
            client.connect()
        client.close()
        assert not fake.seen()
    assert not any(internal in str(failure.value) for internal in INTERNALS)


def test_an_untrusted_certificate_is_not_retried(tls_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                 no_leaks: None) -> None:
    """A refused certificate stays refused: one attempt, no backoff (before: max_retries attempts
    with exponential backoff, for a GET or list that may be sent again)."""
    from mcp_sync.transports._http_common import HttpBase

    attempts: list[str] = []
    send_once = HttpBase.send_once

    def counted(self: HttpBase, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        attempts.append(method)
        return send_once(self, method, url, *args, **kwargs)

    monkeypatch.setattr(HttpBase, "send_once", counted)
    with FakeServer("legacy", tls=(str(tls_files[0]), str(tls_files[1]))) as fake:
        for make in (mcp_sync.Client.http, mcp_sync.Client.sse):  # POST initialize; the SSE GET (safe to resend)
            attempts.clear()
            client = make(fake.url, mode="legacy", max_retries=3, timeout=10)
            with pytest.raises(mcp_sync.ConnectionClosed, match="TLS certificate was not accepted"):
                client.connect()
            client.close()
            assert len(attempts) == 1, attempts


def test_https_to_a_plain_http_server_is_a_tls_failure(no_leaks: None) -> None:
    """An https:// URL whose server speaks plain HTTP: "TLS failed" and the TLS library's reason."""
    with FakeServer("legacy") as fake:
        client = mcp_sync.Client.http(fake.url.replace("http://", "https://"), mode="legacy", max_retries=0)
        with pytest.raises(mcp_sync.ConnectionClosed, match=r"failed: TLS failed: [A-Z_]+") as failure:
            client.connect()
        client.close()
    assert not any(internal in str(failure.value) for internal in INTERNALS)


def test_a_host_name_that_does_not_resolve_is_named(no_leaks: None) -> None:
    """.invalid never resolves (RFC 6761)."""
    client = mcp_sync.Client.http("http://mcp-sync-test.invalid/mcp", mode="legacy", max_retries=0, timeout=20)
    with pytest.raises(mcp_sync.ConnectionClosed, match="failed: the host name could not be resolved"):
        client.connect()
    client.close()


def test_a_tools_call_whose_connect_times_out_is_sent_again_then_named(blackhole: str, no_leaks: None) -> None:
    """A connect that times out proves the server saw nothing, so even a tools/call is tried
    again (max_retries=1: two connects of connect_timeout each); then the failure says
    "connecting timed out" (it used to say only "timed out"), as a ServerUnreachable (#29.2: an
    app maps it to 503) that says the call never reached the server."""
    sink = Sink()
    transport = HttpTransport(blackhole, connect_timeout=0.25, max_retries=1)
    transport.start(sink)
    try:
        started = time.monotonic()
        transport.send_inline({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x"}})
        elapsed = time.monotonic() - started
    finally:
        transport.close()
    assert [(request_id, type(error)) for request_id, error in sink.failures] == [(1, mcp_sync.ServerUnreachable)]
    assert str(sink.failures[0][1]).endswith("failed: connecting timed out")
    assert sink.failures[0][1].may_have_run is False
    assert elapsed >= 0.5  # two connects, each given up after 0.25 s


# -- answers that are not what was asked ------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
def test_a_refusal_without_an_auth_object_is_an_authorization_error(status: int, no_leaks: None) -> None:
    """401/403 on a client with no ``auth``: AuthorizationError with the status and the server's words."""
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: Reply(status, {"Content-Type": "text/plain"}, b"who are you?") if (
            r.rpc_method == "tools/call") else None
        with pytest.raises(mcp_sync.AuthorizationError, match=f"tools/call: HTTP {status} .*: who are you\\?"):
            client.call_tool("echo", {})
        assert len(fake.seen("tools/call")) == 1


def test_a_json_answer_that_is_not_json_is_a_protocol_error(no_leaks: None) -> None:
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: Reply(200, {"Content-Type": "application/json"}, b"<html>oops</html>") if (
            r.rpc_method == "tools/call") else None
        with pytest.raises(mcp_sync.ProtocolError, match="is not JSON: b'<html>oops</html>'"):
            client.call_tool("echo", {})
        fake.override = None
        assert client.call_tool("echo", {"after": 1}).text == '{"after": 1}'  # the client goes on


@pytest.mark.parametrize(
    "reply",
    [
        Reply(500, {"Content-Encoding": "gzip"}, b"\x1f\x8b\x08\x00corrupt"),  # cannot be decoded
        Reply(500, {}, b"x" * (65 * 1024)),  # longer than an error body is read
    ],
    ids=["corrupt-gzip", "too-long"],
)
def test_an_error_status_whose_body_cannot_be_read_still_names_the_status(reply: Reply, no_leaks: None) -> None:
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        fake.override = lambda r: reply if r.rpc_method == "tools/call" else None
        with pytest.raises(mcp_sync.ProtocolError) as failure:
            client.call_tool("echo", {})
    assert str(failure.value) == f"tools/call: HTTP 500 Internal Server Error from {fake.url}"
    assert failure.value.status == 500


def _http_date(offset: float) -> str:
    return email.utils.formatdate(time.time() + offset, usegmt=True)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (None, None),
        ("7", 7.0),
        ("1234567890", None),  # ten digits: not a delay anyone means
        ("soon", None),
        ("Mon, 99 Foo 2024 99:99:99 GMT", None),
        (-3600.0, 0.0),  # an HTTP date an hour ago: now
        (3600.0, pytest.approx(3600, abs=60)),  # an HTTP date in an hour
    ],
)
def test_server_unavailable_carries_the_retry_after_it_asked_for(header: str | float | None, expected: object,
                                                                  no_leaks: None) -> None:
    """A tools/call answered 503 is not sent again; ServerUnavailable.retry_after is the server's
    hint in seconds (delay-seconds or an HTTP date), or None when there is none it means."""
    if isinstance(header, float):
        header = _http_date(header)
    with FakeServer("modern") as fake, mcp_sync.Client.http(fake.url) as client:
        client.connect()
        headers = {"Retry-After": header} if header is not None else {}
        fake.override = lambda r: Reply(503, headers, b"busy") if r.rpc_method == "tools/call" else None
        with pytest.raises(mcp_sync.ServerUnavailable) as failure:
            client.call_tool("echo", {})
        assert len(fake.seen("tools/call")) == 1
    assert failure.value.status == 503
    assert failure.value.retry_after == expected


def _as_requests_raises(cause: BaseException, wrapper: type[Exception]) -> Exception:
    """``cause`` wrapped the way urllib3 and requests wrap a failure: urllib3's error raised
    from it, in a MaxRetryError, in a requests exception."""
    try:
        try:
            raise cause
        except BaseException as exc:
            raise urllib3.exceptions.ProtocolError("the request failed", exc) from exc
    except urllib3.exceptions.ProtocolError as inner:
        retries = urllib3.exceptions.MaxRetryError(None, "/mcp", inner)  # type: ignore[arg-type]
        error = wrapper(retries)
    assert isinstance(error, requests.RequestException)
    return error


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (OSError(101, "Network is unreachable"), "network is unreachable"),  # a route the machine lacks
        (OSError(113, None), "ehostunreach"),  # no strerror: the errno's name
        (TimeoutError("timed out"), "timed out"),  # a read the server never answered (socket.timeout)
        (BlockingIOError(11, "Resource temporarily unavailable"), "timed out"),  # urllib3's EAGAIN read timeout
        (RuntimeError("something else"), "the connection failed"),
    ],
)
def test_causes_no_local_server_produces_are_named(cause: BaseException, expected: str) -> None:
    """What a failure says for causes a test machine cannot stage against a server of its own
    (a missing route, a non-blocking read giving up), built the way the HTTP stack wraps them."""
    wrapper = requests.ReadTimeout if isinstance(cause, (BlockingIOError, TimeoutError)) else requests.ConnectionError
    assert describe_failure(_as_requests_raises(cause, wrapper)) == expected


# -- a failure inside the client itself (a bug) is seen, never silent -------------------------------


class BuggySink(Sink):
    """A sink that fails on messages carrying a method (``notifications/...``): a bug past the transport."""

    def message(self, message: Any) -> None:
        if isinstance(message, dict) and "method" in message:
            raise RuntimeError("a bug in the sink")
        super().message(message)


def test_a_bug_behind_a_request_fails_that_request(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """The request's worker hits an unexpected exception: the request fails with ProtocolError
    naming it (its caller does not wait for its timeout) and the traceback is logged."""
    sink = BuggySink()
    with FakeServer("modern") as fake:
        progress = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}}
        fake.override = lambda r: sse_reply(f"data: {json.dumps(progress)}") if r.rpc_method == "tools/list" else None
        transport = HttpTransport(fake.url)
        transport.start(sink)
        try:
            with caplog.at_level(logging.ERROR, logger="mcp_sync"):
                transport.send({"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {}})
                assert wait_until(lambda: sink.failures, 5)
        finally:
            transport.close()
    [(request_id, error)] = sink.failures
    assert request_id == 5 and isinstance(error, mcp_sync.ProtocolError)
    assert str(error) == "internal error in the HTTP transport (logged): a bug in the sink"
    logged = "mcp_sync: the HTTP transport failed on tools/list"
    assert any(r.getMessage() == logged and r.exc_info for r in caplog.records)


def test_a_bug_behind_the_get_stream_is_logged(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """The legacy GET stream's thread hits an unexpected exception: it is logged with its
    traceback (not swallowed) and the stream ends."""
    sink = BuggySink()
    with FakeServer("legacy") as fake:
        changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        fake.override = lambda r: sse_reply(f"data: {json.dumps(changed)}") if r.method == "GET" else None
        transport = HttpTransport(fake.url)
        transport.start(sink)
        try:
            with caplog.at_level(logging.ERROR, logger="mcp_sync"):
                transport.send_inline({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
                transport.configure(era="legacy", protocol_version="2025-11-25")
                transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                assert wait_until(lambda: caplog.records, 5)
                listening = lambda: [t for t in threading.enumerate() if t.name.startswith("mcp_sync-listen-")]  # noqa: E731
                assert wait_until(lambda: not listening(), 5)
        finally:
            transport.close()
    assert [(r.getMessage(), r.exc_info is not None) for r in caplog.records] == [
        (f"mcp_sync: the GET stream of {transport.name} failed", True)]
