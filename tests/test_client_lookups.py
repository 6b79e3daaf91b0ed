"""Issue #31.10: ``Client.has_capability``, ``Client.find_tool`` and ``Tool.supports_task``,
against the Python SDK server in both eras, server-everything (a 2025-11-25 server with tasks)
and the scripted fault server (a 2026-07-28 server offering the tasks extension)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from wirekit import Peer

import mcp_sync

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(60)

TASKS = "io.modelcontextprotocol/tasks"


def sdk(mode: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, **options)


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_has_capability_reads_what_the_sdk_server_declared(mode: str) -> None:
    with sdk(mode) as client:
        assert client.has_capability("tools") and client.has_capability("prompts")
        assert client.has_capability("tools", "listChanged")
        assert not client.has_capability("tasks") and not client.has_capability(TASKS)
        assert not client.has_capability("sampling")  # a client capability: no server declares it
        # resources.subscribe: True on the modern connection, False on the legacy one (the SDK's own choice)
        assert client.has_capability("resources")
        assert client.has_capability("resources", "subscribe") is (mode == "modern")
        assert client.has_capability("resources", "nonsense") is False
        with pytest.raises(TypeError):
            client.has_capability(["tools"])  # type: ignore[arg-type]


def test_has_capability_of_server_everything_tasks_and_supports_task(everything_js: Path) -> None:
    """A 2025-11-25 server with tasks: the nested capability, and each tool's taskSupport."""
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], mode="legacy") as client:
        assert client.has_capability("tasks", "requests") and client.has_capability("tasks", "list")
        assert not client.has_capability(TASKS)  # an extension: only 2026-07-28 servers declare them
        research = client.find_tool("simulate-research-query")
        assert research.execution == {"taskSupport": "required"} and research.supports_task is True
        assert client.find_tool("echo").supports_task is False  # taskSupport "forbidden"


def test_has_capability_names_a_modern_extension(tmp_path: Path) -> None:
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client:
        assert client.has_capability(TASKS) and not client.has_capability("io.example/other")
        assert not client.has_capability("tasks")  # the legacy capability is not the extension


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_find_tool_returns_the_listed_tool_or_tool_not_found(mode: str) -> None:
    with sdk(mode) as client:
        add = client.find_tool("add")
        assert isinstance(add, mcp_sync.Tool) and add.name == "add" and add.output_schema
        assert add.supports_task is None  # the SDK's tools say nothing about tasks
        assert add == next(t for t in client.tools() if t.name == "add")
        with pytest.raises(mcp_sync.ToolNotFound, match="no tool named 'ad'") as caught:
            client.find_tool("ad")
        assert isinstance(caught.value, KeyError) and isinstance(caught.value, mcp_sync.MCPError)
        assert caught.value.name == "ad"


def test_supports_task_reads_execution() -> None:
    def tool(execution: Any) -> mcp_sync.Tool:
        return mcp_sync.Tool.from_wire({"name": "t", "inputSchema": {"type": "object"},
                                        **({"execution": execution} if execution is not None else {})})

    assert [tool(e).supports_task for e in (None, {}, {"taskSupport": "optional"}, {"taskSupport": "required"},
                                            {"taskSupport": "forbidden"}, {"taskSupport": "sometimes"})] == [
        None, None, True, True, False, False]
