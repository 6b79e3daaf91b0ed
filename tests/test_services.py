"""Issue #19: mcp_sync in long-lived services (web apps, workers).

Against real servers (the Python SDK server, both eras, stdio and Streamable
HTTP) where they can show it, and the scripted HTTP server of ``httpkit`` for
what they will not do on demand (429/503 answers).
"""

from __future__ import annotations

import pickle
import sys
import time

import pytest

import mcp_sync
from tests.conftest import SDK_SERVER
from tests.httpkit import FakeServer, Reply, answering

PY = sys.executable
ERAS = ["modern", "legacy"]


# -- #19.4 retry hints ---------------------------------------------------------------------------


def test_a_tool_call_answered_503_raises_server_unavailable_with_the_retry_hint_and_is_not_resent() -> None:
    with FakeServer("modern") as server:
        server.override = answering("tools/call", Reply(503, {"Retry-After": "7"}, b"overloaded"))
        with mcp_sync.Client.http(server.url, max_retries=2) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.call_tool("echo", {"text": "hi"})
    error = caught.value
    assert isinstance(error, mcp_sync.ProtocolError)
    assert (error.status, error.retry_after, error.method) == (503, 7.0, "tools/call")
    assert len(server.seen("tools/call")) == 1  # a tools/call may have had effects: never sent twice


@pytest.mark.parametrize("era", ERAS)
def test_a_list_answered_429_is_retried_then_raises_server_unavailable(era: str) -> None:
    with FakeServer(era) as server:
        server.override = answering("tools/list", Reply(429, {}, b"slow down"))
        with mcp_sync.Client.http(server.url, max_retries=1, mode=era) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.list_tools()
    assert (caught.value.status, caught.value.retry_after) == (429, None)
    assert len(server.seen("tools/list")) == 2  # safe to repeat: retried once (max_retries=1)


def test_an_http_date_retry_after_becomes_seconds() -> None:
    import email.utils
    import time

    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    with FakeServer("modern") as server:
        server.override = answering("tools/call", Reply(502, {"Retry-After": when}, b""))
        with mcp_sync.Client.http(server.url) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.call_tool("echo", {})
    assert caught.value.status == 502
    assert 100 < caught.value.retry_after <= 121


def test_every_other_http_failure_carries_its_status(sdk_http_url: str) -> None:
    wrong = sdk_http_url.rsplit("/", 1)[0] + "/nowhere"
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        mcp_sync.Client.http(wrong, timeout=10).connect()
    assert not isinstance(caught.value, mcp_sync.ServerUnavailable)
    assert caught.value.status == 404


def test_a_protocol_error_without_http_has_no_status() -> None:
    assert mcp_sync.ProtocolError("bad").status is None


def test_server_unavailable_pickles_with_its_hints() -> None:
    error = mcp_sync.ServerUnavailable("HTTP 503", status=503, retry_after=2.5, method="tools/call", request_id=4)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is mcp_sync.ServerUnavailable
    assert (back.status, back.retry_after, back.method, back.request_id) == (503, 2.5, "tools/call", 4)
    assert "ServerUnavailable" in mcp_sync.__all__
    assert "ServerUnavailable" in mcp_sync.exceptions.__doc__


# -- #19.2 lists kept until they change ----------------------------------------------------------


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every request method any engine sends, in order."""
    from mcp_sync._engine import Engine

    methods: list[str] = []
    original = Engine.request

    def counting(self: Engine, method: str, *args: object, **kwargs: object) -> object:
        methods.append(method)
        return original(self, method, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Engine, "request", counting)
    return methods


def _walk(client: mcp_sync.Client, times: int = 3) -> list[str]:
    names: list[str] = []
    for _ in range(times):
        names = [tool.name for tool in client.tools()]
    return names


def test_a_legacy_stdio_server_that_declares_list_changed_is_listed_once_until_it_changes(sent: list[str]) -> None:
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy", timeout=30) as client:
        assert client.server_capabilities["tools"].get("listChanged") is True
        assert "echo" in _walk(client)
        assert sent.count("tools/list") == 1  # three walks, one tools/list
        with client.listen(tools_list_changed=True) as sub:
            client.call_tool("add_tool", {"name": "fresh"})
            assert sub.get(timeout=10)[0] == "notifications/tools/list_changed"
        assert "fresh" in _walk(client)  # the change notification dropped the kept list
        assert sent.count("tools/list") == 2


def test_a_restarted_stdio_server_is_listed_again(sent: list[str]) -> None:
    import os
    import signal

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy", timeout=30) as client:
        _walk(client)
        pid = client.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while client.pid == pid and time.monotonic() < deadline:
            time.sleep(0.05)
        _walk(client)
        assert sent.count("tools/list") == 2


def test_cache_false_lists_every_time(sent: list[str]) -> None:
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy", cache=False, timeout=30) as client:
        _walk(client)
    assert sent.count("tools/list") == 3


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_modern_server_keeps_its_lists_only_while_a_listen_for_them_is_open(
    transport: str, sent: list[str], request: pytest.FixtureRequest
) -> None:
    if transport == "stdio":
        client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern", timeout=30)
    else:
        client = mcp_sync.Client.http(request.getfixturevalue("sdk_http_url"), mode="modern", timeout=30)
    with client:
        assert client.server_capabilities["tools"].get("listChanged") is True
        _walk(client)
        assert sent.count("tools/list") == 3  # no listen: nothing would tell us of a change
        with client.listen(tools_list_changed=True) as sub:
            _walk(client)
            assert sent.count("tools/list") == 4
            name = f"fresh_{transport}_{time.monotonic_ns()}"
            client.call_tool("add_tool", {"name": name})
            assert sub.get(timeout=10)[0] == "notifications/tools/list_changed"
            assert name in _walk(client)
            assert sent.count("tools/list") == 5
        _walk(client, 1)  # the listen closed: the kept list is not trusted any more
        assert sent.count("tools/list") == 6


def test_a_given_ttl_wins_over_keeping_until_changed() -> None:
    from mcp_sync._protocol.cache import ResultCache

    now = [100.0]
    cache = ResultCache(clock=lambda: now[0])
    token = ("session", 1, 0)
    assert cache.put("tools/list", None, None, {"tools": []}, generation=cache.generation, hold=token)
    assert not cache.put("prompts/list", None, None, {"prompts": [], "ttlMs": 0}, generation=0)  # no token
    assert cache.put("resources/list", None, None, {"resources": [], "ttlMs": 1000}, generation=0, hold=token)
    now[0] += 3600
    assert cache.get("tools/list", None, None, token) == {"tools": []}  # kept: no expiry
    assert cache.get("tools/list", None, None, ("session", 1, 1)) is None  # the stream re-opened
    assert cache.get("resources/list", None, None, token) is None  # its ttlMs ran out
    assert not cache.put("resources/read", {"uri": "x"}, None, {"contents": []}, generation=0, hold=token)


def test_legacy_http_keeps_lists_while_its_get_stream_is_open(everything_http_url: str, sent: list[str]) -> None:
    """server-everything (2025-11-25) declares listChanged; its notifications come on the session's
    GET stream: lists are kept while it is open, and listed again once it broke and came back."""
    with mcp_sync.Client.http(everything_http_url, timeout=30) as client:
        assert client.era == "legacy"
        _walk(client)
        assert sent.count("tools/list") == 1
        first = client.transport.notification_stream
        assert first is not None
        slot = client.transport._listen_slot
        assert slot is not None
        slot.abort()  # the stream breaks: notifications may be missed until it is back
        deadline = time.monotonic() + 10
        while client.transport.notification_stream in (first, None) and time.monotonic() < deadline:
            time.sleep(0.05)
        _walk(client)
        assert sent.count("tools/list") == 2


# -- #19.3 connection events ---------------------------------------------------------------------


class Events:
    """Records the connection events and the thread each ran on."""

    def __init__(self) -> None:
        import threading

        self.seen: list[tuple[str, object, str]] = []
        self.changed = threading.Condition()

    def lost(self, error: mcp_sync.MCPError) -> None:
        import threading

        with self.changed:
            self.seen.append(("lost", error, threading.current_thread().name))
            self.changed.notify_all()

    def reconnected(self, client: mcp_sync.Client) -> None:
        import threading

        with self.changed:
            self.seen.append(("reconnected", client, threading.current_thread().name))
            self.changed.notify_all()

    def wait_for(self, count: int, timeout: float = 15) -> list[tuple[str, object, str]]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.seen) >= count, timeout)
            return list(self.seen)


@pytest.mark.parametrize("era", ERAS)
def test_a_stdio_server_that_died_is_reported_lost_then_reconnected(era: str) -> None:
    import os
    import signal

    events = Events()
    client = mcp_sync.Client.stdio(
        PY, [SDK_SERVER, "stdio"], mode=era, timeout=30,
        on_connection_lost=events.lost, on_reconnected=events.reconnected,
    )
    with client:
        pid = client.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        [(kind, error, thread)] = events.wait_for(1)
        assert kind == "lost" and isinstance(error, mcp_sync.ConnectionClosed)
        assert thread.startswith("mcp_sync-dispatch")
        assert client.call_tool("echo", {"text": "back"}).text == "back"  # restarts the server
        seen = events.wait_for(2)
        assert seen[1][0] == "reconnected" and seen[1][1] is client and seen[1][2].startswith("mcp_sync-dispatch")
    time.sleep(0.2)
    assert len(events.seen) == 2  # close() is no loss


def test_a_renewed_legacy_http_session_is_reported(sdk_http_url: str) -> None:
    import requests

    events = Events()
    client = mcp_sync.Client.http(
        sdk_http_url, mode="legacy", timeout=30, on_connection_lost=events.lost, on_reconnected=events.reconnected
    )
    with client:
        old = client.transport.session_id
        assert old is not None
        # the server forgets the session (as after a restart of the server)
        requests.delete(sdk_http_url, headers={"Mcp-Session-Id": old, "MCP-Protocol-Version": "2025-11-25"}, timeout=10)
        assert client.call_tool("echo", {"text": "again"}).text == "again"  # renewed, then sent again
        seen = events.wait_for(2)
        assert client.transport.session_id not in (None, old)
    assert [kind for kind, _, _ in seen] == ["lost", "reconnected"]
    assert isinstance(seen[0][1], mcp_sync.SessionExpiredError)
    assert seen[1][1] is client


def test_a_listen_stream_that_came_back_is_reported(sdk_http_url: str) -> None:
    import socket

    events = Events()
    client = mcp_sync.Client.http(
        sdk_http_url, mode="modern", timeout=30, on_connection_lost=events.lost, on_reconnected=events.reconnected
    )
    with client, client.listen(tools_list_changed=True) as sub:
        record = client.transport._inflight[sub.subscription_id]
        assert record.slot.sock is not None
        record.slot.sock.shutdown(socket.SHUT_RDWR)  # the stream breaks; the connection lives on
        seen = events.wait_for(2)
        assert [kind for kind, _, _ in seen] == ["lost", "reconnected"]
        assert seen[1][1] is client
        assert sub.get(timeout=10)[0] == "mcp_sync/resubscribed"


def test_connection_event_options_are_checked_and_typed() -> None:
    import inspect

    with pytest.raises(TypeError, match="on_connection_lost"):
        mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], on_connection_lost="print")
    for function in (mcp_sync.Client, mcp_sync.Client.stdio, mcp_sync.Client.http, mcp_sync.Client.sse,
                     mcp_sync.connect, mcp_sync.ClientGroup):
        parameters = inspect.signature(function).parameters
        assert "on_connection_lost" in parameters and "on_reconnected" in parameters, function
