"""Sequential ``tools/call`` throughput over stdio: mcp_sync vs the official SDK vs raw pipes.

Every variant talks to the same server, ``tests/servers/sdk_server.py stdio`` (mcp==2.3.0
MCPServer), and makes ``--calls`` sequential ``call_tool("echo", {"text": "hi"})`` calls:

* ``mcp_sync``          ``mcp_sync.Client.stdio(sys.executable, [server, "stdio"])``, mode auto
                        (this server answers the ``server/discover`` probe: modern era, 2026-07-28);
* ``mcp_sync-legacy``   the same with ``mode="legacy"`` (initialize handshake, 2025-11-25);
* ``official``          ``mcp.Client(StdioServerParameters(...))`` (mcp 2.3.0, asyncio), mode auto;
* ``official-legacy``   the same with ``mode="legacy"``;
* ``raw``               the floor: ``subprocess`` pipes and hand-written JSON lines in the modern era,
                        with the ``_meta`` envelope byte-for-byte as mcp_sync sends it; one line
                        written, one line read and parsed, in a loop;
* ``raw-legacy``        the same floor after a hand-written ``initialize`` handshake;
* ``raw-thread``        the ``raw`` floor with one reader thread: the reader reads and parses each
                        line and hands the answer to the waiting caller through a lock, as any
                        client with a background reader must. The gap between ``raw`` and
                        ``raw-thread`` is what the one-reader-thread design itself costs (two
                        thread wake-ups per call instead of one); the gap between ``raw-thread``
                        and ``mcp_sync`` is mcp_sync's own work;
* ``engine``            mcp_sync's bottom half alone (private API, for measurement only): its
                        ``Engine`` over its ``StdioTransport``, sending the modern request the
                        session layer would send (the envelope encoded once, as it does) with
                        ``checked=True``: no
                        facade, no session layer, no argument or result checks, no result model.
                        The gap between ``raw-thread`` and ``engine`` is what the engine and the
                        transport cost (ids, futures, timeouts, routing, bounded reads and
                        writes); the gap between ``engine`` and ``mcp_sync`` is everything above.

Each run happens in a fresh worker subprocess (this script with ``--worker``) that starts its
server, warms up (50 calls), times the calls with ``time.perf_counter`` and reports its own
peak RSS (``getrusage(RUSAGE_SELF).ru_maxrss``: the client process only, not the server child).
Runs are repeated ``--repeat`` times, variants interleaved (the order rotates each round), and
the MEDIAN calls/s is reported. The script also times ``import mcp_sync`` and the official
client's import in fresh interpreters. It prints markdown tables.

Run (from the repository root; no network needed)::

    python bench/bench_stdio.py --calls 2000 --repeat 3

Every server gets a per-run tag in its environment (``MCP_SYNC_BENCH_TAG``); at the end any
process still carrying the tag is killed and reported, so no server outlives the script.
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import statistics
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, NamedTuple

import _workers  # bench/ is the script's folder: on sys.path
from _workers import TAG_VAR, Clock, median_of, print_ratio_table, sweep

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "sdk_server.py")
WARMUP = 50
TOOL = "echo"
ARGUMENTS = {"text": "hi"}
WORKER_TIMEOUT = 600.0

VARIANTS = ("mcp_sync", "mcp_sync-legacy", "official", "official-legacy", "raw", "raw-legacy", "raw-thread", "engine")
IMPORTS = {
    "mcp_sync": "import mcp_sync",
    "official (mcp 2.3.0)": "from mcp import Client, StdioServerParameters",
}

# The modern envelope exactly as mcp_sync sends it (see /tmp/notes/peers.md and the wire).
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "mcp-sync", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


class Timing(NamedTuple):
    """What one worker run measured over its timed calls."""

    wall: float  #: seconds, time.perf_counter
    cpu: float  #: seconds of this client process's CPU (all its threads; not the server child)
    era: str  #: the era and protocol version actually spoken


def server_env() -> dict[str, str]:
    """Extra environment for each server: the tag the final sweep looks for."""
    return {TAG_VAR: os.environ[TAG_VAR]}


# -- worker side: one variant, in this (fresh) process ---------------------------------------


def run_mcp_sync(mode: str, calls: int) -> Timing:
    import mcp_sync

    with mcp_sync.Client.stdio(sys.executable, [SERVER, "stdio"], env=server_env(), mode=mode) as client:
        for _ in range(WARMUP):
            result = client.call_tool(TOOL, ARGUMENTS)
        assert result.text == "hi" and not result.is_error, result
        with Clock() as clock:
            for _ in range(calls):
                result = client.call_tool(TOOL, ARGUMENTS)
        assert result.text == "hi" and not result.is_error, result
        return Timing(clock.wall, clock.cpu, f"{client.era} {client.protocol_version}")


def run_engine(calls: int) -> Timing:
    """The ``engine`` variant: mcp_sync's Engine and StdioTransport, nothing above them."""
    from mcp_sync._engine import Engine
    from mcp_sync.transports.base import EncodedObject
    from mcp_sync.transports.stdio import StdioTransport

    engine = Engine(StdioTransport(sys.executable, [SERVER, "stdio"], env=server_env()))
    engine.start()
    try:
        discovered = engine.request("server/discover", {"_meta": MODERN_META}, timeout=30)
        # the envelope encoded once and spliced into each request, as the session layer sends it
        params = {"name": TOOL, "arguments": ARGUMENTS, "_meta": EncodedObject(MODERN_META)}

        def call() -> dict[str, Any]:  # a fresh dict per call, as the session layer hands down
            return engine.request("tools/call", {**params}, timeout=60.0, checked=True)

        for _ in range(WARMUP):
            result = call()
        assert result["content"][0]["text"] == "hi", result
        with Clock() as clock:
            for _ in range(calls):
                result = call()
        assert result["content"][0]["text"] == "hi", result
        return Timing(clock.wall, clock.cpu, f"modern {discovered['supportedVersions'][0]}")
    finally:
        engine.close()


def run_official(mode: str, calls: int) -> Timing:
    import asyncio

    from mcp import Client, StdioServerParameters
    from mcp_types import TextContent
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    async def main() -> Timing:
        params = StdioServerParameters(command=sys.executable, args=[SERVER, "stdio"], env=server_env())
        async with Client(params, mode=mode) as client:
            for _ in range(WARMUP):
                result = await client.call_tool(TOOL, ARGUMENTS)
            content = result.content[0]
            assert isinstance(content, TextContent) and content.text == "hi" and not result.is_error, result
            with Clock() as clock:
                for _ in range(calls):
                    result = await client.call_tool(TOOL, ARGUMENTS)
            assert not result.is_error, result
            version = client.protocol_version
            era = "modern" if version in MODERN_PROTOCOL_VERSIONS else "legacy"
            return Timing(clock.wall, clock.cpu, f"{era} {version}")

    return asyncio.run(main())


def run_raw(mode: str, calls: int, threaded: bool = False) -> Timing:
    """The floor: blocking pipes, one JSON line out, one JSON line in; with ``threaded``, the line
    is read and parsed by a reader thread and handed to the caller through a lock."""
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "LANG", "TMPDIR")} | server_env()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def rpc(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        stdin.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
        stdin.flush()
        answer = json.loads(stdout.readline())
        assert answer.get("id") == request_id and "result" in answer, answer
        return answer["result"]  # type: ignore[no-any-return]

    try:
        if mode == "legacy":
            client_info = MODERN_META["io.modelcontextprotocol/clientInfo"]
            init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}
            version = rpc(1, "initialize", init)["protocolVersion"]
            stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
            stdin.flush()
            call_params: dict[str, Any] = {"name": TOOL, "arguments": ARGUMENTS}
        else:
            version = rpc(1, "server/discover", {"_meta": MODERN_META})["supportedVersions"][0]
            call_params = {"name": TOOL, "arguments": ARGUMENTS, "_meta": MODERN_META}
        # Pre-encode the request around its id: the floor does no per-call serialization work.
        head = b'{"jsonrpc":"2.0","id":'
        tail = b',"method":"tools/call","params":' + json.dumps(call_params, separators=(",", ":")).encode() + b"}\n"
        next_id = 2

        def loop(n: int) -> dict[str, Any]:
            nonlocal next_id
            answer: dict[str, Any] = {}
            for request_id in range(next_id, next_id + n):
                stdin.write(head + str(request_id).encode() + tail)
                stdin.flush()
                answer = json.loads(stdout.readline())
                if answer.get("id") != request_id:
                    raise RuntimeError(f"unexpected answer: {answer!r:.200}")
            next_id += n
            return answer

        waiting: dict[int, list[Any]] = {}  # id -> [lock released when answered, answer]

        def reader() -> None:
            for line in stdout:
                answer = json.loads(line)
                slot = waiting.pop(answer.get("id"), None)
                if slot is not None:
                    slot[1] = answer
                    slot[0].release()

        def threaded_loop(n: int) -> dict[str, Any]:
            nonlocal next_id
            answer: dict[str, Any] = {}
            for request_id in range(next_id, next_id + n):
                slot: list[Any] = [threading.Lock(), None]
                slot[0].acquire()
                waiting[request_id] = slot
                stdin.write(head + str(request_id).encode() + tail)
                stdin.flush()
                if not slot[0].acquire(timeout=30):
                    raise RuntimeError(f"no answer to {request_id}")
                answer = slot[1]
                if answer.get("id") != request_id:
                    raise RuntimeError(f"unexpected answer: {answer!r:.200}")
            next_id += n
            return answer

        if threaded:
            threading.Thread(target=reader, daemon=True).start()  # ends at EOF, when the server exits
            loop = threaded_loop

        assert loop(WARMUP)["result"]["content"][0]["text"] == "hi"
        with Clock() as clock:
            last = loop(calls)
        assert last["result"]["content"][0]["text"] == "hi"
        return Timing(clock.wall, clock.cpu, f"{mode} {version}")
    finally:
        stdin.close()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        stdout.close()


RUNNERS: dict[str, Callable[[int], Timing]] = {
    "mcp_sync": lambda n: run_mcp_sync("auto", n),
    "mcp_sync-legacy": lambda n: run_mcp_sync("legacy", n),
    "official": lambda n: run_official("auto", n),
    "official-legacy": lambda n: run_official("legacy", n),
    "raw": lambda n: run_raw("modern", n),
    "raw-legacy": lambda n: run_raw("legacy", n),
    "raw-thread": lambda n: run_raw("modern", n, threaded=True),
    "engine": run_engine,
}


def worker(variant: str, calls: int) -> None:
    """Run one variant and print one JSON line: calls/s, era, peak RSS of this process."""
    timing = RUNNERS[variant](calls)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux; excludes children
    result = {
        "variant": variant,
        "calls_per_s": calls / timing.wall,
        "cpu_us_per_call": timing.cpu / calls * 1e6,
        "era": timing.era,
        "rss_kib": rss_kib,
    }
    print(json.dumps(result))


# -- orchestrator side: stdlib only, so it stays small (its RSS can leak into children's ru_maxrss) --


def import_time(statement: str) -> float:
    code = f"import time;t=time.perf_counter();{statement};print(time.perf_counter()-t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return float(out.stdout.strip())


def fmt_runs(values: list[float]) -> str:
    return ", ".join(f"{v:,.0f}" for v in values)


def progress(result: dict[str, Any]) -> str:
    return (
        f"{result['calls_per_s']:8,.0f} calls/s  {result['cpu_us_per_call']:5.0f} CPU µs/call"
        f"  {result['rss_kib'] / 1024:5.1f} MiB  ({result['era']})"
    )


def main() -> None:
    parser = _workers.parser_for(__doc__, VARIANTS, calls=2000)
    parser.add_argument("--import-runs", type=int, default=7, help="fresh interpreters per import timing")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.calls)
        return
    variants = _workers.chosen_variants(parser, args, VARIANTS)
    started = datetime.datetime.now().astimezone()
    load_before = os.getloadavg()[0]
    try:
        runs = _workers.run_rounds(__file__, variants, args, timeout=WORKER_TIMEOUT, cwd=ROOT, progress=progress)
        imports: dict[str, list[float]] = {label: [] for label in IMPORTS}
        for _ in range(args.import_runs):
            for label, statement in IMPORTS.items():  # interleaved
                imports[label].append(import_time(statement))
    finally:
        leftovers = sweep()
    loads = [load_before, os.getloadavg()[0]]

    medians = {v: median_of(rs, "calls_per_s") for v, rs in runs.items() if rs}
    print(f"\n{_workers.run_header(started, args, WARMUP, loads)}\n")
    print(
        "| variant | era spoken | median calls/s | median µs/call (wall) | runs (calls/s) "
        "| client CPU µs/call (median) | client peak RSS (MiB) |"
    )
    print("|---|---|---:|---:|---|---:|---:|")
    for variant in variants:
        rs = runs[variant]
        if not rs:
            print(f"| {variant} | failed | | | | | |")
            continue
        rss = median_of(rs, "rss_kib") / 1024
        cpu = median_of(rs, "cpu_us_per_call")
        med = medians[variant]
        print(
            f"| {variant} | {rs[0]['era']} | {med:,.0f} | {1e6 / med:,.0f} | "
            f"{fmt_runs([r['calls_per_s'] for r in rs])} | {cpu:,.0f} | {rss:.1f} |"
        )
    print_ratio_table("ratio (calls/s)", "calls_per_s", [
        ("mcp_sync / official", "mcp_sync", "official", (">=", 1.5)),
        ("mcp_sync / raw", "mcp_sync", "raw", (">=", 0.9)),
        ("raw / official (ceiling: a zero-cost client)", "raw", "official", None),
        ("raw-thread / raw (the cost of a reader thread alone)", "raw-thread", "raw", None),
        ("mcp_sync / raw-thread (mcp_sync's own work)", "mcp_sync", "raw-thread", None),
        ("engine / raw-thread (the engine and transport's own work)", "engine", "raw-thread", None),
        ("mcp_sync-legacy / official-legacy", "mcp_sync-legacy", "official-legacy", None),
        ("mcp_sync-legacy / raw-legacy", "mcp_sync-legacy", "raw-legacy", None),
    ], runs)
    print_ratio_table("ratio (client CPU per call)", "cpu_us_per_call", [
        ("mcp_sync / raw-thread", "mcp_sync", "raw-thread", ("<=", 1.5)),
        ("mcp_sync-legacy / raw-thread", "mcp_sync-legacy", "raw-thread", ("<=", 1.5)),
        ("engine / raw-thread (the bottom half alone)", "engine", "raw-thread", None),
        ("mcp_sync / engine (everything above the engine)", "mcp_sync", "engine", None),
        ("mcp_sync / official", "mcp_sync", "official", None),
    ], runs)
    print("\n| import (fresh interpreter) | statement | median ms | runs (ms) |")
    print("|---|---|---:|---|")
    for label, times in imports.items():
        print(
            f"| {label} | `{IMPORTS[label]}` | {statistics.median(times) * 1e3:.0f} | "
            f"{', '.join(f'{t * 1e3:.0f}' for t in times)} |"
        )
    print(f"\nServers left running at the end and killed by the sweep: {leftovers}")
    if args.json:
        _workers.save_json(
            args.json, started, args, runs=runs, medians=medians, imports=imports, leftovers=leftovers, loadavg=loads
        )


if __name__ == "__main__":
    main()
