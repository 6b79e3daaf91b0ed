"""Ctrl-C in ``mcp-sync`` (#10 CLI): a real SIGINT to the CLI process at each stage.

The first Ctrl-C cancels what runs and gives it a grace to wind down; another one leaves at
once; whenever it comes, the exit status is 130, nothing is printed as a failure of the server,
no traceback is shown, and no server process is left running (a Ctrl-C while the CLI closes a
server that ignores the end of its stdin left it running). A listing that is cancelled is not
reported as that server's failure, and a call whose tool lookup is cancelled is not sent.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clikit import RunningCli, fault_command
from helpers import process_gone, wait_until

from conftest import PY, SERVERS

pytestmark = [pytest.mark.timeout(60),
              pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to another process is POSIX")]
#: Starts, says so on stderr with its pid, and never answers (the CLI waits in connect()).
SILENT = [PY, str(SERVERS / "lifecycle_server.py"), "--silent", "--announce"]


def _server_pid(running: RunningCli) -> int:
    return int(running.wait_for("] started ").split()[-1])


def _interrupt_until_it_ends(running: RunningCli, seconds: float = 15) -> float:
    """Ctrl-C every 0.3 s until the CLI ends (the first one lands while it waits); returns how
    long that took from the first one."""
    started = time.monotonic()
    while time.monotonic() - started < seconds:
        running.interrupt()
        if wait_until(lambda: running.process.poll() is not None, 0.3):
            break
    return time.monotonic() - started


def test_a_second_ctrl_c_does_not_wait_out_the_grace() -> None:
    """The first Ctrl-C gives what runs (here a connect that never ends) 5 s to wind down; the
    next one leaves at once, and the server is still ended."""
    with RunningCli("tools", shlex.join(SILENT)) as running:
        pid = _server_pid(running)
        took = _interrupt_until_it_ends(running)
        status, stdout, stderr = running.finish()
    assert (status, stdout) == (130, ""), stderr
    assert took < 4.0, took  # the grace is 5 s; leaving takes a fraction of a second
    assert "Traceback" not in stderr and "error" not in stderr, stderr
    assert wait_until(lambda: process_gone(pid), 10)


def test_a_ctrl_c_while_closing_still_ends_the_server() -> None:
    """A server that does not exit at the end of its stdin needs a signal; a Ctrl-C during that
    wait interrupted the close, and the server was left running after the CLI had exited."""
    with RunningCli("tools", shlex.join([*SILENT, "--ignore-eof"])) as running:
        pid = _server_pid(running)
        try:
            running.interrupt()
            for _ in range(50):  # the first Ctrl-C starts the grace, one more the close: its stdin is closed
                try:
                    running.wait_for("] stdin closed", 0.3)
                    break
                except AssertionError:
                    assert running.process.poll() is None, "the CLI ended before closing the server"
                    running.interrupt()
            else:
                pytest.fail("the CLI did not close the server's stdin")
            running.interrupt()  # while the close waits for the server to exit
            running.interrupt()
            status, stdout, stderr = running.finish()
            assert (status, stdout) == (130, ""), stderr
            assert "Traceback" not in stderr, stderr
            assert wait_until(lambda: process_gone(pid), 10), "the server was left running"
        finally:
            if not process_gone(pid):
                os.kill(pid, signal.SIGKILL)


def _stuck_listing(tmp_path: Path) -> tuple[str, Path]:
    """A fault server that never answers tools/list, and the file logging what it received."""
    log = tmp_path / "received.jsonl"
    return fault_command(tmp_path, {"tools/list": [{}]}, "--log", str(log)), log


def _methods(log: Path) -> list[str]:
    return [json.loads(line).get("method") for line in log.read_text().splitlines() if line.strip()]


def test_ctrl_c_while_listing_every_server_of_a_config(tmp_path: Path) -> None:
    """``tools --config FILE``: the cancelled listing is not "server stuck failed", and the next
    server is not listed after it."""
    stuck, log = _stuck_listing(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "stuck": {"command": PY, "args": shlex.split(stuck)[1:]},
        "demo": {"command": PY, "args": [str(Path(__file__).parent.parent / "examples" / "demo_server.py")]},
    }}))
    with RunningCli("tools", "--config", str(config)) as running:
        assert wait_until(lambda: log.exists() and "tools/list" in _methods(log), 30)
        running.interrupt()
        status, stdout, stderr = running.finish()
    assert (status, stdout) == (130, ""), stderr
    assert "server stuck" not in stderr and "Traceback" not in stderr, stderr


def test_ctrl_c_while_a_call_looks_up_its_tool(tmp_path: Path) -> None:
    """``call`` lists the tools first (to read key=value by the schema): cancelled there, the call
    is not made anyway, unchecked."""
    stuck, log = _stuck_listing(tmp_path)
    with RunningCli("call", stuck, "echo", "text=x") as running:
        assert wait_until(lambda: log.exists() and "tools/list" in _methods(log), 30)
        running.interrupt()
        status, stdout, stderr = running.finish()
    assert (status, stdout) == (130, ""), stderr
    assert "tools/call" not in _methods(log)


def test_a_ctrl_c_outside_the_command_exits_130(monkeypatch: pytest.MonkeyPatch) -> None:
    """One that lands while the CLI starts or ends (outside the worker that runs the command)."""
    import mcp_sync._cli

    def interrupted(argv: object = None) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(mcp_sync._cli, "main", interrupted)
    monkeypatch.setattr(sys, "stdout", io.StringIO())  # a stream without reconfigure() is kept as it is
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    handler = signal.getsignal(signal.SIGINT)
    try:
        with pytest.raises(SystemExit) as exited:
            mcp_sync._cli.entry_point()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # for the teardown that follows
    finally:
        signal.signal(signal.SIGINT, handler)  # this test process keeps its Ctrl-C
    assert exited.value.code == 130
    assert sys.stdout.getvalue() == "" and sys.stderr.getvalue() == ""


def test_a_ctrl_c_during_the_teardown_keeps_the_status() -> None:
    """A Ctrl-C after the command ended (here from an exit hook, as a user pressing it several
    times can land one) neither kills the CLI by the signal nor prints a traceback: a loaded
    run of the test above saw status -2 instead of 130."""
    script = (
        "import atexit, os, signal, sys\n"
        "import mcp_sync._cli as cli\n"
        "atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))\n"
        "cli.main = lambda argv=None: 3\n"
        "cli.entry_point()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30)
    assert done.returncode == 3, done.stderr
    assert "KeyboardInterrupt" not in done.stderr and "Traceback" not in done.stderr, done.stderr
