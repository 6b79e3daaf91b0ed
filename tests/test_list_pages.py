"""Lists one page at a time, and a walk over pages when a cursor is refused.

The SDK server lists its resource and its resource template (one page each); a scripted
in-memory server refuses a cursor, which no real server does on demand.
"""

from __future__ import annotations

import pytest
from wirekit import DISCOVER, FakeTransport

import mcp_sync

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(60)


def test_one_page_of_resources_and_of_resource_templates() -> None:
    """``list_resources`` / ``list_resource_templates`` give a Page of models, with the call's
    options applied, and no cursor after the last page; a template's instance can be read."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern", timeout=30) as client:
        resources = client.list_resources(cache="refresh", timeout=20, meta={"example.com/trace": "r1"})
        assert [(r.uri, r.name, r.mime_type) for r in resources.items] == [
            ("test://static", "static_resource", "text/plain")]
        assert resources.next_cursor is None and isinstance(resources.items[0], mcp_sync.Resource)
        templates = client.list_resource_templates(cache="bypass", max_total_timeout=20)
        [template] = templates.items
        assert isinstance(template, mcp_sync.ResourceTemplate)
        assert (template.uri_template, template.name, template.mime_type) == ("test://items/{id}", "item", "text/plain")
        assert templates.next_cursor is None
        assert client.read_resource(template.uri_template.replace("{id}", "7")).text == "item 7"


def test_a_refused_cursor_with_nothing_cached_is_raised_not_retried() -> None:
    """C7 restarts a walk only when cached pages can be dropped; when the first page was not kept
    (no ttlMs), a refused cursor is the server's error: raised after the items already given."""

    def handler(method: str, params: dict) -> dict:
        if method == "server/discover":
            return {**DISCOVER, "capabilities": {"tools": {}}}  # no listChanged: nothing kept until changed
        if params.get("cursor") is None:
            return {"resultType": "complete", "tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "p2"}
        return {"error": {"code": -32602, "message": "Invalid cursor"}}

    transport = FakeTransport(handler)
    given: list[str] = []
    with mcp_sync.Client(transport, mode="modern", timeout=10) as client:
        with pytest.raises(mcp_sync.ServerError, match="Invalid cursor") as refused:
            for tool in client.tools():
                given.append(tool.name)
    assert refused.value.code == -32602
    assert given == ["a"]
    assert [p.get("cursor") for m, p in transport.sent if m == "tools/list"] == [None, "p2"]
