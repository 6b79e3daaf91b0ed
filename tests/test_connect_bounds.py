"""Connecting is bounded by the client's ``timeout`` (#18.9).

The era probe, the handshake and a restart share one deadline: a server that
never answers fails the connect after ``timeout``, not after ``probe_timeout``
plus ``timeout`` plus a restart (17 s for ``timeout=5`` before the fix).
"""

from __future__ import annotations

import time

import pytest

import mcp_sync

from conftest import PY

#: Reads nothing, answers nothing, exits after a minute (close() ends it long before).
MUTE = ["-c", "import time; time.sleep(60)"]


@pytest.mark.parametrize("mode", ["auto", "legacy", "modern"])
def test_connect_to_a_mute_server_ends_at_the_client_timeout(mode: str) -> None:
    client = mcp_sync.Client.stdio(PY, MUTE, timeout=2, probe_timeout=10, mode=mode)
    started = time.monotonic()
    try:
        with pytest.raises(mcp_sync.MCPError):
            client.connect()
        took = time.monotonic() - started
    finally:
        client.close()
    # 2 s of deadline plus 2.5 s of margin for a loaded machine; the old code took 12 s or more
    # (probe_timeout, then the handshake's own timeout).
    assert took < 4.5, took


def test_a_call_on_a_mute_server_ends_at_its_own_timeout() -> None:
    client = mcp_sync.Client.stdio(PY, MUTE, timeout=30)
    started = time.monotonic()
    try:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("echo", {"text": "x"}, timeout=1.5)
        assert time.monotonic() - started < 4.0
    finally:
        client.close()


def test_a_group_member_that_never_answers_holds_the_group_only_for_its_timeout() -> None:
    """Each member connects within its client's timeout; the others are served meanwhile."""
    from conftest import fault_args

    started = time.monotonic()
    servers = {"mute": {"command": PY, "args": MUTE}, "ok": {"command": PY, "args": fault_args()}}
    with mcp_sync.ClientGroup(servers, timeout=2) as group:
        took = time.monotonic() - started
        assert "mute" in group.errors and "ok" not in group.errors
        assert group.call_tool("echo", {"text": "x"}).text == "x"
    assert took < 4.5, took
