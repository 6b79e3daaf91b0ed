"""The quick schema check (mcp_sync._schema_subset) agrees with jsonschema wherever it answers.

Property: for every generated schema the subset compiler accepts, and every generated JSON
value, the quick check says "valid" exactly when jsonschema's validator for the schema's
dialect does. Schemas using anything else must be refused (None), so jsonschema decides.
"""

from __future__ import annotations

import os
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcp_sync._schema_subset import compile_subset, equal
from mcp_sync._schemas import VALIDATORS, mismatches

EXAMPLES = 5000 if os.environ.get("MCP_SYNC_HYPOTHESIS_PROFILE") == "long" else 500
KEYS = ["a", "b", "c"]
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, -1.0, 1.5, 2.5, 1e300, -0.0, 3.0])
    | st.sampled_from(["", "x", "xy", "abc", "é", "\U0001f600"])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from([*KEYS, "d"]), inner, max_size=4),
    max_leaves=12,
)
TYPE_NAMES = ["object", "array", "string", "boolean", "null", "integer", "number"]
types = st.sampled_from(TYPE_NAMES) | st.lists(st.sampled_from(TYPE_NAMES), min_size=1, max_size=3, unique=True)
numbers = st.integers(-3, 3) | st.sampled_from([0.5, 1.0, 2.5, -1.5])
sizes = st.integers(0, 3)


def subset_schemas() -> st.SearchStrategy[Any]:
    def node(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keyword = st.one_of(
            st.tuples(st.just("type"), types),
            st.tuples(st.just("properties"), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
            st.tuples(st.just("required"), st.lists(st.sampled_from(KEYS), max_size=3, unique=True)),
            st.tuples(st.just("additionalProperties"), inner),
            st.tuples(st.just("items"), inner),
            st.tuples(st.just("enum"), st.lists(json_values, max_size=4)),
            st.tuples(st.just("const"), json_values),
            st.tuples(st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]), numbers),
            st.tuples(
                st.sampled_from(["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]),
                sizes,
            ),
            st.tuples(st.sampled_from(["title", "description", "format", "$comment"]), st.sampled_from(["email", "x"])),
        )
        return st.lists(keyword, max_size=5).map(dict)

    return st.recursive(st.booleans() | node(st.just(True)), node, max_leaves=8)


DIALECTS = [
    None,
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-06/schema#",
]


def reference_is_valid(schema: Any) -> Any:
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema).is_valid


SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=SLOW_OK)
@given(schema=subset_schemas(), dialect=st.sampled_from(DIALECTS), values=st.lists(json_values, min_size=1, max_size=6))
# pinned, not left to chance: a float with an integral value is an integer (for type and sizes alike),
# and the strict bounds
@example(schema={"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 2, "maxLength": 2.0}, dialect=None,
         values=[0, 0.0, 1.0, 1.5, 2, 2.0, "ab", "abc"])
def test_quick_check_agrees_with_jsonschema(schema: Any, dialect: str | None, values: list[Any]) -> None:
    if dialect is not None and isinstance(schema, dict):
        schema = {**schema, "$schema": dialect}
    check = compile_subset(schema)
    assert check is not None, schema  # everything generated is inside the subset
    is_valid = reference_is_valid(schema)
    for value in values:
        assert check(value) == is_valid(value), (schema, value)


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "string"}}},
        {"anyOf": [{"type": "string"}]},
        {"type": "string", "pattern": "^a"},
        {"type": "object", "patternProperties": {"^a": {}}, "additionalProperties": False},
        {"type": "object", "additionalProperties": False, "patternProperties": {"^a": {}}},  # either order
        {"additionalProperties": False, "properties": []},
        {"items": [{"type": "string"}]},
        {"prefixItems": [{"type": "string"}], "items": False},
        {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
        {"$schema": "https://example.com/unknown", "type": "string"},
        {"type": "frobnicate"},
        {"type": []},
        {"required": "a"},
        {"minimum": "1"},
        {"exclusiveMinimum": True},
        {"minLength": -1},
        {"minimum": float("nan")},
        {"properties": {"a": {"not": {}}}},
        {"properties": []},
        {"enum": "abc"},
        5,
        "string",
    ],
)
def test_anything_else_goes_to_jsonschema(schema: Any) -> None:
    assert compile_subset(schema) is None


def test_plain_tool_schemas_compile() -> None:
    # The shape the Python SDK emits for `def echo(text: str) -> str`.
    output = {
        "type": "object",
        "properties": {"result": {"type": "string", "title": "Result"}},
        "required": ["result"],
        "title": "echoOutput",
    }
    check = compile_subset(output)
    assert check is not None
    assert check({"result": "hi"}) and not check({"result": 5}) and not check({}) and not check([])


def test_json_equality() -> None:
    assert equal(1, 1.0) and equal([1, {"a": 2.0}], [1.0, {"a": 2}])
    assert not equal(True, 1) and not equal(False, 0) and not equal([True], [1]) and not equal({"a": 1}, {"a": True})
    assert not equal("1", 1) and not equal([], {}) and not equal(float("nan"), float("nan"))


def test_mismatches_still_explain_failures_of_plain_schemas() -> None:
    VALIDATORS.clear()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert mismatches(schema, {"n": 1}, "x") == []
    assert mismatches(schema, {"n": "one"}, "x") == [("$.n", "'one' is not of type 'integer'")]
    assert mismatches(schema, {}, "x") == [("$", "'n' is a required property")]
