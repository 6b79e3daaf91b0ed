"""A stdio server that fails at start (#18.10): started once, said once, hinted only where it helps."""

from __future__ import annotations

from pathlib import Path

import pytest

import mcp_sync

from conftest import PY, fault_args


def _exits_at_start(tmp_path: Path, stderr_line: str, code: int) -> tuple[list[str], Path]:
    """A server that notes each start in a file, writes one stderr line and exits before reading."""
    starts = tmp_path / "starts"
    script = (
        f"import sys; open({str(starts)!r}, 'a').write('x'); "
        f"sys.stderr.write({stderr_line!r} + '\\n'); sys.exit({code})"
    )
    return ["-c", script], starts


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_server_that_exits_at_start_is_started_once_and_said_once(tmp_path: Path, mode: str) -> None:
    args, starts = _exits_at_start(tmp_path, "Traceback: ZeroDivisionError: division by zero", 3)
    client = mcp_sync.Client.stdio(PY, args, stderr=lambda line: None, mode=mode, timeout=15)
    with pytest.raises(mcp_sync.ConnectionClosed) as info:
        client.connect()
    client.close()
    message = str(info.value)
    assert starts.read_text() == "x"  # once: the old code started it again after the failed probe
    assert info.value.exit_code == 3 and "exited with code 3" in message
    assert message.count("ZeroDivisionError") == 1 and message.count("exited with code 3") == 1, message
    assert "inherit_env" not in message  # a traceback is not a missing variable
    assert len(message) < 300, message


def test_a_missing_variable_gets_the_environment_hint(tmp_path: Path) -> None:
    args, _ = _exits_at_start(tmp_path, "Error: GITHUB_TOKEN environment variable is required", 1)
    client = mcp_sync.Client.stdio(PY, args, stderr=lambda line: None, timeout=15)
    with pytest.raises(mcp_sync.ConnectionClosed) as info:
        client.connect()
    client.close()
    message = str(info.value)
    assert "inherit_env=True" in message and '"env" in a config entry' in message
    assert message.count("GITHUB_TOKEN") == 1


def test_a_server_that_dies_on_the_probe_is_still_started_again() -> None:
    """A server that read the probe and died (some legacy servers) gets the initialize handshake afresh."""
    with mcp_sync.Client.stdio(PY, fault_args("--behaviour", "die-on-discover"), stderr=lambda line: None,
                               timeout=15) as client:
        assert client.era == "legacy"


def test_the_servers_stderr_shown_on_the_terminal_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    """A server's stderr line with terminal control sequences (a clipboard write, a screen clear)
    is shown with visible escapes by the default stderr display, never run by the terminal."""
    script = ("import sys; sys.stderr.write('boom \\x1b]52;c;ZXZpbA==\\x07 \\x1b[2J done\\n'); "
              "sys.stderr.flush(); sys.exit(1)")
    client = mcp_sync.Client.stdio(PY, ["-c", script], mode="legacy", timeout=10)
    with pytest.raises(mcp_sync.ConnectionClosed):
        client.connect()
    client.close()
    shown = capsys.readouterr().err
    assert "boom" in shown and "done" in shown
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b]52;c;ZXZpbA==\\x07" in shown
