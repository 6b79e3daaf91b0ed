"""A script (or notebook cell) that talks to an OAuth-protected MCP server.

Run: python examples/oauth_browser.py https://mcp.example.com/mcp

On the first 401 the system browser opens at the authorization server (over SSH
or in a container the URL is printed instead: open it anywhere that can reach
this machine's 127.0.0.1:8765, e.g. through `ssh -L 8765:127.0.0.1:8765`).
The redirect is caught on http://127.0.0.1:8765/callback; tokens go to a private
file, so the next run starts without a browser and refreshes tokens as they age.
"""

import functools
import sys

import mcp_sync

url = sys.argv[1] if len(sys.argv) > 1 else "https://mcp.example.com/mcp"
auth = mcp_sync.OAuth(
    client_name="mcp-sync example",
    redirect_uri="http://127.0.0.1:8765/callback",
    on_authorize=functools.partial(mcp_sync.auth.browser_authorize, timeout=180),
    token_store=mcp_sync.FileTokenStore("~/.config/mcp-sync-example/tokens.json"),
)
try:
    with mcp_sync.Client.http(url, auth=auth) as client:
        for tool in client.tools():
            print(tool.name, "-", tool.description or "")
except mcp_sync.InsufficientScopeError as exc:
    print(f"the server wants scope {exc.scope!r}: {exc.error_description}", file=sys.stderr)
except mcp_sync.AuthorizationError as exc:  # exc.step: discovery, registration, authorization or token
    print(f"authorization failed ({exc.step} at {exc.url}): {exc}", file=sys.stderr)
