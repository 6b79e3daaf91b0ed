"""The suite's fork server for the Python SDK server (tests/servers/forkserver.py, #32): a server
forked from it answers as one started the usual way, and ends as it would: with the exit code and
the signal it ends by, and with the process the test started, even when that one is SIGKILLed."""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Iterator

import pytest
from forkserver import ENV, name_for
from helpers import wait_until

import mcp_sync

from conftest import PY, SDK_SERVER, start_forkserver, stop_forkserver


def listens(name: str) -> bool:
    """Whether a socket listens at the abstract name ``name``."""
    with open("/proc/net/unix") as sockets:
        return f"@{name}" in sockets.read()


@pytest.fixture(scope="module")
def forkserver() -> Iterator[str]:
    """The name of a fork server of this module's own, once it listens."""
    name = f"{name_for(os.getpid())}-test"
    proc = start_forkserver(name)
    try:
        assert wait_until(lambda: listens(name) or proc.poll() is not None, 60) and listens(name), \
            "the fork server did not start"
        yield name
    finally:
        assert stop_forkserver(proc) == 0  # it ends when its stdin does


def processes_naming(text: str) -> int:
    """How many processes have ``text`` on their command line."""
    count = 0
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                count += text.encode() in cmdline.read()
        except OSError:
            continue
    return count


def start(name: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([PY, SDK_SERVER, *args], env={**os.environ, ENV: name}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_a_forked_server_answers_both_eras(forkserver: str) -> None:
    for mode in ("modern", "legacy"):
        with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], env={ENV: forkserver}, mode=mode) as client:
            assert client.call_tool("echo", {"text": "hi"}).text == "hi" and client.era == mode
            assert processes_naming(forkserver) == 3  # the fork server, the start's manager, its server


def test_the_exit_code_and_stderr_are_the_servers(forkserver: str) -> None:
    proc = start(forkserver, "no-such-transport")
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2 and b"invalid choice: 'no-such-transport'" in err


def test_a_signal_to_the_started_process_ends_the_server_by_it(forkserver: str) -> None:
    proc = start(forkserver, "http")
    assert proc.stderr is not None and proc.stderr.readline().startswith(b"LISTENING ")
    assert processes_naming(forkserver) == 3
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == -signal.SIGTERM


def test_a_sigkilled_stand_in_takes_the_server_with_it(forkserver: str) -> None:
    proc = start(forkserver, "stdio")
    assert proc.stdout is not None and proc.stdin is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    proc.stdin.flush()
    assert proc.stdout.readline()  # the forked server answers
    proc.kill()
    proc.wait(10)
    assert proc.stdout.read() == b""  # the server held the stdout pipe: its end is the server's end
    proc.stdin.close()
    assert wait_until(lambda: processes_naming(forkserver) == 1, 10)  # the manager and the server reaped


def suites_forkserver() -> str:
    """The name of conftest's fork server for this process, once it listens (it starts in the
    background)."""
    name = name_for(os.getpid())
    assert wait_until(lambda: listens(name), 60), "conftest's fork server did not start"
    return name


def test_a_server_below_this_process_is_forked_from_the_suites_fork_server() -> None:
    """No environment is needed: the server finds the fork server of its nearest ancestor that
    has one (conftest's, started by this process), also through mcp_sync's short environment."""
    name = suites_forkserver()
    before = processes_naming(name)
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"]) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert processes_naming(name) == before + 2  # a manager and the server


def test_off_starts_the_server_the_usual_way() -> None:
    name = suites_forkserver()
    before = processes_naming(name)
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], env={ENV: "off"}) as client:
        assert client.call_tool("echo", {"text": "plain"}).text == "plain"
        assert processes_naming(name) == before
