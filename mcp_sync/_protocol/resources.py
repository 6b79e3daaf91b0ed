"""What a :class:`~mcp_sync.Client` owns, kept apart from the client itself.

* :class:`Resources` holds everything a client must shut down (engine, connect
  in progress, dispatcher, subscriptions, hosted tasks) and nothing that refers
  back to the client. So an unclosed client that nobody references can be
  collected, and a ``weakref.finalize`` on it closes these (with a
  ``ResourceWarning``, as ``subprocess.Popen`` does).
* :class:`Attempt` is one connect in progress. It runs on its own thread so
  that every caller waits for it with its own deadline and cancel token, and
  ``close()`` can fail it at once.
"""

from __future__ import annotations

import logging
import threading
import warnings
from typing import TYPE_CHECKING, Any, Callable, Protocol

from .._threads import Dispatcher, Outcome, Workers
from ..exceptions import ClientStateError, ConnectionClosed, MCPError

if TYPE_CHECKING:
    from .._engine import Engine
    from .hosted_tasks import HostedTasks
    from .lifecycle import Negotiated


class SubscriptionRegistry(Protocol):
    """What the connection asks of a client's subscriptions (see :mod:`.subscriptions`)."""

    def reconnected(self, engine: Engine, negotiated: Negotiated) -> None:
        """The connection came back: re-establish every subscription."""

    def close_all(self) -> None:
        """The client is closing: end every subscription."""

    def forget_after_fork(self) -> None:
        """In a forked child: forget the parent's subscriptions without touching them."""

    def connection_lost(self, engine: Engine) -> None:
        """``engine``'s connection ended: suspend what ran on it."""

    def suspended(self) -> bool:
        """Whether some subscription waits for the connection to come back."""

    def end_suspended(self, reason: str) -> None:
        """The connection will not come back by itself: end the waiting subscriptions."""

    def before_notification(self, engine: Engine, method: str, params: dict[str, Any]) -> None:
        """Reader thread: notice acknowledgments and server cancellations."""

    def dispatch(self, method: str, params: dict[str, Any]) -> None:
        """Dispatch thread: a session notification for the legacy subscriptions."""

    def session_renewed(self, engine: Engine, negotiated: Negotiated) -> None:
        """A legacy HTTP session was renewed: subscribe again."""

log = logging.getLogger("mcp_sync")

_JOIN_TIMEOUT = 5.0  # bound on waiting for a connect thread at close()


class Attempt:
    """One connect in progress. Thread-safe.

    Callers :meth:`join` it and wait on their own :class:`Outcome`, so each
    one's timeout or cancellation ends only its own wait. :meth:`finish`
    settles every waiter; :meth:`abort` (close()) also fails the requests of
    every engine the attempt started, which ends the connecting thread.
    """

    def __init__(self, previous: Engine | None, restarted: bool) -> None:
        self.previous = previous  # the dead connection this one replaces
        self.restarted = restarted
        self.engines: list[Engine] = []
        self.aborted: MCPError | None = None
        self.error: BaseException | None = None  # how it failed, once it did
        self._lock = threading.Lock()
        self._waiters: list[Outcome] = []
        self._done = Outcome()
        self._on_failure: list[Callable[[BaseException], None]] = []

    def join(self) -> Outcome:
        """A new waiter's outcome (settled at once if the attempt already ended)."""
        waiter = Outcome()
        with self._lock:
            if not self._done.done:
                self._waiters.append(waiter)
                return waiter
        self._settle(waiter)
        return waiter

    def leave(self, waiter: Outcome) -> None:
        with self._lock:
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def on_failure(self, callback: Callable[[BaseException], None]) -> None:
        """Run ``callback(error)`` if the attempt fails (at once if it already did)."""
        with self._lock:
            if not self._done.done:
                self._on_failure.append(callback)
                return
        if self.error is not None:
            callback(self.error)

    def _settle(self, waiter: Outcome) -> None:
        try:
            waiter.settle(self._done.result())
        except BaseException as exc:  # the attempt's error, for this waiter
            waiter.settle(error=exc)

    def finish(self, value: Any = None, error: BaseException | None = None) -> None:
        with self._lock:
            if not self._done.settle(value, error):
                return
            self.error = error
            waiters, self._waiters = self._waiters, []
            callbacks, self._on_failure = self._on_failure, []
        for waiter in waiters:
            self._settle(waiter)
        if error is not None:
            for callback in callbacks:
                try:
                    callback(error)
                except Exception:
                    log.exception("mcp_sync: a connect-failure callback raised")

    def add_engine(self, engine: Engine) -> bool:
        """Record an engine this attempt started; False once aborted (the caller closes it)."""
        with self._lock:
            if self.aborted is not None:
                return False
            self.engines.append(engine)
            return True

    def abort(self, error: MCPError) -> list[Engine]:
        """Fail every waiter and every request of the attempt's engines now; returns the engines."""
        with self._lock:
            self.aborted = error
            engines = list(self.engines)
        self.finish(error=error)
        for engine in engines:
            engine.closed(ConnectionClosed(error.message))
        return engines


class Resources:
    """Everything one client must shut down; never a reference to the client.

    ``open`` is True from the start of a connect until ``shut_down``: a client
    collected while open is closed by its finalizer with a ResourceWarning.
    """

    def __init__(self, make_subscriptions: Callable[[], SubscriptionRegistry], make_hosted: Callable[[], HostedTasks],
                 label: str) -> None:
        self._make_subscriptions = make_subscriptions
        self._make_hosted = make_hosted
        self.label = label
        self.open = False
        self.engine: Engine | None = None
        self.attempt: Attempt | None = None
        self.dispatcher: Dispatcher | None = None
        self.subscriptions = make_subscriptions()
        self.hosted_tasks = make_hosted()
        self.connecting = Workers("connect")
        self._lock = threading.Lock()

    def renew(self) -> None:
        """Fresh parts after a close (connect() opens a closed client again) or a fork."""
        self.subscriptions = self._make_subscriptions()
        self.hosted_tasks = self._make_hosted()
        self.connecting = Workers("connect")
        self.engine = self.attempt = self.dispatcher = None
        self._lock = threading.Lock()

    def shut_down(self, reason: str) -> None:
        """Release every waiter at once, then stop everything. Idempotent; any thread.

        Order: connect waiters and request waiters fail first (ConnectionClosed),
        then subscriptions end, then transports shut down (process exit, sockets),
        then the threads are joined.
        """
        with self._lock:
            self.open = False
            attempt, engine, dispatcher = self.attempt, self.engine, self.dispatcher
            self.attempt = self.engine = self.dispatcher = None
            subscriptions, hosted, connecting = self.subscriptions, self.hosted_tasks, self.connecting
        engines: list[Engine] = []
        if attempt is not None:
            engines += attempt.abort(ClientStateError(f"connect: {reason} while connecting"))
        if engine is not None:
            engine.closed(ConnectionClosed(reason))
            engines.append(engine)
        subscriptions.close_all()
        for each in engines:
            each.close(reason)
        connecting.close(_JOIN_TIMEOUT)
        hosted.close()
        if dispatcher is not None:
            dispatcher.stop()


def collect(resources: Resources) -> None:
    """The finalizer of a client nobody references any more: close what it left open."""
    if not resources.open:
        return
    warnings.warn(f"unclosed {resources.label}: call close() or use 'with'", ResourceWarning, stacklevel=2)
    try:
        resources.shut_down("the client was garbage-collected without close()")
    except Exception:  # pragma: no cover - a finalizer must not raise; shut_down raises only on a bug
        log.debug("mcp_sync: closing a collected client failed", exc_info=True)

