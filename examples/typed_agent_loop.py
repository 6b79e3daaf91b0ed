"""Agent loops typed end to end: this file passes ``mypy --strict`` with ``openai`` and ``anthropic`` installed.

Run (a real API key is needed; nothing else is sent anywhere):

    OPENAI_API_KEY=sk-... python examples/typed_agent_loop.py openai "What is 2 + 40? Use the tools."
    OPENAI_API_KEY=sk-... python examples/typed_agent_loop.py responses "What is 2 + 40?"
    ANTHROPIC_API_KEY=sk-ant-... python examples/typed_agent_loop.py anthropic "What is 2 + 40?"

The tool lists and the tool results that mcp_sync hands out are typed as the SDKs' own
parameter types (``ChatCompletionFunctionToolParam``, ``ChatCompletionToolMessageParam``,
``FunctionToolParam``, ``FunctionCallOutput``, ``ToolParam``, ``ToolResultBlockParam``), so
they go into the SDKs' calls and message lists without casts. The tools come from the demo
server (``examples/demo_server.py``); ``tests/test_typed_loop.py`` runs mypy on this file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anthropic
import openai
from anthropic.types import MessageParam, ToolResultBlockParam
from openai.types.chat import ChatCompletionAssistantMessageParam, ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam

import mcp_sync

DEMO_SERVER = str(Path(__file__).resolve().parent / "demo_server.py")


def openai_chat(client: mcp_sync.Client, question: str, model: str = "gpt-4.1-mini") -> str:
    """Chat Completions: the assistant's turn goes in before the results of its tool calls."""
    llm = openai.OpenAI()
    tools = client.to_openai_tools()
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
    for _ in range(10):
        message = llm.chat.completions.create(model=model, messages=messages, tools=tools).choices[0].message
        calls = [call for call in message.tool_calls or [] if call.type == "function"]
        assistant: ChatCompletionAssistantMessageParam = {"role": "assistant", "content": message.content}
        if calls:
            assistant["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in calls
            ]
        messages.append(assistant)
        if not calls:
            return message.content or ""
        for call in calls:
            messages.append(client.run_tool_call(call))  # a ChatCompletionToolMessageParam
    return "(stopped after 10 turns)"


def openai_responses(client: mcp_sync.Client, question: str, model: str = "gpt-4.1-mini") -> str:
    """Responses API: each function_call item goes back in, followed by its output."""
    llm = openai.OpenAI()
    tools = client.to_openai_tools(api="responses")
    items: ResponseInputParam = [{"role": "user", "content": question}]
    for _ in range(10):
        response = llm.responses.create(model=model, input=items, tools=tools)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        for call in calls:
            items.append({"type": "function_call", "call_id": call.call_id, "name": call.name,
                          "arguments": call.arguments})
            items.append(client.run_tool_call(call))  # a FunctionCallOutput
    return "(stopped after 10 turns)"


def anthropic_messages(client: mcp_sync.Client, question: str, model: str = "claude-sonnet-4-5") -> str:
    """Anthropic: the assistant's turn, then one user turn with every tool result."""
    llm = anthropic.Anthropic()
    tools = client.to_anthropic_tools()
    messages: list[MessageParam] = [{"role": "user", "content": question}]
    for _ in range(10):
        reply = llm.messages.create(model=model, max_tokens=1024, messages=messages, tools=tools)
        messages.append({"role": "assistant", "content": reply.content})
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            return "".join(block.text for block in reply.content if block.type == "text")
        results: list[ToolResultBlockParam] = [client.run_tool_call(call, format="anthropic") for call in calls]
        messages.append({"role": "user", "content": results})
    return "(stopped after 10 turns)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Typed agent loops over the demo MCP server.")
    parser.add_argument("provider", choices=("openai", "responses", "anthropic"))
    parser.add_argument("prompt", help="what to ask the model")
    args = parser.parse_args(argv)
    loops = {"openai": openai_chat, "responses": openai_responses, "anthropic": anthropic_messages}
    with mcp_sync.Client.stdio(sys.executable, [DEMO_SERVER], timeout=60) as client:
        print(loops[args.provider](client, args.prompt))
    return 0


if __name__ == "__main__":
    sys.exit(main())
