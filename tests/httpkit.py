"""A tiny scriptable HTTP server for transport tests: it records every request
and answers like a minimal MCP server (modern or legacy), unless a test's
``override`` answers first. For what real servers will not show on demand:
header presence, redirects, gzip bombs, 503s, broken streams. Below HTTP,
``RawServer`` misbehaves on the socket itself (resets, garbage, silence); ``Sink``
records what a transport driven directly reports."""

from __future__ import annotations

import gzip
import json
import queue
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable, Iterator, Optional

import attrs

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


@attrs.define
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float = attrs.Factory(time.monotonic)  # when it arrived

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def rpc_method(self) -> str | None:
        data = self.json
        return data.get("method") if isinstance(data, dict) else None


@attrs.define
class Reply:
    status: int = 200
    headers: dict[str, str] = attrs.Factory(dict)
    body: bytes | Iterable[bytes] = b""  # an iterable is streamed chunked, each item flushed
    #: HTTP/1.0 style: ``Connection: close``, no length, no chunking; the body ends when the server closes
    close_delimited: bool = False


def json_reply(obj: Any, status: int = 200, **headers: str) -> Reply:
    return Reply(status, {"Content-Type": "application/json", **headers}, json.dumps(obj).encode())


def sse_reply(*events: str, **headers: str) -> Reply:
    """Each event is the raw text of one block (without the blank line)."""
    return Reply(200, {"Content-Type": "text/event-stream", **headers}, [e.encode() + b"\n\n" for e in events])


def endless_sse(first: bytes = b"") -> Iterator[bytes]:
    """An SSE body that never ends (keep-alive comments), until the client goes away."""
    if first:
        yield first
    while True:
        yield b": ping\n\n"
        time.sleep(0.02)


def gzip_reply(obj_bytes: bytes, content_type: str = "application/json") -> Reply:
    return Reply(200, {"Content-Type": content_type, "Content-Encoding": "gzip"}, gzip.compress(obj_bytes))


def result(request: Request, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request.json["id"], "result": value}


Override = Callable[[Request], Optional[Reply]]


def answering(rpc_method: str, reply: Reply) -> Override:
    """An override that answers every ``rpc_method`` request with ``reply`` (and nothing else)."""
    return lambda request: reply if request.rpc_method == rpc_method else None


class _QuietServer(ThreadingHTTPServer):
    """A client that hangs up before its answer is written (a cancelled or timed-out call, the
    point of many tests here) is no error of the server's: not printed as one."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class FakeServer:
    """``era`` "modern" answers the enveloped requests and refuses ``initialize``
    like a modern-only server; "legacy" answers the probe with a plain 400 and
    runs sessions. ``tools`` is what tools/list returns; tools/call echoes its
    arguments as text."""

    def __init__(
        self,
        era: str = "modern",
        tools: list[dict[str, Any]] | None = None,
        tls: tuple[str, str] | None = None,
        port: int = 0,
    ) -> None:
        self.era = era
        self.tools = tools if tools is not None else [{"name": "echo", "inputSchema": {"type": "object"}}]
        self.override: Override | None = None
        self.keep_alive = True  # False: every answer closes its connection
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        self.sessions: set[str] = set()
        self._server = _QuietServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._server.fake = self  # type: ignore[attr-defined]
        self.scheme = "http"
        if tls is not None:  # (certfile, keyfile): serve HTTPS
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"
        self._thread = threading.Thread(target=self._server.serve_forever, name="httpkit", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/mcp"

    def __enter__(self) -> FakeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def seen(self, rpc_method: str | None = None, http_method: str | None = None) -> list[Request]:
        with self.lock:
            return [
                r
                for r in self.requests
                if (rpc_method is None or r.rpc_method == rpc_method)
                and (http_method is None or r.method == http_method)
            ]

    # -- the default behaviour ---------------------------------------------------------

    def answer(self, request: Request) -> Reply:
        if self.override is not None:
            reply = self.override(request)
            if reply is not None:
                return reply
        if request.method == "DELETE":
            self.sessions.discard(request.headers.get("mcp-session-id", ""))
            return Reply(200)
        if request.method == "GET":
            return Reply(405)
        body = request.json
        method = body.get("method") if isinstance(body, dict) else None
        if self.era == "modern":
            return self._modern(request, method)
        return self._legacy(request, method)

    def _modern(self, request: Request, method: str | None) -> Reply:
        if request.headers.get("mcp-protocol-version") != MODERN:
            return json_reply({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "modern only"}}, 400)
        if method == "server/discover":
            caps = {"tools": {}, "resources": {}, "prompts": {}}
            return json_reply(result(request, {"supportedVersions": [MODERN], "capabilities": caps}))
        return self._common(request, method)

    def _legacy(self, request: Request, method: str | None) -> Reply:
        if method == "initialize":
            session = f"s{len(self.sessions) + 1}-{id(request)}"
            self.sessions.add(session)
            init = {
                "protocolVersion": LEGACY,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake", "version": "1"},
            }
            return json_reply(result(request, init), **{"Mcp-Session-Id": session})
        if request.headers.get("mcp-session-id") not in self.sessions:
            return Reply(404 if "mcp-session-id" in request.headers else 400, {}, b"no session")
        if method is None or "id" not in request.json:
            return Reply(202)
        return self._common(request, method)

    def _common(self, request: Request, method: str | None) -> Reply:
        params = request.json.get("params") or {}
        if method == "tools/list":
            return json_reply(result(request, {"tools": self.tools}))
        if method == "tools/call":
            text = json.dumps(params.get("arguments"), sort_keys=True)
            return json_reply(result(request, {"content": [{"type": "text", "text": text}]}))
        error = {"code": -32601, "message": f"no {method}"}
        return json_reply({"jsonrpc": "2.0", "id": request.json.get("id"), "error": error}, 404)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        fake: FakeServer = self.server.fake  # type: ignore[attr-defined]
        with fake.lock:
            fake.requests.append(request)
        reply = fake.answer(request)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not fake.keep_alive and not reply.close_delimited:
            self.send_header("Connection", "close")
            self.close_connection = True
        if reply.close_delimited:
            self.send_header("Connection", "close")
            self.end_headers()
            self.close_connection = True
            try:
                for chunk in [reply.body] if isinstance(reply.body, bytes) else reply.body:
                    self.wfile.write(chunk)
                    self.wfile.flush()
            except OSError:
                pass
            return
        if isinstance(reply.body, bytes):
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for chunk in reply.body:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            self.close_connection = True

    do_GET = do_POST = do_DELETE = _handle


class SsePeer:
    """A scripted HTTP+SSE (2024-11-05) server on a FakeServer: GET opens the event stream
    (first the endpoint event), POSTs to /message are recorded in ``posted`` and answered on
    the stream. tools/call "echo" echoes its arguments, "hang" is never answered, "stall" is
    not even acknowledged (its POST waits for ``release``), "drop" ends the stream at once (a
    server dropping the session); ``drop()`` does so from the test, ``push(block)`` sends a raw
    event block, and ``prelude`` is sent before the endpoint event."""

    def __init__(self, fake: FakeServer) -> None:
        self.fake = fake
        self.posted: list[dict[str, Any]] = []
        self.events: queue.Queue[bytes | None] = queue.Queue()  # the latest stream's
        self.stop = threading.Event()
        self.release = threading.Event()
        self.prelude = b""
        self.streams = 0
        fake.override = self._answer

    def __enter__(self) -> SsePeer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()  # ends the stream generators still running
        self.release.set()

    def drop(self) -> None:
        self.events.put(None)

    def push(self, block: bytes) -> None:
        self.events.put(block)

    def seen(self, method: str) -> list[dict[str, Any]]:
        with self.fake.lock:
            return [m for m in self.posted if m.get("method") == method]

    def _stream(self, events: queue.Queue[bytes | None]) -> Iterable[bytes]:
        if self.prelude:
            yield self.prelude
        yield b"event: endpoint\ndata: /message?s=1\n\n"
        while not self.stop.is_set():
            try:
                item = events.get(timeout=0.2)
            except queue.Empty:
                yield b": ping\n\n"  # finds a stream the client has closed
                continue
            if item is None:
                return
            yield item

    def _send(self, message: dict[str, Any]) -> None:
        self.events.put(b"event: message\ndata: " + json.dumps(message).encode() + b"\n\n")

    def _answer(self, request: Request) -> Reply | None:
        if request.method == "GET":
            self.streams += 1
            self.events = queue.Queue()  # a stream the client gave up (a probe) must not take events
            return Reply(200, {"Content-Type": "text/event-stream"}, self._stream(self.events))
        if request.method != "POST" or not request.path.startswith("/message"):
            return Reply(404)
        message = request.json
        with self.fake.lock:
            self.posted.append(message)
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message or method is None:
            return Reply(202)
        if method == "initialize":
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": params.get("protocolVersion", "2024-11-05"), "capabilities": {"tools": {}},
                "serverInfo": {"name": "sse-peer", "version": "1"}}})
        elif method == "tools/list":
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"tools": self.fake.tools}})
        elif method == "tools/call" and params.get("name") == "echo":
            text = json.dumps(params.get("arguments"), sort_keys=True)
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {"content": [{"type": "text", "text": text}]}})
        elif method == "tools/call" and params.get("name") == "drop":
            self.drop()
        elif method == "tools/call" and params.get("name") == "hang":
            pass
        elif method == "tools/call" and params.get("name") == "stall":
            self.release.wait(10)
        else:
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        return Reply(202)


class Sink:
    """A MessageSink that records what a transport reports (for tests that drive a transport
    directly, without a client)."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.failures: list[tuple[Any, Exception]] = []
        self.closures: list[Exception] = []
        self.renewals = 0

    def message(self, message: Any) -> None:
        self.messages.append(message)

    def fail(self, request_id: Any, error: Exception) -> None:
        self.failures.append((request_id, error))

    def closed(self, error: Exception) -> None:
        self.closures.append(error)

    def session_renewed(self) -> None:
        self.renewals += 1


class RawServer:
    """A TCP server below HTTP: each connection is handed to ``behaviour(conn)`` on its own
    thread (then closed), for what no HTTP server does on purpose: reset the connection, close
    it without answering, answer bytes that are not HTTP, break off a body."""

    def __init__(self, behaviour: Callable[[socket.socket], None]) -> None:
        self.behaviour = behaviour
        self.connections = 0
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._thread = threading.Thread(target=self._accept, name="rawserver", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}/mcp"

    def __enter__(self) -> RawServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() (closing alone does not, on Linux)
        except OSError:
            pass
        self._listener.close()
        self._thread.join(5)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # the listener was closed
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                self.behaviour(conn)
            except OSError:
                pass


def read_request(conn: socket.socket) -> bytes:
    """One whole HTTP request from ``conn`` (its head, and a body of Content-Length bytes)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
    length = next((int(line.split(":", 1)[1]) for line in head.split("\r\n") if line.startswith("content-length:")), 0)
    while len(data) - len(head) - 4 < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data
