"""Issue #17.1: checks of server-supplied schemas are bounded.

A server controls both the schema and the value checked against it. Before the fix a
``pattern`` like ``^(a+)+$`` made Python's backtracking ``re`` run for hours (holding the
GIL, so ``call_tool(timeout=5)`` never returned), ``uniqueItems`` over 30,000 objects ran
for minutes, and ``$ref`` chains multiplied the work without bound. The hostile calls run
in a child process so that a regression fails this test (by its timeout) instead of
hanging the test run.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sync._schemas import CHECK_SECONDS, all_unique, canonical, mismatches

pytestmark = pytest.mark.timeout(300)

EVIL = "^(a+)+$"  # catastrophic backtracking on "aaaa...a!"
EVIL_TEXT = "a" * 40 + "!"
# A bound for one check on a loaded 2-core machine: the check's own limit plus a wide margin.
BOUND = CHECK_SECONDS + 8.0

# The stdio server whose tools come from a JSON file (tests/servers/file_tools_server.py):
# [{"name", "inputSchema", "outputSchema", "result"}]; a call answers "result" as structuredContent.
FILE_TOOLS_SERVER = Path(__file__).resolve().parent / "servers" / "file_tools_server.py"

# The child: one client, every tool called once (validate=True: the inputSchema is checked
# against the same hostile value), elapsed seconds printed per tool.
CHILD = r'''
import json, logging, sys, time
import mcp_sync
logging.basicConfig(level=logging.WARNING)
server, spec = sys.argv[1], sys.argv[2]
names = [t["name"] for t in json.load(open(spec))]
out = {}
with mcp_sync.Client.stdio(sys.executable, [server, spec], timeout=60) as client:
    list(client.tools())
    for name in names:
        value = next(t for t in json.load(open(spec)) if t["name"] == name)["result"]
        # this process's CPU time (every client thread, not the server's, not other processes' load)
        start = time.process_time()
        result = client.call_tool(name, value, timeout=60, validate=True)
        out[name] = [time.process_time() - start, result.structured_content == value]
print(json.dumps(out))
'''


def _object(prop_schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"s": prop_schema}}


HOSTILE_TOOLS = [
    # pattern on a property, in both inputSchema and outputSchema
    {"name": "pattern", "schema": _object({"type": "string", "pattern": EVIL}), "result": {"s": EVIL_TEXT}},
    # patternProperties: the key is matched against the pattern
    {"name": "pattern_properties", "schema": {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}},
     "result": {EVIL_TEXT: 1}},
    # ... and with additionalProperties / unevaluatedProperties depending on it
    {"name": "pattern_additional", "schema": {"type": "object", "patternProperties": {EVIL: {}},
                                              "additionalProperties": False}, "result": {EVIL_TEXT: 1}},
    {"name": "pattern_unevaluated", "schema": {"type": "object", "patternProperties": {EVIL: {}},
                                               "unevaluatedProperties": False}, "result": {EVIL_TEXT: 1}},
    # propertyNames with a pattern
    {"name": "property_names", "schema": {"type": "object", "propertyNames": {"pattern": EVIL}},
     "result": {EVIL_TEXT: 1}},
    # a pattern reached only through a $ref into an odd place of the document
    {"name": "pattern_by_ref", "schema": {"type": "object", "properties": {"s": {"$ref": "#/x/y"}},
                                          "x": {"y": {"pattern": EVIL}}}, "result": {"s": EVIL_TEXT}},
    # uniqueItems over 30,000 distinct objects (~0.5 MB): quadratic in jsonschema
    {"name": "unique", "schema": _object({"type": "array", "uniqueItems": True}),
     "result": {"s": [{"id": i, "name": "item"} for i in range(30_000)]}},
]


def test_hostile_schemas_through_real_calls(tmp_path: Path) -> None:
    """Each hostile call costs the client well under 5 s of CPU, with both checks (input on request,
    output by default) on the hostile value, and the value comes back as the server sent it. CPU
    time, not wall-clock: a loaded machine once took 7 s of wall-clock over the linear check; the
    quadratic one it replaced takes minutes, and the 120 s bound on the whole run still holds."""
    server = FILE_TOOLS_SERVER
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps([
        {"name": t["name"], "inputSchema": t["schema"], "outputSchema": t["schema"], "result": t["result"]}
        for t in HOSTILE_TOOLS
    ]))
    root = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, str(server), str(spec)], capture_output=True, text=True,
                              timeout=120, cwd=root, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:  # the bug: a backtracking pattern or a quadratic check never ends
        pytest.fail("a hostile schema check did not finish in 120 s")
    assert done.returncode == 0, done.stderr
    times = json.loads(done.stdout)
    assert set(times) == {t["name"] for t in HOSTILE_TOOLS}
    for name, (elapsed, same) in times.items():
        assert elapsed < 5.0, (name, elapsed)
        assert same, name


def test_uniqueitems_still_finds_duplicates_fast() -> None:
    items: list[Any] = [{"id": i, "tags": ["a", i]} for i in range(30_000)]
    items.append({"tags": ["a", 7.0], "id": 7})  # equal to items[7]: keys reordered, 7.0 == 7
    start = time.thread_time()
    found = mismatches({"type": "array", "uniqueItems": True}, items, "x")
    assert time.thread_time() - start < BOUND
    assert found and "non-unique" in found[0][1] and "items 7 and 30000" in found[0][1]
    assert len(found[0][1]) <= 300  # the message is bounded too
    assert mismatches({"uniqueItems": True}, [1, True], "x") == []  # JSON: true is not 1
    assert mismatches({"uniqueItems": True}, [[1], [1.0]], "x")


def test_exponential_refs_stop_at_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    """30 $defs, each naming the next twice: 2^30 evaluations. The check stops at its bound and says so."""
    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(30)}
    defs["d30"] = {"type": "integer"}
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    start = time.thread_time()
    assert mismatches({"$defs": defs, "$ref": "#/$defs/d0"}, 1, "the result of 'deep'") is None
    assert time.thread_time() - start < BOUND
    assert any("'deep'" in r.getMessage() and "bound" in r.getMessage() for r in caplog.records)
    start = time.monotonic()
    assert mismatches({"$defs": defs, "$ref": "#/$defs/d0"}, 1, "x", seconds=0.2) is None  # the caller's bound
    assert time.monotonic() - start < 0.2 + 3.0


def test_patterns_are_never_run_but_other_keywords_are() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL, "maxLength": 3}}}
    assert mismatches(schema, {"s": EVIL_TEXT}, "x") == [("$.s", f"{EVIL_TEXT!r} is too long")]
    assert mismatches({"patternProperties": {"^x": {"type": "integer"}}}, {"x": "no"}, "x") == []


# -- properties ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(json_values, max_size=6))
def test_all_unique_agrees_with_pairwise_json_equality(items: list[Any]) -> None:
    """The reference is the quadratic pairwise comparison with JSON equality (not jsonschema's own
    ``uniq``, which is wrong for e.g. ``[[0], [False], [0]]``: it calls those unique)."""
    from mcp_sync._schema_subset import equal

    pairwise = not any(equal(a, b) for i, a in enumerate(items) for b in items[i + 1 :])
    assert all_unique(items) == pairwise


def test_canonical_is_iterative() -> None:
    deep: Any = 1
    for _ in range(100_000):
        deep = [deep]
    assert len(canonical(deep)) == 200_001  # no RecursionError: 100,000 opens, the 1, 100,000 closes
    assert all_unique([deep, 1]) and not all_unique([deep, deep])


patterns = st.sampled_from([EVIL, "^(a|a)*$", "(a*)*b", "^(a|aa)+$", "(x+x+)+y", "a{1,30}{1,30}$", "[", "^.*$"])


def _big_values(n: int) -> Any:
    return st.sampled_from([
        "a" * n + "!",
        {"a" * min(n, 100_000) + "!": 1},
        [{"id": i, "v": "a"} for i in range(n // 20)],
        ["a" * 30 + "!"] * (n // 40),
        {"s": "a" * n + "!", "t": ["a" * 50 + "!"] * (n // 60)},
    ])


def _schemas(pattern: str) -> Any:
    leaf = st.sampled_from([
        {"type": "string", "pattern": pattern},
        {"propertyNames": {"pattern": pattern}},
        {"patternProperties": {pattern: {"type": "string", "pattern": pattern}}, "additionalProperties": False},
        {"patternProperties": {pattern: {}}, "unevaluatedProperties": False},
        {"uniqueItems": True, "items": {"pattern": pattern}},
        {"type": "array", "uniqueItems": True, "items": {"type": "object", "propertyNames": {"pattern": pattern}}},
        {"format": "regex", "pattern": pattern},
    ])
    return st.recursive(
        leaf,
        lambda inner: st.builds(lambda a, b: {"anyOf": [a, b]}, inner, inner)
        | st.builds(lambda a: {"properties": {"s": a, "t": {"items": a}}}, inner)
        | st.builds(lambda a: {"$defs": {"x": a}, "allOf": [{"$ref": "#/$defs/x"}, {"$ref": "#/$defs/x"}]}, inner),
        max_leaves=4,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), size=st.just(1_000_000) | st.integers(1_000, 1_000_000))
def test_any_pattern_schema_on_values_up_to_a_megabyte_is_bounded(data: st.DataObject, size: int) -> None:
    """Generated schemas full of backtracking patterns and uniqueItems, on values up to ~1 MB:
    every check answers within BOUND seconds (CHECK_SECONDS + 8 s of margin for a loaded machine)."""
    pattern = data.draw(patterns)
    schema = data.draw(_schemas(pattern))
    value = data.draw(_big_values(size))
    start = time.monotonic()
    found = mismatches(schema, value, "x")
    elapsed = time.monotonic() - start
    assert elapsed < BOUND, (elapsed, schema)
    assert found is None or isinstance(found, list)


def test_the_call_timeout_bounds_the_result_check(caplog: pytest.LogCaptureFixture) -> None:
    """``check_result(..., seconds=)`` bounds the check below CHECK_SECONDS: the facade passes the
    call's timeout, or the client's when the call sets none."""
    import mcp_sync
    from mcp_sync._schemas import ToolSchemas

    defs: dict[str, Any] = {f"d{i}": {"allOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
                            for i in range(30)}
    defs["d30"] = {"type": "object"}  # the value matches: the whole 2^30 walk would be needed to say so
    tool = mcp_sync.Tool(name="deep", output_schema={"$defs": defs, "$ref": "#/$defs/d0"})
    result = mcp_sync.CallToolResult(content=[], structured_content={"n": 1})

    caplog.set_level(logging.WARNING, logger="mcp_sync")
    for seconds in (0.2, 0.3):  # a call's timeout, then a client's
        start = time.monotonic()
        ToolSchemas("strict").check_result(lambda: [], "deep", tool, result, seconds=seconds)
        assert time.monotonic() - start < 0.3 + 3.0
    assert sum("'deep'" in r.getMessage() for r in caplog.records) == 2
    assert "0.2 s" in caplog.records[0].getMessage() and "0.3 s" in caplog.records[1].getMessage()
