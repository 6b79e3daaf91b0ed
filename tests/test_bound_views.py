"""Client.bind views beyond one level (mcp_sync/_client.py; test_services.py has the basics): a
view of a view carries both sets of headers, a view with no credentials is the client's own
session, and a tool's mirrored parameter headers travel with the caller's own headers. The
peer is the scripted HTTP server of tests/httpkit.py, which records every request's headers."""

from __future__ import annotations

import json

import pytest

import mcp_sync

from httpkit import FakeServer

pytestmark = pytest.mark.timeout(60)

REGION_TOOL = {
    "name": "sql",
    "inputSchema": {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}, "query": {"type": "string"}},
    },
}


def test_a_view_of_a_view_sends_both_sets_of_headers(no_leaks: None) -> None:
    """bind() on a view makes the client's view with the headers of both (the newer wins for
    a name given twice) and keeps the first view's auth unless it is given again."""
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url) as client:
        ada = client.bind(headers={"X-User": "ada", "X-Org": "old"}, auth=("ada", "pw"))
        both = ada.bind(headers={"X-Org": "acme"})
        other = ada.bind(headers={"X-Org": "acme"}, auth=("bob", "pw"))
        both.call_tool("echo", {"n": 1})
        other.call_tool("echo", {"n": 2})
        assert repr(both) == f"<mcp_sync.BoundClient of {client!r}>"  # a view of the client, not of ada
        first, second = server.seen("tools/call")
    assert (first.headers["x-user"], first.headers["x-org"]) == ("ada", "acme")
    assert first.headers["authorization"] == "Basic YWRhOnB3"  # ada:pw
    assert (second.headers["x-user"], second.headers["authorization"]) == ("ada", "Basic Ym9iOnB3")  # bob:pw


def test_a_view_without_credentials_is_the_clients_own_session(no_leaks: None) -> None:
    """bind() with no headers and no auth: calls go out on the client's own (legacy) session
    with nothing added, where a view with credentials gets a session of its own."""
    with FakeServer("legacy") as server, mcp_sync.Client.http(server.url, mode="legacy") as client:
        plain = client.bind()
        assert json.loads(plain.call_tool("echo", {"n": 1}).text) == {"n": 1}
        assert plain.transport.session_id == client.transport.session_id  # type: ignore[attr-defined]
        with_user = client.bind(headers={"X-User": "ada"})
        with_user.call_tool("echo", {"n": 2})
        assert with_user.transport.session_id != client.transport.session_id  # type: ignore[attr-defined]
        calls = server.seen("tools/call")
    assert "x-user" not in calls[0].headers and calls[1].headers["x-user"] == "ada"


def test_mirrored_parameter_headers_travel_with_the_callers_own_headers(no_leaks: None) -> None:
    """A tool that mirrors an argument into a header (x-mcp-header), called with headers= of
    the caller's own: the request carries both."""
    with FakeServer("modern", tools=[REGION_TOOL]) as server, mcp_sync.Client.http(server.url) as client:
        assert [tool.name for tool in client.tools()] == ["sql"]
        client.call_tool("sql", {"region": "eu-west", "query": "SELECT 1"}, headers={"X-Trace": "t-1"})
        (call,) = server.seen("tools/call")
    assert call.headers["mcp-param-region"] == "eu-west" and call.headers["x-trace"] == "t-1"
