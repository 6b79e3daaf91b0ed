"""Values: what a server sends is checked or clamped, what a caller passes is refused before
anything is sent (issue 8.7, 9.4, 9.9, 9.10, 9.11, 9.17).

The property test feeds every method's result, built from arbitrary JSON around the
valid shape, through the public API over an in-memory transport, in both eras: nothing
but an MCPError may come out. ``MCP_SYNC_HYPOTHESIS_EXAMPLES`` raises the example count
(the long profile); the default is the short one run in CI.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from wirekit import FakeTransport

import mcp_sync

from conftest import PY, SDK_SERVER, fault_args

pytestmark = pytest.mark.timeout(120)

EXAMPLES = int(os.environ.get("MCP_SYNC_HYPOTHESIS_EXAMPLES", "25"))
TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES = {
    "tools": {}, "resources": {}, "prompts": {}, "completions": {}, "logging": {},
    "extensions": {TASKS: {}}, "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}},
}
DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": CAPABILITIES,
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}},
}
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": CAPABILITIES, "serverInfo": {"name": "fake"}}


def nested(depth: int) -> Any:
    """A JSON value ``depth`` arrays deep, built without recursion."""
    value: Any = "bottom"
    for _ in range(depth):
        value = [value]
    return value


def fake(
    handler: Callable[[str, dict], dict], *, era: str = "modern", **options: Any
) -> tuple[mcp_sync.Client, FakeTransport]:
    handshake = DISCOVER if era == "modern" else INITIALIZE

    def answer(method: str, params: dict) -> dict:
        if method in ("server/discover", "initialize"):
            given = handler(method, params)  # a test of discover answers the handshake too
            return given if method == "server/discover" and "supportedVersions" in given else handshake
        return handler(method, params)

    transport = FakeTransport(answer)
    options.setdefault("timeout", 5)
    return mcp_sync.Client(transport, mode=era, **options), transport


# -- arbitrary JSON around the valid shapes ----------------------------------------------

# The values that broke things are drawn as often as ordinary ones.
hostile = st.sampled_from([10**400, -(10**30), -1, 0, True, float("inf"), "\ud800", "task", "public"])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | hostile
json_values = (
    hostile
    | st.recursive(
        scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
        max_leaves=8,
    )
    | st.integers(600, 1200).map(nested)
)


def near(valid: dict[str, Any], extra: tuple[str, ...] = ()) -> st.SearchStrategy[dict[str, Any]]:
    """``valid`` with any of its keys (and ``extra`` keys) replaced by arbitrary JSON, or dropped.

    Results carry a ttlMs unless it is replaced, so the cache stores (and copies) them."""
    keys = tuple(valid) + extra + ("ttlMs", "_meta", "resultType", "cacheScope")

    def build(choices: dict[str, Any]) -> dict[str, Any]:
        result = {"ttlMs": 60_000, **valid}
        for key, choice in choices.items():
            if choice == "drop":
                result.pop(key, None)
            else:
                result[key] = choice[1]
        return result

    choice = st.just("drop") | st.tuples(st.just("set"), json_values)
    return st.fixed_dictionaries({}, optional={key: choice for key in keys}).map(build)


TOOL = {"name": "t", "inputSchema": {"type": "object"}, "title": "T", "annotations": {}, "icons": []}
RESOURCE = {"uri": "file:///a", "name": "a", "size": 3, "mimeType": "text/plain"}
TEMPLATE = {"uriTemplate": "file:///{x}", "name": "x"}
PROMPT = {"name": "p", "arguments": [{"name": "a", "required": True}]}
CONTENT = {"type": "text", "text": "hi"}
TASK = {"taskId": "t1", "status": "completed", "pollIntervalMs": 10, "ttlMs": 1000, "result": {"content": []}}

RESULTS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "tools/list": st.builds(lambda items, page: {**page, "tools": items}, st.lists(near(TOOL), max_size=3),
                            near({"nextCursor": None})) | near({"tools": [TOOL]}),
    "resources/list": st.builds(lambda items, page: {**page, "resources": items},
                                st.lists(near(RESOURCE), max_size=3), near({})),
    "resources/templates/list": st.builds(lambda items, page: {**page, "resourceTemplates": items},
                                          st.lists(near(TEMPLATE), max_size=3), near({})),
    "prompts/list": st.builds(lambda items, page: {**page, "prompts": items}, st.lists(near(PROMPT), max_size=3),
                              near({})),
    "tools/call": near({"content": [CONTENT], "isError": False, "structuredContent": {}}, ("taskId", "status"))
    | st.builds(lambda blocks: {"content": blocks}, st.lists(near(CONTENT, ("data", "uri", "resource")))),
    "resources/read": near({"contents": [{"uri": "file:///a", "text": "x"}]})
    | st.builds(lambda items: {"contents": items}, st.lists(near({"uri": "u", "blob": "AA=="}), max_size=3)),
    "prompts/get": near({"messages": [{"role": "user", "content": CONTENT}], "description": "d"})
    | st.builds(lambda items: {"messages": items}, st.lists(near({"role": "user", "content": CONTENT}))),
    "completion/complete": near({"completion": {"values": ["a"], "total": 1, "hasMore": False}})
    | st.builds(lambda inner: {"completion": inner}, near({"values": ["a"], "total": 1, "hasMore": True})),
    "server/discover": near(DISCOVER, ("instructions",)),
    "tasks/get": near(TASK, ("statusMessage", "createdAt", "error", "inputRequests")),
}

CALLS: dict[str, Callable[[mcp_sync.Client], object]] = {
    "tools/list": lambda c: (list(c.tools()), c.list_tools(cache="use")),
    "resources/list": lambda c: list(c.resources()),
    "resources/templates/list": lambda c: list(c.resource_templates()),
    "prompts/list": lambda c: list(c.prompts()),
    "tools/call": lambda c: c.call_tool("t", {"a": 1}).text,
    "resources/read": lambda c: (c.read_resource("file:///a").text, c.read_resource("file:///a").contents),
    "prompts/get": lambda c: [m.text for m in c.get_prompt("p", {"a": "b"}).messages],
    "completion/complete": lambda c: c.complete({"type": "ref/prompt", "name": "p"}, ("a", "b")).values,
    "server/discover": lambda c: (c.discover(cache="refresh"), c.discover()),
    "tasks/get": lambda c: c.get_task("t1").wait(timeout=0.05),
}


VALID: dict[str, dict[str, Any]] = {
    "tools/list": {"tools": [TOOL]},
    "resources/list": {"resources": [RESOURCE]},
    "resources/templates/list": {"resourceTemplates": [TEMPLATE]},
    "prompts/list": {"prompts": [PROMPT]},
    "tools/call": {"content": [CONTENT], "isError": False},
    "resources/read": {"contents": [{"uri": "file:///a", "text": "x"}]},
    "prompts/get": {"messages": [{"role": "user", "content": CONTENT}], "description": "d"},
    "completion/complete": {"completion": {"values": ["a"], "total": 1, "hasMore": False}},
    "server/discover": DISCOVER,
    "tasks/get": TASK,
}


def only_mcp_errors(call: Callable[[], object]) -> bool:
    """True when ``call`` returned a value, False when it raised an MCPError; anything else
    propagates (and fails the property)."""
    try:
        call()
    except mcp_sync.MCPError:
        return False
    return True


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("method", sorted(RESULTS))
def test_any_result_gives_a_value_or_an_mcp_error(method: str, era: str) -> None:
    """#8.7: whatever JSON a server answers a method with, the public API returns a value
    or raises an MCPError subclass; never RecursionError, OverflowError, TypeError...

    The valid shape is always one of the examples and must give a value (#22.2: a client that
    raised an MCPError for every answer would pass a property that only forbids other errors)."""
    if era == "legacy" and method == "server/discover":
        method_era_pairs = "initialize"  # legacy: the handshake answer is the discover counterpart
    else:
        method_era_pairs = method
    valid = INITIALIZE if method_era_pairs == "initialize" else VALID[method]
    outcomes: list[bool] = []

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(result=RESULTS[method] if method_era_pairs != "initialize" else near(INITIALIZE, ("instructions",)))
    @example(result=valid)
    def check(result: dict[str, Any]) -> None:
        if method_era_pairs == "initialize":
            transport = FakeTransport(lambda m, p: result if m == "initialize" else {"tools": []})
            client = mcp_sync.Client(transport, mode="legacy", timeout=5)
            try:
                got = only_mcp_errors(lambda: (client.connect(), list(client.tools()), client.ping()))
            finally:
                client.close()
        else:
            client, _ = fake(lambda m, p: result if m == method else {}, era=era)
            try:
                got = only_mcp_errors(lambda: CALLS[method](client))
            finally:
                client.close()
        if result is valid:
            assert got, f"the valid {method} answer {valid} raised an MCPError"
        outcomes.append(got)

    check()
    assert any(outcomes), "every example raised"


VALID_TASK = {"resultType": "task", **TASK, "status": "working"}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(answer=near(VALID_TASK), poll=near(TASK))
@example(answer=VALID_TASK, poll=TASK)
def test_any_task_answer_gives_a_task_or_an_mcp_error(answer: dict[str, Any], poll: dict[str, Any]) -> None:
    """#8.7: task handles and polls (pollIntervalMs negative, huge, a bool...) in both eras; the
    valid pair must give a task and its result (#22.2)."""
    for era in ("modern", "legacy"):
        first = {"task": answer} if era == "legacy" else answer
        client, _ = fake(lambda m, p, first=first: first if m == "tools/call" else poll, era=era)
        try:
            waited = only_mcp_errors(lambda client=client: client.call_tool_as_task("t", {}).wait(timeout=0.05))
            listed = only_mcp_errors(lambda client=client: client.list_tasks())
        finally:
            client.close()
        if answer is VALID_TASK and poll is TASK:
            assert waited and listed, f"the valid task answer raised an MCPError ({era})"


# -- the cases of issue 8.7, one by one --------------------------------------------------


def test_huge_ttl_is_clamped_not_an_overflow() -> None:
    """A ttlMs of 10**400 (valid JSON) raised OverflowError from connect() and from every list."""
    huge = {**DISCOVER, "ttlMs": 10**400}
    transport = FakeTransport(lambda m, p: huge if m == "server/discover" else {"tools": [TOOL], "ttlMs": 10**400})
    with mcp_sync.Client(transport, mode="modern", timeout=5) as client:
        assert client.discover().ttl_ms == 24 * 3600 * 1000
        assert client.list_tools().ttl_ms == 24 * 3600 * 1000
        client.list_tools()
        assert transport.count("tools/list") == 1  # cached (for at most a day)


def test_deeply_nested_result_is_cached_without_recursion() -> None:
    """700-deep JSON with a ttlMs raised RecursionError from the cache's deepcopy."""
    client, transport = fake(
        lambda m, p: {"contents": [{"uri": "u", "text": "x"}], "ttlMs": 60_000, "deep": nested(5000)}
    )
    with client:
        first = client.read_resource("u")
        second = client.read_resource("u")
        assert transport.count("resources/read") == 1 and first.raw is not second.raw
        depth, value = 0, second.raw["deep"]
        while isinstance(value, list):
            depth, value = depth + 1, value[0]
        assert (depth, value) == (5000, "bottom")


def test_mistyped_fields() -> None:
    """Optional fields of the wrong type read as absent; a required one is a ProtocolError naming it."""
    prompt = mcp_sync.Prompt.from_wire({"name": "p", "arguments": 5})  # was: TypeError
    assert prompt.arguments == [] and prompt.raw["arguments"] == 5
    client, _ = fake(lambda m, p: {"tools": [TOOL, {"name": 5}]})
    with client, pytest.raises(mcp_sync.ProtocolError, match=r"tools\[1\]: tool: 'name' must be a string, got int"):
        client.list_tools()


@pytest.mark.parametrize(
    ("interval", "kept"), [(-50, None), (0, None), (True, None), ("fast", None), (10**400, 30_000)],
    ids=["negative", "zero", "bool", "str", "10**400"],
)
def test_bad_poll_interval_is_ignored(interval: object, kept: int | None) -> None:
    """A negative pollIntervalMs raised ValueError from time.sleep; a huge one OverflowError."""
    polls = {"taskId": "t1", "status": "working", "pollIntervalMs": interval}
    client, _ = fake(lambda m, p: {"resultType": "task", **polls} if m == "tools/call" else polls)
    with client:
        task = client.call_tool_as_task("t", {})
        assert task.poll_interval_ms == kept
        with pytest.raises(mcp_sync.RequestTimeout):
            task.wait(timeout=0.1)


def test_lone_surrogate_tool_name_is_refused_before_sending() -> None:
    """A tool named with a lone surrogate (valid JSON: "\\ud800") could not be written over stdio
    (UnicodeEncodeError); the call now says why, and nothing is sent."""
    client, transport = fake(lambda m, p: {"tools": [{**TOOL, "name": "bad\ud800"}]} if m == "tools/list" else {})
    with client:
        (tool,) = client.tools()
        with pytest.raises(ValueError, match=r"lone surrogate \(\\ud800\)"):
            client.call_tool(tool.name)
        assert transport.count("tools/call") == 0


def test_lone_surrogate_over_stdio_keeps_the_client_serving() -> None:
    with mcp_sync.Client.stdio(PY, fault_args(), timeout=10) as client:
        with pytest.raises(ValueError, match="lone surrogate"):
            client.call_tool("echo", {"text": "x\udcff"})
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


# -- issue 9.4: NaN and infinities --------------------------------------------------------


def test_nan_argument_is_refused_naming_it() -> None:
    client, transport = fake(lambda m, p: {"content": []})
    with client:
        with pytest.raises(ValueError, match=r"call_tool\('add'\): argument 'a' is nan; JSON has no NaN or Infinity"):
            client.call_tool("add", {"a": float("nan"), "b": 1})
        with pytest.raises(ValueError, match=r"argument 'x.y\[1\]' is inf"):
            client.call_tool("add", {"x": {"y": [1, float("inf")]}})
        with pytest.raises(ValueError, match=r"meta 'trace' is -inf"):
            client.call_tool("add", {}, meta={"trace": float("-inf")})
        with pytest.raises(ValueError, match=r"request\('x/y'\): params 'v' is nan"):
            client.request("x/y", {"v": float("nan")})
        with pytest.raises(ValueError, match="nan"):
            client.notify("x/y", {"v": float("nan")})
        with pytest.raises(ValueError, match="nan"):
            client.complete({"type": "ref/prompt", "name": "p"}, {"name": "a", "value": float("nan")})
        with pytest.raises(TypeError, match=r"argument 'when' is a set"):
            client.call_tool("add", {"when": {1, 2}})
        assert transport.count("tools/call") == 0 and transport.count("x/y") == 0


def test_nan_over_stdio_fails_at_once() -> None:
    """Over stdio the call used to wait out its whole timeout (the server could not parse NaN)."""
    with mcp_sync.Client.stdio(PY, fault_args(), timeout=30) as client:
        with pytest.raises(ValueError, match="argument 'a' is nan"):
            client.call_tool("echo", {"a": float("nan")})
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"


# -- issue 9.9: wrong input gets an explanation ------------------------------------------


def test_wrong_arguments_are_explained() -> None:
    with pytest.raises(TypeError, match=r"args must be a list of strings, not str; write Client.stdio\('node'"):
        mcp_sync.Client.stdio("node", "/path/index.js")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="env must map strings to strings"):
        mcp_sync.Client.stdio("node", [], env={"PORT": 3})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not str"):
        mcp_sync.Client.stdio("node", [], timeout="5")  # type: ignore[arg-type]
    client, transport = fake(lambda m, p: {"content": []})
    with client:
        with pytest.raises(TypeError, match=r"call_tool\('echo'\): arguments must be a dict"):
            client.call_tool("echo", ["m"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="timeout must be a number of seconds or None, not str"):
            client.call_tool("echo", {}, timeout="5")  # type: ignore[arg-type]
        for bad in (0, -1, float("nan")):
            with pytest.raises(ValueError, match="timeout must be a positive number of seconds"):
                client.call_tool("echo", {}, timeout=bad)
            with pytest.raises(ValueError, match="timeout must be a positive number"):
                list(client.tools(timeout=bad))
        with pytest.raises(TypeError, match="prompt arguments are strings; 'n' is not"):
            client.get_prompt("p", {"n": 1})  # type: ignore[dict-item]
        assert transport.count("tools/call") == 0
        client.call_tool("echo", {}, timeout=float("inf"))  # for ever: no OverflowError
        client.call_tool("echo", {}, timeout=1e10)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_handler_returning_the_wrong_type_is_named_in_both_eras(mode: str) -> None:
    """A handler returning "yes": legacy sent 'dictionary update sequence...' to the server,
    modern raised a raw ValueError. Now both raise HandlerError naming the handler."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, on_elicitation=lambda p: "yes",
                               timeout=30) as client:
        with pytest.raises(mcp_sync.HandlerError, match="on_elicitation returned str") as info:
            client.call_tool("ask_name", {})
        assert info.value.handler == "on_elicitation"
        assert client.call_tool("echo", {"text": "fine"}).text == "fine"


# -- issue 9.10 and 9.11: errors keep their request and their class ----------------------


@pytest.mark.parametrize("era", ["modern", "legacy"])
@pytest.mark.parametrize("code", [-32002, -32602])
def test_resource_not_found_in_both_eras_with_its_request_id(era: str, code: int) -> None:
    client, _ = fake(lambda m, p: {"error": {"code": code, "message": "no such resource"}}, era=era)
    with client, pytest.raises(mcp_sync.ResourceNotFound) as info:
        client.read_resource("file:///missing")
    assert info.value.code == code and info.value.request_id is not None
    assert info.value.method == "resources/read"


def test_tool_error_carries_its_request_id() -> None:
    client, _ = fake(lambda m, p: {"content": [CONTENT], "isError": True})
    with client, pytest.raises(mcp_sync.ToolError) as info:
        client.call_tool("t", {}, raise_on_error=True)
    assert info.value.request_id is not None and info.value.result.is_error


def test_url_elicitation_required_has_a_class_and_the_urls() -> None:
    data = {"elicitations": [{"mode": "url", "elicitationId": "e1", "url": "https://x.example/connect",
                              "message": "Sign in"}]}
    client, _ = fake(lambda m, p: {"error": {"code": -32042, "message": "needs a URL", "data": data}})
    with client, pytest.raises(mcp_sync.UrlElicitationRequiredError) as info:
        client.call_tool("t", {})
    assert isinstance(info.value, mcp_sync.ServerError)
    assert info.value.urls == ["https://x.example/connect"] and info.value.elicitations[0]["elicitationId"] == "e1"


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_call_tool_as_task_needs_the_servers_tasks(era: str) -> None:
    """A server without tasks got a task request, and its plain answer became Task(task_id='')."""
    bare = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}} if era == "legacy" else {
        **DISCOVER, "capabilities": {"tools": {}}}
    transport = FakeTransport(lambda m, p: bare if m in ("server/discover", "initialize") else {"content": []})
    with mcp_sync.Client(transport, mode=era, timeout=5) as client:
        with pytest.raises(mcp_sync.CapabilityError, match="does not offer"):
            client.call_tool_as_task("t", {})
        assert transport.count("tools/call") == 0


def test_a_plain_answer_is_not_a_legacy_task() -> None:
    client, _ = fake(lambda m, p: {"content": [CONTENT]}, era="legacy")
    with client, pytest.raises(mcp_sync.ProtocolError, match="without a task handle"):
        client.call_tool_as_task("t", {})


def test_a_modern_answer_that_is_no_tool_result_is_not_a_task() -> None:
    client, _ = fake(lambda m, p: {"something": "else"})
    with client, pytest.raises(mcp_sync.ProtocolError, match="neither a task nor a tool result"):
        client.call_tool_as_task("t", {})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_raising_elicitation_handler_is_the_same_in_both_eras(mode: str) -> None:
    """Modern: the raw KeyError came out of call_tool; legacy: the server got an error answer and
    the caller saw whatever the server made of it. Now: HandlerError, the KeyError as __cause__."""

    def buggy(params: dict) -> dict:
        raise KeyError("oops")

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, on_elicitation=buggy, timeout=30) as client:
        with pytest.raises(mcp_sync.HandlerError) as info:
            client.call_tool("ask_name", {})
        assert isinstance(info.value.__cause__, KeyError) and "KeyError" in str(info.value)
        assert client.era == ("modern" if mode == "auto" else "legacy")


def test_invalid_sampling_result_is_refused_modern() -> None:
    """A sampling result without role/content/model reached the server; now the call fails naming the handler."""
    with mcp_sync.Client.stdio(PY, fault_args(), on_sampling=lambda p: {"content": "hi"}, on_roots=["file:///a"],
                               timeout=30) as client:
        with pytest.raises(mcp_sync.HandlerError, match=r"on_sampling returned an invalid result: 'role'.*'model'"):
            client.call_tool("mrtr_many", {"tag": "s"})


def test_invalid_sampling_result_is_refused_legacy(everything_js: Path) -> None:
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], on_sampling=lambda p: {"role": "assistant"},
                               probe_timeout=5, timeout=30) as client:
        assert client.era == "legacy"
        with pytest.raises(mcp_sync.HandlerError, match="on_sampling returned an invalid result"):
            client.call_tool("trigger-sampling-request", {"prompt": "hello", "maxTokens": 10})


# -- issue 9.17: text for users ----------------------------------------------------------


def test_cancelled_says_why() -> None:
    error = mcp_sync.Cancelled("tools/call was cancelled", reason="user pressed stop")
    assert str(error) == "tools/call was cancelled (reason: user pressed stop)"
    assert str(mcp_sync.Cancelled("stopped", reason=None)) == "stopped"


@pytest.mark.parametrize(("level", "expected"), [("notice", logging.INFO), ("alert", logging.CRITICAL),
                                                 ("emergency", logging.CRITICAL), ("warning", logging.WARNING)])
def test_server_log_levels_are_standard(level: str, expected: int, caplog: pytest.LogCaptureFixture) -> None:
    client, _ = fake(lambda m, p: {})
    with client, caplog.at_level(logging.DEBUG, logger="mcp_sync.server"):
        client._dispatch_notification("notifications/message", {"level": level, "data": "disk full"})
    (record,) = [r for r in caplog.records if r.name.startswith("mcp_sync.server")]
    assert record.levelno == expected and record.levelname != f"Level {expected}"
    assert record.getMessage() == ("disk full" if level == "warning" else f"[{level}] disk full")


def test_public_docstrings_carry_no_checklist_codes() -> None:
    import inspect
    import re

    code = re.compile(r"(?<![-\w])(?:LG|[A-Z])\d{1,2}\b")  # not A-Z0-9 in a regex
    found = []
    # owned by other work in progress on issue 9.17; drop from this set once they are clean
    elsewhere = {"OAuth", "Subscription"}
    objects = [getattr(mcp_sync, name) for name in mcp_sync.__all__
               if not name.isupper() and name != "__version__" and name not in elsewhere]
    for obj in objects:
        members = [obj]
        if inspect.isclass(obj):
            members += [m for n, m in inspect.getmembers(obj) if not n.startswith("_")
                        and (inspect.isfunction(m) or isinstance(m, property))]
        for member in members:
            doc = inspect.getdoc(member) or ""
            found += [f"{getattr(member, '__qualname__', member)}: {m}" for m in code.findall(doc)]
    assert not found, found


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
