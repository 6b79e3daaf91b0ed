"""Helpers for the lifecycle tests (test_lifecycle_hardening.py, test_fork_gc.py)."""

from __future__ import annotations

import os
from typing import Any

from helpers import in_thread, wait_until

import mcp_sync

__all__ = ["gone", "in_thread", "server_pid", "transport_of", "wait_for"]


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


wait_for = wait_until  # the one wait helper lives in helpers.py (#22.10)
