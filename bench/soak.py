"""Soak: many sequential calls on ONE client; memory, threads and open files must stay flat.

For each transport (``stdio``, ``http`` modern, ``http-legacy``) a fresh worker process
(this script with ``--worker``) starts ``tests/servers/sdk_server.py`` (mcp==2.3.0), opens one
``mcp_sync.Client``, makes ``--calls`` ``call_tool("echo", {"text": "hi"})`` calls and samples,
every ``--every`` calls (and once before the first), its own:

* RSS (``VmRSS`` of ``/proc/self/status``, MiB),
* thread count (``Threads`` of ``/proc/self/status``: every OS thread of the client process),
* open file descriptors (entries of ``/proc/self/fd``).

The server is a child process and is not counted. The samples go to ``<out>.json`` and
``<out>.csv``, and a plot with one panel per measure and one line per transport to ``<out>.png``
(matplotlib, the ``bench`` extra). The script prints, per transport, the first and last sample
and the growth; a curve is called flat when the threads and descriptors end where they started
and the RSS grew less than ``--rss-slack`` MiB over the run after the first sample.

Run (from the repository root)::

    python bench/soak.py                              # 100,000 calls per transport, every 5,000
    python bench/soak.py --calls 10000 --out /tmp/soak   # a short run
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import os
import platform
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _workers  # noqa: E402
from bench_http import SERVER, TAG_VAR, start_server, stop_server, sweep  # noqa: E402

TRANSPORTS = ("stdio", "http", "http-legacy")
TOOL = "echo"
ARGUMENTS = {"text": "hi"}
WARMUP = 200
WORKER_TIMEOUT = 3 * 3600.0


def proc_status() -> dict[str, int]:
    """RSS (KiB) and OS threads of this process, from /proc/self/status."""
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "Threads"):
                values[key] = int(rest.split()[0])
    return values


def sample(calls_done: int, started: float) -> dict[str, Any]:
    status = proc_status()
    return {
        "calls": calls_done,
        "seconds": round(time.monotonic() - started, 3),
        "rss_mib": round(status["VmRSS"] / 1024, 2),
        "threads": status["Threads"],
        "fds": len(os.listdir("/proc/self/fd")),
    }


def worker(transport: str, calls: int, every: int) -> None:
    """One client, ``calls`` calls, a sample every ``every``; prints the samples as one JSON line."""
    import mcp_sync

    server = None
    if transport == "stdio":
        env = {TAG_VAR: os.environ.get(TAG_VAR, "untagged")}
        client = mcp_sync.Client.stdio(sys.executable, [SERVER, "stdio"], env=env)
    else:
        server, url = start_server()
        client = mcp_sync.Client.http(url, mode="legacy" if transport == "http-legacy" else "auto")
    samples: list[dict[str, Any]] = []
    try:
        with client:
            for _ in range(WARMUP):
                result = client.call_tool(TOOL, ARGUMENTS)
            started = time.monotonic()
            samples.append(sample(0, started))
            for done in range(1, calls + 1):
                result = client.call_tool(TOOL, ARGUMENTS)
                if done % every == 0 or done == calls:
                    if result.text != "hi" or result.is_error:
                        raise RuntimeError(f"unexpected result: {result!r}")
                    samples.append(sample(done, started))
            era = f"{client.era} {client.protocol_version}"
    finally:
        if server is not None:
            stop_server(server)
    print(json.dumps({"transport": transport, "era": era, "samples": samples}))


def run_worker(transport: str, calls: int, every: int) -> Optional[dict[str, Any]]:
    extra = ["--every", str(every)]
    return _workers.run_worker(__file__, transport, calls, timeout=WORKER_TIMEOUT, cwd=ROOT, extra=extra)


def verdict(samples: list[dict[str, Any]], rss_slack: float) -> tuple[bool, str]:
    """Flat: the second half of the run never exceeds the first half's peak threads and
    descriptors (a request's worker thread may come and go between samples), and the RSS
    of the last quarter is within ``rss_slack`` MiB of the first quarter's."""
    half, quarter = max(1, len(samples) // 2), max(1, len(samples) // 4)

    def peak(key: str, part: list[dict[str, Any]]) -> float:
        return max(s[key] for s in part)

    def middle(part: list[dict[str, Any]]) -> float:
        values = sorted(s["rss_mib"] for s in part)
        return values[len(values) // 2]

    rss_growth = middle(samples[-quarter:]) - middle(samples[:quarter])
    flat = (
        peak("threads", samples[half:]) <= peak("threads", samples[:half])
        and peak("fds", samples[half:]) <= peak("fds", samples[:half])
        and rss_growth < rss_slack
    )
    first, last = samples[0], samples[-1]
    text = (
        f"RSS {first['rss_mib']:.1f} -> {last['rss_mib']:.1f} MiB (last quarter vs first: {rss_growth:+.1f}), "
        f"threads {first['threads']} -> {last['threads']} (peak {peak('threads', samples[:half])} in the first "
        f"half, {peak('threads', samples[half:])} in the second), fds {first['fds']} -> {last['fds']} "
        f"(peak {peak('fds', samples[:half])}, then {peak('fds', samples[half:])})"
    )
    return flat, text


def plot(results: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    panels = [("rss_mib", "RSS (MiB)"), ("threads", "threads"), ("fds", "open file descriptors")]
    for ax, (key, label) in zip(axes, panels):
        for result in results:
            xs = [s["calls"] for s in result["samples"]]
            ys = [s[key] for s in result["samples"]]
            ax.plot(xs, ys, marker="o", markersize=3, label=f"{result['transport']} ({result['era'].split()[0]})")
        ax.set_xlabel("calls made")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0, top=max(1.0, max(s[key] for r in results for s in r["samples"]) * 1.25))
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=100_000, help="calls per transport (default 100,000)")
    parser.add_argument("--every", type=int, help="sample every N calls (default: calls / 20, i.e. 5,000)")
    parser.add_argument("--transports", default=",".join(TRANSPORTS), help=f"comma-separated subset of {TRANSPORTS}")
    parser.add_argument("--out", default="bench/soak", help="path prefix of the .json, .csv and .png files")
    parser.add_argument("--rss-slack", type=float, default=5.0, help="RSS growth (MiB) still called flat")
    parser.add_argument("--worker", choices=TRANSPORTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    every = args.every or max(1, args.calls // 20)

    if args.worker:
        worker(args.worker, args.calls, every)
        return

    transports = [t for t in args.transports.split(",") if t]
    unknown = set(transports) - set(TRANSPORTS)
    if unknown:
        parser.error(f"unknown transports: {sorted(unknown)}")
    os.environ[TAG_VAR] = uuid.uuid4().hex
    started = datetime.datetime.now().astimezone()
    load_before = os.getloadavg()
    results = []
    try:
        for transport in transports:
            t0 = time.monotonic()
            result = run_worker(transport, args.calls, every)
            if result is None:
                continue
            result["wall_s"] = round(time.monotonic() - t0, 1)
            results.append(result)
            print(f"  {transport}: done in {result['wall_s']:.0f} s", file=sys.stderr)
    finally:
        leftovers = sweep()
    load_after = os.getloadavg()

    header = (
        f"{started:%Y-%m-%d %H:%M %Z}; nproc {os.cpu_count()}; Python {platform.python_version()}; "
        f"--calls {args.calls}, sampled every {every}; loadavg(1m) {load_before[0]:.2f} before, "
        f"{load_after[0]:.2f} after"
    )
    print(f"\n{header}\n")
    print("| transport | era | calls | wall (s) | flat | first -> last sample |")
    print("|---|---|---:|---:|---|---|")
    all_flat = True
    for result in results:
        flat, text = verdict(result["samples"], args.rss_slack)
        all_flat = all_flat and flat
        print(
            f"| {result['transport']} | {result['era']} | {args.calls:,} | {result['wall_s']:.0f} | "
            f"{'yes' if flat else '**no**'} | {text} |"
        )
    print(f"\nServers left running at the end and killed by the sweep: {leftovers}")

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {"header": header, "calls": args.calls, "every": every, "results": results, "leftovers": leftovers}
    out.with_suffix(".json").write_text(json.dumps(payload, indent=2))
    with out.with_suffix(".csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["transport", "calls", "seconds", "rss_mib", "threads", "fds"])
        for result in results:
            for s in result["samples"]:
                writer.writerow([result["transport"], s["calls"], s["seconds"], s["rss_mib"], s["threads"], s["fds"]])
    if results:
        plot(results, out.with_suffix(".png"), f"mcp_sync soak: one client, sequential call_tool('echo')\n{header}")
    print(f"Wrote {out.with_suffix('.json')}, {out.with_suffix('.csv')}, {out.with_suffix('.png')}")
    if not all_flat:
        sys.exit(1)


if __name__ == "__main__":
    main()
