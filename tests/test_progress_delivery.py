"""Every progress notification reaches the callback, in order (issue #18.19).

The contract says every progress notification that arrived before a call's answer is delivered
before the call returns; a burst of 50 used to reach the callback once (coalesced into one
queued delivery). Now every one is delivered up to MAX_QUEUED_PROGRESS waiting per request; only
a callback that far behind has later values coalesced (the newest replaces the last waiting)."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import mcp_sync
from mcp_sync import _engine
from mcp_sync._engine import MAX_QUEUED_PROGRESS, Engine

pytestmark = pytest.mark.timeout(120)

#: A real peer: the official SDK's MCPServer, reporting progress in a loop with no pause, so
#: the notifications reach the client as one burst ahead of the answer.
BURST_SERVER = textwrap.dedent(
    """
    import warnings
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("burst")

    @server.tool()
    async def burst(n: int, ctx: Context) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n, f"step {i + 1}")
        return "done"

    server.run("stdio")
    """
)


@pytest.fixture
def burst_server(tmp_path: Path) -> list[str]:
    script = tmp_path / "burst_server.py"
    script.write_text(BURST_SERVER)
    return [str(script)]


def test_a_burst_of_50_reaches_the_callback_50_times_in_order(burst_server: list[str]) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    def progress(done: float, total: float | None, message: str | None) -> None:
        time.sleep(0.002)  # a callback slower than the wire: the burst piles up behind it
        seen.append((done, total, message))

    with mcp_sync.Client.stdio(sys.executable, burst_server, timeout=60) as client:
        for _ in range(3):  # several calls: none may lose a notification
            seen.clear()
            result = client.call_tool("burst", {"n": 50}, progress=progress)
            assert result.text == "done"
            assert seen == [(i, 50, f"step {i}") for i in range(1, 51)]


class Wire:
    """An in-memory transport: records what is sent, answers nothing by itself."""

    name = "wire"

    def __init__(self) -> None:
        self.sink: Any = None
        self.sent: list[dict] = []
        self.sent_event = threading.Event()

    def start(self, sink: Any) -> None:
        self.sink = sink

    def send(self, message: dict, *, headers: Any = None) -> None:
        self.sent.append(message)
        self.sent_event.set()

    def abort(self, request_id: Any) -> bool:
        return False

    def configure(self, **_: Any) -> None: ...

    def close(self) -> None: ...


def _progress(token: str, value: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": value}}


@pytest.mark.parametrize("bound", [MAX_QUEUED_PROGRESS, 5])
def test_past_the_bound_the_newest_value_replaces_the_last_waiting(
    bound: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the callback stuck, up to ``bound`` deliveries wait, in order; the rest coalesce into
    the last waiting one (the newest value wins), so the queue never grows past the bound."""
    monkeypatch.setattr(_engine, "MAX_QUEUED_PROGRESS", bound)
    assert MAX_QUEUED_PROGRESS >= 1000  # the contract's generous bound
    wire = Wire()
    engine = Engine(wire)
    engine.start()
    entered, release = threading.Event(), threading.Event()
    seen: list[float] = []

    def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)
        entered.set()
        assert release.wait(30)

    answer: list[Any] = []
    caller = threading.Thread(
        target=lambda: answer.append(engine.request("tools/call", {"name": "x"}, progress=progress, timeout=60))
    )
    caller.start()
    try:
        assert wire.sent_event.wait(10)
        request = wire.sent[0]
        token = request["params"]["_meta"]["progressToken"]
        engine.message(_progress(token, 1))
        assert entered.wait(10)  # delivery 1 is running (and stuck): nothing of it waits any more
        flood = 5 * bound
        for value in range(2, flood + 1):
            engine.message(_progress(token, value))
            assert engine.dispatcher._queue.qsize() <= bound  # bounded whatever the flood
        engine.message({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})
        release.set()
        caller.join(30)
        assert answer == [{"content": []}]
        # 1 (running), 2 .. bound + 1 (waiting, in order), then the newest value in place of the last
        assert seen == [*range(1, bound + 1), flood]
    finally:
        release.set()
        engine.close()
        caller.join(5)


def test_under_the_bound_nothing_is_coalesced_however_slow_the_callback() -> None:
    """Each of 500 notifications queued behind a stuck callback is delivered, in order."""
    wire = Wire()
    engine = Engine(wire)
    engine.start()
    entered, release = threading.Event(), threading.Event()
    seen: list[float] = []

    def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)
        entered.set()
        assert release.wait(30)

    answer: list[Any] = []
    caller = threading.Thread(
        target=lambda: answer.append(engine.request("tools/call", {}, progress=progress, timeout=60))
    )
    caller.start()
    try:
        assert wire.sent_event.wait(10)
        request = wire.sent[0]
        token = request["params"]["_meta"]["progressToken"]
        engine.message(_progress(token, 1))
        assert entered.wait(10)
        for value in range(2, 501):
            engine.message(_progress(token, value))
        engine.message({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        release.set()
        caller.join(30)
        assert answer == [{}]
        assert seen == list(range(1, 501))
    finally:
        release.set()
        engine.close()
        caller.join(5)
