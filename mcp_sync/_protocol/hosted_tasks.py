"""Tasks the *client* runs for a legacy 2025-11-25 server (LG12, client-hosted tasks).

With ``host_tasks=True`` the client declares ``tasks.requests`` for the input
handlers it has, so a server may send ``sampling/createMessage`` or
``elicitation/create`` with ``params.task``: the client then answers at once
with a task handle, runs the handler on a thread, and serves the server's
``tasks/get``, ``tasks/result`` (blocks until the handler is done),
``tasks/list`` and ``tasks/cancel`` about it.
"""

from __future__ import annotations

import datetime
import threading
import uuid
from typing import Any, Callable

from .._threads import Workers
from ..exceptions import INTERNAL_ERROR, INVALID_PARAMS, ServerRequestError

TASK_METHODS = ("tasks/get", "tasks/result", "tasks/list", "tasks/cancel")
_TERMINAL = ("completed", "failed", "cancelled")
POLL_INTERVAL_MS = 500


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")


class _HostedTask:
    __slots__ = ("created_at", "done", "error", "result", "status", "task_id", "ttl", "updated_at")

    def __init__(self, ttl: Any) -> None:
        self.task_id = uuid.uuid4().hex
        self.status = "working"
        self.created_at = self.updated_at = _now()
        self.ttl = ttl if isinstance(ttl, int) else None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.done = threading.Event()

    def view(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": self.created_at,
            "lastUpdatedAt": self.updated_at,
            "ttl": self.ttl,
            "pollInterval": POLL_INTERVAL_MS,
        }


class HostedTasks:
    """The client's own task store. Thread-safe; its worker threads are joined by :meth:`close`."""

    def __init__(self, server: str) -> None:
        self._server = server
        self._lock = threading.Lock()
        self._tasks: dict[str, _HostedTask] = {}
        self._workers = Workers(server)

    def start(self, params: dict[str, Any], run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Answer a task-augmented request with its handle and run ``run`` in the background."""
        task = _HostedTask((params.get("task") or {}).get("ttl"))

        def work() -> None:
            try:
                result, error = run(), None
            except ServerRequestError as exc:
                result, error = None, {"code": exc.code, "message": exc.message}
            except Exception as exc:  # a handler bug fails the task, never the client
                result, error = None, {"code": INTERNAL_ERROR, "message": f"client handler failed: {exc}"}
            with self._lock:
                if task.status != "cancelled":
                    task.result, task.error = result, error
                    task.status = "completed" if error is None else "failed"
                task.updated_at = _now()
            task.done.set()

        with self._lock:
            self._tasks[task.task_id] = task
        self._workers.spawn(work, "hosted-task")
        return {"task": task.view()}

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Serve ``tasks/get|result|list|cancel`` from the server."""
        if method == "tasks/list":
            with self._lock:
                return {"tasks": [task.view() for task in self._tasks.values()]}
        task = self._find(params.get("taskId"))
        if method == "tasks/get":
            return task.view()
        if method == "tasks/cancel":
            with self._lock:
                if task.status not in _TERMINAL:
                    task.status, task.updated_at = "cancelled", _now()
                    task.done.set()
                return task.view()
        task.done.wait()  # tasks/result blocks until the task ends (LG12)
        if task.error is not None:
            raise ServerRequestError(task.error["message"], code=task.error["code"])
        if task.status == "cancelled":
            raise ServerRequestError("the task was cancelled", code=INVALID_PARAMS)
        return dict(task.result or {})

    def _find(self, task_id: Any) -> _HostedTask:
        with self._lock:
            task = self._tasks.get(task_id) if isinstance(task_id, str) else None
        if task is None:
            raise ServerRequestError(f"unknown task {task_id!r}", code=INVALID_PARAMS)
        return task

    def close(self, timeout: float = 1.0) -> None:
        with self._lock:
            for task in self._tasks.values():
                task.done.set()  # release any tasks/result still waiting
        self._workers.close(timeout)
