"""The engine over a real stdio server where something fails between them: a message the
transport cannot encode, a handler answering a server that has died, a server that closed its
stdin while a call waits. Peers: the fault server (tests/servers/fault_server.py, with a log of
every line it received) and, for a closed stdin, a three-line inline server."""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from helpers import in_thread, wait_until
from wirekit import Peer

import mcp_sync
from mcp_sync._engine import Engine
from mcp_sync.transports.stdio import StdioTransport

from conftest import PY

pytestmark = pytest.mark.timeout(60)

#: Reads one line (the first request), closes its stdin, and lives on without answering.
CLOSES_STDIN = "import os, sys, time\nsys.stdin.buffer.readline()\nos.close(0)\ntime.sleep(30)\n"


def test_a_request_the_transport_cannot_encode_is_never_written_nor_cancelled(tmp_path: Path) -> None:
    """A value JSON cannot carry (a set) reaches the stdio encoder: the call raises the
    encoder's TypeError, nothing of it reaches the server, no notifications/cancelled follows
    (there is nothing to cancel), and the connection serves the next request."""
    peer = Peer(tmp_path)
    engine = Engine(StdioTransport(PY, peer.args, stderr=lambda line: None))
    engine.start()
    try:
        with pytest.raises(TypeError, match="set is not JSON serializable"):
            engine.request("tools/call", {"name": "echo", "arguments": {"text": {"a", "b"}}}, timeout=10)
        assert engine.request("ping", timeout=10) == {}
        assert [m.get("method") for m in peer.sent()] == ["ping"]
    finally:
        engine.close()


def test_a_handler_that_answers_after_the_server_died_ends_quietly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The server asks for roots and dies while the application's handler works: the call
    fails with ConnectionClosed at once, and the handler's late answer, which can no longer
    be written, is dropped with a debug line; its thread ends without an exception."""
    script = {"tools/call ask": [{"send": [{"jsonrpc": "2.0", "id": "r1", "method": "roots/list"}]}]}
    peer = Peer(tmp_path, script)
    asked = threading.Event()
    release = threading.Event()

    def roots() -> list[str]:
        asked.set()
        release.wait(10)
        return ["file:///work"]

    client = peer.client(mode="legacy", on_roots=roots, restart=False, stderr=lambda line: None)
    try:
        client.connect()
        pid = client.pid
        assert pid is not None
        thread, box = in_thread(lambda: client.call_tool("ask", timeout=20))
        assert asked.wait(10)
        os.kill(pid, signal.SIGKILL)
        thread.join(10)
        assert isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
        assert "killed by SIGKILL" in str(box["error"])
        with caplog.at_level(logging.DEBUG, logger="mcp_sync"):
            release.set()
            # #31.4: the connection's end cancels the handler's token, so its late answer is not
            # even tried (before, the write failed and was logged)
            assert wait_until(lambda: "roots/list 'r1' was cancelled (the connection ended" in caplog.text, 10)
            assert "answer is not sent" in caplog.text
    finally:
        release.set()
        client.close()
    assert all(m.get("id") != "r1" for m in peer.sent())  # the answer never reached the server


def closed_stdin_engine() -> Engine:
    engine = Engine(StdioTransport(sys.executable, ["-c", CLOSES_STDIN], shutdown_timeout=0.5))
    engine.start()
    return engine


#: How late a timed-out call may return: scheduling on a loaded two-core machine.
MARGIN = 0.6


def test_a_timed_out_call_returns_at_its_deadline_when_the_server_closed_its_stdin() -> None:
    """#17.9 says a timed-out call returns at its deadline. The server closed its stdin after
    reading the request, so the cancellation cannot be written (EPIPE): that must not hold
    the caller (it returned about 1.2 s late: the error waited for the live server to exit)."""
    engine = closed_stdin_engine()
    try:
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout, match=r"no answer within 0\.5 s"):
            engine.request("tools/list", timeout=0.5)
        late = time.monotonic() - started - 0.5
        assert late < MARGIN, f"returned {late:.2f} s after its deadline"
    finally:
        engine.close()


def test_a_server_that_closed_its_stdin_is_not_said_to_have_exited() -> None:
    """The server closed its stdin but still runs: a request it cannot take fails with
    ConnectionClosed, whose message must not say the server exited."""
    engine = closed_stdin_engine()
    try:
        with pytest.raises(mcp_sync.RequestTimeout):
            engine.request("tools/list", timeout=0.3)  # read by the server, never answered
        with pytest.raises(mcp_sync.ConnectionClosed) as info:
            engine.request("tools/list", timeout=5)  # cannot be written: EPIPE
        assert info.value.exit_code is None
        assert "exited" not in info.value.message, info.value.message
    finally:
        engine.close()

