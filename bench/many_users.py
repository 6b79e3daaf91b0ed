"""Many users through one client: a web app's views on a legacy server beside a modern one (issue 29.3).

The newcomer's shape: one ``mcp_sync.Client.http(url)`` made at start-up, and per request a view
with that user's token, ``client.bind(headers={"Authorization": f"Bearer user-{i}"})``, calling
``whoami`` (which answers with the credential that reached the server, so every answer is checked:
a user must only ever see their own). ``--users`` users (100), ``--threads`` threads (16, as a
gunicorn ``--threads 16`` worker serves them) share ``--requests`` requests (2,000), each for a
user drawn at random (seeded, the same sequence for both eras), or with ``--order round-robin``
each user in turn (0, 1, ..., 99, 0, ...), where a cap below the user count evicts every session
before its user comes back.

Each era gets a fresh ``tests/servers/sdk_server.py http`` (mcp==2.3.0 MCPServer under uvicorn,
one process; it serves both eras on /mcp) with ``--http-log``, so what the client made the
server do is counted on the server's side: sessions opened (``initialize`` POSTs), GET streams,
DELETEs. On the modern era a view costs nothing (each request carries its own credential); on
the legacy era each credential needs a session of its own (``Mcp-Session-Id`` belongs to the
credential that opened it), at most ``--max-view-sessions`` at once (least recently used closed).

Figures per run: calls/s (wall clock over all requests), p50/p95 latency per request, the
server-side counts, wrong answers and errors; with ``--rounds`` N (eras interleaved, the order
alternating) the MEDIAN of each figure is reported, and legacy/modern calls/s (issue 29.3's
target: legacy within 2x of modern, i.e. a ratio of at least 0.5).

Run (from the repository root; no network needed)::

    python bench/many_users.py --rounds 3
    python bench/many_users.py --rounds 3 --max-view-sessions 64     # the old fixed cap

Markdown goes to stdout, progress to stderr. Every server started is stopped (its process
group) before the script ends.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "sdk_server.py")
sys.path.insert(0, str(ROOT))  # measure this checkout's mcp_sync, installed or not
sys.path.insert(0, str(ROOT / "tests" / "servers"))

import listening  # noqa: E402  (starts a server on port 0 and reads the port it got)

import mcp_sync  # noqa: E402  (after the path)

ERAS = ("modern", "legacy")


@contextlib.contextmanager
def sdk_server(log_path: str) -> Iterator[str]:
    """A fresh SDK HTTP server (on a port it picks and says) logging each HTTP request to ``log_path``; its URL."""
    server = listening.start([sys.executable, SERVER, "http", "--http-log", log_path], ready_timeout=60)
    try:
        yield f"http://127.0.0.1:{server.port}/mcp"
    finally:
        listening.stop(server.proc)


def counts(log_path: str) -> dict[str, int]:
    """Sessions opened, GET streams and DELETEs the server saw (its --http-log)."""
    lines = Path(log_path).read_text().splitlines()
    return {
        "sessions": sum(line.startswith("POST initialize") for line in lines),
        "gets": sum(line.startswith("GET") for line in lines),
        "deletes": sum(line.startswith("DELETE") for line in lines),
    }


def one_run(era: str, args: argparse.Namespace) -> dict[str, Any]:
    """``args.requests`` requests by ``args.threads`` threads through one client of a fresh server."""
    if args.order == "round-robin":  # user 0, 1, ..., 99, 0, 1, ...: a cap below the user count never hits
        users = [index % args.users for index in range(args.requests)]
    else:
        users = random.Random(29).choices(range(args.users), k=args.requests)
    options: dict[str, Any] = {"mode": era}
    if args.max_view_sessions is not None:
        if "max_view_sessions" not in inspect.signature(mcp_sync.Client.http).parameters:
            raise SystemExit("this mcp_sync has no max_view_sessions option: run without --max-view-sessions")
        options["max_view_sessions"] = args.max_view_sessions
    with tempfile.TemporaryDirectory() as folder:
        log_path = str(Path(folder) / "http.log")
        with sdk_server(log_path) as url:
            client = mcp_sync.Client.http(url, **options)
            client.connect()
            latencies: list[float] = []
            wrong, errors = [0], [0]
            lock, next_index = threading.Lock(), [0]

            def work() -> None:
                while True:
                    with lock:
                        index = next_index[0]
                        next_index[0] += 1
                    if index >= len(users):
                        return
                    token = f"Bearer user-{users[index]}"
                    start = time.perf_counter()
                    try:
                        result = client.bind(headers={"Authorization": token}).call_tool("whoami", {})
                        ok = json.loads(result.text)["authorization"] == token
                    except mcp_sync.MCPError as exc:
                        print(f"  {era}: {type(exc).__name__}: {exc}", file=sys.stderr)
                        with lock:
                            errors[0] += 1
                        continue
                    elapsed = time.perf_counter() - start
                    with lock:
                        latencies.append(elapsed)
                        wrong[0] += not ok

            threads = [threading.Thread(target=work) for _ in range(args.threads)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.perf_counter() - start
            closing = time.perf_counter()
            client.close()
            close_s = time.perf_counter() - closing
            time.sleep(0.2)  # the server writes its last log lines
            seen = counts(log_path)
    latencies.sort()
    return {
        "era": era,
        "calls_s": len(latencies) / wall,
        "p50_ms": 1000 * latencies[len(latencies) // 2],
        "p95_ms": 1000 * latencies[int(len(latencies) * 0.95)],
        "close_s": close_s,
        "wrong": wrong[0],
        "errors": errors[0],
        **seen,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--order", choices=("random", "round-robin"), default="random",
                        help="which user each request is for (random: seeded, the same for both eras)")
    parser.add_argument("--max-view-sessions", type=int, default=None,
                        help="the client's cap (default: the client's default; the bench sets --users if supported)")
    parser.add_argument("--json", default=None, help="also write every run's figures to this file")
    args = parser.parse_args()
    if args.max_view_sessions is None and "max_view_sessions" in inspect.signature(mcp_sync.Client.http).parameters:
        args.max_view_sessions = args.users  # what the docs tell a user to set: their user count
    runs: dict[str, list[dict[str, Any]]] = {era: [] for era in ERAS}
    for round_ in range(args.rounds):
        for era in (ERAS if round_ % 2 == 0 else ERAS[::-1]):
            run = one_run(era, args)
            runs[era].append(run)
            print(f"round {round_ + 1} {era}: {run}", file=sys.stderr)
    figures = ("calls_s", "p50_ms", "p95_ms", "close_s", "sessions", "gets", "deletes", "wrong", "errors")
    median = {era: {f: statistics.median(r[f] for r in runs[era]) for f in figures} for era in ERAS}
    cap = args.max_view_sessions if args.max_view_sessions is not None else "default (64)"
    print(f"{args.users} users ({args.order}), {args.threads} threads, {args.requests} requests, "
          f"max_view_sessions={cap}, median of {args.rounds} rounds\n")
    print("| era | calls/s | p50 ms | p95 ms | close s | sessions opened | GET streams | DELETEs | wrong | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for era in ERAS:
        m = median[era]
        print(f"| {era} | {m['calls_s']:.0f} | {m['p50_ms']:.1f} | {m['p95_ms']:.1f} | {m['close_s']:.2f} | "
              f"{m['sessions']:.0f} | {m['gets']:.0f} | {m['deletes']:.0f} | {m['wrong']:.0f} | {m['errors']:.0f} |")
    ratio = median["legacy"]["calls_s"] / median["modern"]["calls_s"]
    print(f"\nlegacy/modern calls/s: {ratio:.2f} (target: >= 0.5)")
    if args.json:
        Path(args.json).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
