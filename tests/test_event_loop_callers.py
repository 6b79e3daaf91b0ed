"""#31.8: callers on an event loop (FastAPI endpoints, async agent frameworks) await
``mcp_sync.to_thread(client.call_tool, ...)``: the loop is never blocked, and cancelling the
awaiting task cancels the call on the server (a real SDK server, both eras; what the client
sent is read off the wire with tests/servers/wire_tap.py)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

import mcp_sync

from conftest import SDK_SERVER

TAP = Path(__file__).resolve().parent / "servers" / "wire_tap.py"


def _sent(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("era", ["legacy", "modern"])
def test_cancelling_the_awaiting_task_cancels_the_call_on_the_server(tmp_path: Path, era: str) -> None:
    log = tmp_path / "wire.jsonl"
    with mcp_sync.Client.stdio(sys.executable, [str(TAP), str(log), sys.executable, SDK_SERVER, "stdio"],
                               mode=era, timeout=30) as client:
        ticks = 0

        async def ticker() -> None:  # runs only while the loop is free
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        async def main() -> float:
            tick_task = asyncio.create_task(ticker())
            call = asyncio.create_task(mcp_sync.to_thread(client.call_tool, "slow", {"seconds": 30}))
            await asyncio.sleep(0.5)
            assert not call.done()
            started = time.monotonic()
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await call
            tick_task.cancel()
            return started

        started = asyncio.run(main())
        assert ticks >= 20, ticks  # the loop kept running while the call was waiting
        # the server was told, and the client is free for the next call
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            m.get("method") == "notifications/cancelled" for m in _sent(log)
        ):
            time.sleep(0.05)
        cancels = [m for m in _sent(log) if m.get("method") == "notifications/cancelled"]
        calls = [m for m in _sent(log) if m.get("method") == "tools/call"]
        assert len(cancels) == 1 and cancels[0]["params"]["requestId"] == calls[0]["id"], cancels
        assert "asyncio task was cancelled" in cancels[0]["params"].get("reason", "")
        assert time.monotonic() - started < 10
        assert asyncio.run(mcp_sync.to_thread(client.call_tool, "echo", {"text": "next"})).text == "next"


def test_a_given_token_is_used_and_other_callables_run_as_they_are() -> None:
    """A caller's own ``cancel=`` is kept (and cancelled with the task); a callable without
    ``cancel=`` just runs on the executor, with the caller's context variables."""
    import contextvars

    user = contextvars.ContextVar("user", default="nobody")
    seen: list[object] = []

    def plain(x: int) -> tuple[int, str]:
        return x * 2, user.get()

    def takes_cancel(cancel: mcp_sync.CancellationToken | None = None) -> None:
        seen.append(cancel)

    async def main() -> tuple[int, str]:
        user.set("ann")
        token = mcp_sync.CancellationToken()
        await mcp_sync.to_thread(takes_cancel, cancel=token)
        await mcp_sync.to_thread(takes_cancel)
        return await mcp_sync.to_thread(plain, 21)

    assert asyncio.run(main()) == (42, "ann")
    assert isinstance(seen[0], mcp_sync.CancellationToken) and isinstance(seen[1], mcp_sync.CancellationToken)
    assert seen[0] is not seen[1] and not seen[1].cancelled
