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
from typing import Any, Dict, Iterator, List, Literal, Optional, Tuple, Union

import attrs
import pytest
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
    start = time.monotonic()
    built = build(Many, {"items": items, "union": items})
    assert time.monotonic() - start < 5
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
