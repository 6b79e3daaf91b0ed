"""Many threads, one client: concurrent calls, and a cancel from another thread.

Run: python examples/threads.py
"""

import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import mcp_sync

SERVER = str(Path(__file__).with_name("demo_server.py"))

with mcp_sync.Client.stdio(sys.executable, [SERVER]) as client:
    # 8 worker threads share the client; each answer comes back to the thread that asked.
    with ThreadPoolExecutor(max_workers=8) as pool:
        sums = list(pool.map(lambda i: client.call_tool("add", {"a": i, "b": i}).structured_content["sum"], range(100)))
    print("100 concurrent calls, first sums:", sums[:5])

    # Cancel a long call from a timer thread: the call raises Cancelled at once.
    token = mcp_sync.CancellationToken()
    threading.Timer(0.25, token.cancel, kwargs={"reason": "took too long"}).start()
    try:
        client.call_tool("countdown", {"n": 50}, cancel=token)
    except mcp_sync.Cancelled as exc:
        print("cancelled:", exc.reason)

    # A timeout is a cancellation too; the client keeps serving afterwards.
    try:
        client.call_tool("countdown", {"n": 50}, timeout=0.2)
    except mcp_sync.RequestTimeout:
        print("timed out; still alive:", client.call_tool("echo", {"text": "yes"}).text)
