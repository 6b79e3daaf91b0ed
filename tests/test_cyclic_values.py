"""A value that contains itself, given anywhere a caller's JSON goes, is refused promptly.

The property: every walk over a caller's value ends, whatever the value (#22: fix the class).
Before, ``check_json``'s walk followed a cycle for ever: ``call_tool("echo", {"a": a})`` with
``a["a"] = a`` never returned and spun a core; so did ``request``/``notify`` params, ``meta`` and
``input_responses``. Each case runs on a thread that must end within a bound far above the
microseconds a refusal takes and far below "for ever"; it must raise ValueError or TypeError.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER

BOUND_S = 10.0  # a refusal takes microseconds; the old walk never ended


def _loop() -> dict[str, Any]:
    value: dict[str, Any] = {"a": 1}
    value["self"] = [value]
    return value


def _ends_with(action: Callable[[], Any]) -> BaseException | None:
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            action()
        except BaseException as exc:  # what it raised is the outcome
            outcome.append(exc)
        else:
            outcome.append(None)

    worker = threading.Thread(target=run, daemon=True, name="cyclic-value-case")
    worker.start()
    worker.join(BOUND_S)
    assert not worker.is_alive(), f"still walking a cyclic value after {BOUND_S} s"
    return outcome[0]


CASES: dict[str, Callable[[mcp_sync.Client], Any]] = {
    "call_tool arguments": lambda c: c.call_tool("echo", {"text": _loop()}),
    "call_tool meta": lambda c: c.call_tool("echo", {"text": "hi"}, meta={"example.com/k": _loop()}),
    "call_tool input_responses": lambda c: c.call_tool("echo", {"text": "hi"}, input_responses={"k": _loop()}),
    "request params": lambda c: c.request("tools/call", {"name": "echo", "arguments": _loop()}),
    "notify params": lambda c: c.notify("notifications/custom", {"x": _loop()}),
    "complete context": lambda c: c.complete({"type": "ref/prompt", "name": "p"}, ("a", "b"), context={"x": _loop()}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_cyclic_value_is_refused_before_anything_is_sent(case: str) -> None:
    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30)
    try:
        error = _ends_with(lambda: CASES[case](client))
        assert isinstance(error, (ValueError, TypeError)), f"{case}: {error!r}"
        assert client.state is mcp_sync.ClientState.NEW, "a refused value reached the server"
    finally:
        client.close()


def test_cyclic_client_info_or_extensions_fail_at_construction() -> None:
    for options in ({"client_info": {"name": "x", "version": "1", "more": _loop()}},
                    {"extensions": {"example.com/ext": _loop()}}):
        error = _ends_with(lambda options=options: mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], **options).close())
        assert isinstance(error, (ValueError, TypeError)), f"{options}: {error!r}"


def test_the_engine_refuses_a_cyclic_value_it_was_not_told_was_checked() -> None:
    """The engine's own backstop (request/notify with unchecked params) ends too: the wire
    encoder refuses the value; the connection keeps serving."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30) as client:
        client.connect()
        engine = client._session.engine
        assert engine is not None
        error = _ends_with(lambda: engine.request("tools/call", {"name": "echo", "arguments": _loop()}, timeout=5))
        assert isinstance(error, ValueError), repr(error)
        error = _ends_with(lambda: engine.notify("notifications/custom", {"x": _loop()}))
        assert isinstance(error, ValueError), repr(error)
        assert client.call_tool("echo", {"text": "still serving"}).text == "still serving"
