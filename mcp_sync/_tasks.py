"""Long-running tool calls as tasks, in both eras.

* modern: the ``io.modelcontextprotocol/tasks`` extension (X1-X6): a
  ``tools/call`` may answer ``resultType: "task"``; the client polls
  ``tasks/get`` at ``pollIntervalMs``, answers ``input_required`` tasks with
  ``tasks/update``, and reads the final ``result`` (or ``error``) inline;
* legacy 2025-11-25 (experimental, LG12): the call carries ``params.task``; the
  answer is ``{"task": {...}}``; ``tasks/get`` polls at ``pollInterval`` and the
  result comes from the blocking ``tasks/result``.

Both sit behind one :class:`Task` handle.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

import attrs

from .exceptions import Cancelled, RequestTimeout, server_error_from
from .models import CallToolResult

if TYPE_CHECKING:
    from ._client import Client

TERMINAL = ("completed", "failed", "cancelled")
DEFAULT_POLL_INTERVAL = 1.0  # seconds, when the server suggests none
MAX_POLL_INTERVAL = 30.0  # a server's suggestion is capped so a wait stays responsive


@attrs.define(eq=False)
class Task:
    """A handle on a server-side task. Thread-safe to read; ``wait`` may be called from any thread.

    Example::

        task = client.call_tool_as_task("long_job", {"input": "data"}, ttl=60_000)
        print(task.task_id, task.status)
        result = task.wait(timeout=600)     # -> CallToolResult
    """

    task_id: str
    status: str
    era: str
    status_message: str | None = None
    created_at: str | None = None
    last_updated_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    _client: Client | None = attrs.field(default=None, repr=False, alias="client")
    _answered: set[str] = attrs.field(factory=set, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any], era: str, client: Client | None) -> Task:
        """From a modern CreateTaskResult / GetTaskResult, or a legacy ``task`` object."""
        body = raw.get("task") if era == "legacy" and isinstance(raw.get("task"), dict) else raw
        ttl = body.get("ttlMs", body.get("ttl"))
        poll = body.get("pollIntervalMs", body.get("pollInterval"))
        return cls(
            task_id=str(body.get("taskId", "")),
            status=str(body.get("status", "working")),
            era=era,
            status_message=body.get("statusMessage") if isinstance(body.get("statusMessage"), str) else None,
            created_at=body.get("createdAt"),
            last_updated_at=body.get("lastUpdatedAt"),
            ttl_ms=ttl if isinstance(ttl, int) else None,
            poll_interval_ms=poll if isinstance(poll, int) else None,
            raw=body,
            client=client,
        )

    @property
    def done(self) -> bool:
        """True once the task reached completed, failed or cancelled."""
        return self.status in TERMINAL

    def _refresh(self, other: Task) -> None:
        with self._lock:
            self.status, self.status_message = other.status, other.status_message
            self.last_updated_at, self.ttl_ms = other.last_updated_at, other.ttl_ms
            self.poll_interval_ms, self.raw = other.poll_interval_ms or self.poll_interval_ms, other.raw

    def wait(self, poll_interval: float | None = None, timeout: float | None = None) -> CallToolResult:
        """Poll until the task ends and return its :class:`CallToolResult`.

        ``poll_interval`` overrides the server's suggestion (seconds). A task
        asking for input is answered with the client's handlers. Raises
        ServerError for a failed task, Cancelled for a cancelled one and
        RequestTimeout after ``timeout`` seconds (the task keeps running on the
        server: cancel it with ``client.cancel_task(task)`` if it should stop).
        """
        client = self._client
        if client is None:
            raise ValueError("this Task is not bound to a client")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if not self.done:
                self._refresh(client.get_task(self))
            if self.status == "input_required":
                if self.era == "legacy":  # LG12: tasks/result blocks and carries the input requests
                    return client._task_result(self, _remaining(deadline))
                self._answer_input(client)
            if self.done:
                return self._final(client, deadline)
            interval = poll_interval if poll_interval is not None else (self.poll_interval_ms or 0) / 1000
            interval = min(interval or DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL)
            remaining = _remaining(deadline)
            if remaining is not None and remaining <= interval:
                if remaining > 0:
                    time.sleep(remaining)
                self._refresh(client.get_task(self))
                if not self.done:
                    raise RequestTimeout(f"task {self.task_id} still {self.status} after {timeout} s")
                continue
            time.sleep(interval)

    def _answer_input(self, client: Client) -> None:
        requests = self.raw.get("inputRequests")
        if not isinstance(requests, dict):
            return
        fresh = {key: req for key, req in requests.items() if key not in self._answered}  # X4: dedupe across polls
        if fresh:
            answers = client._answer_input_requests("tasks/get", fresh, None)
            client.update_task(self, answers)
            self._answered.update(fresh)

    def _final(self, client: Client, deadline: float | None) -> CallToolResult:
        if self.status == "cancelled":
            raise Cancelled(f"task {self.task_id} was cancelled", reason=self.status_message)
        if self.era == "legacy":
            return client._task_result(self, _remaining(deadline))
        if self.status == "failed":
            raise server_error_from(self.raw.get("error"), method="tools/call")
        result = self.raw.get("result")
        return CallToolResult.from_wire(result if isinstance(result, dict) else {})


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
