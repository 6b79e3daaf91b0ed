"""How a tool's inputSchema is cleaned for each LLM API (#10, #18.1; ``mcp_sync._llm_formats``), for
the schema shapes test_llm_formats.py's cases and property do not draw: ``allOf`` branches that add
``required`` keys or are boolean schemas, boolean and deeply nested property schemas, ``examples``,
tuple-form ``items``, keywords OpenAI strict mode refuses; and which nulls ``drop_optional_nulls``
leaves out, as a property checked against jsonschema: a null is dropped only where the schema
refuses it (never one the server would take), and for a schema of one keyword exactly there.
"""

from __future__ import annotations

import logging
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._llm_formats import drop_optional_nulls, gemini_schema, openai_strict_schema

pytestmark = pytest.mark.timeout(60)

STRING, INTEGER = {"type": "string"}, {"type": "integer"}


def _tool(schema: Any) -> mcp_sync.Tool:
    return mcp_sync.Tool(name="t", input_schema=schema)


def _nested(levels: int, leaf: dict[str, Any]) -> dict[str, Any]:
    """``levels`` objects, each with an optional property ``x`` (``leaf``) and the next level as ``n``."""
    schema: dict[str, Any] = {"type": "object", "properties": {"x": leaf}}
    for _ in range(levels - 1):
        schema = {"type": "object", "properties": {"x": leaf, "n": schema}}
    return schema


def test_all_of_branches_are_merged_with_their_required_keys() -> None:
    schema = {"allOf": [True, {"type": "object", "properties": {"a": STRING}, "required": ["a"]},
                        {"properties": {"b": INTEGER}, "required": ["b", "a"]}]}
    plain = mcp_sync.to_anthropic_tools([_tool(schema)])[0]["input_schema"]
    assert plain == {"type": "object", "properties": {"a": STRING, "b": INTEGER}, "required": ["a", "b"]}
    strict = openai_strict_schema(schema)
    assert strict is not None and strict["properties"] == {"a": STRING, "b": INTEGER}  # both required: not nullable
    gemini = mcp_sync.to_gemini_tools([_tool(schema)])[0]["function_declarations"][0]["parameters"]
    assert gemini["properties"] == {"a": STRING, "b": INTEGER} and sorted(gemini["required"]) == ["a", "b"]


def test_root_any_of_offers_every_object_branch() -> None:
    schema = {"anyOf": [False, {"properties": {"q": STRING}}, {"properties": {"id": INTEGER}, "required": ["id"]}]}
    plain = mcp_sync.to_openai_tools([_tool(schema)])[0]["function"]["parameters"]
    assert plain == {"type": "object", "properties": {"q": STRING, "id": INTEGER}}  # none required by a branch


def test_gemini_examples_tuple_items_and_boolean_schemas() -> None:
    schema = {"type": "object", "properties": {
        "city": {"type": "string", "examples": ["Oslo", "Rome"]},
        "pair": {"type": "array", "items": [INTEGER, STRING]},
        "empty": {"type": "array", "items": []},
        "anything": True,
    }}
    assert gemini_schema(schema)["properties"] == {
        "city": {"type": "string", "example": "Oslo"},  # Gemini takes one example
        "pair": {"type": "array", "items": INTEGER},  # the first item's schema is the closest it has
        "empty": {"type": "array", "items": {}},
        "anything": {},
    }


def test_gemini_and_strict_stop_at_the_nesting_bound() -> None:
    deep = _nested(40, STRING)
    node, levels = gemini_schema(deep), 0
    while "n" in node.get("properties", {}):
        node, levels = node["properties"]["n"], levels + 1
    assert 30 <= levels < 40 and node == {}  # past the bound: an unconstrained value, not a RecursionError
    assert openai_strict_schema(deep) is None


@pytest.mark.parametrize(("prop", "reason"), [
    (True, "not a schema"),
    ({"type": "string", "not": {"const": "root"}}, "uses not"),
    ({"type": "object", "patternProperties": {"^x": STRING}}, "uses patternProperties"),
    ({"type": "array"}, "an array without an items schema"),
])
def test_strict_mode_refuses_what_it_cannot_express(prop: Any, reason: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sync")
    schema = {"type": "object", "properties": {"p": prop}}
    [tool] = mcp_sync.to_openai_tools([_tool(schema)], strict=True)
    assert tool["function"]["strict"] is False and tool["function"]["parameters"] == schema  # sent as it is
    assert any(f"tool 't': schema not sent in OpenAI strict mode: it has {reason}" in r.getMessage()
               for r in caplog.records)


def test_an_unknown_api_is_refused() -> None:
    with pytest.raises(ValueError, match="api must be 'chat' or 'responses', not 'assistants'"):
        mcp_sync.to_openai_tools([_tool({})], api="assistants")


# -- drop_optional_nulls ----------------------------------------------------------------------------


def test_nulls_under_free_form_or_too_deep_schemas_are_kept() -> None:
    schema = {"type": "object", "properties": {"options": True, "deep": _nested(40, STRING)}}
    arguments: dict[str, Any] = {"options": {"x": None}, "deep": {"x": None}}
    leaf = arguments["deep"]
    for _ in range(39):
        leaf["n"] = {"x": None}
        leaf = leaf["n"]
    out = drop_optional_nulls(arguments, schema)
    assert out["options"] == {"x": None}  # nothing says what "options" holds: its null stays
    assert "x" not in out["deep"] and "x" not in out["deep"]["n"]
    bottom = out["deep"]
    while "n" in bottom:
        bottom = bottom["n"]
    assert bottom == {"x": None}  # past the nesting bound: left as it is
    assert arguments["deep"]["x"] is None  # the input is not changed


_VALUES = st.sampled_from([None, "a", 1, True])
_TYPES = ["string", "integer", "boolean", "object", "array", "null"]
_leaves = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(_TYPES)),
    st.builds(lambda ts: {"type": ts}, st.lists(st.sampled_from(_TYPES), min_size=1, max_size=3, unique=True)),
    st.builds(lambda vs: {"enum": vs}, st.lists(_VALUES, min_size=1, max_size=3, unique_by=repr)),
    st.builds(lambda v: {"const": v}, _VALUES),
    st.just({}),
    st.just(True),
)


def _any_of(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(leaves, lambda inner: st.builds(lambda bs: {"anyOf": bs}, st.lists(inner, min_size=1,
                                                                                           max_size=3)), max_leaves=6)


# one keyword: whether such a schema takes null is decided exactly ("shared" is the one $defs entry)
_shared = _any_of(_leaves)
_single = _any_of(_leaves | st.just({"$ref": "#/$defs/shared"}))
# several keywords, oneOf, not: a null is then kept when unsure
_several = st.one_of(
    st.builds(lambda s, vs: {**s, "enum": vs}, st.builds(lambda t: {"type": t}, st.sampled_from(_TYPES)),
              st.lists(_VALUES, min_size=1, max_size=3, unique_by=repr)),
    st.builds(lambda bs: {"oneOf": bs}, st.lists(_single, min_size=1, max_size=3)),
    st.builds(lambda s: {"not": s}, _single),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(props=st.lists(st.tuples(_single | _several, st.booleans()), min_size=1, max_size=5),
       shared=_shared)
@example(props=[  # each kind pinned, not left to chance
    ({"enum": ["a", 1]}, False), ({"enum": ["a", None]}, False), ({"const": "a"}, False), ({"const": None}, False),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, False), ({"anyOf": [{"type": "string"}, True]}, False),
    (True, False), ({}, False), ({"$ref": "#/$defs/shared"}, False), ({"type": ["string", "null"]}, False),
    ({"type": "string"}, True), ({"oneOf": [{"type": "string"}, {"type": "null"}]}, False),
    ({"not": {"type": "null"}}, False), ({"type": "integer", "enum": [1, None]}, False),
], shared={"type": "integer"})
def test_a_null_is_dropped_only_where_the_schema_refuses_it(props: list[tuple[Any, bool]], shared: Any) -> None:
    def is_one_keyword(schema: Any) -> bool:
        if not isinstance(schema, dict):
            return True
        if "anyOf" in schema:
            return all(is_one_keyword(branch) for branch in schema["anyOf"])
        return len(schema) <= 1 and "oneOf" not in schema and "not" not in schema

    names = [f"p{i}" for i in range(len(props))]
    schema = {"type": "object", "properties": dict(zip(names, (p for p, _ in props))),
              "required": [name for name, (_, required) in zip(names, props) if required], "$defs": {"shared": shared}}
    out = drop_optional_nulls(dict.fromkeys(names), schema)
    for name, (prop, required) in zip(names, props):
        takes_null = jsonschema.Draft202012Validator(
            {"properties": {name: prop}, "$defs": {"shared": shared}}).is_valid({name: None})
        if required or takes_null:
            assert name in out, (name, prop)  # never a null the server takes, never a required one
        elif is_one_keyword(prop) and is_one_keyword(shared):
            assert name not in out, (name, prop)
