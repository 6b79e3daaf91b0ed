"""An MCP server object of the Python SDK, served in this process (#20.7): no subprocess, no socket.

The server (an ``mcp`` ``MCPServer``, its low-level ``Server``, or a ``fastmcp`` server, which
holds one) runs on a private event-loop thread (``mcp_sync-inprocess-<name>``) over in-memory
streams, exactly as it would over stdio: the client's first request picks the era, so both eras
work. Messages cross as JSON, as they would on a pipe (what could not be written as JSON cannot
cross). ``close()`` closes the server's input, cancels what is left and joins the thread.

The ``mcp`` package is imported when the transport starts, never before (``mcp-sync-client[inprocess]``).
"""

from __future__ import annotations

import json
import logging
import math
import threading
from typing import Any, Mapping

from .._threads import join_quietly, spawn
from ..exceptions import ConnectionClosed
from .base import NO_SINK, BaseTransport, MessageSink

log = logging.getLogger("mcp_sync")

#: How long close() waits for the server's thread (seconds).
SHUTDOWN_TIMEOUT = 5.0
#: How long start() waits for the event loop to be ready (seconds).
START_TIMEOUT = 10.0


def lowlevel_server(server: Any) -> Any:
    """The SDK's low-level ``Server`` behind ``server`` (MCPServer, fastmcp, or one itself); TypeError if none."""
    for attribute in ("_lowlevel_server", "_mcp_server"):  # MCPServer (mcp 2.x), FastMCP (fastmcp, mcp 1.x)
        inner = getattr(server, attribute, None)
        if inner is not None:
            return inner
    if callable(getattr(server, "run", None)) and callable(getattr(server, "create_initialization_options", None)):
        return server
    raise TypeError(
        f"Client.inprocess: {type(server).__name__} is not an MCP server of the Python SDK "
        "(an mcp MCPServer or Server, or a fastmcp server)"
    )


def _cause(exc: BaseException) -> str:
    """What ended the server, for a message: the one error inside anyio's exception groups."""
    while len(getattr(exc, "exceptions", ())) == 1:
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(exc).__name__}: {exc}"


class InProcessTransport(BaseTransport):
    """Serves ``server`` on a private event loop; see the module docstring."""

    def __init__(self, server: Any, *, name: str | None = None) -> None:
        self._low = lowlevel_server(server)
        self.name = name or str(getattr(server, "name", None) or "inprocess")
        self.target = f"in-process {type(server).__name__} {self.name!r}"
        self._sink: MessageSink = NO_SINK
        self._thread: threading.Thread | None = None
        self._loop: Any = None
        self._to_server: Any = None
        self._stop: Any = None
        self._ready = threading.Event()
        self._lock = threading.Lock()
        self._closing = False
        self._reported = False
        self._failure: BaseException | None = None

    def start(self, sink: MessageSink) -> None:
        try:
            import anyio  # noqa: F401  - the mcp package brings it
            import mcp_types  # noqa: F401
        except ImportError as exc:
            raise ImportError(
                "Client.inprocess needs the 'mcp' package: pip install 'mcp-sync-client[inprocess]'"
            ) from exc
        self._sink = sink
        self._thread = spawn(self._run, "inprocess", self.name)
        if not self._ready.wait(START_TIMEOUT):
            self.close()
            raise ConnectionClosed(f"{self.target}: its event loop did not start within {START_TIMEOUT} s")
        if self._failure is not None:
            self.close()  # joins the thread: it is only reporting the failure now
            raise ConnectionClosed(f"{self.target} failed to start: {_cause(self._failure)}") from self._failure

    # -- the event-loop thread --------------------------------------------------------------------

    def _run(self) -> None:
        import anyio

        try:
            anyio.run(self._main)
        except BaseException as exc:  # the server crashed: the client hears of it as a closed connection
            self._failure = exc
            log.warning("mcp_sync: in-process server %s ended with %s", self.name, _cause(exc))
        finally:
            self._ready.set()
            self._report_closed(f"the in-process server ended{f': {_cause(self._failure)}' if self._failure else ''}")

    async def _main(self) -> None:
        import asyncio

        import anyio

        to_server, server_input = anyio.create_memory_object_stream[Any](math.inf)
        server_output, from_server = anyio.create_memory_object_stream[Any](math.inf)
        stop = anyio.Event()
        with self._lock:
            if self._closing:  # close() came first (start() gave up waiting for this loop): serve nothing
                return
            self._loop = asyncio.get_running_loop()  # call_soon_threadsafe never blocks the caller
            self._to_server, self._stop = to_server, stop
        self._ready.set()
        async with anyio.create_task_group() as group:
            group.start_soon(self._serve, server_input, server_output)
            group.start_soon(self._deliver, from_server, stop)
            await stop.wait()
            group.cancel_scope.cancel()

    async def _serve(self, server_input: Any, server_output: Any) -> None:
        low = self._low
        async with server_input, server_output:
            await low.run(server_input, server_output, low.create_initialization_options())

    async def _deliver(self, from_server: Any, stop: Any) -> None:
        """What the server writes, as the JSON it would put on a pipe, to the sink (runs no user code)."""
        async with from_server:
            async for outgoing in from_server:
                wire = outgoing.message.model_dump_json(by_alias=True, exclude_unset=True)
                self._sink.message(json.loads(wire))
        self._report_closed("the in-process server closed the connection")
        stop.set()

    # -- the client's side ------------------------------------------------------------------------

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None) -> None:
        """Hand one message to the server's loop; returns at once (the answer reaches the sink)."""
        import mcp_types
        from mcp.shared.message import SessionMessage

        if headers:
            raise TypeError("an in-process server takes no HTTP headers")
        with self._lock:
            if self._closing or self._to_server is None:
                raise ConnectionClosed(f"{self.target} is closed")
        try:
            parsed: Any = SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(json.dumps(message)))
        except ValueError as exc:  # what the server's stdio reader would hand on: the parse error itself
            parsed = exc
        try:
            self._loop.call_soon_threadsafe(self._put, parsed)
        except RuntimeError as exc:  # the loop has ended
            raise ConnectionClosed(f"{self.target} is closed") from exc

    def _put(self, message: Any) -> None:
        """On the loop: one message into the server's input (never blocks: the buffer is unbounded,
        like a pipe the server reads; a message after close is dropped)."""
        import anyio

        try:
            self._to_server.send_nowait(message)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("mcp_sync: a message for the closed in-process server %s was dropped", self.name)

    def abort(self, request_id: Any) -> bool:
        return False  # the engine sends notifications/cancelled

    def configure(self, *, era: str, protocol_version: str) -> None:
        pass

    def close(self) -> None:
        """Close the server's input, cancel its tasks, join the thread (bounded). Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True  # a loop that starts after this serves nothing (see _main)
            loop, to_server, stop = self._loop, self._to_server, self._stop
        if loop is not None:
            try:
                loop.call_soon_threadsafe(to_server.close)
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop has ended already
                pass
        join_quietly(self._thread, SHUTDOWN_TIMEOUT)
        if self._thread is not None and self._thread.is_alive():
            log.warning("mcp_sync: the in-process server %s did not stop within %s s", self.name, SHUTDOWN_TIMEOUT)
        self._report_closed("the client closed the connection")

    def _report_closed(self, why: str) -> None:
        with self._lock:
            if self._reported:
                return
            self._reported = True
        self._sink.closed(ConnectionClosed(f"{self.target}: {why}"))
