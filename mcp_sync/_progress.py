"""``progress=True``: a progress bar for one call, driven by the server's progress notifications.

tqdm's bar when tqdm is importable (``tqdm.auto``: the widget in a notebook, the text bar in a
terminal; imported here only when a bar is asked for, so ``import mcp_sync`` never loads it),
else a plain one-line bar on stderr:

- stderr a terminal: one line redrawn in place (carriage return), at most every 0.1 s, finished
  with a newline when the call ends (erased instead when no progress came: a quick call leaves
  nothing behind; tqdm's bar likewise);
- stderr not a terminal (a log, a notebook without tqdm): sparse lines only, one per tenth of a
  known total, one at most every 5 s when the total is unknown, and the last state when the call
  ends; a call that got no progress writes nothing.

The server's ``message`` is shown escaped for terminals (:func:`~._terminal.escape`) and cut to
a bounded length. Updates run on the client's dispatch thread, the close on the caller's: one
lock orders them, and an update that arrives after the close is dropped.
"""

from __future__ import annotations

import functools
import logging
import math
import sys
import threading
import time
import warnings
from typing import Any, Callable, Iterator, TextIO, TypeVar

from ._terminal import escape
from .models import Tool

log = logging.getLogger("mcp_sync")

#: the longest message (characters) and label a bar shows
MAX_MESSAGE = 200
MAX_LABEL = 40
#: a terminal's plain bar is redrawn at most this often (seconds); a log line without a total
#: is written at most this often
REDRAW_EVERY = 0.1
LOG_EVERY = 5.0
_SPINNER = "|/-\\"

F = TypeVar("F", bound=Callable[..., Any])


def _amount(value: float) -> str:
    return f"{value:g}"


def _fraction(done: float, total: float | None) -> float | None:
    """``done / total`` in [0, 1], or None when there is no usable total (none, zero, not finite)."""
    if total is None or not math.isfinite(total) or total <= 0 or not math.isfinite(done):
        return None
    return max(0.0, min(1.0, done / total))


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


class ProgressBar:
    """One call's bar: ``bar(progress, total, message)`` per notification, ``close(error)`` once.

    Made by :func:`open_bar`; never raises into the dispatch thread (a failing display is logged).
    """

    def __init__(self, label: str) -> None:
        self.label = escape(label[:MAX_LABEL], one_line=True)
        self.closed = False
        self._lock = threading.Lock()

    def start(self) -> None:
        """Show the bar (idempotent)."""
        with self._lock:
            if not self.closed:
                self._guarded(self._start)

    def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        text = escape(message[:MAX_MESSAGE], one_line=True) if message else ""
        with self._lock:
            if not self.closed:
                self._guarded(self._start)
                self._guarded(lambda: self._update(progress, total, text))

    def close(self, error: BaseException | None = None) -> None:
        """End the bar; later updates are dropped. ``error``: why the call failed, shown."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self._guarded(lambda: self._close(None if error is None else type(error).__name__))

    def _guarded(self, step: Callable[[], None]) -> None:
        try:
            step()
        except Exception as exc:  # a display problem must not fail the call or the dispatch thread
            log.debug("mcp_sync: progress bar %r: %s: %s", self.label, type(exc).__name__, exc)

    def _start(self) -> None:
        raise NotImplementedError

    def _update(self, progress: float, total: float | None, message: str) -> None:
        raise NotImplementedError

    def _close(self, failure: str | None) -> None:
        raise NotImplementedError


class PlainBar(ProgressBar):
    """The bar without tqdm: one line on ``stream`` (stderr when the bar is made)."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        super().__init__(label)
        self._stream = sys.stderr if stream is None else stream
        self._live = _isatty(self._stream)
        self._started = self._drawn = False
        self._state: tuple[float, float | None, str] | None = None
        self._logged: tuple[float, float | None, str] | None = None  # the state of the last log line
        self._updates = 0
        self._last_write = 0.0
        self._last_tenth = -1

    def line(self, failure: str | None = None, width: int = 80) -> str:
        """The bar as text, at most ``width`` characters.

        Example: ``label [#####     ] 5/10 50% step 5`` or, without a total, ``label | 5 step 5``
        """
        if self._state is None:
            body = "..."
        else:
            done, total, message = self._state
            fraction = _fraction(done, total)
            if fraction is None:
                body = f"{_SPINNER[self._updates % len(_SPINNER)]} {_amount(done)}" if self._live else _amount(done)
            else:
                filled = int(fraction * 20)
                body = f"[{'#' * filled}{' ' * (20 - filled)}] {_amount(done)}/{_amount(total or 0)} " \
                       f"{int(fraction * 100)}%"
            if message:
                body += f" {message}"
        end = f" ({failure})" if failure else ""
        head = f"{self.label} {body}"
        return head[: max(10, width - len(end))] + end

    def _width(self) -> int:
        import shutil  # here: ``import mcp_sync`` stays light

        return max(20, shutil.get_terminal_size((80, 24)).columns) - 1

    def _write(self, text: str) -> None:
        self._stream.write(text)
        self._stream.flush()
        self._last_write = time.monotonic()

    def _start(self) -> None:
        if self._started:
            return
        self._started = True
        if self._live:  # a terminal sees at once that the call is under way
            self._write("\r\x1b[K" + self.line(width=self._width()))
            self._drawn = True

    def _update(self, progress: float, total: float | None, message: str) -> None:
        self._state = (progress, total, message)
        self._updates += 1
        now = time.monotonic()
        if self._live:
            if now - self._last_write >= REDRAW_EVERY:
                self._write("\r\x1b[K" + self.line(width=self._width()))
            return
        fraction = _fraction(progress, total)
        if fraction is not None:
            tenth = int(fraction * 10)
            if tenth <= self._last_tenth:
                return
            self._last_tenth = tenth
        elif self._drawn and now - self._last_write < LOG_EVERY:
            return
        self._write(self.line(width=100) + "\n")
        self._drawn, self._logged = True, self._state

    def _close(self, failure: str | None) -> None:
        if self._live:
            if self._drawn and self._state is None and failure is None:
                self._write("\r\x1b[K")  # no progress came: the bar goes, nothing is left behind
            elif self._drawn:
                self._write("\r\x1b[K" + self.line(failure, self._width()) + "\n")
        elif self._state is not None and (failure or self._state != self._logged):  # no line twice
            self._write(self.line(failure, 100) + "\n")


class TqdmBar(ProgressBar):
    """The bar as tqdm's (``tqdm.auto``: a widget in a notebook); its monitor thread stays off."""

    def __init__(self, label: str, tqdm_class: Any) -> None:
        super().__init__(label)
        self._class = tqdm_class
        self.bar: Any = None
        self.updated = False

    def _start(self) -> None:
        if self.bar is None:
            self.bar = self._class(total=None, desc=self.label, leave=True, file=sys.stderr)

    def _update(self, progress: float, total: float | None, message: str) -> None:
        bar = self.bar
        if total != bar.total and (total is None or _fraction(progress, total) is not None):
            started = bar.start_t
            bar.reset(total=total)  # a notebook widget learns its new maximum only so
            bar.start_t = started  # the time shown is the call's
        self.updated = True
        bar.n = progress if math.isfinite(progress) else 0
        bar.set_postfix_str(message, refresh=False)
        bar.refresh()

    def _close(self, failure: str | None) -> None:
        if self.bar is None:
            return
        if failure is None and not self.updated:
            self.bar.leave = False  # no progress came: the bar goes, nothing is left behind
        if failure:
            self.bar.set_postfix_str(f"{self.bar.postfix or ''} ({failure})".strip(), refresh=False)
        self.bar.close()


_quiet_classes: dict[Any, Any] = {}


def _tqdm_class() -> Any:
    """tqdm.auto's bar class with its monitor thread off, or None when tqdm is not importable."""
    try:
        with warnings.catch_warnings():
            # in a notebook without ipywidgets tqdm.auto warns once, at import, then uses its text bar:
            # that text bar is what the user gets either way, so the warning is only noise in the cell
            warnings.filterwarnings("ignore", message="IProgress not found")
            from tqdm.auto import tqdm
    except ImportError:
        return None
    quiet = _quiet_classes.get(tqdm)
    if quiet is None:
        # tqdm's monitor is a thread nobody would end: mcp_sync starts no thread close() cannot end
        quiet = _quiet_classes[tqdm] = type("McpSyncProgress", (tqdm,), {"monitor_interval": 0})
    return quiet


def open_bar(label: str) -> ProgressBar:
    """A new, not yet shown bar for one call: tqdm's when importable, else a :class:`PlainBar`.

    Example: ``bar = open_bar("call_tool slow"); bar.start(); bar(1, 4, "step 1"); bar.close()``
    """
    tqdm_class = _tqdm_class()
    return PlainBar(label) if tqdm_class is None else TqdmBar(label, tqdm_class)


def _label(method: str, args: tuple[Any, ...]) -> str:
    first = args[0] if args else None
    name = first.name if isinstance(first, Tool) else first if isinstance(first, str) else None
    return f"{method} {name}" if name else method


def _closing(items: Iterator[Any], bar: ProgressBar) -> Iterator[Any]:
    """``items``, the bar shown from the first item asked for and closed when they end."""
    try:
        bar.start()
        yield from items
    except BaseException as exc:
        bar.close(exc)
        raise
    finally:
        bar.close()


def shows_progress(lazy: bool = False) -> Callable[[F], F]:
    """A request method's ``progress=True``: a bar for the call (for an iterator, ``lazy``: for
    the walk), closed when the call returns or raises. Anything else passes as given.

    Example: ``@shows_progress()`` above ``def call_tool(self, name, ..., progress=None, ...)``
    """

    def decorate(method: F) -> F:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            if kwargs.get("progress") is not True:
                return method(*args, **kwargs)
            bar = kwargs["progress"] = open_bar(_label(method.__name__, args[1:2]))
            if lazy:
                return _closing(method(*args, **kwargs), bar)
            bar.start()
            try:
                result = method(*args, **kwargs)
            except BaseException as exc:
                bar.close(exc)
                raise
            bar.close()
            return result

        return call  # type: ignore[return-value]

    return decorate
