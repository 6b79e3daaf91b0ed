"""#31.4: sampling, elicitation and roots handlers get their request's context.

A handler with one more positional parameter than usual gets a ``mcp_sync.RequestContext``
(decided once, as it is set); a one-parameter handler is called as before. Against the Python SDK
server (tests/servers/sdk_server.py) in both eras:

- legacy: the context names the JSON-RPC request (its id, its ``progressToken``); the SDK server's
  ``ask_within`` gives up on its ``elicitation/create`` after a while and sends
  ``notifications/cancelled`` for it (cancellation.mdx, LG10: "server may notifications/cancelled
  its own requests"): the long handler sees ``context.cancel`` set and no answer is sent; its
  ``report_progress`` reaches the server as ``notifications/progress`` (2025-11-25 progress.mdx:
  "Either side can send progress notifications", P1: increasing values, the request's token);
- modern: the context names the ``inputRequests`` key; the call's own cancel token sets it;
  progress is not sent (2026-07-28: only servers send progress).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS, fault_args

TAP = str(SERVERS / "wire_tap.py")


def sdk(mode: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, stderr="log", **options)


def test_legacy_a_long_elicitation_sees_the_servers_cancellation(tmp_path: Path) -> None:
    """The server gives up after 0.5 s: the handler's token is set (with the server's reason) well
    before its own 20 s bound, and its late answer is not sent (only the call's answer follows)."""
    wire = tmp_path / "wire.jsonl"
    seen: dict[str, Any] = {}

    def on_elicitation(params: dict, context: mcp_sync.RequestContext) -> dict:
        seen["context"] = context
        started = time.monotonic()
        stopped = threading.Event()
        context.cancel.add_callback(lambda reason: stopped.set())
        stopped.wait(20)  # a person who never answers
        seen["waited"] = time.monotonic() - started
        return {"action": "accept", "content": {"name": "too late"}}

    with mcp_sync.Client.stdio(PY, [TAP, str(wire), PY, SDK_SERVER, "stdio"], mode="legacy", stderr="log",
                               on_elicitation=on_elicitation, name="people") as client:
        result = json.loads(client.call_tool("ask_within", {"seconds": 0.5}).text)
    assert result["outcome"] == "gave up"
    context = seen["context"]
    assert context.cancel.cancelled and context.cancel.reason
    assert seen["waited"] < 10
    assert (context.server, context.era, context.method) == ("people", "legacy", "elicitation/create")
    assert context.target == client._session.connection.target and "wire_tap.py" in context.target
    sent = [json.loads(line) for line in wire.read_text().splitlines()]
    answers = [m for m in sent if "id" in m and "method" not in m]
    assert context.request_id is not None and context.request_id not in [m["id"] for m in answers]


def test_legacy_progress_reaches_the_server_with_its_token() -> None:
    """The request carried a progressToken: report_progress sends it (increasing values only)."""
    seen: dict[str, Any] = {}

    def on_elicitation(params: dict, context: mcp_sync.RequestContext) -> dict:
        seen["token"] = context.progress_token
        assert context.report_progress(1, 2, "reading")
        with pytest.raises(ValueError, match="increase"):
            context.report_progress(1, 2)
        assert context.report_progress(2, 2, "done")
        return {"action": "accept", "content": {"name": "Ada"}}

    with sdk("legacy", on_elicitation=on_elicitation) as client:
        result = json.loads(client.call_tool("ask_within", {"seconds": 10}).text)
    assert result == {"outcome": "answered", "action": "accept",
                      "progress": [[1.0, 2.0, "reading"], [2.0, 2.0, "done"]]}
    assert seen["token"] is not None


def test_legacy_without_a_token_no_progress_is_sent() -> None:
    """``ask_name``'s request carries no progressToken: report_progress sends nothing."""
    reported: list[bool] = []

    def on_elicitation(params: dict, context: mcp_sync.RequestContext) -> dict:
        reported.append(context.report_progress(1))
        return {"action": "accept", "content": {"name": "Bo"}}

    with sdk("legacy", on_elicitation=on_elicitation) as client:
        assert client.call_tool("ask_name", {}).text == "Hello, Bo"
    assert reported == [False]


def test_modern_the_context_names_the_input_request_and_follows_the_calls_cancel() -> None:
    """Modern: the request id is the inputRequests key; cancelling the call sets the handler's token
    (the handler stops, and the call raises Cancelled)."""
    seen: dict[str, Any] = {}
    entered = threading.Event()
    cancel = mcp_sync.CancellationToken()

    def on_elicitation(params: dict, context: mcp_sync.RequestContext) -> dict:
        seen["context"] = context
        entered.set()
        stopped = threading.Event()
        context.cancel.add_callback(lambda reason: stopped.set())
        seen["stopped"] = stopped.wait(20)
        seen["progress"] = context.report_progress(1)
        return {"action": "cancel"}

    with sdk("modern", on_elicitation=on_elicitation, name="modern-one") as client:
        threading.Timer(0.3, lambda: entered.wait(10) and cancel.cancel("user pressed stop")).start()
        with pytest.raises(mcp_sync.Cancelled):
            client.call_tool("ask_name", {}, cancel=cancel)
    context = seen["context"]
    assert seen["stopped"] and context.cancel.cancelled and context.cancel.reason == "user pressed stop"
    assert (context.server, context.era, context.method) == ("modern-one", "modern", "elicitation/create")
    assert isinstance(context.request_id, str) and context.request_id  # the inputRequests key
    assert context.progress_token is None and seen["progress"] is False


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_one_parameter_handlers_work_as_before_and_sampling_gets_a_context(mode: str) -> None:
    contexts: list[mcp_sync.RequestContext] = []

    def on_sampling(params: dict, context: mcp_sync.RequestContext) -> dict:
        contexts.append(context)
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    with sdk(mode, on_elicitation=lambda params: {"action": "accept", "content": {"name": "Old"}},
             on_sampling=on_sampling) as client:
        assert client.call_tool("ask_name", {}).text == "Hello, Old"
        assert "ok" in client.call_tool("ask_llm", {"question": "?"}).text
    assert [(c.era, c.method) for c in contexts] == [(mode, "sampling/createMessage")]


def test_a_roots_callable_may_take_the_context() -> None:
    """Modern (the fault server's ``mrtr_many`` asks roots/list and sampling in one round): each
    handler gets its own input request's context; a roots callable without a parameter as before."""
    contexts: list[Any] = []

    def on_roots(context: mcp_sync.RequestContext) -> list[str]:
        contexts.append(context)
        return ["file:///ctx"]

    def on_sampling(params: dict, context: mcp_sync.RequestContext) -> dict:
        contexts.append(context)
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), on_roots=on_roots,
                               on_sampling=on_sampling) as client:
        body = json.loads(client.call_tool("mrtr_many", {"tag": "t"}).text)
        assert body["responses"]["roots"] == {"roots": [{"uri": "file:///ctx"}]}
        client.roots = lambda: ["file:///plain"]
        body = json.loads(client.call_tool("mrtr_many", {"tag": "u"}).text)
        assert body["responses"]["roots"] == {"roots": [{"uri": "file:///plain"}]}
    by_method = {c.method: c for c in contexts[:2]}
    assert set(by_method) == {"roots/list", "sampling/createMessage"}
    assert {c.request_id for c in by_method.values()} == {"roots", "llm"}  # the inputRequests keys
    assert all(c.era == "modern" for c in contexts)


def test_which_handlers_take_a_context() -> None:
    from mcp_sync._protocol.handlers import takes_context

    class Answerer:
        def __call__(self, params: dict, context: Any) -> dict:
            return {}

        def plain(self, params: dict) -> dict:
            return {}

    assert takes_context(lambda params, context: {}, 1)
    assert takes_context(Answerer(), 1) and not takes_context(Answerer().plain, 1)
    assert not takes_context(lambda params: {}, 1)
    assert not takes_context(lambda *args: {}, 1)  # *args is not a context parameter
    assert not takes_context(dict, 1)  # no signature to read: called as before
    assert takes_context(lambda context: [], 0) and not takes_context(lambda: [], 0)
