"""What the benchmarks' orchestrators share: each variant runs in a fresh worker process, and a
server that a run left behind is found by the tag in its environment and killed.

Standard library only: the orchestrator stays small, since its RSS can leak into its children's
``ru_maxrss``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional

#: Every process a run starts carries ``MCP_SYNC_BENCH_TAG=<a fresh id>`` in its environment.
TAG_VAR = "MCP_SYNC_BENCH_TAG"


def run_worker(script: str, variant: str, calls: int, *, timeout: float, cwd: Path) -> Optional[dict[str, Any]]:
    """Run ``script --worker variant --calls N`` and return the JSON line it prints last (None on failure)."""
    cmd = [sys.executable, script, "--worker", variant, "--calls", str(calls)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        print(f"  {variant}: timed out after {timeout:.0f} s", file=sys.stderr)
        sweep()
        return None
    if proc.returncode != 0 or not out.strip():
        print(f"  {variant}: worker failed (exit {proc.returncode}):\n{err[-2000:]}", file=sys.stderr)
        return None
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def tagged_pids(tag: str) -> list[int]:
    """Processes (ours: the tag is unique to this run) whose environment carries the tag."""
    needle = f"{TAG_VAR}={tag}".encode()
    pids = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    if needle in f.read().split(b"\0"):
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def sweep() -> int:
    """Kill any process still carrying this run's tag (a server left behind); return how many."""
    leftovers = tagged_pids(os.environ[TAG_VAR])
    for pid in leftovers:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return len(leftovers)
