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


@pytest.mark.parametrize("retry_after", ["315360000", "999999999", "far future date"])
def test_the_retry_hint_handed_on_is_at_most_an_hour(retry_after: str) -> None:
    """#28.6: a date ten years ahead (or delay-seconds as large) is handed on as one hour, the
    most ServerUnavailable.retry_after says: an application sleeping on it must not sleep years."""
    import email.utils
    import time

    from mcp_sync.transports._http_common import RETRY_AFTER_HINT_CAP

    if retry_after == "far future date":
        retry_after = email.utils.formatdate(time.time() + 10 * 365 * 86400, usegmt=True)
    with FakeServer("modern") as server:
        server.override = answering("tools/call", Reply(503, {"Retry-After": retry_after}, b""))
        with mcp_sync.Client.http(server.url) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.call_tool("echo", {})
    assert caught.value.retry_after == RETRY_AFTER_HINT_CAP == 3600.0


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
def test_a_modern_list_with_ttl_0_is_fetched_again_even_while_a_listen_is_open(
    transport: str, sent: list[str], request: pytest.FixtureRequest
) -> None:
    """The SDK's modern lists say ``ttlMs: 0``: "immediately stale" (caching.mdx), so every walk
    lists again, with or without a listen for their changes (kept until changed is for lists
    without a ttlMs: legacy servers')."""
    if transport == "stdio":
        client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern", timeout=30)
    else:
        client = mcp_sync.Client.http(request.getfixturevalue("sdk_http_url"), mode="modern", timeout=30)
    with client:
        assert client.server_capabilities["tools"].get("listChanged") is True
        assert client.list_tools().ttl_ms == 0
        sent.clear()
        _walk(client)
        assert sent.count("tools/list") == 3  # no listen: nothing would tell us of a change
        with client.listen(tools_list_changed=True) as sub:
            _walk(client)
            assert sent.count("tools/list") == 6  # a listen changes nothing: 0 is immediately stale
            name = f"fresh_{transport}_{time.monotonic_ns()}"
            client.call_tool("add_tool", {"name": name})
            assert sub.get(timeout=10)[0] == "notifications/tools/list_changed"
            assert name in _walk(client, 1)


def test_a_given_ttl_wins_over_keeping_until_changed() -> None:
    from mcp_sync._protocol.cache import ResultCache

    now = [100.0]
    cache = ResultCache(clock=lambda: now[0])
    token = ("session", 1, 0)
    assert cache.put("tools/list", None, None, {"tools": []}, generation=cache.generation, hold=token)
    assert not cache.put("prompts/list", None, None, {"prompts": [], "ttlMs": 0}, generation=0)  # no token
    for stale in (0, -5):  # "immediately stale" (a negative is read as 0): not kept, even under a token
        assert not cache.put("prompts/list", None, None, {"prompts": [], "ttlMs": stale}, generation=0, hold=token)
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


# -- #19.5 one client per worker process ---------------------------------------------------------


def _echo_in_worker(client: mcp_sync.Client, text: str) -> tuple[int, str, str]:
    """Runs in a worker process: the client arrived pickled and connects on first use here."""
    import os

    assert client.state is mcp_sync.ClientState.NEW
    return os.getpid(), client.call_tool("echo", {"text": text}).text, client.era


def _shared_in_worker(text: str) -> tuple[int, int, str]:
    import os

    client = mcp_sync.shared([PY, SDK_SERVER, "stdio"], timeout=30)
    assert client is mcp_sync.shared([PY, SDK_SERVER, "stdio"], timeout=30)
    return os.getpid(), id(client), client.call_tool("echo", {"text": text}).text


def _pool(workers: int = 2):  # type: ignore[no-untyped-def]
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("era", ERAS)
def test_a_pickled_stdio_client_connects_on_first_use_in_the_worker(era: str) -> None:
    import os

    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=era, timeout=30, name="sdk")
    with _pool(1) as pool:
        pid, text, worker_era = pool.submit(_echo_in_worker, client, "from a worker").result(timeout=90)
    assert (text, worker_era) == ("from a worker", era)
    assert pid != os.getpid()
    assert client.state is mcp_sync.ClientState.NEW  # the parent's was never connected
    back = pickle.loads(pickle.dumps(client))
    assert back is not client and back.name == "sdk" and back.timeout == 30


@pytest.mark.timeout(120)
@pytest.mark.parametrize("era", ERAS)
def test_a_pickled_http_client_connects_on_first_use_in_the_worker(era: str, sdk_http_url: str) -> None:
    with mcp_sync.Client.http(sdk_http_url, mode=era, timeout=30, headers={"X-Team": "a"}) as client:
        client.call_tool("echo", {"text": "parent"})  # a connected client pickles the same way
        with _pool(1) as pool:
            _pid, text, worker_era = pool.submit(_echo_in_worker, client, "http worker").result(timeout=90)
    assert (text, worker_era) == ("http worker", era)


def test_an_option_that_cannot_be_pickled_is_named() -> None:
    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], on_notification=lambda method, params: None)
    with pytest.raises(TypeError, match="on_notification"):
        pickle.dumps(client)
    group = mcp_sync.ClientGroup({"sdk": {"command": PY, "args": [SDK_SERVER, "stdio"]}},
                                 on_elicitation=lambda params: {"action": "decline"})
    with pytest.raises(TypeError, match="on_elicitation"):
        pickle.dumps(group)


def test_a_client_on_a_transport_object_does_not_pickle() -> None:
    from mcp_sync.transports.stdio import StdioTransport

    client = mcp_sync.Client(StdioTransport(PY, [SDK_SERVER, "stdio"]))
    with pytest.raises(TypeError, match="transport object"):
        pickle.dumps(client)
    client.close()


@pytest.mark.timeout(120)
def test_a_client_group_pickles_as_its_servers_and_options() -> None:
    servers = {"sdk": {"command": PY, "args": [SDK_SERVER, "stdio"]},
               "built": mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy")}
    group = mcp_sync.ClientGroup(servers, timeout=30, options={"sdk": {"mode": "modern"}})
    copy = pickle.loads(pickle.dumps(group))
    try:
        assert copy is not group and not copy.clients
        assert copy.call_tool("echo", {"text": "g"}, server="sdk").text == "g"
        assert (copy.clients["sdk"].era, copy.clients["built"].era) == ("modern", "legacy")
        assert copy.clients["sdk"].timeout == 30
    finally:
        copy.close()
        group.close()


@pytest.mark.timeout(120)
def test_shared_is_one_client_per_process_and_options() -> None:
    import threading

    target = [PY, SDK_SERVER, "stdio"]
    seen: list[mcp_sync.Client] = []
    threads = [threading.Thread(target=lambda: seen.append(mcp_sync.shared(target, timeout=30))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    first = seen[0]
    try:
        assert len(seen) == 8 and all(client is first for client in seen)
        assert first.state is mcp_sync.ClientState.NEW  # made on first use, connected on first request
        assert mcp_sync.shared(list(target), timeout=30) is first  # an equal target and options
        other = mcp_sync.shared(target, timeout=31)
        assert other is not first
        assert first.call_tool("echo", {"text": "one"}).text == "one"
        first.close()
        again = mcp_sync.shared(target, timeout=30)
        assert again is not first  # a closed one is replaced
        with _pool(2) as pool:
            results = [pool.submit(_shared_in_worker, f"w{i}") for i in range(4)]
            answers = [future.result(timeout=90) for future in results]
        assert sorted(text for _, _, text in answers) == ["w0", "w1", "w2", "w3"]
        by_pid: dict[int, set[int]] = {}
        for pid, ident, _ in answers:
            by_pid.setdefault(pid, set()).add(ident)
        assert all(len(idents) == 1 for idents in by_pid.values())  # one client per worker process
    finally:
        for client in (first, mcp_sync.shared(target, timeout=31), mcp_sync.shared(target, timeout=30)):
            client.close()


@pytest.mark.timeout(60)
def test_shared_makes_a_new_client_in_a_forked_child() -> None:
    import os

    target = [PY, SDK_SERVER, "stdio"]
    parent = mcp_sync.shared(target, timeout=20, name="forked")
    try:
        assert parent.call_tool("echo", {"text": "p"}).text == "p"
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: a new client of its own, which works
            try:
                child = mcp_sync.shared(target, timeout=20, name="forked")
                ok = child is not parent and child.call_tool("echo", {"text": "c"}).text == "c"
                child.close()
                os.write(write, b"ok" if ok else b"no")
            finally:
                os._exit(0)
        os.close(write)
        answer = os.read(read, 2)
        os.waitpid(pid, 0)
        assert answer == b"ok"
        assert parent.call_tool("echo", {"text": "still"}).text == "still"  # the parent's is unaffected
        assert mcp_sync.shared(target, timeout=20, name="forked") is parent
    finally:
        parent.close()


@pytest.mark.timeout(120)
def test_the_worker_example_runs() -> None:
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    result = subprocess.run([PY, str(root / "examples" / "worker.py")], capture_output=True, text=True, timeout=90,
                            cwd=root, env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["echoed: one, two, three, four", "worker processes: True", "2 + 3 = 5"]


def test_shared_takes_the_options_of_connect() -> None:
    import inspect

    def keywords(function: object) -> set[str]:
        return set(inspect.signature(function).parameters) - {"target"}  # type: ignore[arg-type]

    assert keywords(mcp_sync.shared) == keywords(mcp_sync.connect)
    with pytest.raises(TypeError, match="timout"):
        mcp_sync.shared("no-such-command-mcp-sync", timout=5)  # type: ignore[call-arg]


# -- #19.1 per-request headers and credentials ----------------------------------------------------


@pytest.mark.parametrize("era", ERAS)
def test_per_request_headers_go_with_that_request_only(era: str) -> None:
    with FakeServer(era) as server, mcp_sync.Client.http(server.url, mode=era, headers={"X-Team": "a"}) as client:
        assert client.call_tool("echo", {"n": 1}, headers={"X-User": "42"}).text == '{"n": 1}'
        assert [tool.name for tool in client.tools(headers={"X-User": "7"})] == ["echo"]
        client.call_tool("echo", {"n": 2})
        calls = server.seen("tools/call")
    assert [(r.headers.get("x-user"), r.headers.get("x-team")) for r in calls] == [("42", "a"), (None, "a")]
    assert [r.headers.get("x-user") for r in server.seen("tools/list")] == ["7"]


@pytest.mark.parametrize("era", ERAS)
def test_per_request_headers_on_the_sdk_server(era: str, sdk_http_url: str) -> None:
    with mcp_sync.Client.http(sdk_http_url, mode=era, timeout=30) as client:
        assert client.call_tool("echo", {"text": "h"}, headers={"X-User": "1"}).text == "h"
        assert "echo" in [tool.name for tool in client.tools(headers={"X-User": "1"})]
        assert client.read_resource("test://static", headers={"X-User": "1"}).text == "static content"
        assert client.get_prompt("greet", {"name": "A"}, headers={"X-User": "1"}).messages


def test_per_request_headers_on_stdio_are_a_type_error_before_anything_is_sent() -> None:
    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30)
    with pytest.raises(TypeError, match="HTTP transport"):
        client.call_tool("echo", {"text": "x"}, headers={"X-User": "1"})
    assert client.state is mcp_sync.ClientState.NEW  # not even connected
    with pytest.raises(TypeError, match="HTTP transport"):
        list(client.tools(headers={"X-User": "1"}))
    with pytest.raises(TypeError, match="must map a string"):
        client.call_tool("echo", {"text": "x"}, headers={"X-User": 1})  # type: ignore[dict-item]
    client.close()


def test_results_cached_under_per_request_headers_stay_theirs() -> None:
    from tests.httpkit import json_reply, result

    def listing(request):  # type: ignore[no-untyped-def]
        if request.rpc_method != "tools/list":
            return None
        user = request.headers.get("x-user", "nobody")
        tools = [{"name": f"for_{user}", "inputSchema": {"type": "object"}}]
        return json_reply(result(request, {"tools": tools, "ttlMs": 60_000, "cacheScope": "private"}))

    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, mode="modern") as client:
        server.override = listing
        for _ in range(2):
            assert [t.name for t in client.tools(headers={"X-User": "ann"})] == ["for_ann"]
            assert [t.name for t in client.tools(headers={"X-User": "bob"})] == ["for_bob"]
            assert [t.name for t in client.tools()] == ["for_nobody"]
        assert len(server.seen("tools/list")) == 3  # once per credential, each reused


def test_a_view_sends_its_own_credentials_on_the_shared_connection() -> None:
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, headers={"X-Team": "a"}) as client:
        alice = client.bind(headers={"Authorization": "Bearer alice"})
        bob = client.bind(auth=("bob", "secret"))
        assert isinstance(alice, mcp_sync.BoundClient) and not hasattr(alice, "close")
        for view in (alice, bob, client, alice):
            view.call_tool("echo", {"n": 1}, headers={"X-Request": "r"})
        assert alice.transport is client.transport and alice.era == "modern"  # one connection
        seen = [(r.headers.get("authorization"), r.headers.get("x-team"), r.headers.get("x-request"))
                for r in server.seen("tools/call")]
    assert seen == [("Bearer alice", "a", "r"), ("Basic Ym9iOnNlY3JldA==", "a", "r"), (None, "a", "r"),
                    ("Bearer alice", "a", "r")]


def test_a_views_cached_results_are_its_own() -> None:
    from tests.httpkit import json_reply, result

    def listing(request):  # type: ignore[no-untyped-def]
        if request.rpc_method != "tools/list":
            return None
        user = request.headers.get("authorization", "nobody").split()[-1]
        tools = [{"name": f"for_{user}", "inputSchema": {"type": "object"}}]
        return json_reply(result(request, {"tools": tools, "ttlMs": 60_000, "cacheScope": "private"}))

    with FakeServer("modern") as server, mcp_sync.Client.http(server.url) as client:
        server.override = listing
        for _ in range(3):
            assert [t.name for t in client.bind(headers={"Authorization": "Bearer ann"}).tools()] == ["for_ann"]
            assert [t.name for t in client.bind(headers={"Authorization": "Bearer bob"}).tools()] == ["for_bob"]
        assert len(server.seen("tools/list")) == 2  # each credential's list, reused by its later views


@pytest.mark.parametrize("era", ERAS)
def test_views_on_the_sdk_server(era: str, sdk_http_url: str) -> None:
    client = mcp_sync.Client.http(sdk_http_url, mode=era, timeout=30)
    with client:
        alice = client.bind(headers={"Authorization": "Bearer alice"})
        bob = client.bind(headers={"Authorization": "Bearer bob"})
        again = client.bind(headers={"Authorization": "Bearer alice"})
        assert alice.call_tool("echo", {"text": "a"}).text == "a"
        assert bob.call_tool("echo", {"text": "b"}).text == "b"
        assert again.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        assert "echo" in [tool.name for tool in alice.tools()]
        if era == "legacy":  # a session belongs to its credentials: each view's its own, equal ones shared
            ids = {view.transport.session_id for view in (client, alice, bob)}
            assert len(ids) == 3 and None not in ids
            assert again.transport.session_id == alice.transport.session_id
        else:
            assert alice.transport is client.transport is bob.transport
    with pytest.raises(mcp_sync.ClientStateError):
        alice.call_tool("echo", {"text": "after close"})  # closing the client ends its views
    with pytest.raises(mcp_sync.ClientStateError):
        list(bob.tools())


def test_bind_on_stdio_is_a_type_error_and_views_do_not_pickle(sdk_http_url: str) -> None:
    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"])
    with pytest.raises(TypeError, match="HTTP transport"):
        client.bind(headers={"Authorization": "Bearer x"})
    client.close()
    with mcp_sync.Client.http(sdk_http_url) as remote:
        view = remote.bind(headers={"X-User": "1"})
        with pytest.raises(TypeError, match="does not pickle"):
            pickle.dumps(view)
        with pytest.raises(AttributeError, match="no close"):
            view.close()
        with pytest.raises(TypeError):
            mcp_sync.BoundClient(remote)


def test_the_flask_example_serves_two_users_with_their_own_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util
    import threading
    from pathlib import Path

    examples = Path(__file__).resolve().parent.parent / "examples"
    monkeypatch.syspath_prepend(str(examples))
    import demo_http_server

    server = demo_http_server.serve(0)  # port 0: the kernel's pick, read back below
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("MCP_URL", f"http://127.0.0.1:{port}/mcp")
    spec = importlib.util.spec_from_file_location("flask_users", examples / "flask_users.py")
    assert spec is not None and spec.loader is not None
    app_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app_module)
    try:
        web = app_module.app.test_client()
        results: dict[str, list[str]] = {"alice": [], "bob": []}

        def browse(user: str) -> None:
            for _ in range(5):
                answer = web.get("/whoami", headers={"Authorization": f"Bearer {user}-token"})
                results[user].append(answer.get_json()["user"])

        browsers = [threading.Thread(target=browse, args=(user,)) for user in ("alice", "bob")]
        for browser in browsers:
            browser.start()
        for browser in browsers:
            browser.join(30)
        assert results == {"alice": ["alice"] * 5, "bob": ["bob"] * 5}
        assert web.get("/tools", headers={"Authorization": "Bearer bob-token"}).get_json() == ["whoami"]
        assert web.get("/whoami").get_json()["user"] == "anonymous"
    finally:
        app_module.mcp.close()
        server.shutdown()
        server.server_close()


# -- #19.6 tracing -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def otel():  # type: ignore[no-untyped-def]
    """The OpenTelemetry SDK, recording in memory (set once per process: providers are global)."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    global _OTEL
    if "_OTEL" not in globals():
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _OTEL = (exporter, reader)
    return _OTEL


@pytest.fixture
def sent_meta(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict]]:
    """(method, params._meta) of every request an engine sends."""
    from mcp_sync._engine import Engine

    seen: list[tuple[str, dict]] = []
    original = Engine.request

    def recording(self: Engine, method: str, params: object = None, *args: object, **kwargs: object) -> object:
        meta = params.get("_meta") if isinstance(params, dict) else None
        seen.append((method, dict(meta or {})))
        return original(self, method, params, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Engine, "request", recording)
    return seen


@pytest.mark.parametrize("era", ERAS)
def test_each_request_is_a_client_span_with_trace_context_in_meta(era: str, otel, sent_meta) -> None:  # type: ignore[no-untyped-def]
    exporter, _ = otel
    exporter.clear()
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=era, timeout=30) as client:
        assert client.call_tool("echo", {"text": "t"}).text == "t"
        version = client.protocol_version
    [span] = [s for s in exporter.get_finished_spans() if s.name == "tools/call echo"]
    from opentelemetry.trace import SpanKind, StatusCode

    assert span.kind is SpanKind.CLIENT and span.status.status_code is not StatusCode.ERROR
    attributes = dict(span.attributes)
    assert attributes["mcp.method.name"] == "tools/call"
    assert attributes["gen_ai.tool.name"] == "echo" and attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["network.transport"] == "pipe" and attributes["mcp.protocol.version"] == version
    assert attributes["jsonrpc.request.id"].isdigit()
    [meta] = [meta for method, meta in sent_meta if method == "tools/call"]
    trace_id = f"{span.context.trace_id:032x}"
    assert meta["traceparent"].split("-")[1] == trace_id  # W3C trace context in params._meta


def test_a_sampled_out_parent_still_sends_its_trace_context(otel, sent_meta) -> None:  # type: ignore[no-untyped-def]
    """W3C trace context: a request under a parent that was not sampled carries ``traceparent``
    with the parent's trace id and flags 00, so the server keeps the decision (before: nothing was
    sent, and a server sampled a fresh trace of its own). No span is recorded for it."""
    from opentelemetry import context, trace

    exporter, _ = otel
    exporter.clear()
    parent = trace.SpanContext(trace_id=0x0AF7651916CD43DD8448EB211C80319C, span_id=0x00F067AA0BA902B7,
                               is_remote=True, trace_flags=trace.TraceFlags(0))
    token = context.attach(trace.set_span_in_context(trace.NonRecordingSpan(parent)))
    try:
        with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30) as client:
            assert client.call_tool("echo", {"text": "t"}).text == "t"
    finally:
        context.detach(token)
    [meta] = [meta for method, meta in sent_meta if method == "tools/call"]
    version, trace_id, _span_id, flags = meta["traceparent"].split("-")
    assert (version, trace_id, flags) == ("00", "0af7651916cd43dd8448eb211c80319c", "00")
    assert [s for s in exporter.get_finished_spans() if s.name == "tools/call echo"] == []


def test_failures_set_the_span_status_and_error_type(otel, sdk_http_url: str) -> None:  # type: ignore[no-untyped-def]
    from opentelemetry.trace import StatusCode

    exporter, reader = otel
    exporter.clear()
    with mcp_sync.Client.http(sdk_http_url, mode="modern", timeout=30) as client:
        with pytest.raises(mcp_sync.ServerError) as caught:
            client.request("no/such/method")
        assert client.call_tool("fail").is_error
        client.read_resource("test://static")
    spans = {s.name: s for s in exporter.get_finished_spans()}
    failed = spans["no/such/method"]
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == str(caught.value.code)
    assert failed.attributes["rpc.response.status_code"] == str(caught.value.code)
    tool = spans["tools/call fail"]
    assert tool.status.status_code is StatusCode.ERROR and tool.attributes["error.type"] == "tool_error"
    read = spans["resources/read"]
    assert read.attributes["mcp.resource.uri"] == "test://static"
    assert read.attributes["network.transport"] == "tcp" and read.attributes["server.address"] == "127.0.0.1"
    names = [metric.name for resource in reader.get_metrics_data().resource_metrics
             for scope in resource.scope_metrics for metric in scope.metrics]
    assert "mcp.client.operation.duration" in names


def test_tracing_false_makes_no_spans_and_import_loads_no_opentelemetry(otel) -> None:  # type: ignore[no-untyped-def]
    import subprocess

    exporter, _ = otel
    exporter.clear()
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30, tracing=False) as client:
        client.call_tool("echo", {"text": "quiet"})
    assert exporter.get_finished_spans() == ()
    code = "import sys, mcp_sync; sys.exit(any(m.startswith('opentelemetry') for m in sys.modules))"
    assert subprocess.run([PY, "-c", code], timeout=60).returncode == 0


@pytest.mark.parametrize("era", ERAS)
def test_a_dropped_client_with_connection_events_still_closes_at_once(era: str) -> None:
    """on_reconnected holds the client weakly; the lists kept until changed, the tracing and the
    connection events hold none: dropping the last reference closes it (gc disabled)."""
    import gc
    import os
    import signal
    import warnings

    events = Events()
    gc.collect()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=era, timeout=30,
                                           on_connection_lost=events.lost, on_reconnected=events.reconnected)
            _walk(client)
            pid = client.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            events.wait_for(1)
            _walk(client)  # restarted: on_reconnected(client) ran
            events.wait_for(2)
            new_pid = client.pid
            events.seen.clear()  # the record of on_reconnected's argument held the client
            assert new_pid is not None and sys.getrefcount(client) == 2
            del client
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.kill(new_pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError(f"the server {new_pid} still runs: the client was not closed")
    finally:
        gc.enable()


def test_tracing_costs_nothing_until_an_sdk_is_set_up() -> None:
    """#19.6: with opentelemetry-api installed but no SDK configured (the API's proxy providers,
    which record nothing) a request takes the plain path; once an SDK is set up, it is traced."""
    import subprocess
    import sys

    # the per-request check (_configured_check: reads the API's provider variables) must agree
    # with the public getters (_configured), before and after each kind of SDK provider is set
    script = (
        "from opentelemetry import metrics, trace\n"
        "from mcp_sync._protocol.tracing import _configured, _configured_check\n"
        "quick = _configured_check(trace, metrics)\n"
        "assert not _configured(trace, metrics), 'the API alone counts as configured'\n"
        "assert not quick(), 'the quick check counts the API alone as configured'\n"
        "if KIND == 'trace':\n"
        "    from opentelemetry.sdk.trace import TracerProvider\n"
        "    trace.set_tracer_provider(TracerProvider())\n"
        "else:\n"
        "    from opentelemetry.sdk.metrics import MeterProvider\n"
        "    metrics.set_meter_provider(MeterProvider())\n"
        "assert _configured(trace, metrics), 'an SDK provider is not seen'\n"
        "assert quick(), 'the quick check does not see an SDK provider set after it was made'\n"
        "print('ok')\n"
    )
    for kind in ("trace", "metrics"):
        out = subprocess.run([sys.executable, "-c", f"KIND = {kind!r}\n" + script], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == "ok", (kind, out.stderr)
