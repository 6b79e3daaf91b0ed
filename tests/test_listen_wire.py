"""subscriptions/listen as the server's answers shape it (checklist U1-U8, T6, LG9).

The fault server (``wirekit.Peer``: ``--script`` answers written verbatim, ``--log`` what
the client wrote) acts out what real servers do only now and then: a partial
acknowledgment, request-scoped notifications on a listen's stream, a refused listen, a
server that refuses to take the subscription back after a restart, or cannot be started
again. The script file is read by each server process when it starts, so rewriting it
between a server's death and its restart changes how the new process answers.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until
from wirekit import DISCOVER, Peer

import mcp_sync

from conftest import PY, fault_args

pytestmark = pytest.mark.timeout(60)

SUB_ID = "io.modelcontextprotocol/subscriptionId"
LIST_CHANGED = "notifications/tools/list_changed"


def on_stream(method: str, subscription: Any = "$request_id", **params: Any) -> dict[str, Any]:
    """A notification carrying the listen's subscriptionId (the request id, by default)."""
    return {"jsonrpc": "2.0", "method": method, "params": {**params, "_meta": {SUB_ID: subscription}}}


def rescript(peer: Peer, script: dict[str, Any]) -> None:
    """What the next server process started from ``peer`` answers."""
    Path(peer.args[peer.args.index("--script") + 1]).write_text(json.dumps(script), encoding="utf-8")


def kill(client: mcp_sync.Client) -> None:
    assert client.pid is not None
    os.kill(client.pid, signal.SIGKILL)


def test_what_a_listen_stream_delivers(tmp_path: Path, caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """U2: the server acknowledges only part of the filter: ``acknowledged`` says which part, and
    the client logs what will not come. U8: request-scoped notifications on the listen's stream
    (a log message, progress) are not the subscription's; a notification type of an extension
    on its own stream is; an acknowledgment naming another listen is ignored."""
    stream = [
        on_stream("notifications/subscriptions/acknowledged", notifications={"toolsListChanged": True}),
        on_stream("notifications/subscriptions/acknowledged", subscription=999, notifications={}),
        on_stream("notifications/message", level="warning", data="scoped to a request"),
        on_stream("notifications/progress", progressToken="nobody", progress=1),
        on_stream("notifications/example.com/thing", state="ready"),
        on_stream(LIST_CHANGED),
    ]
    peer = Peer(tmp_path, {"server/discover": [{"result": DISCOVER}], "subscriptions/listen": [{"send": stream}]})
    caplog.set_level(logging.INFO, logger="mcp_sync")
    with peer.client(timeout=10) as client:
        with client.listen(tools_list_changed=True, resource_uris=["test://a"]) as sub:
            assert sub.requested == {"toolsListChanged": True, "resourceSubscriptions": ["test://a"]}
            assert sub.acknowledged == {"toolsListChanged": True}
            assert f"live id={sub.subscription_id!r}" in repr(sub)
            events = [sub.get(timeout=10), sub.get(timeout=10)]
            assert events == [
                ("notifications/example.com/thing", {"state": "ready", "_meta": {SUB_ID: sub.subscription_id}}),
                (LIST_CHANGED, {"_meta": {SUB_ID: sub.subscription_id}}),
            ]  # the message and the progress came before these and were not delivered
            assert sub.wants("notifications/example.com/thing", {})
            assert not sub.wants("notifications/progress", {})
    assert "did not acknowledge ['resourceSubscriptions']" in caplog.text


def test_a_refused_listen_raises_the_servers_error(tmp_path: Path, no_leaks: None) -> None:
    """U2: a listen answered with an error before any acknowledgment: listen() raises that
    error at once (not a timeout), and no listen thread is left behind (``no_leaks``)."""
    refused = {"error": {"code": -32603, "message": "no listening today"}}
    peer = Peer(tmp_path, {"subscriptions/listen": [refused]}, "--era", "modern")
    with peer.client(timeout=10) as client:
        with pytest.raises(mcp_sync.ServerError, match="no listening today") as caught:
            client.listen(tools_list_changed=True, timeout=30)
        assert caught.value.code == -32603
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"


def test_a_listen_refused_after_a_restart_ends_the_subscription(tmp_path: Path, no_leaks: None) -> None:
    """U7/T6: the server died and was started again for the subscription, but the new process
    refuses the listen: the subscription ends with that reason instead of waiting for ever."""
    peer = Peer(tmp_path, {}, "--era", "modern")
    with peer.client(timeout=10) as client:
        sub = client.listen(tools_list_changed=True)
        rescript(peer, {"subscriptions/listen": [{"error": {"code": -32603, "message": "not after a restart"}}]})
        kill(client)
        assert list(sub) == []  # the iteration ends with the drop
        assert wait_until(lambda: sub.state == "ended", 15), sub.state
        assert sub.end_reason is not None and "re-establishing failed" in sub.end_reason
        assert "not after a restart" in sub.end_reason
        assert sub.get(timeout=5) is None
        assert client.call_tool("echo", {"text": "up"}).text == "up"  # the new server is there


def test_a_legacy_subscription_refused_after_a_restart_ends(tmp_path: Path, no_leaks: None) -> None:
    """LG9/T6: the same on a legacy server: the new session fails the confirming ping, so the
    subscription ends and says why."""
    peer = Peer(tmp_path, {}, "--era", "legacy")
    with peer.client(mode="legacy", timeout=10) as client:
        sub = client.listen(tools_list_changed=True)
        rescript(peer, {"ping": [{"error": {"code": -32603, "message": "no pings here"}}]})
        kill(client)
        assert list(sub) == []
        assert wait_until(lambda: sub.state == "ended", 15), sub.state
        assert sub.end_reason is not None and "re-establishing failed" in sub.end_reason
        assert "no pings here" in sub.end_reason


def test_a_server_that_cannot_be_started_again_ends_the_waiting_subscriptions(
    tmp_path: Path, no_leaks: None
) -> None:
    """U7: the server died and starting it again for its subscriptions fails (here it exits at
    once): every waiting subscription ends, saying that the restart failed."""
    broken = tmp_path / "broken"
    command = f'[ -e "{broken}" ] && exit 4; exec "{PY}" "$@"'
    client = mcp_sync.Client.stdio("bash", ["-c", command, "fault", *fault_args("--era", "modern")], timeout=10)
    with client:
        first = client.listen(tools_list_changed=True)
        second = client.listen(tools_list_changed=True)
        broken.touch()
        kill(client)
        for sub in (first, second):
            assert wait_until(lambda sub=sub: sub.state == "ended", 15), sub.state
            assert sub.end_reason is not None and "starting the server again failed" in sub.end_reason


def test_a_subscription_closed_while_it_is_re_established_stays_closed(tmp_path: Path, no_leaks: None) -> None:
    """T6, legacy: the server came back (slow now: every answer 1 s late) and is confirming the
    first subscription again when the application closes both subscriptions: neither comes back
    to life, neither announces mcp_sync/resubscribed, and the second is not subscribed again."""
    peer, slow = Peer(tmp_path, None, "--era", "legacy"), tmp_path / "slow"
    command = 'if [ -e "$0" ]; then exec "$@" --behaviour slow-all --delay 1; else exec "$@"; fi'
    with mcp_sync.Client.stdio("bash", ["-c", command, str(slow), PY, *peer.args], mode="legacy", timeout=20) as client:
        first = client.listen(tools_list_changed=True)
        second = client.listen(tools_list_changed=True)
        assert len(peer.requests("ping")) == 2
        slow.touch()
        kill(client)
        assert wait_until(lambda: len(peer.requests("ping")) == 3, 15)  # the new server confirms `first`
        first.close()
        second.close()
        assert wait_until(lambda: not [t for t in threading.enumerate() if "resubscribe" in t.name], 10)
        assert first.state == second.state == "closed"
        assert first.get(timeout=1) is None and second.get(timeout=1) is None
        assert len(peer.requests("ping")) == 3


def test_a_reconnect_while_the_dispatch_thread_is_busy_still_ends_the_old_iteration(no_leaks: None) -> None:
    """U7: reconnect() while a subscription callback is still running (the loss is not handled
    yet): the old iteration ends before the new one starts with mcp_sync/resubscribed, and the
    late news of the old connection's loss does not suspend the new listen."""
    release = threading.Event()
    entered = threading.Event()

    def slow_callback(method: str, params: dict) -> None:
        if method == LIST_CHANGED:
            entered.set()
            release.wait(20)

    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=10) as client:
        sub = client.listen(tools_list_changed=True, on_notification=slow_callback)
        client.call_tool("notify_changed", {"kind": "tools"})
        assert entered.wait(10)  # the dispatch thread is now held by the callback
        client.reconnect()
        assert [method for method, _ in sub] == [LIST_CHANGED]  # ends although the loss is not handled yet
        release.set()
        event = sub.get(timeout=10)
        assert event is not None and event[0] == "mcp_sync/resubscribed"
        assert client.call_tool("notify_changed", {"kind": "tools"}).text == "1 listens"
        assert (sub.get(timeout=10) or ("",))[0] == LIST_CHANGED
        assert sub.state == "live"
        sub.close()


def test_nothing_reaches_a_subscription_after_close_not_even_what_was_queued(no_leaks: None) -> None:
    """Two list_changed notifications arrive; the first one's callback holds the dispatch thread
    while the application closes the subscription: the second, already queued, is not delivered
    (neither to the callback nor to the iteration)."""
    release, entered = threading.Event(), threading.Event()
    seen: list[str] = []

    def callback(method: str, params: dict) -> None:
        seen.append(method)
        entered.set()
        release.wait(20)

    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=10) as client:
        sub = client.listen(tools_list_changed=True, on_notification=callback)
        client.call_tool("notify_changed", {"kind": "tools"})
        assert entered.wait(10)
        client.call_tool("notify_changed", {"kind": "tools"})  # its notification comes before this answer
        sub.close()
        release.set()
        assert sub.get(timeout=5) is None
        assert client.call_tool("echo", {"text": "sync"}).text == "sync"
        flushed = threading.Event()
        dispatcher = client._session.connection.dispatcher
        assert dispatcher is not None and dispatcher.submit(flushed.set)  # after the queued delivery
        assert flushed.wait(10)
        assert seen == [LIST_CHANGED]
