"""What the benchmarks' orchestrators share: each variant runs in a fresh worker process, rounds
interleave the variants, ratios are reported two ways, and a server that a run left behind is
found by the tag in its environment and killed.

Standard library only: the orchestrator stays small, since its RSS can leak into its children's
``ru_maxrss``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

Runs = dict[str, list[dict[str, Any]]]


class Clock:
    """Times a block: wall clock and this process's CPU time."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu

#: Every process a run starts carries ``MCP_SYNC_BENCH_TAG=<a fresh id>`` in its environment.
TAG_VAR = "MCP_SYNC_BENCH_TAG"


def run_worker(
    script: str, variant: str, calls: int, *, timeout: float, cwd: Path, extra: Sequence[str] = ()
) -> Optional[dict[str, Any]]:
    """Run ``script --worker variant --calls N [extra...]`` and return the JSON line it prints last
    (None on failure)."""
    cmd = [sys.executable, script, "--worker", variant, "--calls", str(calls), *extra]
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


# -- the orchestrators' command line, rounds and ratios ----------------------------------------


def parser_for(doc: Optional[str], variants: Sequence[str], calls: int) -> argparse.ArgumentParser:
    """The options every benchmark takes: --calls, --repeat, --variants, --json (and --worker)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--calls", type=int, default=calls, help=f"timed calls per run (default {calls})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant (default 3)")
    parser.add_argument("--variants", default=",".join(variants), help=f"comma-separated subset of {tuple(variants)}")
    parser.add_argument("--json", metavar="PATH", help="also write the raw results as JSON")
    parser.add_argument("--worker", choices=variants, help=argparse.SUPPRESS)
    return parser


def chosen_variants(parser: argparse.ArgumentParser, args: argparse.Namespace, variants: Sequence[str]) -> list[str]:
    """The --variants asked for (an unknown one is a usage error); tags this run for the sweep."""
    chosen = [v for v in args.variants.split(",") if v]
    unknown = set(chosen) - set(variants)
    if unknown:
        parser.error(f"unknown variants: {sorted(unknown)}")
    os.environ[TAG_VAR] = uuid.uuid4().hex  # inherited by the workers, passed on to their servers
    return chosen


def run_rounds(
    script: str,
    variants: list[str],
    args: argparse.Namespace,
    *,
    timeout: float,
    cwd: Path,
    progress: Callable[[dict[str, Any]], str],
) -> Runs:
    """Every variant ``--repeat`` times in fresh workers, the order rotating each round (so no
    variant always runs first); ``progress(result)`` is printed to stderr after each run."""
    runs: Runs = {v: [] for v in variants}
    for round_no in range(args.repeat):
        order = variants[round_no % len(variants) :] + variants[: round_no % len(variants)]
        for variant in order:
            result = run_worker(script, variant, args.calls, timeout=timeout, cwd=cwd)
            if result is not None:
                result["round"] = round_no
                runs[variant].append(result)
                print(f"  round {round_no + 1}/{args.repeat} {variant:<19} {progress(result)}", file=sys.stderr)
    return runs


def run_header(started: datetime.datetime, args: argparse.Namespace, warmup: int, loads: Sequence[float]) -> str:
    """The line under which a table is published: when, where, with what settings."""
    return (
        f"{started:%Y-%m-%d %H:%M %Z}; nproc {os.cpu_count()}; Python {platform.python_version()} "
        f"({platform.machine()}, {platform.system()} {platform.release()}); "
        f"--calls {args.calls} --repeat {args.repeat}, warm-up {warmup}; "
        f"loadavg(1m) {loads[0]:.2f} before, {loads[1]:.2f} after"
    )


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def paired_ratio(runs: Runs, num: str, den: str, key: str) -> Optional[float]:
    """Median over rounds of num/den within the same round (runs close in time share the noise)."""
    by_round = {r["round"]: r[key] for r in runs.get(den, [])}
    ratios = [r[key] / by_round[r["round"]] for r in runs.get(num, []) if r["round"] in by_round]
    return statistics.median(ratios) if ratios else None


def ratio_row(label: str, num: str, den: str, key: str, runs: Runs, target: Optional[tuple[str, float]]) -> str:
    """One row of a ratio table; ``target`` is (">=" or "<=", bound) or None for context."""
    wanted = "(context)" if target is None else f"{target[0]} {target[1]:.2f}"
    if not runs.get(num) or not runs.get(den):
        return f"| {label} | n/a | n/a | {wanted} | |"
    value = median_of(runs[num], key) / median_of(runs[den], key)
    paired = paired_ratio(runs, num, den, key)
    paired_text = "n/a" if paired is None else f"{paired:.2f}"
    verdict = ""
    if target is not None:
        ok = value >= target[1] if target[0] == ">=" else value <= target[1]
        verdict = "met" if ok else "**missed**"
    return f"| {label} | {value:.2f} | {paired_text} | {wanted} | {verdict} |"


RatioRows = Sequence[tuple[str, str, str, Optional[tuple[str, float]]]]  # (label, numerator, denominator, target)


def print_ratio_table(title: str, key: str, rows: RatioRows, runs: Runs) -> None:
    """A markdown table of the ratios of ``key`` between variants, one row each (see ratio_row)."""
    print(f"\n| {title} | of the medians | median of per-round ratios | target | verdict (of the medians) |")
    print("|---|---:|---:|---|---|")
    for label, num, den, target in rows:
        print(ratio_row(label, num, den, key, runs, target))


def save_json(path: str, started: datetime.datetime, args: argparse.Namespace, **figures: Any) -> None:
    payload = {
        "started": started.isoformat(),
        "calls": args.calls,
        "repeat": args.repeat,
        "python": platform.python_version(),
        "nproc": os.cpu_count(),
        **figures,
    }
    Path(path).write_text(json.dumps(payload, indent=2))
