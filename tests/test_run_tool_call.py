"""``run_tool_call`` (#10) at its edges, against real peers: results of resource links and embedded
resources (server-everything) read as text a model can take; arguments a model leaves out or
empty sent as ``{}``; a tool listing that fails becomes an error result the model reads (nothing is
called); and a call object that is no tool call at all is the caller's ValueError, nothing sent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from wirekit import Peer

import mcp_sync

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(120)

FILE_TOOLS_SERVER = str(SERVERS / "file_tools_server.py")


@pytest.fixture(scope="module")
def everything(everything_js: Path) -> Iterator[mcp_sync.Client]:
    with mcp_sync.Client.stdio(str(everything_js), ["stdio"], timeout=30) as client:
        yield client


def _openai(name: str, arguments: Any) -> dict[str, Any]:
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_resource_links_and_embedded_resources_as_text(everything: mcp_sync.Client) -> None:
    links = everything.run_tool_call(_openai("get-resource-links", {"count": 2}))["content"]
    assert links.splitlines()[1:] == ["[resource link: demo://resource/dynamic/blob/1 (Blob Resource 1)]",
                                      "[resource link: demo://resource/dynamic/text/2 (Text Resource 2)]"]
    text = everything.run_tool_call(_openai("get-resource-reference", {"resourceType": "Text", "resourceId": 1}))
    assert text["content"].splitlines()[1].startswith("Resource 1: This is a plaintext resource")  # the text itself
    blob = everything.run_tool_call({"type": "tool_use", "id": "toolu_1", "name": "get-resource-reference",
                                     "input": {"resourceType": "Blob", "resourceId": 2}}, format="anthropic")
    said = [block["text"] for block in blob["content"]]
    assert blob["is_error"] is False and len(said) == 3
    assert said[1].startswith("[resource demo://resource/dynamic/blob/2: text/plain, ") and said[1].endswith(" bytes]")


def test_arguments_left_out_or_empty_are_sent_as_an_empty_object(tmp_path: Path) -> None:
    spec = tmp_path / "tools.json"
    spec.write_text(json.dumps([{"name": "echo", "inputSchema": {"type": "object"}}]))
    calls = [
        ({"id": "1", "type": "function", "function": {"name": "echo", "arguments": ""}}, "openai"),
        ({"type": "function_call", "call_id": "2", "name": "echo"}, "openai"),  # Responses, no arguments
        ({"type": "tool_use", "id": "3", "name": "echo"}, "anthropic"),
        ({"functionCall": {"name": "echo"}}, "gemini"),
    ]
    with mcp_sync.Client.stdio(PY, [FILE_TOOLS_SERVER, str(spec)], timeout=20) as client:
        answers = [json.dumps(client.run_tool_call(call, format=fmt)) for call, fmt in calls]
    for answer in answers:
        assert '{\\"args\\": {}, \\"tool\\": \\"echo\\"}' in answer, answer


def test_a_failed_listing_is_an_error_result_and_calls_nothing(tmp_path: Path) -> None:
    peer = Peer(tmp_path, {"tools/list": [{"error": {"code": -32603, "message": "tool registry is down"}}]})
    with peer.client(timeout=20) as client:
        out = client.run_tool_call(_openai("echo", {"text": "hi"}))
        assert out["content"] == "Error: tool 'echo' failed: ServerError: [-32603] tool registry is down (tools/list)"
        anthropic = client.run_tool_call({"type": "tool_use", "id": "t", "name": "echo", "input": {}},
                                         format="anthropic")
        assert anthropic["is_error"] is True and "tool registry is down" in anthropic["content"][0]["text"]
    assert len(peer.requests("tools/list")) == 2 and peer.requests("tools/call") == []


def test_a_block_type_this_version_does_not_know_reaches_the_model_as_json(tmp_path: Path) -> None:
    video = {"type": "video", "uri": "file:///clip.mp4", "seconds": 3}
    peer = Peer(tmp_path, {"tools/call echo": [{"result": {"content": [video], "isError": False}}]})
    with peer.client(timeout=20) as client:
        out = client.run_tool_call(_openai("echo", {"text": "hi"}))
    assert json.loads(out["content"]) == video


@pytest.mark.parametrize(("call", "fmt", "message"), [
    ("echo", "openai", "a openai tool call must be a dict, not str"),
    ({"id": "1", "name": "echo", "arguments": "{}"}, "openai", "an OpenAI tool call needs 'function'"),
    ({"functionCall": ["echo"]}, "gemini", "a Gemini function call must be a dict"),
])
def test_a_call_object_that_is_no_tool_call_is_a_value_error(tmp_path: Path, call: Any, fmt: str,
                                                              message: str) -> None:
    """The program handed over something else than the provider's tool call: its mistake, not the model's."""
    peer = Peer(tmp_path)
    with peer.client(timeout=20) as client:
        with pytest.raises(ValueError, match=message):
            client.run_tool_call(call, format=fmt)
    assert peer.requests("tools/call") == [] and peer.requests("tools/list") == []
