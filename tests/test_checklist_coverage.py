"""Issue #21: every client MUST and SHOULD of the checklist has a test that names it,
or is the application's with a reason (tests/checklist_coverage.py lists them)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _load():
    spec = importlib.util.spec_from_file_location("checklist_coverage", TESTS / "checklist_coverage.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cov = _load()


def test_the_ids_are_read_never_skipped() -> None:
    """The checklist beside the clone when it is there, else the committed copy: never zero IDs."""
    ids, source = cov.checklist_ids()
    assert len(ids) >= 129 and len(set(ids)) == len(ids), source
    copy, _ = cov.checklist_ids(TESTS / "no-such-checklist.md")
    if cov.CHECKLIST.is_file():
        assert copy == ids, "tests/checklist_ids.txt differs from the checklist: regenerate it (see its header)"
    assert {"J1", "LG16", "X6", "A11"} <= set(copy)


def test_every_id_is_tested_or_the_applications() -> None:
    result = cov.coverage()
    assert not result.missing(), f"checklist IDs no test names: {result.missing()}"
    for item, reason in cov.APPLICATION.items():
        assert item in result.ids, f"APPLICATION names {item}, which is not a checklist ID"
        assert len(reason.split()) >= 8, f"{item}: give a reason in a sentence"


def test_the_scanner_finds_ids_where_tests_name_them(tmp_path: Path) -> None:
    """A scanner that found nothing would pass the test above vacuously."""
    (tmp_path / "test_x.py").write_text(
        "# -- section (Q1) ---\n"
        "def test_j1_ids() -> None:\n"
        '    """J2/J3: notifications; H7-H9 ranges."""\n'
        "    x = 1  # K4: a comment inside\n"
        "\n"
        "# LG16: the block above\n"
        "@decorator\n"
        "def test_other() -> None:\n"
        "    pass\n"
        "def helper_X5() -> None:  # X5: not a test\n"
        "    pass\n"
        '"""E2E, 0xA3, v2, io.modelcontextprotocol/J4 name nothing"""\n'
        "def test_plain() -> None:\n"
        '    """Mentions nothing like E2E or sha256."""\n'
        "@pytest.mark.xfail(strict=True, reason='a known gap')\n"
        "def test_w1_gap() -> None:\n"
        "    pass\n",
        encoding="utf-8",
    )
    found = cov.tests_in_file(tmp_path / "test_x.py")
    assert found["test_j1_ids"] == {"J1", "J2", "J3", "H7", "H8", "H9", "K4", "Q1"}
    assert found["test_other"] == {"LG16", "Q1"}
    assert found["test_plain"] == {"Q1"}
    result = cov.coverage(tmp_path, TESTS / "absent.md")
    assert result.tests["J1"] == [f"{tmp_path.name}/test_x.py::test_j1_ids"]
    assert "X5" in result.missing() and "J1" not in result.missing()
    assert result.status("W1") == "xfail" and result.status("J1") == "tested"


@pytest.mark.parametrize("argv, code", [([], 0), (["--missing"], 1)])
def test_the_script_exits_1_on_missing_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          argv: list[str], code: int) -> None:
    assert cov.main(argv, tmp_path) == code  # no tests at all: every ID but the application's is missing
    assert "MISSING" in capsys.readouterr().out
