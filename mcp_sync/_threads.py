"""The one home of mcp_sync's threading policy.

Every thread the library starts is made by :func:`spawn` (daemon, named
``mcp_sync-<role>-<server>``). :class:`Outcome` is the future an application
thread blocks on; :class:`Dispatcher` runs user callbacks in order on one
thread that is never a transport's reader, so callbacks may call the client.
"""

from __future__ import annotations

import functools
import inspect
import logging
import queue
import threading
import time
from typing import Any, Callable, TypeVar

from .cancellation import CancellationToken

log = logging.getLogger("mcp_sync")


def spawn(target: Callable[[], None], role: str, server: str) -> threading.Thread:
    """Start a daemon thread named ``mcp_sync-<role>-<server>``."""
    thread = threading.Thread(target=target, name=f"mcp_sync-{role}-{server}", daemon=True)
    thread.start()
    return thread


def join_quietly(thread: threading.Thread | None, timeout: float) -> None:
    """Join ``thread`` unless it is the calling thread (a callback closing the client)."""
    if thread is not None and thread is not threading.current_thread():
        thread.join(timeout)


class Workers:
    """Short-lived worker threads that ``close()`` joins: each leaves the set when it ends.

    After ``close()`` no new worker starts (``spawn`` returns None), so none can
    slip past the join. Thread-safe.
    """

    def __init__(self, server: str) -> None:
        self._server = server
        self._lock = threading.Lock()
        self._threads: set[threading.Thread] = set()
        self._closed = False

    def spawn(self, target: Callable[[], None], role: str) -> threading.Thread | None:
        """Start ``target`` on a daemon thread named ``mcp_sync-<role>-<server>``; None once closed."""

        def run() -> None:
            try:
                target()
            finally:
                with self._lock:
                    self._threads.discard(threading.current_thread())

        with self._lock:
            if self._closed:
                return None
            thread = spawn(run, role, self._server)
            self._threads.add(thread)
        return thread

    def __len__(self) -> int:
        """How many workers are running now."""
        with self._lock:
            return len(self._threads)

    def close(self, timeout: float) -> None:
        """Refuse new workers and join the running ones, ``timeout`` seconds in all."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for thread in threads:
            join_quietly(thread, max(0.05, deadline - time.monotonic()))


def run_concurrently(
    calls: dict[str, tuple[Any, ...]], server: str, role: str = "handler"
) -> dict[str, tuple[Any, BaseException | None]]:
    """Run each ``key: (function, *args)`` and return ``key: (value, error)``.

    One call runs on the calling thread; more run on helper threads, joined
    before this returns (so nothing outlives it).
    """

    def run(key: str) -> None:
        function, *args = calls[key]
        try:
            results[key] = (function(*args), None)
        except Exception as exc:
            results[key] = (None, exc)

    results: dict[str, tuple[Any, BaseException | None]] = {}
    keys = list(calls)
    helpers = [spawn(lambda k=key: run(k), role, server) for key in keys[1:]]  # type: ignore[misc]
    if keys:
        run(keys[0])
    for thread in helpers:
        thread.join()
    return {key: results[key] for key in keys}


class Outcome:
    """A write-once slot: a result or an exception, settled by whichever comes first.

    ``settle`` returns False when the slot was already settled, which is how the
    races between an answer, a timeout and a cancellation are decided: exactly
    one wins, atomically (``list.pop`` on a one-item list: one C call, atomic with
    or without the GIL). Built on one C-level lock rather than an Event (a
    pure-Python Condition): this is the hand-off on every request's hot path.
    """

    __slots__ = ("_claim", "_done", "_error", "_gate", "_value")

    def __init__(self) -> None:
        self._claim = [True]  # emptied by the one settle that wins
        self._gate = threading.Lock()  # held until settled; waiters pass through it
        self._gate.acquire()
        self._value: Any = None
        self._error: BaseException | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def settle(self, value: Any = None, error: BaseException | None = None) -> bool:
        try:
            self._claim.pop()
        except IndexError:  # settled already
            return False
        self._value, self._error = value, error
        self._done = True
        self._gate.release()
        return True

    def wait(self, timeout: float | None) -> bool:
        """Block until settled or ``timeout`` seconds pass; True when settled."""
        if self._done:
            return True
        passed = self._gate.acquire() if timeout is None else self._gate.acquire(True, max(timeout, 0.0))
        if passed:
            self._gate.release()  # open for any other waiter
        return passed or self._done

    def result(self) -> Any:
        """The value, or raise the error. Only after ``done``."""
        if self._error is not None:
            raise self._error
        return self._value


class Dispatcher:
    """Runs callbacks one at a time, in submission order, on its own thread.

    A callback that raises is logged and the next one runs. Nothing here ever
    blocks the caller (a transport's reader thread):

    * :meth:`submit` always queues: it is for what a waiting request or the end of
      the connection depends on, and the engine bounds those (at most
      ``MAX_QUEUED_PROGRESS`` progress deliveries per request wait: past that,
      later values are coalesced).
    * :meth:`offer` queues unless ``max_queued`` callbacks already wait; then the
      callback is dropped, counted in :attr:`dropped` and a warning is logged once
      per overflow. Notifications go this way, so a server cannot grow the queue
      without bound while the application's callbacks fall behind.

    :meth:`stop` discards what is still queued: once it returns, no queued callback
    runs. A callback already running in user code cannot be stopped; ``stop`` waits
    up to ``timeout`` seconds for it and returns; that callback then runs to its
    end and is the last one.

    Example::

        dispatcher = Dispatcher("demo")
        dispatcher.submit(print, "runs on mcp_sync-dispatch-demo")
        dispatcher.stop()
    """

    _STOP = object()
    #: How many callbacks may wait before :meth:`offer` starts dropping.
    DEFAULT_MAX_QUEUED = 10_000

    def __init__(self, server: str, *, max_queued: int = DEFAULT_MAX_QUEUED) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._server = server
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False
        self.max_queued = max_queued
        #: Callbacks :meth:`offer` dropped because the queue was full.
        self.dropped = 0
        self._overflowing = False

    def _ensure_started(self) -> None:
        if self._thread is None:
            with self._lock:
                if self._thread is None and not self._stopped:
                    self._thread = spawn(self._run, "dispatch", self._server)

    @property
    def thread(self) -> threading.Thread | None:
        return self._thread

    def on_thread(self) -> bool:
        """True when called from the dispatch thread itself."""
        return self._thread is not None and threading.current_thread() is self._thread

    def submit(self, callback: Callable[..., Any], *args: Any) -> bool:
        """Queue ``callback(*args)``; never dropped while running. False once stopped."""
        if self._stopped:
            return False
        self._ensure_started()
        self._queue.put((callback, args))
        return True

    def offer(self, callback: Callable[..., Any], *args: Any) -> bool:
        """Queue ``callback(*args)`` unless the queue is full (then drop it); True when queued."""
        if self._stopped:
            return False
        if self._queue.qsize() >= self.max_queued:
            with self._lock:
                self.dropped += 1
                first, self._overflowing = not self._overflowing, True
            if first:
                log.warning(
                    "mcp_sync: %s: callbacks are %d behind; dropping notifications until they catch up"
                    " (%d dropped so far)",
                    self._server,
                    self.max_queued,
                    self.dropped,
                )
            return False
        self._overflowing = False
        return self.submit(callback, *args)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._STOP or self._stopped:
                return
            callback, args = item
            try:
                callback(*args)
            except Exception:
                log.exception("mcp_sync: a callback raised (ignored)")

    def stop(self, timeout: float = 2.0) -> None:
        """Discard the queued callbacks and end the thread, waiting at most ``timeout`` s for a running one."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        while True:  # what is queued never runs: the thread checks ``_stopped`` before each callback
            try:
                self._queue.get_nowait()
            except queue.Empty:
                break
        if self._thread is not None:
            self._queue.put(self._STOP)
            join_quietly(self._thread, timeout)


_T = TypeVar("_T")


async def to_thread(call: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
    """Await a blocking mcp_sync call from an event loop (FastAPI, an async agent framework).

    The call runs on the running loop's default executor, so the loop is never blocked; the
    caller's context variables go with it (as :func:`asyncio.to_thread`). Unlike
    ``asyncio.to_thread``, cancelling the awaiting task cancels the request: when ``call``
    takes ``cancel=`` and none was given, a :class:`CancellationToken` is passed, and it is
    cancelled when the task is, so the server is told (``notifications/cancelled``) and the
    worker thread is freed at once instead of waiting out the call. The task's
    ``CancelledError`` is re-raised as asyncio expects.

    Example::

        @app.get("/weather")
        async def weather(city: str) -> str:
            result = await mcp_sync.to_thread(client.call_tool, "weather", {"city": city})
            return result.text
    """
    import asyncio
    import contextvars

    token = kwargs.get("cancel")
    if token is None and _takes_cancel(call):
        token = kwargs["cancel"] = CancellationToken()
    context = contextvars.copy_context()
    loop = asyncio.get_running_loop()
    future = loop.run_in_executor(None, functools.partial(context.run, call, *args, **kwargs))
    try:
        return await future
    except asyncio.CancelledError:
        if token is not None:
            token.cancel("the awaiting asyncio task was cancelled")
        raise


def _takes_cancel(call: Callable[..., Any]) -> bool:
    """Whether ``call`` accepts a ``cancel=`` keyword (every request method of a client does)."""
    try:
        parameters = inspect.signature(call).parameters
    except (TypeError, ValueError):  # a builtin without a signature
        return False
    return "cancel" in parameters


async def run_blocking(function: Callable[..., Any], *args: Any) -> Any:
    """Await a blocking call (a tool call from an asyncio framework's tool): it runs on the running
    event loop's default executor, the application's threads, so the loop is never blocked."""
    import asyncio

    return await asyncio.get_running_loop().run_in_executor(None, function, *args)
