"""Legacy resource subscriptions are counted per URI across subscriptions (LG9).

``resources/subscribe`` is session-wide on a legacy server, so two subscriptions wanting
one URI share one subscription on the wire: closing one never unsubscribes a URI the other
still wants; closing the last does. Checked on the wire (tests/servers/wire_tap.py records
what the client wrote) against server-everything, a real legacy server with
``resources.subscribe``; a refused subscribe is acted out by the fault server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from wirekit import Peer

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
