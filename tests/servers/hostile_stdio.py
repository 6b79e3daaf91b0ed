"""A hostile MCP server over stdio: what a broken or malicious server does to its pipes.

Run:  python hostile_stdio.py [--banner] [--silent] [--stderr TEXT]

Python 3.9+, standard library only. A legacy (2025-11-25) server: it answers
``initialize`` and ``tools/call``; ``server/discover`` gets -32601, so a client
in ``mode="auto"`` falls back to the handshake at once. Every answer is one
line on stdout.

Options
  ``--banner``   print "Server starting on port 3000" on stdout before anything.
  ``--silent``   read stdin but never answer anything (with ``--banner``: the
                 server that prints a banner and hangs).
  ``--stderr T`` write the line T to stderr at start.

Tools (``tools/call``; the answer's text is given below)
  ``echo`` {text}: text.
  ``emit`` {b64}: first writes the base64-decoded bytes to stdout followed by a
      newline (garbage of any kind), then answers "emitted".
  ``stall_stdin``: answers "stalling", then never reads stdin again (the
      process sleeps until it is killed): the client's writes fill the pipe.
  ``spawn_and_exit``: starts a grandchild (``sleep``) that inherits stdout and
      stderr, answers with the grandchild's pid, then exits with code 0 while
      the grandchild keeps the pipes open.
  ``spawn_child``: starts a grandchild (``sleep``) in the server's process group,
      answers with its pid and keeps serving.
  ``spawn_escaped``: starts a grandchild in a session of its own (outside the
      server's process group, so a group signal misses it) that inherits stdout
      and stderr; answers with its pid and keeps serving.
  ``hold``: no answer until ``release`` is called; remembers its request id.
  ``held``: how many ``hold`` requests wait (so a test knows its hold arrived).
  ``release``: answers the held request with "released", then answers "ok".
  ``big_nested`` {bytes, id_first}: answers with a line of about ``bytes``
      bytes whose result contains, before the bulk, an object with
      ``"id": <the held request's id>``; the envelope's own ``id`` comes first
      when ``id_first`` is true, last otherwise.
  ``stderr_blob`` {mb}: writes ``mb`` MiB of "x" to stderr without a newline,
      then "\\nend of blob\\n", then answers "blob".
  ``die_by_signal``: kills itself with SIGKILL, unanswered.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time

OUT = sys.stdout.buffer
held: list = []


def write_line(data: bytes) -> None:
    OUT.write(data + b"\n")
    OUT.flush()


def answer(request_id: object, result: object) -> None:
    write_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode())


def text(request_id: object, value: str) -> None:
    answer(request_id, {"content": [{"type": "text", "text": value}], "isError": False})


def call_tool(request_id: object, name: str, args: dict) -> None:
    if name == "echo":
        text(request_id, str(args.get("text", "")))
    elif name == "emit":
        write_line(base64.b64decode(args["b64"]))
        text(request_id, "emitted")
    elif name == "stall_stdin":
        text(request_id, "stalling")
        time.sleep(3600)
    elif name == "spawn_and_exit":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        text(request_id, str(child.pid))
        os._exit(0)
    elif name == "spawn_child":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        text(request_id, str(child.pid))
    elif name == "spawn_escaped":
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
        text(request_id, str(child.pid))
    elif name == "hold":
        held.append(request_id)
    elif name == "release":
        for waiting in held:
            text(waiting, "released")
        held.clear()
        text(request_id, "ok")
    elif name == "held":
        text(request_id, str(len(held)))
    elif name == "big_nested":
        if not held:  # the nested id must name a held request, or the test would check nothing
            write_line(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                   "error": {"code": -32000, "message": "big_nested: nothing is held"}}).encode())
            return
        other = held[0]
        bulk = "x" * int(args.get("bytes", 2_000_000))
        result = {"content": [{"type": "text", "text": "n", "meta": {"id": other}}, {"type": "text", "text": bulk}]}
        if args.get("id_first"):
            message = {"jsonrpc": "2.0", "id": request_id, "result": result}
        else:
            message = {"jsonrpc": "2.0", "result": result, "id": request_id}
        write_line(json.dumps(message).encode())
    elif name == "stderr_blob":
        err = sys.stderr.buffer
        block = b"x" * (1 << 20)
        for _ in range(int(args.get("mb", 8))):
            err.write(block)
        err.write(b"\nend of blob\n")
        err.flush()
        text(request_id, "blob")
    elif name == "die_by_signal":
        os.kill(os.getpid(), signal.SIGKILL)
    else:
        error = {"code": -32602, "message": f"unknown tool {name}"}
        write_line(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())


def main() -> None:
    argv = sys.argv[1:]
    if "--stderr" in argv:
        sys.stderr.write(argv[argv.index("--stderr") + 1] + "\n")
        sys.stderr.flush()
    if "--banner" in argv:
        write_line(b"Server starting on port 3000")
    silent = "--silent" in argv
    for raw in sys.stdin.buffer:
        if silent:
            continue
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            continue
        request_id, method, params = message["id"], message["method"], message.get("params") or {}
        if method == "initialize":
            answer(request_id, {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile-stdio", "version": "1.0"},
            })
        elif method == "tools/call":
            call_tool(request_id, params.get("name", ""), params.get("arguments") or {})
        elif method == "ping":
            answer(request_id, {})
        else:
            write_line(json.dumps({"jsonrpc": "2.0", "id": request_id,
                                   "error": {"code": -32601, "message": f"Method not found: {method}"}}).encode())


if __name__ == "__main__":
    main()
