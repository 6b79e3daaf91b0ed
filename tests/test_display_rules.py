"""Issue #30.1-2, rule by rule: each display rule of ``mcp_sync._display`` on the model it applies
to (the real-server runs are in ``tests/test_display.py``). Every text a server sends is escaped;
only raster images and audio are inlined; the odd shapes a server may send (no type, a type list,
an enum, a non-base64 blob) still display as something a reader understands."""

from __future__ import annotations

import base64

import pytest

import mcp_sync
from mcp_sync import _display
from mcp_sync.models import GetPromptResult, Page, Prompt, ReadResourceResult, Tool

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
SVG = base64.b64encode(b"<svg><script>alert(1)</script></svg>").decode()


@pytest.mark.parametrize(("schema", "shown"), [
    ("not a schema", "any"),
    ({"enum": ["a", "b"]}, '"a" | "b"'),
    ({"enum": list(range(10))}, "0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | \u2026"),
    ({"type": ["integer", "null"]}, "integer | null"),
    ({"type": "array", "items": {"type": "string"}}, "array of string"),
    ({"type": "array"}, "array"),
    ({"type": "boolean"}, "boolean"),
    ({"anyOf": [{"type": "string"}, {}, 3]}, "string | \u2026 | ?"),
    ({"oneOf": [{"type": "number"}]}, "number"),
    ({}, "any"),
])
def test_schema_types(schema: object, shown: str) -> None:
    assert _display.schema_type(schema) == shown


def test_images_audio_and_svg() -> None:
    assert _display._base64(12) is None
    assert "<img" in _display._image(PNG, "image/png")
    svg = _display._image(SVG, "image/svg+xml")
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "SVG source" in svg
    assert "not shown" in _display._image(base64.b64encode(b"ID3").decode(), "audio/mpeg")
    assert "<audio controls" in _display._audio(base64.b64encode(b"ID3").decode(), "audio/mpeg")
    assert "not shown" in _display._audio(PNG, "image/png")
    assert "<audio" not in _display._audio("not base64!", "audio/wav")


def test_resource_contents_of_each_kind() -> None:
    result = ReadResourceResult.from_wire({"contents": [
        {"uri": "file:///a.png", "mimeType": "image/png", "blob": PNG},
        {"uri": "file:///a.wav", "mimeType": "audio/wav", "blob": base64.b64encode(b"RIFF").decode()},
        {"uri": "file:///a.bin", "mimeType": "application/octet-stream", "blob": "%%%"},
        {"uri": "file:///a.txt", "text": "<b>hi</b>"},
    ]})
    shown = _display.read_resource_result_html(result)
    assert "<img" in shown and "<audio controls" in shown and "not valid base64" in shown
    assert "&lt;b&gt;hi&lt;/b&gt;" in shown and "<b>hi</b>" not in shown
    assert "no contents" in _display.read_resource_result_html(ReadResourceResult.from_wire({"contents": []}))


def test_tools_prompts_pages_and_lists() -> None:
    tool = Tool.from_wire({"name": "t", "title": "<i>T</i>", "description": "d",
                           "inputSchema": {"type": "object", "properties": {"x": {"enum": [1, 2]}}}})
    shown = _display.tool_html(tool)
    assert "&lt;i&gt;T&lt;/i&gt;" in shown and "1 | 2" in shown
    prompt = Prompt.from_wire({"name": "p", "title": "P", "description": "<u>d</u>",
                               "arguments": [{"name": "a", "required": True}, {"name": "b"}]})
    shown = _display.prompt_html(prompt)
    assert "&lt;u&gt;" in shown and "argument" in shown
    assert "none" in _display.prompts_table([Prompt.from_wire({"name": "bare"})])
    page = Page(items=[tool], next_cursor="c2")
    assert "next_cursor" in _display.page_html(page)
    assert "no tools" in _display.items_html([], "tools")
    listed = _display.items_html(["<x>", 1], "things")
    assert "&lt;x&gt;" in listed and "<li>" in listed
    result = GetPromptResult.from_wire({"description": "<d>", "messages": [
        {"role": "user", "content": {"type": "text", "text": "hello"}}]})
    shown = _display.get_prompt_result_html(result)
    assert "&lt;d&gt;" in shown and "hello" in shown and "user" in shown


def test_an_error_shows_its_facts_and_data() -> None:
    error = mcp_sync.ServerError(-32000, "boom <b>", data={"why": "<script>"}, method="tools/call")
    shown = _display.error_html(error)
    assert "ServerError" in shown and "boom &lt;b&gt;" in shown and "tools/call" in shown
    assert "<script>" not in shown and "data" in shown


def test_tool_rules_refuse_what_is_not_a_rule() -> None:
    """#31.3: the shapes a config file or a caller may get wrong are named, not ignored."""
    import pickle

    from mcp_sync._tool_transform import ToolRules

    transform = mcp_sync.ToolTransform(name="plus", hide=None, fill=None)
    assert transform.hide == () and dict(transform.fill) == {}
    assert pickle.loads(pickle.dumps(mcp_sync.ToolTransform(fill={"b": 1}))).fill == {"b": 1}
    assert mcp_sync.ToolTransform.from_config(transform) is transform
    with pytest.raises(TypeError, match="fill must map"):
        mcp_sync.ToolTransform(fill={"": 1})
    with pytest.raises(TypeError, match="a transform is a ToolTransform or a dict"):
        mcp_sync.ToolTransform.from_config(["name"])
    kept = mcp_sync.ToolFilter(include=["a*"])
    assert mcp_sync.ToolFilter.from_config(kept) is kept
    with pytest.raises(TypeError, match="a filter is a ToolFilter or a dict"):
        mcp_sync.ToolFilter.from_config("a*")
    with pytest.raises(ValueError, match="unknown key"):
        mcp_sync.ToolFilter.from_config({"inclde": ["a*"]})
    with pytest.raises(TypeError, match="tool_transforms must map"):
        ToolRules([transform], None)  # type: ignore[arg-type]
