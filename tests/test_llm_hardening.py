"""Issues #17.2-#17.4 and #18.1, #18.2, #18.5: the LLM tool formats against a server's
(and a model's) faults.

- #17.2: ``$ref`` expansion is bounded: a 2 KB schema whose 30 ``$defs`` each name the
  next twice used to expand to 2^30 copies (the converters never returned).
- #17.3: a tool listed twice, or names crafted to collide with the library's own renaming,
  degrade with a warning instead of a ValueError that broke every server's export.
- #17.4: a model's arguments nested 100,000 deep become an error result, not RecursionError.
- #18.1: the nulls OpenAI strict mode makes a model send for optional parameters are left out.
- #18.2: Responses API tools always carry ``strict``.
- #18.5: an unknown tool's error names the closest few tools, not all of them.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Iterator

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._llm_formats import (
    EXPANSION_BUDGET,
    assign_names,
    drop_optional_nulls,
    gemini_schema,
    llm_name,
    openai_strict_schema,
)

from conftest import PY

pytestmark = pytest.mark.timeout(120)

# Seconds a conversion may take on a loaded 2-core machine; the bounded ones take well under 1 s.
BOUND = 10.0

# The stdio server whose tools come from a JSON file (tests/servers/file_tools_server.py): a tool with
# "refuse_nulls" answers -32602 for any null in its arguments, as server-filesystem does.
FILE_TOOLS_SERVER = str(Path(__file__).resolve().parent / "servers" / "file_tools_server.py")

OBJECT = {"type": "object"}


def _server(tmp_path: Path, tools: list[dict[str, Any]], name: str = "tools") -> list[str]:
    spec = tmp_path / f"{name}.json"
    spec.write_text(json.dumps(tools))
    return [FILE_TOOLS_SERVER, str(spec)]


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mcp_sync" and r.levelno >= logging.WARNING]


# -- #17.2: $ref expansion ---------------------------------------------------------------------------


def doubling_schema(levels: int, shape: str) -> dict[str, Any]:
    """``levels`` $defs, each naming the next twice (in allOf, or in two properties): 2^levels on expansion."""
    defs: dict[str, Any] = {}
    for i in range(levels):
        ref = {"$ref": f"#/$defs/d{i + 1}"}
        if shape == "allOf":
            defs[f"d{i}"] = {"allOf": [ref, dict(ref)]}
        else:
            defs[f"d{i}"] = {"type": "object", "properties": {"a": ref, "b": dict(ref)}}
    defs[f"d{levels}"] = {"type": "object", "properties": {"x": {"type": "string"}}}
    return {"type": "object", "properties": {"q": {"$ref": "#/$defs/d0"}}, "allOf": [{"$ref": "#/$defs/d0"}],
            "$defs": defs}


@pytest.mark.parametrize("shape", ["allOf", "properties"])
def test_exponential_refs_are_bounded_for_every_provider(shape: str, caplog: pytest.LogCaptureFixture) -> None:
    schema = doubling_schema(30, shape)
    assert len(json.dumps(schema)) < 4000  # a small schema...
    tool = mcp_sync.Tool(name="bomb", input_schema=schema)
    fine = mcp_sync.Tool(name="fine", input_schema={"type": "object", "properties": {"a": {"type": "string"}}})
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    # (converter, whether it expands nested refs): the plain schemas (OpenAI non-strict, Anthropic)
    # inline only the root's allOf, so only that shape expands there
    for convert, expands in (
        (lambda: mcp_sync.to_openai_tools([tool, fine]), shape == "allOf"),
        (lambda: mcp_sync.to_openai_tools([tool, fine], strict=True), True),
        (lambda: mcp_sync.to_openai_tools([tool, fine], api="responses", strict=True), True),
        (lambda: mcp_sync.to_anthropic_tools([tool, fine]), shape == "allOf"),
        (lambda: mcp_sync.to_gemini_tools([tool, fine]), True),
    ):
        caplog.clear()
        start = time.monotonic()
        out = convert()
        assert time.monotonic() - start < BOUND
        assert len(json.dumps(out)) < 50 * EXPANSION_BUDGET  # ...stays small once converted
        warned = any("'bomb'" in message and "expands past" in message for message in _warnings(caplog))
        assert warned == expands
        assert "fine" in json.dumps(out)  # the other tools are unaffected
    strict = mcp_sync.to_openai_tools([tool, fine], strict=True)
    assert [t["function"]["strict"] for t in strict] == [False, True]  # the big one sent non-strict
    plain = mcp_sync.to_anthropic_tools([tool])[0]["input_schema"]
    assert plain["$defs"] == schema["$defs"] and plain["properties"]["q"] == schema["properties"]["q"]  # refs kept


def test_a_schema_too_big_to_clean_is_sent_loose_and_its_arguments_as_they_are(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """gemini_schema called on its own stops at the budget too (a loose object, with a warning); and
    run_tool_call on a tool whose schema is too big to look for optional nulls in sends the model's
    arguments unchanged (the server judges them) instead of expanding the schema."""
    schema = doubling_schema(30, "allOf")
    caplog.set_level(logging.INFO, logger="mcp_sync")
    start = time.monotonic()
    assert gemini_schema(schema) == {"type": "object"}
    assert any("expands past" in message for message in _warnings(caplog))
    with mcp_sync.Client.stdio(PY, _server(tmp_path, [{"name": "bomb", "inputSchema": schema}]), timeout=20) as client:
        call = {"id": "1", "type": "function", "function": {"name": "bomb", "arguments": '{"q": null, "x": null}'}}
        out = client.run_tool_call(call)
    assert json.loads(out["content"])["args"] == {"q": None, "x": None}
    assert any("too large to look for optional nulls" in r.getMessage() for r in caplog.records)
    assert time.monotonic() - start < 2 * BOUND


def test_a_small_shared_ref_is_still_inlined() -> None:
    """The budget only stops blow-ups: refs used a few times are still inlined as before."""
    schema = doubling_schema(4, "properties")
    tool = mcp_sync.Tool(name="ok", input_schema=schema)
    strict = mcp_sync.to_openai_tools([tool], strict=True)[0]["function"]
    assert strict["strict"] is True and "$ref" not in json.dumps(strict["parameters"])
    gemini = mcp_sync.to_gemini_tools([tool])[0]["function_declarations"][0]["parameters"]
    assert "x" in json.dumps(gemini) and "$ref" not in json.dumps(gemini)


@st.composite
def ref_dags(draw: st.DrawFn) -> dict[str, Any]:
    """Random $defs where each definition names later ones (a DAG, often with heavy sharing) or itself."""
    count = draw(st.integers(2, 40))
    defs: dict[str, Any] = {}
    for i in range(count):
        targets = draw(st.lists(st.integers(i, count), min_size=1, max_size=4))
        refs = [{"$ref": f"#/$defs/d{t}"} for t in targets]
        kind = draw(st.sampled_from(["allOf", "properties", "anyOf", "items"]))
        if kind == "properties":
            defs[f"d{i}"] = {"type": "object", "properties": {f"p{j}": r for j, r in enumerate(refs)}}
        elif kind == "items":
            defs[f"d{i}"] = {"type": "array", "items": refs[0]}
        else:
            defs[f"d{i}"] = {kind: refs}
    defs[f"d{count}"] = {"type": "string"}
    return {"type": "object", "properties": {"a": {"$ref": "#/$defs/d0"}}, "allOf": [{"$ref": "#/$defs/d0"}],
            "$defs": defs}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=ref_dags())
def test_any_ref_graph_converts_within_a_bound(schema: dict[str, Any]) -> None:
    tool = mcp_sync.Tool(name="t", input_schema=schema)
    start = time.monotonic()
    outputs = [
        mcp_sync.to_openai_tools([tool], strict=True),
        mcp_sync.to_anthropic_tools([tool]),
        mcp_sync.to_gemini_tools([tool]),
    ]
    assert time.monotonic() - start < BOUND
    assert all(len(json.dumps(out)) < 50 * EXPANSION_BUDGET for out in outputs)


# -- #17.3: names ------------------------------------------------------------------------------------


def test_colliding_and_duplicate_names_are_renamed_deterministically(caplog: pytest.LogCaptureFixture) -> None:
    crafted = llm_name("a.b")  # a valid name, taken as it is, that the renaming of "a.b" also gives
    tools = [mcp_sync.Tool(name="a.b"), mcp_sync.Tool(name=crafted), mcp_sync.Tool(name="a.b")]
    forward = [(name, tool.name) for name, tool in assign_names(tools)]
    backward = [(name, tool.name) for name, tool in assign_names(list(reversed(tools)))]
    assert sorted(forward) == sorted(backward)  # the same names whatever the listing order
    assert dict((mcp, name) for name, mcp in forward)[crafted] == crafted  # the valid name keeps itself
    names = [name for name, _ in forward]
    assert len(names) == len(set(names)) == 2 and all(mcp_sync.to_openai_tools(tools))
    messages = _warnings(caplog)
    assert any("listed twice" in m for m in messages) and any("would share" in m for m in messages)


@pytest.fixture
def odd_server(tmp_path: Path) -> list[str]:
    """A server that lists "echo" twice, and "a.b" next to a tool named llm_name("a.b")."""
    return _server(tmp_path, [
        {"name": "echo", "inputSchema": OBJECT},
        {"name": "echo", "inputSchema": OBJECT},
        {"name": "a.b", "inputSchema": OBJECT},
        {"name": llm_name("a.b"), "inputSchema": OBJECT},
    ], "odd")


def test_a_client_exports_and_calls_colliding_names(odd_server: list[str]) -> None:
    with mcp_sync.Client.stdio(PY, odd_server, timeout=20) as client:
        tools = client.to_openai_tools()
        names = [t["function"]["name"] for t in tools]
        assert len(names) == 3 and len(set(names)) == 3
        for name in names:  # each name the model sees reaches its own tool
            call = {"id": "1", "type": "function", "function": {"name": name, "arguments": "{}"}}
            text = client.run_tool_call(call)["content"]
            reached = json.loads(text)["tool"]
            assert name == reached or name == next(n for n, t in assign_names(client.tools()) if t.name == reached)
        assert len(client.to_anthropic_tools()) == len(client.to_gemini_tools()[0]["function_declarations"]) == 3


def test_one_bad_member_does_not_break_a_group_export(odd_server: list[str], tmp_path: Path) -> None:
    good = _server(tmp_path, [{"name": "add", "inputSchema": OBJECT}], "good")
    servers = {"bad": {"command": PY, "args": odd_server}, "good": {"command": PY, "args": good}}
    with mcp_sync.ClientGroup(servers, timeout=20) as group:
        for tools in (group.to_openai_tools(), group.to_anthropic_tools()):
            names = [t.get("name") or t["function"]["name"] for t in tools]
            assert "good__add" in names and "bad__echo" in names and len(names) == len(set(names)) == 4
        call = {"type": "tool_use", "id": "t1", "name": "good__add", "input": {}}
        out = group.run_tool_call(call, format="anthropic")
        assert out["is_error"] is False and '"tool": "add"' in out["content"][0]["text"]


# -- #17.4: deep arguments -----------------------------------------------------------------------------


def test_deeply_nested_arguments_become_an_error_result(tmp_path: Path) -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    with mcp_sync.Client.stdio(PY, _server(tmp_path, [{"name": "echo", "inputSchema": OBJECT}]), timeout=20) as c:
        text = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
        out = c.run_tool_call({"id": "1", "type": "function", "function": {"name": "echo", "arguments": text}})
        assert out["content"].startswith("Error:") and "nested too deeply" in out["content"]
        anthropic = c.run_tool_call({"type": "tool_use", "id": "2", "name": "echo", "input": {"a": deep}},
                                    format="anthropic")
        assert anthropic["is_error"] and "nested too deeply" in anthropic["content"][0]["text"]
        gemini = c.run_tool_call({"functionCall": {"name": "echo", "args": {"a": deep}}}, format="gemini")
        assert "nested too deeply" in gemini["function_response"]["response"]["error"]
        ok = c.run_tool_call({"type": "tool_use", "id": "3", "name": "echo", "input": {"a": [[[1]]]}},
                             format="anthropic")
        assert ok["is_error"] is False  # ordinary nesting still goes through


# -- #18.1: strict mode's nulls --------------------------------------------------------------------------

READ_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "head": {"type": "number"},
        "tail": {"type": "number"},
        "note": {"type": ["string", "null"]},  # may be null: a null here is kept
        "options": {"type": "object", "properties": {"encoding": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["encoding"]},
        "ranges": {"type": "array", "items": {"$ref": "#/$defs/range"}},
    },
    "required": ["path"],
    "$defs": {"range": {"type": "object", "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}}}},
}


def test_strict_nulls_for_optional_parameters_are_dropped(tmp_path: Path) -> None:
    """server-filesystem refuses {"path": ..., "head": null, "tail": null} with -32602; a strict model sends it."""
    tools = [{"name": "read_text_file", "inputSchema": READ_FILE, "refuse_nulls": False},
             {"name": "read_strict", "inputSchema": {**READ_FILE, "properties": {
                 k: v for k, v in READ_FILE["properties"].items() if k != "note"}}, "refuse_nulls": True}]
    with mcp_sync.Client.stdio(PY, _server(tmp_path, tools), timeout=20) as client:
        strict = {t["function"]["name"]: t["function"] for t in client.to_openai_tools(strict=True)}
        assert strict["read_strict"]["strict"] is True
        assert strict["read_strict"]["parameters"]["required"] == list(tools[1]["inputSchema"]["properties"])
        arguments = {"path": "/x", "head": None, "tail": None, "options": {"encoding": "utf-8", "limit": None},
                     "ranges": [{"from": 1, "to": None}, {"from": None, "to": 2}]}
        call = {"id": "c1", "type": "function", "function": {"name": "read_strict", "arguments": json.dumps(arguments)}}
        out = client.run_tool_call(call)
        assert not out["content"].startswith("Error"), out["content"]
        assert json.loads(out["content"])["args"] == {"path": "/x", "options": {"encoding": "utf-8"},
                                                      "ranges": [{"from": 1}, {"to": 2}]}
        kept = {**arguments, "note": None, "path": None}
        call = {"id": "c2", "type": "function", "function": {"name": "read_text_file", "arguments": json.dumps(kept)}}
        sent = json.loads(client.run_tool_call(call)["content"])["args"]
        assert sent["note"] is None and sent["path"] is None  # allowed null, and a required one: the server's call


def test_drop_optional_nulls_does_not_change_its_input() -> None:
    arguments = {"path": "/x", "options": {"encoding": "a", "limit": None}}
    before = json.dumps(arguments)
    assert drop_optional_nulls(arguments, READ_FILE) == {"path": "/x", "options": {"encoding": "a"}}
    assert json.dumps(arguments) == before


def _leaf_types() -> Any:
    return st.sampled_from(["string", "integer", "boolean", "number"])


@st.composite
def object_schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    names = draw(st.lists(st.text("abcdef", min_size=1, max_size=3), min_size=1, max_size=4, unique=True))
    props: dict[str, Any] = {}
    for name in names:
        if depth < 3 and draw(st.booleans()):
            props[name] = draw(object_schemas(depth + 1))
        elif depth < 3 and draw(st.integers(0, 4)) == 0:
            props[name] = {"type": "array", "items": draw(object_schemas(depth + 1))}
        else:
            props[name] = {"type": draw(_leaf_types())}
    required = draw(st.lists(st.sampled_from(names), unique=True))
    return {"type": "object", "properties": props, "required": required}


_VALUES = {"string": "s", "integer": 1, "boolean": True, "number": 1.5}


def strict_model_arguments(schema: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    """What a model in OpenAI strict mode sends: every property present, optional ones maybe null."""
    out: dict[str, Any] = {}
    for name, sub in schema["properties"].items():
        if name not in schema["required"] and data.draw(st.booleans()):
            out[name] = None
        elif sub.get("type") == "object":
            out[name] = strict_model_arguments(sub, data)
        elif sub.get("type") == "array":
            out[name] = [strict_model_arguments(sub["items"], data) for _ in range(data.draw(st.integers(0, 2)))]
        else:
            out[name] = _VALUES[sub["type"]]
    return out


@settings(max_examples=200, deadline=None)
@given(schema=object_schemas(), data=st.data())
def test_strict_arguments_match_the_original_schema_once_nulls_are_dropped(
    schema: dict[str, Any], data: st.DataObject
) -> None:
    strict = openai_strict_schema(schema)
    assert strict is not None
    arguments = strict_model_arguments(schema, data)
    jsonschema.validate(arguments, strict)  # what the model may send...
    jsonschema.validate(drop_optional_nulls(arguments, schema), schema)  # ...is what the tool takes


# -- #18.2 and #18.5 ------------------------------------------------------------------------------------


def test_responses_tools_always_say_strict() -> None:
    tools = [mcp_sync.Tool(name="a", input_schema={"type": "object", "properties": {"x": {"type": "string"}}}),
             mcp_sync.Tool(name="free", input_schema={"type": "object", "additionalProperties": True})]
    assert [t["strict"] for t in mcp_sync.to_openai_tools(tools, api="responses")] == [False, False]
    assert [t["strict"] for t in mcp_sync.to_openai_tools(tools, api="responses", strict=True)] == [True, False]
    assert "strict" not in mcp_sync.to_openai_tools(tools)[0]["function"]  # Chat Completions: absent is false


class _Fake(mcp_sync._llm_formats.LLMFormatsMixin):
    def __init__(self, tools: list[mcp_sync.Tool]) -> None:
        self._tools = tools
        self._tool_names = mcp_sync._llm_formats.ToolNames()  # the mixin's hook, as Client and ClientGroup set it

    def tools(self, **options: Any) -> Iterator[mcp_sync.Tool]:
        return iter(self._tools)

    def call_tool(self, *args: Any, **kwargs: Any) -> mcp_sync.CallToolResult:
        raise AssertionError("not called for an unknown tool")


def test_unknown_tool_names_the_closest_few() -> None:
    fake = _Fake([mcp_sync.Tool(name=f"tool_{i:04d}") for i in range(2000)]
                 + [mcp_sync.Tool(name="read_file"), mcp_sync.Tool(name="write_file")])
    fake.to_openai_tools()
    out = fake.run_tool_call({"id": "1", "type": "function", "function": {"name": "read_fil", "arguments": "{}"}})
    assert "'read_file'" in out["content"] and out["content"].count("tool_") <= 3
    start = time.monotonic()
    huge = "x" * 1_000_000
    out = fake.run_tool_call({"id": "2", "type": "function", "function": {"name": huge, "arguments": "{}"}})
    assert time.monotonic() - start < BOUND
    assert out["content"].startswith("Error: unknown tool") and len(out["content"]) < 1000


def test_an_export_warns_once_per_fault(odd_server: list[str], caplog: pytest.LogCaptureFixture) -> None:
    with mcp_sync.Client.stdio(PY, odd_server, timeout=20) as client:
        caplog.set_level(logging.WARNING, logger="mcp_sync")
        client.to_openai_tools()
    messages = _warnings(caplog)
    assert sum("listed twice" in m for m in messages) == 1 and sum("would share" in m for m in messages) == 1
