"""check_json's one-walk fast path agrees with the detailed walk on every value (property test).

The facade checks each call's arguments once (#16: one walk of the arguments); the fast path
builds no paths, and only a value it does not accept is walked again to say what and where.
"""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from mcp_sync._values import _plain_json, check_json

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

    original = values_module._plain_json
    values_module._plain_json = lambda _value: False  # type: ignore[assignment]
    try:
        check_json(value, "v")
    except (TypeError, ValueError) as exc:
        return type(exc)
    finally:
        values_module._plain_json = original
    return None


@given(values)
def test_the_fast_path_accepts_only_what_the_detailed_walk_accepts(value: Any) -> None:
    if _plain_json(value):
        assert _detailed(value) is None
    raised: type[BaseException] | None = None
    try:
        check_json(value, "v")
    except (TypeError, ValueError) as exc:
        raised = type(exc)
    assert raised is _detailed(value)


def test_the_common_values_take_the_fast_path() -> None:
    assert _plain_json({"text": "hi", "n": [1, 2.5, None, True, {"é": "ü"}]})
    assert not _plain_json({"x": math.nan})
    assert not _plain_json({"x": "\ud800"})
