"""``mcp-sync``'s stdout and stderr when they are not a plain open pipe (#10 CLI, #18.13).

A closed stdout (``mcp-sync ... >&-``) or stderr (``2>&-``, a daemon's) is None in Python: the
command still runs and what would go there is dropped, as ``print()`` drops it (a closed stderr
made even a successful call exit 1, and a closed stdout printed a traceback). With stdout
buffered (no ``PYTHONUNBUFFERED``) a reader that stops early still ends the command quietly with
141; ``main()`` run in-process on a stream that is not a file does the same, and writes to any
object with ``write()``. An unknown option is bad usage.
"""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from clikit import cli_env, fault_command, run_cli

from conftest import PY, ROOT

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(sys.platform == "win32", reason="closes descriptors with a POSIX shell")]
DEMO = f"{PY} {ROOT / 'examples' / 'demo_server.py'}"


def _with_closed(redirect: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``mcp-sync ARGS`` with a file descriptor closed by the shell (``>&-`` or ``2>&-``)."""
    return subprocess.run(["sh", "-c", f'exec "$0" "$@" {redirect}', PY, "-m", "mcp_sync", *args],
                          capture_output=True, text=True, timeout=30, cwd=ROOT, env=cli_env())


def test_a_closed_stderr_does_not_fail_the_command() -> None:
    echoed = _with_closed("2>&-", "call", DEMO, "echo", "text=hi")
    assert (echoed.returncode, echoed.stdout) == (0, "hi\n")
    counted = _with_closed("2>&-", "call", DEMO, "countdown", "n=3")  # progress lines go nowhere
    assert (counted.returncode, counted.stdout) == (0, "liftoff\n")
    failed = _with_closed("2>&-", "call", DEMO, "nope")  # the status still tells
    assert (failed.returncode, failed.stdout) == (1, "")


def test_a_closed_stdout_runs_the_command_and_drops_its_output() -> None:
    listed = _with_closed(">&-", "tools", DEMO)
    assert (listed.returncode, listed.stderr) == (0, "")
    failed = _with_closed(">&-", "call", DEMO, "nope")
    assert failed.returncode == 1 and failed.stderr.startswith("mcp-sync: error: ServerError"), failed.stderr
    assert failed.stderr.count("\n") == 1 and "Traceback" not in failed.stderr


def test_a_reader_that_stops_early_ends_a_buffered_command_quietly(tmp_path: object) -> None:
    """``mcp-sync call ... | head -1`` with stdout buffered (the default without ``python -u``);
    the answer (2 MiB) is far more than a pipe holds."""
    server = fault_command(tmp_path, None, "--behaviour", "huge-line")  # type: ignore[arg-type]
    process = subprocess.Popen([PY, "-m", "mcp_sync", "call", server, "echo", "text=x"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=ROOT, env=cli_env({"PYTHONUNBUFFERED": None}))
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.read(100)
    process.stdout.close()  # what head does
    status = process.wait(30)
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert first and status == 141, (status, stderr)
    assert "Error" not in stderr and "Traceback" not in stderr, stderr


def test_buffered_output_is_complete() -> None:
    result = run_cli("tools", DEMO, env={"PYTHONUNBUFFERED": None})
    assert result.returncode == 0, result.stderr
    assert [line.split("(")[0] for line in result.stdout.splitlines()] == ["echo", "add", "countdown"]


class _ClosedPipe(io.StringIO):
    """A stdout whose reader has gone, that is no file (a caller's own stream)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def test_main_in_process_on_a_closed_stream(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """``main()`` returns 141 and raises nothing when its stdout is a stream (not a file) whose
    reader is gone: there is no descriptor to silence, and the server is closed."""
    from mcp_sync._cli import main

    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert main(["call", DEMO, "echo", "text=hi"]) == 141
    assert sys.stderr.getvalue() == ""


class _Writer:
    """The least a stream can be: write() and flush(), no isatty() (an application's own writer)."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass


def test_main_in_process_on_streams_without_isatty(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """Not a terminal: results as sent, no progress bar."""
    from mcp_sync._cli import main

    out, err = _Writer(), _Writer()
    monkeypatch.setattr(sys, "stdout", out)
    monkeypatch.setattr(sys, "stderr", err)
    assert main(["call", DEMO, "countdown", "n=2"]) == 0
    assert out.text == "liftoff\n" and err.text == "", err.text


def test_an_unknown_option_is_bad_usage() -> None:
    result = run_cli("tools", DEMO, "--colour")
    assert (result.returncode, result.stdout) == (2, "")
    assert "unrecognized arguments: --colour" in result.stderr
