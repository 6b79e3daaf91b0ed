"""In-memory and logged peers shared by several test files (#22.10: test modules no longer
import each other): ``Wire`` (records what the engine sends, answers nothing), ``LockedWire``
(the same, thread-safe), ``EncodingWire`` (the same, refusing what JSON cannot carry, as real
transports do), ``FakeTransport`` (answers each request from a handler) and ``Peer`` (the fault
server with a wire log and an optional script)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any, Callable

import mcp_sync
from mcp_sync.transports.base import BaseTransport

from conftest import PY, fault_args

#: A modern server/discover answer for FakeTransport: tools (listChanged), resources (subscribe).
DISCOVER = {
    "resultType": "complete",
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {"listChanged": True}, "resources": {"subscribe": True}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}},
}


class Wire(BaseTransport):
    """An in-memory transport: records what is sent, answers nothing by itself."""

    name = "wire"

    def __init__(self) -> None:
        self.sink: Any = None
        self.sent: list[dict] = []

    def start(self, sink: Any) -> None:
        self.sink = sink

    def send(self, message: dict, *, headers: Any = None) -> None:
        self.sent.append(message)

    def abort(self, request_id: Any) -> bool:
        return False

    def configure(self, **_: Any) -> None: ...

    def close(self) -> None: ...


class LockedWire(Wire):
    """The in-memory transport, thread-safe, plus the requests it carried."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def send(self, message: dict, *, headers: Any = None) -> None:
        with self.lock:
            self.sent.append(message)

    def requests(self) -> list[dict]:
        with self.lock:
            return [m for m in self.sent if "id" in m and "method" in m]


class EncodingWire(LockedWire):
    """Encodes like a real transport: what JSON cannot carry raises before anything is sent."""

    def send(self, message: dict, *, headers: Any = None) -> None:
        json.dumps(message, allow_nan=False)
        super().send(message, headers=headers)


class FakeTransport(BaseTransport):
    """An in-memory Transport: ``handler(method, params)`` returns a result dict, or
    ``{"error": {...}}`` for an error answer. Answers synchronously from ``send``."""

    name = "fake"

    def __init__(self, handler: Callable[[str, dict], dict]) -> None:
        self.handler = handler
        self.sink: Any = None
        self.sent: list[tuple[str, dict]] = []
        self.auth_context: Any = None
        self.lock = threading.Lock()

    def start(self, sink: Any) -> None:
        self.sink = sink

    def configure(self, **_: Any) -> None:
        pass

    def abort(self, request_id: Any) -> bool:
        return False

    def close(self) -> None:
        pass

    def send(self, message: dict, *, headers: Any = None) -> None:
        if "method" not in message or "id" not in message:
            return
        params = message.get("params") or {}
        with self.lock:
            self.sent.append((message["method"], params))
        answer = self.handler(message["method"], params)
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        reply.update(answer if "error" in answer else {"result": answer})
        self.sink.message(reply)

    def count(self, method: str) -> int:
        with self.lock:
            return sum(1 for sent, _ in self.sent if sent == method)


class Peer:
    """A fault server with a wire log and an optional script."""

    def __init__(self, tmp_path: Path, script: dict | None = None, *extra: str) -> None:
        self.log = tmp_path / "sent.jsonl"
        self.log.touch()
        self.args = [*fault_args("--log", str(self.log), *extra)]
        if script is not None:
            path = tmp_path / "script.json"
            path.write_text(json.dumps(script), encoding="utf-8")
            self.args += ["--script", str(path)]

    def client(self, **options: Any) -> mcp_sync.Client:
        return mcp_sync.Client.stdio(PY, self.args, **options)

    def sent(self) -> list[Any]:
        lines = self.log.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def requests(self, method: str | None = None) -> list[dict]:
        return [m for m in self.sent() if isinstance(m, dict) and "id" in m and "method" in m
                and (method is None or m["method"] == method)]


def text(body: str) -> dict:
    return {"resultType": "complete", "content": [{"type": "text", "text": body}], "isError": False}
