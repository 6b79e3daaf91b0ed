"""Talking to an MCP server over Streamable HTTP (and seeing which era it speaks).

Run: pip install -e '.[test]' && python examples/http_client.py
(it starts the official Python SDK's server from tests/servers/sdk_server.py on a local port)
"""

import socket
import subprocess
import sys
import time
from pathlib import Path

import mcp_sync

SERVER = Path(__file__).resolve().parent.parent / "tests" / "servers" / "sdk_server.py"

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
server = subprocess.Popen(
    [sys.executable, str(SERVER), "http", "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
)
url = f"http://127.0.0.1:{port}/mcp"
try:
    for _ in range(100):  # wait (at most 10 s) for the server to listen
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    for mode in ("auto", "legacy"):  # auto finds the modern era; legacy forces the initialize handshake
        with mcp_sync.Client.http(url, mode=mode, headers={"X-Example": "yes"}) as client:
            print(f"{mode}: {client.era} {client.protocol_version}")
            print("  tools:", [tool.name for tool in client.tools()])
            steps = client.call_tool("slow", {"seconds": 0.3}, progress=lambda done, total, msg: print("  ", msg))
            print("  slow:", steps.text)
finally:
    server.terminate()
    server.wait(5)
