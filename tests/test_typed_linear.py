"""Issue #28.4: typed results are built in time linear in the value, and within the call's timeout.

``output_type=`` with a recursive union (``Dir(children: list[Union[Dir, Pair, File]], kind:
Literal["dir"])``) took exponential time: a union tries its members in turn, and a member refused
late (``kind`` is read after the recursive fields) had already built the node's whole subtree, so
each level multiplied the work by the number of members tried. A 20-level value did not finish in
40 s, a valid 60-level tree never did, and the spin ignored the call's timeout.

Work is measured by counting the builder's steps (calls of ``mcp_sync._typed._convert``), never by
the clock. The counter also stops a build at the linear bound, so the exponential builder fails
here at once instead of hanging the run.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from typing import Any, Iterator, List, Literal, Optional, Union

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typing_extensions import TypedDict

import mcp_sync
import mcp_sync._typed as typed
from mcp_sync._typed import MAX_DEPTH, build, build_result

pytestmark = pytest.mark.timeout(120)


@dataclasses.dataclass
class Dir:
    """The issue's type: its ``kind`` is read after its ``children``."""

    children: List[Entry]
    kind: Literal["dir"]


@attrs.define
class Pair:
    first: Entry
    second: Optional[Entry]
    kind: Literal["pair"]


class File(TypedDict):
    """The last member: before the fix each File node was built as a Pair first (``first`` fits,
    then ``second`` is missing), doubling the work at each level."""

    first: Optional[Entry]
    kind: Literal["file"]


Entry = Union[Dir, Pair, File]

#: Steps per node the builder may take for ``Entry``: a node is converted as an ``Entry`` and as each
#: of its 3 members once per class its parent is built as (at most 3 classes: 12 steps), and its own
#: fields that are no node (``kind``, a list) once per class it is built as (at most 9): 21 at most,
#: about 10 measured. The bound depends on the type, not on the value; the exponential builder
#: passes it from about 5 levels on.
STEPS_PER_NODE = 25


class TooMuchWork(Exception):
    """Raised by the step counter past its limit: a non-linear build stops here instead of hanging."""


class Steps:
    """Counts the builder's steps (its recursive ``_convert`` calls) and stops it past ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit, self.count = limit, 0


@contextlib.contextmanager
def steps(limit: int) -> Iterator[Steps]:
    """A step counter around the builder while the block runs (its recursion goes through the
    module's ``_convert`` name, so every step is counted). A context manager, not a fixture: the
    hypothesis test needs a fresh one per example."""
    counter, original = Steps(limit), typed._convert

    def counted(*args: Any) -> Any:
        counter.count += 1
        if counter.count > limit:
            raise TooMuchWork(f"more than {limit} steps")
        return original(*args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typed, "_convert", counted)
        yield counter


def nodes(value: Any) -> int:
    """The objects (tree nodes) in a JSON value."""
    if isinstance(value, dict):
        return 1 + sum(nodes(item) for item in value.values())
    if isinstance(value, list):
        return sum(nodes(item) for item in value)
    return 0


def file_chain(levels: int) -> tuple[dict[str, Any], File]:
    """``levels`` File nodes, each holding the next: JSON and the expected build."""
    value: dict[str, Any] = {"first": None, "kind": "file"}
    expected: File = {"first": None, "kind": "file"}
    for _ in range(levels - 1):
        value, expected = {"first": value, "kind": "file"}, {"first": expected, "kind": "file"}
    return value, expected


def mixed_chain(levels: int) -> tuple[dict[str, Any], Any]:
    """File, Pair and Dir nodes in turn, each holding the next: JSON and the expected build."""
    value: dict[str, Any] = {"children": [], "kind": "dir"}
    expected: Any = Dir([], "dir")
    for level in range(levels - 1):
        kind = ("file", "pair", "dir")[level % 3]
        if kind == "file":
            value, expected = {"first": value, "kind": "file"}, {"first": expected, "kind": "file"}
        elif kind == "pair":
            value, expected = {"first": value, "second": None, "kind": "pair"}, Pair(expected, None, "pair")
        else:
            value, expected = {"children": [value], "kind": "dir"}, Dir([expected], "dir")
    return value, expected


@pytest.mark.parametrize("levels", [20, 60])
def test_the_issues_values_are_built_in_linear_steps(levels: int) -> None:
    """Trees of the last member. Before: 20 levels (under 600 bytes) took about 2**20 steps and did
    not finish in 40 s; 60 levels never finished."""
    value, expected = file_chain(levels)
    assert levels > 20 or len(json.dumps(value)) < 600
    with steps(STEPS_PER_NODE * levels):
        assert build(Entry, value) == expected


def test_a_mix_of_the_members_is_built_in_linear_steps() -> None:
    value, expected = mixed_chain(45)  # 15 Dirs walk 2 levels each: 75 in all, within MAX_DEPTH
    with steps(STEPS_PER_NODE * 45):
        assert build(Entry, value) == expected


def test_work_doubles_when_the_depth_doubles() -> None:
    """Depth n and 2n: the steps grow by a factor of about 2 (before: by about 2**n)."""
    counts = []
    for levels in (20, 40):
        value, expected = file_chain(levels)
        with steps(STEPS_PER_NODE * levels) as counter:
            assert build(Entry, value) == expected
        counts.append(counter.count)
    assert 1.8 <= counts[1] / counts[0] <= 2.05, counts


def test_a_refused_deep_value_is_refused_in_linear_steps() -> None:
    """The deepest node broken: every member fails at every level, each decided once per node. The
    message is the one before the fix: the first member's complaint about the root."""
    value, _ = file_chain(60)
    leaf = value
    while leaf["first"] is not None:
        leaf = leaf["first"]
    leaf["kind"] = "folder"
    with steps(STEPS_PER_NODE * 60), pytest.raises(
        mcp_sync.ProtocolError, match=r"^the structured content does not fit Union: field 'children': missing$"
    ):
        build(Entry, value)


@st.composite
def trees(draw: st.DrawFn) -> tuple[Any, Any]:
    """A random Entry tree (up to 30 levels, about 60 nodes): its JSON and its expected build."""
    depth_left = draw(st.integers(1, 30))
    budget = [draw(st.integers(1, 60))]

    def entry(depth: int) -> tuple[Any, Any]:
        budget[0] -= 1
        if depth <= 1 or budget[0] <= 0:
            kind = draw(st.sampled_from(["dir", "file"]))  # the leaves: an empty Dir, an empty File
            if kind == "dir":
                return {"children": [], "kind": "dir"}, Dir([], "dir")
            return {"first": None, "kind": "file"}, {"first": None, "kind": "file"}
        kind = draw(st.sampled_from(["dir", "pair", "file"]))
        if kind == "dir":
            children = [entry(depth - 1) for _ in range(draw(st.integers(0, 3)))]
            return ({"children": [json for json, _ in children], "kind": "dir", "extra": 1},
                    Dir([built for _, built in children], "dir"))
        if kind == "pair":
            first = entry(depth - 1)
            second = entry(depth - 1) if draw(st.booleans()) else (None, None)
            return ({"first": first[0], "second": second[0], "kind": "pair"},
                    Pair(first[1], second[1], "pair"))
        inner = entry(depth - 1) if draw(st.booleans()) else (None, None)
        return {"first": inner[0], "kind": "file"}, {"first": inner[1], "kind": "file"}

    return entry(depth_left)


def nesting(value: Any) -> int:
    """How deep the builder walks ``value`` (each field and each item is a level)."""
    if isinstance(value, dict):
        return 1 + max((nesting(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(item) for item in value), default=0)
    return 0


@settings(max_examples=150, deadline=None)
@given(tree=trees(), break_one=st.booleans(), which=st.integers(0, 10_000))
def test_typed_building_is_linear_in_the_value(tree: tuple[Any, Any], break_one: bool, which: int) -> None:
    """Any tree of the recursive union is built right (or, one node's ``kind`` broken, refused) in at
    most ``STEPS_PER_NODE`` steps per node."""
    value, expected = tree
    assert nesting(value) <= MAX_DEPTH  # 30 levels of Dir are 60 walked levels
    size = nodes(value)
    if break_one:
        objects: list[dict[str, Any]] = []
        stack: list[Any] = [value]
        while stack:
            item = stack.pop()
            if isinstance(item, dict):
                objects.append(item)
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
        objects[which % len(objects)]["kind"] = "broken"
        with steps(STEPS_PER_NODE * size), pytest.raises(mcp_sync.ProtocolError, match="does not fit Union"):
            build(Entry, value)
    else:
        with steps(STEPS_PER_NODE * size):
            assert build(Entry, value) == expected


def test_building_stops_at_the_calls_timeout() -> None:
    """Past ``seconds`` (the call's timeout) the build stops with a ProtocolError, by the schema
    check's own budget, which is left as it was for the next check."""
    from mcp_sync._schema_subset import _BUDGET  # here: before the fix it lived in _schemas (session layer)

    wide = {"children": [{"first": None, "kind": "file"}] * 5_000, "kind": "dir"}
    before = _BUDGET.steps, _BUDGET.deadline
    with pytest.raises(mcp_sync.ProtocolError, match=r"^tool 't': the structured content was not built as Dir: "
                                                     r"building it ran past the call's timeout \(0 s\)$"):
        build(Dir, wide, what="tool 't': the structured content", seconds=0)
    with pytest.raises(mcp_sync.ProtocolError, match="ran past the call's timeout"):
        build_result(Dir, {"result": wide}, wide, what="x", seconds=0)
    assert (_BUDGET.steps, _BUDGET.deadline) == before
    assert len(build(Dir, wide, seconds=60).children) == 5_000
    assert len(build(Dir, wide).children) == 5_000  # no timeout: no bound
