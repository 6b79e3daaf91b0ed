"""A stdio server that fails at start (#18.10): started once, said once, hinted only where it helps."""

from __future__ import annotations

from pathlib import Path

import pytest
from clikit import run_cli

import mcp_sync

from conftest import PY, fault_args, refused_port


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


def test_the_exit_message_waits_for_a_slow_stderr_reader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stderr thread, slow to be scheduled (a loaded machine: seen in a run beside another),
    still gets the server's last line into the error: once the process has exited, the error
    waits up to 1 s for it (it waited 0.2 s and said "exited with code 3" with no traceback)."""
    import threading
    import time

    from mcp_sync.transports import stdio

    real = stdio.read_lines

    def late_on_stderr(*args: object, **kwargs: object) -> object:
        if "stderr" in threading.current_thread().name:
            time.sleep(0.5)  # longer than the old wait, well within the new one
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(stdio, "read_lines", late_on_stderr)
    args, _ = _exits_at_start(tmp_path, "Traceback: ZeroDivisionError: division by zero", 3)
    client = mcp_sync.Client.stdio(PY, args, stderr=lambda line: None, mode="legacy", timeout=15)
    with pytest.raises(mcp_sync.ConnectionClosed) as info:
        client.connect()
    client.close()
    assert "ZeroDivisionError" in str(info.value), str(info.value)


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


def _npx_without_its_registry(tmp_path: Path, port: int) -> dict[str, str]:
    """npx settings (package-index ones: the allow-list passes none) that send its registry fetch
    to a refused port on this machine: a real npx failing to reach the network, fast (no retries)."""
    return {"npm_config_registry": f"http://127.0.0.1:{port}/", "npm_config_fetch_retries": "0",
            "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_update_notifier": "false"}


NPX_PACKAGE = "@modelcontextprotocol/server-does-not-exist-31"


def test_a_server_that_cannot_reach_the_network_gets_the_environment_hint(tmp_path: Path) -> None:
    """npx fetching the server from its registry fails (ECONNREFUSED, "behind a proxy"): the error
    says the server may have failed to reach the network and how to give it the environment."""
    with refused_port() as port:
        client = mcp_sync.Client.stdio("npx", ["-y", NPX_PACKAGE], env=_npx_without_its_registry(tmp_path, port),
                                       stderr=lambda line: None, timeout=60)
        with pytest.raises(mcp_sync.ConnectionClosed) as info:
            client.connect()
        client.close()
    message = str(info.value)
    assert "ECONNREFUSED" in info.value.stderr_tail
    assert "may have failed to reach the network" in message and "npm_config_*" in message, message
    assert "inherit_env=True in Python" in message


def test_the_cli_names_its_own_options_in_the_hint(tmp_path: Path) -> None:
    """The CLI's error for a server that fails at start names --env and --inherit-env, not the
    Python arguments env={...} / inherit_env=True; --env reaches the server (here npx's registry)."""
    missing = run_cli("tools", f"{PY} -c \"import sys; sys.exit('Error: GITHUB_TOKEN is required')\"")
    assert missing.returncode == 1, missing.stderr
    assert '(--env NAME=VALUE or --inherit-env, "env" in a --config entry)' in missing.stderr, missing.stderr
    assert "inherit_env=" not in missing.stderr and "env={" not in missing.stderr
    with refused_port() as port:
        settings = [f"--env={name}={value}" for name, value in _npx_without_its_registry(tmp_path, port).items()]
        offline = run_cli("tools", f"npx -y {NPX_PACKAGE}", *settings, timeout=60)
    assert offline.returncode == 1 and f"127.0.0.1:{port}" in offline.stderr  # npx used the --env registry
    assert "may have failed to reach the network" in offline.stderr and "--inherit-env" in offline.stderr


def test_the_cli_passes_env_and_inherit_env_to_a_command_line_server() -> None:
    server = f"{PY} {' '.join(fault_args('--era', 'modern'))}"
    given = run_cli("call", server, "getenv", "name=MCP_SYNC_T31", "--env", "MCP_SYNC_T31=from-option")
    assert (given.returncode, given.stdout.strip()) == (0, "from-option"), given.stderr
    env = {"MCP_SYNC_T31": "from-shell"}
    assert run_cli("call", server, "getenv", "name=MCP_SYNC_T31", env=env).stdout.strip() == "<unset>"
    inherited = run_cli("call", server, "getenv", "name=MCP_SYNC_T31", "--inherit-env", env=env)
    assert (inherited.returncode, inherited.stdout.strip()) == (0, "from-shell"), inherited.stderr
    wrong = run_cli("call", server, "getenv", "name=X", "--env", "novalue")
    assert wrong.returncode == 2 and "--env expects NAME=VALUE" in wrong.stderr
    remote = run_cli("tools", "http://127.0.0.1:9/mcp", "--env", "A=1")
    assert remote.returncode == 2 and "command-line server" in remote.stderr
