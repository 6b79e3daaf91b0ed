"""The typed-result builder (#20.2, ``mcp_sync._typed.build``): each annotation it understands is
built or refused with the field's path and what was expected, an annotation it cannot build is the
caller's TypeError, and ``call_tool(..., output_type=T)`` falls back from ``data`` to the whole
structured content, against the Python SDK server (its ``add`` answers ``{"result": n}``).

The nested dataclasses, TypedDicts, attrs classes, Literal and depth bound are in test_agents.py.
"""

from __future__ import annotations

import dataclasses
import enum
import numbers
from typing import (
    AbstractSet,
    Any,
    Dict,
    FrozenSet,
    Generic,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
    Union,
)

import pydantic
import pytest
from typing_extensions import Annotated, Required, TypedDict

import mcp_sync
from mcp_sync._typed import build

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")


def refused(output_type: Any, value: Any) -> str:
    """The message of the ProtocolError ``build`` raises for ``value``."""
    with pytest.raises(mcp_sync.ProtocolError) as info:
        build(output_type, value)
    return str(info.value)


def test_scalars_are_checked_and_a_float_takes_an_int() -> None:
    assert build(bool, True) is True
    assert build(str, "s") == "s"
    number = build(float, 3)
    assert number == 3.0 and isinstance(number, float)
    assert refused(float, "3").endswith("does not fit float: the value: expected number, got string")
    assert refused(float, True).endswith("expected number, got boolean")  # JSON true is no number
    assert refused(int, 1.5).endswith("expected integer, got number")
    assert refused(str, None) == "the structured content is missing: there is nothing to build a str from"


@pytest.mark.parametrize("output_type", [Any, object, None, type(None), Optional[int]])
def test_types_that_take_null(output_type: Any) -> None:
    assert build(output_type, None) is None


def test_none_takes_only_null() -> None:
    @dataclasses.dataclass
    class Done:
        error: None

    assert build(Done, {"error": None}) == Done(None)
    assert refused(Done, {"error": 0}).endswith("field 'error': expected null, got integer")


class Unit(enum.Enum):
    CELSIUS = "C"
    KELVIN = "K"


@dataclasses.dataclass
class Reading:
    sensor: Annotated[str, "the sensor's id"]
    value: Optional[float]
    unit: Union[None, Unit] = None  # noqa: RUF036 - None listed first: skipped, the enum is tried
    code: Union[int, str] = 0


def test_annotated_optional_and_union_fields() -> None:
    assert build(Annotated[int, "a count"], 3) == 3  # as output_type itself (a class's hints come stripped)
    assert refused(Annotated[int, "a count"], "3").endswith("the value: expected integer, got string")
    assert build(Reading, {"sensor": "s1", "value": None}) == Reading("s1", None)
    assert build(Reading, {"sensor": "s1", "value": 2, "unit": "K", "code": "x7"}) == Reading("s1", 2.0, Unit.KELVIN,
                                                                                               "x7")
    assert refused(Reading, {"sensor": 1, "value": 1}).endswith("field 'sensor': expected string, got integer")
    # a union reports its first member's complaint when no member fits
    assert refused(Reading, {"sensor": "s", "value": "hot"}).endswith("field 'value': expected number, got string")
    assert refused(Reading, {"sensor": "s", "value": 1, "unit": "F"}).endswith(
        "field 'unit': expected one of ['C', 'K'], got 'F'")
    assert refused(Reading, {"sensor": "s", "value": 1, "code": [1]}).endswith(
        "field 'code': expected integer, got array")


def test_sequences_and_mappings() -> None:
    assert build(Tuple[int, ...], [1, 2]) == (1, 2)
    assert build(Tuple[int, str], [1, "a"]) == (1, "a")
    assert build(FrozenSet[str], ["a", "a"]) == frozenset({"a"})
    assert build(Mapping[str, float], {"a": 1}) == {"a": 1.0}
    assert build(Dict[str, Any], {"a": [1]}) == {"a": [1]}
    assert refused(List[int], {"a": 1}).endswith("the value: expected array, got object")
    assert refused(Tuple[int, str], [1]).endswith("the value: expected 2 items, got 1")
    assert refused(Tuple[int, str], [1, 2]).endswith("field '[1]': expected string, got integer")
    assert refused(Dict[str, int], [1]).endswith("the value: expected object, got array")
    assert refused(Dict[str, int], {"a": "b"}).endswith("field 'a': expected integer, got string")


class Scores(TypedDict, total=False):
    """A TypedDict with total=False: only the keys marked Required must be there."""

    player: Required[str]
    points: int


def test_a_partial_typed_dict_requires_only_its_required_keys() -> None:
    assert build(Scores, {"player": "ada"}) == {"player": "ada"}
    assert build(Scores, {"player": "ada", "points": 3, "extra": 1}) == {"player": "ada", "points": 3}
    assert refused(Scores, {"points": 3}).endswith("field 'player': missing")


class Point(pydantic.BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Shape:
    name: str
    corners: List[Point]


def test_pydantic_models_are_validated_by_pydantic() -> None:
    assert build(Point, {"x": 1, "y": 2}) == Point(x=1, y=2)
    shape = build(Shape, {"name": "line", "corners": [{"x": 0, "y": 0}, {"x": 1, "y": 1}]})
    assert shape.corners[1] == Point(x=1, y=1)
    message = refused(Shape, {"name": "line", "corners": [{"x": 0, "y": 0}, {"x": "far"}]})
    assert "field 'corners[1]': 2 validation errors for Point" in message


def test_any_other_class_takes_its_instances() -> None:
    assert build(numbers.Real, 2.5) == 2.5
    assert refused(numbers.Real, "2.5").endswith("the value: expected Real, got string")


@dataclasses.dataclass
class Envelope(Generic[T]):
    kind: str
    size: int


def test_a_parametrised_generic_is_built_as_its_plain_class() -> None:
    assert build(Envelope[str], {"kind": "k", "size": 2}) == Envelope("k", 2)
    # an abstract generic its plain class does not take JSON arrays for
    assert refused(AbstractSet[int], [1]).endswith("the value: expected Set, got array")


@dataclasses.dataclass
class Page(Generic[T]):
    items: List[T]
    first: Optional[T] = None


def test_a_generic_class_given_its_type_arguments_builds_its_fields_with_them() -> None:
    """Before: Page[Item] raised TypeError (its fields' T was not bound to Item)."""
    page = build(Page[Envelope[str]], {"items": [{"kind": "a", "size": 1}], "first": {"kind": "b", "size": 2}})
    assert page == Page([Envelope("a", 1)], Envelope("b", 2))
    assert refused(Page[int], {"items": [1, "2"]}).endswith("field 'items[1]': expected integer, got string")
    with pytest.raises(TypeError, match=r"cannot build a value of ~T \(a type variable: give its generic class"):
        build(Page, {"items": [1]})


@dataclasses.dataclass
class Dangling:
    x: NoSuchType  # type: ignore[name-defined]  # noqa: F821


def test_types_it_cannot_build_are_the_callers_type_error() -> None:
    with pytest.raises(TypeError, match=r"output_type: cannot build a value of ~T"):
        build(T, 1)  # type: ignore[misc]
    with pytest.raises(TypeError, match=r"the type hints of Dangling do not resolve: name 'NoSuchType'"):
        build(Dangling, {"x": 1})


def test_a_result_that_fits_neither_data_nor_the_structured_content() -> None:
    """``add`` answers ``{"result": 42}``: ``data`` is 42. A str fits neither 42 nor the object, and the
    error is the one about ``data`` (what the caller asked for first)."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30) as client:
        with pytest.raises(mcp_sync.ProtocolError, match=r"'add'.*does not fit str: the value: expected string, "
                                                         r"got integer"):
            client.call_tool("add", {"a": 2, "b": 40}, output_type=str)

        @dataclasses.dataclass
        class Sum:
            result: str

        with pytest.raises(mcp_sync.ProtocolError, match=r"does not fit Sum: the value: expected object, got integer"):
            client.call_tool("add", {"a": 2, "b": 40}, output_type=Sum)
