"""A compiled yes/no check for the plain subset of JSON Schema that most tool schemas use.

Checking a result against its tool's ``outputSchema`` with ``jsonschema`` costs far more
than the rest of a call (each check builds resolvers and walks generic keyword tables).
Most tool schemas are plain: ``type``, ``properties``, ``required``, ``items``, ``enum``
and a few bounds. :func:`compile_subset` turns such a schema into nested closures that
answer only "valid or not"; ``jsonschema`` is still what explains a failure (and what
checks every schema outside the subset), so the messages users see do not change.

The subset, with the meaning of draft 6 and later (the default dialect, 2020-12, included):
``type`` (a name or a list of names), ``properties``, ``required``, ``additionalProperties``
(a boolean or a schema), ``items`` (one schema for every element), ``enum``, ``const``,
``minimum``/``maximum``/``exclusiveMinimum``/``exclusiveMaximum`` (numbers),
``minLength``/``maxLength``, ``minItems``/``maxItems``, ``minProperties``/``maxProperties``,
boolean sub-schemas, and the keywords that assert nothing here (``title``,
``description``, ``default``, ``examples``, ``$comment``, ``format``: formats are not
asserted, as ``jsonschema`` without a format checker does not). Anything else, such as
``$ref``, ``anyOf``, ``pattern``, a ``$schema`` of an older draft or a malformed keyword
value, makes :func:`compile_subset` return None, and the caller uses ``jsonschema``.
``tests/test_schema_subset.py`` checks that both agree on generated schemas and values.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Mapping

Check = Callable[[Any], bool]
#: Compiles one keyword's value (in its schema, at a depth) to ``(target, check)``: target
#: "object" when the check assumes a dict (the caller tests that once), else "any".
KeywordCompiler = Callable[[Any, Mapping[str, Any], int], "tuple[str, Check | None]"]

#: Dialects whose meaning of the subset is the one implemented (draft 6 changed
#: ``integer`` to accept 1.0 and the exclusive bounds to numbers).
_DIALECTS = frozenset(
    {
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft/2019-09/schema",
        "http://json-schema.org/draft-07/schema",
        "http://json-schema.org/draft-06/schema",
    }
)
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "format", "$schema", "$id"})
_MAX_DEPTH = 32  # deeper schemas go to jsonschema (it recurses as well)


#: The most steps (keyword evaluations) one schema check takes (see ``_schemas``); here so that
#: the budget below, which the typed builder shares, has its default from the same number.
CHECK_STEPS = 200_000


class CheckTooLong(Exception):
    """A check ran out of its steps or its time (see :data:`CHECK_STEPS`, ``_schemas.CHECK_SECONDS``)."""


class _Budget(threading.local):
    """The running check's steps left and deadline (``time.monotonic()``), per thread: each walk
    sets its own and restores what was there. On the ground floor, so that the typed builder
    (:mod:`._typed`) keeps the call's timeout the way the schema check (:mod:`._schemas`) does."""

    steps = CHECK_STEPS  # every check sets its own
    deadline = float("inf")


_BUDGET = _Budget()


def _tick() -> None:
    budget = _BUDGET
    budget.steps -= 1
    # the clock is read every 64 steps: cheap, and one step is short (linear in its own data)
    if budget.steps < 0 or (budget.steps & 63 == 0 and time.monotonic() > budget.deadline):
        raise CheckTooLong


# Values are JSON (parsed, or checked before sending), so these few types are all there is.
def _is_integer(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda value: isinstance(value, dict),
    "array": lambda value: isinstance(value, list),
    "string": lambda value: isinstance(value, str),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "integer": _is_integer,
    "number": _is_number,
}


def equal(one: Any, two: Any) -> bool:
    """JSON equality: ``True`` is not ``1``, ``1`` is ``1.0``, containers compared element-wise."""
    if one is two:
        return True
    if isinstance(one, bool) or isinstance(two, bool):
        return False  # `is` above was the only way for booleans to be equal
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, (list, tuple)) and isinstance(two, (list, tuple)):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two))
    if isinstance(one, dict) and isinstance(two, dict):
        return len(one) == len(two) and all(key in two and equal(value, two[key]) for key, value in one.items())
    if isinstance(one, (list, tuple, dict)) or isinstance(two, (list, tuple, dict)):
        return False
    return bool(one == two)


def compile_subset(schema: Any) -> Check | None:
    """A function telling whether a JSON value matches ``schema``, or None when ``schema``
    uses anything outside the subset this module implements.

    Example::

        check = compile_subset({"type": "object", "required": ["n"]})
        assert check({"n": 1}) and not check({})
    """
    if isinstance(schema, Mapping):
        dialect = schema.get("$schema")
        if dialect is not None and (not isinstance(dialect, str) or dialect.rstrip("#") not in _DIALECTS):
            return None
    try:
        return _compile(schema, 0)
    except _Unsupported:
        return None


class _Unsupported(Exception):
    pass


def _compile(schema: Any, depth: int) -> Check:
    if schema is True:
        return _always
    if schema is False:
        return _never
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        raise _Unsupported
    checks: list[Check] = []
    object_checks: list[Check] = []
    for keyword, value in schema.items():
        if keyword in _ANNOTATIONS:
            continue
        compile_keyword = _KEYWORDS.get(keyword)
        if compile_keyword is None:
            raise _Unsupported
        target, check = compile_keyword(value, schema, depth)
        if check is not None:
            (object_checks if target == "object" else checks).append(check)
    if object_checks:  # one dict test for all object keywords
        object_check = _all_of(object_checks)
        if _TYPES["object"] in checks:  # "type": "object": that test and the object keywords' in one
            checks.remove(_TYPES["object"])
            checks.append(lambda value: isinstance(value, dict) and object_check(value))
        else:
            checks.append(lambda value: not isinstance(value, dict) or object_check(value))
    if not checks:
        return _always
    return _all_of(checks)


def _all_of(checks: list[Check]) -> Check:
    """One check passing when every one of ``checks`` passes. Plain loops, no generator per
    value: this runs on every call result of a tool with an outputSchema."""
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda value: first(value) and second(value)

    def every(value: Any) -> bool:
        for check in checks:
            if not check(value):
                return False
        return True

    return every


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _type(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or any(name not in _TYPES for name in names):
        raise _Unsupported
    tests = [_TYPES[name] for name in names]
    if len(tests) == 1:
        return "any", tests[0]
    return "any", lambda item: any(test(item) for test in tests)


def _properties(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise _Unsupported
    compiled = [(key, _compile(sub, depth + 1)) for key, sub in value.items()]
    compiled = [(key, check) for key, check in compiled if check is not _always]
    required = _required_keys(schema.get("required", []))  # checked here too: one call for both
    if not compiled:
        return "object", (lambda item: item.keys() >= required) if required else None

    def properties(item: dict[str, Any]) -> bool:
        if required and not item.keys() >= required:
            return False
        for key, check in compiled:
            if key in item and not check(item[key]):
                return False
        return True

    return "object", properties


def _required_keys(value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(key, str) for key in value):
        raise _Unsupported
    return frozenset(value)


def _required(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    keys = _required_keys(value)
    if not keys or isinstance(schema.get("properties"), Mapping):
        return "object", None  # nothing required, or "properties" checks it along with the values
    return "object", lambda item: item.keys() >= keys


def _additional(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    if "patternProperties" in schema:
        raise _Unsupported
    known = schema.get("properties", {})
    if not isinstance(known, Mapping):
        raise _Unsupported
    names = frozenset(known)
    check = _compile(value, depth + 1)
    if check is _always:
        return "object", None
    if check is _never:
        return "object", lambda item: all(key in names for key in item)
    return "object", lambda item: all(key in names or check(child) for key, child in item.items())


def _items(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    if isinstance(value, list) or "prefixItems" in schema:  # the tuple forms differ between drafts
        raise _Unsupported
    check = _compile(value, depth + 1)
    if check is _always:
        return "any", None
    return "any", lambda item: not isinstance(item, list) or all(check(child) for child in item)


def _enum(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    if not isinstance(value, list):
        raise _Unsupported
    choices = list(value)
    return "any", lambda item: any(equal(choice, item) for choice in choices)


def _const(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
    return "any", lambda item: equal(value, item)


def _bound(compare: Callable[[Any, Any], bool]) -> KeywordCompiler:
    def compile_bound(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
        if not _is_number(value) or (isinstance(value, float) and not math.isfinite(value)):
            raise _Unsupported
        return "any", lambda item: not _is_number(item) or compare(item, value)

    return compile_bound


def _size(kind: type, compare: Callable[[int, int], bool]) -> KeywordCompiler:
    def compile_size(value: Any, schema: Mapping[str, Any], depth: int) -> tuple[str, Check | None]:
        if not _is_integer(value) or value < 0:
            raise _Unsupported
        return "any", lambda item: not isinstance(item, kind) or compare(len(item), value)  # type: ignore[arg-type]

    return compile_size


def _at_least(a: Any, b: Any) -> bool:
    return bool(a >= b)


def _at_most(a: Any, b: Any) -> bool:
    return bool(a <= b)


def _above(a: Any, b: Any) -> bool:
    return bool(a > b)


def _below(a: Any, b: Any) -> bool:
    return bool(a < b)


_KEYWORDS: dict[str, KeywordCompiler] = {
    "type": _type,
    "properties": _properties,
    "required": _required,
    "additionalProperties": _additional,
    "items": _items,
    "enum": _enum,
    "const": _const,
    "minimum": _bound(_at_least),
    "maximum": _bound(_at_most),
    "exclusiveMinimum": _bound(_above),
    "exclusiveMaximum": _bound(_below),
    "minLength": _size(str, _at_least),
    "maxLength": _size(str, _at_most),
    "minItems": _size(list, _at_least),
    "maxItems": _size(list, _at_most),
    "minProperties": _size(dict, _at_least),
    "maxProperties": _size(dict, _at_most),
}
