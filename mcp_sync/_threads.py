"""The one home of mcp_sync's threading policy.

Every thread the library starts is made by :func:`spawn` (daemon, named
``mcp_sync-<role>-<server>``). :class:`Outcome` is the future an application
thread blocks on; :class:`Dispatcher` runs user callbacks in order on one
thread that is never a transport's reader, so callbacks may call the client.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Callable

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
    one wins, atomically. Built on two C-level locks rather than an Event (a
    pure-Python Condition): this is the hand-off on every request's hot path.
    """

    __slots__ = ("_claim", "_done", "_error", "_gate", "_value")

    def __init__(self) -> None:
        self._claim = threading.Lock()  # taken by the one settle that wins
        self._gate = threading.Lock()  # held until settled; waiters pass through it
        self._gate.acquire()
        self._value: Any = None
        self._error: BaseException | None = None
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def settle(self, value: Any = None, error: BaseException | None = None) -> bool:
        if not self._claim.acquire(blocking=False):
            return False
        self._value, self._error = value, error
        self._done = True
        self._gate.release()
        return True

    def wait(self, timeout: float | None) -> bool:
        """Block until settled or ``timeout`` seconds pass; True when settled."""
        if self._done:
            return True
        passed = self._gate.acquire() if timeout is None else self._gate.acquire(timeout=max(timeout, 0.0))
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

    A callback that raises is logged and the next one runs. ``stop()`` lets the
    queued callbacks finish (bounded by ``timeout``) and ends the thread.
    """

    _STOP = object()

    def __init__(self, server: str) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._server = server
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._stopped = False

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

    def submit(self, callback: Callable[..., Any], *args: Any) -> None:
        if self._stopped:
            return
        self._ensure_started()
        self._queue.put((callback, args))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._STOP:
                return
            callback, args = item
            try:
                callback(*args)
            except Exception:
                log.exception("mcp_sync: a callback raised (ignored)")

    def stop(self, timeout: float = 5.0) -> None:
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        if self._thread is not None:
            self._queue.put(self._STOP)
            join_quietly(self._thread, timeout)
