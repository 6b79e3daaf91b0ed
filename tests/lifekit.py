"""Helpers for the lifecycle tests (test_lifecycle_hardening.py, test_fork_gc.py)."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable

from helpers import in_thread, wait_until

import mcp_sync

__all__ = ["gone", "in_child", "in_thread", "server_pid", "transport_of", "wait_for"]


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


def in_child(work: Callable[[], dict[str, Any]], timeout: float = 30) -> dict[str, Any]:
    """Fork; run ``work`` in the child; return what it reported (or the exception it raised)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave without running the parent's cleanups
        os.close(read_end)
        try:
            report = work()
        except BaseException as exc:
            report = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write_end, json.dumps(report).encode())
        os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        waited = 0.0
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and waited < 10:
            time.sleep(0.05)
            waited += 0.05
    return json.loads(b"".join(chunks) or b'{"error": "no report"}')
