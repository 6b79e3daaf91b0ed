"""Connecting, closing and reconnecting: issue 8 point 3 and issue 9 points 2, 3, 7, 8, 12, 14, 15, 20.

The Python SDK server (stdio and Streamable HTTP) where a real server can show it; the
project's fault server; the scripted tests/servers/lifecycle_server.py for what real
servers will not do (stay silent, start slowly, answer -32022 without revisions, linger
at exit). server-everything is not started here: it appears only as a command line
whose server name is derived.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from lifekit import gone, in_thread, server_pid, wait_for

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS, fault_args
from httpkit import RawServer, read_request

pytestmark = pytest.mark.timeout(60)

LIFECYCLE = str(SERVERS / "lifecycle_server.py")


def kill(pid: int | None) -> None:
    assert pid, "no server process to kill"
    os.kill(pid, 9)


def pending(client: mcp_sync.Client) -> int:
    """Requests sent and not yet answered (what a test waits for instead of sleeping)."""
    engine = client._engine
    return len(engine._pending) if engine is not None else 0


def lifecycle(*args: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [LIFECYCLE, *args], **options)


# -- issue 8.3: the implicit connect keeps the caller's deadline; close() interrupts a connect ----------


def test_first_call_on_a_silent_server_keeps_its_own_timeout(no_leaks: None) -> None:
    """#8.3: call_tool(timeout=1) on a silent server raised after 70 s (probe 10 s + initialize 60 s)."""
    client = lifecycle("--silent")
    try:
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout) as caught:
            client.call_tool("echo", {"text": "x"}, timeout=1)
        assert time.monotonic() - started < 2.5  # 1.5 s of margin; the regression took 70 s
        assert "not connected within 1" in str(caught.value)
        token = mcp_sync.CancellationToken()
        threading.Timer(0.3, token.cancel, kwargs={"reason": "user pressed stop"}).start()
        started = time.monotonic()
        with pytest.raises(mcp_sync.Cancelled) as cancelled:
            client.call_tool("echo", {"text": "x"}, cancel=token)
        # cancelled at 0.3 s: 2.7 s of margin; the regression waits for the silent server's connect
        assert time.monotonic() - started < 3.0 and cancelled.value.reason == "user pressed stop"
    finally:
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 5


#: Every call that takes ``timeout`` and ``cancel``, as a silent server's first call.
FIRST_CALLS = {
    "call_tool": lambda client, **options: client.call_tool("echo", {"text": "x"}, **options),
    "ping": lambda client, **options: client.ping(**options),
    "discover": lambda client, **options: client.discover(**options),
    "call_tool_as_task": lambda client, **options: client.call_tool_as_task("echo", {"text": "x"}, **options),
    "list_tools": lambda client, **options: client.list_tools(**options),
    "read_resource": lambda client, **options: client.read_resource("test://a", **options),
    "get_prompt": lambda client, **options: client.get_prompt("greet", **options),
    "request": lambda client, **options: client.request("tools/list", None, **options),
}


@pytest.mark.parametrize("call", FIRST_CALLS.values(), ids=FIRST_CALLS.keys())
def test_every_first_call_connects_within_its_own_timeout_and_cancel(call: Any, no_leaks: None) -> None:
    """The class of #8.3: a call that connects does so within its own timeout and cancel token
    (ping, discover and call_tool_as_task waited for the client's timeout instead)."""
    client = lifecycle("--silent", timeout=20)  # not entered: `with` would connect first
    try:
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout, match=r"not connected within 0\.5"):
            call(client, timeout=0.5)
        assert time.monotonic() - started < 3  # the client's own timeout is 20 s
        token = mcp_sync.CancellationToken()
        threading.Timer(0.3, token.cancel, kwargs={"reason": "user pressed stop"}).start()
        started = time.monotonic()
        with pytest.raises(mcp_sync.Cancelled):
            call(client, cancel=token)
        assert time.monotonic() - started < 3
    finally:
        client.close()


@pytest.mark.parametrize("method", ["call_tool", "ping"])
def test_a_bound_views_first_call_connects_within_its_own_timeout_and_cancel(method: str, no_leaks: None) -> None:
    """The same for a view with credentials (``bind(headers=...)``), which picks the shared or
    its own session once connected: against an HTTP server that never answers, within the
    call's timeout and token, not the client's 20 s."""
    stop = threading.Event()

    def silent(conn: Any) -> None:
        read_request(conn)
        stop.wait(30)

    with RawServer(silent) as server:
        client = mcp_sync.Client.http(server.url, timeout=20)
        try:
            view = client.bind(headers={"X-Caller": "a"})
            call = getattr(view, method)
            args = ("echo",) if method == "call_tool" else ()
            started = time.monotonic()
            with pytest.raises(mcp_sync.RequestTimeout, match=r"not connected within 0\.5"):
                call(*args, timeout=0.5)
            assert time.monotonic() - started < 3
            token = mcp_sync.CancellationToken()
            threading.Timer(0.3, token.cancel).start()
            started = time.monotonic()
            with pytest.raises(mcp_sync.Cancelled):
                call(*args, cancel=token)
            assert time.monotonic() - started < 3
        finally:
            stop.set()
            client.close()


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_close_interrupts_a_connect_in_progress(timeout: float | None, no_leaks: None) -> None:
    """#8.3: close() from another thread waited for the whole connect (for ever with timeout=None)."""
    client = lifecycle("--silent", timeout=timeout)
    thread, box = in_thread(client.connect)
    assert wait_for(lambda: server_pid(client) is not None, 10)  # connecting: the server runs (#22.6)
    pid = server_pid(client)
    started = time.monotonic()
    client.close()
    closed_at = time.monotonic()
    thread.join(5)
    assert closed_at - started < 4
    assert isinstance(box.get("error"), mcp_sync.ClientStateError)
    assert box["at"] - started < 1.0  # the connecting thread was released first, not after the shutdown
    assert gone(pid)
    assert client.state is mcp_sync.ClientState.CLOSED


def test_a_later_call_waits_for_the_same_connect_and_succeeds(no_leaks: None) -> None:
    """#8.3: a call that gave up leaves the connect running; the next call gets its result."""
    client = lifecycle("--start-delay", "2")
    try:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {"text": "a"}, timeout=0.5)
        pid = server_pid(client)
        started = time.monotonic()
        assert client.call_tool("echo", {"text": "b"}, timeout=10).text == "b"
        assert time.monotonic() - started < 5
        assert server_pid(client) == pid  # the same connect (the same server process), not a new one
    finally:
        client.close()


def test_concurrent_first_calls_share_one_connect(no_leaks: None) -> None:
    """#8.3: eight threads' first calls start one server, each within its own deadline."""
    client = lifecycle("--start-delay", "1")
    try:
        results: list[Any] = []
        threads = [in_thread(lambda i=i: client.call_tool("echo", {"text": str(i)}, timeout=15)) for i in range(8)]
        for thread, box in threads:
            thread.join(20)
            results.append(box.get("value") or box.get("error"))
        assert [r.text for r in results] == [str(i) for i in range(8)]
        assert client.call_tool("pid", timeout=5).text == str(server_pid(client))
    finally:
        client.close()


def test_random_deadlines_cancels_and_a_close_during_the_connect(no_leaks: None) -> None:
    """#8.3, the property: whatever each caller's timeout or token, and a close() at any time,
    every first call ends by its own deadline with its own outcome; nothing is left running."""
    import random

    rng = random.Random(8_3)
    # The server answers 4 s after it starts; the close comes at about 2.2 s, during the connect.
    # Each call must end within 1 s of its own end (timeout, cancel or the close): the
    # regressions end with the connect, at 4 s or later (#22.6: the margins, 1 s and 0.8 s).
    client = lifecycle("--start-delay", "4")
    plans = [(rng.uniform(0.1, 2.5), rng.choice([None, rng.uniform(0.05, 2.0)])) for _ in range(16)]
    tokens = [mcp_sync.CancellationToken() for _ in plans]
    started = time.monotonic()
    for token, (_, cancel_at) in zip(tokens, plans):
        if cancel_at is not None:
            threading.Timer(cancel_at, token.cancel, kwargs={"reason": "plan"}).start()
    calls = [
        in_thread(lambda t=timeout, c=token: client.call_tool("echo", {"text": "x"}, timeout=t, cancel=c))
        for (timeout, _), token in zip(plans, tokens)
    ]
    time.sleep(max(0.0, started + 2.2 - time.monotonic()))
    pid = server_pid(client)
    close_at = time.monotonic() - started  # when it really began
    client.close()
    for (thread, box), (timeout, cancel_at) in zip(calls, plans):
        thread.join(5)
        ended = box["at"] - started
        bound = min(timeout, cancel_at if cancel_at is not None else timeout, close_at) + 1.0
        assert ended < bound, (timeout, cancel_at, ended, box)
        outcome = box.get("value") or box.get("error")
        allowed = (mcp_sync.CallToolResult, mcp_sync.RequestTimeout, mcp_sync.Cancelled,
                   mcp_sync.ClientStateError, mcp_sync.ConnectionClosed)
        assert isinstance(outcome, allowed), outcome
        if isinstance(outcome, mcp_sync.Cancelled):
            assert cancel_at is not None and outcome.reason == "plan"
    assert gone(pid)


def test_close_racing_the_end_of_a_connect_always_wins(no_leaks: None) -> None:
    """#8.3: close() at any moment of a connect (before, during, right at its end) leaves the
    client CLOSED, its server gone, and the connecting caller with an answer or a clear error."""
    import random

    rng = random.Random(20)
    for _ in range(12):
        client = mcp_sync.Client.stdio(PY, fault_args(), timeout=10)
        thread, box = in_thread(client.connect)
        time.sleep(rng.uniform(0.0, 0.4))
        client.close()
        thread.join(5)
        assert not thread.is_alive()
        assert "value" in box or isinstance(box.get("error"), (mcp_sync.ClientStateError, mcp_sync.ConnectionClosed))
        assert client.state is mcp_sync.ClientState.CLOSED
        assert client.pid is None or gone(client.pid)


# -- issue 9.2, 9.3, 9.12: the era decision -----------------------------------------------------------


def test_modern_server_slower_to_start_than_the_probe_is_modern(no_leaks: None) -> None:
    """#9.2: the SDK server (serves 2026-07-28) behind `sleep 2`, probe_timeout=1: it used to fail
    with UnsupportedProtocolVersionError (initialize answered -32022), and again on a second try."""
    command = f"sleep 2; exec {PY} {SDK_SERVER} stdio"
    with mcp_sync.Client.stdio("bash", ["-c", command], probe_timeout=1, timeout=20) as client:
        assert client.era == "modern" and client.protocol_version == "2026-07-28"
        assert client.call_tool("echo", {"text": "late"}).text == "late"


def test_late_discover_result_counts_while_initialize_is_unanswered(no_leaks: None) -> None:
    """#9.2: a modern-only server that answers initialize with -32601: the late DiscoverResult decides."""
    with lifecycle("--era", "modern", "--start-delay", "1.5", probe_timeout=0.5, timeout=10) as client:
        assert client.era == "modern"
        assert client.call_tool("echo", {"text": "m"}).text == "m"


def test_slow_legacy_server_is_still_legacy(no_leaks: None) -> None:
    """A legacy server slow to start: the probe's -32601 and the InitializeResult both say legacy."""
    with lifecycle("--era", "legacy", "--start-delay", "1", probe_timeout=0.3, timeout=10) as client:
        assert client.era == "legacy" and client.protocol_version == "2025-11-25"
        assert client.call_tool("echo", {"text": "l"}).text == "l"


def test_an_unanswered_probe_is_cancelled_once_the_handshake_decides(no_leaks: None) -> None:
    """A legacy server that drops server/discover: once initialize decides, the open probe is
    cancelled (the server is told) rather than left waiting for its own timeout."""
    import json

    with mcp_sync.Client.stdio(PY, fault_args("--behaviour", "slow-discover"), probe_timeout=0.3) as client:
        assert client.era == "legacy"
        assert wait_for(lambda: not [t for t in threading.enumerate() if t.name.startswith("mcp_sync-connect")], 5)
        assert json.loads(client.call_tool("cancelled_log").text) == [1]  # the probe's id


@pytest.mark.parametrize("how", ["nodata", "empty"])
def test_unsupported_version_listing_no_revisions_falls_back_to_the_handshake(how: str, no_leaks: None) -> None:
    """#9.3: -32022 with no `supported` (or an empty list) raised; it means: try the handshake."""
    with lifecycle("--discover-error", how, timeout=10) as client:
        assert client.era == "legacy"
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


def test_unsupported_version_listing_only_unknown_revisions_still_raises(no_leaks: None) -> None:
    """The era rules' other side: -32022 naming only revisions we do not speak raises at once."""
    client = mcp_sync.Client.stdio(
        PY, fault_args("--behaviour", "unsupported-version", "--supported", "1999-01-01"), timeout=10
    )
    with pytest.raises(mcp_sync.UnsupportedProtocolVersionError):
        client.connect()
    client.close()


def test_a_failed_connect_says_what_the_probe_found(no_leaks: None) -> None:
    """#9.12: the error names the probe's outcome, not only the handshake's."""
    client = lifecycle("--silent", probe_timeout=0.3, timeout=0.8, restart=False)
    started = time.monotonic()
    with pytest.raises(mcp_sync.RequestTimeout) as caught:
        client.connect()
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert "initialize: no answer within 0.8 s" in message
    assert "server/discover probe: no answer within" in message
    client.close()
    client = lifecycle("--era", "legacy", "--init-error", "-32603", restart=False, timeout=10)
    with pytest.raises(mcp_sync.ServerError) as refused:
        client.connect()
    assert "initialize refused" in str(refused.value) and "server/discover probe:" in str(refused.value)
    assert "Method not found" in str(refused.value)
    client.close()


# -- issue 9.7: close() releases every waiter first -----------------------------------------------------


def test_close_releases_waiting_threads_before_the_server_is_gone(no_leaks: None) -> None:
    """#9.7: eight threads in a slow call; the server takes seconds to exit. Every waiter gets
    ConnectionClosed at once; close() itself returns within its shutdown bound."""
    client = lifecycle("--linger", "10", timeout=30)
    client.connect()
    pid = server_pid(client)
    calls = [in_thread(lambda: client.call_tool("slow", {"seconds": 20})) for _ in range(8)]
    assert wait_for(lambda: pending(client) == 8, 10)  # all eight sent (#22.6: no fixed sleep)
    started = time.monotonic()
    client.close()
    ended = time.monotonic() - started
    for thread, box in calls:
        thread.join(5)
        assert isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
        # fixed: milliseconds; the regression waits for the server's exit (it lingers 10 s)
        assert box["at"] - started < 2.0
    assert ended < 10 and gone(pid)


# -- issue 9.20: connect() after close(), nested `with` -----------------------------------------------


def test_connect_after_close_starts_afresh_and_requests_do_not(no_leaks: None) -> None:
    """#9.20: requests on a closed client raise ClientStateError; connect() (or `with`) opens it afresh."""
    client = mcp_sync.Client.stdio(PY, fault_args(), timeout=20)
    client.connect()
    first = server_pid(client)
    client.close()
    assert gone(first)
    with pytest.raises(mcp_sync.ClientStateError):
        client.call_tool("echo", {"text": "x"})
    client.connect()
    assert client.state is mcp_sync.ClientState.OPEN and server_pid(client) != first
    assert client.call_tool("echo", {"text": "again"}).text == "again"
    client.close()
    with client:
        assert client.call_tool("echo", {"text": "with"}).text == "with"
    assert client.state is mcp_sync.ClientState.CLOSED


def test_a_client_built_on_a_transport_object_cannot_reopen() -> None:
    """#9.20: it cannot make a new transport, and says so."""
    from mcp_sync.transports.stdio import StdioTransport

    client = mcp_sync.Client(StdioTransport(PY, fault_args()))
    client.connect()
    client.close()
    with pytest.raises(mcp_sync.ClientStateError, match="transport object"):
        client.connect()


def test_nested_with_closes_only_at_the_outermost_exit(no_leaks: None) -> None:
    """#9.20: the inner `with client:` used to close the client."""
    with mcp_sync.Client.stdio(PY, fault_args(), timeout=20) as client:
        with client:
            assert client.call_tool("echo", {"text": "inner"}).text == "inner"
        assert client.state is mcp_sync.ClientState.OPEN
        assert client.call_tool("echo", {"text": "outer"}).text == "outer"
    assert client.state is mcp_sync.ClientState.CLOSED


# -- issue 9.8: reconnect() ----------------------------------------------------------------------------


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_reconnect_starts_afresh_and_keeps_subscriptions(era: str, no_leaks: None) -> None:
    """#9.8: a public reconnect(): a new server, the subscription re-established and announced."""
    options = {} if era == "modern" else {"mode": "legacy"}
    with mcp_sync.Client.stdio(PY, fault_args("--era", era), timeout=20, **options) as client:
        sub = client.listen(tools_list_changed=True)
        first = server_pid(client)
        listening = pending(client)
        waiting = in_thread(lambda: client.call_tool("slow", {"seconds": 10}))
        assert wait_for(lambda: pending(client) > listening, 10)  # the slow call is sent (#22.6)
        info = client.reconnect()
        assert info and server_pid(client) != first and gone(first)
        waiting[0].join(5)
        assert isinstance(waiting[1].get("error"), mcp_sync.ConnectionClosed)
        events = [sub.get(timeout=10), sub.get(timeout=10)]
        assert events[0] is None and events[1] is not None and events[1][0] == "mcp_sync/resubscribed"
        client.call_tool("notify_changed", {"kind": "tools"})
        assert (sub.get(timeout=10) or ("",))[0] == "notifications/tools/list_changed"
        sub.close()
    with pytest.raises(mcp_sync.ClientStateError):
        client.reconnect()


def test_reconnect_over_http_opens_a_new_session(sdk_http_url: str, no_leaks: None) -> None:
    """#9.8 over Streamable HTTP: a new legacy session; calls go on; the old session is not reused."""
    with mcp_sync.Client.http(sdk_http_url, mode="legacy", timeout=20) as client:
        assert client.call_tool("echo", {"text": "a"}).text == "a"
        first = client.transport.session_id  # type: ignore[attr-defined]
        client.reconnect()
        second = client.transport.session_id  # type: ignore[attr-defined]
        assert first and second and second != first
        assert client.call_tool("echo", {"text": "b"}).text == "b"


# -- issue 9.14: a listen loop on a stdio server that died ------------------------------------------------


def test_listen_brings_a_dead_server_back_by_itself(no_leaks: None) -> None:
    """#9.14: it went quiet (suspended, end_reason None) until some other request restarted the server."""
    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=20) as client:
        sub = client.listen(tools_list_changed=True)
        first = server_pid(client)
        kill(first)  # no request of ours notices: only the subscription is there
        assert list(sub) == []
        event = sub.get(timeout=15)  # no other request is made
        assert event is not None and event[0] == "mcp_sync/resubscribed"
        assert sub.state == "live" and server_pid(client) != first
        client.call_tool("notify_changed", {"kind": "tools"})
        assert (sub.get(timeout=10) or ("",))[0] == "notifications/tools/list_changed"
        sub.close()


def test_listen_on_a_dead_server_without_restart_ends_with_a_reason(no_leaks: None) -> None:
    """#9.14: restart=False: the subscription ends, and says why."""
    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=20, restart=False) as client:
        sub = client.listen(tools_list_changed=True)
        kill(server_pid(client))
        assert list(sub) == []
        assert wait_for(lambda: sub.state == "ended", 5)
        assert sub.end_reason and "restart is off" in sub.end_reason


def test_listen_gives_up_on_a_server_that_dies_as_soon_as_it_starts(tmp_path: Path, no_leaks: None) -> None:
    """#9.14: restarting for a subscription is bounded: a server that exits right after each start
    ends the subscription with a reason instead of being started again for ever."""
    doomed = tmp_path / "doomed"
    with lifecycle("--era", "modern", "--doomed-if", str(doomed), timeout=10) as client:
        sub = client.listen(tools_list_changed=True)
        doomed.touch()
        kill(server_pid(client))
        assert wait_for(lambda: sub.state == "ended", 30)
        assert sub.end_reason and "keeps exiting" in sub.end_reason, sub.end_reason


# -- issue 9.15: telling clients apart ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "args", "name"),
    [
        ("python3", ["demo_server.py"], "demo_server"),
        ("/usr/bin/python3.11", ["-u", "/srv/tools/demo_server.py", "stdio"], "demo_server"),
        ("python", ["-m", "mcp_server_time"], "mcp_server_time"),
        ("npx", ["-y", "@modelcontextprotocol/server-everything"], "server-everything"),
        ("npx", ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"], "server-everything"),
        ("node", ["/x/node_modules/@modelcontextprotocol/server-everything/dist/index.js"], "server-everything"),
        ("uvx", ["mcp-server-time"], "mcp-server-time"),
        ("uv", ["run", "weather.py"], "weather"),
        ("mcp-server-git", [], "mcp-server-git"),
        ("/opt/bin/my-server", ["--flag"], "my-server"),
        ("bash", ["-c", "sleep 1; exec x"], "bash"),
    ],
)
def test_default_names(command: str, args: list[str], name: str) -> None:
    """#9.15: the server's script or package, not the interpreter."""
    assert mcp_sync.Client.stdio(command, args).name == name


def test_name_repr_pid_transport_and_loggers(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """#9.15: every repr was `<mcp_sync.Client open legacy 2025-11-25>`, every Node server logged
    as mcp_sync.stderr.node."""
    caplog.set_level(logging.INFO, logger="mcp_sync.stderr")
    client = mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), stderr="log")  # the logger is opt-in (#9.13)
    assert client.name == "fault_server" and client.pid is None
    assert "fault_server.py" in repr(client) and "new" in repr(client)
    with client:
        assert client.pid is not None and client.pid == client.transport.pid  # type: ignore[attr-defined]
        assert not gone(client.pid)
        pid = client.pid
        text = repr(client)
        assert "'fault_server'" in text and "open modern 2026-07-28" in text and f"pid={client.pid}" in text
        client.call_tool("stderr_flood", {"lines": 3})
        assert wait_for(lambda: any(r.name == "mcp_sync.stderr.fault_server" for r in caplog.records), 5)
    assert client.pid is None and gone(pid) and f"pid={pid}" not in repr(client)  # no pid of a dead server
    named = mcp_sync.Client.stdio(PY, fault_args(), name="billing")
    assert named.name == "billing" and repr(named).startswith("<mcp_sync.Client 'billing' new")
    with pytest.raises(TypeError):
        mcp_sync.Client.stdio(PY, fault_args(), name="")


def test_http_name_is_the_host_and_repr_hides_secrets() -> None:
    """#9.15 (HTTP): the host names the client; the repr shows the URL without credentials or query."""
    client = mcp_sync.Client.http("http://user:s3cret@127.0.0.1:9/mcp?token=s3cret")
    assert client.name == "127.0.0.1:9"
    text = repr(client)
    assert "http://127.0.0.1:9/mcp" in text and "s3cret" not in text
    assert client.pid is None and client.transport is not None
