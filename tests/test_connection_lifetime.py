"""A connection's life at its edges: ends that come while it is being made, reconnect() where
there is nothing to drop, transports that are not the usual ones, and interpreter exit.

Real servers where they show it (the fault server's ``--exit-after`` and scripted answers,
the lifecycle server's ``--linger`` for a server slow to exit); a child interpreter for what
happens at exit.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until
from lifekit import gone
from wirekit import Peer

import mcp_sync
from mcp_sync.transports.stdio import StdioTransport

from conftest import PY, ROOT, SERVERS, fault_args

pytestmark = pytest.mark.timeout(60)

LIFECYCLE = str(SERVERS / "lifecycle_server.py")


def connect_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("mcp_sync-connect")]


def test_a_server_that_exits_right_after_the_handshake_is_reported_lost_once(no_leaks: None) -> None:
    """The server answers initialize and exits at once. Either the client could not even confirm
    the handshake (connect() raises ConnectionClosed: nothing was published, no loss to tell), or
    it connected and then the loss is told to on_connection_lost exactly once, whether the engine
    ended before the connection was published or after; a call then says how it ended."""
    for _ in range(6):  # where the end falls varies from round to round
        lost: list[mcp_sync.MCPError] = []
        client = mcp_sync.Client.stdio(
            PY, fault_args("--exit-after", "1", "--era", "legacy"), mode="legacy", log_level="info",
            restart=False, timeout=10, on_connection_lost=lost.append,
        )
        try:
            try:
                client.connect()
            except mcp_sync.ConnectionClosed as exc:
                assert "code 7" in str(exc)
                assert wait_until(lambda: not connect_threads(), 10)
                assert lost == [] and client.state is mcp_sync.ClientState.NEW
                continue
            assert wait_until(lambda lost=lost: lost and not connect_threads(), 10)
            flushed = threading.Event()
            dispatcher = client._session.connection.dispatcher
            assert dispatcher is not None and dispatcher.submit(flushed.set)  # after any report queued
            assert flushed.wait(10)
            assert len(lost) == 1 and isinstance(lost[0], mcp_sync.ConnectionClosed), lost
            with pytest.raises(mcp_sync.ConnectionClosed, match="code 7"):
                client.call_tool("echo", {"text": "x"})
        finally:
            client.close()


def test_close_during_the_last_step_of_a_connect(tmp_path: Path, no_leaks: None) -> None:
    """close() while the connect waits on its last request (a legacy logging/setLevel the server
    never answers): the connect fails with ClientStateError at once, the client stays CLOSED and
    its server is ended; the connection is never published."""
    peer = Peer(tmp_path, {"logging/setLevel": [{}]}, "--era", "legacy")  # {}: never answered
    client = peer.client(mode="legacy", log_level="debug", timeout=30)
    box: dict[str, Any] = {}

    def connect() -> None:
        try:
            client.connect()
        except mcp_sync.MCPError as exc:
            box["error"] = exc

    thread = threading.Thread(target=connect)
    thread.start()
    assert wait_until(lambda: peer.requests("logging/setLevel"), 10)
    pid = client.pid
    started = time.monotonic()
    client.close()
    thread.join(10)
    assert time.monotonic() - started < 10
    assert isinstance(box.get("error"), mcp_sync.ClientStateError), box
    assert client.state is mcp_sync.ClientState.CLOSED and client.pid is None
    assert pid is None or wait_until(lambda: gone(pid), 10)


def test_reconnect_with_nothing_to_drop_and_on_a_transport_object(no_leaks: None) -> None:
    """reconnect() before the first connect drops nothing and connects; a client built on a
    transport object cannot make a new transport, so its reconnect() says so."""
    client = mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=10)
    try:
        assert client.state is mcp_sync.ClientState.NEW
        client.reconnect()
        assert client.state is mcp_sync.ClientState.OPEN
        assert client.call_tool("echo", {"text": "one"}).text == "one"
    finally:
        client.close()
    with mcp_sync.Client(StdioTransport(PY, fault_args("--era", "modern"))) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        with pytest.raises(mcp_sync.ClientStateError, match="transport object cannot make a new one"):
            client.reconnect()
        assert client.call_tool("echo", {"text": "still"}).text == "still"  # the connection is untouched


class Relay:
    """A transport of the application's own (not derived from BaseTransport) that relays to a
    stdio transport and whose ``name`` is a read-only property."""

    def __init__(self, inner: StdioTransport) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return "relay"

    def start(self, sink: Any) -> None:
        self.inner.start(sink)

    def send(self, message: dict[str, Any], *, headers: Any = None) -> None:
        self.inner.send(message)

    def abort(self, request_id: Any) -> bool:
        return False

    def configure(self, *, era: str, protocol_version: str) -> None:
        self.inner.configure(era=era, protocol_version=protocol_version)

    def close(self) -> None:
        self.inner.close()


def test_a_transport_whose_name_cannot_be_set_still_connects(no_leaks: None) -> None:
    """The client passes its own name to the transport (thread and logger names); a transport
    that will not take it keeps its own, and the client connects all the same."""
    with mcp_sync.Client(Relay(StdioTransport(PY, fault_args("--era", "modern"))), name="mine") as client:
        assert client.call_tool("echo", {"text": "named"}).text == "named"
        assert client.name == "mine" and client.transport.name == "relay"


def test_a_transport_factory_that_fails_later_reaches_the_caller(no_leaks: None) -> None:
    """A transport factory that works once, then raises: after close(), connect() opens the client
    again with a new transport, gets the factory's error as it is, leaves the client NEW (another
    try is allowed) and nothing running (``no_leaks``)."""
    made: list[StdioTransport] = []

    def factory() -> StdioTransport:
        if made:
            raise OSError("no server command today")
        made.append(StdioTransport(PY, fault_args("--era", "modern")))
        return made[-1]

    client = mcp_sync.Client(factory, timeout=10)
    assert client.call_tool("echo", {"text": "first"}).text == "first"
    client.close()
    with pytest.raises(OSError, match="no server command today"):
        client.connect()
    assert client.state is mcp_sync.ClientState.NEW
    client.close()


AT_EXIT = """
import sys
import mcp_sync
from mcp_sync.transports.stdio import StdioTransport
server = StdioTransport(sys.executable, [{server!r}, "--linger", "30"], shutdown_timeout=0.5)
client = mcp_sync.Client(server, timeout=10)
client.connect()
print(client.pid, flush=True)
"""


def test_a_client_left_open_at_interpreter_exit_ends_its_server() -> None:
    """A script that never closes its client: at interpreter exit the client is closed, so its
    server (one that lingers 30 s after its stdin closes, and ignores SIGTERM) does not outlive
    the script as an orphan."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", AT_EXIT.format(server=LIFECYCLE)], capture_output=True,
                          text=True, timeout=40, env=env)
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[0])
    assert wait_until(lambda: gone(pid), 10), f"server {pid} outlived the script"


def test_listen_on_a_closed_client_raises_and_does_not_open_it() -> None:
    """listen() is no connect(): on a closed client it raises ClientStateError and starts nothing."""
    client = mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=10)
    client.close()
    with pytest.raises(mcp_sync.ClientStateError, match="subscriptions/listen: the client is closed"):
        client.listen(tools_list_changed=True)
    assert client.state is mcp_sync.ClientState.CLOSED and client.pid is None
