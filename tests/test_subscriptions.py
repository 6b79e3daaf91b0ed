"""listen(), subscriptions and server logging (checklist 1.7 U1-U8, LG8, LG9, W1).

Real peers first (the Python SDK server, server-everything), then the fault
server for what they won't do on demand. Each test names the items it covers.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until

import mcp_sync

from conftest import PY, SDK_SERVER, fault_args

pytestmark = pytest.mark.timeout(90)

LIST_CHANGED = "notifications/tools/list_changed"
SUB_ID = "io.modelcontextprotocol/subscriptionId"
ERAS = [pytest.param({}, id="modern"), pytest.param({"mode": "legacy"}, id="legacy")]


def wait_for(predicate: Any, timeout: float = 10.0) -> bool:
    return wait_until(predicate, timeout)


def fault(*extra: str, **options: Any) -> mcp_sync.Client:
    options.setdefault("timeout", 20)
    return mcp_sync.Client.stdio(PY, fault_args(*extra), **options)


def cancelled_ids(client: mcp_sync.Client) -> list:
    return json.loads(client.call_tool("cancelled_log").text)


# -- real peers ----------------------------------------------------------------------------


@pytest.mark.parametrize("options", ERAS)
def test_sdk_server_tools_list_changed(options: dict, no_leaks: None) -> None:
    """U1-U3 (modern: subscriptions/listen) / LG9 (legacy: the session's own stream):
    add_tool announces list_changed, the subscriber sees it, a re-list has the new tool."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30, **options) as client:
        with client.listen(tools_list_changed=True) as sub:
            assert sub.state == "live"
            if client.era == "modern":
                assert isinstance(sub.subscription_id, int)
                assert sub.acknowledged == {"toolsListChanged": True}  # U2
            assert client.call_tool("add_tool", {"name": "dyn"}).text == "added dyn"
            method, params = sub.get(timeout=20) or ("", {})
            assert method == LIST_CHANGED
            if client.era == "modern":
                assert params["_meta"][SUB_ID] == sub.subscription_id  # U3
            assert "dyn" in [tool.name for tool in client.tools()]
        assert sub.closed and sub.get(timeout=1) is None


@pytest.mark.parametrize("options", ERAS)
def test_sdk_server_over_http(options: dict, sdk_http_url: str, no_leaks: None) -> None:
    """The same over Streamable HTTP: modern, the listen is a POST whose SSE stream stays
    open; legacy, the session's stream (the SDK advertises listChanged false there but sends it)."""
    name = f"http_{'legacy' if options else 'modern'}"
    with mcp_sync.Client.http(sdk_http_url, timeout=30, **options) as client:
        with client.listen(tools_list_changed=True) as sub:
            client.call_tool("add_tool", {"name": name})
            assert (sub.get(timeout=20) or ("",))[0] == LIST_CHANGED
            assert name in [tool.name for tool in client.tools()]


def test_everything_resource_updated(everything_js: Path, no_leaks: None) -> None:
    """LG9: resources/subscribe + toggle-subscriber-updates -> notifications/resources/updated
    (server-everything sends one every ~5 s)."""
    uri = "demo://resource/dynamic/text/1"
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], timeout=30) as client:
        assert client.era == "legacy"
        with client.listen(resource_uris=[uri]) as sub:
            assert sub.acknowledged == {"resourceSubscriptions": [uri]}
            client.call_tool("toggle-subscriber-updates")
            event = sub.get(timeout=15)
            assert event == ("notifications/resources/updated", {"uri": uri})


def test_everything_logging(everything_js: Path, caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """LG8: logging/setLevel + toggle-simulated-logging -> records on mcp_sync.server.<name>."""
    caplog.set_level(logging.DEBUG, logger="mcp_sync.server")
    seen: list[str] = []
    with mcp_sync.Client.stdio(
        "node", [str(everything_js), "stdio"], timeout=30, on_notification=lambda m, p: seen.append(m)
    ) as client:
        name = client.name  # the client's name (server-everything), not the interpreter
        client.set_log_level("debug")
        client.call_tool("toggle-simulated-logging")
        logger = f"mcp_sync.server.{name}"

        def logged() -> bool:  # server-everything picks one of eight at random, every 5 s: one of
            # them reads "Alert level-message", the others "Notice-level message" and so on
            return any(r.name == logger and re.search("level[- ]message", r.getMessage()) for r in caplog.records)

        assert wait_for(logged, 15)
        assert "notifications/message" in seen  # and to on_notification too


@pytest.mark.parametrize(("options", "requests"), [({"mode": "legacy"}, 3), ({"mode": "modern"}, 2)])
def test_log_level_option(options: dict, requests: int, no_leaks: None) -> None:
    """LG8: log_level= on a legacy server sends logging/setLevel once the session is up
    (initialize, logging/setLevel, counter); W1: modern sends none, only the _meta key."""
    with fault(log_level="error", **options) as client:
        assert client.call_tool("counter").text == str(requests)
        # the envelope holds the level in both eras (a missing key fails: #22.2)
        assert client.meta()["io.modelcontextprotocol/logLevel"] == "error"


# -- fault server: modern -------------------------------------------------------------------


def test_listen_never_acknowledged_times_out_and_cancels(no_leaks: None) -> None:
    """U2: no acknowledgment within the timeout -> RequestTimeout, and the listen is
    cancelled on the wire (U5, K1)."""
    with fault("--era", "modern", "--behaviour", "no-listen-ack") as client:
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout):
            client.listen(tools_list_changed=True, timeout=0.5)
        assert time.monotonic() - started < 5
        assert wait_for(lambda: len(cancelled_ids(client)) == 1)


def test_close_cancels_on_the_wire_and_ends_iteration(no_leaks: None) -> None:
    """U5: close() sends notifications/cancelled for the listen id; iteration ends at once."""
    with fault("--era", "modern") as client:
        sub = client.listen(tools_list_changed=True)
        ended = threading.Event()

        def consume() -> None:
            for _ in sub:
                pass
            ended.set()

        threading.Thread(target=consume, daemon=True).start()
        time.sleep(0.1)
        sub.close()
        assert ended.wait(5)
        assert wait_for(lambda: sub.subscription_id in cancelled_ids(client))
        sub.close()  # idempotent


@pytest.mark.parametrize("how", ["result", "cancel"])
def test_server_ends_the_subscription(how: str, no_leaks: None) -> None:
    """U6: a final result, or notifications/cancelled naming the listen: the iteration
    ends after what came before it, and the client sends no cancellation back."""
    with fault("--era", "modern") as client:
        sub = client.listen(tools_list_changed=True)
        client.call_tool("notify_changed", {"kind": "tools"})
        assert client.call_tool("end_listens", {"how": how}).text == "1 listens"
        events = list(sub)  # ends by itself
        assert [m for m, _ in events] == [LIST_CHANGED]
        assert sub.state == "ended" and sub.end_reason
        assert cancelled_ids(client) == []
        sub.close()


def test_several_subscriptions_demultiplexed(no_leaks: None) -> None:
    """U4: concurrent listens, each gets its own stream; closing one leaves the other."""
    with fault("--era", "modern") as client:
        first = client.listen(tools_list_changed=True)
        second = client.listen(tools_list_changed=True)
        assert first.subscription_id != second.subscription_id
        assert client.call_tool("notify_changed", {"kind": "tools"}).text == "2 listens"
        assert first.get(timeout=10) == (LIST_CHANGED, {"_meta": {SUB_ID: first.subscription_id}})
        assert second.get(timeout=10) == (LIST_CHANGED, {"_meta": {SUB_ID: second.subscription_id}})
        first.close()
        assert wait_for(lambda: client.call_tool("notify_changed", {"kind": "tools"}).text == "1 listens")
        assert second.get(timeout=10) == (LIST_CHANGED, {"_meta": {SUB_ID: second.subscription_id}})
        assert first.get(timeout=1) is None
        second.close()


def test_only_what_capabilities_allow(no_leaks: None) -> None:
    """U1: flags the server's capabilities do not allow are not asked for; none left -> CapabilityError."""
    with fault("--era", "modern") as client:  # tools.listChanged only; no resources.subscribe
        with pytest.raises(mcp_sync.CapabilityError):
            client.listen(prompts_list_changed=True, resource_uris=["test://a"])
        with client.listen(tools_list_changed=True, prompts_list_changed=True) as sub:
            assert sub.requested == {"toolsListChanged": True}
        with pytest.raises(ValueError):
            client.listen()


@pytest.mark.parametrize("options", [pytest.param(("--era", "modern"), id="modern"), pytest.param((), id="legacy")])
def test_drop_mid_subscription_then_resubscribed(options: tuple, no_leaks: None) -> None:
    """U7/T6: the server dies: the iteration ends; the next request restarts it, the
    subscription is re-established by itself and says so with mcp_sync/resubscribed."""
    mode = {} if options else {"mode": "legacy"}
    with fault(*options, **mode) as client:
        sub = client.listen(tools_list_changed=True)
        with pytest.raises(mcp_sync.ConnectionClosed):
            client.call_tool("die")
        assert list(sub) == []  # the iteration ends within a moment of the drop
        assert sub.state == "suspended"
        assert client.call_tool("echo", {"text": "back"}).text == "back"  # restarts the server
        event = sub.get(timeout=15)
        assert event is not None and event[0] == "mcp_sync/resubscribed"
        assert event[1]["era"] == client.era and event[1]["notifications"] == {"toolsListChanged": True}
        assert sub.state == "live"
        if client.era == "modern":
            # a new connection numbers its requests afresh, so the id may equal the old one
            assert event[1]["subscriptionId"] == sub.subscription_id is not None
        client.call_tool("notify_changed", {"kind": "tools"})
        assert (sub.get(timeout=10) or ("",))[0] == LIST_CHANGED
        sub.close()


def test_callback_calling_the_client_does_not_deadlock(no_leaks: None) -> None:
    """A subscription callback (dispatch thread) may call the client, listen() and close() included."""
    with fault("--era", "modern") as client:
        results: list[Any] = []
        done = threading.Event()

        def callback(method: str, params: dict) -> None:
            results.append([tool.name for tool in client.tools()])
            inner = client.listen(tools_list_changed=True)  # waits for an ack from the dispatch thread
            results.append(inner.state)
            inner.close()
            sub.close()  # closing itself from its own callback
            done.set()

        sub = client.listen(tools_list_changed=True, on_notification=callback)
        client.call_tool("notify_changed", {"kind": "tools"})
        assert done.wait(20), results
        assert results[0][:2] == ["echo", "slow"] and results[1] == "live"
        assert sub.closed


def test_client_close_ends_subscriptions(no_leaks: None) -> None:
    client = fault("--era", "modern")
    sub = client.listen(tools_list_changed=True)
    client.close()
    assert sub.closed and sub.get(timeout=1) is None


# -- fault server: legacy ---------------------------------------------------------------------


def test_legacy_filters_by_what_was_asked(no_leaks: None) -> None:
    """LG9: a legacy subscription delivers only the notification types it asked for, and the
    client-wide on_notification still sees everything."""
    seen: list[str] = []
    with fault(mode="legacy", on_notification=lambda m, p: seen.append(m)) as client:
        with client.listen(tools_list_changed=True) as sub:
            assert sub.acknowledged == {"toolsListChanged": True}
            client.call_tool("notify_changed", {"kind": "prompts"})
            client.call_tool("notify_changed", {"kind": "tools"})
            assert sub.get(timeout=10) == (LIST_CHANGED, {})
            assert wait_for(lambda: "notifications/prompts/list_changed" in seen)
            with pytest.raises(TimeoutError):
                sub.get(timeout=0.3)


def test_legacy_http_session_renewal_resubscribes(no_leaks: None) -> None:
    """LG3 + LG9: when the transport replaces an expired session, the resource subscriptions
    (and the log level) are asked for again on the new session, and the subscriber is told."""
    from httpkit import LEGACY, FakeServer, Reply, Request, json_reply, result

    sessions_made = [0]

    def override(request: Request) -> Reply | None:
        method = request.rpc_method
        if method == "initialize":
            sessions_made[0] += 1
            session = f"s{sessions_made[0]}"
            fake.sessions.add(session)
            caps = {"tools": {}, "resources": {"subscribe": True}, "logging": {}}
            init = {"protocolVersion": LEGACY, "capabilities": caps, "serverInfo": {"name": "fake", "version": "1"}}
            return json_reply(result(request, init), **{"Mcp-Session-Id": session})
        if method in ("resources/subscribe", "ping", "logging/setLevel") and (
            request.headers.get("mcp-session-id") in fake.sessions
        ):
            return json_reply(result(request, {}))
        return None

    with FakeServer("legacy") as fake:
        fake.override = override
        with mcp_sync.Client.http(fake.url, mode="legacy", log_level="info") as client:
            sub = client.listen(resource_uris=["file:///x"])
            assert len(fake.seen("resources/subscribe")) == 1
            fake.sessions.clear()  # the server forgets every session
            assert [t.name for t in client.tools()] == ["echo"]  # renewed transparently (LG3)
            method, params = sub.get(timeout=5) or ("", {})
            assert method == "mcp_sync/resubscribed" and params["era"] == "legacy"
            subscribes = fake.seen("resources/subscribe")
            assert len(subscribes) == 2
            assert subscribes[0].headers["mcp-session-id"] != subscribes[1].headers["mcp-session-id"]
            deadline = time.monotonic() + 5
            while len(fake.seen("logging/setLevel")) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(fake.seen("logging/setLevel")) == 2
            sub.close()
