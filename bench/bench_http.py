"""``tools/call`` over Streamable HTTP: mcp_sync vs the official SDK vs the floors of the wire.

Every variant talks to its own fresh ``tests/servers/sdk_server.py http`` (mcp==2.3.0
MCPServer under uvicorn) and makes ``--calls`` ``call_tool("echo", {"text": "hi"})`` calls:

* ``mcp_sync``           ``mcp_sync.Client.http(url)``, mode auto (this server answers the
                         ``server/discover`` probe: modern era, 2026-07-28, one JSON POST per call);
* ``mcp_sync-legacy``    the same with ``mode="legacy"`` (``initialize`` once, ``Mcp-Session-Id``,
                         each answer on an SSE stream);
* ``mcp_sync-t8``, ``mcp_sync-t32``, ``mcp_sync-legacy-t8``  one client shared by 8 / 32 threads,
                         ``--calls`` in all (each thread makes its share);
* ``mcp_sync-io``, ``mcp_sync-io-t8`` (and ``mcp_sync-legacy-io``, ``-legacy-io-t8``)  the same
                         client, sequential and 8 threads, calling
                         ``wait_echo`` (answers after 10 ms of idle waiting, as a tool calling
                         another service does): a server that serves calls in parallel without
                         needing a core per call, which the one-process ``echo`` server is not
                         on a two-core machine;
* ``official``           ``mcp.Client(url)`` (mcp 2.3.0, asyncio + httpx), mode auto;
* ``official-legacy``    the same with ``mode="legacy"``;
* the floors, all sending the very bytes mcp_sync sends for a modern call (same headers, the
  ``_meta`` envelope, the body pre-encoded around its id) and ``json.loads``-ing the answer:
  ``session-post``   ``requests.Session.post`` in a loop;
  ``adapter``        one PreparedRequest made by the session, copied per call with the new body and
                     sent through the session's own ``HTTPAdapter`` (``adapter.send``) with the
                     environment's settings (proxies, CA bundle) resolved once, as requests would
                     pass them;
  ``urllib3-pool``   the adapter's urllib3 connection pool (``pool.urlopen``);
  ``http.client``    one ``http.client.HTTPConnection`` kept alive;
  ``adapter-legacy`` the ``adapter`` floor on a legacy session (``initialize`` once, the session
                     header, the SSE answer read to its end and its ``data:`` line parsed).

Each run is a fresh worker subprocess (this script with ``--worker``) that starts its server,
warms up (50 calls), then times the calls: wall clock (``time.perf_counter``) for calls/s and
per-call latency (p50/p99), ``time.process_time`` for the client's CPU (all threads of the worker,
never the server: it is a child process), and ``getrusage(RUSAGE_SELF).ru_maxrss`` for the
client's peak RSS. Variants are interleaved (the order rotates each round), repeated
``--repeat`` times, and the MEDIAN of each figure is reported, with the ratios the issue's
targets refer to. Markdown tables go to stdout, progress to stderr.

Run (from the repository root; no network needed)::

    python bench/bench_http.py --calls 1000 --repeat 3

Every server gets a per-run tag in its environment (``MCP_SYNC_BENCH_TAG``); at the end any
process still carrying the tag is killed and reported, so no server outlives the script.
"""

from __future__ import annotations

import datetime
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple, Optional

import _workers  # bench/ is the script's folder: on sys.path
from _workers import TAG_VAR, Clock, median_of, ratio_row, sweep

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "sdk_server.py")
sys.path.insert(0, str(ROOT / "tests" / "servers"))
import listening  # noqa: E402  (starts a server on port 0 and reads the port it got)

sys.path.insert(0, str(ROOT))  # the workers measure this checkout's mcp_sync, installed or not
WARMUP = 50
TOOL = "echo"
ARGUMENTS = {"text": "hi"}
IO_TOOL = "wait_echo"
IO_ARGUMENTS = {"text": "hi", "ms": 10}
WORKER_TIMEOUT = 900.0
SERVER_READY_TIMEOUT = 60.0
MODERN_VERSION = "2026-07-28"
LEGACY_VERSION = "2025-11-25"

VARIANTS = (
    "mcp_sync",
    "mcp_sync-legacy",
    "mcp_sync-t8",
    "mcp_sync-t32",
    "mcp_sync-legacy-t8",
    "mcp_sync-io",
    "mcp_sync-io-t8",
    "mcp_sync-legacy-io",
    "mcp_sync-legacy-io-t8",
    "official",
    "official-legacy",
    "session-post",
    "adapter",
    "urllib3-pool",
    "http.client",
    "adapter-legacy",
)
#: The default selection: every variant.
DEFAULT_VARIANTS = VARIANTS

# The modern envelope exactly as mcp_sync sends it (checked on the wire).
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "mcp-sync", "version": "0.1.0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
#: The headers mcp_sync puts on a modern tools/call POST (requests adds Content-Length, Host,
#: Connection; its session adds User-Agent and Accept-Encoding).
MODERN_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": MODERN_VERSION,
    "Mcp-Method": "tools/call",
    "Mcp-Name": TOOL,
    "User-Agent": "mcp-sync/0.1.0",
    "Accept-Encoding": "gzip, deflate",
}


class Timing(NamedTuple):
    """What one worker run measured over its timed calls."""

    wall: float  #: seconds, time.perf_counter, first call sent to last answer read
    cpu: float  #: seconds of this client process's CPU (all its threads; not the server child)
    latencies: list[float]  #: seconds, one per timed call
    era: str  #: the era and protocol version actually spoken


# -- worker side: one server, one variant, in this (fresh) process ---------------------------


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    """A fresh SDK server on a port of the kernel's choosing, ready to answer; its URL."""
    env = {TAG_VAR: os.environ.get(TAG_VAR, "untagged")}
    server = listening.start([sys.executable, SERVER, "http"], env, SERVER_READY_TIMEOUT)
    return server.proc, f"http://127.0.0.1:{server.port}/mcp"


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(5)
    except (ProcessLookupError, PermissionError):
        pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)


def timed_loop(call: Callable[[], Any], calls: int) -> tuple[list[float], Any]:
    """Make ``calls`` calls, recording each one's latency; the last answer."""
    latencies = [0.0] * calls
    clock = time.perf_counter
    answer = None
    for i in range(calls):
        t = clock()
        answer = call()
        latencies[i] = clock() - t
    return latencies, answer


def run_mcp_sync(url: str, mode: str, calls: int, threads: int, io: bool = False) -> Timing:
    import mcp_sync

    tool, arguments = (IO_TOOL, IO_ARGUMENTS) if io else (TOOL, ARGUMENTS)
    with mcp_sync.Client.http(url, mode=mode) as client:

        def call() -> Any:
            return client.call_tool(tool, arguments)

        for _ in range(WARMUP):
            result = call()
        assert result.text == "hi" and not result.is_error, result
        if threads == 1:
            with Clock() as clock:
                latencies, result = timed_loop(call, calls)
            assert result.text == "hi" and not result.is_error, result
        else:
            share = calls // threads
            per_thread: list[list[float]] = [[] for _ in range(threads)]
            errors: list[BaseException] = []
            start = threading.Barrier(threads + 1)

            def work(index: int) -> None:
                try:
                    start.wait()
                    lat, last = timed_loop(call, share)
                    assert last.text == "hi" and not last.is_error, last
                    per_thread[index] = lat
                except BaseException as exc:  # reported below; a thread must not die silently
                    errors.append(exc)

            pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
            for t in pool:
                t.start()
            with Clock() as clock:
                start.wait()
                for t in pool:
                    t.join()
            if errors:
                raise errors[0]
            latencies = [x for lat in per_thread for x in lat]
        return Timing(clock.wall, clock.cpu, latencies, f"{client.era} {client.protocol_version}")


def run_official(url: str, mode: str, calls: int) -> Timing:
    import asyncio

    from mcp import Client
    from mcp_types import TextContent
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    async def main() -> Timing:
        async with Client(url, mode=mode) as client:
            for _ in range(WARMUP):
                result = await client.call_tool(TOOL, ARGUMENTS)
            content = result.content[0]
            assert isinstance(content, TextContent) and content.text == "hi" and not result.is_error, result
            latencies = [0.0] * calls
            clock_now = time.perf_counter
            with Clock() as clock:
                for i in range(calls):
                    t = clock_now()
                    result = await client.call_tool(TOOL, ARGUMENTS)
                    latencies[i] = clock_now() - t
            assert not result.is_error, result
            version = client.protocol_version
            era = "modern" if version in MODERN_PROTOCOL_VERSIONS else "legacy"
            return Timing(clock.wall, clock.cpu, latencies, f"{era} {version}")

    return asyncio.run(main())


def modern_body_parts() -> tuple[bytes, bytes]:
    """The modern tools/call body around its id, byte-for-byte as mcp_sync encodes it."""
    params = {"name": TOOL, "arguments": ARGUMENTS, "_meta": MODERN_META}
    head = b'{"jsonrpc":"2.0","id":'
    tail = b',"method":"tools/call","params":' + json.dumps(params, separators=(",", ":")).encode() + b"}"
    return head, tail


def environment_settings(session: Any, url: str) -> dict[str, Any]:
    """What ``Session.request`` would pass to the adapter (proxies, verify, cert from the
    environment), worked out once: the floor does what a correct requests client must, once."""
    settings = session.merge_environment_settings(url, {}, True, None, None)
    return {key: settings[key] for key in ("proxies", "verify", "cert")}


def check_answer(answer: Any, request_id: int) -> None:
    if not (isinstance(answer, dict) and answer.get("id") == request_id and "result" in answer):
        raise RuntimeError(f"unexpected answer: {answer!r:.300}")


def run_floor(url: str, kind: str, calls: int) -> Timing:
    """The floors: the same modern POST, with less and less machinery around it."""
    import http.client
    from urllib.parse import urlsplit

    import requests

    head, tail = modern_body_parts()
    next_id = iter(range(1, 1 << 62))
    parts = urlsplit(url)
    call: Callable[[], Any]
    session = requests.Session()
    session.headers.update({"User-Agent": MODERN_HEADERS["User-Agent"], "Accept-Encoding": "gzip, deflate"})
    conn: Optional[http.client.HTTPConnection] = None

    if kind == "session-post":

        def call() -> Any:
            request_id = next(next_id)
            response = session.post(url, data=head + str(request_id).encode() + tail, headers=MODERN_HEADERS)
            answer = json.loads(response.content)
            check_answer(answer, request_id)
            return answer

    elif kind == "adapter":
        adapter = session.get_adapter(url)
        template = session.prepare_request(requests.Request("POST", url, headers=MODERN_HEADERS, data=b"{}"))
        settings = environment_settings(session, url)

        def call() -> Any:
            request_id = next(next_id)
            prepared = template.copy()
            prepared.prepare_body(head + str(request_id).encode() + tail, None)
            response = adapter.send(prepared, timeout=(10, None), **settings)
            answer = json.loads(response.content)
            check_answer(answer, request_id)
            return answer

    elif kind == "urllib3-pool":
        pool = session.get_adapter(url).poolmanager.connection_from_url(url)
        path = parts.path

        def call() -> Any:
            request_id = next(next_id)
            body = head + str(request_id).encode() + tail
            response = pool.urlopen("POST", path, body=body, headers=MODERN_HEADERS, retries=False)
            answer = json.loads(response.data)
            check_answer(answer, request_id)
            return answer

    elif kind == "http.client":
        conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
        path = parts.path

        def call() -> Any:
            request_id = next(next_id)
            assert conn is not None
            conn.request("POST", path, body=head + str(request_id).encode() + tail, headers=MODERN_HEADERS)
            response = conn.getresponse()
            answer = json.loads(response.read())
            check_answer(answer, request_id)
            return answer

    else:
        raise ValueError(kind)

    try:
        for _ in range(WARMUP):
            call()
        with Clock() as clock:
            latencies, answer = timed_loop(call, calls)
        assert answer["result"]["content"][0]["text"] == "hi", answer
        return Timing(clock.wall, clock.cpu, latencies, f"modern {MODERN_VERSION}")
    finally:
        if conn is not None:
            conn.close()
        session.close()


def run_adapter_legacy(url: str, calls: int) -> Timing:
    """The ``adapter`` floor on a legacy session: SSE answers, session header, protocol version."""
    import requests

    session = requests.Session()
    session.headers.update({"User-Agent": MODERN_HEADERS["User-Agent"], "Accept-Encoding": "gzip, deflate"})
    base = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {},
            "clientInfo": MODERN_META["io.modelcontextprotocol/clientInfo"],
        },
    }
    response = session.post(url, data=json.dumps(init), headers=base)
    session_id = response.headers["Mcp-Session-Id"]
    response.close()
    headers = {**base, "Mcp-Session-Id": session_id, "MCP-Protocol-Version": LEGACY_VERSION}
    session.post(url, data=b'{"jsonrpc":"2.0","method":"notifications/initialized"}', headers=headers).close()
    adapter = session.get_adapter(url)
    template = session.prepare_request(requests.Request("POST", url, headers=headers, data=b"{}"))
    settings = environment_settings(session, url)
    head = b'{"jsonrpc":"2.0","id":'
    tail = b',"method":"tools/call","params":' + json.dumps({"name": TOOL, "arguments": ARGUMENTS}).encode() + b"}"
    next_id = iter(range(1, 1 << 62))

    def call() -> Any:
        request_id = next(next_id)
        prepared = template.copy()
        prepared.prepare_body(head + str(request_id).encode() + tail, None)
        response = adapter.send(prepared, timeout=(10, None), **settings)
        answer = None
        for line in response.content.splitlines():
            if line.startswith(b"data:"):
                answer = json.loads(line[5:])
        check_answer(answer, request_id)
        return answer

    try:
        for _ in range(WARMUP):
            call()
        with Clock() as clock:
            latencies, answer = timed_loop(call, calls)
        assert answer["result"]["content"][0]["text"] == "hi", answer
        return Timing(clock.wall, clock.cpu, latencies, f"legacy {LEGACY_VERSION}")
    finally:
        session.delete(url, headers=headers).close()
        session.close()


RUNNERS: dict[str, Callable[[str, int], Timing]] = {
    "mcp_sync": lambda url, n: run_mcp_sync(url, "auto", n, 1),
    "mcp_sync-legacy": lambda url, n: run_mcp_sync(url, "legacy", n, 1),
    "mcp_sync-t8": lambda url, n: run_mcp_sync(url, "auto", n, 8),
    "mcp_sync-t32": lambda url, n: run_mcp_sync(url, "auto", n, 32),
    "mcp_sync-legacy-t8": lambda url, n: run_mcp_sync(url, "legacy", n, 8),
    "mcp_sync-io": lambda url, n: run_mcp_sync(url, "auto", n, 1, io=True),
    "mcp_sync-io-t8": lambda url, n: run_mcp_sync(url, "auto", n, 8, io=True),
    "mcp_sync-legacy-io": lambda url, n: run_mcp_sync(url, "legacy", n, 1, io=True),
    "mcp_sync-legacy-io-t8": lambda url, n: run_mcp_sync(url, "legacy", n, 8, io=True),
    "official": lambda url, n: run_official(url, "auto", n),
    "official-legacy": lambda url, n: run_official(url, "legacy", n),
    "session-post": lambda url, n: run_floor(url, "session-post", n),
    "adapter": lambda url, n: run_floor(url, "adapter", n),
    "urllib3-pool": lambda url, n: run_floor(url, "urllib3-pool", n),
    "http.client": lambda url, n: run_floor(url, "http.client", n),
    "adapter-legacy": run_adapter_legacy,
}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def worker(variant: str, calls: int) -> None:
    """Run one variant against a fresh server; print one JSON line of figures."""
    proc, url = start_server()
    try:
        timing = RUNNERS[variant](url, calls)
    finally:
        stop_server(proc)
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux; excludes the server child
    done = len(timing.latencies)
    result = {
        "variant": variant,
        "calls": done,
        "calls_per_s": done / timing.wall,
        "cpu_us_per_call": timing.cpu / done * 1e6,
        "p50_us": percentile(timing.latencies, 0.50) * 1e6,
        "p99_us": percentile(timing.latencies, 0.99) * 1e6,
        "era": timing.era,
        "rss_kib": rss_kib,
    }
    print(json.dumps(result))


# -- orchestrator side: stdlib only -----------------------------------------------------------


def fmt_runs(runs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{r['calls_per_s']:,.0f}" for r in runs)


def report(runs: dict[str, list[dict[str, Any]]], variants: list[str]) -> None:
    print(
        "| variant | era spoken | median calls/s | runs (calls/s) | client CPU µs/call | p50 µs | p99 µs "
        "| client peak RSS (MiB) |"
    )
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for variant in variants:
        rs = runs[variant]
        if not rs:
            print(f"| {variant} | failed | | | | | | |")
            continue
        print(
            f"| {variant} | {rs[0]['era']} | {median_of(rs, 'calls_per_s'):,.0f} | "
            f"{fmt_runs(rs)} | {median_of(rs, 'cpu_us_per_call'):,.0f} | "
            f"{median_of(rs, 'p50_us'):,.0f} | {median_of(rs, 'p99_us'):,.0f} | "
            f"{median_of(rs, 'rss_kib') / 1024:.1f} |"
        )
    print("\n| ratio | of the medians | median of per-round ratios | target | verdict (of the medians) |")
    print("|---|---:|---:|---|---|")
    rows = [
        ("calls/s: mcp_sync / official", "mcp_sync", "official", "calls_per_s", (">=", 1.3)),
        (
            "calls/s: mcp_sync-legacy / official-legacy",
            "mcp_sync-legacy",
            "official-legacy",
            "calls_per_s",
            (">=", 1.3),
        ),
        ("CPU/call: mcp_sync / adapter", "mcp_sync", "adapter", "cpu_us_per_call", ("<=", 1.5)),
        ("CPU/call: mcp_sync-legacy / adapter", "mcp_sync-legacy", "adapter", "cpu_us_per_call", ("<=", 1.5)),
        ("CPU/call: mcp_sync-legacy / adapter-legacy", "mcp_sync-legacy", "adapter-legacy", "cpu_us_per_call", None),
        ("calls/s: mcp_sync-io-t8 / mcp_sync-io (a server that serves in parallel)", "mcp_sync-io-t8",
         "mcp_sync-io", "calls_per_s", (">=", 2.0)),
        ("calls/s: mcp_sync-legacy-io-t8 / mcp_sync-legacy-io", "mcp_sync-legacy-io-t8", "mcp_sync-legacy-io",
         "calls_per_s", (">=", 2.0)),
        ("calls/s: mcp_sync-t8 / mcp_sync (a CPU-bound one-process server)", "mcp_sync-t8", "mcp_sync", "calls_per_s",
         None),
        ("calls/s: mcp_sync-t32 / mcp_sync", "mcp_sync-t32", "mcp_sync", "calls_per_s", None),
        ("calls/s: mcp_sync-legacy-t8 / mcp_sync-legacy", "mcp_sync-legacy-t8", "mcp_sync-legacy", "calls_per_s", None),
        ("calls/s: mcp_sync / adapter", "mcp_sync", "adapter", "calls_per_s", None),
        ("calls/s: adapter / official (a near-zero-cost requests client)", "adapter", "official", "calls_per_s", None),
        ("calls/s: http.client / official (the wire's ceiling)", "http.client", "official", "calls_per_s", None),
        ("CPU/call: official / mcp_sync", "official", "mcp_sync", "cpu_us_per_call", None),
    ]
    for label, num, den, key, target in rows:
        if num in runs and den in runs:
            print(ratio_row(label, num, den, key, runs, target))


def progress(result: dict[str, Any]) -> str:
    return (
        f"{result['calls_per_s']:7,.0f} calls/s  {result['cpu_us_per_call']:6,.0f} CPU µs/call"
        f"  p50 {result['p50_us']:6,.0f} µs  p99 {result['p99_us']:7,.0f} µs  {result['rss_kib'] / 1024:5.1f} MiB"
        f"  ({result['era']})"
    )


def main() -> None:
    parser = _workers.parser_for(__doc__, VARIANTS, calls=1000)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.calls)
        return
    variants = _workers.chosen_variants(parser, args, VARIANTS)
    started = datetime.datetime.now().astimezone()
    load_before = os.getloadavg()[0]
    try:
        runs = _workers.run_rounds(__file__, variants, args, timeout=WORKER_TIMEOUT, cwd=ROOT, progress=progress)
    finally:
        leftovers = sweep()
    loads = [load_before, os.getloadavg()[0]]
    print(f"\n{_workers.run_header(started, args, WARMUP, loads)}\n")
    report(runs, variants)
    print(f"\nServers left running at the end and killed by the sweep: {leftovers}")
    if args.json:
        _workers.save_json(args.json, started, args, runs=runs, leftovers=leftovers, loadavg=loads)


if __name__ == "__main__":
    main()
