"""A tool's structured result as the caller's own type: a dataclass, TypedDict or attrs class (#20.2).

:func:`build` turns the JSON a server sent (``CallToolResult.data``) into an instance of the type
the caller names, checking each field against its annotation on the way: a missing field or a
value of the wrong type raises :class:`~mcp_sync.ProtocolError` naming the field's path
(``field 'forecast[2].temp': expected float, got str``). Fields the type does not name are
ignored (servers may add fields). Time is linear in the size of the value for a given type (each
node is built at most once per class: see :func:`_fields`), and bounded by the call's timeout like
the schema check (``seconds``); the nesting walked is bounded by :data:`MAX_DEPTH`.

Understood annotations: the classes above (nested too), pydantic models (``model_validate``),
``int``, ``float`` (an int is taken), ``str``, ``bool``, ``None``, ``Any``, ``list[X]``,
``tuple[X, ...]``, ``dict[str, X]``, ``Optional``/``Union`` (the first member that fits),
``Literal[...]``, ``Enum`` subclasses, generic classes with their type arguments (``Page[Item]``:
a type variable left unbound, as in ``Page``, is the caller's TypeError); any other class takes a
value that is an instance of it.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import functools
import sys
import time
import typing
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from ._schema_subset import _BUDGET, CheckTooLong, _tick
from .exceptions import ProtocolError

T = TypeVar("T")

if TYPE_CHECKING:  # a default (PEP 696): call_tool() without output_type is a CallToolResult to type checkers
    from typing_extensions import TypeVar as DefaultedTypeVar

    from .models import CallToolResult

    ResultT = DefaultedTypeVar("ResultT", default=CallToolResult)
else:
    ResultT = TypeVar("ResultT")

#: How deep a value is walked for a (recursive) type: deeper is refused, never a RecursionError.
MAX_DEPTH = 100

_NONE = type(None)
_SEQUENCES = (list, tuple, set, frozenset, collections.abc.Sequence, collections.abc.MutableSequence,
              collections.abc.Iterable, collections.abc.Collection)
_MAPPINGS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_JSON_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}

if sys.version_info >= (3, 10):
    import types

    _UNION_TYPES: tuple[Any, ...] = (typing.Union, types.UnionType)
else:  # pragma: no cover - 3.9
    _UNION_TYPES = (typing.Union,)


class _Mismatch(Exception):
    def __init__(self, path: str, problem: str) -> None:
        super().__init__(path, problem)
        self.path, self.problem = path, problem


class _Refused(typing.NamedTuple):
    """A class a node did not fit, remembered (see :func:`_fields`)."""

    path: str
    problem: str


#: The classes built so far below a union (see :func:`_fields`): (id(node), depth, path, class) ->
#: the instance, or _Refused. None where no union is above: there nothing is built twice.
_Memo = dict[tuple[int, int, str, Any], Any]
_UNSEEN = object()


def build(output_type: type[T], value: Any, *, what: str = "the structured content",
          seconds: float | None = None) -> T:
    """``value`` (JSON) as an ``output_type`` instance; ProtocolError naming the field that does not fit.

    ``seconds`` bounds the time (the call's timeout, as for the schema check; None: no bound, the
    work being linear in the value): past it, ProtocolError saying the value was not built in time.

    Example::

        @dataclasses.dataclass
        class Weather:
            city: str
            temp: float

        build(Weather, {"city": "Oslo", "temp": 3})   # Weather(city='Oslo', temp=3.0)
    """
    return _build(output_type, value, what, seconds, _deadline(seconds))


def build_result(output_type: type[T], structured: Any, data: Any, *, what: str, seconds: float | None = None) -> T:
    """``output_type`` built from a tool's ``data`` (its unwrapped structured content), else from the
    structured content itself (a type whose one field is named ``result``): see :func:`build`.
    ``seconds`` bounds both attempts together."""
    deadline = _deadline(seconds)
    try:
        return _build(output_type, data, what, seconds, deadline)
    except ProtocolError:
        if structured is data:
            raise
        try:
            return _build(output_type, structured, what, seconds, deadline)
        except ProtocolError:
            pass
        raise


def _deadline(seconds: float | None) -> float:
    return float("inf") if seconds is None else time.monotonic() + seconds


def _build(output_type: type[T], value: Any, what: str, seconds: float | None, deadline: float) -> T:
    """:func:`build` by a ``deadline`` (``time.monotonic()``), kept by the schema check's budget
    (``_tick``, once per object or array walked; the clock read every 64). Its step bound
    is lifted here (the work is linear, and a large value must still build); the previous budget is
    restored after."""
    if value is None and not _accepts_none(output_type):
        raise ProtocolError(f"{what} is missing: there is nothing to build a {_type_name(output_type)} from")
    saved = _BUDGET.steps, _BUDGET.deadline
    _BUDGET.steps, _BUDGET.deadline = sys.maxsize, deadline
    try:
        result: T = _convert(output_type, value, "", 0, None)
    except _Mismatch as exc:
        where = f"field {exc.path!r}" if exc.path else "the value"
        raise ProtocolError(
            f"{what} does not fit {_type_name(output_type)}: {where}: {exc.problem}"
        ) from None
    except CheckTooLong:
        raise ProtocolError(
            f"{what} was not built as {_type_name(output_type)}: building it ran past the call's timeout "
            f"({seconds:g} s)"
        ) from None
    finally:
        _BUDGET.steps, _BUDGET.deadline = saved
    return result


def _type_name(tp: Any) -> str:
    return str(getattr(tp, "__name__", tp))


def _kind(value: Any) -> str:
    return "null" if value is None else _JSON_NAMES.get(type(value), type(value).__name__)


def _accepts_none(tp: Any) -> bool:
    if tp in (Any, object, None, _NONE):
        return True
    return typing.get_origin(tp) in _UNION_TYPES and _NONE in typing.get_args(tp)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _is_typed_dict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__total__")


def _required_keys(tp: Any) -> set[str]:
    """A TypedDict's required keys, read from its hints: ``__required_keys__`` is wrong for
    ``NotRequired[...]`` written as a string (``from __future__ import annotations``). Called
    after :func:`_hints` resolved the same hints, so this resolves too."""
    required: set[str] = set()
    hints = typing.get_type_hints(tp, include_extras=True)
    total = getattr(tp, "__total__", True)
    listed = set(getattr(tp, "__required_keys__", ()))
    for name, hint in hints.items():
        marker = getattr(typing.get_origin(hint), "_name", None) or str(typing.get_origin(hint))
        if marker.endswith("NotRequired"):
            continue
        if marker.endswith("Required") or (total and name in listed):
            required.add(name)
    return required


def _hints(tp: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(tp)
    except Exception as exc:  # a name that does not resolve is the caller's mistake; say which
        raise TypeError(f"the type hints of {_type_name(tp)} do not resolve: {exc}") from exc


def _convert(tp: Any, value: Any, path: str, depth: int, memo: _Memo | None) -> Any:
    if depth > MAX_DEPTH:
        raise _Mismatch(path, f"nested more than {MAX_DEPTH} levels deep")
    if tp is Any or tp is object:
        return value
    if tp is None or tp is _NONE:
        if value is not None:
            raise _Mismatch(path, f"expected null, got {_kind(value)}")
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Annotated:
        return _convert(args[0], value, path, depth, memo)
    if origin in _UNION_TYPES:
        if value is None and _NONE in args:
            return None
        if memo is None and len(args) - (_NONE in args) > 1 and _nests(value):
            memo = {}  # its members may each build what is below: from here on each node is built once
        first: _Mismatch | None = None
        for member in args:
            if member is _NONE:
                continue
            try:
                return _convert(member, value, path, depth, memo)
            except _Mismatch as exc:
                first = first or exc
        assert first is not None
        raise first
    if origin is typing.Literal:
        if any(value == choice and type(value) is type(choice) for choice in args):
            return value
        raise _Mismatch(path, f"expected one of {list(args)!r}, got {_short(value)}")
    if origin in _SEQUENCES or tp in _SEQUENCES:
        return _sequence(origin or tp, args, value, path, depth, memo)
    if origin in _MAPPINGS or tp in _MAPPINGS:
        return _mapping(args, value, path, depth, memo)
    if origin is not None and _has_fields(origin):  # a generic class with its type arguments: Page[Item]
        return _fields(tp, value, path, depth, memo)
    if origin is not None:  # some other generic (Sequence[X], ...): its plain class decides
        return _convert(origin, value, path, depth, memo)
    if tp is bool:
        if not isinstance(value, bool):
            raise _Mismatch(path, f"expected boolean, got {_kind(value)}")
        return value
    if tp is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise _Mismatch(path, f"expected integer, got {_kind(value)}")
        return value
    if tp is float:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise _Mismatch(path, f"expected number, got {_kind(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _Mismatch(path, f"expected string, got {_kind(value)}")
        return value
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise _Mismatch(path, f"expected one of {[m.value for m in tp]!r}, got {_short(value)}") from None
    if _has_fields(tp):
        return _fields(tp, value, path, depth, memo)
    validate = getattr(tp, "model_validate", None)
    if isinstance(tp, type) and callable(validate):  # a pydantic model
        try:
            return validate(value)
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise _Mismatch(path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if isinstance(tp, type):
        if not isinstance(value, tp):
            raise _Mismatch(path, f"expected {tp.__name__}, got {_kind(value)}")
        return value
    if isinstance(tp, typing.TypeVar):
        raise TypeError(f"output_type: cannot build a value of {tp!r} (a type variable: give its generic class "
                        f"its type arguments, e.g. Page[Item] rather than Page)")
    raise TypeError(f"output_type: cannot build a value of {tp!r}")


def _nests(value: Any) -> bool:
    """Whether ``value`` holds an object or array: only then can trying several members build
    anything twice (a union of classes over flat objects, the common case, keeps no memo)."""
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(isinstance(item, (dict, list)) for item in items)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _sequence(kind: Any, args: tuple[Any, ...], value: Any, path: str, depth: int, memo: _Memo | None) -> Any:
    if not isinstance(value, list):
        raise _Mismatch(path, f"expected array, got {_kind(value)}")
    _tick()  # the call's deadline, once per array or object walked (CheckTooLong past it)
    if kind is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise _Mismatch(path, f"expected {len(args)} items, got {len(value)}")
        return tuple(_convert(item_type, item, _join(path, i), depth + 1, memo)
                     for i, (item_type, item) in enumerate(zip(args, value)))
    item_type = args[0] if args else Any
    items = [_convert(item_type, item, _join(path, i), depth + 1, memo) for i, item in enumerate(value)]
    return kind(items) if kind in (tuple, set, frozenset) else items


def _mapping(args: tuple[Any, ...], value: Any, path: str, depth: int, memo: _Memo | None) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Mismatch(path, f"expected object, got {_kind(value)}")
    _tick()
    value_type = args[1] if len(args) == 2 else Any
    return {key: _convert(value_type, item, _join(path, key), depth + 1, memo) for key, item in value.items()}


@attrs.frozen
class _Plan:
    """How to build one class: (field, hint, required, keyword) per field the constructor takes."""

    make: Any
    fields: tuple[tuple[str, Any, bool, str], ...]


def _has_fields(tp: Any) -> bool:
    return isinstance(tp, type) and (_is_typed_dict(tp) or dataclasses.is_dataclass(tp) or attrs.has(tp))


def _bind(hint: Any, bindings: dict[Any, Any]) -> Any:
    """``hint`` with the class's type variables replaced by its type arguments (``list[T]`` -> ``list[Item]``)."""
    if isinstance(hint, typing.TypeVar):
        return bindings.get(hint, hint)
    parameters = getattr(hint, "__parameters__", ())
    if parameters:
        try:
            return hint[tuple(bindings.get(parameter, parameter) for parameter in parameters)]
        except TypeError:  # an alias that does not take them: left as written
            return hint
    return hint


@functools.lru_cache(maxsize=256)
def _plan(tp: Any) -> _Plan:
    """The fields of a TypedDict, dataclass or attrs class, read once per class (``get_type_hints``
    costs tens of microseconds: per item of a long list it would dominate). A generic class given
    its type arguments (``Page[Item]``) is its class's plan with its type variables bound."""
    origin = typing.get_origin(tp)
    if origin is not None:
        plan = _plan(origin)
        bindings = dict(zip(getattr(origin, "__parameters__", ()), typing.get_args(tp)))
        return _Plan(plan.make, tuple(
            (name, _bind(hint, bindings), required, keyword) for name, hint, required, keyword in plan.fields
        ))
    hints = _hints(tp)
    if _is_typed_dict(tp):
        required = _required_keys(tp)
        return _Plan(dict, tuple((name, hint, name in required, name) for name, hint in hints.items()))
    if dataclasses.is_dataclass(tp):
        return _Plan(tp, tuple(
            (f.name, hints.get(f.name, Any),
             f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, f.name)
            for f in dataclasses.fields(tp) if f.init
        ))
    return _Plan(tp, tuple(
        (a.name, hints.get(a.name, Any), a.default is attrs.NOTHING, a.alias or a.name)
        for a in attrs.fields(tp) if a.init
    ))


def _fields(tp: Any, value: Any, path: str, depth: int, memo: _Memo | None) -> Any:
    """``value`` as the class ``tp`` (a TypedDict, dataclass or attrs class, or a generic one with its
    type arguments), built once per node and class below a union (#28.4): a union tries its members
    in turn, and a member refused late (its ``kind`` read after its ``children``) had built the
    node's whole subtree first, so a parent retried per member rebuilt it per member, at every
    level: exponential in the depth. Remembered in ``memo``, a node costs at most one build per
    class, whoever asks. The key holds the node's path and depth besides its id: a node shared by
    two places (a Python value, never parsed JSON) is still built, and refused, with each place's
    own path. Without a union above (``memo`` None) nothing is built twice, and nothing is kept."""
    if not isinstance(value, dict):
        raise _Mismatch(path, f"expected object, got {_kind(value)}")
    if memo is not None:
        key = (id(value), depth, path, tp)
        found = memo.get(key, _UNSEEN)
        if found is not _UNSEEN:
            if isinstance(found, _Refused):
                raise _Mismatch(found.path, found.problem)
            return found
    _tick()
    plan = _plan(tp)
    built: dict[str, Any] = {}
    try:
        for name, hint, required, keyword in plan.fields:
            if name not in value:
                if required:
                    raise _Mismatch(_join(path, name), "missing")
                continue
            built[keyword] = _convert(hint, value[name], _join(path, name), depth + 1, memo)
    except _Mismatch as exc:
        if memo is not None:
            memo[key] = _Refused(exc.path, exc.problem)  # not the exception: its traceback holds every frame
        raise
    result = plan.make(**built)
    if memo is not None:
        memo[key] = result
    return result
