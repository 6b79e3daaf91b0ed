"""Helpers for the tests of the ``mcp-sync`` command line (tests/test_cli*.py): the CLI run as a
real subprocess (``python -m mcp_sync``), to its end or while a test drives it with signals."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any, Mapping

from conftest import PY, ROOT, fault_args

__all__ = ["RunningCli", "cli_env", "fault_command", "run_cli", "run_cli_on_a_terminal"]


def cli_env(changes: Mapping[str, str | None] | None = None) -> dict[str, str]:
    """This process's environment for the CLI: ``PYTHONPATH`` at this checkout and ``COLUMNS=80``,
    then ``changes`` (a value of None removes that variable)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    for name, value in (changes or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run_cli(*args: str, env: Mapping[str, str | None] | None = None, timeout: float = 30
            ) -> subprocess.CompletedProcess[str]:
    """Run ``mcp-sync ARGS`` to its end; ``env`` changes the environment as :func:`cli_env` does."""
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=cli_env(env))


def run_cli_on_a_terminal(*args: str, timeout: float = 30) -> tuple[int, str]:
    """Run ``mcp-sync ARGS`` with stdout and stderr on one pseudo-terminal (as in a shell window);
    returns its exit status and everything it wrote there (a terminal turns "\\n" into "\\r\\n")."""
    import pty  # POSIX only

    main, child = pty.openpty()
    process = subprocess.Popen([PY, "-m", "mcp_sync", *args], stdout=child, stderr=child, stdin=subprocess.DEVNULL,
                               cwd=ROOT, env=cli_env())
    os.close(child)
    seen = bytearray()
    try:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        status = process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(main)
    return status, seen.decode("utf-8", "replace")


def fault_command(folder: Path, script: Mapping[str, Any] | None = None, *flags: str) -> str:
    """The command line (one string, as ``mcp-sync`` takes it) of tests/servers/fault_server.py in
    era legacy with ``flags``, answering as ``script`` says (written to a file in ``folder``)."""
    extra = list(flags)
    if script is not None:
        path = folder / f"script-{len(list(folder.glob('script-*.json')))}.json"
        path.write_text(json.dumps(script))
        extra += ["--script", str(path)]
    return shlex.join([PY, *fault_args("--era", "legacy", *extra)])


class RunningCli:
    """``mcp-sync ARGS`` running: its stdout and stderr are read on threads, line by line, so that
    a test can wait for a line (a server's ``[name] ...`` stderr line, a progress line) before it
    acts. Used as a context manager: the process is killed at the end if it still runs."""

    def __init__(self, *args: str, env: Mapping[str, str | None] | None = None) -> None:
        self.process = subprocess.Popen([PY, "-m", "mcp_sync", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, cwd=ROOT, env=cli_env(env))
        self._lock = threading.Condition()
        self._out: list[str] = []
        self._err: list[str] = []
        self._readers = [threading.Thread(target=self._read, args=(pipe, lines), daemon=True)
                         for pipe, lines in ((self.process.stdout, self._out), (self.process.stderr, self._err))]
        for reader in self._readers:
            reader.start()

    def _read(self, pipe: object, lines: list[str]) -> None:
        for line in pipe:  # type: ignore[attr-defined]
            with self._lock:
                lines.append(line)
                self._lock.notify_all()
        with self._lock:
            lines.append("")  # the end of that stream
            self._lock.notify_all()

    def wait_for(self, text: str, timeout: float = 30) -> str:
        """The first stderr line holding ``text``, waiting for it up to ``timeout`` seconds; an
        AssertionError showing the stderr so far when it does not come (or the CLI ended)."""
        with self._lock:
            found = self._lock.wait_for(
                lambda: next((line for line in self._err if text in line), None) or "" in self._err, timeout)
            assert isinstance(found, str) and text in found, f"no {text!r} on stderr: {''.join(self._err)!r}"
            return found

    def interrupt(self) -> None:
        """Ctrl-C: SIGINT to the CLI."""
        self.process.send_signal(signal.SIGINT)

    def finish(self, timeout: float = 30) -> tuple[int, str, str]:
        """Wait for the end: (exit status, stdout, stderr)."""
        status = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        with self._lock:
            return status, "".join(self._out), "".join(self._err)

    def __enter__(self) -> RunningCli:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)
        for reader in self._readers:
            reader.join(10)
