"""Run a stdio MCP server and add one tool of your own to every ``tools/list`` answer it gives.

Run:  python add_tool_proxy.py TOOL_JSON COMMAND [ARG ...]

``TOOL_JSON`` is one tool object (``{"name": ..., "description": ..., "inputSchema": ...}``),
appended to the ``tools`` of each successful ``tools/list`` result, whatever the era (both
answer ``tools/list`` with ``result.tools``). For tests that need a real server's whole
behaviour plus one tool it does not offer, e.g. a hostile description shown in a notebook
(tests/test_example_notebook.py). Everything else passes through unchanged, line by line;
the server's stderr is the proxy's. Standard library only (Python 3.9+). When the client
closes stdin the server's stdin is closed too, and the proxy exits with the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any, BinaryIO


def _list_ids(line: bytes, ids: set[Any], lock: threading.Lock) -> None:
    """Remember the id of a client's ``tools/list`` request (any other line: nothing)."""
    try:
        message = json.loads(line)
    except ValueError:
        return
    if isinstance(message, dict) and message.get("method") == "tools/list" and "id" in message:
        with lock:
            ids.add(json.dumps(message["id"]))


def _with_tool(line: bytes, tool: dict[str, Any], ids: set[Any], lock: threading.Lock) -> bytes:
    """``line`` with ``tool`` added when it answers a remembered ``tools/list`` request."""
    try:
        message = json.loads(line)
    except ValueError:
        return line
    if not isinstance(message, dict) or "id" not in message or not isinstance(message.get("result"), dict):
        return line
    with lock:
        key = json.dumps(message["id"])
        if key not in ids:
            return line
        ids.discard(key)
    tools = message["result"].get("tools")
    if isinstance(tools, list):
        tools.append(tool)
    return (json.dumps(message) + "\n").encode()


def _answers(server_out: BinaryIO, tool: dict[str, Any], ids: set[Any], lock: threading.Lock) -> None:
    for line in server_out:
        sys.stdout.buffer.write(_with_tool(line, tool, ids, lock))
        sys.stdout.buffer.flush()


def main() -> int:
    tool, command = json.loads(sys.argv[1]), sys.argv[2:]
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    ids: set[Any] = set()
    lock = threading.Lock()
    answers = threading.Thread(target=_answers, args=(server.stdout, tool, ids, lock), daemon=True)
    answers.start()
    for line in sys.stdin.buffer:
        _list_ids(line, ids, lock)
        try:
            server.stdin.write(line)
            server.stdin.flush()
        except BrokenPipeError:
            break
    server.stdin.close()
    try:
        code = server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        code = server.wait()
    answers.join(5)
    return code


if __name__ == "__main__":
    sys.exit(main())
