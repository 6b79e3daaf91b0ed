"""``Task.wait`` and the task methods in the cases the happy path does not show.

The fault server's ``task_job`` is a modern tasks-extension server whose tasks end after a number
of polls (never by the clock), so each wait below is deterministic; its ``--script`` stands in for
a server that shows odd ``inputRequests``. server-everything's ``simulate-research-query`` is the
legacy (2025-11-25) task that asks for input.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from wirekit import Peer

import mcp_sync

pytestmark = pytest.mark.timeout(60)

ASK_WHO = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "Who?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}}


def _task(status: str, **extra: object) -> dict:
    return {"resultType": "complete", "taskId": "task-1", "status": status, "pollIntervalMs": 10, **extra}


def _done(text: str) -> dict:
    return _task("completed", result={"content": [{"type": "text", "text": text}], "isError": False})


def test_a_server_that_answers_a_task_request_at_once_gives_a_completed_task(tmp_path: Path) -> None:
    """X2: a modern server may answer a task-augmented call with the result itself: the handle is
    already complete (no id), and waiting on it returns that result without polling."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(timeout=10) as client:
        task = client.call_tool_as_task("echo", {"text": "at once"})
        assert (task.task_id, task.status, task.done) == ("", "completed", True)
        assert task.wait(timeout=5).text == "at once"
    assert peer.requests("tasks/get") == []


def test_a_wait_whose_time_ran_out_during_its_first_poll_polls_once_more_then_times_out(tmp_path: Path) -> None:
    """No sleep when the deadline has already passed: one last poll, then RequestTimeout; the task
    keeps running on the server."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(timeout=10) as client:
        task = client.call_tool_as_task("task_job", {"plan": "forever"})
        with pytest.raises(mcp_sync.RequestTimeout, match="task task-1 still working after 1e-06 s"):
            task.wait(timeout=1e-6)  # a round trip to a process takes longer than a microsecond
        assert len(peer.requests("tasks/get")) == 2
        assert client.get_task(task).status == "working"
        client.cancel_task(task)


def test_a_task_that_ends_by_the_deadline_is_returned_not_timed_out(tmp_path: Path) -> None:
    """The poll at the deadline (earlier than the next regular one) finds the task complete: its
    result is returned, not a RequestTimeout."""
    peer = Peer(tmp_path, None, "--era", "modern")
    with peer.client(timeout=10) as client:
        task = client.call_tool_as_task("task_job", {"plan": "ok"})
        assert client.get_task(task).status == "working"  # poll 1: "ok" completes on poll 3
        result = task.wait(poll_interval=30, timeout=0.2)  # poll 2 (working), then poll 3 at the deadline
        assert json.loads(result.text)["polls"] == 3 and task.status == "completed"
    assert len(peer.requests("tasks/get")) == 3


def test_input_requests_answered_by_hand_with_update_task(tmp_path: Path) -> None:
    """X4 without handlers: get_task shows the inputRequests, update_task sends the answers
    (tasks/update with the tasks extension declared), and the task completes with them."""
    peer = Peer(tmp_path, None, "--era", "modern")
    answer = {"action": "accept", "content": {"name": "By Hand"}}
    with peer.client(timeout=10) as client:
        task = client.call_tool_as_task("task_job", {"plan": "ask"})
        states = [client.get_task(task.task_id) for _ in range(3)]
        assert [s.status for s in states] == ["working", "working", "input_required"]
        assert states[-1].raw["inputRequests"] == {"who": ASK_WHO}
        client.update_task(task.task_id, {"who": answer})
        assert json.loads(task.wait(timeout=10).text)["answers"] == {"who": answer}
    [update] = peer.requests("tasks/update")
    assert update["params"]["taskId"] == "task-1" and update["params"]["inputResponses"] == {"who": answer}
    assert "io.modelcontextprotocol/tasks" in json.dumps(update["params"]["_meta"])


@pytest.mark.parametrize(("shown", "asked"), [
    pytest.param([_task("input_required", inputRequests=["who"])], 0, id="inputRequests not an object"),
    pytest.param([_task("input_required", inputRequests={"who": ASK_WHO})] * 3, 1, id="the same request shown again"),
])
def test_input_requests_are_answered_once_and_only_when_well_formed(
    shown: list[dict], asked: int, tmp_path: Path
) -> None:
    """X4: a request already answered that a later poll still shows (the server has not caught up)
    is not answered again; an ``inputRequests`` that is not an object is not answered at all.
    Either way the wait goes on polling until the task ends."""
    steps = [{"result": answer} for answer in [*shown, _done("finished")]]
    peer = Peer(tmp_path, {"tasks/get task-1": steps}, "--era", "modern")
    seen: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        seen.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    with peer.client(timeout=10, on_elicitation=on_elicitation) as client:
        task = client.call_tool_as_task("task_job", {"plan": "ok"})
        assert task.wait(timeout=10).text == "finished"
    assert len(seen) == asked and len(peer.requests("tasks/update")) == asked
    assert len(peer.requests("tasks/get")) == len(shown) + 1


def test_a_legacy_task_asking_for_input_is_answered_through_tasks_result(everything_js: Path) -> None:
    """LG12: a legacy task in ``input_required`` delivers its elicitation on the blocking
    ``tasks/result``; the wait answers it with the handler and returns the final result."""
    asked: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        asked.append(params)
        return {"action": "accept", "content": {"interpretation": "snake"}}

    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], mode="legacy", timeout=30,
                               on_elicitation=on_elicitation) as client:
        task = client.call_tool_as_task("simulate-research-query", {"topic": "python", "ambiguous": True})
        result = task.wait(poll_interval=0.2, timeout=30)
        assert task.status == "input_required"  # the last poll's state: the result came from tasks/result
    assert "Research Report: python (snake)" in result.text
    [params] = asked
    assert "multiple interpretations" in params["message"]
