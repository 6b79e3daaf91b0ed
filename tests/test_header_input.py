"""No header input can make one request read another's answer (#28.3).

A caller's header names and values (a call's ``headers=``, a view's ``bind(headers=)``, the
client's ``Client.http(headers=)`` / ``Client.sse(headers=)``, a config entry's) either go on the
wire as exactly one well-framed header, or are refused with ValueError / TypeError naming the
header before anything is sent. The desync the issue found: a name like ``X\\tA`` passed the old
check, a lenient server (Python's http.server, as here) ended the header block at it, missed the
Content-Length after it, and read the body as a second request, whose answer the next request
on the kept-alive connection then took for its own.

Properties, with hypothesis: the rule itself (``header_problem``) against RFC 9110's grammar;
every accepted header serialises through ``requests`` into a request a strict HTTP/1.1 parser
(h11) reads back as one request with that header; and, end to end on every HTTP transport and
era, a stream of calls with generated headers never gets an answer that is not its own.
"""

from __future__ import annotations

import json
import socket
import string
import threading
from typing import Any, Iterator

import h11
import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._headers import FRAMING_HEADERS, header_problem
from mcp_sync.transports.sse import SseTransport

from httpkit import FakeServer, SsePeer

pytestmark = pytest.mark.timeout(300)

TCHAR = "!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits
#: names: tokens mostly, with the characters that broke framing mixed in
NAMES = st.one_of(
    st.text(alphabet=TCHAR, min_size=1, max_size=12),
    st.text(alphabet=TCHAR + "\t\x01\x7f ():;,\"/[]{}?=\r\n\0é世", min_size=0, max_size=12),
    st.sampled_from([*sorted(FRAMING_HEADERS), "Content-Length", "HOST", "Authorization", "X\tA", "X\x01(A)"]),
)
VALUES = st.one_of(
    st.text(alphabet=string.printable + "é\x80\xff", max_size=30),
    st.text(max_size=30),  # anything, beyond Latin-1 included
)
HEADERS = st.dictionaries(NAMES, VALUES, max_size=4)


def _is_token(name: str) -> bool:
    return bool(name) and all(ch in TCHAR for ch in name)


def _value_ok(value: str) -> bool:
    allowed = (ch == "\t" or " " <= ch <= "~" or "\x80" <= ch <= "\xff" for ch in value)
    return value[:1] not in (" ", "\t") and all(allowed)


@given(name=NAMES, value=VALUES)
def test_the_rule_is_rfc_9110s_grammar(name: str, value: str) -> None:
    """Accepted exactly when the name is a token that does not frame the message and the value
    holds visible characters, spaces, tabs and obs-text (Latin-1) only."""
    accepted = header_problem(name, value) is None
    assert accepted == (_is_token(name) and name.lower() not in FRAMING_HEADERS and _value_ok(value))


def _parse_one_request(raw: bytes) -> tuple[list[Any], bytes]:
    """Events a strict HTTP/1.1 server parser reads from ``raw`` (as one connection), and the bytes
    it did not consume."""
    connection = h11.Connection(h11.SERVER)
    connection.receive_data(raw)
    events = []
    while True:
        event = connection.next_event()
        if event is h11.NEED_DATA or isinstance(event, h11.EndOfMessage):
            events.append(event)
            break
        events.append(event)
    return events, connection.trailing_data[0]


@settings(max_examples=150, deadline=None)
@given(headers=HEADERS)
def test_an_accepted_header_is_one_header_of_one_request(headers: dict[str, str]) -> None:
    """What the checks accept, serialised as the transport does (requests over http.client), is
    read by h11 as exactly one request carrying exactly those headers and the body, nothing after."""
    from mcp_sync._options import check_request_headers

    try:
        checked = check_request_headers(headers, "test") or {}
    except (TypeError, ValueError):
        return
    received = bytearray()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(5)
            while b"\r\n\r\n" not in received or not received.endswith(b'{"jsonrpc": "2.0"}'):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                received.extend(chunk)
            conn.sendall(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        with requests.Session() as session:
            session.post(f"http://127.0.0.1:{server.getsockname()[1]}/mcp", data=b'{"jsonrpc": "2.0"}',
                         headers=checked, timeout=5)
    finally:
        thread.join(10)
        server.close()
    events, rest = _parse_one_request(bytes(received))
    request, data, end = events[0], events[1:-1], events[-1]
    assert isinstance(request, h11.Request) and isinstance(end, h11.EndOfMessage) and rest == b""
    assert b"".join(bytes(chunk.data) for chunk in data) == b'{"jsonrpc": "2.0"}'
    sent: dict[str, list[str]] = {}
    for name, value in request.headers:
        sent.setdefault(name.decode("ascii"), []).append(value.decode("latin-1"))
    for name, value in requests.structures.CaseInsensitiveDict(checked).lower_items():
        assert sent[name] == [value.strip(" \t")]  # h11 drops a value's edge whitespace, as RFC 9110 says


@pytest.mark.parametrize(("headers", "message"), [
    ({"X\tA": "x"}, "not an HTTP token"),
    ({"X\x01(A)": "x"}, "not an HTTP token"),
    ({"Content-Length": "0"}, "frames the HTTP message"),
    ({"transfer-encoding": "chunked"}, "frames the HTTP message"),
    ({"Host": "other"}, "frames the HTTP message"),
    ({"X-Name": "Łukasz"}, "beyond Latin-1"),
    ({"X-A": "a\x01b"}, "control character"),
    ({"X-A": "a\r\nX-B: 1"}, "CR, LF or NUL"),
    ({"X-A": " a"}, "starting with whitespace"),
])
def test_each_way_in_refuses_before_anything_is_sent(headers: dict[str, str], message: str) -> None:
    """A call's headers=, a view's, the client's own (http and sse) and a config entry's: the same
    ValueError naming the header (never its value), and nothing reaches the server."""
    with FakeServer("modern") as server:
        client = mcp_sync.Client.http(server.url, timeout=10)  # not connected: a refusal sends nothing
        try:
            with pytest.raises(ValueError, match=message) as call:
                client.call_tool("echo", {}, headers=headers)
            with pytest.raises(ValueError, match=message):
                client.bind(headers=headers)
        finally:
            client.close()
        for make in (mcp_sync.Client.http, mcp_sync.Client.sse):
            with pytest.raises(ValueError, match=message):
                make(server.url, headers=headers)
        with pytest.raises(mcp_sync.ConfigError, match=message):
            mcp_sync.connect({"url": server.url, "headers": headers})
        assert server.seen() == []
    name = next(iter(headers))
    assert repr(name)[:20] in str(call.value) and repr(headers[name]) not in str(call.value)


def test_an_auth_object_that_makes_a_bad_header_is_refused_for_its_view() -> None:
    """A view's auth object's headers go on the shared connection: they pass the same check."""

    def smuggler(request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["X\tEvil"] = "1"
        return request

    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, timeout=10) as client:
        with pytest.raises(ValueError, match=r"bind.*not an HTTP token"):
            client.bind(auth=smuggler).call_tool("echo", {})
        assert client.call_tool("echo", {"n": 1}).text == '{"n": 1}'
        assert server.seen("tools/call")[-1].json["params"]["arguments"] == {"n": 1}


def test_the_issues_desync_is_gone() -> None:
    """The issue's case on a kept-alive connection: a call with ``X\\tA`` then an ordinary call;
    the second must get its own answer (on the old check it got the answer queued for the first
    request's body, or the first call raised far from the header)."""
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, timeout=10) as client:
        for n in range(3):
            with pytest.raises(ValueError):
                client.call_tool("echo", {"n": n}, headers={"X\tA": "x"})
            assert json.loads(client.call_tool("echo", {"n": -n}).text) == {"n": -n}
        assert [r.json["params"]["arguments"] for r in server.seen("tools/call")] == [{"n": 0}, {"n": -1}, {"n": -2}]


@pytest.fixture(scope="module", params=["modern", "legacy", "sse"])
def transport_peer(request: pytest.FixtureRequest) -> Iterator[tuple[FakeServer, mcp_sync.Client]]:
    """One client per HTTP transport and era, on a lenient scripted server (Python's http.server,
    the kind that desynchronised), kept for all examples so connections are reused."""
    kind = request.param
    with FakeServer("legacy" if kind == "sse" else kind) as server:
        if kind == "sse":
            with SsePeer(server), mcp_sync.Client.sse(server.url, timeout=10) as client:
                yield server, client
        else:
            with mcp_sync.Client.http(server.url, mode=kind, timeout=10) as client:
                yield server, client


_counter = iter(range(10**9))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(headers=HEADERS, bound=st.booleans())
def test_no_header_input_makes_a_request_read_another_answer(
    transport_peer: tuple[FakeServer, mcp_sync.Client], headers: dict[str, str], bound: bool
) -> None:
    """A call with generated headers (its own or a view's) either is refused before anything is
    sent or gets its own answer; the next ordinary call on the same connection gets its own."""
    server, client = transport_peer
    n = next(_counter)
    before = len(server.seen())
    try:
        # a view of its own on the SSE peer would open a second stream, which the peer does not serve
        on_sse = isinstance(client.transport, SseTransport)
        caller = client.bind(headers=headers) if bound and not on_sse else client
        answer = caller.call_tool("echo", {"n": n}, headers=None if bound else headers)
    except (TypeError, ValueError):
        assert len(server.seen()) == before  # refused: nothing was sent
    else:
        assert json.loads(answer.text) == {"n": n}
    assert json.loads(client.call_tool("echo", {"n": -n - 1}).text) == {"n": -n - 1}
