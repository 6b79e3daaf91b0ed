"""The package's own namespace: ``mcp_sync.auth`` and ``mcp_sync.llm`` are modules loaded on first
use (not by ``import mcp_sync``); a name it does not have is an AttributeError naming it (so
``hasattr`` and ``from mcp_sync import x`` behave); importing ``mcp_sync.__main__`` does not run
the command line (only ``python -m mcp_sync`` does)."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest

import mcp_sync

from conftest import ROOT

FIRST_USE = """
import sys
import mcp_sync
print(sorted(name for name in ("mcp_sync.auth", "mcp_sync.llm") if name in sys.modules))
print(mcp_sync.auth.__name__, mcp_sync.llm.__name__, mcp_sync.auth.OAuth is mcp_sync.OAuth)
"""


def test_auth_and_llm_load_on_first_use() -> None:
    """In a fresh interpreter (here they are loaded already, by other tests)."""
    result = subprocess.run([sys.executable, "-c", FIRST_USE], capture_output=True, text=True, timeout=60, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (result.returncode, result.stdout) == (0, "[]\nmcp_sync.auth mcp_sync.llm True\n"), result.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match=r"^module 'mcp_sync' has no attribute 'Clinet'$"):
        mcp_sync.Clinet  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(mcp_sync, "Clinet")
    with pytest.raises(ImportError, match="cannot import name 'Clinet'"):
        from mcp_sync import Clinet  # type: ignore[attr-defined]  # noqa: F401


def test_importing_main_does_not_run_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    module = importlib.import_module("mcp_sync.__main__")  # would exit (usage, status 2) if it ran
    assert module.entry_point is mcp_sync._cli.entry_point
    assert capsys.readouterr() == ("", "")
