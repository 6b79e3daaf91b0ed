"""stdio keeps its stream framed whatever happens to a line: a write cut short by a server that
paused is finished before the next message, and an oversized line is attributed to a request
only when its top-level id can be told for certain from its head. The peer is the hostile
legacy server (tests/servers/hostile_stdio.py), driven through the engine so that each test
knows the id of the request it holds."""

from __future__ import annotations

import base64
import logging
import os
import signal
import threading
from typing import Any

import pytest
from helpers import in_thread, wait_until

import mcp_sync
from mcp_sync._engine import Engine
from mcp_sync.transports.stdio import StdioTransport

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

HOSTILE = str(SERVERS / "hostile_stdio.py")


def hostile_engine(**options: Any) -> Engine:
    engine = Engine(StdioTransport(PY, [HOSTILE], **options))
    engine.start()
    return engine


def tool(engine: Engine, name: str, arguments: dict | None = None, **options: Any) -> str:
    result = engine.request("tools/call", {"name": name, "arguments": arguments or {}}, **options)
    return str(result["content"][0]["text"])


def test_a_write_cut_short_by_a_paused_server_is_finished_before_the_next_message() -> None:
    """The server is paused (SIGSTOP) while a 300 KB notification is written: the write stops
    at its deadline with part of the line in the pipe. Once the server runs again, the next
    request's write first finishes that line, then writes its own: the server reads both
    intact and answers (a lost or doubled piece would have merged the lines)."""
    engine = hostile_engine()
    pid = engine.transport.pid
    assert pid is not None
    try:
        assert tool(engine, "echo", {"text": "before"}, timeout=10) == "before"
        os.kill(pid, signal.SIGSTOP)
        with pytest.raises(mcp_sync.RequestTimeout, match="the server is not reading its stdin"):
            engine.notify("notifications/pad", {"pad": "x" * 300_000}, timeout=0.3)
        os.kill(pid, signal.SIGCONT)
        assert tool(engine, "echo", {"text": "after"}, timeout=10) == "after"
    finally:
        os.kill(pid, signal.SIGCONT)
        engine.close()


def emit(engine: Engine, line: bytes) -> str:
    return tool(engine, "emit", {"b64": base64.b64encode(line).decode()}, timeout=10)


def unattributable_heads(held: int) -> list[str]:
    """Heads of oversized lines that name request ``held`` in a way that cannot be trusted."""
    rest = '"result":{"pad":"'
    return [
        f'[{{"jsonrpc":"2.0","id":{held},{rest}',  # a batch: not an object
        f'{{"\\q":1,"id":{held},{rest}',  # a key that is no valid JSON string: the scan stops
        f'{{"id" {held},{rest}',  # no colon after "id": not JSON
        f'{{"id":@{held},{rest}',  # no value after the colon
        f'{{"id":"\\q{held}",{rest}',  # an id that is no valid JSON string
        f'{{"id":"{held}",{rest}',  # a string id: "7" never names request 7
    ]


def test_an_oversized_line_whose_id_cannot_be_trusted_fails_no_request() -> None:
    """Oversized lines (past max_message_bytes, so only their head is looked at) that name
    the held request only in ways that cannot be trusted: none of them fails it; each is
    skipped, the connection keeps serving, and the held request gets its real answer."""
    engine = hostile_engine(max_message_bytes=4096, stderr=lambda line: None)
    ids: list[Any] = []
    try:
        holder, box = in_thread(lambda: tool(engine, "hold", timeout=30, on_request_id=ids.append))
        assert wait_until(lambda: tool(engine, "held", timeout=10) == "1", 10)
        (held,) = ids
        for head in unattributable_heads(held):
            assert emit(engine, head.encode() + b"x" * 5000) == "emitted", head
        assert box == {}, f"the held request was failed: {box}"
        assert tool(engine, "release", timeout=10) == "ok"
        holder.join(10)
        assert box.get("value") == "released", box
    finally:
        engine.close()


def test_an_oversized_line_with_a_trustworthy_id_fails_that_request() -> None:
    """The control case: the same head with a plain top-level id fails the held request at
    once with ProtocolError naming max_message_bytes."""
    engine = hostile_engine(max_message_bytes=4096, stderr=lambda line: None)
    ids: list[Any] = []
    try:
        holder, box = in_thread(lambda: tool(engine, "hold", timeout=30, on_request_id=ids.append))
        assert wait_until(lambda: tool(engine, "held", timeout=10) == "1", 10)
        (held,) = ids
        assert emit(engine, f'{{"id":{held},"result":{{"pad":"'.encode() + b"x" * 5000) == "emitted"
        holder.join(10)
        error = box.get("error")
        assert isinstance(error, mcp_sync.ProtocolError) and "max_message_bytes=4096" in str(error), box
        assert error.request_id == held
    finally:
        engine.close()


class FirstMessageFails:
    """A message sink (the engine's side of the transport) that raises on its first message."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.closed_with: list[mcp_sync.ConnectionClosed] = []
        self.second = threading.Event()

    def message(self, message: Any) -> None:
        self.messages.append(message)
        if len(self.messages) == 1:
            raise RuntimeError("a bug in the sink")
        self.second.set()

    def fail(self, request_id: Any, error: mcp_sync.MCPError) -> None: ...

    def closed(self, error: mcp_sync.ConnectionClosed) -> None:
        self.closed_with.append(error)

    def session_renewed(self) -> None: ...


def test_a_line_the_sink_fails_on_is_skipped_and_the_reader_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """The sink raises on the first answer: that line is logged and skipped, the reader
    thread delivers the next line, and the connection is not reported closed."""
    transport = StdioTransport(PY, [HOSTILE], stderr=lambda line: None)
    sink = FirstMessageFails()
    transport.start(sink)
    try:
        with caplog.at_level(logging.ERROR, logger="mcp_sync"):
            for request_id in (1, 2):
                call = {"name": "echo", "arguments": {"text": str(request_id)}}
                transport.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": call})
            assert sink.second.wait(10)
        assert [m["id"] for m in sink.messages] == [1, 2]
        assert "a line from hostile_stdio could not be handled (skipped)" in caplog.text
        assert sink.closed_with == [] and transport.pid is not None
    finally:
        transport.close()
