"""Issue #20: agents, groups and testing.

#20.2 typed results (``CallToolResult.data``, ``call_tool(..., output_type=T)``), against the
Python SDK's server (tests/servers/sdk_server.py: ``add`` returns an int, which the SDK wraps as
``{"result": n}``; ``weather`` returns an object) in both eras, and the builder on its own.
#20.1 approval before a tool runs (``run_tool_call(..., approve=fn)``), Client and ClientGroup.
"""

from __future__ import annotations

import dataclasses
import enum
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple, Union

import attrs
import pytest
from helpers import FakeProvider, anthropic_message, chat_completion, gemini_response, provider_message_validator
from typing_extensions import NotRequired, TypedDict

import mcp_sync
from mcp_sync._typed import MAX_DEPTH, build

from conftest import PY, SDK_SERVER, fault_args

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module", params=["modern", "legacy"])
def sdk(request: pytest.FixtureRequest) -> Iterator[mcp_sync.Client]:
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=request.param, timeout=30) as client:
        yield client


# -- #20.2 typed results ---------------------------------------------------------------------------


@dataclasses.dataclass
class Weather:
    city: str
    temp: float
    conditions: List[str]


class WeatherDict(TypedDict):
    city: str
    temp: float
    conditions: List[str]
    wind: NotRequired[int]


@attrs.define
class WeatherAttrs:
    city: str
    temp: float
    conditions: List[str] = attrs.field(factory=list)


def test_data_unwraps_a_lone_result(sdk: mcp_sync.Client) -> None:
    added = sdk.call_tool("add", {"a": 1, "b": 2})
    assert added.structured_content == {"result": 3}
    assert added.data == 3
    weather = sdk.call_tool("weather", {"city": "Oslo"})
    assert weather.data == {"city": "Oslo", "temp": 3.5, "conditions": ["cloudy", "windy"]}
    assert sdk.call_tool("echo", {"text": "hi"}).data in (None, "hi")  # a str tool: the SDK may wrap it


def test_data_is_none_without_structured_content() -> None:
    assert mcp_sync.CallToolResult.from_wire({"content": []}).data is None
    two = mcp_sync.CallToolResult.from_wire({"structuredContent": {"result": 1, "other": 2}})
    assert two.data == {"result": 1, "other": 2}  # only a lone "result" is unwrapped


@pytest.mark.parametrize("output_type", [Weather, WeatherDict, WeatherAttrs])
def test_output_type_builds_the_callers_type(sdk: mcp_sync.Client, output_type: Any) -> None:
    value = sdk.call_tool("weather", {"city": "Oslo"}, output_type=output_type)
    if output_type is WeatherDict:
        assert value == {"city": "Oslo", "temp": 3.5, "conditions": ["cloudy", "windy"]}
    else:
        assert isinstance(value, output_type)
        assert (value.city, value.temp, value.conditions) == ("Oslo", 3.5, ["cloudy", "windy"])


def test_output_type_of_a_wrapped_scalar(sdk: mcp_sync.Client) -> None:
    assert sdk.call_tool("add", {"a": 2, "b": 40}, output_type=int) == 42

    @dataclasses.dataclass
    class Wrapped:  # a type whose one field is named "result" is built from the object itself
        result: int

    assert sdk.call_tool("add", {"a": 2, "b": 40}, output_type=Wrapped) == Wrapped(42)


def test_output_type_mismatch_names_the_field(sdk: mcp_sync.Client) -> None:
    @dataclasses.dataclass
    class Wrong:
        city: str
        temp: int  # the server sends 3.5

    with pytest.raises(mcp_sync.ProtocolError, match=r"field 'temp': expected integer, got number"):
        sdk.call_tool("weather", {"city": "Oslo"}, output_type=Wrong)

    @dataclasses.dataclass
    class Missing:
        city: str
        humidity: float

    with pytest.raises(mcp_sync.ProtocolError, match=r"'weather'.*field 'humidity': missing"):
        sdk.call_tool("weather", {"city": "Oslo"}, output_type=Missing)


def test_output_type_of_a_failing_tool_is_a_tool_error(sdk: mcp_sync.Client) -> None:
    with pytest.raises(mcp_sync.ToolError):
        sdk.call_tool("fail", {}, output_type=Weather)


def test_output_type_without_structured_content() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="missing"):
        build(Weather, None)


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Node:
    name: str
    children: List[Node] = dataclasses.field(default_factory=list)
    colour: Optional[Colour] = None
    kind: Literal["a", "b"] = "a"
    pair: Optional[Tuple[int, str]] = None
    extra: Dict[str, float] = dataclasses.field(default_factory=dict)


def test_nested_types_and_paths() -> None:
    value = {"name": "root", "colour": "red", "pair": [1, "x"], "extra": {"w": 2},
             "children": [{"name": "a", "kind": "b"}, {"name": "b", "unknown": 1}]}
    node = build(Node, value)
    assert node.children[0].kind == "b" and node.colour is Colour.RED and node.pair == (1, "x")
    assert node.extra == {"w": 2.0} and isinstance(node.extra["w"], float)
    bad = {"name": "root", "children": [{"name": "a"}, {"name": 7}]}
    with pytest.raises(mcp_sync.ProtocolError, match=r"field 'children\[1\]\.name': expected string, got integer"):
        build(Node, bad)
    with pytest.raises(mcp_sync.ProtocolError, match=r"field 'kind': expected one of \['a', 'b'\]"):
        build(Node, {"name": "x", "kind": "c"})
    with pytest.raises(mcp_sync.ProtocolError, match=r"field 'flag': expected boolean, got integer"):
        @dataclasses.dataclass
        class Flag:
            flag: bool

        build(Flag, {"flag": 1})


def test_deep_values_are_refused_not_recursed() -> None:
    value: dict[str, Any] = {"name": "leaf"}
    for _ in range(MAX_DEPTH * 3):
        value = {"name": "n", "children": [value]}
    with pytest.raises(mcp_sync.ProtocolError, match="nested more than"):
        build(Node, value)


@dataclasses.dataclass
class A:
    x: int


@dataclasses.dataclass
class B:
    x: str


@dataclasses.dataclass
class Many:
    items: List[Any]
    union: List[Optional[Union[A, B]]]


def test_building_is_linear() -> None:
    """A union of near misses over many items: each item is tried once per member, no more."""
    items = [{"x": "s"}] * 20_000
    start = time.thread_time()
    built = build(Many, {"items": items, "union": items})
    assert time.thread_time() - start < 5
    assert built.union[0] == B("s")


# -- #20.1 approval before a tool runs --------------------------------------------------------------

CALLS = {
    "openai": {"id": "call_1", "type": "function", "function": {"name": "echo", "arguments": '{"text": "hi"}'}},
    "anthropic": {"type": "tool_use", "id": "toolu_1", "name": "echo", "input": {"text": "hi"}},
    "gemini": {"name": "echo", "args": {"text": "hi"}},
}


def _error_text(message: dict[str, Any], fmt: str) -> str | None:
    """The error text of a tool-result message, None when it is not an error."""
    if fmt == "openai":
        return message["content"] if message["content"].startswith("Error:") else None
    if fmt == "anthropic":
        return message["content"][0]["text"] if message["is_error"] else None
    return message["function_response"]["response"].get("error")


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
def test_approved_calls_run(sdk: mcp_sync.Client, fmt: str) -> None:
    seen: list[tuple[mcp_sync.Tool, dict[str, Any]]] = []

    def approve(tool: mcp_sync.Tool, arguments: dict[str, Any]) -> bool:
        seen.append((tool, arguments))
        return True

    message = sdk.run_tool_call(CALLS[fmt], format=fmt, approve=approve)
    assert _error_text(message, fmt) is None
    assert "hi" in str(message)
    assert [(tool.name, args) for tool, args in seen] == [("echo", {"text": "hi"})]
    assert seen[0][0].input_schema["properties"]["text"]["type"] == "string"  # the listed Tool


@pytest.mark.parametrize("answer", [False, "deleting is not allowed", "", None, 0])
@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
def test_refused_calls_are_error_results_and_send_nothing(
    sdk: mcp_sync.Client, fmt: str, answer: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[Any] = []
    monkeypatch.setattr(sdk, "call_tool", lambda *a, **k: sent.append(a))
    message = sdk.run_tool_call(CALLS[fmt], format=fmt, approve=lambda tool, args: answer)
    text = _error_text(message, fmt)
    assert text is not None and "'echo' was not approved" in text
    if answer:
        assert text.endswith(f"not approved: {answer}")
    assert sent == []


def test_an_approver_that_raises_propagates(sdk: mcp_sync.Client) -> None:
    def approve(tool: mcp_sync.Tool, arguments: dict[str, Any]) -> bool:
        raise ValueError("approver bug")

    with pytest.raises(ValueError, match="approver bug"):
        sdk.run_tool_call(CALLS["openai"], format="openai", approve=approve)


def test_group_approval_sees_the_servers_tool() -> None:
    servers = {"sdk": {"command": PY, "args": [SDK_SERVER, "stdio"]},
               "fault": {"command": PY, "args": fault_args()}}
    with mcp_sync.ClientGroup(servers, timeout=30) as group:
        names = {t["function"]["name"] for t in group.to_openai_tools()}
        assert {"sdk__echo", "fault__echo"} <= names
        seen: list[tuple[str, str]] = []

        def approve(tool: mcp_sync.Tool, arguments: dict[str, Any]) -> bool | str:
            seen.append((group.server_of(tool), tool.name))
            return group.server_of(tool) == "sdk" or "only the sdk server"

        call = {"id": "c", "type": "function", "function": {"name": "sdk__echo", "arguments": '{"text": "yes"}'}}
        assert group.run_tool_call(call, approve=approve)["content"] == "yes"
        call["function"]["name"] = "fault__echo"
        refused = group.run_tool_call(call, approve=approve)["content"]
        assert refused.startswith("Error:") and refused.endswith("not approved: only the sdk server")
        assert seen == [("sdk", "echo"), ("fault", "echo")]


# -- #20.6 group completeness ----------------------------------------------------------------------


def _sdk_entry(**extra: Any) -> dict[str, Any]:
    return {"command": PY, "args": [SDK_SERVER, "stdio"], **extra}


def _fault_entry(*args: str, **extra: Any) -> dict[str, Any]:
    return {"command": PY, "args": fault_args(*args), **extra}


def test_group_tool_filters_from_keywords() -> None:
    servers = {"sdk": _sdk_entry(), "fault": _fault_entry()}
    with mcp_sync.ClientGroup(servers, timeout=30, include={"sdk": ["e*", "add"]},
                              exclude={"fault": ["s*", "die"]}) as group:
        by_server: dict[str, set[str]] = {}
        for tool in group.tools():
            by_server.setdefault(group.server_of(tool), set()).add(tool.name)
        assert by_server["sdk"] == {"echo", "add"}
        assert "echo" in by_server["fault"] and not {"slow", "stderr_flood", "die"} & by_server["fault"]
        assert group.call_tool("add", {"a": 1, "b": 2}).data == 3
        for name, server in (("weather", None), ("weather", "sdk"), ("sdk__weather", None), ("slow", None),
                             ("die", "fault")):
            with pytest.raises(mcp_sync.ToolNotFound):
                group.call_tool(name, {"city": "x"}, server=server)
        with pytest.raises(mcp_sync.ToolNotFound):
            group.find_tool("weather")
        names = {t["function"]["name"] for t in group.to_openai_tools()}
        assert "sdk__weather" not in names and "sdk__add" in names and "fault__slow" not in names
        call = {"id": "c", "type": "function", "function": {"name": "sdk__weather", "arguments": "{}"}}
        assert group.run_tool_call(call)["content"].startswith("Error:")


def test_group_tool_filters_from_the_config_file(tmp_path: Any) -> None:
    config = {"mcpServers": {
        "sdk": _sdk_entry(tools={"include": ["weather", "ad?"]}),
        "fault": _fault_entry(tools={"exclude": ["[a-s]*"]}),
    }}
    servers = mcp_sync.load_config(config)
    assert servers["sdk"]["tools"] == {"include": ["weather", "ad?"]}
    with mcp_sync.ClientGroup(servers, timeout=30, exclude={"sdk": ["add"]}) as group:
        names = {(group.server_of(t), t.name) for t in group.tools()}
        assert {name for server, name in names if server == "sdk"} == {"weather"}  # both excludes apply
        assert {name for server, name in names if server == "fault"} <= {"task_job", "t", "u", "v"}
    # the keyword's include replaces the entry's
    with mcp_sync.ClientGroup({"sdk": _sdk_entry(tools={"include": ["weather"]})}, timeout=30,
                              include={"sdk": ["echo"]}) as group:
        assert [t.name for t in group.tools()] == ["echo"]


@pytest.mark.parametrize("tools, message", [
    ("search_*", "must be an object"),
    ({"include": "search_*"}, "'include' must be a list"),
    ({"exclude": [1]}, "'exclude' must be a list"),
    ({"only": ["x"]}, "unknown key"),
])
def test_bad_tool_filters_in_a_config_are_config_errors(tools: Any, message: str) -> None:
    with pytest.raises(mcp_sync.ConfigError, match=message) as info:
        mcp_sync.load_config({"mcpServers": {"s": _sdk_entry(tools=tools)}})
    assert info.value.field == "tools" and info.value.server == "s"


def test_bad_filter_keywords() -> None:
    with pytest.raises(ValueError, match="not in the group"):
        mcp_sync.ClientGroup({"sdk": _sdk_entry()}, include={"nope": ["x"]})
    with pytest.raises(TypeError, match="list of strings"):
        mcp_sync.ClientGroup({"sdk": _sdk_entry()}, exclude={"sdk": [3]})  # type: ignore[list-item]


def test_glob_matches_like_fnmatch_in_linear_time() -> None:
    import fnmatch

    from mcp_sync._glob import Glob, NameFilter

    for pattern, name in [("search_*", "search_issues"), ("*_admin", "x_admin"), ("a?c", "abc"), ("[a-c]x", "bx"),
                          ("[!a]x", "ax"), ("a*b*c", "aXbYc"), ("a*b*c", "acb"), ("", ""), ("*", ""), ("[", "[")]:
        assert Glob(pattern).match(name) == fnmatch.fnmatchcase(name, pattern), (pattern, name)
    hostile = "a" * 200_000  # a backtracking matcher takes exponential time on many stars
    start = time.thread_time()
    assert not Glob("*a*a*a*a*a*a*a*a*a*a*a*a*b").match(hostile)
    assert not Glob("*a?a*[ab]*a*a?a*a*a*c").match(hostile)
    assert Glob("*a*a*a*a*a*a*").match(hostile)
    assert time.thread_time() - start < 5
    assert NameFilter(include=["s*"], exclude=["*x"]).allows("sa") and not NameFilter(exclude=["*x"]).allows("sx")


def test_glob_property() -> None:
    import fnmatch

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from mcp_sync._glob import Glob

    @settings(max_examples=2000, deadline=None)
    @given(st.text(alphabet="ab[]!-*?\\", max_size=10), st.text(alphabet="ab[]!-\\", max_size=10))
    def check(pattern: str, name: str) -> None:
        assert Glob(pattern).match(name) == fnmatch.fnmatchcase(name, pattern)

    check()


def test_group_notifications_name_the_server() -> None:
    seen: list[tuple[str, str, Any]] = []
    servers = {"one": _sdk_entry(), "two": _sdk_entry()}
    options = {name: {"mode": "legacy"} for name in servers}
    with mcp_sync.ClientGroup(servers, timeout=30, options=options,
                              on_notification=lambda server, method, params: seen.append((server, method, params))
                              ) as group:
        group.call_tool("slow", {"seconds": 0.1}, server="one")
        group.call_tool("slow", {"seconds": 0.1}, server="two")
        logs = {(server, params.get("data")) for server, method, params in seen if method == "notifications/message"}
        assert logs == {("one", "slow: sleeping 0.1s"), ("two", "slow: sleeping 0.1s")}


def test_add_and_remove_on_a_live_group() -> None:
    with mcp_sync.ClientGroup({"fault": _fault_entry()}, timeout=30) as group:
        with pytest.raises(mcp_sync.ToolNotFound):
            group.call_tool("weather", {"city": "x"})
        client = group.add("sdk", _sdk_entry(tools={"include": ["weather", "echo"]}), options={"timeout": 20})
        assert group.clients["sdk"] is client and client.timeout == 20
        assert group.call_tool("weather", {"city": "Oslo"}).data["city"] == "Oslo"
        assert {t.name for t in group.tools() if group.server_of(t) == "sdk"} == {"weather", "echo"}
        with pytest.raises(ValueError, match="already has a server named 'sdk'"):
            group.add("sdk", _sdk_entry())
        with pytest.raises(mcp_sync.AmbiguousToolError):
            group.call_tool("echo", {"text": "x"})
        group.remove("sdk")
        assert client.state is mcp_sync.ClientState.CLOSED and "sdk" not in group.clients
        assert group.call_tool("echo", {"text": "x"}).text == "x"  # the fault server's only
        with pytest.raises(mcp_sync.ToolNotFound):
            group.call_tool("weather", {"city": "x"})
        with pytest.raises(mcp_sync.ToolNotFound):
            group.remove("sdk")
        with pytest.raises(TypeError, match="unknown option"):
            group.add("x", _sdk_entry(), options={"timout": 3})
        with pytest.raises((mcp_sync.MCPError, OSError)):
            group.add("broken", {"command": PY, "args": ["-c", "import sys; sys.exit(3)"]})
        assert "broken" not in group.clients and "broken" not in group.errors
        group.add("sdk", _sdk_entry())  # the name is free again
        assert group.call_tool("add", {"a": 1, "b": 1}).data == 2


def test_add_runs_unlocked_and_close_ends_it() -> None:
    """Another thread uses the group while a server is being added; close() ends an add that waits."""
    import threading

    slow_start = {"command": PY, "args": ["-c", "import time; time.sleep(30)"]}
    with mcp_sync.ClientGroup({"fault": _fault_entry()}, timeout=30) as group:
        errors: list[BaseException] = []

        def add() -> None:
            try:
                group.add("sleepy", slow_start)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=add)
        thread.start()
        time.sleep(0.5)
        start = time.monotonic()
        assert group.call_tool("echo", {"text": "meanwhile"}).text == "meanwhile"
        assert time.monotonic() - start < 5
        assert "sleepy" in group._sources and "sleepy" not in group.clients  # reserved while it connects
        group.close()
        thread.join(10)
        assert not thread.is_alive() and len(errors) == 1 and isinstance(errors[0], mcp_sync.MCPError), errors


def test_group_call_tool_as_task() -> None:
    """Routed like call_tool: by server (the fault server does not list task_job), by listed name, filtered."""
    servers = {"modern": _fault_entry("--era", "modern"), "sdk": _sdk_entry()}
    with mcp_sync.ClientGroup(servers, timeout=30, exclude={"modern": ["counter"]}) as group:
        task = group.call_tool_as_task("task_job", {"plan": "ok"}, server="modern")
        assert task.status == "working"
        assert "polls" in task.wait(timeout=10).text
        with pytest.raises(mcp_sync.ToolNotFound):
            group.call_tool_as_task("task_job", {"plan": "ok"})  # listed by no server
        with pytest.raises(mcp_sync.ToolNotFound):
            group.call_tool_as_task("counter", {}, server="modern")  # left out by the filter
        with pytest.raises(mcp_sync.CapabilityError):
            group.call_tool_as_task("sdk__echo", {"text": "x"})  # routed to the SDK server: no tasks there


# -- #20.4 prompts as chat messages ----------------------------------------------------------------


def test_prompt_to_openai_messages(sdk: mcp_sync.Client) -> None:
    messages = sdk.get_prompt("review", {"code": "x = 1"}).to_messages(format="openai")
    user, assistant = messages
    assert user["role"] == "user" and assistant == {"role": "assistant", "content": "I will review it."}
    parts = user["content"]
    assert parts[0] == {"type": "text", "text": "Please review this code: x = 1"}
    assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    assert parts[2] == {"type": "text", "text": "[resource file:///review/code.py]\nx = 1"}
    assert parts[3] == {"type": "file", "file": {"filename": "spec.pdf",
                                                 "file_data": "data:application/pdf;base64,JVBERi0xLjAKJSVFT0YK"}}
    validator = provider_message_validator("openai")
    for message in messages:
        validator.validate_python(message)
    assert sdk.get_prompt("greet", {"name": "Ada"}).to_messages() == [{"role": "user", "content": "Please greet Ada."}]


def test_prompt_to_anthropic_messages(sdk: mcp_sync.Client) -> None:
    messages = sdk.get_prompt("review", {"code": "x = 1"}).to_messages(format="anthropic")
    user, assistant = messages
    assert assistant == {"role": "assistant", "content": [{"type": "text", "text": "I will review it."}]}
    blocks = user["content"]
    assert [b["type"] for b in blocks] == ["text", "image", "document", "document"]
    assert blocks[1]["source"] == {"type": "base64", "media_type": "image/png", "data": blocks[1]["source"]["data"]}
    assert blocks[2] == {"type": "document", "title": "file:///review/code.py",
                         "source": {"type": "text", "media_type": "text/plain", "data": "x = 1"}}
    assert blocks[3]["source"] == {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjAKJSVFT0YK"}
    validator = provider_message_validator("anthropic")
    for message in messages:
        validator.validate_python(message)


def test_prompt_to_gemini_contents(sdk: mcp_sync.Client) -> None:
    contents = sdk.get_prompt("review", {"code": "x = 1"}).to_messages(format="gemini")
    assert [c["role"] for c in contents] == ["user", "model"]
    parts = contents[0]["parts"]
    assert parts[0] == {"text": "Please review this code: x = 1"}
    assert parts[1]["inline_data"]["mime_type"] == "image/png"
    assert parts[2] == {"text": "[resource file:///review/code.py]\nx = 1"}
    assert parts[3] == {"inline_data": {"mime_type": "application/pdf", "data": "JVBERi0xLjAKJSVFT0YK"}}
    assert contents[1] == {"role": "model", "parts": [{"text": "I will review it."}]}


def test_prompt_messages_made_by_hand_and_odd_blocks() -> None:
    prompt = mcp_sync.GetPromptResult(messages=[
        mcp_sync.PromptMessage(role="user", content=mcp_sync.TextContent(text="hi")),
        mcp_sync.PromptMessage(role="assistant", content=mcp_sync.ImageContent(data="AAAA", mime_type="image/png")),
        mcp_sync.PromptMessage(role="user", content=mcp_sync.ContentBlock(type="video", raw={"type": "video"})),
        mcp_sync.PromptMessage(role="user", content=mcp_sync.ResourceLink(uri="file:///a", name="a")),
    ])
    openai_messages = prompt.to_messages("openai")
    assert openai_messages[0] == {"role": "user", "content": "hi"}
    assert openai_messages[1] == {"role": "assistant", "content": "[image: image/png, 3 bytes]"}  # no images there
    assert openai_messages[2] == {"role": "user", "content": '{"type": "video"}\n[resource link: file:///a (a)]'}
    anthropic_messages = prompt.to_messages("anthropic")
    assert anthropic_messages[1]["content"] == [{"type": "text", "text": "[image: image/png, 3 bytes]"}]
    with pytest.raises(ValueError, match="format must be one of"):
        prompt.to_messages("cohere")


# -- #20.3 sampling through an LLM -----------------------------------------------------------------


def _sampling_client(mode: str, on_sampling: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, timeout=30, on_sampling=on_sampling,
                                 sampling_tools=True)


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_openai_sampling(mode: str) -> None:
    import json

    import openai

    import mcp_sync.llm

    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    fake = FakeProvider([chat_completion({"content": "42"}, "stop"),
                    chat_completion({"content": None, "tool_calls": [call]}, "tool_calls", model="gpt-4.1")])
    try:
        handler = mcp_sync.llm.openai_sampling(openai.OpenAI(base_url=f"{fake.url}/v1", api_key="sk-test"),
                                               model="gpt-4.1", models=["gpt-4.1-mini"])
        with _sampling_client(mode, handler) as client:
            answer = json.loads(client.call_tool("ask_llm", {"question": "What is 6 x 7?"}).text)
            assert answer == {"role": "assistant", "content": {"type": "text", "text": "42"},
                              "model": "gpt-4.1-mini", "stopReason": "endTurn"}
            with_tools = json.loads(client.call_tool("ask_llm_tools", {"question": "Weather in Oslo?"}).text)
            assert with_tools["stopReason"] == "toolUse" and with_tools["model"] == "gpt-4.1"
            assert with_tools["content"] == [{"type": "tool_use", "id": "call_1", "name": "get_weather",
                                              "input": {"city": "Oslo"}}]
        (path, _, body), (_, _, tools_body) = fake.requests
        assert path == "/v1/chat/completions" and body["model"] == "gpt-4.1-mini"  # the hint "mini" chose it
        assert body["messages"][0] == {"role": "system", "content": "Answer briefly."}
        user = body["messages"][1]
        assert user["role"] == "user" and user["content"][0] == {"type": "text", "text": "What is 6 x 7?"}
        assert user["content"][1]["image_url"]["url"].startswith("data:image/png;base64,")
        assert (body["max_completion_tokens"], body["stop"], body["temperature"]) == (77, ["END"], 0.25)
        assert tools_body["model"] == "gpt-4.1" and tools_body["tool_choice"] == "auto"
        assert tools_body["tools"][0]["function"]["name"] == "get_weather"
    finally:
        fake.close()


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_anthropic_sampling(mode: str) -> None:
    import json

    import anthropic

    import mcp_sync.llm

    fake = FakeProvider([
        anthropic_message([{"type": "text", "text": "4"}, {"type": "text", "text": "2"}], "stop_sequence"),
        anthropic_message([{"type": "text", "text": "Looking."},
                          {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
                         "tool_use", model="claude-big"),
    ])
    try:
        handler = mcp_sync.llm.anthropic_sampling(anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-test"),
                                                  model="claude-big", models=["claude-mini"], max_tokens_limit=64)
        with _sampling_client(mode, handler) as client:
            answer = json.loads(client.call_tool("ask_llm", {"question": "What is 6 x 7?"}).text)
            assert answer == {"role": "assistant", "content": {"type": "text", "text": "42"},
                              "model": "claude-mini", "stopReason": "stopSequence"}
            with_tools = json.loads(client.call_tool("ask_llm_tools", {"question": "Weather in Oslo?"}).text)
            assert with_tools["stopReason"] == "toolUse"
            assert with_tools["content"] == [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]
        (path, _, body), (_, _, tools_body) = fake.requests
        assert path == "/v1/messages" and body["model"] == "claude-mini" and body["system"] == "Answer briefly."
        assert (body["max_tokens"], body["stop_sequences"], body["temperature"]) == (64, ["END"], 0.25)
        content = body["messages"][0]["content"]
        assert content[0] == {"type": "text", "text": "What is 6 x 7?"} and content[1]["type"] == "image"
        assert tools_body["tools"][0]["name"] == "get_weather" and tools_body["tool_choice"] == {"type": "auto"}
    finally:
        fake.close()


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_gemini_sampling(mode: str) -> None:
    """The SDK server's ask_llm (a system prompt, maxTokens 77, stop sequence END, temperature 0.25,
    the hint "mini", an image) and ask_llm_tools through the real google-genai SDK and a fake
    generateContent endpoint."""
    import json

    from google import genai

    import mcp_sync.llm

    fake = FakeProvider([
        gemini_response([{"text": "4"}, {"text": "thinking...", "thought": True}, {"text": "2"}], "STOP",
                        model="gemini-2.5-flash-001"),
        gemini_response([{"text": "Looking."}, {"functionCall": {"id": "fc_1", "name": "get_weather",
                                                                 "args": {"city": "Oslo"}}}], "STOP",
                        model="learnlm-2.0-001"),
    ])
    try:
        client = genai.Client(api_key="gm-test", http_options={"base_url": fake.url, "api_version": "v1beta"})
        # "mini" is a substring of every "gemini-..." name: a first choice without it shows the hint at work
        handler = mcp_sync.llm.gemini_sampling(client, model="learnlm-2.0", models=["gemini-2.5-flash"],
                                               max_tokens_limit=64)
        with _sampling_client(mode, handler) as mcp_client:
            answer = json.loads(mcp_client.call_tool("ask_llm", {"question": "What is 6 x 7?"}).text)
            assert answer == {"role": "assistant", "content": {"type": "text", "text": "42"},  # no thought
                              "model": "gemini-2.5-flash-001", "stopReason": "endTurn"}
            with_tools = json.loads(mcp_client.call_tool("ask_llm_tools", {"question": "Weather in Oslo?"}).text)
            assert with_tools["stopReason"] == "toolUse" and with_tools["model"] == "learnlm-2.0-001"
            assert with_tools["content"] == [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "fc_1", "name": "get_weather", "input": {"city": "Oslo"}}]
        (path, headers, body), (tools_path, _, tools_body) = fake.requests
        assert path == "/v1beta/models/gemini-2.5-flash:generateContent"  # the hint "mini" chose it
        assert tools_path == "/v1beta/models/learnlm-2.0:generateContent" and headers["x-goog-api-key"] == "gm-test"
        assert body["systemInstruction"]["parts"] == [{"text": "Answer briefly."}]
        generation = body["generationConfig"]
        assert (generation["maxOutputTokens"], generation["stopSequences"], generation["temperature"]) == (
            64, ["END"], 0.25)  # 77 clamped to max_tokens_limit
        (content,) = body["contents"]
        assert content["role"] == "user" and content["parts"][0] == {"text": "What is 6 x 7?"}
        assert content["parts"][1]["inlineData"]["data"].startswith("iVBORw0KGgo") and "tools" not in body
        (declaration,) = tools_body["tools"][0]["functionDeclarations"]
        assert declaration["name"] == "get_weather" and declaration["parameters"]["required"] == ["city"]
        assert tools_body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
        assert tools_body["generationConfig"]["maxOutputTokens"] == 50
    finally:
        fake.close()


def test_sampling_messages_with_tool_results_map_to_each_provider() -> None:
    """A later round of a tool loop: the assistant's tool_use, then the user's tool_result."""
    from mcp_sync._chat import chat_messages

    messages = [
        ("user", {"type": "text", "text": "Weather?"}),
        ("assistant", [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Oslo"}}]),
        ("user", [{"type": "tool_result", "toolUseId": "t1", "content": [{"type": "text", "text": "sunny"}]}]),
    ]
    assert chat_messages(messages, "openai")[1:] == [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "t1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "t1", "content": "sunny"},
    ]
    anthropic_messages = chat_messages(messages, "anthropic")
    assert anthropic_messages[1]["content"][0]["type"] == "tool_use"
    assert anthropic_messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "sunny"}]}]
    gemini = chat_messages(messages, "gemini")
    assert gemini[1] == {"role": "model", "parts": [{"function_call": {"name": "get_weather", "args": {"city": "Oslo"},
                                                                       "id": "t1"}}]}
    assert gemini[2]["parts"][0]["function_response"] == {"name": "get_weather", "response": {"result": "sunny"},
                                                          "id": "t1"}


def test_choose_model_reads_hints() -> None:
    from mcp_sync.llm import choose_model

    hints = {"modelPreferences": {"hints": [{"name": "sonnet"}, {"name": "mini"}]}}
    assert choose_model(hints, "gpt-4.1", ["gpt-4.1-mini"]) == "gpt-4.1-mini"
    assert choose_model({}, "gpt-4.1", ["gpt-4.1-mini"]) == "gpt-4.1"
    assert choose_model({"modelPreferences": {"hints": "junk"}}, "m") == "m"


def test_import_mcp_sync_stays_light() -> None:
    """Neither ``import mcp_sync`` nor ``import mcp_sync.llm`` imports a provider SDK or framework."""
    import subprocess

    heavy = ["openai", "anthropic", "langchain_core", "agents", "mcp", "pydantic", "google"]
    code = ("import sys, mcp_sync, mcp_sync.llm\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r})))")
    out = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=60,
                         env={"PYTHONPATH": str(Path(__file__).resolve().parent.parent), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


# -- #20.5 framework adapters ----------------------------------------------------------------------


def test_langchain_tools(sdk: mcp_sync.Client) -> None:
    import asyncio

    from langchain_core.messages import ToolMessage
    from langchain_core.tools import StructuredTool

    import mcp_sync.llm

    tools = {tool.name: tool for tool in mcp_sync.llm.to_langchain_tools(sdk)}
    assert {"echo", "add", "weather", "fail"} <= set(tools)
    assert all(isinstance(tool, StructuredTool) for tool in tools.values())
    assert tools["echo"].args["text"]["type"] == "string" and tools["echo"].description == "Return the text unchanged."
    assert tools["echo"].invoke({"text": "hi"}) == "hi"
    assert tools["add"].invoke({"a": 2, "b": 40}) == "42"
    assert tools["fail"].invoke({}) == "Error executing tool fail"  # isError: the error text, for the model
    message = tools["weather"].invoke({"type": "tool_call", "id": "c1", "name": "weather", "args": {"city": "Oslo"}})
    assert isinstance(message, ToolMessage) and message.tool_call_id == "c1"
    assert isinstance(message.artifact, mcp_sync.CallToolResult) and message.artifact.data["city"] == "Oslo"
    assert asyncio.run(tools["echo"].ainvoke({"text": "async"})) == "async"


def test_langchain_error_tool_messages_carry_the_call_tool_result(sdk: mcp_sync.Client) -> None:
    """A tool that reports isError gives a ToolMessage with status "error", the error text for the
    model, and the CallToolResult as its artifact (docs/agents.md), from invoke and ainvoke alike."""
    import asyncio

    from langchain_core.messages import ToolMessage

    import mcp_sync.llm

    tools = {tool.name: tool for tool in mcp_sync.llm.to_langchain_tools(sdk)}
    call = {"type": "tool_call", "id": "c2", "name": "fail", "args": {}}
    for message in (tools["fail"].invoke(call), asyncio.run(tools["fail"].ainvoke(call))):
        assert isinstance(message, ToolMessage) and message.status == "error" and message.tool_call_id == "c2"
        assert message.content == "Error executing tool fail"
        assert isinstance(message.artifact, mcp_sync.CallToolResult) and message.artifact.is_error
        assert message.artifact.text == "Error executing tool fail"
    fine = tools["echo"].invoke({"type": "tool_call", "id": "c3", "name": "echo", "args": {"text": "ok"}})
    assert fine.status == "success" and fine.artifact.text == "ok"  # (a failed call without a result:
    # test_framework_tools.py)


def test_langchain_tools_of_a_group() -> None:
    import mcp_sync.llm

    with mcp_sync.ClientGroup({"sdk": _sdk_entry(), "fault": _fault_entry()}, timeout=30,
                              include={"fault": ["echo"]}) as group:
        tools = {tool.name: tool for tool in mcp_sync.llm.to_langchain_tools(group)}
        assert "sdk__echo" in tools and set(name for name in tools if name.startswith("fault__")) == {"fault__echo"}
        assert tools["fault__echo"].invoke({"text": "x"}) == "x"


def test_openai_agents_tools_in_a_run(sdk: mcp_sync.Client) -> None:
    """A real Agents SDK run against a local fake of the Responses API: the model calls ``add``."""
    import agents
    import openai

    import mcp_sync.llm

    def response(output: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-4.1", "output": output,
                "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}

    fake = FakeProvider([
        response([{"type": "function_call", "id": "fc_1", "call_id": "call_1", "status": "completed",
                   "name": "add", "arguments": '{"a": 2, "b": 40}'}]),
        response([{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                   "content": [{"type": "output_text", "text": "It is 42.", "annotations": []}]}]),
    ])
    try:
        tools = mcp_sync.llm.to_openai_agents_tools(sdk)
        assert all(isinstance(tool, agents.FunctionTool) for tool in tools)
        model = agents.OpenAIResponsesModel("gpt-4.1", openai.AsyncOpenAI(base_url=f"{fake.url}/v1", api_key="sk-x"))
        agent = agents.Agent(name="calc", instructions="Use the tools.", model=model, tools=tools)
        agents.set_tracing_disabled(True)
        result = agents.Runner.run_sync(agent, "What is 2 + 40?")
        assert result.final_output == "It is 42."
        sent = fake.requests[0][2]
        assert {"add", "echo"} <= {tool["name"] for tool in sent["tools"]}
        outputs = [item for item in fake.requests[1][2]["input"] if item.get("type") == "function_call_output"]
        assert outputs and outputs[0]["output"] == "42"
    finally:
        fake.close()


def test_openai_agents_tool_errors_are_text(sdk: mcp_sync.Client) -> None:
    import asyncio

    import mcp_sync.llm

    tools = {tool.name: tool for tool in mcp_sync.llm.to_openai_agents_tools(sdk)}
    assert asyncio.run(tools["echo"].on_invoke_tool(None, '{"text": "hi"}')) == "hi"
    assert asyncio.run(tools["fail"].on_invoke_tool(None, "{}")).startswith("Error: ")
    assert asyncio.run(tools["echo"].on_invoke_tool(None, "{not json")).startswith("Error: ")
    assert asyncio.run(tools["echo"].on_invoke_tool(None, '{"nope": 1}')).startswith("Error: ")


# -- #20.7 servers tested in-process ---------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk_server_object() -> Any:
    """The SDK test server's MCPServer object, imported (its module-level warning filter undone)."""
    import importlib.util
    import sys
    import warnings

    from conftest import SERVERS

    with warnings.catch_warnings():
        spec = importlib.util.spec_from_file_location("sdk_server_inprocess", SERVERS / "sdk_server.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # the SDK resolves the tools' annotations through it
        spec.loader.exec_module(module)
    return module.server


def _sockets() -> int:
    """How many network (TCP/UDP) sockets this process holds (an event loop's own socketpair is no network)."""
    import os

    fds, network = "/proc/self/fd", set()
    if not os.path.isdir(fds):
        return 0
    for table in ("tcp", "tcp6", "udp", "udp6"):
        try:
            with open(f"/proc/net/{table}") as lines:
                network.update(line.split()[9] for line in list(lines)[1:] if len(line.split()) > 9)
        except OSError:
            pass
    count = 0
    for fd in os.listdir(fds):
        try:
            link = os.readlink(f"{fds}/{fd}")
        except OSError:
            continue
        count += link.startswith("socket:[") and link[8:-1] in network
    return count


@pytest.mark.parametrize("mode", ["modern", "legacy", "auto"])
def test_inprocess_server_both_eras(sdk_server_object: Any, mode: str) -> None:
    import threading

    steps: list[Any] = []
    sockets = _sockets()
    with mcp_sync.Client.inprocess(sdk_server_object, mode=mode, timeout=20,
                                   on_elicitation=lambda params: {"action": "accept", "content": {"name": "Ada"}},
                                   on_sampling=lambda params: {"role": "assistant", "model": "stub",
                                                               "content": {"type": "text", "text": "42"}}) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        assert client.call_tool("add", {"a": 1, "b": 2}).data == 3
        assert client.call_tool("weather", {"city": "Oslo"}, output_type=Weather).city == "Oslo"
        assert client.call_tool("slow", {"seconds": 0.2}, progress=lambda *p: steps.append(p)).text == "slept 0.2"
        assert steps and steps[-1][0] == steps[-1][1]
        assert client.call_tool("ask_name", {}).text == "Hello, Ada"             # elicitation
        assert '"text":"42"' in client.call_tool("ask_llm", {"question": "?"}).text  # sampling
        assert client.call_tool("fail", {}).is_error
        assert client.read_resource("test://items/7").text == "item 7"
        assert client.get_prompt("greet", {"name": "Ada"}).to_messages() == [
            {"role": "user", "content": "Please greet Ada."}]
        names = [thread.name for thread in threading.enumerate()]
        assert any(name.startswith("mcp_sync-inprocess-") for name in names)
        assert _sockets() == sockets  # no socket was opened
    assert not [t for t in threading.enumerate() if t.name.startswith("mcp_sync-inprocess-")]  # close() stopped it


def test_inprocess_calls_from_many_threads(sdk_server_object: Any) -> None:
    from concurrent.futures import ThreadPoolExecutor

    with mcp_sync.Client.inprocess(sdk_server_object, timeout=20) as client:
        with ThreadPoolExecutor(8) as pool:
            texts = list(pool.map(lambda i: client.call_tool("echo", {"text": str(i)}).text, range(200)))
        assert texts == [str(i) for i in range(200)]


def test_inprocess_refuses_what_is_no_server() -> None:
    with pytest.raises(TypeError, match="not an MCP server"):
        mcp_sync.Client.inprocess(object())


def test_inprocess_server_defined_in_the_test() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("calc")

    @server.tool()
    def multiply(a: int, b: int) -> int:
        return a * b

    for mode in ("modern", "legacy"):
        with mcp_sync.Client.inprocess(server, mode=mode) as client:
            assert client.call_tool("multiply", {"a": 6, "b": 7}).data == 42


def test_new_callables_type_hints_resolve() -> None:
    """Runtime introspection (pydantic, LangChain) calls get_type_hints on these (#18.17)."""
    import typing

    import mcp_sync.llm

    for function in (mcp_sync.llm.openai_sampling, mcp_sync.llm.anthropic_sampling, mcp_sync.llm.gemini_sampling,
                     mcp_sync.llm.to_langchain_tools,
                     mcp_sync.llm.to_openai_agents_tools, mcp_sync.llm.choose_model, mcp_sync.Client.inprocess,
                     mcp_sync.Client.call_tool, mcp_sync.ClientGroup.add, mcp_sync.ClientGroup.remove,
                     mcp_sync.ClientGroup.call_tool_as_task, mcp_sync.GetPromptResult.to_messages):
        typing.get_type_hints(function)


def test_remove_while_adding_leaves_no_trace() -> None:
    """remove() of a server still connecting closes it; the add raises and the name stays free."""
    import threading

    slow_start = {"command": PY, "args": ["-c", "import time; time.sleep(30)"]}
    with mcp_sync.ClientGroup({"fault": _fault_entry()}, timeout=30) as group:
        errors: list[BaseException] = []

        def add() -> None:
            try:
                group.add("sleepy", slow_start)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=add)
        thread.start()
        time.sleep(0.5)
        group.remove("sleepy")
        thread.join(10)
        assert not thread.is_alive() and errors and "sleepy" not in group.clients
        group.add("sleepy", _fault_entry())  # the name is free again
        assert "sleepy" in group.clients
