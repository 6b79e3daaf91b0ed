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
from typing import Any

import attrs

from .._options import DEFAULT, CallOptions
from .._values import check_timeout
from ..exceptions import (
    Cancelled,
    CapabilityError,
    PaginationLimitError,
    ProtocolError,
    RequestTimeout,
    server_error_from,
)
from ..models import CallToolResult, _opt_int, _opt_str, _required_str, ttl_ms
from .input_required import answer, complete
from .session import TASKS_EXTENSION, Session

TERMINAL = ("completed", "failed", "cancelled")
DEFAULT_POLL_INTERVAL = 1.0  # seconds, when the server suggests none
MAX_POLL_INTERVAL = 30.0  # a server's suggestion is capped so a wait stays responsive
_MIN_POLL = 1.0  # seconds a tasks/get of a wait may take even when less of the wait is left


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
    _session: Session | None = attrs.field(default=None, repr=False, alias="session")
    _answered: set[str] = attrs.field(factory=set, repr=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any], era: str, session: Session | None) -> Task:
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
            session=session,
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
        ServerError for a failed task and Cancelled for a cancelled one.

        ``timeout`` bounds the whole wait, a server slow to answer ``tasks/get``
        included: each poll waits for what is left of it, but at least a second (so
        a poll at the deadline still gets an answer), and never longer than the
        client's own timeout; a wait ends at most about two seconds late. When it runs out,
        RequestTimeout is raised and **the task is left as it is**: it keeps running
        on the server (nothing cancels it), this ``Task`` keeps its last known status,
        and ``wait()`` may be called again to keep waiting. To stop it, call
        ``client.cancel_task(task)``.

        Example::

            try:
                result = task.wait(timeout=600)
            except mcp_sync.RequestTimeout:
                client.cancel_task(task)   # or task.wait() again later
        """
        session = self._session
        if session is None:
            raise ValueError("this Task is not bound to a client")
        poll_interval = check_timeout(poll_interval, "poll_interval", allow_default=False)
        timeout = check_timeout(timeout, allow_default=False)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            while True:
                if not self.done:
                    self._refresh(get(session, self, _within(session, deadline)))
                if self.status == "input_required":
                    if self.era == "legacy":  # LG12: tasks/result blocks and carries the input requests
                        return result(session, self, _remaining(deadline))
                    self._answer_input(session)
                if self.done:
                    return self._final(session, deadline)
                interval = poll_interval if poll_interval is not None else (self.poll_interval_ms or 0) / 1000
                interval = min(interval or DEFAULT_POLL_INTERVAL, MAX_POLL_INTERVAL)
                remaining = _remaining(deadline)
                if remaining is not None and remaining <= interval:
                    if remaining > 0:
                        time.sleep(remaining)
                    self._refresh(get(session, self, _within(session, deadline)))
                    if not self.done:
                        raise RequestTimeout("")
                    continue
                time.sleep(interval)
        except RequestTimeout as exc:
            why = f" ({exc.method} got no answer in time)" if exc.message else ""
            raise RequestTimeout(
                f"task {self.task_id} still {self.status} after {timeout} s{why}; it keeps running on the server: "
                "wait() again to keep waiting, or client.cancel_task(task) to stop it", method="tasks/get",
            ) from None

    def _answer_input(self, session: Session) -> None:
        requests = self.raw.get("inputRequests")
        if not isinstance(requests, dict):
            return
        fresh = {key: req for key, req in requests.items() if key not in self._answered}  # X4: dedupe across polls
        if fresh:
            answers = answer(session, "tasks/get", fresh, None)
            request(session, "tasks/update", self, inputResponses=answers)
            self._answered.update(fresh)

    def _final(self, session: Session, deadline: float | None) -> CallToolResult:
        if self.status == "cancelled":
            raise Cancelled(f"task {self.task_id} was cancelled", reason=self.status_message)
        if self.era == "legacy":
            return result(session, self, _remaining(deadline))
        if self.status == "failed":
            raise server_error_from(self.raw.get("error"), method="tools/call")
        inline = self.raw.get("result")
        return CallToolResult.from_wire(inline if isinstance(inline, dict) else {})


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def _within(session: Session, deadline: float | None) -> CallOptions:
    """A poll's options: what is left of the wait, but at least ``_MIN_POLL`` (a poll at the deadline
    still gets its answer from a server that answers), and never more than the client's timeout."""
    left = _remaining(deadline)
    if left is None or (session.timeout is not None and session.timeout <= max(left, _MIN_POLL)):
        return DEFAULT
    return CallOptions(timeout=max(left, _MIN_POLL))




# -- what the client's task methods do -------------------------------------------------------


def start(session: Session, name: str, arguments: dict[str, Any], ttl: int | None, options: CallOptions) -> Task:
    """``call_tool_as_task``: a task request to a server that offers tasks (X1, LG12)."""
    session.require("tools", "tools/call", options)
    negotiated, options = session.connected_within("tools/call", options)  # within the call's deadline
    era = negotiated.era
    if not offers_tasks(session):
        what = "the tasks extension" if era == "modern" else "tasks for tools/call"
        raise CapabilityError(f"call_tool_as_task({name!r}): the server does not offer {what}", method="tools/call")
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if era == "legacy":
        params["task"] = {"ttl": ttl} if ttl is not None else {}
        raw = session.send("tools/call", params, options)
        if not isinstance(raw.get("task"), dict):
            raise ProtocolError(
                f"call_tool_as_task({name!r}): the server answered without a task handle", method="tools/call"
            )
        return Task.from_wire(raw, "legacy", session)
    options = attrs.evolve(options, extensions={TASKS_EXTENSION: {}})
    raw = complete(session, "tools/call", params, options)
    if raw.get("resultType") == "task":
        return Task.from_wire(raw, "modern", session)
    if not isinstance(raw.get("content"), list):
        raise ProtocolError(
            f"call_tool_as_task({name!r}): the answer is neither a task nor a tool result", method="tools/call"
        )
    # X2: the server chose to answer at once: a task that is already complete, its result inline
    return Task(task_id="", status="completed", era="modern", raw={"result": raw}, session=session)


def offers_tasks(session: Session) -> bool:
    """Whether the server offers tasks for tools/call (a stale modern answer is re-fetched first)."""
    for attempt in range(2):  # pragma: no branch - the second pass always returns
        negotiated = session.connected()
        capabilities = negotiated.server_capabilities
        if negotiated.era == "modern":
            extensions = capabilities.get("extensions")
            if isinstance(extensions, dict) and TASKS_EXTENSION in extensions:
                return True
            if attempt == 0:
                session.discover()  # reuses a fresh answer; a stale one is fetched again
                continue
            return False
        tasks = capabilities.get("tasks")
        requests = tasks.get("requests") if isinstance(tasks, dict) else None
        tools = requests.get("tools") if isinstance(requests, dict) else None
        return isinstance(tools, dict) and "call" in tools
    return False  # pragma: no cover - not reached: the second pass returns (kept for the type checker)


def request(session: Session, method: str, task: Task, options: CallOptions = DEFAULT, **params: Any
            ) -> dict[str, Any]:
    """One ``tasks/*`` request about ``task`` (modern ones declare the extension)."""
    if task.era == "modern":
        options = attrs.evolve(options, extensions={TASKS_EXTENSION: {}})
    return session.send(method, {"taskId": task.task_id, **params}, options)


def handle(session: Session, task: Task | str) -> Task:
    """A Task, or a handle for a task id."""
    if isinstance(task, Task):
        return task
    if not isinstance(task, str):
        raise TypeError(f"task must be a Task or a task id string, not {type(task).__name__}")
    return Task(task_id=task, status="working", era=session.connected().era, session=session)


def get(session: Session, task: Task | str, options: CallOptions = DEFAULT) -> Task:
    """``tasks/get``: the task's current state, as a new Task."""
    task = handle(session, task)
    return Task.from_wire(request(session, "tasks/get", task, options), task.era, session)


def result(session: Session, task: Task, timeout: float | None) -> CallToolResult:
    """Legacy ``tasks/result``: blocks until the task ends (LG12)."""
    options = CallOptions(timeout=timeout)
    return CallToolResult.from_wire(session.send("tasks/result", {"taskId": task.task_id}, options))


def list_all(session: Session) -> list[Task]:
    """Legacy ``tasks/list``, every page: followed by ``nextCursor`` up to the session's
    ``max_pages``; a repeated cursor or more pages raise :class:`PaginationLimitError`."""
    found: list[Task] = []
    cursor: str | None = None
    seen: set[str] = set()
    for _ in range(session.max_pages):
        raw = session.send("tasks/list", {"cursor": cursor} if cursor is not None else None)
        tasks: list[Any] = raw["tasks"] if isinstance(raw.get("tasks"), list) else []
        found.extend(Task.from_wire(t, "legacy", session) for t in tasks if isinstance(t, dict))
        cursor = raw.get("nextCursor")
        if not isinstance(cursor, str):  # "" is a cursor (G1)
            return found
        if cursor in seen:
            raise PaginationLimitError(f"tasks/list: the server repeated cursor {cursor!r}", method="tasks/list")
        seen.add(cursor)
    raise PaginationLimitError(f"tasks/list: more than max_pages={session.max_pages} pages", method="tasks/list")
