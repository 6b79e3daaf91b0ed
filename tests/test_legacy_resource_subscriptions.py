"""Legacy resource subscriptions are counted per URI across subscriptions (LG9).

``resources/subscribe`` is session-wide on a legacy server, so two subscriptions wanting
one URI share one subscription on the wire: closing one never unsubscribes a URI the other
still wants; closing the last does. Checked on the wire (tests/servers/wire_tap.py records
what the client wrote) against server-everything, a real legacy server with
``resources.subscribe``; a refused subscribe is acted out by the fault server.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import in_thread
from wirekit import FakeTransport, Peer

import mcp_sync

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

TAP = str(SERVERS / "wire_tap.py")
FIRST, SECOND = "demo://resource/dynamic/text/1", "demo://resource/dynamic/text/2"
LEGACY_INIT = {"protocolVersion": "2025-11-25", "capabilities": {"resources": {"subscribe": True}},
               "serverInfo": {"name": "fault-server", "version": "1.0"}}


def written(log: Path, *methods: str) -> list[tuple[str, Any]]:
    """(method, uri) of each request the client wrote whose method is one of ``methods``."""
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(m["method"], (m.get("params") or {}).get("uri")) for m in lines if m.get("method") in methods]


def test_a_uri_two_subscriptions_want_is_subscribed_once_and_released_by_the_last(
    everything_js: Path, tmp_path: Path, no_leaks: None
) -> None:
    """LG9 on server-everything: `first` wants FIRST, `second` wants FIRST and SECOND. FIRST is
    subscribed once; closing `first` unsubscribes nothing; closing `second` unsubscribes both."""
    log = tmp_path / "sent.jsonl"
    with mcp_sync.Client.stdio(PY, [TAP, str(log), "node", str(everything_js), "stdio"],
                               timeout=30) as client:
        assert client.era == "legacy"
        first = client.listen(resource_uris=[FIRST])
        second = client.listen(resource_uris=[FIRST, SECOND])
        assert second.acknowledged == {"resourceSubscriptions": [FIRST, SECOND]}
        assert written(log, "resources/subscribe") == [("resources/subscribe", FIRST), ("resources/subscribe", SECOND)]
        first.close()  # unsubscribing is a request: had it been sent, it would be in the log now
        assert written(log, "resources/unsubscribe") == []
        second.close()
        assert sorted(written(log, "resources/unsubscribe")) == [
            ("resources/unsubscribe", FIRST), ("resources/unsubscribe", SECOND)]
        again = client.listen(resource_uris=[FIRST])  # nobody held it: subscribed on the wire again
        assert written(log, "resources/subscribe")[-1] == ("resources/subscribe", FIRST)
        again.close()


def test_a_refused_subscribe_leaves_no_count_behind(tmp_path: Path, no_leaks: None) -> None:
    """LG9: the server refuses the first of two URIs: listen() raises its error, the second URI
    is not subscribed, and nothing stays counted: asking again asks the server again."""
    refused = {"error": {"code": -32002, "message": "Resource not found", "data": {"uri": "test://gone"}}}
    script = {"initialize": [{"result": LEGACY_INIT}], "resources/subscribe test://gone": [refused],
              "resources/subscribe test://a": [{"result": {}}]}
    peer = Peer(tmp_path, script, "--era", "legacy")
    with peer.client(mode="legacy", timeout=10) as client:
        for _ in range(2):
            with pytest.raises(mcp_sync.ServerError, match="Resource not found"):
                client.listen(resource_uris=["test://gone", "test://a"])
        subscribes = [m["params"]["uri"] for m in peer.requests("resources/subscribe")]
        assert subscribes == ["test://gone", "test://gone"]
        with client.listen(resource_uris=["test://a"]) as sub:
            assert sub.state == "live"
        assert [m["params"]["uri"] for m in peer.requests("resources/subscribe")][-1] == "test://a"


def test_a_refused_subscribe_is_not_unsubscribed(tmp_path: Path, no_leaks: None) -> None:
    """LG9: the server takes the first URI and refuses the second: listen() raises, the first is
    unsubscribed (nobody else holds it) and the refused one is not (the server never took it)."""
    refused = {"error": {"code": -32002, "message": "Resource not found", "data": {"uri": "test://gone"}}}
    script = {"initialize": [{"result": LEGACY_INIT}], "resources/subscribe test://gone": [refused],
              "resources/subscribe test://a": [{"result": {}}], "resources/unsubscribe test://a": [{"result": {}}]}
    peer = Peer(tmp_path, script, "--era", "legacy")
    with peer.client(mode="legacy", timeout=10) as client:
        with pytest.raises(mcp_sync.ServerError, match="Resource not found"):
            client.listen(resource_uris=["test://a", "test://gone"])
        assert [m["params"]["uri"] for m in peer.requests("resources/subscribe")] == ["test://a", "test://gone"]
        assert [m["params"]["uri"] for m in peer.requests("resources/unsubscribe")] == ["test://a"]


class _GatedServer:
    """A legacy server over FakeTransport whose subscribe/unsubscribe answers (those of ``gated``
    (method, uri) pairs only, when given) wait for a gate; ``answered`` lists them in the order the
    server answered them."""

    def __init__(self, refuse: set[str], gated: set[tuple[str, str]] | None = None) -> None:
        self.refuse, self.gated = refuse, gated
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.answered: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, method: str, params: dict) -> dict:
        if method == "initialize":
            return LEGACY_INIT
        if method not in ("resources/subscribe", "resources/unsubscribe"):
            return {}
        if self.gated is None or (method, params["uri"]) in self.gated:
            self.entered.set()
            assert self.gate.wait(10), "the test never opened the gate"
        with self.lock:
            self.answered.append((method, params["uri"]))
        if method == "resources/subscribe" and params["uri"] in self.refuse:
            return {"error": {"code": -32002, "message": "Resource not found"}}
        return {}


def test_a_second_holder_waits_for_the_first_subscribe_and_is_refused_too(no_leaks: None) -> None:
    """LG9, a race: while the first listen's resources/subscribe is unanswered, a second listen of
    the same URI waits for that answer instead of counting on it; the server refuses it, so the
    second asks the server itself (and is refused too) instead of going live on a URI the server
    never subscribed."""
    server = _GatedServer(refuse={"test://gone"})
    transport = FakeTransport(server)
    with mcp_sync.Client(transport, mode="legacy", timeout=10) as client:
        first, first_outcome = in_thread(lambda: client.listen(resource_uris=["test://gone"]))
        assert server.entered.wait(10)
        second, second_outcome = in_thread(lambda: client.listen(resource_uris=["test://gone"]))
        time.sleep(0.3)  # the second listen is under way while the first subscribe is unanswered
        server.gate.set()
        first.join(10)
        second.join(10)
        assert not first.is_alive() and not second.is_alive()
        for outcome in (first_outcome, second_outcome):
            assert "value" not in outcome and isinstance(outcome.get("error"), mcp_sync.ServerError), outcome
        assert server.answered == [("resources/subscribe", "test://gone")] * 2
        assert transport.count("resources/unsubscribe") == 0


def test_an_unsubscribe_in_flight_is_answered_before_the_uri_is_subscribed_again(no_leaks: None) -> None:
    """LG9, a race: closing the last holder of a URI sends resources/unsubscribe; a listen of the
    same URI made while that is unanswered subscribes it only after the answer, so the server ends
    with the URI subscribed (the other order would leave it unsubscribed under a live listen)."""
    server = _GatedServer(refuse=set())
    server.gate.set()
    transport = FakeTransport(server)
    with mcp_sync.Client(transport, mode="legacy", timeout=10) as client:
        held = client.listen(resource_uris=["test://a"])
        server.gate.clear()
        server.entered.clear()
        closing, _ = in_thread(held.close)
        assert server.entered.wait(10)
        again, outcome = in_thread(lambda: client.listen(resource_uris=["test://a"]))
        time.sleep(0.3)  # the new listen is under way while the unsubscribe is unanswered
        server.gate.set()
        closing.join(10)
        again.join(10)
        assert not closing.is_alive() and not again.is_alive()
        assert "error" not in outcome and "value" in outcome, outcome
        assert server.answered == [
            ("resources/subscribe", "test://a"), ("resources/unsubscribe", "test://a"), ("resources/subscribe", "test://a")]
        outcome["value"].close()


def test_closing_while_subscribing_releases_only_what_was_held(no_leaks: None) -> None:
    """LG9, a race: a listen closed from another thread while it subscribes its first URI never
    releases the URIs after it, so another listen's hold of one of them stays on the wire."""
    server = _GatedServer(refuse=set(), gated={("resources/subscribe", "test://a")})
    transport = FakeTransport(server)
    with mcp_sync.Client(transport, mode="legacy", timeout=10) as client:
        keeper = client.listen(resource_uris=["test://b"])
        starting, outcome = in_thread(lambda: client.listen(resource_uris=["test://a", "test://b"]))
        assert server.entered.wait(10)  # the new listen's subscribe of test://a is unanswered
        registry = client._session.subscriptions  # the Subscription being started, before listen returns it
        subs = [sub for sub in registry._live() if sub is not keeper]
        assert len(subs) == 1
        subs[0].close()
        server.gate.set()
        starting.join(10)
        assert not starting.is_alive()
        # closed while starting: listen() raised
        assert "value" not in outcome and isinstance(outcome.get("error"), mcp_sync.MCPError), outcome
        unsubscribed = [uri for method, uri in server.answered if method == "resources/unsubscribe"]
        assert "test://b" not in unsubscribed  # keeper still holds it
        keeper.close()
        assert [uri for method, uri in server.answered if method == "resources/unsubscribe"][-1] == "test://b"


def test_waiting_for_another_holders_request_is_bounded_by_the_timeout(no_leaks: None) -> None:
    """Every wait has a bound: a listen whose URI's earlier request never ends raises
    RequestTimeout after the client's timeout; a close() in the same spot still counts the URI
    down and unsubscribes it, unordered."""
    server = _GatedServer(refuse=set())
    server.gate.set()
    transport = FakeTransport(server)
    with mcp_sync.Client(transport, mode="legacy", timeout=0.5) as client:
        registry = client._session.subscriptions  # the URI's lock, held here as a request in flight would
        engine = client._session.connection.res.engine
        lock = registry._uri_lock(engine, "test://x")
        assert lock.acquire(timeout=1)
        try:
            started = time.monotonic()
            with pytest.raises(mcp_sync.RequestTimeout, match="another subscription's request for it"):
                client.listen(resource_uris=["test://x"])
            assert 0.4 < time.monotonic() - started < 5
            assert transport.count("resources/subscribe") == 0
        finally:
            lock.release()
        held = client.listen(resource_uris=["test://x"])
        assert lock.acquire(timeout=1)
        try:
            held.close()
        finally:
            lock.release()
        assert server.answered[-1] == ("resources/unsubscribe", "test://x")
        again = client.listen(resource_uris=["test://x"])  # nothing counted: subscribed anew
        assert server.answered[-1] == ("resources/subscribe", "test://x")
        again.close()


def test_after_a_restart_each_uri_is_held_as_often_as_it_is_wanted(tmp_path: Path, no_leaks: None) -> None:
    """LG9 with U7: the server dies and the client restarts it; both listens subscribe again on the
    new session; closing the one that shares a URI with the other unsubscribes nothing (what the
    dead session held is not counted on the new one), closing the other unsubscribes both."""
    init = {**LEGACY_INIT, "capabilities": {"tools": {}, "resources": {"subscribe": True}}}
    script = {"initialize": [{"result": init}], "resources/subscribe": [{"result": {}}],
              "resources/unsubscribe": [{"result": {}}]}
    peer = Peer(tmp_path, script, "--era", "legacy")
    with peer.client(mode="legacy", timeout=10) as client:
        first = client.listen(resource_uris=["test://a"])
        second = client.listen(resource_uris=["test://a", "test://b"])
        with pytest.raises(mcp_sync.ConnectionClosed):
            client.call_tool("die")
        assert list(first) == [] and list(second) == []  # each iteration ends with the drop
        assert client.call_tool("echo", {"text": "back"}).text == "back"  # restarts the server
        for sub in (first, second):
            event = sub.get(timeout=15)
            assert event is not None and event[0] == "mcp_sync/resubscribed", event
        assert [m["params"]["uri"] for m in peer.requests("resources/subscribe")] == ["test://a", "test://b"] * 2
        first.close()
        assert peer.requests("resources/unsubscribe") == []
        second.close()
        assert sorted(m["params"]["uri"] for m in peer.requests("resources/unsubscribe")) == ["test://a", "test://b"]
