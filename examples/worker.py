"""Worker processes with one MCP client each: ``mcp_sync.shared`` in a process pool.

Run: python examples/worker.py

Each worker process gets its own client, made the first time a job in that
process asks for it and reused by every later job there (and by every thread
of the process); it is closed when the worker exits. The same works in
Celery, RQ or gunicorn workers: call ``mcp_sync.shared(...)`` where the job
runs, never create the client at import time in the parent. A ``Client``
can also travel to a worker as an argument: it pickles as what it connects
to and with which options; in each worker process every task's copy uses that
process's one client for it (one server per worker, not per task), which
connects on first use there.
"""

import concurrent.futures
import os
import sys
from pathlib import Path

import mcp_sync

SERVER = str(Path(__file__).with_name("demo_server.py"))


def job(text: str) -> tuple[int, str]:
    client = mcp_sync.shared([sys.executable, SERVER], timeout=10)  # this process's client
    return os.getpid(), client.call_tool("echo", {"text": text}).text


def with_client(client: mcp_sync.Client, a: int, b: int) -> str:
    return client.call_tool("add", {"a": a, "b": b}).text  # connects here, in the worker


def main() -> None:
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(job, ["one", "two", "three", "four"]))
        client = mcp_sync.Client.stdio(sys.executable, [SERVER], timeout=10)  # not connected here
        total = pool.submit(with_client, client, 2, 3).result()
    print("echoed:", ", ".join(text for _, text in answers))
    print("worker processes:", len({pid for pid, _ in answers}) <= 2)
    print("2 + 3 =", total)


if __name__ == "__main__":
    main()
