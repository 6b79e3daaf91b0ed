"""Helpers for the lifecycle tests (test_lifecycle_hardening.py, test_fork_gc.py)."""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

import mcp_sync


def server_pid(client: mcp_sync.Client) -> int | None:
    """The stdio server's pid. Through the engine where ``client.pid`` is missing, so that the
    tests also run (and fail) on the code from before the fix."""
    if hasattr(client, "pid"):
        return client.pid
    engine = client._engine
    return getattr(engine.transport, "pid", None) if engine is not None else None


def transport_of(client: mcp_sync.Client) -> Any:
    """``client.transport`` (through the engine on the code from before the fix)."""
    return client.transport if hasattr(client, "transport") else client._engine.transport  # type: ignore[union-attr]


def gone(pid: int | None) -> bool:
    """True when no process ``pid`` exists (the transports reap their children)."""
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
