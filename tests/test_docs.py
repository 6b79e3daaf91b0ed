"""The docs site (#10 Docs): every runnable code block runs, and the site builds strictly.

A block is runnable when its first line is ``RUNNABLE`` (below); it runs from the
project root against examples/demo_server.py, with ``python`` on PATH being this
interpreter and this checkout's mcp_sync imported.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import mcp_sync

from conftest import ROOT

DOCS = ROOT / "docs"
RUNNABLE = "# (runs as is, from the project's root folder)"
FENCE = re.compile(r"^```(python|sh)\n(.*?)^```", re.M | re.S)
ENV = {
    **os.environ,
    "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    "PYTHONPATH": str(ROOT),
}


def runnable_blocks() -> list[tuple[str, str, str]]:
    """``(id, language, code)`` of every runnable block in docs/*.md."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for number, match in enumerate(FENCE.finditer(page.read_text(encoding="utf-8"))):
            language, code = match.groups()
            if code.startswith(RUNNABLE):
                found.append((f"{page.stem}-{number}", language, code))
    return found


BLOCKS = runnable_blocks()


def test_the_pages_have_runnable_blocks() -> None:
    """Guards the marker: a typo would silently turn every check below off."""
    pages = {block_id.rsplit("-", 1)[0] for block_id, _, _ in BLOCKS}
    assert len(BLOCKS) >= 12 and {"index", "schemas", "cli", "threads", "cancellation", "errors"} <= pages


@pytest.mark.timeout(60)
@pytest.mark.parametrize("language,code", [b[1:] for b in BLOCKS], ids=[b[0] for b in BLOCKS])
def test_runnable_block(language: str, code: str) -> None:
    command = [sys.executable, "-c", code] if language == "python" else ["bash", "-euo", "pipefail", "-c", code]
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=50)
    assert run.returncode == 0, f"stdout:\n{run.stdout}\nstderr:\n{run.stderr}"


@pytest.mark.timeout(120)
def test_site_builds_strictly_with_the_api_reference(tmp_path: Path) -> None:
    site = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                         capture_output=True, text=True, cwd=ROOT, env=ENV, timeout=110)
    assert run.returncode == 0, run.stdout + run.stderr
    reference = (site / "api" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in mcp_sync.__all__ if f'id="{name.lower()}"' not in reference]
    assert not missing
    assert "client.call_tool" in reference and "Example" in reference
