"""How a stdio connection ends (mcp_sync/transports/stdio.py): a transport never started,
close() while a writer holds the pipe or while the application's stderr callback is still
busy, and a server ended by a signal that has no name. Peers: the hostile server
(tests/servers/hostile_stdio.py) and, for a server that never reads, an inline sleeper."""

from __future__ import annotations

import array
import fcntl
import logging
import os
import termios
import threading
from typing import Any

import pytest
from helpers import in_thread, process_gone, wait_until

import mcp_sync
from mcp_sync._engine import Engine
from mcp_sync.transports.stdio import StdioTransport

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

HOSTILE = str(SERVERS / "hostile_stdio.py")
#: A server that never reads its stdin (the client's writes fill the pipe).
SLEEPER = ["-c", "import time; time.sleep(60)"]


def test_a_transport_never_started_refuses_to_send_and_closes_quietly(nothing_left: None) -> None:
    """Before start(): send raises ConnectionClosed saying so, close() does nothing (twice),
    and the repr names the server with no pid."""
    transport = StdioTransport(PY, [HOSTILE], name="idle")
    with pytest.raises(mcp_sync.ConnectionClosed, match=r"^the stdio transport is not started$"):
        transport.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    transport.close()
    transport.close()
    assert repr(transport) == "<StdioTransport 'idle' pid=None>"
    assert transport.pid is None


def test_repr_shows_the_running_servers_pid(nothing_left: None) -> None:
    engine = Engine(StdioTransport(PY, [HOSTILE], name="shown"))
    engine.start()
    pid = engine.transport.pid
    assert repr(engine.transport) == f"<StdioTransport 'shown' pid={pid}>"
    engine.close()
    assert repr(engine.transport) == "<StdioTransport 'shown' pid=None>" and process_gone(pid)  # type: ignore[arg-type]


def unread_in_stdin(pid: int) -> int:
    """Bytes waiting unread in process ``pid``'s stdin pipe (Linux: FIONREAD on /proc/<pid>/fd/0)."""
    fd = os.open(f"/proc/{pid}/fd/0", os.O_RDONLY | os.O_NONBLOCK)
    try:
        count = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, count, True)
        return int(count[0])
    finally:
        os.close(fd)


def test_close_ends_the_server_and_its_stdin_while_a_writer_holds_the_pipe(nothing_left: None) -> None:
    """A writer is blocked on a server that never reads, holding the write lock for up to its
    0.1 s poll slice, longer than a shutdown step (0.05 s): close() does not wait for it to
    close stdin first; it ends the server, then closes stdin. The writer raises
    ConnectionClosed, and no process, thread or descriptor is left."""
    transport = StdioTransport(PY, SLEEPER, shutdown_timeout=0.05)
    engine = Engine(transport)
    engine.start()
    pid = transport.pid
    assert pid is not None
    big = {"jsonrpc": "2.0", "method": "notifications/pad", "params": {"pad": "x" * (4 << 20)}}
    writer, box = in_thread(lambda: transport.send(big, timeout=30))
    # The pipe holds bytes: the writer has written what fits and waits in its first slice.
    assert wait_until(lambda: unread_in_stdin(pid) > 0, 5, interval=0.002)
    closer, closed = in_thread(engine.close)
    closer.join(10)
    writer.join(10)
    assert not closer.is_alive() and "error" not in closed, closed
    assert not writer.is_alive() and isinstance(box.get("error"), mcp_sync.ConnectionClosed), box
    assert process_gone(pid)


def test_a_busy_stderr_callback_does_not_hold_close(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    """The application's stderr callback is still busy with a line when close() runs: close
    returns after its shutdown step with a warning, leaving that one pipe open rather than
    closing it under the thread reading it; the thread ends once the callback returns."""
    entered = threading.Event()
    release = threading.Event()

    def busy(line: str) -> None:
        entered.set()
        release.wait(20)

    engine = Engine(StdioTransport(PY, [HOSTILE, "--stderr", "hello"], stderr=busy, shutdown_timeout=0.2))
    engine.start()
    pid = engine.transport.pid
    try:
        assert entered.wait(10)
        with caplog.at_level(logging.WARNING, logger="mcp_sync"):
            closer, closed = in_thread(engine.close)
            closer.join(10)
        assert not closer.is_alive() and "error" not in closed, closed
        assert "a reader of hostile_stdio did not stop; its pipe is left open" in caplog.text
        assert process_gone(pid)  # type: ignore[arg-type]
    finally:
        release.set()
    assert wait_until(lambda: not any(t.name == "mcp_sync-stderr-hostile_stdio" for t in threading.enumerate()), 5)


def test_a_server_killed_by_a_signal_without_a_name_says_its_number(no_leaks: None) -> None:
    """Real-time signals have no name in the signal module: the error says "killed by signal
    40" and carries the exit code -40, like a named one."""
    with mcp_sync.Client.stdio(PY, [HOSTILE], mode="legacy", restart=False) as client:
        client.connect()
        pid = client.pid
        assert pid is not None
        holder, box = in_thread(lambda: client.call_tool("hold", timeout=20))
        assert wait_until(lambda: client.call_tool("held", timeout=10).text == "1", 10)
        os.kill(pid, 40)  # SIGRTMIN+6: its default action ends the process
        holder.join(10)
        error: Any = box.get("error")
        assert isinstance(error, mcp_sync.ConnectionClosed), box
        assert "was killed by signal 40" in str(error) and error.exit_code == -40
