"""Issue #21: client requirements checked on the wire, against the fault server.

Each test starts ``tests/servers/fault_server.py`` with ``--log`` (every line the
client wrote) and, where a misbehaving peer is needed, ``--script`` (answers
written verbatim), and names the checklist ID it shows.
"""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import run_workers, wait_until
from wirekit import Peer, text

import mcp_sync

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(60)

META_CAPS = "io.modelcontextprotocol/clientCapabilities"
TASKS = "io.modelcontextprotocol/tasks"


def wait_for(predicate: Any, timeout: float = 10.0) -> bool:
    return wait_until(predicate, timeout)


# -- messages -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_j1_request_ids_are_never_null_and_never_reused(tmp_path: Path, mode: str) -> None:
    """J1: every request id is a string or an integer, never null, and no id is used twice
    (concurrent calls, a timed-out call and the calls after it)."""
    peer = Peer(tmp_path, None, "--era", mode)
    with peer.client(mode=mode) as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("slow", {"seconds": 5}, timeout=0.2)
        run_workers(client.call_tool, [("echo", {"text": str(i)}) for i in range(16)], timeout=20)
        client.list_tools()
        client.call_tool("echo", {"text": "last"})
    ids = [m["id"] for m in peer.requests()]
    assert len(ids) >= 19
    assert all(isinstance(i, (str, int)) and not isinstance(i, bool) for i in ids), ids
    keys = [(type(i).__name__, i) for i in ids]
    assert len(set(keys)) == len(keys), f"an id was used twice: {ids}"


def test_j2_notifications_carry_no_id(tmp_path: Path) -> None:
    """J2: the client's notifications (initialized, cancelled, roots changed) have no id."""
    peer = Peer(tmp_path, None, "--era", "legacy")
    with peer.client(mode="legacy", on_roots=["file:///tmp/a"]) as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("slow", {"seconds": 5}, timeout=0.2)
        client.set_roots(["file:///tmp/b"])
        client.call_tool("echo", {"text": "sync"})  # the notifications were written before it
    notes = [m for m in peer.sent() if "method" in m and m["method"].startswith("notifications/")]
    assert {"notifications/initialized", "notifications/cancelled",
            "notifications/roots/list_changed"} <= {m["method"] for m in notes}
    assert all("id" not in m for m in notes), notes


def test_j2_a_notification_from_the_server_is_never_answered(tmp_path: Path) -> None:
    """J2: a notification from the server (even an odd one) gets no response."""
    odd = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    unknown = {"jsonrpc": "2.0", "method": "notifications/whatever", "params": {}}
    peer = Peer(tmp_path, {"tools/call echo": [{"send": [odd, unknown], "result": text("ok")}]}, "--era", "modern")
    with peer.client() as client:
        assert client.call_tool("echo", {"text": "x"}).text == "ok"
        assert client.call_tool("echo", {"text": "y"}).text == "ok"
    assert [m for m in peer.sent() if "method" not in m] == []


def test_j3_modern_client_sends_no_jsonrpc_response(tmp_path: Path) -> None:
    """J3/T1: on 2026-07-28 servers do not send requests and clients do not send responses:
    a request from a modern server is not answered (no result, no error) and the call goes on."""
    ask = {"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"}
    ping = {"jsonrpc": "2.0", "id": 99, "method": "ping"}
    peer = Peer(tmp_path, {"tools/call echo": [{"send": [ask, ping], "result": text("ok")}]}, "--era", "modern")
    with peer.client(on_roots=["file:///tmp/a"]) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "ok"
        client.call_tool("counter")
    responses = [m for m in peer.sent() if isinstance(m, dict) and "method" not in m]
    assert responses == [], f"the client answered a modern server's request: {responses}"


def test_j4_unknown_result_type_is_invalid(tmp_path: Path) -> None:
    """J4: a resultType the client does not know (and "task" without the tasks extension
    declared on that request) is an invalid answer, not a result."""
    peer = Peer(tmp_path, {
        "tools/call echo": [{"result": {"resultType": "later", "content": [{"type": "text", "text": "no"}]}}],
        "tools/call counter": [{"result": {"resultType": "task", "taskId": "t1", "status": "working",
                                           "createdAt": "2026-01-01T00:00:00Z", "ttlMs": 1000}}],
        "prompts/get": [{"result": {"resultType": "streaming", "messages": []}}],
    }, "--era", "modern")
    with peer.client() as client:
        with pytest.raises(mcp_sync.ProtocolError, match="resultType"):
            client.call_tool("echo", {"text": "x"})
        with pytest.raises(mcp_sync.ProtocolError, match="resultType"):
            client.call_tool("counter")
        with pytest.raises(mcp_sync.ProtocolError, match="resultType"):
            client.get_prompt("greet", {"name": "x"})
        assert client.list_tools()  # the client goes on


def test_j5_absent_result_type_means_complete(tmp_path: Path) -> None:
    """J5: a modern result without resultType is a complete result."""
    bare = {"content": [{"type": "text", "text": "bare"}], "isError": False}
    peer = Peer(tmp_path, {"tools/call echo": [{"result": bare}],
                           "resources/read": [{"result": {"contents": [{"uri": "test://a", "text": "A!"}]}}]},
                "--era", "modern")
    with peer.client() as client:
        assert client.call_tool("echo", {"text": "x"}).text == "bare"
        assert client.read_resource("test://a").text == "A!"
    assert len(peer.requests("tools/call")) == 1  # not retried as if it were input_required


def test_j6_legacy_range_codes_carry_no_meaning(tmp_path: Path) -> None:
    """J6: -32000..-32019 (apart from -32002) mean nothing in particular: the client
    surfaces the code and message as they are, does not retry, and does not call it
    "not found" or "timed out"; -32002 on resources/read is "not found"."""
    peer = Peer(tmp_path, {
        "tools/call echo": [{"error": {"code": -32001, "message": "Request timed out"}}],
        "resources/read test://b": [{"error": {"code": -32001, "message": "gone"}}],
        "resources/read test://c": [{"error": {"code": -32002, "message": "Resource not found"}}],
    }, "--era", "modern")
    with peer.client() as client:
        with pytest.raises(mcp_sync.ServerError) as info:
            client.call_tool("echo", {"text": "x"})
        assert info.value.code == -32001 and not isinstance(info.value, mcp_sync.RequestTimeout)
        with pytest.raises(mcp_sync.ServerError) as read:
            client.read_resource("test://b")
        assert read.value.code == -32001 and not isinstance(read.value, mcp_sync.ResourceNotFound)
        with pytest.raises(mcp_sync.ResourceNotFound):
            client.read_resource("test://c")
    assert len(peer.requests("tools/call")) == 1


def test_j7_local_errors_cannot_be_mistaken_for_the_peers(tmp_path: Path) -> None:
    """J7: a local timeout or refusal is never a ServerError, and carries no peer code;
    a peer error is a ServerError with the peer's code."""
    peer = Peer(tmp_path, {"tools/call echo": [{"error": {"code": -32603, "message": "peer says no"}}]},
                "--era", "modern")
    with peer.client() as client:
        with pytest.raises(mcp_sync.RequestTimeout) as local:
            client.call_tool("slow", {"seconds": 5}, timeout=0.2)
        assert not isinstance(local.value, mcp_sync.ServerError)
        assert getattr(local.value, "code", None) is None
        with pytest.raises(mcp_sync.ServerError) as remote:
            client.call_tool("echo", {"text": "x"})
        assert remote.value.code == -32603 and "peer says no" in str(remote.value)
        with pytest.raises(mcp_sync.CapabilityError) as refused:  # a local refusal: nothing sent
            client.listen(prompts_list_changed=True)
        assert not isinstance(refused.value, mcp_sync.ServerError)


# -- the _meta envelope -------------------------------------------------------


def test_e3_capabilities_on_every_request_retries_and_task_requests(tmp_path: Path) -> None:
    """E3: the capabilities go on every request, the MRTR retry and tasks/get|update included."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(on_elicitation=lambda p: {"action": "accept", "content": {"name": "Zed"}},
                     extensions={TASKS: {}}) as client:
        client.list_tools()
        client.call_tool("mrtr_ask", {"tag": "t"})
        client.call_tool_as_task("task_job", {"plan": "ask"}).wait(timeout=20)
    requests = peer.requests()
    methods = {m["method"] for m in requests}
    assert {"server/discover", "tools/list", "tools/call", "tasks/get", "tasks/update"} <= methods
    assert any("requestState" in m["params"] for m in requests)  # the retry is in the log
    for message in requests:
        caps = message["params"]["_meta"][META_CAPS]
        assert caps.get("elicitation") == {"form": {}}, message
        assert TASKS in caps.get("extensions", {}), message


_KEY = r"^(?:[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*/)?" \
       r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?$"


def test_e5_meta_keys_have_the_spec_form_and_callers_keys_pass(tmp_path: Path) -> None:
    """E5: every _meta key the client writes has the prefix/name form, its own keys use the
    reserved io.modelcontextprotocol/ prefix only for what the spec defines, and the caller's
    own reverse-DNS keys go through unchanged."""
    # traceparent/tracestate: W3C trace context, sent once an OpenTelemetry SDK is set up (the
    # providers are process-wide: an earlier test may have set one)
    defined = {"progressToken", "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo",
               "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/logLevel",
               "traceparent", "tracestate"}
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(log_level="info") as client:
        client.call_tool("slow", {"seconds": 0.05}, progress=lambda *a: None,
                         meta={"com.example/request-tag": "abc"})
        client.list_tools()
    for message in peer.requests():
        meta = message["params"]["_meta"]
        for key in meta:
            assert re.match(_KEY, key), key
            assert key in defined or key == "com.example/request-tag", key
    call = peer.requests("tools/call")[0]["params"]["_meta"]
    assert call["com.example/request-tag"] == "abc"


def test_e5_a_meta_key_of_the_wrong_form_is_refused(tmp_path: Path) -> None:
    """E5: "valid _meta key names have two segments": a key that is not of that form is refused."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client, pytest.raises(ValueError, match="meta"):
        client.call_tool("echo", {"text": "x"}, meta={"not a key/": 1})


def test_e7_trace_context_keys_pass_unchanged(tmp_path: Path) -> None:
    """E7: traceparent, tracestate and baggage given by the caller reach the server as written."""
    trace = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
             "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE",
             "baggage": "userId=alice,serverNode=DF%2028"}
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client:
        client.call_tool("echo", {"text": "x"}, meta=trace)
        client.read_resource("test://a", meta=trace)
    for message in peer.requests()[1:]:
        meta = message["params"]["_meta"]
        assert {k: meta.get(k) for k in trace} == trace, message


def test_e7_a_malformed_traceparent_is_refused(tmp_path: Path) -> None:
    """E7: the values MUST follow W3C Trace Context: a malformed traceparent is not sent."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client, pytest.raises(ValueError, match="traceparent"):
        client.call_tool("echo", {"text": "x"}, meta={"traceparent": "not-a-trace"})


def test_e8_progress_token_and_log_level_only_when_asked(tmp_path: Path) -> None:
    """E8: progressToken only on a call that wants progress, logLevel only once a level is set."""
    peer = Peer(tmp_path, None, "--era", "modern")
    seen: list[float] = []
    with peer.client() as client:
        client.call_tool("echo", {"text": "plain"})
        client.call_tool("slow", {"seconds": 0.1}, progress=lambda p, t, m: seen.append(p))
        client.set_log_level("warning")
        client.call_tool("echo", {"text": "logged"})
    calls = [m["params"] for m in peer.requests("tools/call")]
    plain, slow, logged = calls
    assert "progressToken" not in plain["_meta"] and "io.modelcontextprotocol/logLevel" not in plain["_meta"]
    assert isinstance(slow["_meta"]["progressToken"], (str, int)) and seen == [1, 2, 3, 4, 5]
    assert logged["_meta"]["io.modelcontextprotocol/logLevel"] == "warning"
    assert "progressToken" not in logged["_meta"]


def test_e6_server_info_changes_nothing_the_client_sends(tmp_path: Path) -> None:
    """E6: the client behaves the same whatever serverInfo says (it is returned as data)."""

    def session(version: str, where: Path) -> list[dict]:
        where.mkdir()
        peer = Peer(where, None, "--era", "modern", "--version", version)
        with peer.client(client_info={"name": "t", "version": "1"}) as client:
            assert client.server_implementation["version"] == version
            client.list_tools()
            client.call_tool("echo", {"text": "x"})
            client.list_prompts()
        return [{k: v for k, v in m.items() if k != "id"} for m in peer.requests()]

    assert session("1.0", tmp_path / "a") == session("0.0.1-insecure-admin", tmp_path / "b")


# -- cancellation ----------------------------------------------------------------------


def test_k2_cancel_only_what_is_in_flight(tmp_path: Path) -> None:
    """K2: cancelling a token whose request was already answered sends nothing; one that is
    in flight names that request's id."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client:
        done = mcp_sync.CancellationToken()
        client.call_tool("echo", {"text": "x"}, cancel=done)
        done.cancel("too late")
        live = mcp_sync.CancellationToken()
        with pytest.raises(mcp_sync.Cancelled):  # cancelled at its first progress: surely in flight
            client.call_tool("slow", {"seconds": 5}, cancel=live, progress=lambda *_: live.cancel("enough"))
        log = json.loads(client.call_tool("cancelled_log").text)
    slow_id = next(m["id"] for m in peer.requests("tools/call") if m["params"]["name"] == "slow")
    assert log == [slow_id]


def test_k5_tasks_are_cancelled_with_tasks_cancel_not_notifications(tmp_path: Path) -> None:
    """K5: a task is cancelled with tasks/cancel; no notifications/cancelled names a task request."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(extensions={TASKS: {}}) as client:
        task = client.call_tool_as_task("task_job", {"plan": "forever"})
        with pytest.raises(mcp_sync.RequestTimeout):
            task.wait(timeout=0.3)
        client.cancel_task(task)
        assert client.get_task(task).status == "cancelled"
        assert json.loads(client.call_tool("cancelled_log").text) == []
    assert [m["params"]["taskId"] for m in peer.requests("tasks/cancel")] == [task.task_id]


# -- discover --------------------------------------------------------------------------------


def test_d2_discover_result_is_read_and_a_version_chosen(tmp_path: Path) -> None:
    """D2: supportedVersions, capabilities (extensions too), instructions, serverInfo, ttlMs and
    cacheScope are read; the client picks a version it knows from supportedVersions."""
    result = {"resultType": "complete", "supportedVersions": ["2099-01-01", "2026-07-28"],
              "capabilities": {"tools": {"listChanged": True}, "extensions": {TASKS: {"x": 1}}},
              "instructions": "be nice", "ttlMs": 60000, "cacheScope": "public",
              "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "disco", "version": "9"}}}
    peer = Peer(tmp_path, {"server/discover": [{"result": result}]}, "--era", "modern")
    with peer.client() as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities["extensions"] == {TASKS: {"x": 1}}
        assert client.instructions == "be nice"
        assert client.server_implementation == {"name": "disco", "version": "9"}
        discovered = client.discover()
        assert discovered.supported_versions == ["2099-01-01", "2026-07-28"]
        client.call_tool("echo", {"text": "x"})
    for message in peer.requests()[1:]:
        assert message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert len(peer.requests("server/discover")) == 1  # ttlMs 60 s: the second discover was cached


# -- input_required ---------------------------------------------------------


def test_r1_input_required_only_where_allowed(tmp_path: Path) -> None:
    """R1: input_required on tools/list (not one of tools/call, resources/read, prompts/get) is invalid."""
    ask = {"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}, "requestState": "s"}
    peer = Peer(tmp_path, {"tools/list": [{"result": ask}]}, "--era", "modern")
    with peer.client(on_roots=["file:///tmp"]) as client, pytest.raises(mcp_sync.ProtocolError):
        client.list_tools()
    assert len(peer.requests("tools/list")) == 1


def test_r2_inputs_built_before_the_retry_and_state_only_retried_at_once(tmp_path: Path) -> None:
    """R2: with inputRequests the retry carries an answer for each; without (load shedding)
    the retry comes at once with the state only."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(on_elicitation=lambda p: {"action": "accept", "content": {"name": "Zed"}}) as client:
        client.call_tool("mrtr_ask", {"tag": "a"})
        assert client.call_tool("mrtr_shed", {"tag": "b"}).text == "done after 2 retries"
    ask = [m["params"] for m in peer.requests("tools/call") if m["params"]["name"] == "mrtr_ask"]
    assert "inputResponses" not in ask[0] and ask[1]["inputResponses"]["name"]["action"] == "accept"
    shed = [m["params"] for m in peer.requests("tools/call") if m["params"]["name"] == "mrtr_shed"]
    assert len(shed) == 3 and all("inputResponses" not in p for p in shed)
    assert all(isinstance(p.get("requestState"), str) for p in shed[1:])


def test_r2_no_handler_no_retry(tmp_path: Path) -> None:
    """R2: when the client cannot construct the requested input it does not retry without it."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client() as client, pytest.raises(mcp_sync.MCPError):
        client.call_tool("mrtr_ask", {"tag": "a"})
    assert len(peer.requests("tools/call")) == 1


def test_r4_the_retry_has_a_new_id(tmp_path: Path) -> None:
    """R4: the JSON-RPC id differs between the first request and each retry."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(on_roots=["file:///a"], input_required_max_rounds=4) as client:
        with pytest.raises(mcp_sync.InputRequiredError):
            client.call_tool("mrtr_endless")
    ids = [m["id"] for m in peer.requests("tools/call")]
    assert len(ids) == 5 and len({(type(i), i) for i in ids}) == 5, ids  # the first and 4 retries


def test_r7_input_requests_of_unknown_method_or_undeclared_capability_are_refused(tmp_path: Path) -> None:
    """R7: inputRequests are {method, params} for elicitation, sampling or roots only, and only
    for capabilities the client declared: anything else fails the call without a retry."""
    unknown = {"resultType": "input_required", "requestState": "s",
               "inputRequests": {"x": {"method": "tools/call", "params": {"name": "echo"}}}}
    undeclared = {"resultType": "input_required", "requestState": "s",
                  "inputRequests": {"llm": {"method": "sampling/createMessage",
                                            "params": {"messages": [], "maxTokens": 5}}}}
    peer = Peer(tmp_path, {"tools/call echo": [{"result": unknown}], "tools/call counter": [{"result": undeclared}]},
                "--era", "modern")
    with peer.client(on_roots=["file:///a"]) as client:
        with pytest.raises(mcp_sync.MCPError) as first:
            client.call_tool("echo", {"text": "x"})
        with pytest.raises(mcp_sync.MCPError) as second:
            client.call_tool("counter")
    assert "['x']" in str(first.value) and "['llm']" in str(second.value)
    assert len(peer.requests("tools/call")) == 2


def test_r8_rounds_are_bounded(tmp_path: Path) -> None:
    """R8: a server that asks on every round is stopped after input_required_max_rounds."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(on_roots=["file:///a"], input_required_max_rounds=2) as client:
        with pytest.raises(mcp_sync.InputRequiredError, match="2 rounds"):
            client.call_tool("mrtr_endless")
    assert len(peer.requests("tools/call")) == 3  # the first and 2 retries


def test_r9_retries_are_never_cached(tmp_path: Path) -> None:
    """R9/C2: a resources/read that needed input is not served from the cache: reading again asks
    the server again (the retry carried inputResponses and requestState)."""
    ask = {"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}, "requestState": "s1"}
    done = {"resultType": "complete", "contents": [{"uri": "test://a", "text": "A"}], "ttlMs": 60000}
    peer = Peer(tmp_path, {"resources/read test://a": [{"result": ask}, {"result": done}, {"result": ask},
                                                       {"result": done}]}, "--era", "modern")
    with peer.client(on_roots=["file:///a"]) as client:
        assert client.read_resource("test://a").text == "A"
        assert client.read_resource("test://a").text == "A"
    reads = [m["params"] for m in peer.requests("resources/read")]
    assert len(reads) == 4 and reads[1]["requestState"] == "s1" and reads[3]["requestState"] == "s1"


# -- caching ---------------------------------------------------------------------------------------


def test_c4_ttl_is_not_a_polling_interval(tmp_path: Path) -> None:
    """C4: a short ttlMs makes nothing refetch in the background; the next access refetches."""
    peer = Peer(tmp_path, None, "--era", "modern", "--ttl-ms", "20")
    with peer.client() as client:
        client.list_tools()
        client.discover()
        before = len(peer.requests())
        time.sleep(0.5)  # 25 TTLs with nothing asked: a poller would have refetched by now
        assert len(peer.requests()) == before
        client.list_tools()
        assert len(peer.requests("tools/list")) == 2


# -- stdio ------------------------------------------------------------------------------


def test_t3_listen_notifications_are_told_apart_by_subscription_id(tmp_path: Path) -> None:
    """T3: two listens on one stdio connection: each sees only the notifications carrying its
    subscriptionId, and one carrying an unknown subscriptionId reaches neither."""
    stray = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
             "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "nobody"}}}
    peer = Peer(tmp_path, {"tools/call echo": [{"send": [stray], "result": text("ok")}]}, "--era", "modern")
    with peer.client() as client:
        with client.listen(tools_list_changed=True) as first, client.listen(tools_list_changed=True) as second:
            client.call_tool("echo", {"text": "x"})  # the stray notification, before the answer
            assert client.call_tool("notify_changed", {"kind": "tools"}).text == "2 listens"
            got = [first.get(timeout=5), second.get(timeout=5)]
            assert [m for m, _ in got] == ["notifications/tools/list_changed"] * 2
            ids = [p["_meta"]["io.modelcontextprotocol/subscriptionId"] for _, p in got]
            assert len(set(ids)) == 2 and "nobody" not in ids
            for sub in (first, second):  # one each: neither got the other's, nor the stray
                with pytest.raises(TimeoutError):
                    sub.get(timeout=0.3)


def test_t7_the_process_outlives_the_thread_that_started_it(tmp_path: Path) -> None:
    """T7: the stdio process lives as long as the Client, not as long as the thread that made it."""
    peer = Peer(tmp_path, None, "--era", "modern")
    made: list[mcp_sync.Client] = []

    def start() -> None:
        client = peer.client()
        client.connect()
        made.append(client)

    starter = threading.Thread(target=start)
    starter.start()
    starter.join(20)
    assert not starter.is_alive() and made
    client = made[0]
    try:
        pid = client.pid
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
        assert client.pid == pid
    finally:
        client.close()


def test_t8_stdio_credentials_come_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """T8: a stdio server gets its credentials through env=; nothing else of the parent's leaks."""
    monkeypatch.setenv("MCP_SYNC_TEST_PARENT_SECRET", "parent")
    peer = Peer(tmp_path, None, "--era", "modern")
    with mcp_sync.Client.stdio(PY, peer.args, env={"API_TOKEN": "s3cret"}) as client:
        assert client.call_tool("getenv", {"name": "API_TOKEN"}).text == "s3cret"
        assert client.call_tool("getenv", {"name": "MCP_SYNC_TEST_PARENT_SECRET"}).text == "<unset>"
    assert "s3cret" not in peer.log.read_text(encoding="utf-8")  # never put in a message


def test_lg16_legacy_stdio_answers_server_requests_while_its_own_are_pending(tmp_path: Path) -> None:
    """LG16: on a legacy stdio connection the client writes responses to the server's requests
    (here elicitation/create mid-call) while other calls of its own are in flight."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy",
                               on_elicitation=lambda p: {"action": "accept", "content": {"name": "Zed"}}) as client:
        stop = mcp_sync.CancellationToken()
        errors: list[BaseException] = []

        def run_slow() -> None:
            try:
                client.call_tool("slow", {"seconds": 20}, cancel=stop)
            except mcp_sync.Cancelled as exc:
                errors.append(exc)

        slow = threading.Thread(target=run_slow)
        slow.start()
        assert client.call_tool("ask_name", {}).text == "Hello, Zed"
        assert slow.is_alive()  # the elicitation was answered while slow was still in flight
        stop.cancel("done")
        slow.join(20)
        assert len(errors) == 1 and client.call_tool("echo", {"text": "after"}).text == "after"


def test_lg16_ping_from_a_legacy_server_is_answered(tmp_path: Path) -> None:
    """LG16/LG4: the client's answer to a legacy server's request is a JSON-RPC response it writes."""
    peer = Peer(tmp_path, None, "--era", "legacy", "--behaviour", "ping-client")
    with peer.client(mode="legacy") as client:
        client.call_tool("echo", {"text": "x"})
        assert wait_for(lambda: any(m.get("id") == "srv-ping-1" and "result" in m for m in peer.sent()))
    answer = next(m for m in peer.sent() if m.get("id") == "srv-ping-1")
    assert answer == {"jsonrpc": "2.0", "id": "srv-ping-1", "result": {}}


def test_lg4_a_2025_03_26_batch_is_received(tmp_path: Path) -> None:
    """LG4: 2025-03-26 peers may send JSON-RPC batches (arrays): each member is handled."""
    batch_note = [{"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "b1"}},
                  {"jsonrpc": "2.0", "id": "srv-ping-2", "method": "ping"}]
    peer = Peer(tmp_path, {"tools/call echo": [{"send": [batch_note], "result": {
        "content": [{"type": "text", "text": "after batch"}], "isError": False}}]}, "--era", "legacy")
    seen: list[tuple[str, dict]] = []
    with peer.client(mode="legacy", protocol_version="2025-03-26",
                     on_notification=lambda m, p: seen.append((m, p))) as client:
        assert client.protocol_version == "2025-03-26"
        assert client.call_tool("echo", {"text": "x"}).text == "after batch"
        pong = {"jsonrpc": "2.0", "id": "srv-ping-2", "result": {}}  # alone or in a batch of answers
        assert wait_for(lambda: any(m == pong or (isinstance(m, list) and pong in m) for m in peer.sent()))
    assert any(m == "notifications/message" and p.get("data") == "b1" for m, p in seen)


# -- roots -------------------------------------------------------------------------------------------


def test_n1_roots_are_file_uris(tmp_path: Path) -> None:
    """N1: the client declares roots and answers with file:// URIs only; a handler giving
    another scheme fails (nothing but file:// reaches the server)."""
    peer = Peer(tmp_path, None, "--era", "modern")
    llm = {"role": "assistant", "content": {"type": "text", "text": "x"}, "model": "m"}
    with peer.client(on_roots=["file:///tmp/project"], on_sampling=lambda p: llm) as client:
        assert client.meta()[META_CAPS]["roots"] == {}
        body = json.loads(client.call_tool("mrtr_many", {"tag": "n1"}).text)
        assert body["responses"]["roots"] == {"roots": [{"uri": "file:///tmp/project"}]}
    with peer.client(on_roots=lambda: ["https://example.com/repo"]) as bad:
        with pytest.raises(mcp_sync.HandlerError, match="file://"):
            bad.call_tool("mrtr_endless")
    with pytest.raises(ValueError, match="file://"):
        with peer.client() as client:
            client.set_roots(["http://example.com/x"])
