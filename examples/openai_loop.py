"""An OpenAI model using the tools of MCP servers: the whole agent loop in one page.

Run (a real API key is needed; nothing else is sent anywhere):

    OPENAI_API_KEY=sk-... python examples/openai_loop.py "What is 2 + 40? Use the tools."
    python examples/openai_loop.py --config ~/.cursor/mcp.json "List my open issues"
    python examples/openai_loop.py --server "npx -y @modelcontextprotocol/server-everything" --api responses "..."

It uses the ``openai`` package when it is installed, else plain ``requests``.
The tools of every server go to the model with names ``<server>__<tool>``; each
tool call the model makes is run with ``group.run_tool_call`` and its result
appended, until the model answers in text. Model mistakes (bad arguments, a
tool that does not exist) come back to it as error results, so the loop goes on.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import mcp_sync

DEMO_SERVER = str(Path(__file__).resolve().parent / "demo_server.py")


def servers_from(args: argparse.Namespace) -> dict[str, Any]:
    """The servers to use: a host config file, --server targets, or the demo server."""
    if args.config:
        return mcp_sync.load_config(args.config)
    servers: dict[str, Any] = {}
    for i, target in enumerate(args.server or [DEMO_SERVER]):
        if target.startswith(("http://", "https://")):
            servers[f"s{i}"] = {"url": target}
        else:
            command, *rest = shlex.split(target)
            servers[f"s{i}"] = {"command": command, "args": rest}
    return servers


def ask_model(args: argparse.Namespace, body: dict[str, Any]) -> dict[str, Any]:
    """One request to the API, as a plain dict (SDK objects are dumped)."""
    endpoint = "responses" if args.api == "responses" else "chat/completions"
    try:
        import openai
    except ImportError:
        import requests

        response = requests.post(
            f"{args.base_url.rstrip('/')}/{endpoint}",
            headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
            json=body,
            timeout=120,
        )
        response.raise_for_status()
        return dict(response.json())
    client = openai.OpenAI(base_url=args.base_url)
    create = client.responses.create if args.api == "responses" else client.chat.completions.create
    return dict(create(**body).model_dump(exclude_none=True))


def chat_loop(args: argparse.Namespace, group: mcp_sync.ClientGroup) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": args.prompt}]
    tools = group.to_openai_tools(strict=args.strict)
    for _ in range(args.max_turns):
        reply = ask_model(args, {"model": args.model, "messages": messages, "tools": tools})
        message = reply["choices"][0]["message"]
        messages.append({key: message[key] for key in ("role", "content", "tool_calls") if key in message})
        if not message.get("tool_calls"):
            return str(message.get("content") or "")
        for call in message["tool_calls"]:
            print(f"-> {call['function']['name']}({call['function']['arguments']})", file=sys.stderr)
            messages.append(group.run_tool_call(call, format="openai"))
    return "(stopped after --max-turns)"


def responses_loop(args: argparse.Namespace, group: mcp_sync.ClientGroup) -> str:
    items: list[dict[str, Any]] = [{"role": "user", "content": args.prompt}]
    tools = group.to_openai_tools(api="responses", strict=args.strict)
    for _ in range(args.max_turns):
        reply = ask_model(args, {"model": args.model, "input": items, "tools": tools})
        calls = [item for item in reply["output"] if item.get("type") == "function_call"]
        if not calls:
            texts = [part.get("text", "") for item in reply["output"] if item.get("type") == "message"
                     for part in item.get("content", [])]
            return "".join(texts)
        for call in calls:
            print(f"-> {call['name']}({call['arguments']})", file=sys.stderr)
            items += [call, group.run_tool_call(call, format="openai")]
    return "(stopped after --max-turns)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Let an OpenAI model use the tools of MCP servers.")
    parser.add_argument("prompt", help="what to ask the model")
    parser.add_argument("--config", help="an MCP config file (Claude Desktop, Cursor, Claude Code, VS Code)")
    parser.add_argument("--server", action="append", help="a server command line or URL (repeatable)")
    parser.add_argument("--model", default="gpt-4.1-mini")
    parser.add_argument("--api", choices=("chat", "responses"), default="chat")
    parser.add_argument("--strict", action="store_true", help="ask for strict function schemas")
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--base-url", default=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"))
    args = parser.parse_args(argv)
    if "OPENAI_API_KEY" not in os.environ:
        parser.error("set OPENAI_API_KEY")
    with mcp_sync.ClientGroup(servers_from(args), timeout=60) as group:
        for name, error in group.errors.items():
            print(f"(server {name} is not available: {error})", file=sys.stderr)
        answer = (responses_loop if args.api == "responses" else chat_loop)(args, group)
    print(answer if isinstance(answer, str) else json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main())
