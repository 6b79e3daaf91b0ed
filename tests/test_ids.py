"""Request ids given as subclasses of int or str (an IntEnum, a str subclass from an SDK or the
caller's code) name the same request as the plain value and come back as the plain type, so
they show in messages as the id on the wire does (``7``, not ``<Step.FIRST: 7>``)."""

from __future__ import annotations

import enum

from mcp_sync._ids import normalize_id


class Step(enum.IntEnum):
    FIRST = 7


class RequestName(str):
    def __repr__(self) -> str:
        return f"RequestName({str(self)!r})"


def test_int_and_str_subclasses_name_the_plain_id() -> None:
    for given, plain in ((Step.FIRST, 7), (RequestName("call-7"), "call-7")):
        key = normalize_id(given)
        assert key == plain and type(key) is type(plain) and repr(key) == repr(plain)
    assert normalize_id(Step.FIRST) == normalize_id(7.0) == normalize_id(7)
