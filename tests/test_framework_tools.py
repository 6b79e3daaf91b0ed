"""Tools for agent frameworks (#20.5: ``mcp_sync.llm.to_langchain_tools``, ``to_openai_agents_tools``)
when a call fails with an MCP error rather than an ``isError`` result: the model gets the error as
text, never an exception that ends its run; arguments that are JSON but no object are refused; and
a missing framework package is an ImportError that says what to install.

Against tests/servers/file_tools_server.py, whose ``read`` answers -32602 for a null argument, as
server-filesystem does. The SDK server's happy paths are in test_agents.py.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Iterator

import pytest

import mcp_sync
import mcp_sync.llm

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

READ = {"name": "read", "refuse_nulls": True,
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
REFUSED = "tool 'read' failed: ServerError: [-32602] Invalid arguments: expected a value, received null (tools/call)"


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[mcp_sync.Client]:
    spec = tmp_path_factory.mktemp("tools") / "tools.json"
    spec.write_text(json.dumps([READ]))
    with mcp_sync.Client.stdio(PY, [str(SERVERS / "file_tools_server.py"), str(spec)], timeout=20) as client:
        yield client


def test_langchain_tool_gives_an_mcp_error_as_the_models_text(client: mcp_sync.Client) -> None:
    (read,) = mcp_sync.llm.to_langchain_tools(client)
    assert json.loads(read.invoke({"path": "/a"})) == {"tool": "read", "args": {"path": "/a"}}
    assert read.invoke({"path": None}) == REFUSED  # a required null is the server's call: it refuses
    message = read.invoke({"type": "tool_call", "id": "c1", "name": "read", "args": {"path": None}})
    assert (message.status, message.content, message.artifact) == ("error", REFUSED, None)  # no result to keep


def test_openai_agents_tool_gives_errors_as_text(client: mcp_sync.Client) -> None:
    (read,) = mcp_sync.llm.to_openai_agents_tools(client)
    assert asyncio.run(read.on_invoke_tool(None, '{"path": null}')) == f"Error: {REFUSED}"
    assert asyncio.run(read.on_invoke_tool(None, '["/a"]')) == "Error: the arguments must be a JSON object"


@pytest.mark.parametrize(("convert", "module", "package"), [
    (mcp_sync.llm.to_langchain_tools, "langchain_core.tools", "langchain-core"),
    (mcp_sync.llm.to_openai_agents_tools, "agents", "openai-agents"),
])
def test_a_missing_framework_says_what_to_install(client: mcp_sync.Client, monkeypatch: pytest.MonkeyPatch,
                                                  convert: object, module: str, package: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what an import finds when the package is not installed
    name = getattr(convert, "__name__", "")
    with pytest.raises(ImportError, match=rf"{name} needs the '{package}' package: pip install {package}"):
        convert(client)  # type: ignore[operator]
