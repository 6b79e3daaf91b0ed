"""The engine against hostile input: whatever the server sends, routing never raises,
waiting requests still get their answers, and the reader thread keeps serving."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest
from wirekit import Wire

import mcp_sync
from mcp_sync._engine import Engine
from mcp_sync.transports.base import BaseTransport  # noqa: F401


def random_json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(9 if depth < 3 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, 1, -1, 2**63, 1.5, float("inf")])
    if kind == 3:
        return rng.choice(["", "x", "2.0", "notifications/progress", "ping", "\u0000", "é"])
    if kind == 4:
        return rng.choice([[], {}])
    if kind in (5, 6):
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(3))]
    keys = ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data", "_meta",
            "progressToken", "progress", "io.modelcontextprotocol/subscriptionId"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randrange(5))}


def near_valid(rng: random.Random, pending_id: int) -> Any:
    """Shapes one mutation away from valid JSON-RPC."""
    choices: list[Any] = [
        {"jsonrpc": "2.0", "id": pending_id},  # neither result nor error
        {"jsonrpc": "2.0", "id": str(pending_id), "result": {}},  # id of the wrong type
        {"jsonrpc": "2.0", "id": True, "result": {}},
        {"jsonrpc": "1.0", "id": pending_id, "result": {}},
        {"jsonrpc": "2.0", "method": 7},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": [], "progress": "a"}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": None},
        {"jsonrpc": "2.0", "id": {}, "method": "ping"},
        {"jsonrpc": "2.0", "id": 9, "method": "sampling/createMessage", "params": "nope"},
        [{"jsonrpc": "2.0"}, 3, None],
    ]
    return rng.choice(choices)


def test_garbage_never_breaks_routing() -> None:
    wire = Wire()
    engine = Engine(wire)  # type: ignore[arg-type]
    engine.start()
    rng = random.Random(2026)
    results: dict[str, Any] = {}

    def ask() -> None:
        try:
            results["value"] = engine.request("tools/list", {}, timeout=10)
        except mcp_sync.MCPError as exc:  # must not happen: garbage never settles the request
            results["error"] = exc

    caller = threading.Thread(target=ask)
    caller.start()
    while not wire.sent:
        threading.Event().wait(0.01)
    pending_id = wire.sent[0]["id"]
    for _ in range(3000):
        message = random_json(rng) if rng.random() < 0.6 else near_valid(rng, pending_id)
        engine.message(message)  # must never raise
    assert "value" not in results and "error" not in results  # nothing answered it by mistake
    engine.message({"jsonrpc": "2.0", "id": pending_id, "result": {"tools": []}})
    caller.join(5)
    assert results == {"value": {"tools": []}}
    # server requests in the garbage were answered with errors, never left unanswered or crashing
    assert all("error" in m or "result" in m for m in wire.sent[1:] if "method" not in m)
    engine.close()


@pytest.mark.parametrize("answer", [{"result": [1, 2]}, {"error": {"code": "x"}}, {"error": "boom"}])
def test_an_invalid_answer_is_a_protocol_error(answer: dict) -> None:
    """The answer to *this* request is not valid JSON-RPC: that request fails with ProtocolError."""
    wire = Wire()
    engine = Engine(wire)  # type: ignore[arg-type]
    engine.start()
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            engine.request("tools/list", {}, timeout=5)
        except mcp_sync.MCPError as exc:
            errors.append(exc)

    caller = threading.Thread(target=ask)
    caller.start()
    while not wire.sent:
        threading.Event().wait(0.01)
    engine.message({"jsonrpc": "2.0", "id": wire.sent[0]["id"], **answer})
    caller.join(5)
    assert len(errors) == 1 and isinstance(errors[0], mcp_sync.ProtocolError)
    engine.close()
