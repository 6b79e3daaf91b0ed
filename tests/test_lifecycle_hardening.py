"""Connecting, closing and reconnecting: issue 8 point 3 and issue 9 points 2, 3, 7, 8, 12, 14, 15, 20.

Real servers where they can show it (the SDK server, server-everything); the
scripted tests/servers/lifecycle_server.py for what they will not do (stay
silent, start slowly, answer -32022 without revisions, linger at exit).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS, fault_args

pytestmark = pytest.mark.timeout(60)

LIFECYCLE = str(SERVERS / "lifecycle_server.py")


def lifecycle(*args: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [LIFECYCLE, *args], **options)


def gone(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def in_thread(function: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    """Run ``function`` on a thread; the dict gets "value" or "error", and "at" (when it ended)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = function()
        except BaseException as exc:
            box["error"] = exc
        box["at"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


# -- issue 8.3: the implicit connect keeps the caller's deadline; close() interrupts a connect ----------


def test_first_call_on_a_silent_server_keeps_its_own_timeout(no_leaks: None) -> None:
    """#8.3: call_tool(timeout=1) on a silent server raised after 70 s (probe 10 s + initialize 60 s)."""
    client = lifecycle("--silent")
    try:
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout) as caught:
            client.call_tool("echo", {"text": "x"}, timeout=1)
        assert time.monotonic() - started < 2.5
        assert "not connected within 1" in str(caught.value)
        token = mcp_sync.CancellationToken()
        threading.Timer(0.3, token.cancel, kwargs={"reason": "user pressed stop"}).start()
        started = time.monotonic()
        with pytest.raises(mcp_sync.Cancelled) as cancelled:
            client.call_tool("echo", {"text": "x"}, cancel=token)
        assert time.monotonic() - started < 1.5 and cancelled.value.reason == "user pressed stop"
    finally:
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 5


@pytest.mark.parametrize("timeout", [None, 60.0])
def test_close_interrupts_a_connect_in_progress(timeout: float | None, no_leaks: None) -> None:
    """#8.3: close() from another thread waited for the whole connect (for ever with timeout=None)."""
    client = lifecycle("--silent", timeout=timeout)
    thread, box = in_thread(client.connect)
    time.sleep(0.5)  # the probe is on the wire, unanswered
    pid = client.pid
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
        pid = client.pid
        started = time.monotonic()
        assert client.call_tool("echo", {"text": "b"}, timeout=10).text == "b"
        assert time.monotonic() - started < 5
        assert client.pid == pid  # the same connect (the same server process), not a new one
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
        assert client.call_tool("pid", timeout=5).text == str(client.pid)
    finally:
        client.close()
