"""An MCP server over stdio whose tools break their own declared schemas on request.

Run:  python schema_server.py [--ref-url URL]

Standard library only. Legacy era (``initialize``; ``server/discover`` gets
-32601, so ``mode="auto"`` falls back at once). Tools, all with an
``outputSchema``:

- ``weather`` {city: string (required), mode: "good" | "bad" | "none" | "error"}:
  outputSchema ``{temp: number (required)}``; "good" answers ``{"temp": 21.5}``,
  "bad" ``{"temp": "warm"}``, "none" no structuredContent, "error" ``isError``
  with no structuredContent.
- ``tuple`` {}: outputSchema in draft-07 (``"items": [{"type": "string"}]``,
  tuple form) and answers ``[1]``: a mismatch at ``$[0]`` only if the draft-07
  dialect is honoured (in 2020-12 the array form of ``items`` is not valid).
- ``remote`` {}: outputSchema ``{"$ref": <--ref-url>}`` (a network reference) and
  answers ``{"x": 1}``.
- ``list_count`` {}: outputSchema ``{n: integer}``; answers how many
  ``tools/list`` requests this process has received.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

OBJECT = "object"
parser = argparse.ArgumentParser()
parser.add_argument("--ref-url", default="http://127.0.0.1:9/never.json")
ARGS = parser.parse_args()

TOOLS = [
    {
        "name": "weather",
        "inputSchema": {
            "type": OBJECT,
            "properties": {"city": {"type": "string"}, "mode": {"enum": ["good", "bad", "none", "error"]}},
            "required": ["city"],
        },
        "outputSchema": {"type": OBJECT, "properties": {"temp": {"type": "number"}}, "required": ["temp"]},
    },
    {
        "name": "tuple",
        "inputSchema": {"type": OBJECT},
        "outputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]},
    },
    {"name": "remote", "inputSchema": {"type": OBJECT}, "outputSchema": {"$ref": ARGS.ref_url}},
    {
        "name": "list_count",
        "inputSchema": {"type": OBJECT},
        "outputSchema": {"type": OBJECT, "properties": {"n": {"type": "integer"}}},
    },
]
lists = 0


def result(structured: Any = None, text: str = "ok", is_error: bool = False) -> dict[str, Any]:
    answer: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": is_error}
    if structured is not None:
        answer["structuredContent"] = structured
    return answer


def call_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    if name == "weather":
        mode = args.get("mode", "good")
        if mode == "error":
            return result(text="no such city", is_error=True)
        return result({"good": {"temp": 21.5}, "bad": {"temp": "warm"}}.get(mode))
    if name == "tuple":
        return result([1])
    if name == "remote":
        return result({"x": 1})
    if name == "list_count":
        return result({"n": lists}, text=str(lists))
    raise LookupError(f"unknown tool {name!r}")


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    global lists
    if method == "initialize":
        return {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "schema-server", "version": "1.0"}}
    if method == "ping":
        return {}
    if method == "tools/list":
        lists += 1
        return {"tools": TOOLS}
    if method == "tools/call":
        return call_tool(str(params.get("name")), params.get("arguments") or {})
    raise NotImplementedError(method)


def main() -> None:
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = answer(message["method"], message.get("params") or {})
        except LookupError as exc:
            reply["error"] = {"code": -32602, "message": str(exc)}
        except NotImplementedError as exc:
            reply["error"] = {"code": -32601, "message": f"method not found: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
