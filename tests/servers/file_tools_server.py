"""A legacy-era stdio MCP server whose tools come from a JSON file.

Run:  python file_tools_server.py TOOLS.json

Standard library only. ``TOOLS.json`` is a list of tools as ``tools/list`` gives them, each
with optional fields the server keeps to itself:

- ``result``: a call answers it as ``structuredContent`` (with the text "ok");
- ``refuse_nulls``: a call whose arguments hold a null anywhere answers -32602, as
  server-filesystem does (the text of a successful call is its tool and arguments as JSON).

``initialize`` and ``ping`` are answered; anything else gets -32601.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PRIVATE = ("result", "refuse_nulls")


def has_null(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if item is None:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def call(tool: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    if "result" in tool:
        return {"result": {"content": [{"type": "text", "text": "ok"}], "structuredContent": tool["result"]}}
    if tool.get("refuse_nulls") and has_null(args):
        return {"error": {"code": -32602, "message": "Invalid arguments: expected a value, received null"}}
    text = json.dumps({"tool": tool["name"], "args": args}, sort_keys=True)
    return {"result": {"content": [{"type": "text", "text": text}]}}


def main() -> None:
    tools = json.load(open(sys.argv[1]))
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
            continue
        method, params = msg["method"], msg.get("params") or {}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
        if method == "initialize":
            reply["result"] = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                               "serverInfo": {"name": "file-tools", "version": "1"}}
        elif method == "ping":
            reply["result"] = {}
        elif method == "tools/list":
            reply["result"] = {"tools": [{k: v for k, v in t.items() if k not in PRIVATE} for t in tools]}
        elif method == "tools/call":
            tool = next(t for t in tools if t["name"] == params.get("name"))
            reply.update(call(tool, params.get("arguments") or {}))
        else:
            reply["error"] = {"code": -32601, "message": "no such method"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
