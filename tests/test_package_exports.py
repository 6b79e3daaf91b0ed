"""The package's own namespace: a name it does not have is an AttributeError naming it (so
``hasattr`` and ``from mcp_sync import x`` behave), and importing ``mcp_sync.__main__`` does not
run the command line (only ``python -m mcp_sync`` does)."""

from __future__ import annotations

import importlib

import pytest

import mcp_sync


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
