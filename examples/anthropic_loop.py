"""A Claude model using the tools of MCP servers: the whole agent loop in one page.

Run (a real API key is needed; nothing else is sent anywhere):

    ANTHROPIC_API_KEY=sk-ant-... python examples/anthropic_loop.py "What is 2 + 40? Use the tools."
    python examples/anthropic_loop.py --config ~/Library/Application\\ Support/Claude/claude_desktop_config.json "..."

It uses the ``anthropic`` package when it is installed, else plain ``requests``.
Tool results go back as ``tool_result`` blocks, images included, with
``is_error`` set when a tool failed or the model called it wrongly, so the loop
goes on and the model can correct itself.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import mcp_sync

DEMO_SERVER = str(Path(__file__).resolve().parent / "demo_server.py")
API_VERSION = "2023-06-01"


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
    """One Messages API request, as a plain dict (SDK objects are dumped)."""
    try:
        import anthropic
    except ImportError:
        import requests

        response = requests.post(
            f"{args.base_url.rstrip('/')}/v1/messages",
            headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": API_VERSION},
            json=body,
            timeout=120,
        )
        response.raise_for_status()
        return dict(response.json())
    client = anthropic.Anthropic(base_url=args.base_url)
    return dict(client.messages.create(**body).model_dump(exclude_none=True))


def loop(args: argparse.Namespace, group: mcp_sync.ClientGroup) -> str:
    messages: list[dict[str, Any]] = [{"role": "user", "content": args.prompt}]
    tools = group.to_anthropic_tools()
    for _ in range(args.max_turns):
        body = {"model": args.model, "max_tokens": args.max_tokens, "messages": messages, "tools": tools}
        reply = ask_model(args, body)
        messages.append({"role": "assistant", "content": reply["content"]})
        calls = [block for block in reply["content"] if block.get("type") == "tool_use"]
        if not calls:
            return "".join(block.get("text", "") for block in reply["content"] if block.get("type") == "text")
        results = []
        for call in calls:
            print(f"-> {call['name']}({call['input']})", file=sys.stderr)
            results.append(group.run_tool_call(call, format="anthropic"))
        messages.append({"role": "user", "content": results})
    return "(stopped after --max-turns)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Let a Claude model use the tools of MCP servers.")
    parser.add_argument("prompt", help="what to ask the model")
    parser.add_argument("--config", help="an MCP config file (Claude Desktop, Cursor, Claude Code, VS Code)")
    parser.add_argument("--server", action="append", help="a server command line or URL (repeatable)")
    parser.add_argument("--model", default="claude-sonnet-4-5")
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--max-turns", type=int, default=10)
    parser.add_argument("--base-url", default=os.environ.get("ANTHROPIC_BASE_URL", "https://api.anthropic.com"))
    args = parser.parse_args(argv)
    if "ANTHROPIC_API_KEY" not in os.environ:
        parser.error("set ANTHROPIC_API_KEY")
    with mcp_sync.ClientGroup(servers_from(args), timeout=60) as group:
        for name, error in group.errors.items():
            print(f"(server {name} is not available: {error})", file=sys.stderr)
        print(loop(args, group))
    return 0


if __name__ == "__main__":
    sys.exit(main())
