"""A :class:`~mcp_sync.auth.TokenStore` in a JSON file, private to the user, shared safely
by the threads of a process and by processes."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: the thread lock only (documented)
    fcntl = None  # type: ignore[assignment]

FORMAT_VERSION = 1
PRIVATE = 0o600  # what the token file and its lock file are created with, and what a loose file is set to
#: The lock file is opened without following a symbolic link: whoever planted one could make
#: every flow create or lock a file of their choosing (0 where the platform has no such flag).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

log = logging.getLogger("mcp_sync.auth")


class FileTokenStore:
    """Keeps OAuth registrations and tokens in a JSON file, so they survive a restart.

    Keyed like the in-memory store: one entry per authorization server issuer,
    holding the client registration and the tokens per resource. The file is
    created with mode 0600 and replaced atomically on every save (a reader
    never sees half a file, a crash never leaves one); a directory that group
    or others may write to is refused (they could swap the file). One lock
    serializes the threads of this process (``threading.Lock``) and, through
    ``fcntl.flock`` on ``<path>.lock``, every process using the same path (on
    POSIX; on Windows only the threads). Waiting for the lock is bounded by
    ``lock_timeout`` seconds: a process that hangs (or is stopped) while holding
    it makes the others raise ``TimeoutError`` naming the lock file, instead of
    waiting for ever. Tokens never appear in ``repr`` or logs.

    The lock file is opened without following a symbolic link (``O_NOFOLLOW``):
    a symlink (or anything but a regular file) at ``<path>.lock`` is refused
    with ``PermissionError``. A token file that group or others may read (left
    by an older tool, or a ``cp`` that did not keep the mode) is still loaded,
    with a warning on the ``mcp_sync.auth`` logger, and its mode set to 0600.

    Example::

        store = mcp_sync.FileTokenStore("~/.config/my-app/mcp-tokens.json")
        auth = mcp_sync.OAuth(token_store=store, on_authorize=mcp_sync.auth.browser_authorize)
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> None:
        if isinstance(lock_timeout, bool) or not isinstance(lock_timeout, (int, float)) or not lock_timeout > 0:
            raise ValueError(f"lock_timeout must be a positive number of seconds, not {lock_timeout!r}")
        self.path = Path(path).expanduser().absolute()
        self.lock_timeout = float(lock_timeout)
        self._lock = threading.Lock()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._check_directory()

    def __repr__(self) -> str:
        return f"<FileTokenStore {str(self.path)!r}>"

    def _check_directory(self) -> None:
        mode = self.path.parent.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise PermissionError(
                f"refusing to keep tokens in {self.path.parent}: the directory is writable by group or others "
                f"(mode {stat.S_IMODE(mode):o}); use a private directory (chmod go-w)"
            )

    @contextmanager
    def _locked(self) -> Iterator[None]:
        deadline = time.monotonic() + self.lock_timeout
        if not self._lock.acquire(timeout=self.lock_timeout):
            raise TimeoutError(f"{self.path}: another thread held the token store for over {self.lock_timeout} s")
        try:
            if fcntl is None:  # pragma: no cover - Windows (no fcntl): the thread lock only
                yield
                return
            fd = self._open_lock()
            try:
                self._flock(fd, deadline)
                yield
            finally:
                os.close(fd)  # closing releases the flock
        finally:
            self._lock.release()

    def _open_lock(self) -> int:
        """The lock file, opened (created 0600) without following a symbolic link."""
        lock = f"{self.path}.lock"
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | _NOFOLLOW, PRIVATE)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink (a dangling one too)
                raise PermissionError(
                    f"refusing the token store's lock file {lock}: it is a symbolic link; remove it"
                ) from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise PermissionError(f"refusing the token store's lock file {lock}: it is not a regular file; remove it")
        return fd

    def _flock(self, fd: int, deadline: float) -> None:
        """Take the lock file's lock, polling (flock itself cannot wait with a bound) until ``deadline``."""
        pause = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"{self.path}.lock is held by another process for over {self.lock_timeout} s "
                        "(a hung or stopped program using the same token store?)"
                    ) from None
                time.sleep(min(pause, remaining))
                pause = min(pause * 2, 0.05)

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as file:
                self._tighten(file.fileno())
                data = json.load(file)
        except FileNotFoundError:
            return {}
        except ValueError:
            raise ValueError(f"{self.path} is not a token store (invalid JSON)") from None
        issuers = data.get("issuers") if isinstance(data, dict) else None
        if not isinstance(issuers, dict):
            raise ValueError(f"{self.path} is not a token store (no 'issuers' object)")
        return issuers

    def _tighten(self, fd: int) -> None:
        """Warn about, and fix, a token file that group or others may read or write."""
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if os.name != "posix" or not mode & 0o077:
            return
        try:
            os.fchmod(fd, PRIVATE)
        except OSError as exc:
            detail = exc.strerror or exc
            log.warning(
                "mcp_sync: %s is readable by group or others (mode %o), not fixable: %s", self.path, mode, detail
            )
            return
        log.warning("mcp_sync: %s was readable by group or others (mode %o); set it to 0600", self.path, mode)

    def _write(self, issuers: dict[str, Any]) -> None:
        self._check_directory()
        # mkstemp creates the file 0600; os.replace is atomic on POSIX and Windows
        fd, temp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump({"version": FORMAT_VERSION, "issuers": issuers}, file)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, self.path)
        except BaseException:
            try:
                os.unlink(temp)
            except OSError:
                pass
            raise

    def load(self, issuer: str) -> dict[str, Any] | None:
        """What is stored for ``issuer`` (a fresh copy), or None."""
        with self._locked():
            state = self._read().get(issuer)
        return state if isinstance(state, dict) else None

    def _issuers(self) -> list[str]:
        """The issuers with an entry (for a logout that could not find its authorization server)."""
        with self._locked():
            return list(self._read())

    def save(self, issuer: str, state: dict[str, Any]) -> None:
        """Store ``state`` for ``issuer``, keeping every other issuer's entry as it is on disk."""
        self.update(issuer, lambda _: state)

    def update(self, issuer: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        """Read, ``change`` and write back the entry of ``issuer`` under the lock, as one step:
        another process saving meanwhile (say, tokens for another resource) loses nothing."""
        with self._locked():
            issuers = self._read()
            current = issuers.get(issuer)
            state = change(current if isinstance(current, dict) else {})
            issuers[issuer] = json.loads(json.dumps(state))  # a copy, and only JSON gets in
            self._write(issuers)
        return state
