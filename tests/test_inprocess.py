"""Client.inprocess (#20.7) beyond the happy path: a low-level SDK Server served as is, servers
that fail at startup or return at once, a loop that starts only after start() gave up, a call
that times out (cancelled at the server, in both eras), close() bounded while a handler blocks,
and what the transport refuses (headers, sends after close, messages that are no JSON-RPC).
Real SDK servers (mcp 2.x), defined in the tests."""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Any, AsyncIterator

import anyio
import mcp_types
import pytest
from helpers import wait_until
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

import mcp_sync
from mcp_sync.transports import inprocess
from mcp_sync.transports.inprocess import InProcessTransport

from httpkit import Sink

pytestmark = pytest.mark.timeout(60)

LEGACY_INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def _server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp_sync-inprocess-")]


@pytest.fixture
def calc() -> MCPServer:
    """A small MCPServer: ``add``, ``wait`` (async; says when it was cancelled), ``block`` (sync)."""
    server = MCPServer("calc")
    server.cancelled = threading.Event()  # type: ignore[attr-defined]

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool()
    async def wait(seconds: float) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            server.cancelled.set()  # type: ignore[attr-defined]
            raise
        return "waited"

    @server.tool()
    def block(seconds: float) -> str:
        time.sleep(seconds)  # does not yield to cancellation
        return "blocked"

    return server


def test_a_low_level_server_is_served_as_is(no_leaks: None) -> None:
    """The SDK's low-level Server (no MCPServer around it) is served directly."""

    async def list_tools(ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=[mcp_types.Tool(name="shout", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        text = str((params.arguments or {}).get("text", "")).upper()
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])

    low = Server("low", on_list_tools=list_tools, on_call_tool=call_tool)
    for mode in ("modern", "legacy"):
        with mcp_sync.Client.inprocess(low, mode=mode) as client:
            assert [tool.name for tool in client.tools()] == ["shout"]
            assert client.call_tool("shout", {"text": "hi"}).text == "HI"
    assert not _server_threads()


def test_a_server_whose_startup_fails_fails_the_connection_with_its_error(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """The server's lifespan raises: connecting fails with ConnectionClosed naming that error
    (not anyio's "unhandled errors in a TaskGroup"), and no thread is left."""

    @contextlib.asynccontextmanager
    async def no_database(server: Any) -> AsyncIterator[dict[str, Any]]:
        raise RuntimeError("the database is not there")
        yield {}  # (never reached: it makes this a generator, as a lifespan is)

    server = Server("broken", lifespan=no_database)
    with caplog.at_level(logging.WARNING, logger="mcp_sync"):
        client = mcp_sync.Client.inprocess(server, restart=False, timeout=10)
        with pytest.raises(mcp_sync.ConnectionClosed, match="RuntimeError: the database is not there"):
            client.connect()
        client.close()
    assert any(r.getMessage() == "mcp_sync: in-process server broken ended with RuntimeError: the database is not there"
               for r in caplog.records)
    assert not _server_threads()


class _Quitter(Server):  # type: ignore[type-arg]
    """A low-level server that returns from run() at once, as a server that decides to stop does."""

    async def run(self, *args: Any, **kwargs: Any) -> None:
        return None


def test_a_server_that_returns_closes_the_connection(no_leaks: None) -> None:
    """The server's run() returns: the client is told the connection closed; afterwards the
    transport refuses to send (its loop has ended) and close() still succeeds."""
    sink = Sink()
    transport = InProcessTransport(_Quitter("quitter"))
    transport.start(sink)
    assert wait_until(lambda: sink.closures and not _server_threads(), 5)
    closed = "in-process _Quitter 'quitter': the in-process server closed the connection"
    assert [str(e) for e in sink.closures] == [closed]
    with pytest.raises(mcp_sync.ConnectionClosed, match="is closed"):
        transport.send(LEGACY_INIT)
    transport.close()
    assert len(sink.closures) == 1

    client = mcp_sync.Client.inprocess(_Quitter("quitter"), restart=False, timeout=10)
    with pytest.raises(mcp_sync.ConnectionClosed, match="closed the connection"):
        client.connect()
    client.close()


def test_a_loop_that_starts_after_start_gave_up_serves_nothing_and_ends(
    calc: MCPServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """An overloaded machine: the event loop is not up within START_TIMEOUT, start() fails and
    closes the transport. When the loop does start, it serves nothing and its thread ends (it
    used to serve on forever, a thread nobody would ever stop)."""
    late = threading.Event()
    real_run = anyio.run

    def slow_run(*args: Any, **kwargs: Any) -> Any:
        late.wait(10)
        return real_run(*args, **kwargs)

    monkeypatch.setattr(anyio, "run", slow_run)
    monkeypatch.setattr(inprocess, "START_TIMEOUT", 0.2)
    monkeypatch.setattr(inprocess, "SHUTDOWN_TIMEOUT", 0.2)
    sink = Sink()
    transport = InProcessTransport(calc)
    with caplog.at_level(logging.WARNING, logger="mcp_sync"), pytest.raises(
        mcp_sync.ConnectionClosed, match=r"its event loop did not start within 0\.2 s"
    ):
        transport.start(sink)
    assert [str(e) for e in sink.closures] == ["in-process MCPServer 'calc': the client closed the connection"]
    late.set()
    assert wait_until(lambda: not _server_threads(), 5), "the late event loop kept serving"
    assert not sink.messages and len(sink.closures) == 1


def test_an_event_loop_that_cannot_start_fails_start_with_its_error(
    calc: MCPServer, monkeypatch: pytest.MonkeyPatch, no_leaks: None
) -> None:
    """The thread's event loop fails before serving (an application's event-loop policy that
    refuses a loop here): start() fails at once naming the error, and the thread is gone."""

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("this event loop policy makes no loops in threads")

    monkeypatch.setattr(anyio, "run", refused)
    sink = Sink()
    with pytest.raises(mcp_sync.ConnectionClosed, match="failed to start: RuntimeError: this event loop policy"):
        InProcessTransport(calc).start(sink)
    assert not _server_threads()
    assert len(sink.closures) == 1 and "RuntimeError: this event loop policy" in str(sink.closures[0])


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_a_call_that_times_out_is_cancelled_at_the_server(calc: MCPServer, mode: str, no_leaks: None) -> None:
    """No stream of its own to close: the client sends notifications/cancelled (abort() is False),
    the server's handler is cancelled, and the client goes on."""
    with mcp_sync.Client.inprocess(calc, mode=mode) as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("wait", {"seconds": 30}, timeout=0.3)
        assert calc.cancelled.wait(5)  # type: ignore[attr-defined]
        assert client.call_tool("add", {"a": 2, "b": 3}).data == 5


def test_close_is_bounded_while_a_handler_blocks(
    calc: MCPServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """A sync handler sleeping in the server cannot be cancelled: close() waits SHUTDOWN_TIMEOUT,
    says so, and returns; the thread ends by itself when the handler does."""
    monkeypatch.setattr(inprocess, "SHUTDOWN_TIMEOUT", 0.2)
    client = mcp_sync.Client.inprocess(calc)
    with pytest.raises(mcp_sync.RequestTimeout):
        client.call_tool("block", {"seconds": 1.0}, timeout=0.2)
    with caplog.at_level(logging.WARNING, logger="mcp_sync"):
        started = time.monotonic()
        client.close()
        assert time.monotonic() - started < 0.9  # not until the handler's end
    assert any("the in-process server calc did not stop within 0.2 s" in r.getMessage() for r in caplog.records)
    assert wait_until(lambda: not _server_threads(), 5)


def test_what_the_transport_refuses(calc: MCPServer, no_leaks: None) -> None:
    """HTTP headers (there is no HTTP), and any send after close(); close() is idempotent and
    reports the end once; a transport closed before it started reports nothing."""
    sink = Sink()
    transport = InProcessTransport(calc)
    transport.start(sink)
    with pytest.raises(TypeError, match="takes no HTTP headers"):
        transport.send(LEGACY_INIT, headers={"Authorization": "Bearer x"})
    transport.close()
    transport.close()
    with pytest.raises(mcp_sync.ConnectionClosed, match="is closed"):
        transport.send(LEGACY_INIT)
    assert len(sink.closures) == 1 and not _server_threads()

    never_started = InProcessTransport(calc)
    never_started.close()
    assert not _server_threads()


def test_a_message_that_is_no_json_rpc_reaches_the_server_as_a_parse_error(calc: MCPServer, no_leaks: None) -> None:
    """As from a pipe: the server is handed the error, answers nothing for it, and serves on."""
    sink = Sink()
    transport = InProcessTransport(calc)
    transport.start(sink)
    try:
        transport.send({"jsonrpc": "2.0", "id": 7})  # neither a request nor an answer
        transport.send(LEGACY_INIT)
        assert wait_until(lambda: sink.messages, 5)
    finally:
        transport.close()
    assert [m.get("id") for m in sink.messages] == [1]
    assert sink.messages[0]["result"]["serverInfo"]["name"] == "calc"


def test_without_the_mcp_package_the_error_says_what_to_install(
    calc: MCPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mcp_types", None)  # as if the package were not installed
    with pytest.raises(ImportError, match=r"needs the 'mcp' package: pip install 'mcp-sync-client\[inprocess\]'"):
        InProcessTransport(calc).start(Sink())
