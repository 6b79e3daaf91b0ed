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
from typing import TYPE_CHECKING, Any, Mapping

import attrs

from ._sentinels import USE_CLIENT_DEFAULT
from ._values import Timeout, check_json, check_timeout
from .cancellation import CancellationToken
from .exceptions import Cancelled, CapabilityError, ProtocolError, RequestTimeout, server_error_from
from .models import CallToolResult, _opt_int, _opt_str, _required_str, ttl_ms

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

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
    _client: TasksMixin | None = attrs.field(default=None, repr=False, alias="client")
    _answered: set[str] = attrs.field(factory=set, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any], era: str, client: TasksMixin | None) -> Task:
        """From a modern CreateTaskResult / GetTaskResult, or a legacy ``task`` object.

        Raises ProtocolError when the answer is not a task (no string ``taskId`` or
        ``status``). A poll interval that is not a positive integer is ignored (the
        default applies) and one above 30 s is capped; ``ttlMs`` is clamped to a day.
        """
        # legacy: CreateTaskResult wraps the task in "task"; tasks/get and tasks/list give it bare
        body: dict[str, Any] = raw["task"] if era == "legacy" and isinstance(raw.get("task"), dict) else raw
        task_id = _required_str(body, "taskId", "task")
        status = _required_str(body, "status", f"task {task_id!r}")
        poll = _opt_int(body.get("pollIntervalMs", body.get("pollInterval")))
        return cls(
            task_id=task_id,
            status=status,
            era=era,
            status_message=_opt_str(body.get("statusMessage")),
            created_at=_opt_str(body.get("createdAt")),
            last_updated_at=_opt_str(body.get("lastUpdatedAt")),
            ttl_ms=ttl_ms(body.get("ttlMs", body.get("ttl"))),
            poll_interval_ms=min(poll, int(MAX_POLL_INTERVAL * 1000)) if poll is not None and poll > 0 else None,
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

        Example: ``result = task.wait(timeout=600); print(result.text)``
        """
        client = self._client
        if client is None:
            raise ValueError("this Task is not bound to a client")
        poll_interval = check_timeout(poll_interval, "poll_interval", allow_default=False)
        timeout = check_timeout(timeout, allow_default=False)
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

    def _answer_input(self, client: TasksMixin) -> None:
        requests = self.raw.get("inputRequests")
        if not isinstance(requests, dict):
            return
        fresh = {key: req for key, req in requests.items() if key not in self._answered}  # X4: dedupe across polls
        if fresh:
            answers = client._answer_input_requests("tasks/get", fresh, None)
            client.update_task(self, answers)
            self._answered.update(fresh)

    def _final(self, client: TasksMixin, deadline: float | None) -> CallToolResult:
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


class TasksMixin:
    """The task methods of :class:`~mcp_sync.Client` (X1-X6, LG12)."""

    if TYPE_CHECKING:  # provided by Client
        from ._lifecycle import Negotiated

        def _connected(self) -> Negotiated: ...

        def _require(self, capability: str, method: str) -> None: ...

        def _send(
            self,
            method: str,
            params: dict[str, Any] | None = None,
            *,
            timeout: Any = ...,
            cancel: CancellationToken | None = None,
            meta: Mapping[str, Any] | None = None,
            extensions: Mapping[str, Any] | None = None,
        ) -> dict[str, Any]: ...

        def _answer_input_requests(
            self, method: str, requests: dict[str, Any], state: str | None
        ) -> dict[str, Any]: ...

        def _send_with_input(self, method: str, params: dict[str, Any], **kwargs: Any) -> dict[str, Any]: ...

        def _tool_arguments(
            self, label: str, name: Any, arguments: Any, meta: Mapping[str, Any] | None
        ) -> dict[str, Any]: ...

        def discover(self) -> Any: ...

    def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: int | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Task:
        """Start a tool call as a task and return its :class:`Task` handle at once.

        The server must offer tasks (modern: the ``io.modelcontextprotocol/tasks``
        extension; 2025-11-25: ``tasks.requests.tools.call``), else
        :class:`CapabilityError` is raised before anything is sent. A modern
        server decides per call whether to make a task: one that answers at
        once (the spec allows it) gives an already completed Task with an empty
        ``task_id``, whose ``wait()`` returns the result. ``ttl`` is in ms. An
        answer that is neither a task nor a tool result raises ProtocolError.

        Example::

            task = client.call_tool_as_task("long_job", {"input": "data"}, ttl=60_000)
            result = task.wait(timeout=600)
        """
        # X1 (modern) and LG12 (legacy): only a server that offers tasks gets a task request.
        args = self._tool_arguments("call_tool_as_task", name, arguments, meta)
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValueError(f"call_tool_as_task({name!r}): ttl must be a positive number of milliseconds or None")
        timeout = check_timeout(timeout)
        self._require("tools", "tools/call")
        era = self._connected().era
        if not self._offers_tasks():
            what = "the tasks extension" if era == "modern" else "tasks for tools/call"
            raise CapabilityError(
                f"call_tool_as_task({name!r}): the server does not offer {what}", method="tools/call"
            )
        params: dict[str, Any] = {"name": name, "arguments": args}
        options: dict[str, Any] = {"timeout": timeout, "cancel": cancel, "meta": meta}
        if era == "legacy":
            params["task"] = {"ttl": ttl} if ttl is not None else {}
            raw = self._send("tools/call", params, **options)
            if not isinstance(raw.get("task"), dict):
                raise ProtocolError(
                    f"call_tool_as_task({name!r}): the server answered without a task handle", method="tools/call"
                )
            return Task.from_wire(raw, "legacy", self)
        raw = self._send_with_input("tools/call", params, extensions={TASKS_EXTENSION: {}}, **options)
        if raw.get("resultType") == "task":
            return Task.from_wire(raw, "modern", self)
        if not isinstance(raw.get("content"), list):
            raise ProtocolError(
                f"call_tool_as_task({name!r}): the answer is neither a task nor a tool result", method="tools/call"
            )
        # X2: the server chose to answer at once: a task that is already complete, its result inline
        return Task(task_id="", status="completed", era="modern", raw={"result": raw}, client=self)

    def _offers_tasks(self) -> bool:
        """Whether the server offers tasks for tools/call (a stale modern answer is re-fetched first)."""
        for attempt in range(2):
            negotiated = self._connected()
            capabilities = negotiated.server_capabilities
            if negotiated.era == "modern":
                extensions = capabilities.get("extensions")
                if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
                    return True
                if attempt == 0:
                    self.discover()  # reuses a fresh answer; a stale one is fetched again
                    continue
                return False
            tasks = capabilities.get("tasks")
            requests = tasks.get("requests") if isinstance(tasks, dict) else None
            tools = requests.get("tools") if isinstance(requests, dict) else None
            return isinstance(tools, dict) and "call" in tools
        return False

    def _task_request(self, method: str, task: Task, **params: Any) -> dict[str, Any]:
        extensions: dict[str, Any] | None = {TASKS_EXTENSION: {}} if task.era == "modern" else None
        return self._send(method, {"taskId": task.task_id, **params}, extensions=extensions)

    def get_task(self, task: Task | str) -> Task:
        """The task's current state (``tasks/get``), as a new :class:`Task`.

        Example: ``latest = client.get_task(task); print(latest.status, latest.status_message)``
        """
        handle = self._task_handle(task)
        return Task.from_wire(self._task_request("tasks/get", handle), handle.era, self)

    def update_task(self, task: Task | str, input_responses: Mapping[str, Any]) -> None:
        """Answer a modern task's ``inputRequests`` (``tasks/update``).

        ``input_responses`` maps each input request's key to its answer (what the
        matching handler would return, e.g. an ElicitResult).

        Example::

            requests = client.get_task(task).raw.get("inputRequests", {})
            client.update_task(task, {key: {"action": "accept", "content": {"ok": True}} for key in requests})
        """
        if not isinstance(input_responses, Mapping):
            raise TypeError(f"update_task: input_responses must be a dict, not {type(input_responses).__name__}")
        responses = dict(input_responses)
        check_json(responses, "update_task: input_responses")
        self._task_request("tasks/update", self._task_handle(task), inputResponses=responses)

    def cancel_task(self, task: Task | str) -> None:
        """Ask the server to cancel a task (``tasks/cancel``; the server stops when it can).

        Example: ``client.cancel_task(task)`` (or by id: ``client.cancel_task(task.task_id)``)
        """
        self._task_request("tasks/cancel", self._task_handle(task))

    def list_tasks(self) -> list[Task]:
        """The server's tasks (legacy ``tasks/list``).

        Example: ``running = [t.task_id for t in client.list_tasks() if not t.done]``
        """
        raw = self._send("tasks/list")
        tasks: list[Any] = raw["tasks"] if isinstance(raw.get("tasks"), list) else []
        return [Task.from_wire(t, "legacy", self) for t in tasks if isinstance(t, dict)]

    def _task_handle(self, task: Task | str) -> Task:
        if isinstance(task, Task):
            return task
        if not isinstance(task, str):
            raise TypeError(f"task must be a Task or a task id string, not {type(task).__name__}")
        return Task(task_id=task, status="working", era=self._connected().era, client=self)

    def _task_result(self, task: Task, timeout: float | None) -> CallToolResult:
        """Legacy ``tasks/result``: blocks until the task ends (LG12)."""
        return CallToolResult.from_wire(self._send("tasks/result", {"taskId": task.task_id}, timeout=timeout))
