"""Talking to an MCP server over Streamable HTTP (and seeing which era it speaks).

Run: pip install -e '.[test]' && python examples/http_client.py
(it starts the official Python SDK's server from tests/servers/sdk_server.py on a local port)
"""

import subprocess
import sys
import threading
from pathlib import Path

import mcp_sync

SERVER = Path(__file__).resolve().parent.parent / "tests" / "servers" / "sdk_server.py"

server = subprocess.Popen(  # without --port it binds a free port, and says which on stderr
    [sys.executable, str(SERVER), "http"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
)
try:
    assert server.stderr is not None
    line = b""
    while not line.startswith(b"LISTENING "):  # its first lines may be log lines
        line = server.stderr.readline()
        if not line:
            raise SystemExit("the example server did not start")
    url = f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    threading.Thread(target=server.stderr.read, daemon=True).start()  # keep its log from filling the pipe
    for mode in ("auto", "legacy"):  # auto finds the modern era; legacy forces the initialize handshake
        with mcp_sync.Client.http(url, mode=mode, headers={"X-Example": "yes"}) as client:
            print(f"{mode}: {client.era} {client.protocol_version}")
            print("  tools:", [tool.name for tool in client.tools()])
            steps = client.call_tool("slow", {"seconds": 0.3}, progress=lambda done, total, msg: print("  ", msg))
            print("  slow:", steps.text)
finally:
    server.terminate()
    server.wait(5)
