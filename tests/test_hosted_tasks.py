"""Client-hosted tasks (LG12): a legacy server's task-augmented sampling or elicitation request
runs as a task of the client's, which the server polls, fetches and may cancel.

server-everything's ``trigger-sampling-request-async`` polls such a task once a second; the
server side of ``tasks/cancel`` no peer exercises, so the task store is driven directly for it.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import mcp_sync
from mcp_sync._protocol.hosted_tasks import HostedTasks

pytestmark = pytest.mark.timeout(60)


def test_a_sampling_handler_that_raises_fails_the_hosted_task_not_the_client(everything_js: Path) -> None:
    """A bug in the handler of a hosted task fails that task (the server sees ``failed``); the
    client and its connection carry on. With only on_sampling, only sampling is hosted."""
    calls: list[dict] = []

    def on_sampling(params: dict) -> dict:
        calls.append(params)
        raise RuntimeError("the model is down")

    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], mode="legacy", timeout=30,
                               on_sampling=on_sampling, host_tasks=True) as client:
        names = {tool.name for tool in client.tools()}
        assert "trigger-sampling-request-async" in names and "trigger-elicitation-request-async" not in names
        result = client.call_tool("trigger-sampling-request-async", {"prompt": "hi"})
        assert result.text.startswith("[FAILED]")  # at once, or on a poll: the handle may already say so
        assert client.call_tool("echo", {"message": "still here"}).text == "Echo: still here"
    [params] = calls
    assert params["task"] == {"ttl": 300000}


def test_a_hosted_task_cancelled_by_the_server_stays_cancelled() -> None:
    """``tasks/cancel`` of a working task: ``tasks/get`` says cancelled from then on, even after the
    handler returns; ``tasks/result`` refuses with -32602; cancelling an ended task changes nothing."""
    hosted = HostedTasks("test")
    release = threading.Event()

    def slow_answer() -> dict:
        release.wait(10)
        return {"action": "accept", "content": {"name": "late"}}

    try:
        done_id = hosted.start({"task": {}}, lambda: {"action": "decline"})["task"]["taskId"]
        assert hosted.answer("tasks/result", {"taskId": done_id}) == {"action": "decline"}
        assert hosted.answer("tasks/cancel", {"taskId": done_id})["status"] == "completed"
        with pytest.raises(mcp_sync.ServerRequestError, match="unknown task 7"):
            hosted.answer("tasks/cancel", {"taskId": 7})

        task_id = hosted.start({"task": {"ttl": 1000}}, slow_answer)["task"]["taskId"]
        cancelled = hosted.answer("tasks/cancel", {"taskId": task_id})
        assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled"
        with pytest.raises(mcp_sync.ServerRequestError, match="the task was cancelled") as refused:
            hosted.answer("tasks/result", {"taskId": task_id})  # at once: it does not wait for the handler
        assert refused.value.code == -32602
    finally:
        release.set()
        hosted.close()  # joins the worker: the handler has returned its late answer
    assert hosted.answer("tasks/get", {"taskId": task_id})["status"] == "cancelled"  # the late answer is dropped
    with pytest.raises(mcp_sync.ServerRequestError, match="the task was cancelled"):
        hosted.answer("tasks/result", {"taskId": task_id})
