"""A long-lived agent loop: it watches the server for changes, shows the server's log
messages, and answers the server when a tool needs input from the user.

Run: pip install -e '.[test]' && python examples/agent_loop.py
(uses the official Python SDK's server from tests/servers/sdk_server.py as the peer)
"""

import logging
import sys
from pathlib import Path

import mcp_sync

SERVER = str(Path(__file__).resolve().parent.parent / "tests" / "servers" / "sdk_server.py")
logging.basicConfig(level=logging.INFO, format="%(name)s %(levelname)s %(message)s")


def ask_user(params: dict) -> dict:
    """An elicitation handler: a real app would show a form; this one fills in a name."""
    print(f"server asks: {params['message']}")
    return {"action": "accept", "content": {"name": "Ada"}}


with mcp_sync.Client.stdio(sys.executable, [SERVER, "stdio"], on_elicitation=ask_user, log_level="info") as client:
    print("tools:", [tool.name for tool in client.tools()])
    with client.listen(tools_list_changed=True) as changes:
        print(client.call_tool("ask_name").text)          # the server asks back; the handler answers
        client.call_tool("add_tool", {"name": "weather"})  # the server adds a tool and says so
        for method, _params in changes:                     # ends when the subscription closes
            print("changed:", method, "->", [tool.name for tool in client.tools()])
            break
