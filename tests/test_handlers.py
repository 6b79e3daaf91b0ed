"""Servers that ask back: elicitation, sampling, roots, in both eras (issue 4).

Modern servers ask through ``input_required`` results (MRTR, R1-R8); legacy
servers through server-to-client requests (LG10).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import run_workers

import mcp_sync

from conftest import PY, SDK_SERVER, fault_args

pytestmark = pytest.mark.timeout(60)


def accept_name(params: dict) -> dict:
    return {"action": "accept", "content": {"name": "Zed"}}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_elicitation_both_eras(mode: str, no_leaks: None) -> None:
    """The SDK's ask_name elicits: MRTR on 2026-07-28, elicitation/create on 2025-11-25."""
    seen: list[dict] = []

    def handler(params: dict) -> dict:
        seen.append(params)
        return accept_name(params)

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, on_elicitation=handler) as client:
        assert client.call_tool("ask_name", {}).text == "Hello, Zed"
        assert seen[0]["message"] == "What is your name?"
        assert seen[0]["requestedSchema"]["properties"]["name"]["type"] == "string"
        assert client.meta()["io.modelcontextprotocol/clientCapabilities"]["elicitation"] == {"form": {}}


def test_sdk_missing_capability_is_named() -> None:
    """E4: without a handler no capability is declared; -32021 names what is missing."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"]) as client:
        with pytest.raises(mcp_sync.ServerError) as info:
            client.call_tool("ask_name", {})
        assert info.value.code == -32021 and "elicitation" in str(info.value)


def test_slow_handler_past_the_timeout_legacy() -> None:
    """A handler that blocks past the request timeout: the call times out, the client keeps serving."""
    release = threading.Event()

    def slow_handler(params: dict) -> dict:
        release.wait(10)
        return accept_name(params)

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy", on_elicitation=slow_handler) as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("ask_name", {}, timeout=0.5)
        release.set()
        assert client.call_tool("echo", {"text": "alive"}).text == "alive"


# -- MRTR against the fault server -------------------------------------------------------


def fault(**options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), **options)


def test_mrtr_state_echoed_and_never_mixed() -> None:
    """R3/R5: each call's retry echoes its own requestState, also under concurrency."""
    with fault(on_elicitation=accept_name) as client:
        results: dict[str, Any] = {}

        def call(tag: str) -> None:
            results[tag] = json.loads(client.call_tool("mrtr_ask", {"tag": tag}).text)

        run_workers(call, [(f"t{i}",) for i in range(8)], timeout=20)
        assert sorted(results) == [f"t{i}" for i in range(8)]
        for tag, body in results.items():
            assert body == {"tag": tag, "responses": {"name": {"action": "accept", "content": {"name": "Zed"}}}}


def test_mrtr_several_requests_answered_concurrently() -> None:
    """R6: every inputRequests entry is answered, keyed like the request; handlers overlap.

    Each handler waits (up to 5 s) at a barrier for the other: answered one after the other,
    the first one's wait breaks and the overlap is not recorded (#22.2: the overlap is asserted)."""
    both = threading.Barrier(2, timeout=5)
    met: list[str] = []

    def meet(name: str) -> None:
        try:
            both.wait()
            met.append(name)
        except threading.BrokenBarrierError:
            pass

    def sampling(params: dict) -> dict:
        meet("sampling")
        return {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}

    def roots() -> list[str]:
        meet("roots")
        return ["file:///tmp/project"]

    with fault(on_sampling=sampling, on_roots=roots) as client:
        body = json.loads(client.call_tool("mrtr_many", {"tag": "x"}).text)
    assert body["responses"]["roots"] == {"roots": [{"uri": "file:///tmp/project"}]}
    assert body["responses"]["llm"]["content"]["text"] == "yo"
    assert sorted(met) == ["roots", "sampling"], "the two handlers did not run at the same time"


def test_mrtr_round_bound() -> None:
    with fault(on_roots=["file:///a"], input_required_max_rounds=3) as client, pytest.raises(
        mcp_sync.InputRequiredError, match="3 rounds"
    ) as info:
        client.call_tool("mrtr_endless")
    assert info.value.request_state is not None


def test_mrtr_load_shedding_retries_with_state() -> None:
    with fault() as client:
        started = time.monotonic()
        assert client.call_tool("mrtr_shed", {"tag": "s"}).text == "done after 2 retries"
        assert time.monotonic() - started >= 0.05 + 0.1  # backoff: 50 ms, then 100 ms


def test_mrtr_without_handler_can_be_answered_by_hand() -> None:
    with fault() as client:
        with pytest.raises(mcp_sync.InputRequiredError) as info:
            client.call_tool("mrtr_ask", {"tag": "h"})
        error = info.value
        assert error.input_requests["name"]["method"] == "elicitation/create"
        answers = {"name": {"action": "accept", "content": {"name": "By Hand"}}}
        result = client.call_tool("mrtr_ask", {"tag": "h"}, input_responses=answers, request_state=error.request_state)
        assert json.loads(result.text)["responses"] == answers


def test_mrtr_handler_refusal_and_bug() -> None:
    def refuse(params: dict) -> dict:
        raise mcp_sync.ServerRequestError("user said no")

    with fault(on_elicitation=refuse) as client, pytest.raises(mcp_sync.InputRequiredError, match="user said no"):
        client.call_tool("mrtr_ask", {"tag": "r"})

    def buggy(params: dict) -> dict:
        raise KeyError("oops")

    with fault(on_elicitation=buggy) as client:
        with pytest.raises(mcp_sync.HandlerError) as info:  # issue 9.10: an MCPError, the bug as __cause__
            client.call_tool("mrtr_ask", {"tag": "b"})
        assert isinstance(info.value.__cause__, KeyError) and info.value.handler == "on_elicitation"
        assert client.call_tool("echo", {"text": "fine"}).text == "fine"


def test_invalid_form_content_is_not_sent() -> None:
    """L3: accepted content is validated against requestedSchema before it is sent."""

    def wrong(params: dict) -> dict:
        return {"action": "accept", "content": {"name": 42}}

    with fault(on_elicitation=wrong) as client, pytest.raises(mcp_sync.HandlerError, match="requestedSchema"):
        client.call_tool("mrtr_ask", {"tag": "v"})


def test_apply_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "Ada"},
            "age": {"type": "integer", "default": 36},
            "ratio": {"type": "number", "default": 0.5},
            "ok": {"type": "boolean", "default": False},
            "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
            "nodefault": {"type": "string"},
        },
    }
    assert mcp_sync.apply_defaults(schema, {"name": "Bob"}) == {
        "name": "Bob", "age": 36, "ratio": 0.5, "ok": False, "color": "blue"
    }


# -- legacy server requests against server-everything ---------------------------------


def test_everything_elicitation_sampling_roots(everything_js: Path, no_leaks: None) -> None:
    """LG10 against the reference server: each kind of request is answered by its handler."""
    elicited: list[dict] = []
    sampled: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        elicited.append(params)
        return {"action": "accept", "content": mcp_sync.apply_defaults(params["requestedSchema"], {"name": "Ada"})}

    def on_sampling(params: dict) -> dict:
        sampled.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "sampled!"}, "model": "test-model"}

    with mcp_sync.Client.stdio(
        "node", [str(everything_js), "stdio"], on_elicitation=on_elicitation, on_sampling=on_sampling,
        on_roots=["file:///tmp/project"], probe_timeout=5,
    ) as client:
        assert client.era == "legacy"
        names = {t.name for t in client.tools()}
        assert {"trigger-elicitation-request", "trigger-sampling-request", "get-roots-list"} <= names
        elicitation = client.call_tool("trigger-elicitation-request", {})
        assert "Ada" in elicitation.text and elicited and "mode" not in elicited[0]  # L1: no mode = form
        sampling = client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10})
        assert "sampled!" in sampling.text and sampled[0]["maxTokens"] == 10
        assert "file:///tmp/project" in client.call_tool("get-roots-list", {}).text


def test_everything_handler_refusal_becomes_error_answer(everything_js: Path) -> None:
    def refuse(params: dict) -> dict:
        raise mcp_sync.ServerRequestError("user declined", code=-1)

    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], on_sampling=refuse, probe_timeout=5) as client:
        result = None
        try:
            result = client.call_tool("trigger-sampling-request", {"prompt": "x"})
        except mcp_sync.ServerError as exc:
            assert "user declined" in exc.message
        else:
            assert result.is_error or "user declined" in result.text
        assert client.call_tool("echo", {"message": "ok"}).text == "Echo: ok"


def test_everything_url_elicitation(everything_js: Path) -> None:
    """URL mode is declared only when the handler says so (url = True); the URL is passed, never opened (L4)."""
    seen: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        seen.append(params)
        return {"action": "accept"}

    on_elicitation.url = True  # type: ignore[attr-defined]
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], on_elicitation=on_elicitation,
                               probe_timeout=5) as client:
        result = client.call_tool("trigger-url-elicitation", {"url": "https://example.com/x", "elicitationId": "e1"})
        assert "completed the URL elicitation" in result.text
        assert seen == [{"mode": "url", "url": "https://example.com/x", "elicitationId": "e1",
                         "message": "Please open the link to complete this action."}]


def test_url_mode_refused_when_not_declared() -> None:
    """LG11: a URL request to a form-only handler is answered with -32602, not guessed."""
    from mcp_sync._protocol.handlers import Handlers

    handlers = Handlers(on_elicitation=accept_name)
    assert handlers.capabilities("modern") == {"elicitation": {"form": {}}}
    with pytest.raises(mcp_sync.ServerRequestError) as info:
        handlers.answer("elicitation/create", {"mode": "url", "url": "https://example.com"})
    assert info.value.code == -32602


def test_tool_enabled_sampling_needs_opt_in() -> None:
    """M1: tools in a sampling request are refused (-32602) unless sampling_tools=True."""
    from mcp_sync._protocol.handlers import Handlers

    def sample(params: dict) -> dict:
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    request = {"messages": [], "maxTokens": 5, "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    with pytest.raises(mcp_sync.ServerRequestError) as info:
        Handlers(on_sampling=sample).answer("sampling/createMessage", request)
    assert info.value.code == -32602
    opted_in = Handlers(on_sampling=sample, sampling_tools=True)
    assert opted_in.capabilities("modern") == {"sampling": {"tools": {}}}
    assert opted_in.answer("sampling/createMessage", request)["model"] == "m"


def test_legacy_roots_list_changed_on_set_roots() -> None:
    """LG10: set_roots tells a legacy server with notifications/roots/list_changed; modern servers
    just see the new roots on their next request."""
    lines: list[str] = []
    with mcp_sync.Client.stdio(PY, fault_args("--era", "legacy"), mode="legacy", on_roots=["file:///a"],
                               stderr=lines.append) as client:
        client.set_roots(["file:///b"])
        client.call_tool("echo", {"text": "sync"})  # the notification was written before this request
        deadline = time.monotonic() + 5
        while not any("roots/list_changed" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert any("ignored notification: notifications/roots/list_changed" in line for line in lines)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_sdk_elicitation_over_http(sdk_http_url: str, mode: str, no_leaks: None) -> None:
    """The same handler over Streamable HTTP: MRTR retries on modern; on legacy the server's
    elicitation/create arrives on the call's SSE stream and is answered with a POST."""
    with mcp_sync.Client.http(sdk_http_url, mode=mode, on_elicitation=accept_name) as client:
        assert client.era == ("modern" if mode == "auto" else "legacy")
        assert client.call_tool("ask_name", {}).text == "Hello, Zed"


def test_a_handler_failure_is_attributed_to_the_call_still_in_flight() -> None:
    """A legacy handler failure goes to the one call in flight, even after other calls ended first.

    Every call's failure list starts empty; the old code removed the first *equal* list when a
    call ended, so call A ending took call B's place away and a failure during B was lost.
    """
    from mcp_sync._protocol.handlers import Handlers

    handlers = Handlers(on_sampling=lambda params: {})
    failure = mcp_sync.HandlerError("on_sampling raised", handler="on_sampling", method="sampling/createMessage")
    call_a, call_b = handlers.attributing_failures(), handlers.attributing_failures()
    assert call_a is not None and call_b is not None  # a handler is registered
    call_b.__enter__()
    call_a.__enter__()
    call_a.__exit__(None, None, None)  # A (the later one) answered; B is now the only call in flight
    handlers.failed(failure)
    with pytest.raises(mcp_sync.HandlerError) as raised:
        call_b.__exit__(None, None, None)
    assert raised.value is failure
