"""Tasks: the modern tasks extension (X1-X6) and legacy 2025-11-25 tasks (LG12)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

import mcp_sync

from conftest import PY, fault_args

pytestmark = pytest.mark.timeout(60)


def modern(**options: object) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), **options)  # type: ignore[arg-type]


def test_task_polls_to_completion() -> None:
    with modern() as client:
        task = client.call_tool_as_task("task_job", {"plan": "ok"})
        assert task.task_id == "task-1" and task.status == "working" and task.poll_interval_ms == 50
        result = task.wait(timeout=10)
        assert json.loads(result.text)["polls"] == 3
        assert task.done and task.status == "completed"


def test_task_without_extension_is_a_plain_call() -> None:
    """X1: the extension is declared only on requests that want tasks."""
    with modern() as client:
        assert client.call_tool("task_job", {}).text == "no task: extension not declared"


def test_unsolicited_task_is_waited_for() -> None:
    """X2: with the extension declared client-wide, call_tool handles a task answer by itself."""
    with modern(extensions={"io.modelcontextprotocol/tasks": {}}) as client:
        assert json.loads(client.call_tool("task_job", {"plan": "ok"}).text)["polls"] == 3


def test_task_input_required_answered_once() -> None:
    """X4: inputRequests answered with the handlers through tasks/update, deduplicated."""
    asked: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    with modern(on_elicitation=on_elicitation) as client:
        result = client.call_tool_as_task("task_job", {"plan": "ask"}).wait(timeout=10)
        assert json.loads(result.text)["answers"] == {"who": {"action": "accept", "content": {"name": "Ada"}}}
        assert len(asked) == 1


def test_failed_cancelled_and_timed_out_tasks() -> None:
    with modern() as client:
        with pytest.raises(mcp_sync.ServerError, match="job failed"):
            client.call_tool_as_task("task_job", {"plan": "fail"}).wait(timeout=10)
        forever = client.call_tool_as_task("task_job", {"plan": "forever"})
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout):
            forever.wait(timeout=0.3)
        assert time.monotonic() - started < 2
        client.cancel_task(forever)
        with pytest.raises(mcp_sync.Cancelled):
            forever.wait(timeout=5)
        assert client.get_task(forever.task_id).status == "cancelled"


def test_legacy_task_against_everything(everything_js: Path) -> None:
    """LG12 against server-everything's simulate-research-query (taskSupport: required)."""
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], probe_timeout=5) as client:
        assert client.server_capabilities["tasks"]["requests"]["tools"]["call"] == {}
        task = client.call_tool_as_task("simulate-research-query", {"topic": "bees"}, ttl=60_000)
        assert task.era == "legacy" and task.task_id and task.status == "working"
        result = task.wait(timeout=30)
        assert "Research Report: bees" in result.text
        assert any(t.task_id == task.task_id for t in client.list_tasks())


def test_wait_timeout_bounds_each_poll_and_leaves_the_task_running() -> None:
    """Task.wait(timeout=) bounds the whole wait, a slow tasks/get included (here every answer
    takes 2 s: the wait gives up on the poll, not waiting for its answer); on timeout the task
    is left running on the server, and waiting again or cancelling it works. (A poll gets at least
    1 s: a wait ends at most about two seconds late.)"""
    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern", "--behaviour", "slow-all", "--delay", "2"),
                               timeout=30) as client:
        task = client.call_tool_as_task("task_job", {"plan": "forever"})
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout, match="keeps running on the server") as caught:
            task.wait(timeout=0.5)
        assert time.monotonic() - started < 3  # its poll gave up after 1 s (before: two 2 s polls, 4 s)
        assert "cancel_task" in str(caught.value) and task.status == "working" and not task.done
        assert client.get_task(task).status == "working"  # nothing cancelled it
        client.cancel_task(task)
        with pytest.raises(mcp_sync.Cancelled):
            task.wait(timeout=10)


def test_wait_timeout_on_a_legacy_task_leaves_it_running(everything_js: Path) -> None:
    """server-everything's research task takes seconds: a short wait times out, says what became of
    the task, and the same Task object then waits to its result."""
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], mode="legacy", timeout=30) as client:
        task = client.call_tool_as_task("simulate-research-query", {"topic": "eels"}, ttl=60_000)
        with pytest.raises(mcp_sync.RequestTimeout, match=r"still working .*keeps running on the server"):
            task.wait(timeout=0.2)
        assert task.status == "working" and client.get_task(task).status in ("working", "completed")
        assert "Research Report: eels" in task.wait(timeout=30).text


def test_legacy_list_tasks_walks_every_page(everything_js: Path) -> None:
    """tasks/list is paginated (2025-11-25 tasks: "This operation supports pagination"); server-everything
    answers 10 tasks a page, so 12 tasks take two pages and list_tasks returns all 12."""
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], mode="legacy", timeout=30) as client:
        started = [client.call_tool_as_task("simulate-research-query", {"topic": f"t{i}"}, ttl=60_000)
                   for i in range(12)]
        listed = client.list_tasks()
        assert sorted(t.task_id for t in listed) == sorted(t.task_id for t in started)
        assert all(t.era == "legacy" and t.status for t in listed)


def test_legacy_list_tasks_stops_at_a_repeated_cursor(tmp_path: Path) -> None:
    from wirekit import Peer

    def page(task_id: str, cursor: str) -> dict:
        return {"result": {"tasks": [{"taskId": task_id, "status": "working", "createdAt": "2026-01-01T00:00:00Z",
                                      "ttl": 60000}], "nextCursor": cursor}}

    peer = Peer(tmp_path, {"tasks/list": [page("a", "c1"), page("b", "c2"), page("c", "c1")]}, "--era", "legacy")
    with peer.client() as client, pytest.raises(mcp_sync.PaginationLimitError, match="repeated cursor 'c1'"):
        client.list_tasks()
    assert [m.get("params", {}).get("cursor") for m in peer.requests("tasks/list")] == [None, "c1", "c2"]


def test_client_hosted_tasks_against_everything(everything_js: Path, no_leaks: None) -> None:
    """LG12 the other way round: with host_tasks=True server-everything's -async tools send
    task-augmented sampling/elicitation requests; the client answers with a task handle, runs
    the handler in the background and serves tasks/get and tasks/result."""

    def on_sampling(params: dict) -> dict:
        time.sleep(1.2)  # long enough that the server polls tasks/get at least once while working
        return {"role": "assistant", "content": {"type": "text", "text": "async answer"}, "model": "m"}

    def on_elicitation(params: dict) -> dict:
        return {"action": "accept", "content": mcp_sync.apply_defaults(params["requestedSchema"], {"name": "Ada"})}

    with mcp_sync.Client.stdio(
        "node", [str(everything_js), "stdio"], on_sampling=on_sampling, on_elicitation=on_elicitation,
        host_tasks=True, probe_timeout=5,
    ) as client:
        assert client.meta()  # connected
        sampled = client.call_tool("trigger-sampling-request-async", {"prompt": "hi"}, timeout=30)
        assert "[COMPLETED]" in sampled.text and "async answer" in sampled.text and "Poll 1: working" in sampled.text
        elicited = client.call_tool("trigger-elicitation-request-async", {}, timeout=30)
        assert "[COMPLETED]" in elicited.text and "Ada" in elicited.text


def test_hosted_tasks_unit() -> None:
    from mcp_sync._protocol.hosted_tasks import HostedTasks

    hosted = HostedTasks("test")
    release = threading.Event()

    def work() -> dict:
        release.wait(5)
        return {"action": "accept"}

    handle = hosted.start({"task": {"ttl": 1000}}, work)["task"]
    assert handle["status"] == "working" and handle["ttl"] == 1000
    assert hosted.answer("tasks/get", {"taskId": handle["taskId"]})["status"] == "working"
    assert [t["taskId"] for t in hosted.answer("tasks/list", {})["tasks"]] == [handle["taskId"]]
    release.set()
    assert hosted.answer("tasks/result", {"taskId": handle["taskId"]}) == {"action": "accept"}
    assert hosted.answer("tasks/get", {"taskId": handle["taskId"]})["status"] == "completed"
    with pytest.raises(mcp_sync.ServerRequestError) as info:
        hosted.answer("tasks/get", {"taskId": "nope"})
    assert info.value.code == -32602

    def refuse() -> dict:
        raise mcp_sync.ServerRequestError("no", code=-1)

    failed = hosted.start({"task": {}}, refuse)["task"]
    with pytest.raises(mcp_sync.ServerRequestError, match="no"):
        hosted.answer("tasks/result", {"taskId": failed["taskId"]})
    hosted.close()
