"""A scripted legacy MCP server over stdio for load and envelope tests: it answers out of order,
stalls, dies on request and writes whatever raw lines it is told to.

Run:  python load_server.py [--cancel-log PATH]

Python 3.9+, standard library only. Wire format: newline-delimited JSON-RPC 2.0 on
stdin/stdout; every write is one whole line under a lock. Handshake: ``initialize``
(echoes the client's protocolVersion) and ``ping``; ``server/discover`` gets -32601,
so clients use ``mode="legacy"``. Every request runs on its own daemon thread, so
answers come back in whatever order their delays end.

Tools (``tools/call``; ``tools/list`` lists them):
  - ``echo`` {text, delay (s, default 0)}: after ``delay`` answers
    ``{"content": [{"type": "text", "text": text}], "isError": false}``.
  - ``stall``: never answers.
  - ``slow`` {seconds}: answers "slept" after ``seconds`` unless a
    ``notifications/cancelled`` names it first (then never answers).
  - ``die``: exits at once with code 3, unanswered.
  - ``progress`` {count, interval}: sends ``count`` progress notifications
    (when the request has a progressToken), ``interval`` s apart, then answers "done".
  - ``replay`` {lines: [str]}: writes each string as one raw line on stdout,
    then answers "replayed <n>".
  - ``answer_with_id`` {id}: answers this request with ``id`` replaced by the given
    JSON value (e.g. ``[1]``, ``{}``, or the request's id as a float).
  - ``flood`` {count}: sends ``count`` notifications ``notifications/flood``
    (params ``{"n": i}``), then answers "flooded <count>".
  - ``cancelled_log``: text = JSON list of every ``requestId`` named by a
    ``notifications/cancelled`` this process received.
With ``--cancel-log PATH`` each cancelled ``requestId`` is also appended to PATH
as one JSON line (survives the process, for tests that kill it).
On end of stdin the process exits (code 0) at once, or after ``--linger S``
seconds (a server that takes its time to shut down).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

_lock = threading.Lock()
_cancelled: list = []
_cancel_events: dict = {}
_cancel_log = None
TOOLS = ["echo", "stall", "slow", "die", "progress", "replay", "answer_with_id", "flood", "cancelled_log"]


def write_line(text: str) -> None:
    with _lock:
        try:
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            os._exit(0)


def send(message: dict) -> None:
    write_line(json.dumps(message))


def text_result(request_id, text: str) -> None:
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": False}})


def call_tool(request_id, params: dict) -> None:
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        delay = float(args.get("delay", 0))
        if delay:
            time.sleep(delay)
        text_result(request_id, str(args.get("text", "")))
    elif name == "stall":
        return
    elif name == "slow":
        event = _cancel_events.setdefault(json.dumps(request_id), threading.Event())
        if not event.wait(float(args.get("seconds", 1))):
            text_result(request_id, "slept")
    elif name == "die":
        sys.stderr.write("dying now\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "progress":
        token = (params.get("_meta") or {}).get("progressToken")
        count, interval = int(args.get("count", 3)), float(args.get("interval", 0.1))
        for step in range(1, count + 1):
            time.sleep(interval)
            if token is not None:
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": step, "total": count}})
        text_result(request_id, "done")
    elif name == "replay":
        lines = args.get("lines") or []
        for line in lines:
            write_line(str(line).replace("\n", " "))
        text_result(request_id, f"replayed {len(lines)}")
    elif name == "answer_with_id":
        answer_id = args.get("id")
        if answer_id == "float":
            answer_id = float(request_id)
        send({"jsonrpc": "2.0", "id": answer_id,
              "result": {"content": [{"type": "text", "text": "odd id"}], "isError": False}})
    elif name == "flood":
        count = int(args.get("count", 1000))
        for n in range(count):
            send({"jsonrpc": "2.0", "method": "notifications/flood", "params": {"n": n}})
        text_result(request_id, f"flooded {count}")
    elif name == "cancelled_log":
        text_result(request_id, json.dumps(_cancelled))
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}})


def handle(message: dict) -> None:
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method == "notifications/cancelled":
        cancelled = params.get("requestId")
        with _lock:
            _cancelled.append(cancelled)
            if _cancel_log:
                with open(_cancel_log, "a") as log:
                    log.write(json.dumps(cancelled) + "\n")
        _cancel_events.setdefault(json.dumps(cancelled), threading.Event()).set()
        return
    if request_id is None or method is None:
        return
    if method == "initialize":
        version = params.get("protocolVersion") or "2025-11-25"
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": version, "capabilities": {"tools": {}},
            "serverInfo": {"name": "load-server", "version": "1.0"}}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id,
              "result": {"tools": [{"name": n, "inputSchema": {"type": "object"}} for n in TOOLS]}})
    elif method == "tools/call":
        call_tool(request_id, params)
    else:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}})


def main() -> None:
    global _cancel_log
    if "--cancel-log" in sys.argv:
        _cancel_log = sys.argv[sys.argv.index("--cancel-log") + 1]
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict):
            threading.Thread(target=handle, args=(message,), daemon=True).start()
    if "--linger" in sys.argv:
        time.sleep(float(sys.argv[sys.argv.index("--linger") + 1]))
    os._exit(0)


if __name__ == "__main__":
    main()
