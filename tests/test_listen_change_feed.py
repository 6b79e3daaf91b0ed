"""Which open listen lets a modern client keep a list (#19.2, U2).

A modern server tells of a changed tools list only on a listen acknowledged for
``toolsListChanged``; while none is open the client must list again each time. A listen for
something else (resource updates) is no such promise. Against the SDK server (modern, stdio),
with tests/servers/wire_tap.py recording what the client wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    """With only a resources listen open, every tools() lists again; with a tools listen open
    beside it, the list is fetched once and kept; once that listen closes, listed again."""
    log = tmp_path / "sent.jsonl"
    with mcp_sync.Client.stdio(PY, [TAP, str(log), PY, SDK_SERVER, "stdio"], mode="modern", timeout=30) as client:
        with client.listen(resource_uris=["test://static"]) as resources:
            assert resources.acknowledged == {"resourceSubscriptions": ["test://static"]}
            walk(client, 2)
            assert tools_lists(log) == 2  # a listen for resource updates says nothing about tools
            with client.listen(tools_list_changed=True) as tools:
                assert tools.acknowledged == {"toolsListChanged": True}
                walk(client, 3)
                assert tools_lists(log) == 3  # listed once, then kept
            walk(client, 1)
            assert tools_lists(log) == 4
