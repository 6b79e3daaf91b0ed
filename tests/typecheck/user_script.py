"""A user's script, type-checked with ``mypy --strict`` by tests/test_typed_api.py (never run).

It touches every name in ``mcp_sync.__all__`` the way the README shows them, so a
signature that loses its types (``**kwargs: Any``) or a name that leaves the
package shows up as a mypy error here.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

import mcp_sync


async def from_an_event_loop(client: mcp_sync.Client) -> str:
    result: mcp_sync.CallToolResult = await mcp_sync.to_thread(client.call_tool, "echo", {"text": "hi"})
    return result.text


def on_elicitation(params: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = params.get("requestedSchema") or {}
    return {"action": "accept", "content": mcp_sync.apply_defaults(schema, {"name": "Ada"})}


def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


def on_progress(progress: float, total: float | None, message: str | None) -> None:
    print(progress, total, message)


def long_elicitation(params: dict[str, Any], context: mcp_sync.RequestContext) -> dict[str, Any]:
    context.report_progress(1, total=2, message=f"{context.server} asks ({context.era}, {context.request_id})")
    return {"action": "cancel"} if context.cancel.cancelled else {"action": "decline"}


def every_progress(event: mcp_sync.ProgressEvent) -> None:
    print(event.server, event.method, event.request_id, event.progress_token, event.progress, event.total)


def describe(block: mcp_sync.TextContent | mcp_sync.ImageContent | mcp_sync.AudioContent | mcp_sync.ResourceLink
             | mcp_sync.EmbeddedResource | mcp_sync.ContentBlock) -> str:
    if isinstance(block, mcp_sync.TextContent):
        return block.text
    if isinstance(block, (mcp_sync.ImageContent, mcp_sync.AudioContent)):
        return block.mime_type
    if isinstance(block, mcp_sync.ResourceLink):
        return block.uri
    if isinstance(block, mcp_sync.EmbeddedResource):
        return block.text or ""
    return block.type


def main() -> None:
    print(mcp_sync.__version__, mcp_sync.MODERN_VERSIONS[0], mcp_sync.LEGACY_VERSIONS[0])
    token = mcp_sync.CancellationToken()
    threading.Timer(2, token.cancel, kwargs={"reason": "stop"}).start()
    client = mcp_sync.Client.stdio(
        "python", ["server.py"], env={"DEBUG": "1"}, timeout=30, on_elicitation=on_elicitation,
        on_sampling=on_sampling, on_roots=["file:///tmp"], url_elicitation=True, name="demo",
    )
    assert client.state is mcp_sync.ClientState.NEW
    client.on_elicitation = long_elicitation
    client.on_progress = every_progress
    client.roots = ["file:///home/me/project"]
    remote = mcp_sync.Client.http("https://example.com/mcp", headers={"X": "1"}, connect_timeout=5, max_retries=2,
                                  auth=mcp_sync.OAuth(client_name="demo"))
    legacy = mcp_sync.Client.sse("https://example.com/sse", timeout=None, tracing=False,
                                 on_connection_lost=lambda error: print(error.message),
                                 on_reconnected=lambda again: print(again.name))
    other = mcp_sync.connect("python server.py")
    worker_client: mcp_sync.Client = mcp_sync.shared("python server.py", timeout=30)
    print(worker_client.name)
    view: mcp_sync.BoundClient = remote.bind(headers={"Authorization": "Bearer user-token"})
    print(view.call_tool("echo", {"text": "hi"}, headers={"X-Request": "1"}).text)
    for each in (remote, legacy, other):
        each.close()
    with client:
        tools: list[mcp_sync.Tool] = list(client.tools(timeout=5, cache="refresh"))
        page: mcp_sync.Page[mcp_sync.Tool] = client.list_tools(cursor=None, timeout=mcp_sync.USE_CLIENT_DEFAULT)
        print([tool.name for tool in tools], page.next_cursor)
        every: mcp_sync.Listing[mcp_sync.Tool] = client.tools()
        shown: mcp_sync.Page[mcp_sync.Tool] = every.show()  # #30.1: displays as a table in Jupyter
        print(shown.items[0].name)
        resources: list[mcp_sync.Resource] = list(client.resources(cancel=token))
        templates: list[mcp_sync.ResourceTemplate] = list(client.resource_templates(meta={"k": "v"}))
        prompts: list[mcp_sync.Prompt] = list(client.prompts(progress=on_progress))
        arguments: list[mcp_sync.PromptArgument] = prompts[0].arguments
        print(resources, templates, arguments)
        result: mcp_sync.CallToolResult = client.call_tool(
            "echo", {"text": "hi"}, timeout=5, progress=on_progress, cancel=token, meta={"traceparent": "00-1"},
            raise_on_error=True, reset_timeout_on_progress=True, max_total_timeout=60,
        )
        print(result.text, [describe(block) for block in result.content])
        total: int = client.call_tool("add", {"a": 1, "b": 2}, output_type=int)  # #20.2: the type asked for
        print(total + 1, result.data, client.get_prompt("greet").to_messages(format="anthropic"))
        read: mcp_sync.ReadResourceResult = client.read_resource("file:///a", cache="bypass", timeout=None)
        for item in read.contents:
            if isinstance(item, mcp_sync.TextResourceContents):
                print(item.text)
            elif isinstance(item, mcp_sync.BlobResourceContents):
                print(item.blob)
        prompt: mcp_sync.GetPromptResult = client.get_prompt("greet", {"name": "Ada"}, timeout=5)
        messages: list[mcp_sync.PromptMessage] = prompt.messages
        completion: mcp_sync.Completion = client.complete(prompts[0], ("name", "A"), timeout=5)
        print(messages, completion.values)
        if client.era == "modern":
            discovered: mcp_sync.DiscoverResult = client.discover(cache="use", timeout=5)
            print(discovered.supported_versions)
        else:
            init = mcp_sync.InitializeResult.from_wire(client.server_info)
            print(init.protocol_version)
        client.ping(timeout=5)
        client.set_log_level("info")
        raw: dict[str, Any] = client.request("tools/list", None, timeout=5)
        client.notify("notifications/roots/list_changed")
        client.set_roots(["file:///tmp"])
        task: mcp_sync.Task = client.call_tool_as_task("job", {}, ttl=60_000, timeout=5)
        print(task.wait(timeout=60).text, raw)
        sub: mcp_sync.Subscription
        with client.listen(tools_list_changed=True, timeout=5) as sub:
            for method, params in sub:
                print(method, params)
    errors: tuple[type[mcp_sync.MCPError], ...] = (
        mcp_sync.ServerError, mcp_sync.ResourceNotFound, mcp_sync.CapabilityError,
        mcp_sync.UnsupportedProtocolVersionError, mcp_sync.RequestTimeout, mcp_sync.Cancelled,
        mcp_sync.ConnectionClosed, mcp_sync.SessionExpiredError, mcp_sync.ProtocolError,
        mcp_sync.PaginationLimitError, mcp_sync.InputRequiredError, mcp_sync.ToolError,
        mcp_sync.AuthorizationError, mcp_sync.ClientStateError, mcp_sync.HandlerError,
        mcp_sync.UrlElicitationRequiredError,
    )
    try:
        client.call_tool("x")
    except mcp_sync.UrlElicitationRequiredError as exc:
        print(exc.urls, exc.elicitations)
    except mcp_sync.HandlerError as exc:
        print(exc.handler)
    except mcp_sync.ServerUnreachable as exc:  # #29.2: a restart; a tools/call that may have run is not resent
        ran: bool = exc.may_have_run
        print(ran, exc.retry_after)
    except mcp_sync.ServerUnavailable as exc:  # #19.4
        status: int | None = exc.status
        retry_after: float | None = exc.retry_after
        print(status, retry_after)
    except errors as exc:
        print(exc.message, exc.method, exc.request_id)
    refusal = mcp_sync.ServerRequestError("no", code=-1)
    print(refusal.code)


def layers(client: mcp_sync.Client, call: dict[str, Any]) -> None:
    """Config files, ClientGroup, the LLM tool formats, schema checks and OAuth, as documented."""
    try:
        servers: dict[str, dict[str, Any]] = mcp_sync.load_config(".vscode/mcp.json", inputs={"github-token": "t"})
    except mcp_sync.ConfigError as e:
        print(e.file, e.server, e.field, e.message)
        return
    single = mcp_sync.connect(servers["github"], timeout=30, headers={"X": "1"}, verify=False, max_retries=1)
    single.close()
    shaped = mcp_sync.connect(  # #31.3, #31.7: tools as a model sees them; lists that refresh themselves
        servers["github"], tool_filter=mcp_sync.ToolFilter(include=["search_*"], exclude_tags=["admin"]),
        tool_transforms={"search_issues": mcp_sync.ToolTransform(name="search", hide=["page"], fill={"repo": "a/b"})},
        list_ttl=30, on_list_changed=lambda kind, items: print(kind, len(items)),
    )
    shaped.close()
    group: mcp_sync.ClientGroup
    with mcp_sync.ClientGroup(servers, strict=False, options={"github": {"timeout": 5}}, timeout=30) as group:
        for tool in group.tools(prefix=True, timeout=5, cache="refresh"):
            print(group.server_of(tool), tool.name)
        prompts: list[mcp_sync.Prompt] = list(group.prompts(cancel=None))
        resources: list[mcp_sync.Resource] = list(group.resources(meta={"k": "v"}))
        server, found = group.find_tool("read_file")
        print(server, found.input_schema, prompts, resources)
        try:
            result: mcp_sync.CallToolResult = group.call_tool("search", {"q": "x"}, timeout=5, raise_on_error=True)
        except mcp_sync.AmbiguousToolError as e:
            result = group.call_tool("search", {"q": "x"}, server=e.servers[0], validate=True)
        except mcp_sync.ToolNotFound as e:
            print(e.message, e.name)
            return
        print(result.text, group.get_prompt("greet", {"name": "Ada"}, server="github", timeout=5).messages)
        print(group.read_resource("file:///notes.txt", cache="bypass").text)
        counted: int = group.call_tool("add", {"a": 1}, output_type=int)
        print(counted, group.add("time", {"command": "uvx"}, options={"timeout": 5}).name)
        group.remove("time")
        answer: dict[str, Any] = group.run_tool_call(call, format="openai", timeout=30, progress=on_progress)
        print(answer, group.to_openai_tools(api="responses", strict=True), group.to_anthropic_tools(),
              group.to_gemini_tools(), sorted(group.clients), group.errors)
    group.connect().close()
    tools = list(client.tools())
    openai_tools = mcp_sync.to_openai_tools(tools, api="chat", strict=True)  # the SDK's own types (#18.4)
    anthropic_tools = mcp_sync.to_anthropic_tools(tools)
    gemini_tools: list[dict[str, Any]] = mcp_sync.to_gemini_tools(tools)
    print(openai_tools, anthropic_tools, gemini_tools, client.run_tool_call(call, format="anthropic", timeout=5))
    store = mcp_sync.FileTokenStore("~/.config/my-app/mcp-tokens.json")
    redirected: str = mcp_sync.browser_authorize("https://auth.example.com/authorize?state=s", timeout=120)
    auth = mcp_sync.OAuth(redirect_uri="http://127.0.0.1:8765/callback", token_store=store,
                          on_authorize=functools.partial(mcp_sync.browser_authorize, timeout=120))
    print(redirected, auth)
    try:
        client.call_tool("add", {"a": "one"}, validate=True)
    except mcp_sync.InvalidArguments as e:
        print(e.path, e.errors)
    except mcp_sync.InsufficientScopeError as e:
        print("needs scope", e.scope, "-", e.error_description)


if __name__ == "__main__":
    main()
