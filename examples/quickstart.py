"""Quick start: connect to a server over stdio, list its tools, call one.

Run: python examples/quickstart.py
"""

import sys
from pathlib import Path

import mcp_sync

SERVER = str(Path(__file__).with_name("demo_server.py"))

with mcp_sync.Client.stdio(sys.executable, [SERVER]) as client:
    print(f"connected: {client.server_implementation['name']} ({client.era}, {client.protocol_version})")
    for tool in client.tools():
        print(f"tool: {tool.name} - {tool.description}")
    print("echo:", client.call_tool("echo", {"text": "hi"}).text)
    print("add:", client.call_tool("add", {"a": 2, "b": 3}).structured_content)
    result = client.call_tool(
        "countdown", {"n": 3}, progress=lambda done, total, message: print(f"  progress {done}/{total}: {message}")
    )
    print("countdown:", result.text)
    print("resource:", client.read_resource("demo://readme").text)
