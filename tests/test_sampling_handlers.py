"""The sampling handlers (#20.3: ``mcp_sync.llm.openai_sampling`` and ``anthropic_sampling``) on
requests the SDK server's tools do not make, with the real provider SDKs against a local fake of
their APIs: tools offered without a ``toolChoice`` (the provider's default, none sent), a tool name
no LLM API takes (sent valid, mapped back in the answer), a model's tool call whose arguments are
not JSON, model hints without a usable name, a reply without a stop reason, and reply blocks a
CreateMessageResult has no place for (Anthropic's thinking).

The SDK server's ``ask_llm`` / ``ask_llm_tools`` round trips, in both eras, are in test_agents.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FakeProvider, anthropic_message, chat_completion

import mcp_sync.llm
from mcp_sync._llm_formats import llm_name

pytestmark = pytest.mark.timeout(60)

ODD_NAME = "weather/now"  # no LLM API takes a "/": offered as llm_name(ODD_NAME)
WIRE_NAME = llm_name(ODD_NAME)
PARAMS: dict[str, Any] = {
    "messages": [{"role": "user", "content": {"type": "text", "text": "Weather in Oslo?"}},
                 {"role": "system", "content": {"type": "text", "text": "not a sampling role: left out"}}, "junk"],
    "tools": [{"name": ODD_NAME, "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}},
              "junk"],
    "systemPrompt": "",
    "modelPreferences": {"hints": [{"name": ""}, {"other": "x"}, "junk", {"name": "mini"}]},
}


def test_openai_tools_without_a_choice_and_arguments_that_are_not_json() -> None:
    import openai

    call = {"id": "call_1", "type": "function", "function": {"name": WIRE_NAME, "arguments": "{oops"}}
    with FakeProvider([chat_completion({"content": None, "tool_calls": [call]}, None)]) as fake:
        handler = mcp_sync.llm.openai_sampling(openai.OpenAI(base_url=f"{fake.url}/v1", api_key="sk-test"),
                                               model="gpt-4.1", models=["gpt-4.1-mini"])
        result = handler(PARAMS)
    # the name as the server offered it; arguments the model garbled as {}; no stop reason given, none said
    assert result == {"role": "assistant", "model": "gpt-4.1-mini",
                      "content": [{"type": "tool_use", "id": "call_1", "name": ODD_NAME, "input": {}}]}
    ((path, _, body),) = fake.requests
    assert path == "/v1/chat/completions" and body["model"] == "gpt-4.1-mini"  # the first hint with a name
    assert body["messages"] == [{"role": "user", "content": "Weather in Oslo?"}]  # no empty system message
    assert [tool["function"]["name"] for tool in body["tools"]] == [WIRE_NAME] and "tool_choice" not in body
    assert body["max_completion_tokens"] == 1024  # no maxTokens in the request: the default


def test_anthropic_tools_without_a_choice_and_thinking_blocks() -> None:
    import anthropic

    reply = anthropic_message([{"type": "thinking", "thinking": "Oslo is cold.", "signature": "sig"},
                               {"type": "tool_use", "id": "toolu_1", "name": WIRE_NAME, "input": {"city": "Oslo"}}],
                              None, model="claude-big")
    with FakeProvider([reply]) as fake:
        handler = mcp_sync.llm.anthropic_sampling(anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-test"),
                                                  model="claude-big")
        result = handler({**PARAMS, "modelPreferences": None})
    assert result == {"role": "assistant", "model": "claude-big",
                      "content": [{"type": "tool_use", "id": "toolu_1", "name": ODD_NAME, "input": {"city": "Oslo"}}]}
    ((path, _, body),) = fake.requests
    assert path == "/v1/messages" and body["model"] == "claude-big"
    assert "system" not in body and "tool_choice" not in body and "temperature" not in body
    assert [tool["name"] for tool in body["tools"]] == [WIRE_NAME]
