"""Tool schema checks (#10 Schemas, #17.1; ``mcp_sync._schemas``) at their edges: ``validate_output=True``
means "warn"; arguments of a tool the server does not list are not checked (the server decides),
and that costs one listing, not one per call, with the memory of such names bounded;
``additionalProperties`` next to ``patternProperties`` is not asserted (patterns are never run);
``canonical`` of a value JSON has no form for. Against tests/servers/schema_server.py (its
``list_count`` tool says how many listings it answered).
"""

from __future__ import annotations

import decimal
import logging
from typing import Any, Iterable

import pytest

import mcp_sync
from mcp_sync._schemas import ToolSchemas, canonical, first_duplicate, mismatches

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

SCHEMA_SERVER = str(SERVERS / "schema_server.py")


def test_validate_output_true_means_warn(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with mcp_sync.Client.stdio(PY, [SCHEMA_SERVER], timeout=20, validate_output=True) as client:
        bad = client.call_tool("weather", {"city": "Oslo", "mode": "bad"})
    assert bad.structured_content == {"temp": "warm"}  # returned, not raised
    assert any("'weather'" in r.getMessage() and "$.temp" in r.getMessage() for r in caplog.records)


def test_arguments_of_an_unlisted_tool_are_left_to_the_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    with mcp_sync.Client.stdio(PY, [SCHEMA_SERVER], timeout=20, validate_input=True) as client:
        for _ in range(3):
            with pytest.raises(mcp_sync.ServerError, match="unknown tool 'ghost'"):
                client.call_tool("ghost", {"anything": 1})  # not refused here: the server answers
        assert client.call_tool("list_count").structured_content == {"n": 1}  # one listing for three calls
        with pytest.raises(mcp_sync.InvalidArguments):  # a listed tool's arguments are still checked
            client.call_tool("weather", {"city": 5})
    assert any("arguments of 'ghost' not checked: the server did not list that tool" in r.getMessage()
               for r in caplog.records)


def test_the_memory_of_unlisted_names_is_bounded() -> None:
    """Each unlisted name is remembered so it costs one listing; past 1000 names the memory starts over,
    and a forgotten name costs one listing more, no error."""
    listings: list[int] = []

    schemas = ToolSchemas(validate_input=True)

    def list_tools() -> Iterable[mcp_sync.Tool]:  # as the client's listing does: each page is remembered
        listings.append(1)
        page = [mcp_sync.Tool(name="real", input_schema={"type": "object", "required": ["x"]})]
        schemas.remember(page)
        return page

    for round_ in range(2):
        schemas.check_arguments(list_tools, "ghost-0", None, {}, None)
        assert len(listings) == 1 + round_ * 1002  # the first round lists once; the second after a reset
        for n in range(1, 1002):
            schemas.check_arguments(list_tools, f"ghost-{n}", None, {}, None)
        assert len(listings) == 1002 + round_ * 1002
    with pytest.raises(mcp_sync.InvalidArguments, match="'x' is a required property"):
        schemas.check_arguments(list_tools, "real", None, {}, None)


def test_additional_properties_next_to_pattern_properties_is_not_asserted() -> None:
    with_patterns = {"type": "object", "properties": {"id": {"type": "integer"}},
                     "patternProperties": {"^x-": {"type": "string"}}, "additionalProperties": False}
    # which keys are "additional" depends on the patterns, which are never run: no false mismatch
    assert mismatches(with_patterns, {"id": 1, "x-a": "s", "other": 2}, "x") == []
    assert mismatches(with_patterns, {"id": "one"}, "x") == [("$.id", "'one' is not of type 'integer'")]
    without = {key: value for key, value in with_patterns.items() if key != "patternProperties"}
    assert mismatches(without, {"id": 1, "other": 2}, "x") == [
        ("$", "Additional properties are not allowed ('other' was unexpected)")]


def test_a_dialect_the_application_registered_is_honoured() -> None:
    """jsonschema picks the validator by ``$schema`` among the dialects registered with it, the
    application's own included; one without ``additionalProperties`` (or ``pattern``) still checks
    the keywords it has."""
    import jsonschema

    tiny = "urn:mcp-sync-test:tiny-dialect"
    jsonschema.validators.create(meta_schema={"$id": tiny}, version="mcp-sync-test-tiny",
                                 validators={"type": jsonschema.Draft202012Validator.VALIDATORS["type"]})
    schema = {"$schema": tiny, "type": "string", "additionalProperties": False}
    assert mismatches(schema, 5, "x") == [("$", "5 is not of type 'string'")]
    assert mismatches(schema, "five", "x") == []


def test_canonical_forms_of_values_json_has_no_form_for() -> None:
    """Values are parsed or checked JSON before they are checked; anything else is compared by its repr,
    never an exception."""
    odd: list[Any] = [decimal.Decimal("1.5"), decimal.Decimal("1.5"), {1, 2}]
    assert canonical(odd[0]) == (("?", "Decimal('1.5')"),)
    assert first_duplicate(odd) == (0, 1)
    assert canonical([decimal.Decimal(1)]) != canonical([1])
