"""The stdio contract against real, independent servers, in both eras.

Peers: the official Python SDK (mcp==2.3.0 MCPServer, dual-era) and
@modelcontextprotocol/server-everything (a 2025-11-25 server).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(60)

ERAS = [
    pytest.param({}, "modern", "2026-07-28", id="auto-modern"),
    pytest.param({"mode": "legacy"}, "legacy", "2025-11-25", id="legacy"),
    pytest.param({"protocol_version": "2024-11-05"}, "legacy", "2024-11-05", id="legacy-2024"),
]


@pytest.mark.parametrize(("options", "era", "version"), ERAS)
def test_sdk_server_full_surface(options: dict, era: str, version: str, no_leaks: None) -> None:
    """D1/LG1: the era is picked by itself (or as pinned), then every operation works."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], **options) as client:
        assert client.era == era
        assert client.protocol_version == version
        assert client.server_implementation == {"name": "sdk-test-server", "version": "1.0.0"}
        names = [tool.name for tool in client.tools()]
        assert {"echo", "add", "slow", "fail"} <= set(names)
        echo = next(t for t in client.tools() if t.name == "echo")
        assert echo.input_schema["properties"]["text"]["type"] == "string"

        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        added = client.call_tool("add", {"a": 2, "b": 3})
        assert added.text == "5" and added.structured_content == {"result": 5} and not added.is_error
        failed = client.call_tool("fail", {})
        assert failed.is_error
        with pytest.raises(mcp_sync.ToolError):
            client.call_tool("fail", {}, raise_on_error=True)

        assert [r.uri for r in client.resources()] == ["test://static"]
        assert [t.uri_template for t in client.resource_templates()] == ["test://items/{id}"]
        assert client.read_resource("test://items/42").text == "item 42"
        assert client.read_resource("test://static").contents[0].mime_type == "text/plain"

        prompt = next(iter(client.prompts()))
        assert prompt.name == "greet" and prompt.arguments[0].name == "name"
        rendered = client.get_prompt("greet", {"name": "Bob"})
        assert rendered.messages[0].role == "user" and "Bob" in (rendered.messages[0].text or "")
        assert client.complete(prompt, ("name", "Al")).values == ["Alice", "Albert"]


@pytest.mark.parametrize(("options", "era"), [({}, "modern"), ({"mode": "legacy"}, "legacy")])
def test_sdk_server_errors(options: dict, era: str) -> None:
    """Unknown tool -> ServerError; missing resource -> ResourceNotFound (Q1)."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], **options) as client:
        assert client.era == era
        with pytest.raises(mcp_sync.ResourceNotFound):
            client.read_resource("test://nope")
        result_or_error = None
        try:
            result_or_error = client.call_tool("no-such-tool", {})
        except mcp_sync.ServerError as exc:
            result_or_error = exc
        # The SDK reports an unknown tool either as a JSON-RPC error or as an isError result.
        assert isinstance(result_or_error, mcp_sync.ServerError) or result_or_error.is_error


@pytest.mark.parametrize("options", [{}, {"mode": "legacy"}], ids=["modern", "legacy"])
def test_sdk_server_progress_and_cancel(options: dict) -> None:
    """P1: progress is routed to its call; K1/T4: cancelling stops the call at once."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], **options) as client:
        seen: list[tuple] = []
        result = client.call_tool("slow", {"seconds": 0.3}, progress=lambda p, t, m: seen.append((p, t, m)))
        assert result.text == "slept 0.3"
        assert [p for p, _, _ in seen] == [1, 2] and seen[-1][1] == 2

        token = mcp_sync.CancellationToken()
        threading.Timer(0.3, token.cancel, kwargs={"reason": "test"}).start()
        with pytest.raises(mcp_sync.Cancelled) as info:
            client.call_tool("slow", {"seconds": 30}, cancel=token)
        assert info.value.reason == "test"
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"

        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("slow", {"seconds": 30}, timeout=0.3)
        assert client.call_tool("echo", {"text": "after timeout"}).text == "after timeout"


def test_sdk_server_legacy_logging(caplog: pytest.LogCaptureFixture) -> None:
    """Server log messages reach the mcp_sync.server.<name> logger and on_notification."""
    seen: list[str] = []
    with caplog.at_level(logging.DEBUG, logger="mcp_sync.server"):
        with mcp_sync.Client.stdio(
            PY, [SDK_SERVER, "stdio"], mode="legacy", on_notification=lambda m, p: seen.append(m)
        ) as client:
            client.set_log_level("debug")
            client.call_tool("slow", {"seconds": 0.1})
            client.ping()
    assert "notifications/message" in seen
    assert any(r.name == "mcp_sync.server.sdk_server" for r in caplog.records)


def test_everything_stdio_is_legacy(everything_js: Path, no_leaks: None) -> None:
    """server-everything answers the probe with -32601: auto falls back to initialize."""
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], probe_timeout=5) as client:
        assert client.era == "legacy"
        assert client.protocol_version == "2025-11-25"
        names = {tool.name for tool in client.tools()}
        assert {"echo", "get-sum", "trigger-long-running-operation"} <= names
        assert client.call_tool("echo", {"message": "hi"}).text == "Echo: hi"
        assert "5" in client.call_tool("get-sum", {"a": 2, "b": 3}).text
        ticks: list[float] = []
        client.call_tool(
            "trigger-long-running-operation", {"duration": 0.4, "steps": 2}, progress=lambda p, t, m: ticks.append(p)
        )
        assert ticks == [1, 2]
        resources = list(client.resources())
        assert resources and resources[0].uri.startswith("demo://")
        assert client.read_resource(resources[0].uri).contents
        assert len(list(client.resource_templates())) == 2
        prompts = {p.name for p in client.prompts()}
        assert "simple-prompt" in prompts
        assert client.get_prompt("args-prompt", {"city": "Paris"}).messages
        completion = client.complete({"type": "ref/prompt", "name": "completable-prompt"}, ("department", "E"))
        assert "Engineering" in completion.values
        client.ping()
