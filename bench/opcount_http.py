"""Python bytecodes executed per sequential HTTP ``call_tool("echo")``, in both eras.

The HTTP counterpart of ``opcount.py``: one client against the SDK server
(tests/servers/sdk_server.py over Streamable HTTP), every thread traced with opcode events,
a run of 20 calls and one of 120; the difference divided by 100 is the per-call count, set-up
excluded. It counts everything in Python (mcp_sync, requests, urllib3, http.client), not C
code. Repeatable to a few bytecodes, unlike time on a shared machine: use it to show that a
change to the HTTP request path costs nothing.

Run (from the repository root; about half a minute)::

    python bench/opcount_http.py
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, Callable, Optional

import mcp_sync

SDK_SERVER = Path(__file__).resolve().parent.parent / "tests" / "servers" / "sdk_server.py"
sys.path.insert(0, str(SDK_SERVER.parent))
import listening  # noqa: E402  (starts a server on port 0 and reads the port it got)

Tracer = Callable[[FrameType, str, Any], Optional["Tracer"]]
_count = [0]


def _tracer(frame: FrameType, event: str, arg: Any) -> Tracer:
    frame.f_trace_opcodes = True
    if event == "opcode":
        _count[0] += 1
    return _tracer


def bytecodes(url: str, mode: str, calls: int) -> int:
    """Bytecodes executed by ``calls`` sequential tool calls (all threads), after one untraced call."""
    with mcp_sync.Client.http(url, mode=mode, timeout=30) as client:
        client.call_tool("echo", {"text": "x"})
        _count[0] = 0
        threading.settrace(_tracer)
        sys.settrace(_tracer)
        try:
            for _ in range(calls):
                client.call_tool("echo", {"text": "x"})
        finally:
            sys.settrace(None)
            threading.settrace(None)  # type: ignore[arg-type]
        return _count[0]


def main() -> None:
    started = listening.start([sys.executable, str(SDK_SERVER), "http"])
    server, port = started.proc, started.port
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        print(f"mcp_sync from {Path(mcp_sync.__file__).parent}")
        print("| bytecodes per HTTP call | modern | legacy |\n|---|---:|---:|")
        counts = [(bytecodes(url, mode, 120) - bytecodes(url, mode, 20)) // 100 for mode in ("modern", "legacy")]
        print(f"| call_tool(\"echo\") | {counts[0]:,} | {counts[1]:,} |")
    finally:
        listening.stop(server)


if __name__ == "__main__":
    main()
