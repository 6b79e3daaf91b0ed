"""A Flask app serving many users through one mcp_sync client, each with their own token.

Run: pip install flask
     python examples/demo_http_server.py 8765 &
     MCP_URL=http://127.0.0.1:8765/mcp python examples/flask_users.py
Then: curl -H 'Authorization: Bearer alice-token' http://127.0.0.1:5000/whoami   -> alice
      curl -H 'Authorization: Bearer bob-token' http://127.0.0.1:5000/whoami     -> bob

One client, made once, holds the connection and the threads; each web request
binds a view with the user's own credentials (``client.bind``), which costs
no request. The view's results are cached for that user only. On a legacy
HTTP server each user gets an MCP session of their own.
"""

import atexit
import os

from flask import Flask, jsonify, request

import mcp_sync

mcp = mcp_sync.Client.http(os.environ.get("MCP_URL", "http://127.0.0.1:8765/mcp"), timeout=10)
atexit.register(mcp.close)
app = Flask(__name__)


def as_user() -> mcp_sync.BoundClient:
    """The client, seen with the credentials of the user of this web request."""
    return mcp.bind(headers={"Authorization": request.headers.get("Authorization", "")})


@app.get("/whoami")
def whoami():  # type: ignore[no-untyped-def]
    try:
        return jsonify(user=as_user().call_tool("whoami").text)
    except mcp_sync.ServerUnavailable as exc:  # overloaded: tell the browser when to come back
        return jsonify(error=str(exc)), 503, {"Retry-After": str(int(exc.retry_after or 1))}
    except mcp_sync.MCPError as exc:
        return jsonify(error=str(exc)), 502


@app.get("/tools")
def tools():  # type: ignore[no-untyped-def]
    return jsonify([tool.name for tool in as_user().tools()])


if __name__ == "__main__":
    app.run(threaded=True)
