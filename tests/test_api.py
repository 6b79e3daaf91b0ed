"""The public surface: exports, error tree, models, light import."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import env_without_coverage

import mcp_sync
from mcp_sync import models

API_NAMES = {  # ../shared/design/api.md
    "Client", "connect", "CancellationToken", "MCPError", "ServerError", "ResourceNotFound", "CapabilityError",
    "UnsupportedProtocolVersionError", "RequestTimeout", "Cancelled", "ConnectionClosed", "ProtocolError",
    "PaginationLimitError", "InputRequiredError", "ToolError", "AuthorizationError", "ServerRequestError",
    "TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource", "TextResourceContents",
    "BlobResourceContents", "PromptMessage", "CallToolResult", "ReadResourceResult", "GetPromptResult",
    "Completion", "DiscoverResult", "Tool", "Resource", "ResourceTemplate", "Prompt",
}


def test_exports() -> None:
    assert API_NAMES <= set(mcp_sync.__all__)
    for name in mcp_sync.__all__:
        assert getattr(mcp_sync, name) is not None, name


def test_error_tree() -> None:
    for name in API_NAMES:
        obj = getattr(mcp_sync, name)
        if isinstance(obj, type) and issubclass(obj, Exception) and name != "ServerRequestError":
            assert issubclass(obj, mcp_sync.MCPError), name
    assert issubclass(mcp_sync.RequestTimeout, TimeoutError)
    assert issubclass(mcp_sync.ResourceNotFound, mcp_sync.ServerError)
    assert issubclass(mcp_sync.UnsupportedProtocolVersionError, mcp_sync.ServerError)
    err = mcp_sync.ServerRequestError("no")
    assert err.code == -1


def test_import_is_light() -> None:
    """`import mcp_sync` pulls in no HTTP, schema or crypto stack and starts no thread.

    The import time itself is a benchmark figure (README, bench/), not a timed test: what keeps
    it low is that these modules load only on first use, which is what this checks.
    """
    heavy = ["requests", "urllib3", "http.client", "ssl", "jsonschema", "cryptography", "jwt", "hashlib", "tqdm"]
    code = (
        "import sys, threading; import mcp_sync;"
        f"print([m for m in {heavy!r} if m in sys.modules], threading.active_count())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env_without_coverage()
    ).stdout
    assert out.split() == ["[]", "1"], out


def test_content_blocks_keep_unknown_types() -> None:
    result = models.CallToolResult.from_wire(
        {
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "AAA=", "mimeType": "image/png"},
                {"type": "audio", "data": "AAA=", "mimeType": "audio/wav"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
                {"type": "resource", "resource": {"uri": "file:///y", "text": "b"}},
                {"type": "hologram", "data": 1},
                {"type": "text", "text": "c"},
            ],
            "structuredContent": [1, 2],
            "isError": False,
        }
    )
    kinds = [type(block).__name__ for block in result.content]
    assert kinds == ["TextContent", "ImageContent", "AudioContent", "ResourceLink", "EmbeddedResource",
                     "ContentBlock", "TextContent"]
    assert result.content[5].type == "hologram" and result.content[5].raw == {"type": "hologram", "data": 1}
    assert result.text == "ac"
    assert result.structured_content == [1, 2]
    assert result.content[4].text == "b"


def test_models_are_frozen() -> None:
    tool = models.Tool.from_wire({"name": "t", "inputSchema": {"type": "object"}, "_meta": {"k": 1}})
    assert tool.meta == {"k": 1} and tool.raw["name"] == "t"
    with pytest.raises(AttributeError):
        tool.name = "u"  # type: ignore[misc]


def test_resource_contents_and_completion() -> None:
    read = models.ReadResourceResult.from_wire(
        {"contents": [{"uri": "a", "text": "x", "mimeType": "text/plain"}, {"uri": "b", "blob": "AA=="}], "ttlMs": 5}
    )
    assert isinstance(read.contents[1], mcp_sync.BlobResourceContents) and read.text == "x" and read.ttl_ms == 5
    completion = models.Completion.from_wire({"completion": {"values": ["a", "b"], "total": 2, "hasMore": True}})
    assert completion.values == ["a", "b"] and completion.total == 2 and completion.has_more


def test_options_are_validated() -> None:
    with pytest.raises(ValueError, match="mode"):
        mcp_sync.Client.stdio("true", mode="bogus")
    with pytest.raises(ValueError, match="protocol_version"):
        mcp_sync.Client.stdio("true", protocol_version="1999-01-01")
    with pytest.raises(ValueError, match="contradicts"):
        mcp_sync.Client.stdio("true", mode="modern", protocol_version="2025-11-25")
    with pytest.raises(ValueError, match="timeout"):
        mcp_sync.Client.stdio("true", timeout=0)


def test_connect_targets(tmp_path: object) -> None:
    from mcp_sync._connect import _client_for

    assert _client_for("python server.py")._factory is not None
    client = _client_for({"command": "python", "args": ["s.py"], "env": {"A": "1"}})
    assert client.state is mcp_sync.ClientState.NEW
    with pytest.raises(ValueError, match="command"):
        _client_for({"nope": 1})


def test_every_public_name_is_documented_with_an_example() -> None:
    """Docs are part of the feature: each exported class/function, and each public method of
    the main classes, has a docstring that shows use."""
    import inspect

    def shows_use(obj: object) -> bool:
        doc = inspect.getdoc(obj) or ""
        return "xample" in doc or "::" in doc

    constants = {"LEGACY_VERSIONS", "MODERN_VERSIONS", "__version__"}
    missing = [n for n in mcp_sync.__all__ if n not in constants and not shows_use(getattr(mcp_sync, n))]
    for cls in (mcp_sync.Client, mcp_sync.Subscription, mcp_sync.Task, mcp_sync.CancellationToken):
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
            if not name.startswith("_") and not shows_use(fn):
                missing.append(f"{cls.__name__}.{name}")
    assert not missing
