"""FileTokenStore when things are not as they should be: a thread holding the store too long, a
lock path that cannot be opened, a file that is not a token store (never overwritten), a loose
token file whose mode cannot be fixed, a temporary file removed during a save. Each ends in a
clear error or warning, and what is on disk stays as it was."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import in_thread

from mcp_sync.auth import FileTokenStore

pytestmark = pytest.mark.timeout(30)

ISSUER = "https://as.example"
STATE = {"client": {"client_id": "c1"}, "tokens": {"https://r": {"access_token": "tok-secret"}}}


def test_a_thread_holding_the_store_too_long_times_the_others_out(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json", lock_timeout=0.3)
    inside, release = threading.Event(), threading.Event()

    def slow(state: dict[str, Any]) -> dict[str, Any]:  # an update whose change takes its time
        inside.set()
        release.wait(10)
        return STATE

    holder, outcome = in_thread(lambda: store.update(ISSUER, slow))
    try:
        assert inside.wait(10)
        with pytest.raises(TimeoutError, match=r"another thread held the token store for over 0\.3 s"):
            store.load(ISSUER)
    finally:
        release.set()
        holder.join(10)
    assert outcome["value"] == STATE and store.load(ISSUER) == STATE  # the holder finished its update


def test_a_lock_path_that_cannot_be_opened_is_an_error(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    (tmp_path / "tokens.json.lock").mkdir()  # a directory: opening it for writing fails (EISDIR)
    with pytest.raises(IsADirectoryError) as caught:
        store.save(ISSUER, STATE)
    assert caught.value.errno == errno.EISDIR and caught.value.filename == f"{tmp_path / 'tokens.json'}.lock"
    assert not (tmp_path / "tokens.json").exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"version": 1, "issuers": {"https://as.exa', "invalid JSON"),
        ('{"version": 1}', "no 'issuers' object"),
        ('["https://as.example"]', "no 'issuers' object"),
    ],
    ids=["truncated", "no-issuers", "a-list"],
)
def test_a_file_that_is_not_a_token_store_is_refused_and_kept(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    path.chmod(0o600)
    store = FileTokenStore(path)
    with pytest.raises(ValueError, match=f"is not a token store \\({message}\\)"):
        store.load(ISSUER)
    with pytest.raises(ValueError, match="is not a token store"):
        store.save(ISSUER, STATE)  # never replaced by a fresh store: it may be someone else's file
    assert path.read_text() == content


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
def test_a_loose_token_file_that_cannot_be_fixed_is_loaded_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """As with a file owned by another user (a chmod refused): the tokens are still loaded, and
    the warning says the file stays readable by others and why."""
    path = tmp_path / "tokens.json"
    FileTokenStore(path).save(ISSUER, STATE)
    path.chmod(0o644)

    def refused(fd: int, mode: int) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "fchmod", refused)
    with caplog.at_level(logging.WARNING, logger="mcp_sync.auth"):
        assert FileTokenStore(path).load(ISSUER) == STATE
    monkeypatch.undo()
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and record.getMessage() == (
        f"mcp_sync: {path} is readable by group or others (mode 644), not fixable: Operation not permitted"
    )
    assert "tok-secret" not in caplog.text and stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_temporary_file_removed_during_a_save_fails_the_save_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cleanup job removing the temporary file before it replaces the store: the save fails
    with that error (not the cleanup's own), and the store keeps what it had."""
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    store.save(ISSUER, STATE)
    replace = os.replace

    def swept_first(src: str, dst: Any) -> None:
        os.unlink(src)  # the sweep
        replace(src, dst)

    monkeypatch.setattr(os, "replace", swept_first)
    with pytest.raises(FileNotFoundError) as caught:
        store.save(ISSUER, {"client": {"client_id": "c2"}})
    monkeypatch.undo()
    assert str(caught.value.filename).startswith(str(tmp_path / ".tokens.json."))
    assert json.loads(path.read_text())["issuers"] == {ISSUER: STATE}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.json", "tokens.json.lock"]
