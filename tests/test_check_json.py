"""check_json's fast path (one pass of json's C encoder) agrees with the detailed walk on every
value (property test), and every check of a caller's value ends on a value that contains itself.

The facade checks each call's arguments once (#16: one walk of the arguments); the fast path
builds no paths, and only a value it does not accept is walked again to say what and where.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_sync._values import CYCLE, check_json, clean_json, walk_json

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(), st.sampled_from(["\ud800", "ok\udfff", "é", "x"]),
)
odd = st.sampled_from([{1, 2}, object(), b"bytes", 1 + 2j])
keys = st.one_of(st.text(), st.integers(), st.sampled_from(["\ud800", 1.5, None, True]))
values = st.recursive(
    st.one_of(scalars, odd),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.tuples(children, children), st.dictionaries(keys, children, max_size=4)
    ),
    max_leaves=20,
)


def _detailed(value: Any) -> type[BaseException] | None:
    """What the detailed walk alone raises (the fast path bypassed)."""
    import mcp_sync._values as values_module

    original = values_module.clean_json
    values_module.clean_json = lambda _value: False  # type: ignore[assignment]
    try:
        check_json(value, "v")
    except (TypeError, ValueError) as exc:
        return type(exc)
    finally:
        values_module.clean_json = original
    return None


@given(values)
def test_the_fast_path_accepts_only_what_the_detailed_walk_accepts(value: Any) -> None:
    if clean_json(value):
        assert _detailed(value) is None
    raised: type[BaseException] | None = None
    try:
        check_json(value, "v")
    except (TypeError, ValueError) as exc:
        raised = type(exc)
    assert raised is _detailed(value)


def test_the_common_values_take_the_fast_path() -> None:
    assert clean_json({"text": "hi", "n": [1, 2.5, None, True, {"é": "ü"}]})
    assert not clean_json({"x": math.nan})
    assert not clean_json({"x": "\ud800"})
    assert not clean_json({math.inf: 1})


def _cyclic() -> list[Any]:
    """Values that contain themselves, directly or through others, in dicts, lists and keys' values."""
    loop: dict[str, Any] = {"a": 1}
    loop["self"] = loop
    ring: list[Any] = [1, 2]
    ring.append({"back": [ring]})
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(50):
        node["next"] = node = {}
    node["root"] = deep
    return [loop, ring, deep, {"ok": [1, 2], "bad": loop}]


def test_a_value_that_contains_itself_is_refused_not_walked_for_ever() -> None:
    """Before: the walks followed a cycle for ever (call_tool with such arguments never returned,
    spinning a core). Now each ends with a ValueError naming where the value contains itself."""
    for value in _cyclic():
        try:
            check_json(value, "v")
        except ValueError as exc:
            assert "contains itself" in str(exc)
        else:
            raise AssertionError(f"accepted a cyclic value: {type(value).__name__}")


def test_a_shared_container_is_not_a_cycle() -> None:
    shared = {"x": [1, 2]}
    value = {"a": shared, "b": [shared, shared]}
    check_json(value, "v")  # JSON repeats it: no error
    assert [path for path, item in walk_json(value) if item is CYCLE] == []
    assert sum(1 for path, item in walk_json(value) if item is shared) == 3


def test_a_very_deep_value_is_json_and_is_accepted() -> None:
    """Nested past the recursion limit: the C pass refuses it for its depth only; the walk accepts it."""
    value: Any = "leaf"
    for _ in range(5000):
        value = [value]
    check_json(value, "v")

