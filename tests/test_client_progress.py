"""#31.5: progress for the whole client, and a progress token the caller chooses is kept.

``on_progress(event)`` (constructor or settable) gets every request's progress notifications as
``mcp_sync.ProgressEvent`` (method, request id, token, server), after the call's own
``progress=``. A ``meta={"progressToken": ...}`` the caller gives is what goes on the wire (P1:
a string or an integer, unique across requests in flight), checked on the wire with
tests/servers/wire_tap.py; the servers echo it in their notifications (the Python SDK server's
``slow``, server-everything's ``trigger-long-running-operation``), in both eras.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS

TAP = str(SERVERS / "wire_tap.py")


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_a_callers_token_is_kept_on_the_wire_and_its_progress_delivered(tmp_path: Path, mode: str) -> None:
    """E8/P1: the caller's token goes out as given (today's main replaced it with its own when the
    call also passed ``progress=``); the server's notifications name it, and both callbacks get them."""
    wire = tmp_path / "wire.jsonl"
    events: list[mcp_sync.ProgressEvent] = []
    per_call: list[tuple] = []
    with mcp_sync.Client.stdio(PY, [TAP, str(wire), PY, SDK_SERVER, "stdio"], mode=mode, stderr="log",
                               on_progress=events.append, name="sdk_server") as client:
        result = client.call_tool("slow", {"seconds": 0.4}, meta={"progressToken": "job-42"},
                                  progress=lambda *args: per_call.append(args))
        assert result.text == "slept 0.4"
        numbered = client.call_tool("slow", {"seconds": 0.2}, meta={"progressToken": 7})
        assert numbered.text == "slept 0.2"
    sent = [json.loads(line) for line in wire.read_text().splitlines()]
    tokens = [m["params"]["_meta"].get("progressToken") for m in sent if m.get("method") == "tools/call"]
    assert tokens == ["job-42", 7]
    assert per_call == [(step, 4, f"step {step}/4") for step in (1, 2, 3, 4)]
    first = [e for e in events if e.progress_token == "job-42"]
    assert [(e.progress, e.total, e.message) for e in first] == per_call
    assert {(e.method, e.server) for e in events} == {("tools/call", "sdk_server")}
    assert [e.progress for e in events if e.progress_token == 7] == [1, 2]  # an integer token, no progress=
    ids = {e.progress_token: e.request_id for e in events}
    assert isinstance(ids["job-42"], int) and ids[7] != ids["job-42"]


def test_on_progress_gets_every_calls_progress_over_http(everything_http_url: str) -> None:
    """server-everything (legacy, Streamable HTTP): concurrent calls, each event with its request."""
    events: list[mcp_sync.ProgressEvent] = []
    lock = threading.Lock()

    def record(event: mcp_sync.ProgressEvent) -> None:
        with lock:
            events.append(event)

    with mcp_sync.Client.http(everything_http_url, on_progress=record) as client:
        threads = [threading.Thread(target=client.call_tool, args=(
            "trigger-long-running-operation", {"duration": 0.4, "steps": 2})) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert client.call_tool("echo", {"message": "x"}).text  # no progress: no event
    by_request: dict[Any, list[float]] = {}
    for event in events:
        assert event.method == "tools/call" and event.total == 2
        by_request.setdefault(event.request_id, []).append(event.progress)
    assert len(by_request) == 2 and all(values == [1, 2] for values in by_request.values())
    assert len({e.progress_token for e in events}) == 2


def test_on_progress_may_be_set_and_removed_on_a_live_client(tmp_path: Path) -> None:
    """Set later, it starts with the next request (which then carries a token); removed, requests
    go out without one again (E8: progressToken only when someone wants progress)."""
    wire = tmp_path / "wire.jsonl"
    events: list[mcp_sync.ProgressEvent] = []
    with mcp_sync.Client.stdio(PY, [TAP, str(wire), PY, SDK_SERVER, "stdio"], mode="modern",
                               stderr="log") as client:
        assert client.on_progress is None
        client.call_tool("slow", {"seconds": 0.1})
        client.on_progress = events.append
        assert client.on_progress == events.append
        client.call_tool("slow", {"seconds": 0.2})
        client.on_progress = None
        client.call_tool("slow", {"seconds": 0.1})
    assert [e.progress for e in events] == [1, 2]
    sent = [json.loads(line) for line in wire.read_text().splitlines()]
    has_token = ["progressToken" in m["params"]["_meta"] for m in sent if m.get("method") == "tools/call"]
    assert has_token == [False, True, False]


def test_a_token_in_use_or_of_a_wrong_type_is_refused_before_sending() -> None:
    """P1: a token "MUST be a string or integer" and "MUST be unique across all active requests"."""
    started = threading.Event()
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy", stderr="log") as client:
        with pytest.raises(ValueError, match="string or an integer"):
            client.call_tool("echo", {"text": "x"}, meta={"progressToken": 1.5})
        with pytest.raises(ValueError, match="string or an integer"):
            client.call_tool("echo", {"text": "x"}, meta={"progressToken": True})
        box: dict[str, Any] = {}
        slow = threading.Thread(target=lambda: box.setdefault("text", client.call_tool(
            "slow", {"seconds": 1.0}, meta={"progressToken": "busy"}, progress=lambda *a: started.set()).text))
        slow.start()
        assert started.wait(10)
        with pytest.raises(ValueError, match="in use by a request in flight"):
            client.call_tool("echo", {"text": "x"}, meta={"progressToken": "busy"})
        slow.join(10)
        assert box["text"] == "slept 1.0"
        assert client.call_tool("echo", {"text": "again"}, meta={"progressToken": "busy"}).text == "again"


def test_a_failing_on_progress_does_not_break_the_call() -> None:
    def broken(event: mcp_sync.ProgressEvent) -> None:
        raise RuntimeError("boom")

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern", stderr="log", on_progress=broken) as client:
        assert client.call_tool("slow", {"seconds": 0.2}).text == "slept 0.2"
        assert client.call_tool("echo", {"text": "after"}).text == "after"
