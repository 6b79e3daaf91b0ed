"""A Flask app whose request threads share one mcp_sync client.

Run: pip install flask && python examples/flask_app.py
Then: curl 'http://127.0.0.1:5000/echo?text=hi'

The client is created once at start-up and closed at exit; Flask's threaded
server calls it from many request threads at once, which is safe. The same
pattern works in Django (create the client in AppConfig.ready()).
"""

import atexit
import sys
from pathlib import Path

from flask import Flask, jsonify, request

import mcp_sync

SERVER = str(Path(__file__).with_name("demo_server.py"))

mcp = mcp_sync.Client.stdio(sys.executable, [SERVER], timeout=10)
atexit.register(mcp.close)
app = Flask(__name__)


@app.get("/tools")
def tools():  # type: ignore[no-untyped-def]
    return jsonify([tool.name for tool in mcp.tools()])


@app.get("/echo")
def echo():  # type: ignore[no-untyped-def]
    try:
        result = mcp.call_tool("echo", {"text": request.args.get("text", "")}, timeout=5)
    except mcp_sync.MCPError as exc:  # timeouts, server errors, a dead server: all MCPError
        return jsonify(error=str(exc)), 502
    return jsonify(text=result.text)


if __name__ == "__main__":
    app.run(threaded=True)
