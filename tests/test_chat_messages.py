"""MCP messages as each provider's chat messages (#20.3, #20.4, ``mcp_sync._chat.chat_messages``):
the block kinds a prompt or a sampling request can hold that the SDK server's prompts do not
(audio, other blobs, tool results with images, structured content, errors or nothing at all,
calls without ids), and a property: whatever blocks a server sends, every message validates
against the provider SDK's own message type and Anthropic never gets an empty text block.

The SDK server's ``review`` prompt (text, image, text and PDF resources) is in test_agents.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import provider_message_validator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._chat import chat_messages

pytestmark = pytest.mark.timeout(120)

WAV = "UklGRg=="  # 6 bytes of base64
ZIP = {"type": "resource", "resource": {"uri": "file:///bundle.zip", "mimeType": "application/zip", "blob": "UEsDBA=="}}


def test_openai_audio_and_blobs_it_has_no_part_for() -> None:
    user = [{"type": "audio", "data": WAV, "mimeType": "audio/wav"},
            {"type": "audio", "data": WAV, "mimeType": "audio/ogg"}, ZIP]
    (message,) = chat_messages([("user", user)], "openai")
    assert message["content"] == [
        {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        {"type": "text", "text": "[audio: audio/ogg, 6 bytes]"},  # no OpenAI part for ogg: said in words
        {"type": "text", "text": "[resource file:///bundle.zip: application/zip, 6 bytes]"},
    ]
    # an assistant message takes text only: the blob in words, never its bytes
    assert chat_messages([("assistant", ZIP)], "openai") == [
        {"role": "assistant", "content": "[resource file:///bundle.zip: application/zip, 6 bytes]"}]


def test_tool_results_without_text() -> None:
    """A tool result of structured content only, of nothing, of an image, and one that failed."""
    messages = [
        ("assistant", [{"type": "tool_use", "name": "stats", "input": {}},
                       {"type": "tool_use", "id": "t2", "name": "nothing", "input": "not an object"},
                       {"type": "tool_use", "id": "t3", "name": "plot", "input": {}}]),
        ("user", [{"type": "tool_result", "content": [], "structuredContent": {"mean": 2.5}},
                  {"type": "tool_result", "toolUseId": "t2"},
                  {"type": "tool_result", "toolUseId": "t3", "isError": True,
                   "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}, "junk",
                               {"type": "text", "text": ""}, {"type": "text", "text": "axis too long"}]}]),
    ]
    openai_messages = chat_messages(messages, "openai")
    assert [m["role"] for m in openai_messages] == ["assistant", "tool", "tool", "tool"]
    assert openai_messages[0]["tool_calls"][1]["function"]["arguments"] == "{}"
    assert [m["content"] for m in openai_messages[1:]] == [
        '{"mean": 2.5}', "(no output)", "[image: image/png, 3 bytes]\naxis too long"]

    anthropic_messages = chat_messages(messages, "anthropic")
    stats, nothing, plot = anthropic_messages[1]["content"]
    assert stats == {"type": "tool_result", "tool_use_id": "", "content": [{"type": "text", "text": '{"mean": 2.5}'}]}
    assert nothing["content"] == [{"type": "text", "text": "(no output)"}] and "is_error" not in nothing
    assert plot == {"type": "tool_result", "tool_use_id": "t3", "is_error": True, "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "text", "text": "axis too long"}]}  # the junk item and the empty text are left out

    gemini = chat_messages(messages, "gemini")
    assert gemini[0]["parts"][0] == {"function_call": {"name": "stats", "args": {}}}  # no id: none invented
    responses = [part["function_response"] for part in gemini[1]["parts"]]
    # no ids on either side: the call and its result still pair up by the empty id, and no id is sent
    assert responses[0] == {"name": "stats", "response": {"result": '{"mean": 2.5}'}}
    assert responses[1] == {"name": "nothing", "id": "t2", "response": {"result": ""}}
    assert responses[2]["response"] == {"error": "[image: image/png, 3 bytes]\naxis too long"}
    for fmt in ("openai", "anthropic"):
        validator = provider_message_validator(fmt)
        for message in chat_messages(messages, fmt):
            validator.validate_python(message)


def test_a_tool_result_nested_in_a_tool_result_is_read_as_its_text() -> None:
    inner = {"type": "tool_result", "toolUseId": "t0", "content": [{"type": "text", "text": "inner"}]}
    outer = {"type": "tool_result", "toolUseId": "t1", "content": [inner, {"type": "text", "text": "outer"}]}
    assert chat_messages([("user", outer)], "openai") == [{"role": "tool", "tool_call_id": "t1",
                                                           "content": "inner\nouter"}]


def test_anthropic_documents_and_empty_text() -> None:
    untitled = {"type": "resource", "resource": {"uri": "", "text": "notes"}}
    messages = [("user", [{"type": "text", "text": ""}, untitled]), ("assistant", {"type": "text", "text": ""})]
    assert chat_messages(messages, "anthropic") == [{"role": "user", "content": [
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}]}]
    # a message of empty text only is left out: Anthropic refuses empty text blocks


def test_prompt_built_by_hand_with_embedded_resources() -> None:
    """A GetPromptResult made in code (no wire dicts): embedded resources and a generic block are
    turned into wire form from their fields."""
    prompt = mcp_sync.GetPromptResult(messages=[
        mcp_sync.PromptMessage(role="user", content=mcp_sync.EmbeddedResource(
            resource=mcp_sync.TextResourceContents(uri="file:///a.py", text="x = 1"))),
        mcp_sync.PromptMessage(role="user", content=mcp_sync.EmbeddedResource(
            resource=mcp_sync.BlobResourceContents(uri="file:///b.pdf", blob="JVBERg==", mime_type="application/pdf"))),
        mcp_sync.PromptMessage(role="assistant", content=mcp_sync.ContentBlock(type="video", raw={})),
    ])
    user, assistant = prompt.to_messages("anthropic")
    assert user["content"] == [
        {"type": "document", "title": "file:///a.py", "source": {"type": "text", "media_type": "text/plain",
                                                                 "data": "x = 1"}},
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERg=="}},
    ]
    assert assistant == {"role": "assistant", "content": [{"type": "text", "text": '{"type": "video"}'}]}
    assert prompt.messages[0].content.text == "x = 1"  # type: ignore[union-attr]
    assert prompt.messages[1].content.text is None  # type: ignore[union-attr]  # a blob has no text


# -- any blocks a server may send -----------------------------------------------------------------

_text = st.text(max_size=8)
_b64 = st.sampled_from(["", "AAAA", "UklGRg==", "JVBERg=="])
_mime = st.sampled_from(["", "image/png", "image/bmp", "audio/wav", "audio/ogg", "application/pdf", "text/plain"])
_leaf_blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio"]), "data": _b64, "mimeType": _mime}),
    st.fixed_dictionaries({"type": st.just("resource_link"), "uri": _text}, optional={"name": _text}),
    st.fixed_dictionaries({"type": st.just("resource"), "resource": st.one_of(
        st.fixed_dictionaries({"uri": _text, "text": _text}),
        st.fixed_dictionaries({"uri": _text, "blob": _b64}, optional={"mimeType": _mime}),
        st.just("not a dict"))}),
    st.fixed_dictionaries({"type": st.sampled_from(["video", 7])}),
)
_blocks = st.one_of(
    _leaf_blocks,
    st.fixed_dictionaries({"type": st.just("tool_use")},
                          optional={"id": _text, "name": _text, "input": st.just({"a": 1}) | st.just([1])}),
    st.fixed_dictionaries({"type": st.just("tool_result")}, optional={
        "toolUseId": _text, "isError": st.booleans(), "structuredContent": st.just({"n": 1}),
        "content": st.lists(_leaf_blocks | st.just("junk"), max_size=3)}),
    st.just("not a block"),
)
_messages = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), _blocks | st.lists(_blocks, max_size=3)),
                     max_size=4)


def _texts(value: Any) -> list[str]:
    """Every Anthropic text block's text, tool results' content included."""
    if isinstance(value, list):
        return [text for item in value for text in _texts(item)]
    if not isinstance(value, dict):
        return []
    found = [value["text"]] if value.get("type") == "text" else []
    return found + _texts(value.get("content"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=_messages)
def test_any_blocks_give_messages_the_provider_sdks_accept(messages: list[tuple[str, Any]]) -> None:
    openai_validator = provider_message_validator("openai")
    anthropic_validator = provider_message_validator("anthropic")
    for message in chat_messages(messages, "openai"):
        openai_validator.validate_python(message)
    anthropic_messages = chat_messages(messages, "anthropic")
    for message in anthropic_messages:
        anthropic_validator.validate_python(message)
        assert message["content"], message
    assert all(_texts(anthropic_messages))  # no empty text block anywhere
    for content in chat_messages(messages, "gemini"):
        assert content["role"] in ("user", "model") and content["parts"]
