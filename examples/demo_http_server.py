"""A tiny MCP server over Streamable HTTP for the examples: standard library only, modern era.

Its one tool, ``whoami``, answers with the user that the request's
``Authorization: Bearer <token>`` header names (tokens ``alice-token`` and
``bob-token``), so a web app can show whose credentials reached the server.

Run: python examples/demo_http_server.py 8765   (serves http://127.0.0.1:8765/mcp)
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODERN = "2026-07-28"
USERS = {"Bearer alice-token": "alice", "Bearer bob-token": "bob"}
WHOAMI = {"name": "whoami", "description": "Who the caller is.", "inputSchema": {"type": "object"}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.headers.get("MCP-Protocol-Version") != MODERN:  # modern only: the client detects it
            return self.reply(400, {"jsonrpc": "2.0", "id": request.get("id"),
                                    "error": {"code": -32022, "message": "unsupported",
                                              "data": {"supported": [MODERN]}}})
        method = request.get("method")
        if method == "server/discover":
            result: dict[str, Any] = {"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                                      "serverInfo": {"name": "demo-http", "version": "1.0"}}
        elif method == "tools/list":
            result = {"tools": [WHOAMI], "ttlMs": 60_000, "cacheScope": "private"}
        elif method == "tools/call":
            user = USERS.get(self.headers.get("Authorization", ""), "anonymous")
            result = {"content": [{"type": "text", "text": user}]}
        else:
            return self.reply(404, {"jsonrpc": "2.0", "id": request.get("id"),
                                    "error": {"code": -32601, "message": f"no {method}"}})
        self.reply(200, {"jsonrpc": "2.0", "id": request.get("id"), "result": {"resultType": "complete", **result}})

    def do_GET(self) -> None:
        self.reply(405, {})

    def reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port: int) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    return server


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 8765).serve_forever()
