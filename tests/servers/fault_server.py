"""A scriptable MCP server over stdio for testing what well-behaved servers never do.

Run:  python fault_server.py [--era modern|legacy|dual] [--behaviour NAME ...]
                             [--version V] [--supported V1,V2] [--delay S]
                             [--exit-after N] [--ttl-ms MS] [--cache-scope S]
                             [--script FILE] [--log FILE]

Python 3.9+, standard library only.  Wire format: newline-delimited JSON-RPC 2.0
on stdin/stdout.  Diagnostics go to stderr, one plain line each.

Eras (``--era``, default ``dual``)
----------------------------------
- ``modern`` (revision 2026-07-28): answers ``server/discover``; ``initialize``
  and ``ping`` get -32601 Method not found.
- ``legacy`` (2025-11-25 and older): answers ``initialize`` and ``ping``;
  ``server/discover`` gets -32601.  Request ``_meta`` is ignored.
- ``dual``: both.  Each request is judged on its own: one whose
  ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion`` is a
  modern request, any other is a legacy request.

Modern requests
  The version in ``_meta`` must be "2026-07-28", else the answer is -32022
  with data ``{"supported": ["2026-07-28"], "requested": <version>}``.  In
  era ``modern`` a request without that ``_meta`` key gets -32602 (a
  ``server/discover`` without it is answered anyway).  Every modern result
  carries ``"resultType": "complete"``.  No result carries caching hints
  (``ttlMs``), so a client must treat every result as immediately stale,
  unless behaviour ``cache-hints`` is on.
``server/discover``
  ``{"resultType": "complete", "supportedVersions": ["2026-07-28"],
  "capabilities": CAPABILITIES, "_meta": {"io.modelcontextprotocol/serverInfo":
  {"name": "fault-server", "version": "1.0"}}, "instructions": "fault server"}``.
``initialize``
  ``protocolVersion`` echoes the client's when it is one of 2025-11-25,
  2025-06-18, 2025-03-26 or 2024-11-05, else "2025-11-25"; plus the same
  capabilities, ``serverInfo`` and ``instructions``.
  ``notifications/initialized`` is accepted silently; ``ping`` answers ``{}``.
  ``logging/setLevel`` answers ``{}`` in every era.

Tools (``tools/list`` returns all six, in this order, on one page)
  - ``echo`` {text}: answers ``{"content": [{"type": "text", "text": text}],
    "isError": false}``.
  - ``slow`` {seconds (default 1)}: works in 5 equal steps; after each step
    sends ``notifications/progress`` (progress 1..5, total 5) when the request
    has ``params._meta.progressToken``; then answers "slept <seconds>".
    A ``notifications/cancelled`` for the request stops it at once.
  - ``die``: writes "dying now" to stderr and exits with code 3, unanswered.
  - ``counter``: text = how many requests this process has received so far,
    this one included (notifications and responses do not count).
  - ``cancelled_log``: text = JSON list of every ``requestId`` named by a
    ``notifications/cancelled`` this process received, in arrival order.
  - ``stderr_flood`` {lines (default 20000)}: writes that many lines of about
    200 characters to stderr, then answers "wrote <lines> lines".
  An unknown tool gets -32602.

Resources, prompts, completion
  ``resources/list``: one resource ``test://a``.  ``resources/read`` of
  ``test://a`` gives the text "A"; any other URI gets -32602 for a modern
  request and -32002 for a legacy one.  ``resources/templates/list``: none.
  ``prompts/list``: one prompt ``greet`` (argument ``name``);
  ``prompts/get greet`` gives one user message "Hello, <name>!"; any other
  name gets -32602.  ``completion/complete``: the values among "alpha",
  "beta", "gamma" that start with ``argument.value``.
  Any other method gets -32601.

Always, whatever the behaviours
  - Requests run concurrently, one daemon thread each, so ``slow`` never
    holds up ``echo``; every write to stdout is one whole line under a lock.
  - A request named by ``notifications/cancelled`` (params ``requestId``)
    before its answer was written is never answered (MUST NOT on stdio).
  - Lines that are not JSON get -32700; JSON that is not a JSON-RPC message
    gets -32600 (both with id null).  Responses from the client are logged to
    stderr.
  - On end of stdin the process exits at once with code 0, whatever is still
    running (``os._exit``: no thread can keep it alive or block shutdown).
    A broken stdout pipe also ends it with code 0.

Behaviours (``--behaviour NAME``, repeatable)
  ``garbage``
      Before every answer, writes four lines no client may choke on: a
      non-JSON line, ``{"hello": 1}``, a response to an id nobody sent, and
      an empty line.
  ``endless-cursor``
      ``tools/list`` returns only ``echo`` and a fresh ``nextCursor`` "c1",
      "c2", ... on every call, so pagination never ends.
  ``repeat-cursor``
      ``tools/list`` returns only ``echo`` and always ``nextCursor`` "same".
  ``paged``
      ``tools/list`` returns the six tools as 3 pages of 2: no cursor -> page
      1 (nextCursor "p2"), "p2" -> page 2 (nextCursor "p3"), "p3" -> page 3
      (no nextCursor); other cursors get -32602.  Each page request is logged
      to stderr as "tools/list page request cursor=<cursor>" (None first).
  ``slow-discover``
      Never answers ``server/discover`` (even in era ``legacy``), like a
      legacy server that silently drops unknown methods; ``initialize`` works.
  ``unsupported-version``
      ``server/discover`` and every other modern request get -32022 with data
      ``{"supported": <--supported list>, "requested": <version>}``.
      ``--supported`` is comma-separated, default "2025-11-25" (a modern
      error listing only legacy revisions); "1999-01-01" lists neither.
  ``bad-handshake-version``
      ``initialize`` answers ``protocolVersion`` "1999-01-01".
  ``huge-line``
      ``echo`` answers with a text of 2 MiB, so the answer is one line of
      a little over 2 MiB.
  ``die-on-discover``
      Exits with code 5 as soon as it receives ``server/discover`` (in any
      era), unanswered: the client must restart it and go to ``initialize``.
  ``lock-era``
      Once this process has received a ``server/discover``, ``initialize``
      gets -32600 "era locked" (a server that fixes its era per process).
  ``ping-client``
      On ``notifications/initialized`` sends the request
      ``{"jsonrpc": "2.0", "id": "srv-ping-1", "method": "ping"}`` to the
      client; its answer is logged to stderr as "got ping answer: <json>".
  ``exit-after`` (alias ``exit-after-N``)
      Exits with code 7 right after writing its N-th answer (results and
      errors alike), N from ``--exit-after`` (default 1).  ``--exit-after N`` alone also
      turns this on.
  ``slow-all``
      Delays every answer (not progress notifications) by ``--delay``
      seconds, default 0.5.
  ``cache-hints``
      Modern results of ``server/discover``, the four list methods and
      ``resources/read`` carry ``"ttlMs": --ttl-ms`` (default 50) and
      ``"cacheScope": --cache-scope`` (default "public").  ``--ttl-ms`` alone
      also turns this on.
  ``no-listen-ack``
      ``subscriptions/listen`` is never acknowledged (the request stays open).

Unlisted tools (modern requests; any era flag)
  ``mrtr_ask`` {tag}: answers ``input_required`` asking ``name`` (an
  ``elicitation/create`` form); the retry must echo ``requestState`` (which
  carries ``tag``: a state from another call is refused with -32602); then
  answers the JSON ``{"tag", "responses"}`` it got.  ``mrtr_many`` {tag}: the
  same with two requests, ``roots`` (roots/list) and ``llm``
  (sampling/createMessage).  ``mrtr_endless``: asks again on every round.
  ``mrtr_shed``: answers state-only ``input_required`` (load shedding) twice,
  then "done after 2 retries".

  ``notify_changed`` {kind: "tools"|"prompts"|"resources"}: sends
  ``notifications/<kind>/list_changed`` to every open listen whose filter
  asked for it (with its subscriptionId); on a legacy request, once, plainly.
  ``notify_updated`` {uri}: ``notifications/resources/updated`` likewise, to
  the listens whose ``resourceSubscriptions`` hold ``uri``.
  ``end_listens`` {how: "result"|"cancel"}: ends every open listen, with its
  final result or with ``notifications/cancelled`` naming it.  Each of
  these three answers "<n> listens" (how many it reached; legacy: 0).

  ``getenv`` {name}: the value of that environment variable in the server
  process, or "<unset>".

  ``task_job`` {plan}: with the tasks extension declared on the request,
  answers ``resultType: "task"`` and serves ``tasks/get|update|cancel``
  (see ``task_request`` for the plans); without it, a plain result.

``subscriptions/listen`` (modern requests only; legacy ones get -32601)
  Acknowledges with ``notifications/subscriptions/acknowledged`` carrying the
  subscriptionId (the request id) and the truthy entries of the filter, then
  stays open until the client cancels it (never answered then) or
  ``end_listens`` ends it.  It counts as a request for ``counter``.

``--version V`` sets the server version reported in serverInfo (default
"1.0").

Scripted answers and a log of what the client sent
  ``--log FILE`` appends every line received on stdin to FILE as it arrives
  (before anything else is done with it).
  ``--script FILE`` reads a JSON object from FILE: keys are a method
  ("tools/list") or a method and a name ("tools/call echo", "prompts/get
  greet", "resources/read test://a", "tasks/get task-1"; the name is
  ``params.name``, ``params.uri`` or ``params.taskId``), values are lists of
  steps. A request whose key (the longer one first) is in the script takes the
  next step of its list (the last step repeats): ``{"send": [messages]}``
  writes those messages first (any string "$request_id" in them becomes the
  request's id), then ``{"result": R}`` answers ``R`` exactly as written (no
  ``resultType`` added), ``{"error": E}`` answers the error ``E``, and neither
  leaves the request unanswered. Other requests are handled as usual.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any, NoReturn

JsonObject = dict[str, Any]
RequestId = Any  # str or int on the wire

MODERN_VERSION = "2026-07-28"
LEGACY_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
CACHEABLE = (
    "server/discover",
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
)
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
SERVER_NAME = "fault-server"
INSTRUCTIONS = "fault server"
CAPABILITIES: JsonObject = {
    "tools": {"listChanged": True},
    "resources": {},
    "prompts": {},
    "completions": {},
    "logging": {},
    "extensions": {TASKS_EXTENSION: {}},  # task_job makes tasks
}

BEHAVIOURS = (
    "garbage",
    "endless-cursor",
    "repeat-cursor",
    "paged",
    "slow-discover",
    "unsupported-version",
    "bad-handshake-version",
    "huge-line",
    "die-on-discover",
    "lock-era",
    "ping-client",
    "exit-after",
    "slow-all",
    "cache-hints",
    "no-listen-ack",
)
BEHAVIOUR_ALIASES = {"exit-after-N": "exit-after"}

TOOLS: list[JsonObject] = [
    {
        "name": "echo",
        "description": "Return the given text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
    {
        "name": "slow",
        "description": "Sleep in 5 steps, reporting progress; cancellable.",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
        },
    },
    {
        "name": "die",
        "description": "Exit the server process with code 3 without answering.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "counter",
        "description": "How many requests this server process has received.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "cancelled_log",
        "description": "JSON list of request ids named by notifications/cancelled.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "stderr_flood",
        "description": "Write many long lines to stderr, then answer.",
        "inputSchema": {"type": "object", "properties": {"lines": {"type": "integer"}}},
    },
]
# paged: cursor -> (page number, next cursor)
PAGES: dict[str | None, tuple[int, str | None]] = {
    None: (1, "p2"),
    "p2": (2, "p3"),
    "p3": (3, None),
}
PAGE_SIZE = 2
RESOURCES = {"test://a": "A"}
COMPLETIONS = ("alpha", "beta", "gamma")
HUGE_TEXT_BYTES = 2 * 1024 * 1024
SERVER_PING_ID = "srv-ping-1"


class RpcError(Exception):
    """A JSON-RPC error to send back as the answer to the current request."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


class NoAnswer(Exception):
    """The current request must stay unanswered (silence or cancellation)."""


@dataclass(frozen=True)
class Options:
    """The command line, parsed."""

    era: str
    behaviours: frozenset[str]
    server_version: str
    supported: tuple[str, ...]
    delay: float
    exit_after: int
    ttl_ms: int = 50
    cache_scope: str = "public"
    script: Any = None  # --script: {key: [step, ...]}
    log_path: str | None = None  # --log


@dataclass(frozen=True)
class Request:
    """One incoming request, with the facts every handler needs."""

    id: RequestId
    method: str
    params: JsonObject
    modern: bool  # carries a protocol version in _meta and is treated as modern
    cancelled: threading.Event


@dataclass
class Listen:
    """One open ``subscriptions/listen`` request."""

    id: RequestId
    honored: JsonObject
    ended: threading.Event
    how: str = "result"  # how end_listens ends it: "result" or "cancel"


class FaultServer:
    """Reads stdin, runs each request on its own daemon thread, writes stdout."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._stdout_lock = threading.Lock()
        self._stderr_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._received = 0  # requests received, for the counter tool
        self._tasks: dict[str, JsonObject] = {}  # task_job tasks by id
        self._answered = 0  # answers written, for exit-after
        self._cursor_serial = 0  # for endless-cursor
        self._discover_seen = False  # for lock-era
        self._cancelled_ids: list[RequestId] = []
        self._in_flight: dict[RequestId, threading.Event] = {}
        self._listens: dict[RequestId, Listen] = {}  # open subscriptions/listen requests

    def has(self, behaviour: str) -> bool:
        return behaviour in self.options.behaviours

    # ----------------------------------------------------------------- I/O

    def log(self, text: str) -> None:
        with self._stderr_lock:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def write_line(self, line: str) -> None:
        with self._stdout_lock:
            self._write_unlocked(line)

    def _write_unlocked(self, line: str) -> None:
        try:
            sys.stdout.buffer.write(line.encode("utf-8") + b"\n")
            sys.stdout.buffer.flush()
        except (BrokenPipeError, ValueError, OSError):
            os._exit(0)  # the client is gone

    def send(self, message: JsonObject) -> None:
        self.write_line(json.dumps(message))

    def exit(self, code: int) -> NoReturn:
        """End the process now; no thread can keep it alive."""
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)

    # ------------------------------------------------------------ reading

    def serve(self) -> NoReturn:
        """Read stdin until end of file, then exit with code 0."""
        log = open(self.options.log_path, "ab", buffering=0) if self.options.log_path else None
        for raw in iter(sys.stdin.buffer.readline, b""):
            if log is not None:
                log.write(raw)
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                self.on_line(line)
        self.exit(0)

    def on_line(self, line: str) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self.log(f"not JSON: {line[:200]}")
            self.send(error_message(None, RpcError(-32700, "Parse error")))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.send(error_message(None, RpcError(-32600, "Invalid Request")))
            return
        if "method" not in message:
            self.on_response(message)
        elif "id" not in message:
            self.on_notification(message)
        else:
            self.on_request(message)

    def on_response(self, message: JsonObject) -> None:
        if message.get("id") == SERVER_PING_ID:
            self.log(f"got ping answer: {json.dumps(message)}")
        else:
            self.log(f"got response for unknown id: {json.dumps(message)}")

    def on_notification(self, message: JsonObject) -> None:
        method = message["method"]
        params = message.get("params")
        if not isinstance(params, dict):
            params = {}
        if method == "notifications/cancelled":
            request_id = params.get("requestId")
            self.log(f"cancelled: {json.dumps(request_id)}")
            with self._state_lock:
                self._cancelled_ids.append(request_id)
                event = self._in_flight.get(request_id) if is_id(request_id) else None
            if event is not None:
                event.set()
        elif method == "notifications/initialized":
            if self.has("ping-client"):
                self.send({"jsonrpc": "2.0", "id": SERVER_PING_ID, "method": "ping"})
        else:
            self.log(f"ignored notification: {method}")

    def on_request(self, message: JsonObject) -> None:
        request_id = message["id"]
        method = message["method"]
        params = message.get("params")
        if params is None:
            params = {}
        if (
            not is_id(request_id)
            or not isinstance(method, str)
            or not isinstance(params, dict)
        ):
            self.send(error_message(None, RpcError(-32600, "Invalid Request")))
            return
        modern = self.options.era != "legacy" and requested_version(params) is not None
        request = Request(request_id, method, params, modern, threading.Event())
        with self._state_lock:
            self._received += 1
            self._in_flight[request_id] = request.cancelled
        thread = threading.Thread(
            target=self.run_request,
            args=(request,),
            name=f"request-{request_id}",
            daemon=True,
        )
        thread.start()

    # ----------------------------------------------------------- answering

    def run_request(self, request: Request) -> None:
        """Body of a request's thread: handle it, then answer it (or not)."""
        try:
            step = self.scripted(request)
            if step is not None:
                for message in step.get("send", ()):
                    self.send(with_request_id(message, request.id))
                if "result" in step:
                    self.answer(request, result_message(request.id, step["result"]))
                elif "error" in step:
                    self.answer(request, {"jsonrpc": "2.0", "id": request.id, "error": step["error"]})
                return
            try:
                answer = result_message(request.id, self.handle(request))
            except RpcError as error:
                answer = error_message(request.id, error)
            except (TypeError, ValueError, AttributeError) as error:  # bad arguments
                answer = error_message(
                    request.id, RpcError(-32603, f"Internal error: {error}")
                )
            self.answer(request, answer)
        except NoAnswer:
            self.log(f"no answer for request {json.dumps(request.id)}")
        finally:
            with self._state_lock:
                self._in_flight.pop(request.id, None)

    def scripted(self, request: Request) -> JsonObject | None:
        """``--script``: the next scripted step for this request, or None."""
        script = self.options.script or {}
        name = next((request.params.get(k) for k in ("name", "uri", "taskId") if k in request.params), None)
        for key in (f"{request.method} {name}", request.method):
            steps = script.get(key)
            if steps:
                with self._state_lock:
                    return steps.pop(0) if len(steps) > 1 else steps[0]
        return None

    def answer(self, request: Request, answer: JsonObject) -> None:
        """Write one answer, applying slow-all, garbage and exit-after."""
        if self.has("slow-all"):
            request.cancelled.wait(self.options.delay)
        line = json.dumps(answer)
        with self._stdout_lock:
            if request.cancelled.is_set():
                raise NoAnswer
            if self.has("garbage"):
                for junk in garbage_lines():
                    self._write_unlocked(junk)
            self._write_unlocked(line)
            with self._state_lock:
                self._answered += 1
                answered = self._answered
            if self.has("exit-after") and answered >= self.options.exit_after:
                self.log(f"exiting after {answered} answers")
                self.exit(7)

    def handle(self, request: Request) -> JsonObject:
        """Return the result of one request, or raise RpcError / NoAnswer."""
        if request.method == "server/discover":
            return self.discover(request)
        if request.method in ("initialize", "ping") and self.options.era == "modern":
            raise RpcError(-32601, "Method not found")
        if request.method not in ("initialize", "ping"):
            self.check_modern(request)
        handler = {
            "initialize": self.initialize,
            "ping": self.empty,
            "tools/list": self.list_tools,
            "tools/call": self.call_tool,
            "resources/list": self.list_resources,
            "resources/templates/list": self.list_resource_templates,
            "resources/read": self.read_resource,
            "prompts/list": self.list_prompts,
            "prompts/get": self.get_prompt,
            "completion/complete": self.complete,
            "logging/setLevel": self.empty,
            "subscriptions/listen": self.listen,
            "tasks/get": self.task_request,
            "tasks/update": self.task_request,
            "tasks/cancel": self.task_request,
        }.get(request.method)
        if handler is None:
            raise RpcError(-32601, "Method not found")
        result = handler(request)
        if request.modern:
            result = {"resultType": "complete", **result}
        return self.cache_hints(request, result)

    def cache_hints(self, request: Request, result: JsonObject) -> JsonObject:
        """``cache-hints``: ttlMs and cacheScope on modern cacheable results."""
        if self.has("cache-hints") and request.modern and request.method in CACHEABLE:
            return {**result, "ttlMs": self.options.ttl_ms, "cacheScope": self.options.cache_scope}
        return result

    def check_modern(self, request: Request) -> None:
        """Apply the version rules to a request handled under modern semantics."""
        if self.options.era == "modern" and not request.modern:
            raise RpcError(-32602, f"Missing _meta {META_VERSION}")
        if not request.modern:
            return
        requested = requested_version(request.params)
        if self.has("unsupported-version"):
            raise unsupported_version(list(self.options.supported), requested)
        if requested != MODERN_VERSION:
            raise unsupported_version([MODERN_VERSION], requested)

    # ----------------------------------------------------------- lifecycle

    def discover(self, request: Request) -> JsonObject:
        return self.cache_hints(request, self.discover_result(request))

    def discover_result(self, request: Request) -> JsonObject:
        with self._state_lock:
            self._discover_seen = True
        if self.has("die-on-discover"):
            self.log("server/discover received: exiting with code 5")
            self.exit(5)
        if self.has("slow-discover"):
            raise NoAnswer
        if self.options.era == "legacy":
            raise RpcError(-32601, "Method not found")
        requested = requested_version(request.params)
        if self.has("unsupported-version"):
            raise unsupported_version(list(self.options.supported), requested)
        if requested is not None and requested != MODERN_VERSION:
            raise unsupported_version([MODERN_VERSION], requested)
        return {
            "resultType": "complete",
            "supportedVersions": [MODERN_VERSION],
            "capabilities": CAPABILITIES,
            "_meta": {META_SERVER_INFO: self.server_info()},
            "instructions": INSTRUCTIONS,
        }

    def initialize(self, request: Request) -> JsonObject:
        with self._state_lock:
            locked = self._discover_seen
        if self.has("lock-era") and locked:
            raise RpcError(-32600, "era locked")
        requested = request.params.get("protocolVersion")
        version = requested if requested in LEGACY_VERSIONS else LEGACY_VERSIONS[0]
        if self.has("bad-handshake-version"):
            version = "1999-01-01"
        return {
            "protocolVersion": version,
            "capabilities": CAPABILITIES,
            "serverInfo": self.server_info(),
            "instructions": INSTRUCTIONS,
        }

    def empty(self, request: Request) -> JsonObject:
        return {}

    def server_info(self) -> JsonObject:
        return {"name": SERVER_NAME, "version": self.options.server_version}

    # --------------------------------------------------------------- tools

    def list_tools(self, request: Request) -> JsonObject:
        cursor = request.params.get("cursor")
        if self.has("endless-cursor"):
            with self._state_lock:
                self._cursor_serial += 1
                fresh = f"c{self._cursor_serial}"
            return {"tools": TOOLS[:1], "nextCursor": fresh}
        if self.has("repeat-cursor"):
            return {"tools": TOOLS[:1], "nextCursor": "same"}
        if self.has("paged"):
            self.log(f"tools/list page request cursor={cursor}")
            if cursor not in PAGES:
                raise RpcError(-32602, "Invalid cursor", {"cursor": cursor})
            page, next_cursor = PAGES[cursor]
            result: JsonObject = {
                "tools": TOOLS[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
            }
            if next_cursor is not None:
                result["nextCursor"] = next_cursor
            return result
        if cursor is not None:
            raise RpcError(-32602, "Invalid cursor", {"cursor": cursor})
        return {"tools": TOOLS}

    def call_tool(self, request: Request) -> JsonObject:
        name = request.params.get("name")
        arguments = request.params.get("arguments") or {}
        if name == "echo":
            text = (
                "x" * HUGE_TEXT_BYTES
                if self.has("huge-line")
                else str(arguments.get("text", ""))
            )
            return text_result(text)
        if name == "slow":
            return self.slow(request, float(arguments.get("seconds", 1.0)))
        if name == "die":
            self.log("dying now")
            self.exit(3)
        if name == "counter":
            with self._state_lock:
                return text_result(str(self._received))
        if name == "cancelled_log":
            with self._state_lock:
                return text_result(json.dumps(self._cancelled_ids))
        if name == "stderr_flood":
            lines = int(arguments.get("lines", 20000))
            self.flood_stderr(lines)
            return text_result(f"wrote {lines} lines")
        if isinstance(name, str) and name.startswith("mrtr_"):
            return self.mrtr(name, arguments, request.params)
        if name == "getenv":
            return text_result(os.environ.get(str(arguments.get("name")), "<unset>"))
        if name == "task_job":
            return self.start_task(request, arguments)
        if name in ("notify_changed", "notify_updated", "end_listens"):
            return self.listen_tool(request, name, arguments)
        raise RpcError(-32602, f"Unknown tool: {name}")

    # ------------------------------------------------------- subscriptions

    def listen(self, request: Request) -> JsonObject:
        """``subscriptions/listen``: acknowledge, then stay open until cancelled or ended."""
        if not request.modern:
            raise RpcError(-32601, "Method not found")
        wanted = request.params.get("notifications")
        honored = {k: v for k, v in (wanted or {}).items() if v} if isinstance(wanted, dict) else {}
        listen = Listen(request.id, honored, threading.Event())
        with self._state_lock:
            self._listens[request.id] = listen
        try:
            if not self.has("no-listen-ack"):
                self.notify(listen, "notifications/subscriptions/acknowledged", {"notifications": honored})
            while not (request.cancelled.is_set() or listen.ended.is_set()):
                request.cancelled.wait(0.05)
        finally:
            with self._state_lock:
                self._listens.pop(request.id, None)
        if request.cancelled.is_set():
            raise NoAnswer
        if listen.how == "cancel":
            self.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                       "params": {"requestId": request.id, "reason": "server shutting down"}})
            raise NoAnswer
        return {"_meta": {META_SUBSCRIPTION_ID: request.id}}

    def notify(self, listen: Listen | None, method: str, params: JsonObject) -> None:
        """Send a notification on ``listen``'s stream (with its subscriptionId), or plainly."""
        if listen is not None:
            params = {**params, "_meta": {META_SUBSCRIPTION_ID: listen.id}}
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def listen_tool(self, request: Request, name: str, arguments: JsonObject) -> JsonObject:
        """``notify_changed``, ``notify_updated`` and ``end_listens``."""
        with self._state_lock:
            listens = list(self._listens.values())
        if name == "notify_changed":
            kind = str(arguments.get("kind", "tools"))
            method, flag = f"notifications/{kind}/list_changed", f"{kind}ListChanged"
            targets = [item for item in listens if item.honored.get(flag)]
            params: JsonObject = {}
        elif name == "notify_updated":
            uri = str(arguments.get("uri", "test://a"))
            method, params = "notifications/resources/updated", {"uri": uri}
            targets = [item for item in listens if uri in (item.honored.get("resourceSubscriptions") or ())]
        else:
            for item in listens:
                item.how = str(arguments.get("how", "result"))
                item.ended.set()
            return text_result(f"{len(listens)} listens")
        if not request.modern:
            self.notify(None, method, params)
            return text_result("0 listens")
        for item in targets:
            self.notify(item, method, params)
        return text_result(f"{len(targets)} listens")

    def start_task(self, request: Request, arguments: JsonObject) -> JsonObject:
        """``task_job``: a task (tasks extension) when the request declares it, else a plain result."""
        caps = (request.params.get("_meta") or {}).get("io.modelcontextprotocol/clientCapabilities") or {}
        if TASKS_EXTENSION not in (caps.get("extensions") or {}):
            return text_result("no task: extension not declared")
        with self._state_lock:
            task_id = f"task-{len(self._tasks) + 1}"
            self._tasks[task_id] = {"polls": 0, "plan": str(arguments.get("plan", "ok")), "answers": {}}
        return {"resultType": "task", **self.task_view(task_id, "working")}

    def task_view(self, task_id: str, status: str) -> JsonObject:
        return {"taskId": task_id, "status": status, "createdAt": "2026-01-01T00:00:00Z",
                "lastUpdatedAt": "2026-01-01T00:00:00Z", "ttlMs": 60000, "pollIntervalMs": 50}

    def task_request(self, request: Request) -> JsonObject:
        """tasks/get, tasks/update, tasks/cancel for ``task_job`` tasks.

        Plans (``task_job`` argument ``plan``): "ok" works for two polls then
        completes; "ask" then needs an elicitation answer (``inputRequests``
        key "who") before it completes with the answer; "fail" fails with
        -32603; "forever" never ends. Cancel makes any task "cancelled".
        """
        task_id = request.params.get("taskId")
        with self._state_lock:
            task = self._tasks.get(task_id)
            if task is None:
                raise RpcError(-32602, f"unknown task {task_id}")
            if request.method == "tasks/cancel":
                task["cancelled"] = True
                return {}
            if request.method == "tasks/update":
                task["answers"].update(request.params.get("inputResponses") or {})
                return {}
            task["polls"] += 1
            plan, polls, answers = task["plan"], task["polls"], task["answers"]
            if task.get("cancelled"):
                return self.task_view(task_id, "cancelled")
        if polls <= 2 or plan == "forever":
            return self.task_view(task_id, "working")
        if plan == "fail":
            return {**self.task_view(task_id, "failed"), "error": {"code": -32603, "message": "job failed"}}
        if plan == "ask" and "who" not in answers:
            ask = {"method": "elicitation/create", "params": {"mode": "form", "message": "Who?", "requestedSchema": {
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}
            return {**self.task_view(task_id, "input_required"), "inputRequests": {"who": ask}}
        text = json.dumps({"polls": polls, "answers": answers}, sort_keys=True)
        return {**self.task_view(task_id, "completed"), "result": text_result(text)}

    def mrtr(self, name: str, arguments: JsonObject, params: JsonObject) -> JsonObject:
        """The unlisted ``mrtr_*`` tools: multi round-trip (input_required) answers."""
        state_text = params.get("requestState")
        responses = params.get("inputResponses")
        state = json.loads(state_text) if isinstance(state_text, str) else None
        tag = str(arguments.get("tag", ""))
        if state is not None and state.get("tag") != tag:
            raise RpcError(-32602, f"requestState of another request: {state_text}")
        rounds = state["round"] if state else 0
        next_state = json.dumps({"tag": tag, "round": rounds + 1})
        if name == "mrtr_shed":  # load shedding: state only, twice, then done
            if rounds < 2:
                return {"resultType": "input_required", "requestState": next_state}
            return text_result(f"done after {rounds} retries")
        asks: JsonObject = {
            "mrtr_ask": {"name": {"method": "elicitation/create", "params": {
                "mode": "form", "message": "Your name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                                    "required": ["name"]}}}},
            "mrtr_many": {
                "roots": {"method": "roots/list"},
                "llm": {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}},
            },
        }
        if name == "mrtr_endless" or (name in asks and not responses):
            requests = asks.get(name) or {f"q{rounds}": {"method": "roots/list"}}
            return {"resultType": "input_required", "inputRequests": requests, "requestState": next_state}
        if name in asks:
            return text_result(json.dumps({"tag": tag, "responses": responses}, sort_keys=True))
        raise RpcError(-32602, f"Unknown tool: {name}")

    def slow(self, request: Request, seconds: float) -> JsonObject:
        meta = request.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        steps = 5
        for step in range(1, steps + 1):
            if request.cancelled.wait(seconds / steps):
                self.log(
                    f"slow request {json.dumps(request.id)} cancelled at step {step}"
                )
                raise NoAnswer
            if token is not None:
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": token,
                            "progress": step,
                            "total": steps,
                            "message": f"step {step}/{steps}",
                        },
                    }
                )
        return text_result(f"slept {seconds:g}")

    def flood_stderr(self, lines: int) -> None:
        filler = "x" * 180
        batch = 1000
        for start in range(0, lines, batch):
            chunk = "".join(
                f"flood {number:06d} {filler}\n"
                for number in range(start, min(lines, start + batch))
            )
            with self._stderr_lock:
                sys.stderr.write(chunk)
                sys.stderr.flush()

    # ------------------------------------------- resources, prompts, completion

    def list_resources(self, request: Request) -> JsonObject:
        return {
            "resources": [
                {"uri": uri, "name": uri.rsplit("/", 1)[-1], "mimeType": "text/plain"}
                for uri in RESOURCES
            ]
        }

    def list_resource_templates(self, request: Request) -> JsonObject:
        return {"resourceTemplates": []}

    def read_resource(self, request: Request) -> JsonObject:
        uri = request.params.get("uri")
        if uri not in RESOURCES:
            code = -32602 if request.modern else -32002
            raise RpcError(code, "Resource not found", {"uri": uri})
        return {
            "contents": [{"uri": uri, "mimeType": "text/plain", "text": RESOURCES[uri]}]
        }

    def list_prompts(self, request: Request) -> JsonObject:
        return {
            "prompts": [
                {
                    "name": "greet",
                    "description": "Greet someone.",
                    "arguments": [{"name": "name", "required": False}],
                }
            ]
        }

    def get_prompt(self, request: Request) -> JsonObject:
        if request.params.get("name") != "greet":
            raise RpcError(-32602, f"Unknown prompt: {request.params.get('name')}")
        arguments = request.params.get("arguments") or {}
        text = f"Hello, {arguments.get('name', 'world')}!"
        return {
            "description": "Greet someone.",
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        }

    def complete(self, request: Request) -> JsonObject:
        argument = request.params.get("argument") or {}
        prefix = str(argument.get("value", ""))
        values = [value for value in COMPLETIONS if value.startswith(prefix)]
        return {
            "completion": {"values": values, "total": len(values), "hasMore": False}
        }


# ------------------------------------------------------------------ helpers


def is_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def result_message(request_id: RequestId, result: JsonObject) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_message(request_id: RequestId | None, error: RpcError) -> JsonObject:
    body: JsonObject = {"code": error.code, "message": error.message}
    if error.data is not None:
        body["data"] = error.data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def with_request_id(value: Any, request_id: RequestId) -> Any:
    """``value`` with every string "$request_id" replaced by ``request_id``."""
    if value == "$request_id":
        return request_id
    if isinstance(value, dict):
        return {k: with_request_id(v, request_id) for k, v in value.items()}
    if isinstance(value, list):
        return [with_request_id(v, request_id) for v in value]
    return value


def requested_version(params: JsonObject) -> Any:
    """The protocol version a request names in its _meta, or None."""
    meta = params.get("_meta")
    return meta.get(META_VERSION) if isinstance(meta, dict) else None


def unsupported_version(supported: list[str], requested: Any) -> RpcError:
    return RpcError(
        -32022,
        "Unsupported protocol version",
        {"supported": supported, "requested": requested},
    )


def text_result(text: str) -> JsonObject:
    return {"content": [{"type": "text", "text": text}], "isError": False}


def garbage_lines() -> list[str]:
    return [
        "this line is not JSON",
        json.dumps({"hello": 1}),
        json.dumps({"jsonrpc": "2.0", "id": "fault-server-unknown-id", "result": {}}),
        "",
    ]


def parse_options(argv: list[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(
        description="Scriptable faulty MCP server over stdio."
    )
    parser.add_argument("--era", choices=("modern", "legacy", "dual"), default="dual")
    parser.add_argument(
        "--behaviour",
        action="append",
        default=[],
        choices=BEHAVIOURS + tuple(BEHAVIOUR_ALIASES),
        help="fault to inject; repeatable",
    )
    parser.add_argument(
        "--version", default="1.0", help="serverInfo version (default 1.0)"
    )
    parser.add_argument(
        "--supported",
        default="2025-11-25",
        help="comma-separated data.supported for unsupported-version",
    )
    parser.add_argument("--delay", type=float, default=0.5, help="seconds for slow-all")
    parser.add_argument("--exit-after", type=int, default=None, help="N for exit-after")
    parser.add_argument("--ttl-ms", type=int, default=None, help="ttlMs for cache-hints (default 50)")
    parser.add_argument("--cache-scope", default="public", help="cacheScope for cache-hints")
    parser.add_argument("--script", default=None, help="JSON file of scripted answers")
    parser.add_argument("--log", default=None, help="append every line received to this file")
    args = parser.parse_args(argv)
    behaviours = {BEHAVIOUR_ALIASES.get(name, name) for name in args.behaviour}
    if args.exit_after is not None:
        behaviours.add("exit-after")
    if args.ttl_ms is not None:
        behaviours.add("cache-hints")
    return Options(
        era=args.era,
        behaviours=frozenset(behaviours),
        server_version=args.version,
        supported=tuple(v.strip() for v in args.supported.split(",") if v.strip()),
        delay=args.delay,
        exit_after=1 if args.exit_after is None else args.exit_after,
        ttl_ms=50 if args.ttl_ms is None else args.ttl_ms,
        cache_scope=args.cache_scope,
        script=json.loads(open(args.script, encoding="utf-8").read()) if args.script else None,
        log_path=args.log,
    )


def main(argv: list[str] | None = None) -> None:
    options = parse_options(argv)
    server = FaultServer(options)
    server.log(
        f"fault-server started: era={options.era} "
        f"behaviours={','.join(sorted(options.behaviours)) or 'none'}"
    )
    server.serve()


if __name__ == "__main__":
    main()
