"""Which open listen lets a modern client keep a list (#19.2, U2).

A modern server tells of a changed tools list only on a listen acknowledged for
``toolsListChanged``; while none is open the client must list again each time. A listen for
something else (prompts) is no such promise. Only a list without ``ttlMs`` is kept so
(``ttlMs: 0`` is immediately stale, #31.10): against the fault server (modern, stdio), whose lists
carry none, with its wire log; the SDK server's ``ttlMs: 0`` lists are listed every time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wirekit import Peer

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS

pytestmark = pytest.mark.timeout(60)

TAP = str(SERVERS / "wire_tap.py")


def tools_lists(log: Path) -> int:
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sum(1 for message in lines if message.get("method") == "tools/list")


def walk(client: mcp_sync.Client, times: int) -> None:
    for _ in range(times):
        assert "echo" in [tool.name for tool in client.tools()]


def test_only_a_listen_acknowledged_for_tools_keeps_the_tools_list(tmp_path: Path, no_leaks: None) -> None:
    """Without a listen every tools() lists again; with a tools listen open, the list (no ttlMs)
    is fetched once and kept; once that listen closes, listed again. (That a listen for something
    else keeps nothing is not shown here any more: the fault server offers no other listen, and
    the SDK server, which does, sends ttlMs 0, which nothing keeps.)"""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(timeout=30) as client:
        assert client.list_tools().ttl_ms is None
        lists = len(peer.requests("tools/list"))
        walk(client, 2)
        assert len(peer.requests("tools/list")) - lists == 2  # no listen: listed each time
        with client.listen(tools_list_changed=True) as tools:
            assert tools.acknowledged == {"toolsListChanged": True}
            walk(client, 3)
            assert len(peer.requests("tools/list")) - lists == 3  # listed once, then kept
        walk(client, 1)
        assert len(peer.requests("tools/list")) - lists == 4


def test_a_ttl_0_list_is_listed_again_under_a_tools_listen(tmp_path: Path, no_leaks: None) -> None:
    """The SDK server's lists say ``ttlMs: 0``: an open tools listen does not make them fresh."""
    log = tmp_path / "sent.jsonl"
    with mcp_sync.Client.stdio(PY, [TAP, str(log), PY, SDK_SERVER, "stdio"], mode="modern", timeout=30) as client:
        with client.listen(tools_list_changed=True) as tools:
            assert tools.acknowledged == {"toolsListChanged": True}
            walk(client, 3)
            assert tools_lists(log) == 3
