"""Property tests of the JSON-RPC envelope handling (issue #8, proof 1).

Whatever JSON a server sends (any value, and envelopes one mutation away from valid),
no exception escapes the engine, the stdio reader keeps serving, and every waiting call
ends within its deadline with its own answer or its own error.

Profiles: ``short`` by default (fast, for CI); ``MCP_SYNC_HYPOTHESIS_PROFILE=long`` runs
many more examples.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wirekit import LockedWire as HardeningWire

import mcp_sync
from mcp_sync._engine import SUBSCRIPTION_ID, Engine
from mcp_sync._ids import normalize_id

settings.register_profile(
    "short", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False
)
settings.register_profile("long", max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PROFILE = settings.get_profile(os.environ.get("MCP_SYNC_HYPOTHESIS_PROFILE", "short"))
LOAD_SERVER = str(Path(__file__).resolve().parent / "servers" / "load_server.py")
DEADLINE = 5.0  # each call's timeout; it must end by then whatever arrives
pytestmark = pytest.mark.timeout(600 if os.environ.get("MCP_SYNC_HYPOTHESIS_PROFILE") == "long" else 60)

KEYS = ["jsonrpc", "id", "method", "params", "result", "error", "code", "message", "data", "_meta",
        "progressToken", "progress", "total", SUBSCRIPTION_ID]
METHODS = ["ping", "notifications/progress", "notifications/message", "notifications/cancelled",
           "sampling/createMessage", "roots/list", "elicitation/create", "tools/list"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.sampled_from(KEYS),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=4), children, max_size=5),
    max_leaves=16,
)


def id_like(ids: list[int]) -> st.SearchStrategy[Any]:
    """Ids near the pending ones: exact, as float, as string, wrapped, plus anything."""
    pick = st.sampled_from(ids)
    return st.one_of(pick, pick.map(float), pick.map(str), pick.map(lambda i: [i]), pick.map(lambda i: {"id": i}),
                     pick.map(lambda i: i + 0.5), st.booleans(), json_values)


def envelopes(ids: list[int]) -> st.SearchStrategy[Any]:
    tokens = [f"mcp_sync-{i}" for i in ids]
    params = st.fixed_dictionaries({}, optional={
        "progressToken": st.sampled_from(tokens) | json_values,
        "progress": st.integers() | st.floats() | json_values,
        "total": st.integers() | json_values,
        "message": st.text(max_size=5) | json_values,
        "_meta": st.fixed_dictionaries({SUBSCRIPTION_ID: id_like(ids)}) | json_values,
    })
    error = st.fixed_dictionaries({}, optional={
        "code": st.integers(-33000, 0) | json_values, "message": st.text(max_size=5) | json_values,
        "data": json_values,
    })
    envelope = st.fixed_dictionaries({}, optional={
        "jsonrpc": st.just("2.0") | json_values,
        "id": id_like(ids),
        "method": st.sampled_from(METHODS) | json_values,
        "params": params | json_values,
        "result": st.dictionaries(st.text(max_size=3), json_values, max_size=3) | json_values,
        "error": error | json_values,
    })
    return st.one_of(json_values, envelope, st.lists(envelope | json_values, max_size=3))


class Wire(HardeningWire):
    def send(self, message: dict, *, headers: Any = None) -> None:
        json.dumps(message, allow_nan=False)  # what a real transport would write must be valid JSON
        super().send(message, headers=headers)


def results_named(messages: list[Any], request_id: int) -> list[Any]:
    """Every ``result`` object sent in a message that names ``request_id``."""
    found = []
    for message in messages:
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and normalize_id(item.get("id")) == request_id and "result" in item:
                found.append(item["result"])
    return found


@PROFILE
@given(data=st.data())
def test_any_envelope_leaves_every_call_with_its_own_outcome(data: st.DataObject) -> None:
    wire = Wire()
    engine = Engine(wire, on_server_request=lambda method, params, request: {}, on_notification=lambda m, p: None)  # type: ignore[arg-type]
    engine.start()
    outcomes: dict[int, tuple[Any, BaseException | None, float]] = {}
    kinds = [{}, {"progress": lambda *a: None}, {"reset_timeout_on_progress": True, "max_total_timeout": DEADLINE}]

    def call(index: int) -> None:
        started = time.monotonic()
        try:
            value, error = engine.request(f"m{index}", {}, timeout=DEADLINE, **kinds[index]), None
        except BaseException as exc:
            value, error = None, exc
        outcomes[index] = (value, error, time.monotonic() - started)

    threads = [threading.Thread(target=call, args=(i,), daemon=True) for i in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + DEADLINE
    while len(wire.requests()) < 3 and time.monotonic() < deadline:
        time.sleep(0.001)
    by_method = {m["method"]: m["id"] for m in wire.requests()}
    ids = [by_method[f"m{i}"] for i in range(3)]
    messages = data.draw(st.lists(envelopes(ids), max_size=25), label="messages")
    for message in messages:
        engine.message(message)  # never raises: an exception here fails the example
    engine.fail(data.draw(id_like(ids), label="failed id"), mcp_sync.ProtocolError("unreadable answer"))
    for index, request_id in enumerate(ids):
        engine.message({"jsonrpc": "2.0", "id": request_id, "result": {"final": index}})
    for thread in threads:
        thread.join(DEADLINE + 1)
    try:
        for index, request_id in enumerate(ids):
            assert index in outcomes, f"call {index} did not end within its deadline"
            value, error, took = outcomes[index]
            assert took < DEADLINE + 1
            if error is None:
                own = [{"final": index}, *results_named(messages, request_id)]
                assert any(value is candidate or value == candidate for candidate in own), value
            else:
                assert isinstance(error, mcp_sync.MCPError), repr(error)
                assert not isinstance(error, mcp_sync.RequestTimeout)  # every call got an answer in time
                assert error.request_id == request_id and error.method == f"m{index}", error
    finally:
        engine.close()


# -- through a real stdio reader ------------------------------------------------------------------

raw_lines = st.one_of(
    envelopes(list(range(1, 40))).map(lambda v: json.dumps(v)),  # may hold NaN/Infinity: Python reads it
    st.text(max_size=40),
    # (JSON nested beyond the recursion limit is the stdio reader's own test: json.loads raises there)
    st.sampled_from(["{", "[]", "null", "{\"jsonrpc\": \"2.0\", \"id\": [1], \"result\": {}}",
                     "[" * 200 + "]" * 200, "{\"id\": {\"a\": []}, \"result\": 1}"]),
)


@pytest.fixture(scope="module")
def replay_client() -> Iterator[mcp_sync.Client]:
    client = mcp_sync.Client.stdio(sys.executable, [LOAD_SERVER], mode="legacy", timeout=DEADLINE)
    client.connect()
    yield client
    client.close()


@PROFILE
@given(lines=st.lists(raw_lines, max_size=12))
def test_the_stdio_reader_survives_any_lines(replay_client: mcp_sync.Client, lines: list[str]) -> None:
    client = replay_client
    engine = client._engine
    assert engine is not None
    pid = engine.transport.pid  # type: ignore[attr-defined]
    started = time.monotonic()
    try:
        result = client.call_tool("replay", {"lines": lines}, timeout=DEADLINE)
        assert isinstance(result, mcp_sync.CallToolResult)
    except mcp_sync.MCPError as exc:  # a garbage line that named this call may fail it, nothing else
        assert not isinstance(exc, (mcp_sync.ConnectionClosed, mcp_sync.RequestTimeout)), exc
        assert exc.method == "tools/call"
    assert time.monotonic() - started < DEADLINE + 3  # the deadline, plus slack for a loaded machine
    assert client.call_tool("echo", {"text": "alive"}, timeout=DEADLINE).text == "alive"
    assert client._engine is engine and engine.transport.pid == pid  # type: ignore[attr-defined]
