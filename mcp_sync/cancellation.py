"""CancellationToken: cancel a blocked request from any thread."""

from __future__ import annotations

import logging
import threading
from typing import Callable

log = logging.getLogger("mcp_sync")


class CancellationToken:
    """A one-shot flag that cancels the requests it is passed to.

    Thread-safe: ``cancel()`` may be called from any thread, any number of times
    (only the first reason counts). A request waiting on the token raises
    :class:`mcp_sync.Cancelled` at once and the server is told
    (``notifications/cancelled`` on stdio and legacy HTTP, closing the response
    stream on modern HTTP). A token may be shared by several requests; cancelled
    once, it stays cancelled.

    Example::

        token = mcp_sync.CancellationToken()
        threading.Timer(2, token.cancel, kwargs={"reason": "user pressed stop"}).start()
        client.call_tool("slow", {}, cancel=token)   # raises mcp_sync.Cancelled
    """

    __slots__ = ("_callbacks", "_cancelled", "_lock", "_reason")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._reason: str | None = None
        self._callbacks: list[Callable[[str | None], None]] = []

    @property
    def cancelled(self) -> bool:
        """True once ``cancel()`` was called."""
        return self._cancelled

    @property
    def reason(self) -> str | None:
        """The reason given to the first ``cancel()``."""
        return self._reason

    def cancel(self, reason: str | None = None) -> None:
        """Cancel every request using this token. Idempotent.

        Example: ``token.cancel(reason="user pressed stop")`` (from any thread)
        """
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:  # one failing callback must not keep the others from running
            try:
                callback(reason)
            except Exception:
                log.exception("mcp_sync: a cancellation callback raised (ignored)")

    def add_callback(self, callback: Callable[[str | None], None]) -> Callable[[], None]:
        """Run ``callback(reason)`` on cancellation (at once if already cancelled).

        Returns a function that removes the callback. Used by the engine; the
        callback runs on the cancelling thread and must not block.

        Example: ``remove = token.add_callback(lambda reason: print("cancelled:", reason)); remove()``
        """
        with self._lock:
            if not self._cancelled:
                self._callbacks.append(callback)
                return lambda: self._remove(callback)
        callback(self._reason)
        return lambda: None

    def _remove(self, callback: Callable[[str | None], None]) -> None:
        with self._lock:
            try:
                self._callbacks.remove(callback)
            except ValueError:
                pass

    def __repr__(self) -> str:
        return f"<CancellationToken cancelled={self._cancelled}>"
