"""Legacy Streamable HTTP sessions (2025-03-26 ... 2025-11-25) that expire or misbehave (LG3,
LG5, #22.7): renewals that race, renewals the server answers badly, renewals started by the
GET stream that fail, notifications to an expired session, a GET stream that keeps failing,
one that cannot be read, one closed while it waits, and the DELETE at close."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest
import requests
from helpers import in_thread, run_workers, wait_until

import mcp_sync
from mcp_sync.transports._http_legacy import MAX_LISTEN_FAILURES
from mcp_sync.transports.http import HttpTransport

from httpkit import FakeServer, Reply, Request, Sink, json_reply, result, sse_reply

pytestmark = pytest.mark.timeout(60)

#: server-everything's answer to a request naming a session it does not know
NO_VALID_SESSION = {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"},
                    "id": None}


def _listening_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp_sync-listen-")]


def test_calls_meeting_the_same_expired_session_renew_it_once(no_leaks: None) -> None:
    """Two calls refused (404) for the same forgotten session at the same moment: one renews it,
    the other waits for that renewal and is sent again on the new session; one new initialize."""
    both_arrived = threading.Barrier(2, timeout=10)
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        stale = set(fake.sessions)

        def override(request: Request) -> Reply | None:
            if request.rpc_method == "tools/call" and request.headers.get("mcp-session-id") in stale:
                both_arrived.wait()  # both calls are refused together
                return Reply(404, {}, b"session not found")
            return None

        fake.sessions.clear()
        fake.override = override
        texts = run_workers(lambda n: client.call_tool("echo", {"n": n}).text, [(1,), (2,)], timeout=30)
        assert [json.loads(text) for text in texts] == [{"n": 1}, {"n": 2}]
        assert len(fake.seen("initialize")) == 2 and len(fake.seen("notifications/initialized")) == 2
        assert len(fake.seen("tools/call")) == 4
        assert {r.headers["mcp-session-id"] for r in fake.seen("tools/call")[2:]} == set(fake.sessions)


def _renewal_answered(reply_for: Any) -> Any:
    """An override, set once the client is connected: each initialize (a renewal) is answered
    by ``reply_for(request)``."""
    return lambda request: reply_for(request) if request.rpc_method == "initialize" else None


def _message(method: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": {}})


@pytest.mark.parametrize(
    ("reply_for", "why"),
    [
        (lambda r: json_reply({"jsonrpc": "2.0", "id": r.json["id"], "error": {"code": -32603, "message": "full"}}),
         "initialize (new session) failed: {'code': -32603, 'message': 'full'}"),
        (lambda r: sse_reply(f"data: {_message('notifications/tools/list_changed')}"),
         "initialize (new session): no answer"),
        (lambda r: sse_reply("data: {half an answer"),
         "initialize (new session): Expecting property name"),
    ],
    ids=["json-rpc-error", "stream-without-the-answer", "event-not-json"],
)
def test_a_renewal_the_server_answers_badly_ends_the_session(reply_for: Any, why: str, no_leaks: None) -> None:
    """The server forgot the session and its answer to the new initialize is no answer: the call
    fails with SessionExpiredError naming why, and messages that came first were delivered."""
    seen: list[str] = []
    with FakeServer("legacy") as fake, mcp_sync.Client.http(
        fake.url, mode="legacy", restart=False, on_notification=lambda method, params: seen.append(method)
    ) as client:
        client.connect()
        fake.override = _renewal_answered(reply_for)
        fake.sessions.clear()
        with pytest.raises(mcp_sync.SessionExpiredError, match="a new one could not start") as failure:
            client.call_tool("echo", {}, timeout=30)
        assert why in str(failure.value)
        assert len(fake.seen("initialize")) == 2  # one attempt, no loop
        if why.endswith("no answer"):  # the stream carried a notification, then ended
            assert wait_until(lambda: seen == ["notifications/tools/list_changed"], 5), seen


def test_messages_before_the_renewals_answer_are_delivered(no_leaks: None) -> None:
    """The new initialize answered on a stream that first carries a notification: the
    notification reaches the client, the session is renewed and the call goes through."""
    seen: list[str] = []

    def renewal(request: Request) -> Reply:
        session = f"renewed-{len(fake.sessions)}"
        fake.sessions.add(session)
        init = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"}}
        return sse_reply(f"data: {_message('notifications/tools/list_changed')}",
                         f"data: {json.dumps(result(request, init))}", **{"Mcp-Session-Id": session})

    with FakeServer("legacy") as fake, mcp_sync.Client.http(
        fake.url, mode="legacy", on_notification=lambda method, params: seen.append(method)
    ) as client:
        client.connect()
        fake.override = _renewal_answered(renewal)
        fake.sessions.clear()
        assert json.loads(client.call_tool("echo", {"n": 5}).text) == {"n": 5}
        assert fake.seen("tools/call")[-1].headers["mcp-session-id"].startswith("renewed-")
        assert wait_until(lambda: seen == ["notifications/tools/list_changed"], 5), seen


def test_a_notification_refused_as_no_valid_session_renews_and_is_sent_again(no_leaks: None) -> None:
    """#22.7: a notification answered 400 "No valid session ID provided" (server-everything's
    words for a session it does not know) renews the session and goes again, to the new one."""
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy") as client:
        client.connect()
        stale = set(fake.sessions)
        fake.override = lambda r: json_reply(NO_VALID_SESSION, 400) if (
            r.method == "POST" and r.headers.get("mcp-session-id") in stale) else None
        client.notify("notifications/roots/list_changed")
        sent = fake.seen("notifications/roots/list_changed")
        assert [r.headers["mcp-session-id"] in stale for r in sent] == [True, False]
        assert sent[1].headers["mcp-session-id"] in fake.sessions
        assert len(fake.seen("initialize")) == 2


def test_a_notification_after_the_sdk_server_forgot_the_session_is_not_lost(sdk_http_url: str,
                                                                               no_leaks: None) -> None:
    """#22.7 with the Python SDK server: its session is deleted behind the client's back; a
    notification sent then raises nothing, and the client ends up on a new session the server
    knows (a call on it is answered without another renewal)."""
    with mcp_sync.Client.http(sdk_http_url, mode="legacy") as client:
        transport = client.transport
        assert isinstance(transport, HttpTransport)
        first = transport.session_id
        assert first
        gone = requests.delete(sdk_http_url, headers={"Mcp-Session-Id": first}, timeout=5)
        assert gone.status_code in (200, 204)
        client.notify("notifications/roots/list_changed")
        second = transport.session_id
        assert second and second != first
        assert client.call_tool("echo", {"text": "on the new session"}).text == "on the new session"
        assert transport.session_id == second


def test_a_renewal_replays_only_what_the_session_had(no_leaks: None) -> None:
    """A transport driven directly, whose session saw an initialize but no initialized yet:
    the renewal replays the initialize alone, and the refused request is sent again."""
    with FakeServer("legacy") as fake:
        sink = Sink()
        transport = HttpTransport(fake.url)
        transport.start(sink)
        try:
            init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
            transport.send_inline(init)
            transport.configure(era="legacy", protocol_version="2025-11-25")
            fake.sessions.clear()
            transport.send_inline({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": "echo", "arguments": {"n": 6}}})
        finally:
            transport.close()
        assert len(fake.seen("initialize")) == 2 and not fake.seen("notifications/initialized")
        assert sink.renewals == 1 and not sink.failures
        assert [m["id"] for m in sink.messages] == [0, 1]  # the renewal's own answer is not the caller's
        assert sink.messages[-1]["result"]["content"][0]["text"] == '{"n": 6}'


# -- the GET stream ------------------------------------------------------------------------------


def _get_stream(fake: FakeServer, then: Any) -> Any:
    """An override: the first GET is a stream that asks for 10 ms retries and ends at once; each
    later GET is answered by ``then(request)`` (None: the default 405)."""

    def override(request: Request) -> Reply | None:
        if request.method != "GET":
            return None
        if len(fake.seen(http_method="GET")) == 1:
            return sse_reply("id: 1\nretry: 10")
        return then(request)

    return override


def test_a_get_stream_renewal_that_fails_ends_the_client(no_leaks: None) -> None:
    """#22.7: the GET stream finds the session gone and the server refuses a new one: the client
    hears at once that the connection is lost (SessionExpiredError) and the stream ends."""
    lost: list[Exception] = []
    with FakeServer("legacy") as fake:
        known = threading.Event()

        def then(request: Request) -> Reply | None:
            if request.headers.get("mcp-session-id") in fake.sessions:
                known.set()
                return sse_reply("retry: 10")
            return Reply(404, {}, b"session not found")

        fake.override = _get_stream(fake, then)
        with mcp_sync.Client.http(fake.url, mode="legacy", restart=False, on_connection_lost=lost.append) as client:
            client.connect()
            assert known.wait(5)
            refuse = fake.override

            def refusing(request: Request) -> Reply | None:
                if request.rpc_method == "initialize":
                    return Reply(503, {"Retry-After": "0"}, b"down for maintenance")
                return refuse(request)

            fake.override = refusing
            fake.sessions.clear()
            assert wait_until(lambda: lost, 10)
            assert isinstance(lost[0], mcp_sync.SessionExpiredError)
            assert "a new one could not start" in str(lost[0]) and "HTTP 503" in str(lost[0])
            assert wait_until(lambda: not _listening_threads(), 5)
            with pytest.raises(mcp_sync.MCPError):
                client.call_tool("echo", {}, timeout=5)


def test_a_get_stream_that_keeps_failing_is_given_up(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """Every reconnect of the GET stream fails (here a redirect to another origin, refused):
    after MAX_LISTEN_FAILURES tries in a row the client stops trying and says so; requests
    are not affected."""
    with FakeServer("legacy") as fake:
        fake.override = _get_stream(fake, lambda r: Reply(302, {"Location": f"http://localhost:{fake.port}/mcp"}))
        with caplog.at_level(logging.DEBUG, logger="mcp_sync"), mcp_sync.Client.http(fake.url, mode="legacy") as client:
            client.connect()
            assert wait_until(lambda: not _listening_threads(), 10)
            assert len(fake.seen(http_method="GET")) == MAX_LISTEN_FAILURES + 1
            assert json.loads(client.call_tool("echo", {"n": 7}).text) == {"n": 7}
    messages = [r.getMessage() for r in caplog.records]
    gave_up = f"after {MAX_LISTEN_FAILURES + 1} attempts"
    assert any("giving up on the GET stream" in m and gave_up in m for m in messages)
    assert any("GET stream of" in m and "another origin" in m for m in messages)


def test_an_unreadable_get_stream_is_reopened(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """An event past max_message_bytes on the GET stream: a warning, and the stream is opened again."""
    with FakeServer("legacy") as fake:

        def override(request: Request) -> Reply | None:
            if request.method == "GET" and len(fake.seen(http_method="GET")) == 1:
                body = b"retry: 10\n\ndata: " + b"x" * 4096 + b"\n\n"
                return Reply(200, {"Content-Type": "text/event-stream"}, [body])
            return None

        fake.override = override
        with caplog.at_level(logging.WARNING, logger="mcp_sync"), mcp_sync.Client.http(
            fake.url, mode="legacy", max_message_bytes=2048
        ) as client:
            client.connect()
            assert wait_until(lambda: len(fake.seen(http_method="GET")) == 2, 5)
            assert json.loads(client.call_tool("echo", {"n": 8}).text) == {"n": 8}
    assert any("GET stream of" in r.getMessage() and "SSE event of more than 2048 bytes" in r.getMessage()
               for r in caplog.records)


def test_close_ends_a_get_stream_still_waiting_for_its_answer(no_leaks: None) -> None:
    """The GET stream reconnects and the server holds the request: close() ends it at once."""
    release = threading.Event()

    def held(request: Request) -> Reply:
        release.wait(10)
        return Reply(405)

    try:
        with FakeServer("legacy") as fake:
            fake.override = _get_stream(fake, held)
            client = mcp_sync.Client.http(fake.url, mode="legacy")
            client.connect()
            assert wait_until(lambda: len(fake.seen(http_method="GET")) == 2, 5)
            client.close()
            assert not _listening_threads()
    finally:
        release.set()


def test_a_delete_the_server_refuses_does_not_fail_close(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    with FakeServer("legacy") as fake:
        fake.override = lambda r: Reply(500, {}, b"cannot delete") if r.method == "DELETE" else None
        with caplog.at_level(logging.DEBUG, logger="mcp_sync"):
            client = mcp_sync.Client.http(fake.url, mode="legacy")
            client.connect()
            client.close()
        assert len(fake.seen(http_method="DELETE")) == 1
    assert any(r.getMessage() == "mcp_sync: DELETE of the session answered HTTP 500" for r in caplog.records)


def test_a_call_made_while_a_renewal_is_under_way_waits_for_the_new_session(no_leaks: None) -> None:
    """Found running the suite twice at once (server-everything restarted under the client): a
    call sent while another thread renewed the session went out with no session id (cleared
    when the renewal began), so a TypeScript server answered 400 "Server not initialized",
    which names no session to renew, and the call failed. Now the new session is published only
    once initialized: the call goes on the stale one, is refused, waits for the renewal and is
    sent again on the new session."""
    renewing, go = threading.Event(), threading.Event()
    with FakeServer("legacy") as fake, mcp_sync.Client.http(fake.url, mode="legacy", timeout=20) as client:
        client.connect()
        stale = set(fake.sessions)

        def override(request: Request) -> Reply | None:
            session = request.headers.get("mcp-session-id")
            if request.rpc_method == "initialize":
                renewing.set()
                go.wait(10)  # the renewal is held while the second call is made
                return None
            if request.rpc_method == "tools/call" and session is None:
                return json_reply({"jsonrpc": "2.0", "id": request.json["id"],
                                   "error": {"code": -32000, "message": "Bad Request: Server not initialized"}},
                                  status=400)
            if request.rpc_method == "tools/call" and session in stale:
                return Reply(404, {}, b"session not found")
            return None

        fake.sessions.clear()
        fake.override = override
        first, first_box = in_thread(lambda: client.call_tool("echo", {"n": 1}).text)
        assert renewing.wait(10), "the first call did not start a renewal"
        second, second_box = in_thread(lambda: client.call_tool("echo", {"n": 2}).text)
        assert wait_until(lambda: len(fake.seen("tools/call")) >= 2, 10)  # the second call reached the server
        go.set()
        for thread in (first, second):
            thread.join(20)
        assert [json.loads(box.get("value", "null")) for box in (first_box, second_box)] == [{"n": 1}, {"n": 2}], (
            first_box, second_box)
        assert all(r.headers.get("mcp-session-id") for r in fake.seen("tools/call"))  # never without a session
        assert len(fake.seen("initialize")) == 2  # one renewal
