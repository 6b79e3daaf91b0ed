"""Python bytecodes executed per sequential ``call_tool("echo")``, by module and function.

Where a call's Python work goes, counted rather than timed: the same variants as
``bench_stdio.py`` (``mcp_sync``, ``mcp_sync-legacy``, ``engine``, ``raw-thread``) run under
``sys.settrace`` with opcode events on, in every thread (the reader threads included), once
with ``--small`` and once with ``--large`` timed calls; the difference divided by the
difference in calls is the per-call count, whatever the set-up cost. The counts do not move
from run to run (about +-1 with the threads' interleaving), unlike CPU time on a shared
machine, so they show what a change to the request path saves. They count Python only: the
work of C functions (json, locks, system calls) is not in them; callgrind's instruction counts
(bench/README.md) cover that.

Run (from the repository root; about a minute)::

    python bench/opcount.py
    python bench/opcount.py --variants mcp_sync,engine --top 40
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import threading
import uuid
from types import FrameType
from typing import Any, Callable, Optional

import bench_stdio  # bench/ is the script's folder: on sys.path
from _workers import TAG_VAR, sweep

VARIANTS = ("mcp_sync", "mcp_sync-legacy", "engine", "raw-thread")

#: Module -> the part of the request path it is (bench_stdio.py's floors are "floor").
LAYERS = {
    "_client.py": "facade",
    "_options.py": "facade",
    "_values.py": "_values (argument check, wire JSON encoding)",
    "_engine.py": "engine",
    "_threads.py": "engine",
    "models.py": "result model",
    "_schemas.py": "output-schema check",
    "_schema_subset.py": "output-schema check",
}

Counts = collections.Counter[str]


def layer_of(key: str) -> str:
    """The layer a ``path:function`` key belongs to."""
    path = key.rsplit(":", 1)[0]
    name = path.rsplit("/", 1)[-1]
    if "attrs generated" in path:
        return "result model"
    if "/_protocol/" in path:
        return "session layer"
    if "/transports/" in path:
        return "transport"
    if "/json/" in path or name == "bench_stdio.py":
        return "floor (json module, the loop)"
    return LAYERS.get(name, "other")


def count(variant: str, calls: int) -> Counts:
    """Bytecodes executed, by ``path:function``, while ``variant`` runs with ``calls`` timed calls."""
    counts: Counts = collections.Counter()

    def tracer(frame: FrameType, event: str, arg: Any) -> Optional[Callable[..., Any]]:
        frame.f_trace_opcodes = True
        key = f"{frame.f_code.co_filename}:{frame.f_code.co_name}"

        def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
            if event == "opcode":
                counts[key] += 1
            return local

        return local

    threading.settrace(tracer)
    sys.settrace(tracer)
    try:
        bench_stdio.RUNNERS[variant](calls)
    finally:
        sys.settrace(None)
        threading.settrace(None)  # type: ignore[arg-type]  # None turns it off
    return counts


def per_call(variant: str, small: int, large: int) -> dict[str, float]:
    count(variant, 1)  # imports and first-use work happen here, not in the runs compared
    low, high = count(variant, small), count(variant, large)
    return {key: (high[key] - low.get(key, 0)) / (large - small) for key in set(high) | set(low)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, from: " + ", ".join(VARIANTS))
    parser.add_argument("--small", type=int, default=50, help="timed calls in the first counted run")
    parser.add_argument("--large", type=int, default=250, help="timed calls in the second counted run")
    parser.add_argument("--top", type=int, default=25, help="functions listed per variant")
    args = parser.parse_args()
    os.environ.setdefault(TAG_VAR, uuid.uuid4().hex)
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        parser.error(f"unknown variants: {', '.join(unknown)}")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    try:
        results = {variant: per_call(variant, args.small, args.large) for variant in variants}
    finally:
        sweep()
    layers = sorted({layer_of(key) for figures in results.values() for key in figures})
    print("| bytecodes per call | " + " | ".join(variants) + " |")
    print("|---|" + "---:|" * len(variants))
    for layer in layers:
        cells = [sum(v for k, v in results[variant].items() if layer_of(k) == layer) for variant in variants]
        if all(abs(cell) < 0.5 for cell in cells):  # set-up code that differs by a stray line between runs
            continue
        print(f"| {layer} | " + " | ".join(f"{c:,.0f}" for c in cells) + " |")
    print("| **total** | " + " | ".join(f"**{sum(results[v].values()):,.0f}**" for v in variants) + " |")
    for variant in variants:
        print(f"\n{variant}: the {args.top} functions that execute the most bytecodes per call")
        ranked = sorted(results[variant].items(), key=lambda item: -item[1])[: args.top]
        for key, value in ranked:
            print(f"  {value:7.1f}  {layer_of(key):<30} {os.path.relpath(key, root) if key.startswith('/') else key}")


if __name__ == "__main__":
    main()
