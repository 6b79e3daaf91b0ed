"""A tiny MCP server for the examples: stdio, standard library only, both eras.

It answers ``server/discover`` (modern, 2026-07-28) and ``initialize``
(legacy), so mcp_sync's ``mode="auto"`` picks modern with it. Tools: ``echo``
(text), ``add`` (a, b), ``countdown`` (n; progress, one per 0.1 s). One
resource ``demo://readme`` and one prompt ``haiku``.

Run it by hand: ``python examples/demo_server.py`` and type JSON-RPC lines.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any

MODERN = "2026-07-28"
LEGACY = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
INFO = {"name": "demo-server", "version": "1.0"}
CAPABILITIES = {"tools": {}, "resources": {}, "prompts": {}}
TOOLS = [
    {"name": "echo", "description": "Return the text.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "add", "description": "Add two numbers.",
     "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}},
    {"name": "countdown", "description": "Count down from n, reporting progress.",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
]
write_lock = threading.Lock()


def send(message: dict[str, Any]) -> None:
    with write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def text(value: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": value}], "isError": False}


def call_tool(params: dict[str, Any]) -> dict[str, Any]:
    name, args = params.get("name"), params.get("arguments") or {}
    if name == "echo":
        return text(str(args.get("text", "")))
    if name == "add":
        total = args.get("a", 0) + args.get("b", 0)
        return {**text(str(total)), "structuredContent": {"sum": total}}
    if name == "countdown":
        token = (params.get("_meta") or {}).get("progressToken")
        n = int(args.get("n", 3))
        for i in range(n):
            time.sleep(0.1)
            if token is not None:
                progress = {"progressToken": token, "progress": i + 1, "total": n, "message": f"{n - i - 1} left"}
                send({"jsonrpc": "2.0", "method": "notifications/progress", "params": progress})
        return text("liftoff")
    raise LookupError(f"unknown tool {name!r}")


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "server/discover":
        return {"supportedVersions": [MODERN], "capabilities": CAPABILITIES,
                "_meta": {"io.modelcontextprotocol/serverInfo": INFO}, "instructions": "A demo server."}
    if method == "initialize":
        asked = params.get("protocolVersion")
        return {"protocolVersion": asked if asked in LEGACY else LEGACY[0], "capabilities": CAPABILITIES,
                "serverInfo": INFO}
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        return call_tool(params)
    if method == "resources/list":
        return {"resources": [{"uri": "demo://readme", "name": "readme", "mimeType": "text/plain"}]}
    if method == "resources/read" and params.get("uri") == "demo://readme":
        return {"contents": [{"uri": "demo://readme", "mimeType": "text/plain", "text": "Hello from demo-server."}]}
    if method == "prompts/list":
        return {"prompts": [{"name": "haiku", "arguments": [{"name": "topic", "required": True}]}]}
    if method == "prompts/get":
        topic = (params.get("arguments") or {}).get("topic", "the sea")
        message = {"role": "user", "content": {"type": "text", "text": f"Write a haiku about {topic}."}}
        return {"messages": [message]}
    raise LookupError(f"unknown method or params: {method}")


def handle(message: dict[str, Any]) -> None:
    params = message.get("params") or {}
    modern = "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
    try:
        result = answer(message["method"], params)
        if modern:
            result = {"resultType": "complete", **result}
        send({"jsonrpc": "2.0", "id": message["id"], "result": result})
    except LookupError as exc:
        send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32602, "message": str(exc)}})


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and "id" in message and "method" in message:
            threading.Thread(target=handle, args=(message,), daemon=True).start()


if __name__ == "__main__":
    main()
