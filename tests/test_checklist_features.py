"""Issue #21: client requirements on tools, schemas, prompts, completion, tasks and
handlers, against the SDK server where it can show them and the scripted fault
server where only a misbehaving (or unusual) peer can."""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest
from wirekit import Peer, text

import mcp_sync

from conftest import PY, SDK_SERVER, fault_args

pytestmark = pytest.mark.timeout(60)

TASKS = "io.modelcontextprotocol/tasks"


def sdk(**options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], **options)


def tools_script(tools: list[dict], calls: dict[str, dict], era: str = "modern") -> dict:
    script: dict[str, Any] = {"tools/list": [{"result": {**({"resultType": "complete"} if era == "modern" else {}),
                                                         "tools": tools}}]}
    for name, result in calls.items():
        script[f"tools/call {name}"] = [{"result": result}]
    return script


def structured(value: Any, era: str = "modern") -> dict:
    body = {"content": [{"type": "text", "text": json.dumps(value)}], "structuredContent": value, "isError": False}
    return {"resultType": "complete", **body} if era == "modern" else body


def tool(name: str, output: Any = None, **extra: Any) -> dict:
    found = {"name": name, "inputSchema": {"type": "object"}, **extra}
    if output is not None:
        found["outputSchema"] = output
    return found


# -- tools ------------------------------------------------------------------------------------


def test_o4_protocol_errors_and_tool_errors_are_told_apart(no_leaks: None) -> None:
    """O4: an unknown tool is a protocol error (ServerError -32602); a tool that fails is a
    result with is_error (for the model to see), a ToolError only when asked."""
    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern")) as fault:
        with pytest.raises(mcp_sync.ServerError) as unknown:
            fault.call_tool("no_such_tool", {})
        assert unknown.value.code == -32602
    with sdk() as client:
        failed = client.call_tool("fail", {})
        assert failed.is_error and failed.text
        with pytest.raises(mcp_sync.ToolError) as raised:
            client.call_tool("fail", {}, raise_on_error=True)
        assert raised.value.result.is_error


def test_o2_structured_results_are_checked_against_the_output_schema(tmp_path: Path, no_leaks: None,
                                                                     caplog: pytest.LogCaptureFixture) -> None:
    """O2: a real server's structured result passes; a result that breaks its outputSchema is
    a ProtocolError (validate_output="strict") or a logged warning (the default)."""
    with sdk(validate_output="strict") as client:
        assert client.call_tool("add", {"a": 2, "b": 3}).structured_content == {"result": 5}
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    script = tools_script([tool("count", schema)], {"count": structured({"n": "three"})})
    peer = Peer(tmp_path, script, "--era", "modern")
    with peer.client(validate_output="strict") as client, pytest.raises(mcp_sync.ProtocolError, match="outputSchema"):
        client.call_tool("count")
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with peer.client() as client:
        assert client.call_tool("count").structured_content == {"n": "three"}
    assert "outputSchema" in caplog.text


@pytest.mark.parametrize("value, schema", [
    ([1, 2, 3], {"type": "array", "items": {"type": "integer"}}),
    ("plain", {"type": "string"}),
    (7, {"type": "integer"}),
])
def test_o1_structured_content_may_be_any_json_value(tmp_path: Path, value: Any, schema: dict) -> None:
    """O1: on 2026-07-28 outputSchema may be any schema and structuredContent any JSON value;
    an inputSchema with any 2020-12 keywords is accepted and checked."""
    input_schema = {"type": "object", "$defs": {"n": {"type": "integer"}},
                    "properties": {"pair": {"type": "array", "prefixItems": [{"$ref": "#/$defs/n"}]}}}
    script = tools_script([tool("any", schema, inputSchema=input_schema)], {"any": structured(value)})
    peer = Peer(tmp_path, script, "--era", "modern")
    with peer.client(validate_output="strict") as client:
        (listed,) = client.list_tools()
        assert listed.input_schema == input_schema and listed.output_schema == schema
        assert client.call_tool("any").structured_content == value
        with pytest.raises(mcp_sync.InvalidArguments):
            client.call_tool("any", {"pair": ["not an integer"]}, validate=True)


def test_o1_structured_content_may_be_null(tmp_path: Path) -> None:
    """O1: structuredContent may be null when the outputSchema allows it: a null that is sent
    is a value checked against the schema, not a missing field."""
    script = tools_script([tool("nothing", {"type": "null"}), tool("count", {"type": "integer"}),
                           tool("silent", {"type": "null"})],
                          {"nothing": structured(None), "count": structured(None),
                           "silent": {"resultType": "complete", "content": [], "isError": False}})
    peer = Peer(tmp_path, script, "--era", "modern")
    with peer.client(validate_output="strict") as client:
        client.list_tools()
        result = client.call_tool("nothing")
        assert result.structured_content is None and "structuredContent" in result.raw
        with pytest.raises(mcp_sync.ProtocolError, match=r"does not match its outputSchema at \$: None is not"):
            client.call_tool("count")
        with pytest.raises(mcp_sync.ProtocolError, match="returned no structuredContent"):
            client.call_tool("silent")


def test_o3_annotations_are_data_and_change_nothing(tmp_path: Path) -> None:
    """O3: annotations are untrusted: returned as given, and a tool that claims to be
    read-only and harmless is called exactly like one that claims nothing."""
    claims = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "title": "Safe!"}
    script = tools_script([tool("claims", annotations=claims), tool("plain")],
                          {"claims": text("a"), "plain": text("b")})
    peer = Peer(tmp_path, script, "--era", "modern")
    with peer.client() as client:
        listed = {t.name: t for t in client.list_tools()}
        assert listed["claims"].annotations == claims and listed["plain"].annotations is None
        client.call_tool("claims", {"x": 1})
        client.call_tool("plain", {"x": 1})
    first, second = (m["params"] for m in peer.requests("tools/call"))
    assert {**first, "name": "plain"} == second


def test_o5_a_group_tells_servers_apart_by_its_own_keys(tmp_path: Path, no_leaks: None) -> None:
    """O5: two servers that call themselves the same (both "fault-server", both with "echo")
    are told apart by the keys the application gave them, never by their self-reported name;
    each call has a timeout of its own."""
    servers = {"alpha": {"command": PY, "args": fault_args("--era", "modern"), "env": {"WHO": "alpha"}},
               "beta": {"command": PY, "args": fault_args("--era", "modern"), "env": {"WHO": "beta"}}}
    with mcp_sync.ClientGroup(servers, strict=True) as group:
        echoes = [t for t in group.tools() if t.name == "echo"]
        assert sorted(group.server_of(t) for t in echoes) == ["alpha", "beta"]
        for key in ("alpha", "beta"):
            assert group.call_tool("getenv", {"name": "WHO"}, server=key).text == key
        with pytest.raises(mcp_sync.RequestTimeout):
            group.call_tool("slow", {"seconds": 5}, server="alpha", timeout=0.2)


# -- schemas --------------------------------------------------------------------------------


def test_v5_default_dialect_is_2020_12_and_declared_dialects_are_honoured(tmp_path: Path) -> None:
    """V5: without $schema, 2020-12 applies (prefixItems is checked); a declared draft-07 is
    honoured (its "dependencies" is checked, which 2020-12 does not know)."""
    modern = {"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}]}}}
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "dependencies": {"a": ["b"]}}
    script = tools_script([tool("modern", modern), tool("draft7", draft7)],
                          {"modern": structured({"t": [1]}), "draft7": structured({"a": 1})})
    peer = Peer(tmp_path, script, "--era", "modern")
    with peer.client(validate_output="strict") as client:
        client.list_tools()
        with pytest.raises(mcp_sync.ProtocolError, match=r"\$\.t\[0\]"):
            client.call_tool("modern")
        with pytest.raises(mcp_sync.ProtocolError, match="outputSchema"):
            client.call_tool("draft7")


def test_v5_an_unsupported_dialect_is_an_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """V5: "handle unsupported dialects gracefully by returning an appropriate error": strict
    output checks and asked-for input checks raise saying the dialect is unsupported (never
    checked as 2020-12 instead), "warn" logs it, and the client goes on serving."""
    odd = {"$schema": "https://example.com/my-own-dialect", "type": "object"}
    script = tools_script([tool("odd", odd, inputSchema=odd)], {"odd": structured({"a": 1})})
    script["tools/call odd"] *= 3
    peer = Peer(tmp_path, script, "--era", "modern")
    with peer.client(validate_output="strict") as client:
        with pytest.raises(mcp_sync.ProtocolError, match=r"dialect this client does not support.*my-own-dialect"):
            client.call_tool("odd")
        with pytest.raises(mcp_sync.ProtocolError, match=r"inputSchema is rejected.*dialect"):
            client.call_tool("odd", {"a": 1}, validate=True)
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with peer.client(validate_output="warn") as client:
        assert client.call_tool("odd").structured_content == {"a": 1}
    assert any("'odd'" in r.getMessage() and "dialect" in r.getMessage() for r in caplog.records)


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that would serve a schema, and the paths anyone asked it for."""
    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(self.path)
            body = json.dumps({"type": "string"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", hits
    finally:
        server.shutdown()
        server.server_close()


def test_v6_network_refs_are_never_fetched(tmp_path: Path, schema_host: tuple[str, list[str]]) -> None:
    """V6: a $ref to a network URI (here a loopback server that would answer) is never fetched,
    neither for outputSchema checks nor for validate=True argument checks (which are refused:
    an unresolved $ref is not passed as permissive)."""
    url, hits = schema_host
    schema = {"type": "object", "properties": {"v": {"$ref": url}}}
    peer = Peer(tmp_path, tools_script([tool("remote", schema, inputSchema=schema)],
                                       {"remote": structured({"v": 5})}), "--era", "modern")
    with peer.client(validate_output="warn") as client:
        with pytest.raises(mcp_sync.ProtocolError, match="cannot be resolved"):
            client.call_tool("remote", {"v": 5}, validate=True)
        assert client.call_tool("remote", {"v": 5}).structured_content == {"v": 5}  # "warn": logged
    assert hits == []


def test_v6_an_unresolved_external_ref_is_rejected(tmp_path: Path, schema_host: tuple[str, list[str]]) -> None:
    """V6: "unresolved external $ref SHOULD be rejected": strict raises naming the $ref."""
    url, hits = schema_host
    schema = {"type": "object", "properties": {"v": {"$ref": url}}}
    peer = Peer(tmp_path, tools_script([tool("remote", schema)], {"remote": structured({"v": 5})}),
                "--era", "modern")
    with peer.client(validate_output="strict") as client, \
            pytest.raises(mcp_sync.ProtocolError, match=r"outputSchema is rejected: its \$ref .*schema\.json"):
        client.call_tool("remote")
    assert hits == []


def test_v7_icons_are_data_and_never_fetched(tmp_path: Path, schema_host: tuple[str, list[str]]) -> None:
    """V7: the library renders no icons: it returns them as given and fetches none (the unsafe
    scheme included); rendering them safely is the application's."""
    url, hits = schema_host
    icons = [{"src": url.replace("schema.json", "icon.png"), "mimeType": "image/png"},
             {"src": "javascript:alert(1)", "mimeType": "image/svg+xml"}]
    peer = Peer(tmp_path, tools_script([tool("pretty", icons=icons)], {}), "--era", "modern")
    with peer.client() as client:
        (listed,) = client.list_tools()
        assert listed.icons == icons
    assert hits == []


# -- prompts and completion -------------------------------------------------------------------


def test_q2_prompts_are_paged_and_prompts_get_may_ask_for_input(tmp_path: Path) -> None:
    """Q2: prompts/list is followed page by page; prompts/get may answer input_required,
    which is answered and retried."""
    page = {"resultType": "complete", "prompts": [{"name": "p1"}], "nextCursor": "two"}
    last = {"resultType": "complete", "prompts": [{"name": "p2"}]}
    ask = {"resultType": "input_required", "requestState": "st",
           "inputRequests": {"who": {"method": "elicitation/create", "params": {
               "mode": "form", "message": "Who?",
               "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}}}
    done = {"resultType": "complete", "messages": [{"role": "user", "content": {"type": "text", "text": "Hi Zed"}}]}
    peer = Peer(tmp_path, {"prompts/list": [{"result": page}, {"result": last}],
                           "prompts/get p1": [{"result": ask}, {"result": done}]}, "--era", "modern")
    with peer.client(on_elicitation=lambda p: {"action": "accept", "content": {"name": "Zed"}}) as client:
        assert [p.name for p in client.prompts()] == ["p1", "p2"]
        got = client.get_prompt("p1", {})
        assert got.messages[0].text == "Hi Zed"
    lists = [m["params"] for m in peer.requests("prompts/list")]
    assert "cursor" not in lists[0] and lists[1]["cursor"] == "two"
    gets = [m["params"] for m in peer.requests("prompts/get")]
    assert gets[1]["requestState"] == "st" and gets[1]["inputResponses"]["who"]["content"] == {"name": "Zed"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_q3_completion_against_a_real_server(mode: str, no_leaks: None) -> None:
    """Q3: completion/complete with a prompt ref, an argument and context: the values (at most
    100), total and hasMore are read."""
    with sdk(mode=mode) as client:
        prompt = next(p for p in client.list_prompts() if p.name == "greet")
        found = client.complete(prompt, ("name", "Al"), context={})
        assert found.values == ["Alice", "Albert"]
        assert len(found.values) <= 100 and isinstance(found.has_more, bool)
        assert client.complete({"type": "ref/prompt", "name": "greet"}, {"name": "name", "value": "Zz"}).values == []


# -- versions and extensions ----------------------------------------------------------------------


def test_v2_discover_first_or_any_call_inline(no_leaks: None) -> None:
    """V2: server/discover may be sent on demand; a first call that is not discover works too
    (the client connects inline)."""
    with sdk(mode="modern") as client:
        assert client.call_tool("echo", {"text": "inline"}).text == "inline"
        found = client.discover()
        assert "2026-07-28" in found.supported_versions and client.protocol_version == "2026-07-28"


def test_v3_an_extension_only_one_side_has_means_core_behaviour(tmp_path: Path, no_leaks: None) -> None:
    """V3: the client declares the tasks extension under its prefixed id; a server that does not
    offer it is used with core behaviour (plain calls) and a task is refused before sending;
    a server that offers it but the client did not declare it gets no task requests."""
    with sdk(mode="modern", extensions={TASKS: {}}) as client:
        assert TASKS not in client.server_capabilities.get("extensions", {})
        assert TASKS in client.meta()["io.modelcontextprotocol/clientCapabilities"]["extensions"]
        assert client.call_tool("echo", {"text": "core"}).text == "core"
        with pytest.raises(mcp_sync.CapabilityError):
            client.call_tool_as_task("echo", {"text": "task"})
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client:
        assert TASKS in client.server_capabilities["extensions"]
        assert client.call_tool("task_job", {"plan": "ok"}).text == "no task: extension not declared"


# -- tasks ------------------------------------------------------------------------------------


def test_x3_polls_at_the_servers_interval(tmp_path: Path) -> None:
    """X3: tasks/get is polled at pollIntervalMs (here 300 ms), not faster, until the task ends."""
    def view(status: str, **more: Any) -> dict:
        return {"result": {"resultType": "complete", "taskId": "task-1", "status": status, "ttlMs": 60000,
                           "createdAt": "2026-01-01T00:00:00Z", "pollIntervalMs": 300, **more}}

    peer = Peer(tmp_path, {"tasks/get task-1": [view("working"), view("working"),
                                                view("completed", result=text("finished"))]}, "--era", "modern")
    with peer.client(extensions={TASKS: {}}) as client:
        task = client.call_tool_as_task("task_job", {"plan": "forever"})
        started = time.monotonic()
        assert task.wait(timeout=20).text == "finished"
        elapsed = time.monotonic() - started
    assert len(peer.requests("tasks/get")) == 3
    assert 0.55 <= elapsed < 1.8, elapsed  # two waits of 0.3 s (the default interval would be 1 s each)


def test_x5_task_outcomes(tmp_path: Path) -> None:
    """X5: completed gives its result even when isError is true; failed raises the task's error;
    an unknown task id is -32602; tasks/cancel is an empty acknowledgement."""
    failed_result = {**text("bad input"), "isError": True}

    def view(task: str, status: str, **more: Any) -> list[dict]:
        return [{"result": {"resultType": "complete", "taskId": task, "status": status, "ttlMs": 60000,
                            "createdAt": "2026-01-01T00:00:00Z", "pollIntervalMs": 10, **more}}]

    peer = Peer(tmp_path, {"tasks/get task-1": view("task-1", "completed", result=failed_result)},
                "--era", "modern")
    with peer.client(extensions={TASKS: {}}) as client:
        result = client.call_tool_as_task("task_job", {"plan": "ok"}).wait(timeout=20)
        assert result.is_error and result.text == "bad input"
        with pytest.raises(mcp_sync.ServerError) as failed:
            client.call_tool_as_task("task_job", {"plan": "fail"}).wait(timeout=20)
        assert failed.value.code == -32603 and "job failed" in str(failed.value)
        with pytest.raises(mcp_sync.ServerError) as unknown:
            client.get_task("no-such-task")
        assert unknown.value.code == -32602
        assert client.cancel_task(client.call_tool_as_task("task_job", {"plan": "forever"})) is None


def test_x6_task_requests_carry_the_envelope(tmp_path: Path) -> None:
    """X6: tasks/get, tasks/update and tasks/cancel carry the full _meta envelope like any request."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(extensions={TASKS: {}},
                     on_elicitation=lambda p: {"action": "accept", "content": {"name": "Ann"}}) as client:
        client.call_tool_as_task("task_job", {"plan": "ask"}).wait(timeout=20)
        client.cancel_task(client.call_tool_as_task("task_job", {"plan": "forever"}))
    for method in ("tasks/get", "tasks/update", "tasks/cancel"):
        sent = peer.requests(method)
        assert sent, method
        for message in sent:
            meta = message["params"]["_meta"]
            assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
            assert "io.modelcontextprotocol/clientCapabilities" in meta and message["params"]["taskId"]


# -- what the application does ---------------------------------------------------------------------


@pytest.mark.parametrize("action", ["decline", "cancel"])
def test_l2_decline_and_cancel_reach_the_server(tmp_path: Path, action: str) -> None:
    """L2: the handler gets the whole request (message, schema) and may decline or cancel; the
    library sends that answer as it is. Showing the user which server asks is the application's:
    the handler is registered per client, so it knows."""
    seen: list[dict] = []

    def handler(params: dict) -> dict:
        seen.append(params)
        return {"action": action}

    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(on_elicitation=handler) as client:
        body = json.loads(client.call_tool("mrtr_ask", {"tag": "t"}).text)
    assert seen[0]["message"] == "Your name?" and seen[0]["requestedSchema"]["required"] == ["name"]
    assert body["responses"] == {"name": {"action": action}}


def test_m2_max_tokens_reaches_the_sampling_handler(tmp_path: Path) -> None:
    """M2: respecting maxTokens is the sampling handler's job; the library hands it maxTokens
    (and the messages) unchanged."""
    seen: list[dict] = []

    def sampling(params: dict) -> dict:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(on_sampling=sampling, on_roots=["file:///tmp"]) as client:
        client.call_tool("mrtr_many", {"tag": "x"})
    assert seen[0]["maxTokens"] == 5
    assert seen[0]["messages"] == [{"role": "user", "content": {"type": "text", "text": "hi"}}]


# -- legacy feature gating ----------------------------------------------------------------------------


def test_lg13_capabilities_follow_the_negotiated_version(tmp_path: Path) -> None:
    """LG13: on 2025-11-25 the client declares what it has (elicitation with URL mode, sampling
    with tools, tasks); on 2025-03-26 nothing that revision does not have (elicitation came with
    2025-06-18; URL elicitation, sampling tools and tasks with 2025-11-25)."""
    options = dict(mode="legacy", on_elicitation=lambda p: {"action": "cancel"}, url_elicitation=True,
                   on_sampling=lambda p: {}, sampling_tools=True, host_tasks=True)

    def declared(version: str, where: Path) -> dict:
        where.mkdir()
        peer = Peer(where, None, "--era", "legacy")
        with peer.client(protocol_version=version, **options) as client:
            assert client.protocol_version == version
        return peer.requests("initialize")[0]["params"]["capabilities"]

    newest = declared("2025-11-25", tmp_path / "new")
    assert newest["elicitation"]["url"] == {} and newest["sampling"] == {"tools": {}} and "tasks" in newest
    oldest = declared("2025-03-26", tmp_path / "old")
    assert "elicitation" not in oldest and "tasks" not in oldest and oldest.get("sampling") == {}
