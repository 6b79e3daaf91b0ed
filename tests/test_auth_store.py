"""FileTokenStore (issue #12.3): private file, refused shared directory, atomic replace,
one lock across threads and processes, tokens never in reprs or logs, and tokens that
survive a restart of the application."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import stat
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import run_workers
from oauthkit import World, follow

import mcp_sync
from mcp_sync.auth import FileTokenStore

pytestmark = pytest.mark.timeout(30)


def state(n: int, size: int = 10) -> dict[str, Any]:
    return {"client": {"client_id": f"c{n}"}, "tokens": {"https://r": {"access_token": f"tok-{n}-" + "x" * size}}}


def test_file_is_private_and_round_trips(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "sub" / "tokens.json")
    assert store.load("https://as") is None
    store.save("https://as", state(1))
    store.save("https://other", state(2))
    assert store.load("https://as") == state(1) and store.load("https://other") == state(2)
    assert stat.S_IMODE(os.stat(tmp_path / "sub" / "tokens.json").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "sub").st_mode) == 0o700  # created private
    assert "tok-" not in repr(store)


def test_loose_file_mode_is_tightened_on_save(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"version": 1, "issuers": {}}))
    path.chmod(0o644)
    FileTokenStore(path).save("https://as", state(1))
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o1777])
def test_group_or_world_writable_directory_is_refused(tmp_path: Path, mode: int) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(mode)
    with pytest.raises(PermissionError, match="writable by group or others"):
        FileTokenStore(shared / "tokens.json")
    assert not list(shared.iterdir())


def test_a_failed_write_leaves_the_old_file_and_no_debris(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    store.save("https://as", state(1))

    def broken_dump(obj: Any, file: Any) -> None:
        file.write('{"version": 1, "issuers": {"half')  # then the disk fills up
        raise OSError("No space left on device")

    monkeypatch.setattr(json, "dump", broken_dump)
    with pytest.raises(OSError):
        store.save("https://as", state(2))
    monkeypatch.undo()
    assert store.load("https://as") == state(1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tokens.json", "tokens.json.lock"]


def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    """Atomic replace: a reader with no lock at all (another tool, a backup) reads whole files only."""
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    store.save("https://as", state(0, 50_000))
    stop = threading.Event()
    bad: list[str] = []

    def read_raw() -> None:
        while not stop.is_set():
            try:
                json.loads(path.read_text())
            except ValueError as exc:
                bad.append(str(exc))

    reader = threading.Thread(target=read_raw)
    reader.start()
    try:
        for n in range(60):
            store.save("https://as", state(n, 50_000))
    finally:
        stop.set()
        reader.join(10)
    assert not bad


def test_threads_lose_no_update(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")

    def writer(t: int) -> None:
        for n in range(15):
            store.save(f"https://as-{t}-{n}", state(n))

    run_workers(writer, [(t,) for t in range(8)], timeout=20)
    issuers = json.loads((tmp_path / "tokens.json").read_text())["issuers"]
    assert len(issuers) == 8 * 15


def _process_writer(path: str, worker: int, count: int) -> None:
    store = FileTokenStore(path)
    for n in range(count):
        store.save(f"https://as-{worker}-{n}", state(n))


def test_processes_lose_no_update(tmp_path: Path) -> None:
    """Each save reads, changes and replaces the whole file: without the cross-process lock,
    concurrent processes overwrite each other's entries."""
    path = str(tmp_path / "tokens.json")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_process_writer, args=(path, w, 25)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(20)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    assert len(json.loads(Path(path).read_text())["issuers"]) == 4 * 25


def _process_updater(path: str, worker: int, count: int) -> None:
    store = FileTokenStore(path)
    for n in range(count):
        resource = f"https://mcp-{worker}/{n}"

        def add(state: dict[str, Any], resource: str = resource) -> dict[str, Any]:
            state.setdefault("tokens", {})[resource] = {"access_token": "t"}
            return state

        store.update("https://one-issuer", add)


def test_processes_updating_one_issuer_lose_no_resource(tmp_path: Path) -> None:
    """What OAuth does when tokens for several servers of one authorization server are saved at
    once by several processes: a read-change-write per save, one step under the file lock."""
    path = str(tmp_path / "tokens.json")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_process_updater, args=(path, w, 20)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(20)
    assert [proc.exitcode for proc in procs] == [0, 0, 0, 0]
    assert len(FileTokenStore(path).load("https://one-issuer")["tokens"]) == 4 * 20  # type: ignore[index]


# -- with OAuth ------------------------------------------------------------------------------------


def test_tokens_survive_a_restart_and_never_show(
    world: World, tmp_path: Path, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    caplog.set_level(logging.DEBUG)
    path = tmp_path / "tokens.json"
    first = mcp_sync.OAuth(on_authorize=follow, token_store=mcp_sync.FileTokenStore(path))
    with mcp_sync.Client.http(world.rs.url, auth=first, mode="modern") as client:
        client.call_tool("echo", {})
        shown = repr(first) + repr(first.token_store) + repr(client)
    # a new process, in effect: a new OAuth and store on the same file, no on_authorize at all
    second = mcp_sync.OAuth(token_store=mcp_sync.FileTokenStore(path))
    with mcp_sync.Client.http(world.rs.url, auth=second, mode="modern") as client:
        client.call_tool("echo", {})
    assert len(world.calls("authorize")) == 1 and len(world.calls("token")) == 1
    saved = json.loads(path.read_text())["issuers"][world.issuer]
    token = saved["tokens"][world.rs.url]["access_token"]
    assert token.startswith("at-")
    for secret in (token, saved["tokens"][world.rs.url]["refresh_token"]):
        assert secret not in caplog.text and secret not in shown


def test_a_hung_lock_holder_is_waited_for_with_a_bound(tmp_path: Path) -> None:
    """Another process holds the lock file and never lets go (hung, or stopped): a load or save gives
    up after lock_timeout with a TimeoutError naming the lock, and works again once the holder is gone."""
    import subprocess
    import sys
    import time

    path = tmp_path / "tokens.json"
    FileTokenStore(path).save("https://as", state(1))
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(path) + '.lock'!r}, os.O_RDWR | os.O_CREAT, 0o600)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('locked', flush=True)\ntime.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        store = FileTokenStore(path, lock_timeout=0.5)
        started = time.monotonic()
        with pytest.raises(TimeoutError, match=r"tokens\.json\.lock is held by another process"):
            store.load("https://as")
        assert 0.45 < time.monotonic() - started < 3
        with pytest.raises(TimeoutError):
            store.save("https://as", state(2))
    finally:
        holder.kill()
        holder.wait(10)
        if holder.stdout is not None:
            holder.stdout.close()
    assert store.load("https://as") == state(1)  # the failed save changed nothing; the lock is free again
    store.save("https://as", state(2))
    assert store.load("https://as") == state(2)
    with pytest.raises(ValueError, match="lock_timeout"):
        FileTokenStore(path, lock_timeout=0)


# -- issue 17.10: the lock file is not followed through a symlink; a loose token file is fixed ----


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="POSIX only")
@pytest.mark.parametrize("dangling", [False, True])
def test_a_symlinked_lock_file_is_refused(tmp_path: Path, dangling: bool) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    victim = tmp_path / "elsewhere"
    if not dangling:
        victim.write_text("not yours")
    (tmp_path / "tokens.json.lock").symlink_to(victim)
    with pytest.raises(PermissionError, match="symbolic link"):
        store.load("https://as")
    with pytest.raises(PermissionError, match="symbolic link"):
        store.save("https://as", state(1))
    if dangling:
        assert not victim.exists()  # never created through the link
    else:
        assert victim.read_text() == "not yours" and stat.S_IMODE(victim.stat().st_mode) != 0
    assert not (tmp_path / "tokens.json").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX only")
def test_a_lock_file_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    os.mkfifo(tmp_path / "tokens.json.lock", 0o600)
    with pytest.raises(PermissionError, match="not a regular file"):
        store.load("https://as")


@pytest.mark.skipif(os.name != "posix", reason="POSIX modes")
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660], ids=oct)
def test_a_token_file_others_may_read_is_loaded_with_a_warning_and_fixed(
    tmp_path: Path, mode: int, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    FileTokenStore(path).save("https://as", state(1))
    os.chmod(path, mode)
    with caplog.at_level(logging.WARNING, logger="mcp_sync.auth"):
        assert FileTokenStore(path).load("https://as") == state(1)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (record,) = [r for r in caplog.records if "readable by group or others" in r.getMessage()]
    assert record.levelno == logging.WARNING and f"{mode:o}" in record.getMessage()
    assert "tok-" not in caplog.text  # the warning names the file, never what is in it
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mcp_sync.auth"):
        FileTokenStore(path).load("https://as")
    assert not caplog.records  # once fixed, nothing more to say
