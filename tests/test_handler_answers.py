"""What the client's input handlers answer, checked before it is sent, and who hears of a failure.

Against the real peers: the SDK server's ``ask_name`` (an elicitation inside a modern call) and
server-everything (legacy), which asks for the client's roots 350 ms after the handshake and
again from its ``get-roots-list`` tool. A scripted in-memory server stands in only for a
``requestedSchema`` no real server sends.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from helpers import in_thread
from wirekit import DISCOVER, FakeTransport

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS

pytestmark = pytest.mark.timeout(60)

TAP = str(SERVERS / "wire_tap.py")


def test_an_invalid_elicit_result_is_refused_with_what_is_wrong(no_leaks: None) -> None:
    """An ElicitResult with an unknown action, a content that is not an object, or a value JSON
    cannot carry is a HandlerError naming the problem; nothing wrong is sent, and the client
    answers the next request as usual."""
    answers: list[Any] = [
        {"action": "maybe"},
        {"action": "accept", "content": ["Ada"]},
        {"action": "accept", "content": {"name": float("nan")}},
        {"action": "accept", "content": {"name": {"Ada"}}},
        "accept",
    ]

    def on_elicitation(params: dict) -> Any:
        return answers.pop(0)

    expected = [
        r"on_elicitation returned action 'maybe'; it must be one of \['accept', 'decline', 'cancel'\]",
        "on_elicitation returned a 'content' that is not a dict",
        r"on_elicitation returned a dict whose value .*name.*NaN",
        r"on_elicitation returned a dict whose value .*name.*set",
        r"on_elicitation returned str \('accept'\); it must return a dict",
    ]
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern", timeout=30,
                               on_elicitation=on_elicitation) as client:
        for message in expected:
            with pytest.raises(mcp_sync.HandlerError, match=message) as raised:
                client.call_tool("ask_name", {})
            assert raised.value.handler == "on_elicitation"
        answers.append({"action": "accept", "content": {"name": "Ada"}})
        assert client.call_tool("ask_name", {}).text == "Hello, Ada"
    assert answers == []


def test_a_server_schema_that_is_not_json_schema_is_refused_not_blamed_on_the_handler() -> None:
    """A ``requestedSchema`` jsonschema cannot use is the server's fault: the request is refused
    (InputRequiredError naming the schema), not reported as a bad answer of the handler."""
    broken = {"type": "object", "properties": {"name": {"type": "text"}}}  # "text" is no JSON Schema type
    ask = {"who": {"method": "elicitation/create",
                   "params": {"mode": "form", "message": "Who?", "requestedSchema": broken}}}

    def handler(method: str, params: dict) -> dict:
        if method == "server/discover":
            return DISCOVER
        return {"resultType": "input_required", "inputRequests": ask, "requestState": "s1"}

    handled: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        handled.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    transport = FakeTransport(handler)
    with mcp_sync.Client(transport, mode="modern", timeout=10, on_elicitation=on_elicitation) as client:
        with pytest.raises(mcp_sync.InputRequiredError,
                           match="handler for elicitation/create refused: requestedSchema is not a usable JSON Schema"):
            client.call_tool("echo", {})
    assert len(handled) == 1  # the handler answered; its answer could not be checked, so it was not sent
    assert transport.count("tools/call") == 1


def test_a_schema_default_of_a_kind_a_form_cannot_hold_is_not_filled_in() -> None:
    """SEP-1034: defaults are filled in for the form's field kinds only; an object field's default
    (not a form field) and a field that is not a schema are left out."""
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "default": "Ada"},
        "address": {"type": "object", "default": {"city": "Paris"}},
        "size": {"oneOf": [{"const": "s"}, {"const": "l"}], "default": "l"},
        "broken": "not a schema",
    }}
    assert mcp_sync.apply_defaults(schema) == {"name": "Ada", "size": "l"}
    assert mcp_sync.apply_defaults({"properties": None}, {"x": 1}) == {"x": 1}


def _initialize_capabilities(log: Path) -> dict:
    sent = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    [initialize] = [m for m in sent if m.get("method") == "initialize"]
    return initialize["params"]["capabilities"]  # type: ignore[no-any-return]


def test_roots_handler_failures_against_everything(everything_js: Path, tmp_path: Path) -> None:
    """server-everything asks for the roots right after the handshake, and again in its tool.

    * host_tasks=True with no elicitation or sampling handler hosts nothing: no tasks capability;
    * an on_roots failure while no call is in flight raises nowhere: the server is answered with
      an error, and the next call does not inherit the failure;
    * one during the only call in flight raises from that call, naming what on_roots gave;
    * one while two calls are in flight is blamed on neither: each ends with the server's answer.
    """
    roots: list[Any] = ["file:///project"]  # what on_roots gives: roots[0]
    asked = threading.Event()
    lines: list[str] = []
    refused = threading.Event()

    def on_roots() -> Any:
        asked.set()
        return roots[0]

    def stderr(line: str) -> None:
        lines.append(line)
        if "Failed to request roots" in line:
            refused.set()

    log = tmp_path / "sent.jsonl"
    roots[0] = "file:///project"  # a string, not a list of roots
    with mcp_sync.Client.stdio(PY, [TAP, str(log), "node", str(everything_js), "stdio"], mode="legacy",
                               timeout=30, on_roots=on_roots, host_tasks=True, stderr=stderr) as client:
        assert client.era == "legacy"
        assert _initialize_capabilities(log) == {"roots": {"listChanged": True}}
        # the server's own request, 350 ms after the handshake, while no call is in flight
        assert asked.wait(10) and refused.wait(10), lines
        assert client.call_tool("echo", {"message": "after"}).text == "Echo: after"
        # during the only call in flight: that call raises the handler's failure
        with pytest.raises(mcp_sync.HandlerError, match="on_roots gave str; it must be a list") as raised:
            client.call_tool("get-roots-list", {})
        assert raised.value.handler == "on_roots"
        roots[0] = ["file:///ok", 7]
        with pytest.raises(mcp_sync.HandlerError, match=r"on_roots gave a root that is not a URI .*: 7"):
            client.call_tool("get-roots-list", {})
        # with another call in flight the failure cannot be attributed: the server's answer stands
        progressed = threading.Event()
        cancel = mcp_sync.CancellationToken()
        thread, box = in_thread(lambda: client.call_tool(
            "trigger-long-running-operation", {"duration": 20, "steps": 200}, cancel=cancel,
            progress=lambda *args: progressed.set()))
        try:
            assert progressed.wait(10)
            roots[0] = {"uri": "file:///not-a-list"}
            listed = client.call_tool("get-roots-list", {})
            assert "no roots are currently configured" in listed.text
        finally:
            cancel.cancel()
            thread.join(10)
        assert isinstance(box.get("error"), mcp_sync.Cancelled), box  # it ended by its own cancellation
        roots[0] = ["file:///project"]
        assert "file:///project" in client.call_tool("get-roots-list", {}).text
