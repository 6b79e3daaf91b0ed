"""Peer test server for mcp_sync, built on the official Python SDK (mcp==2.3.0, MCPServer).

Run:  python sdk_server.py stdio
      python sdk_server.py http [--port N]   (Streamable HTTP on http://127.0.0.1:N/mcp)
      python sdk_server.py sse [--port N]    (HTTP+SSE, legacy only, on http://127.0.0.1:N/sse)
      Without --port (or with 0) the kernel picks a free port, said on stderr as ``LISTENING <port>``
      before the first accept (listening.py starts it so).
      http options: --http-log FILE (one line per HTTP request: ``POST initialize|other``,
      ``GET``, ``DELETE``, then its Mcp-Session-Id or ``-``; a POST then its Mcp-Method header or ``-``),
      --delete-delay-ms N (each DELETE
      is answered only after N ms: a server slow to end a session)

Tools: echo, add (structured output; fastmcp tag "math"), weather (structured output: an object;
tags "outside", "math"), slow (progress + log + cancellable), count_up (progress without a total),
wait_echo (echo after an idle wait), whoami (the Authorization and X-User headers the request
carried, as JSON), fail (isError),
add_tool (registers a tool at runtime, announces tools/list_changed), ask_name (elicitation:
elicitation/create mid-call on 2025-11-25, InputRequiredResult/MRTR on 2026-07-28), ask_llm and
ask_llm_tools (sampling, the same two ways: a system prompt, max tokens, stop sequences, model hints,
an image; _tools offers a get_weather tool and needs the client's sampling.tools), each returning
the CreateMessageResult as JSON.
Resources: test://static, template test://items/{id}.  Prompts: greet(name), with completion;
review(code) (text, an image, an embedded text resource, an embedded PDF, an assistant reply).

How the SDK picks the protocol era (mcp/server/runner.py `serve_dual_era_loop`, verified on
the wire, transcripts in /tmp/notes/peers.md):
- One stdio process serves either era; the client's FIRST request decides, once per process.
  A non-`initialize` request whose params carry the `_meta` envelope
  (io.modelcontextprotocol/protocolVersion, ...) opens a modern connection; anything else
  (normally `initialize`) opens a legacy one.  The era is then locked.
- Modern connection: a later `initialize` gets -32022 (UNSUPPORTED_PROTOCOL_VERSION) with
  data.supported listing the modern versions.
- Legacy connection: a later enveloped request (`server/discover` with `_meta`) gets -32600.
  A `server/discover` WITHOUT `_meta` as first message also opens the legacy era.
- Modern request with an unknown protocolVersion in `_meta`: -32022 with
  data = {"supported": [...modern versions], "requested": "<that version>"}.
- Streamable HTTP (/mcp): a POST carrying `MCP-Protocol-Version: 2026-07-28` (+ Mcp-Method /
  Mcp-Name headers, `_meta` envelope) is served statelessly (no session id); a POST of
  `initialize` starts a legacy session (Mcp-Session-Id header).
- tools.listChanged: on the legacy handshake it is advertised only when NotificationOptions
  says so; `run_stdio` below passes tools_changed=True, plain `MCPServer.run("streamable-http")`
  does not (HTTP legacy advertises listChanged=false but the notification is still sent).
  On 2026-07-28 it is advertised iff `subscriptions/listen` is served (the default).
"""

from __future__ import annotations

import sys

if __name__ == "__main__" and sys.argv[1:2] != ["--forkserver"]:
    # The test suite's fork server (forkserver.py, #32): this same server, forked from a process
    # that has done the SDK's imports. Returns only where none answers: then start the usual way.
    from forkserver import launch

    launch()

import argparse
import warnings
from typing import Annotated, Any

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, Elicit, MCPServer, Resolve
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, UserMessage
from mcp.server.mcpserver.resolve import Sample
from mcp.server.stdio import stdio_server
from mcp_types import (
    BlobResourceContents,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageResult,
    CreateMessageResultWithTools,
    EmbeddedResource,
    EmptyResult,
    ImageContent,
    ModelHint,
    ModelPreferences,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    SetLevelRequestParams,
    TextContent,
    TextResourceContents,
    Tool,
    ToolChoice,
)
from pydantic import BaseModel

warnings.filterwarnings("ignore", category=DeprecationWarning)

server = MCPServer("sdk-test-server", version="1.0.0")
NAMES = ["Alice", "Albert", "Bob", "Carol"]


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool(meta={"_fastmcp": {"tags": ["math"]}})  # tags where fastmcp lists them (#31.3)
def add(a: int, b: int) -> int:
    """Add two integers (structured output: {"result": a+b})."""
    return a + b


class Weather(BaseModel):
    city: str
    temp: float
    conditions: list[str]


@server.tool(meta={"_fastmcp": {"tags": ["outside", "math"]}})
def weather(city: str) -> Weather:
    """The weather in `city` (structured output: an object, {"city", "temp", "conditions"})."""
    return Weather(city=city, temp=3.5, conditions=["cloudy", "windy"])


@server.tool()
async def slow(seconds: float, ctx: Context) -> str:
    """Sleep `seconds`, reporting progress every 0.1 s; cancellable."""
    steps = max(1, int(seconds / 0.1))
    await ctx.log("info", f"slow: sleeping {seconds}s")  # pyright: ignore[reportDeprecated]
    for i in range(steps):
        await anyio.sleep(seconds / steps)
        await ctx.report_progress(i + 1, steps, f"step {i + 1}/{steps}")
    return f"slept {seconds}"


@server.tool()
async def count_up(n: int, ctx: Context) -> str:
    """Report progress 1..n with no total (a count, not a fraction), 0.05 s apart."""
    for i in range(n):
        await anyio.sleep(0.05)
        await ctx.report_progress(i + 1, None, f"item {i + 1}")
    return f"counted {n}"


@server.tool()
async def wait_echo(text: str, ms: int) -> str:
    """Return the text after `ms` milliseconds that use no CPU (as a tool waiting on another
    service would): calls in flight overlap, so a client's own parallelism shows."""
    await anyio.sleep(ms / 1000)
    return text


@server.tool()
def whoami(ctx: Context) -> str:
    """The credentials this request carried, as JSON: ``{"authorization": ..., "x_user": ...}``
    (null where absent; HTTP only). Lets tests see which credential reached the server."""
    import json

    headers = {name.lower(): value for name, value in (ctx.headers or {}).items()}
    return json.dumps({"authorization": headers.get("authorization"), "x_user": headers.get("x-user")})


@server.tool()
def fail() -> str:
    """Always raise; the SDK turns this into an isError result."""
    raise RuntimeError("deliberate failure")


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new echo-like tool called `name` and announce tools/list_changed."""

    def dynamic(text: str = "") -> str:
        return f"{name}: {text}"

    server.add_tool(dynamic, name=name, description=f"dynamically added tool {name}")
    await ctx.notify_tools_changed()  # modern: subscriptions/listen streams
    if ctx.protocol_version is not None and ctx.protocol_version <= "2025-11-25":
        await ctx.session.send_tool_list_changed()  # legacy: plain notification
    return f"added {name}"


class NameForm(BaseModel):
    name: str


def _ask() -> Elicit[NameForm]:
    return Elicit("What is your name?", NameForm)


@server.tool()
def ask_name(form: Annotated[NameForm, Resolve(_ask)]) -> str:
    """Elicit a name from the client and greet it."""
    return f"Hello, {form.name}"


@server.tool()
async def ask_within(seconds: float, ctx: Context) -> str:
    """Legacy era: send the client an ``elicitation/create`` (form: name) whose ``_meta`` carries a
    progressToken, and give up after `seconds` (the SDK then sends ``notifications/cancelled`` for
    it). Returns JSON: ``{"outcome": "answered" | "gave up", "action": ..., "progress": [[p, t, m]...]}``
    (the client's progress notifications for the request, as the server received them)."""
    import json

    from mcp.shared.message import ServerMessageMetadata
    from mcp_types import ElicitRequest, ElicitRequestFormParams, ElicitResult

    progress: list[list[Any]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append([value, total, message])

    request = ElicitRequest(params=ElicitRequestFormParams(
        message="Who are you?",
        requested_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    ))
    outcome, action = "gave up", None
    with anyio.move_on_after(seconds):
        result = await ctx.request_context.session.send_request(
            request, ElicitResult, metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
            progress_callback=on_progress,
        )
        outcome, action = "answered", result.action
    await anyio.sleep(0.2)  # progress sent just before the answer or the give-up is in by now
    return json.dumps({"outcome": outcome, "action": action, "progress": progress})


def _sample(question: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=[TextContent(type="text", text=question),
                                               ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")])],
        max_tokens=77,
        system_prompt="Answer briefly.",
        stop_sequences=["END"],
        temperature=0.25,
        model_preferences=ModelPreferences(hints=[ModelHint(name="mini")]),
    )


@server.tool()
def ask_llm(question: str, answer: Annotated[CreateMessageResult, Resolve(_sample)]) -> str:
    """Ask the client's LLM `question` (sampling) and return its CreateMessageResult as JSON."""
    return answer.model_dump_json(by_alias=True, exclude_none=True)


WEATHER_TOOL = Tool(name="get_weather", description="The weather in a city",
                    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


def _sample_with_tools(question: str) -> Sample:
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text=question))], max_tokens=50,
                  tools=[WEATHER_TOOL], tool_choice=ToolChoice(mode="auto"))


@server.tool()
def ask_llm_tools(question: str, answer: Annotated[CreateMessageResultWithTools, Resolve(_sample_with_tools)]) -> str:
    """Ask the client's LLM `question`, offering it a get_weather tool; the CreateMessageResult as JSON."""
    return answer.model_dump_json(by_alias=True, exclude_none=True)


@server.resource("test://static", mime_type="text/plain")
def static_resource() -> str:
    """A static text resource."""
    return "static content"


@server.resource("test://items/{id}", mime_type="text/plain")
def item(id: str) -> str:
    """Resource template: one item per id."""
    return f"item {id}"


@server.prompt()
def greet(name: str) -> str:
    """A one-message user prompt greeting `name`."""
    return f"Please greet {name}."


#: a 1x1 PNG, and a tiny PDF's bytes (base64)
PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
PDF_B64 = "JVBERi0xLjAKJSVFT0YK"


@server.prompt()
def review(code: str) -> list[Message]:
    """Ask for a review of `code`: text, an image, the code as an embedded resource, a PDF, a reply."""
    return [
        UserMessage(f"Please review this code: {code}"),
        UserMessage(ImageContent(type="image", data=PIXEL_PNG, mime_type="image/png")),
        UserMessage(EmbeddedResource(type="resource", resource=TextResourceContents(
            uri="file:///review/code.py", mime_type="text/x-python", text=code))),
        UserMessage(EmbeddedResource(type="resource", resource=BlobResourceContents(
            uri="file:///review/spec.pdf", mime_type="application/pdf", blob=PDF_B64))),
        AssistantMessage("I will review it."),
    ]


@server.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    """Complete greet's `name` argument from a fixed list."""
    if isinstance(ref, PromptReference) and ref.name == "greet" and argument.name == "name":
        values = [n for n in NAMES if n.lower().startswith(argument.value.lower())]
        return Completion(values=values, total=len(values), has_more=False)
    return None


async def _set_level(ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


# MCPServer has no public logging/setLevel hook; registering one advertises `logging`.
server._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams, _set_level)  # pyright: ignore[reportPrivateUsage]


async def run_stdio() -> None:
    """Like MCPServer.run_stdio_async, but advertising tools.listChanged on the legacy handshake."""
    low = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    options = low.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await low.run(read_stream, write_stream, options)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=0, help="0 (the default): a free port, said on stderr")
    parser.add_argument("--http-log", default=None, help="http: append a line per HTTP request to this file")
    parser.add_argument("--delete-delay-ms", type=int, default=0, help="http: answer each DELETE after N ms")
    args = parser.parse_args()
    if args.transport == "stdio":
        anyio.run(run_stdio)
    elif args.transport == "sse":  # the deprecated HTTP+SSE transport: GET /sse, POST /messages/
        serve_http(server.sse_app(host="127.0.0.1"), args.port)
    else:
        app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
        if args.http_log is not None or args.delete_delay_ms:
            app = _observed(app, args.http_log, args.delete_delay_ms / 1000)
        serve_http(app, args.port)


def serve_http(app: Any, port: int) -> None:
    """Serve ``app`` on 127.0.0.1:``port`` as MCPServer.run would, binding the socket here so the
    port it got can be said (``LISTENING <port>`` on stderr, see listening.py) before any accept."""
    import socket

    import uvicorn
    from listening import announce

    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart may rebind at once
    sock.bind(("127.0.0.1", port))
    sock.listen(2048)
    announce(sock.getsockname()[1])
    uvicorn.Server(uvicorn.Config(app, log_level=server.settings.log_level.lower())).run(sockets=[sock])


def _observed(app: Any, log_path: str | None, delete_delay: float) -> Any:
    """``app`` with a line per HTTP request written to ``log_path`` and DELETEs answered late."""
    log = open(log_path, "a", buffering=1) if log_path else None  # open for the process's life

    async def observed(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        method = scope["method"]
        headers = {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
        session = headers.get("mcp-session-id", "-")
        if method == "DELETE" and delete_delay:
            await anyio.sleep(delete_delay)
        if method != "POST":
            if log is not None:
                log.write(f"{method} {session}\n")
            await app(scope, receive, send)
            return
        first = await receive()  # the body's first chunk says what is posted; handed on unchanged
        if log is not None:
            kind = "initialize" if b'"initialize"' in first.get("body", b"")[:200] else "other"
            log.write(f"POST {kind} {session} {headers.get('mcp-method', '-')}\n")
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return first
            return await receive()

        await app(scope, replay, send)

    return observed


if __name__ == "__main__":
    if sys.argv[1:2] == ["--forkserver"]:  # python sdk_server.py --forkserver NAME (conftest)
        from forkserver import serve

        serve(sys.argv[2], main)
    else:
        main()
