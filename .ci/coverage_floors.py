"""Fail when the combined coverage of mcp_sync/ is below the floors (#22.9).

Run after ``coverage combine``: ``python .ci/coverage_floors.py LINES BRANCHES``. The
floors are percentages; coverage's own ``--fail-under`` checks one combined figure only,
so lines and branches are checked here separately, from ``coverage json``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main() -> int:
    line_floor, branch_floor = float(sys.argv[1]), float(sys.argv[2])
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "coverage.json"
        subprocess.run([sys.executable, "-m", "coverage", "json", "-q", "-o", str(out)], check=True)
        totals = json.loads(out.read_text())["totals"]
    lines = 100.0 * totals["covered_lines"] / max(totals["num_statements"], 1)
    branches = 100.0 * totals["covered_branches"] / max(totals["num_branches"], 1)
    print(f"coverage of mcp_sync/: lines {lines:.2f}% (floor {line_floor}%), "
          f"branches {branches:.2f}% (floor {branch_floor}%)")
    failed = []
    if lines < line_floor:
        failed.append(f"lines {lines:.2f}% < {line_floor}%")
    if branches < branch_floor:
        failed.append(f"branches {branches:.2f}% < {branch_floor}%")
    if failed:
        print("ERROR: coverage below its floor: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
