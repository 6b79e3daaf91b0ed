"""The install instructions name this project (issue #18.6).

``pip install mcp-sync`` installs an unrelated project that holds that name on PyPI (pip treats
``mcp_sync`` and ``mcp.sync`` as the same name). This project is distributed as
``mcp-sync-client``, imports as ``mcp_sync`` and installs the ``mcp-sync`` command; nothing
users read may tell them to install the other one."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: ``pip install`` (options and quotes allowed) then mcp-sync / mcp_sync / mcp.sync as a whole
#: name: followed by an extra ``[jwt]``, a version, a quote, a space or the end, not by more name.
WRONG_INSTALL = re.compile(r"pip3?\s+install\s+(?:-\S+\s+)*['\"]?mcp[-_.]sync(?![-_.\w])", re.IGNORECASE)

#: User-facing text in the package that is not this change's to edit (auth files): the lead's
#: change. Listed so the rest stays checked; expected to fail until those hints are fixed.
PENDING: set[str] = set()  # files still owing a fix (none)


def _text_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "mkdocs.yml", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.ipynb"))
    files += sorted((ROOT / "mcp_sync").rglob("*.py"))
    return [f for f in files if f.is_file()]


def test_the_pattern_finds_what_it_must() -> None:
    for bad in [
        "pip install mcp-sync",
        "pip install mcp-sync\n",
        "`pip install mcp-sync`",
        "pip install 'mcp-sync[jwt]'",
        "pip install -U mcp_sync==0.1",
        'pip3 install "mcp.sync"',
    ]:
        assert WRONG_INSTALL.search(bad), bad
    for good in ["pip install mcp-sync-client", "pip install -e '.[jwt]'", "pip install mcp-syncer", "pip install ."]:
        assert not WRONG_INSTALL.search(good), good


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(p, id=str(p.relative_to(ROOT)), marks=pytest.mark.xfail(reason="auth hint, lead's", strict=False))
        if str(p.relative_to(ROOT)) in PENDING
        else pytest.param(p, id=str(p.relative_to(ROOT)))
        for p in _text_files()
    ],
)
def test_nothing_tells_users_to_install_the_other_project(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    found = [text[max(0, m.start() - 40) : m.end() + 10] for m in WRONG_INSTALL.finditer(text)]
    assert not found, f"{path.relative_to(ROOT)} says to install the unrelated PyPI project: {found}"


def test_the_distribution_name_is_ours_and_the_import_and_command_names_stay() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg", encoding="utf-8")
    assert config["metadata"]["name"] == "mcp-sync-client"
    scripts = [line.strip() for line in config["options.entry_points"]["console_scripts"].splitlines() if line.strip()]
    assert "mcp-sync = mcp_sync._cli:entry_point" in scripts
    assert "mcp_sync" in config["options.packages.find"]["include"]


def test_the_install_page_gives_the_exact_install_line() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    assert "pip install ." in index and "mcp-sync-client" in index
