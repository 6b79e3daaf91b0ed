"""A scripted stdio MCP server for connect and shutdown cases real servers will not act out.

Run:  python lifecycle_server.py [--era dual|modern|legacy] [--start-delay S] [--silent]
                                 [--discover-error nodata|empty] [--init-error CODE]
                                 [--linger S] [--ignore-eof] [--announce]

Python 3.9+, standard library only; newline-delimited JSON-RPC 2.0 on stdin/stdout.

- ``--era``: ``dual`` (default) answers ``server/discover`` (2026-07-28) and
  ``initialize`` (2025-11-25); ``modern`` answers ``initialize`` with -32601;
  ``legacy`` answers ``server/discover`` with -32601.
- ``--start-delay S``: sleeps S seconds before reading anything (a cold start).
- ``--silent``: reads every line and never answers (a server that hangs).
- ``--discover-error nodata``: ``server/discover`` gets -32022 with no ``data``;
  ``empty``: -32022 with ``data: {"supported": []}``.
- ``--init-error CODE``: ``initialize`` gets a JSON-RPC error with that code.
- ``--linger S``: on end of stdin, and on SIGTERM, keeps running S more seconds
  (a server slow to exit); SIGKILL still ends it.
- ``--ignore-eof``: on end of stdin keeps running until a signal ends it (SIGTERM does; a
  server that does not take EOF as its cue, but is no harder to stop).
- ``--announce``: writes ``started <pid>`` to stderr first, and ``stdin closed`` when its
  stdin ends (so a test knows when a client has started it, and when it began closing it).
- ``--doomed-if FILE``: when FILE exists, exits (code 9) right after answering
  its first request (a server that dies as soon as it has started).
- ``subscriptions/listen``: acknowledged at once, then left open.

Tools: ``echo`` {text}; ``slow`` {seconds}: answers after that long; ``pid``:
the process id as text. Each request runs on its own thread.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

MODERN, LEGACY = "2026-07-28", "2025-11-25"
INFO = {"name": "lifecycle-server", "version": "1.0"}
CAPS = {"tools": {"listChanged": True}}
TOOLS = [
    {"name": n, "inputSchema": {"type": "object"}} for n in ("echo", "slow", "pid")
]
_write = threading.Lock()


def send(message: dict) -> None:
    with _write:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer(request_id: object, result: dict | None = None, error: dict | None = None) -> None:
    message: dict = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    send(message)


def handle(args: argparse.Namespace, message: dict) -> None:
    method, request_id = message.get("method"), message.get("id")
    params = message.get("params") or {}
    modern = "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
    if method == "server/discover":
        if args.era == "legacy":
            return answer(request_id, error={"code": -32601, "message": "Method not found"})
        if args.discover_error == "nodata":
            return answer(request_id, error={"code": -32022, "message": "Unsupported protocol version"})
        if args.discover_error == "empty":
            return answer(request_id, error={"code": -32022, "message": "Unsupported", "data": {"supported": []}})
        answer(request_id, {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": CAPS,
                            "_meta": {"io.modelcontextprotocol/serverInfo": INFO}})
        if args.doomed_if and os.path.exists(args.doomed_if):
            os._exit(9)
        return None
    if method == "subscriptions/listen":
        meta = {"io.modelcontextprotocol/subscriptionId": request_id}
        return send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                     "params": {"notifications": params.get("notifications") or {}, "_meta": meta}})
    if method == "initialize":
        if args.init_error is not None:
            return answer(request_id, error={"code": args.init_error, "message": "initialize refused"})
        if args.era == "modern":
            return answer(request_id, error={"code": -32601, "message": "Method not found"})
        return answer(request_id, {"protocolVersion": LEGACY, "capabilities": CAPS, "serverInfo": INFO})
    if method == "tools/list":
        return answer(request_id, {"tools": TOOLS, **({"resultType": "complete"} if modern else {})})
    if method == "tools/call":
        name, arguments = params.get("name"), params.get("arguments") or {}
        if name == "slow":
            time.sleep(float(arguments.get("seconds", 1)))
            text = "slept"
        elif name == "pid":
            text = str(os.getpid())
        else:
            text = str(arguments.get("text", ""))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
        return answer(request_id, {**result, **({"resultType": "complete"} if modern else {})})
    if method == "ping":
        return answer(request_id, {})
    if request_id is not None:
        answer(request_id, error={"code": -32601, "message": f"Method not found: {method}"})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--era", choices=["dual", "modern", "legacy"], default="dual")
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--silent", action="store_true")
    parser.add_argument("--discover-error", choices=["nodata", "empty"])
    parser.add_argument("--init-error", type=int)
    parser.add_argument("--linger", type=float, default=0.0)
    parser.add_argument("--doomed-if")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--announce", action="store_true")
    args = parser.parse_args()
    if args.linger:
        signal.signal(signal.SIGTERM, lambda *_: None)
    if args.announce:
        sys.stderr.write(f"started {os.getpid()}\n")
        sys.stderr.flush()
    time.sleep(args.start_delay)
    for line in sys.stdin:
        if args.silent or not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and "method" in message:
            threading.Thread(target=handle, args=(args, message), daemon=True).start()
    if args.announce:
        sys.stderr.write("stdin closed\n")
        sys.stderr.flush()
    while args.ignore_eof:
        time.sleep(60)
    time.sleep(args.linger)
    os._exit(0)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        os._exit(0)
