"""The sampling handlers (#20.3, #31.10: ``mcp_sync.llm.openai_sampling``, ``anthropic_sampling`` and
``gemini_sampling``) on
requests the SDK server's tools do not make, with the real provider SDKs against a local fake of
their APIs: tools offered without a ``toolChoice`` (the provider's default, none sent), a tool name
no LLM API takes (sent valid, mapped back in the answer), a model's tool call whose arguments are
not JSON, model hints without a usable name, a reply without a stop reason, and reply blocks a
CreateMessageResult has no place for (Anthropic's thinking, Gemini's thoughts); Gemini's function
calls without an id, a later round's tool results, its finish reasons and a blocked prompt.

The SDK server's ``ask_llm`` / ``ask_llm_tools`` round trips, in both eras, are in test_agents.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from helpers import FakeProvider, anthropic_message, chat_completion, gemini_response

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


def _gemini(fake: FakeProvider, **options: Any) -> Any:
    from google import genai

    client = genai.Client(api_key="gm-test", http_options={"base_url": fake.url, "api_version": "v1beta"})
    return mcp_sync.llm.gemini_sampling(client, **{"model": "gemini-2.5-pro", **options})


def test_gemini_tools_without_a_choice_a_call_without_an_id_and_thoughts() -> None:
    reply = gemini_response([{"text": "Oslo is cold.", "thought": True},
                             {"functionCall": {"name": WIRE_NAME, "args": {"city": "Oslo"}}}], "STOP")
    with FakeProvider([reply]) as fake:
        result = _gemini(fake, models=["gemini-2.5-flash"])(
            {**PARAMS, "modelPreferences": {"hints": [{"name": ""}, {"name": "flash"}]}})
    (block,) = result["content"]  # the thought left out
    assert block["id"].startswith("call_") and len(block["id"]) > 12  # Gemini gave none: one is made
    assert result == {"role": "assistant", "model": "gemini-2.5-flash-001", "stopReason": "toolUse",
                      "content": [{"type": "tool_use", "id": block["id"], "name": ODD_NAME, "input": {"city": "Oslo"}}]}
    ((path, _, body),) = fake.requests
    assert path == "/v1beta/models/gemini-2.5-flash:generateContent"  # the first hint with a name
    assert body["contents"] == [{"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]
    assert "systemInstruction" not in body and "toolConfig" not in body  # an empty system prompt: none
    assert [d["name"] for d in body["tools"][0]["functionDeclarations"]] == [WIRE_NAME]
    assert body["generationConfig"] == {"maxOutputTokens": 1024}  # no maxTokens in the request: the default


def test_gemini_a_later_round_names_each_function_and_the_finish_reasons_map() -> None:
    """A tool loop's next round: the server sends the model's tool_use and the tool's result back;
    Gemini's function_response names its function. ``required`` is Gemini's ``ANY``."""
    round_two = {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Weather?"}},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": ODD_NAME,
                                               "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t1",
                                          "content": [{"type": "text", "text": "sunny"}]}]},
        ],
        "tools": PARAMS["tools"][:1], "toolChoice": {"mode": "required"}, "maxTokens": 5,
    }
    replies = [gemini_response([{"text": "Sun"}], "MAX_TOKENS"), gemini_response([], None),
               {"promptFeedback": {"blockReason": "SAFETY"}}]
    with FakeProvider(replies) as fake:
        handler = _gemini(fake)
        assert handler(round_two) == {"role": "assistant", "model": "gemini-2.5-flash-001", "stopReason": "maxTokens",
                                      "content": [{"type": "text", "text": "Sun"}]}
        # no finish reason: none said; no candidates (a blocked prompt): the block reason, no text
        assert handler(round_two) == {"role": "assistant", "model": "gemini-2.5-flash-001",
                                      "content": [{"type": "text", "text": ""}]}
        assert handler({"messages": round_two["messages"][:1]}) == {
            "role": "assistant", "model": "gemini-2.5-pro", "stopReason": "SAFETY",
            "content": {"type": "text", "text": ""}}
    body = fake.requests[0][2]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    call, response = body["contents"][1]["parts"][0], body["contents"][2]["parts"][0]
    # the earlier call under the name its tool is offered by, as the function response names it
    assert body["contents"][1]["role"] == "model" and call["functionCall"] == {"id": "t1", "name": WIRE_NAME,
                                                                               "args": {"city": "Oslo"}}
    assert response["functionResponse"] == {"id": "t1", "name": WIRE_NAME, "response": {"result": "sunny"}}


def test_an_earlier_tool_use_is_sent_under_the_offered_name() -> None:
    """Every provider: a later round's tool_use of a tool offered under another name (one no LLM
    API takes) is sent under that name, so the history and the tools agree."""
    import anthropic
    import openai

    later = {"messages": [{"role": "user", "content": {"type": "text", "text": "Weather?"}},
                          {"role": "assistant", "content": {"type": "tool_use", "id": "t1", "name": ODD_NAME,
                                                            "input": {}}},
                          {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t1", "content": []}]}],
             "tools": PARAMS["tools"][:1]}
    with FakeProvider([chat_completion({"content": "ok"}, "stop"),
                       anthropic_message([{"type": "text", "text": "ok"}], "end_turn")]) as fake:
        mcp_sync.llm.openai_sampling(openai.OpenAI(base_url=f"{fake.url}/v1", api_key="sk-test"),
                                     model="gpt-4.1")(later)
        mcp_sync.llm.anthropic_sampling(anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-test"),
                                        model="claude-big")(later)
    (_, _, openai_body), (_, _, anthropic_body) = fake.requests
    assert openai_body["messages"][1]["tool_calls"][0]["function"]["name"] == WIRE_NAME
    assert anthropic_body["messages"][1]["content"][0]["name"] == WIRE_NAME
    assert later["messages"][1]["content"]["name"] == ODD_NAME  # the request itself is left as it came


def test_gemini_timeout_is_sent_in_milliseconds_and_checked_when_the_handler_is_made() -> None:
    """The SDK takes milliseconds and tells the API the whole seconds, rounded up (x-server-timeout)."""
    with FakeProvider([gemini_response([{"text": "ok"}], "STOP")] * 3) as fake:
        _gemini(fake, timeout=7.5)({"messages": PARAMS["messages"][:1]})
        _gemini(fake, timeout=2.0001)({"messages": PARAMS["messages"][:1]})  # 2001 ms: 3 s
        _gemini(fake, timeout=None)({"messages": PARAMS["messages"][:1]})
    assert [headers.get("x-server-timeout") for _, headers, _ in fake.requests] == ["8", "3", None]

    # Under a millisecond is 1 ms, not 0 (which the SDK reads as no timeout). Seen on a stand-in client:
    # a real 1 ms read timeout against the fake provider fails whenever the machine is busy.
    configs: list[dict[str, Any]] = []

    class Models:
        def generate_content(self, *, model: str, contents: Any, config: dict[str, Any]) -> dict[str, Any]:
            configs.append(config)
            return gemini_response([{"text": "ok"}], "STOP")

    class StandIn:
        models = Models()

    mcp_sync.llm.gemini_sampling(StandIn(), model="gemini-2.5-pro", timeout=0.0001)(
        {"messages": PARAMS["messages"][:1]})
    assert configs[0]["http_options"] == {"timeout": 1}
    for timeout in (0, -1, float("inf"), float("nan"), "60"):
        with pytest.raises(ValueError, match=r"^timeout must be"):
            mcp_sync.llm.gemini_sampling(object(), model="gemini-2.5-pro", timeout=timeout)  # type: ignore[arg-type]
