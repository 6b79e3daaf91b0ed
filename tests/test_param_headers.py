"""Mirrored arguments (``x-mcp-header``) whose value a header cannot carry: a list, an object,
a fractional number for an integer. That header is left out (the server sees the argument in
the body and judges it), and the tool's other headers are still sent."""

from __future__ import annotations

import json
from typing import Any

import pytest

import mcp_sync

from httpkit import FakeServer

TOOL = {
    "name": "query",
    "inputSchema": {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "zone": {"type": "integer", "x-mcp-header": "Zone"},
        },
    },
}


@pytest.mark.parametrize("region", [["us", "eu"], {"name": "us"}, 1.5], ids=["list", "object", "number"])
def test_a_value_a_header_cannot_carry_is_not_mirrored(region: Any, no_leaks: None) -> None:
    with FakeServer("modern", tools=[TOOL]) as fake, mcp_sync.Client.http(fake.url, timeout=10) as client:
        assert [tool.name for tool in client.tools()] == ["query"]
        result = client.call_tool("query", {"region": region, "zone": 3.0})
        (call,) = fake.seen("tools/call")
    assert "mcp-param-region" not in call.headers
    assert call.headers["mcp-param-zone"] == "3"  # an integral number for an integer: mirrored as one
    assert json.loads(result.text)["region"] == region  # the argument itself went in the body


def test_a_fraction_for_an_integer_is_not_mirrored(no_leaks: None) -> None:
    with FakeServer("modern", tools=[TOOL]) as fake, mcp_sync.Client.http(fake.url, timeout=10) as client:
        assert [tool.name for tool in client.tools()] == ["query"]
        client.call_tool("query", {"region": "us-west1", "zone": 2.5})
        (call,) = fake.seen("tools/call")
    assert call.headers["mcp-param-region"] == "us-west1" and "mcp-param-zone" not in call.headers
