"""The task methods of :class:`~mcp_sync.Client`: long-running tool calls as tasks.

A mixin of public methods only; its one hook is the client's session. What
they do, in both eras, is in :mod:`._protocol.tasks`.
"""

from __future__ import annotations

import functools
from typing import Any, Mapping

from ._options import call_options
from ._protocol import tasks
from ._protocol.session import Session
from ._protocol.tasks import Task
from ._sentinels import USE_CLIENT_DEFAULT
from ._tool_transform import ToolRules, map_call, server_tools
from ._values import Timeout, check_json, check_tool_call
from .cancellation import CancellationToken


class TaskMethods:
    """The task half of :class:`~mcp_sync.Client` (thread-safe like the client)."""

    _session: Session
    _tool_rules: ToolRules | None = None  # the client's tool_filter and tool_transforms

    def call_tool_as_task(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        ttl: int | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
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
        args = check_tool_call("call_tool_as_task", name, arguments)
        name, args, transformed = map_call(self._session, self._tool_rules, name, args)  # shown -> server's
        if transformed:  # checked against the original inputSchema, as call_tool does
            listed = functools.partial(server_tools, self._session)
            self._session.schemas.check_arguments(listed, name, None, args, True)
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValueError(f"call_tool_as_task({name!r}): ttl must be a positive number of milliseconds or None")
        options = call_options("call_tool_as_task", timeout=timeout, cancel=cancel, meta=meta, headers=headers)
        return tasks.start(self._session, name, args, ttl, options)

    def get_task(self, task: Task | str) -> Task:
        """The task's current state (``tasks/get``), as a new :class:`Task`.

        Example: ``latest = client.get_task(task); print(latest.status, latest.status_message)``
        """
        return tasks.get(self._session, task)

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
        tasks.request(self._session, "tasks/update", tasks.handle(self._session, task), inputResponses=responses)

    def cancel_task(self, task: Task | str) -> None:
        """Ask the server to cancel a task (``tasks/cancel``; the server stops when it can).

        Example: ``client.cancel_task(task)`` (or by id: ``client.cancel_task(task.task_id)``)
        """
        tasks.request(self._session, "tasks/cancel", tasks.handle(self._session, task))

    def list_tasks(self) -> list[Task]:
        """The server's tasks (legacy ``tasks/list``), every page: ``nextCursor`` is followed
        up to ``max_pages`` pages; a repeated cursor or more pages raise :class:`PaginationLimitError`.

        Example: ``running = [t.task_id for t in client.list_tasks() if not t.done]``
        """
        return tasks.list_all(self._session)

