"""Bounded, interruptible pipe I/O for the stdio transport.

Nothing here waits without a bound or a way out: reads are split into lines of
bounded size and stop when a wake-up pipe becomes readable; writes stop at a
deadline or when asked to. POSIX uses non-blocking descriptors and ``poll``;
Windows (no ``poll`` on pipes) falls back to blocking calls, which close()
unblocks by ending the process.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from typing import Any, Callable, Iterator

#: How long a blocked writer sleeps between looks at its deadline and at close().
_WRITE_SLICE = 0.1
_READ_CHUNK = 1 << 16
#: Once woken to stop, a reader still reads what is already in its pipe, up to this much (a
#: process that keeps writing cannot keep it going).
_DRAIN_BYTES = 1 << 20

CAN_POLL = sys.platform != "win32"
if CAN_POLL:
    import select


# The C scanner behind json.loads, called directly: a line is decoded once as UTF-8 and parsed
# without json.loads' per-call detours (encoding detection, two whitespace regex matches).
_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
#: What :func:`parse_line` returns for an empty or all-whitespace line.
BLANK: Any = object()


def parse_line(line: bytes) -> Any:
    """The JSON value one line holds, :data:`BLANK` for an empty or whitespace line, or None
    when it is not JSON (bad UTF-8, not JSON, nested past the recursion limit).

    Exactly what ``json.loads(line)`` accepts: a line the quick way does not take whole
    (surrounding whitespace, a byte-order mark, anything wrong) goes the way of ``json.loads``.

    Example: ``parse_line(b'{"a": 1}') == {"a": 1}``; ``parse_line(b"oops") is None``
    """
    try:
        text = line.decode("utf-8")
        value, end = _SCAN(text, 0)
        if end == len(text):
            return value
    except (ValueError, StopIteration, RecursionError):
        pass
    if not line.strip():
        return BLANK
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def make_nonblocking(fd: int) -> None:
    if CAN_POLL:
        os.set_blocking(fd, False)


def read_lines(fd: int, wake_fd: int | None, max_line: int) -> Iterator[tuple[bytes, bool]]:
    """Yield ``(line, cut)`` for each line read from ``fd``, without its newline.

    A line longer than ``max_line`` bytes is yielded once, as soon as it passes
    the bound, as its first ``max_line`` bytes with ``cut=True``; the rest of it
    is skipped. So memory stays bounded by ``max_line`` plus one read. Ends at
    end of file, or when ``wake_fd`` becomes readable (POSIX) and what the pipe already
    holds is read (at most ``_DRAIN_BYTES`` more).
    """
    pending = bytearray()
    skipping = False
    read = _reader(fd, wake_fd)
    while True:
        data = read()
        if not data:
            if pending and not skipping:
                yield bytes(pending), False
            return
        newline = data.find(b"\n")
        if newline == len(data) - 1 and not pending and not skipping:  # one whole line: the common case
            yield (data[:max_line], True) if newline > max_line else (data[:newline], False)
            continue
        start = 0
        while newline >= 0:
            if skipping:
                skipping = False
            else:
                if pending:
                    pending += data[start:newline]
                    line = bytes(pending)
                    pending.clear()
                else:
                    line = data[start:newline]
                yield (line[:max_line], True) if len(line) > max_line else (line, False)
            start = newline + 1
            newline = data.find(b"\n", start)
        if not skipping:
            pending += data[start:]
            if len(pending) > max_line:
                yield bytes(pending[:max_line]), True
                pending.clear()
                skipping = True


def _reader(fd: int, wake_fd: int | None) -> Callable[[], bytes]:
    """A function returning the next chunk from ``fd``, or b"" at end of file or on wake-up."""
    if wake_fd is None:  # pragma: no cover - Windows only (no poll on pipes: no wake-up pipe)
        return lambda: os.read(fd, _READ_CHUNK)
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    poller.register(wake_fd, select.POLLIN)
    drain = [_DRAIN_BYTES]  # once woken: what may still be read of what is already in the pipe

    def drained() -> bytes:
        """Woken: deliver what is already in the pipe (the last lines), then stop."""
        if drain[0] <= 0:
            return b""
        try:
            data = os.read(fd, min(_READ_CHUNK, drain[0]))
        except BlockingIOError:
            return b""
        drain[0] -= len(data)
        return data

    def read() -> bytes:
        while True:  # wait first: one poll and one read per arrival, no EAGAIN round trip
            for ready_fd, _ in poller.poll():
                if ready_fd == wake_fd:
                    return drained()
            try:
                return os.read(fd, _READ_CHUNK)
            except BlockingIOError:
                continue

    return read


def write_until(fd: int, data: bytes, deadline: float, stopped: Callable[[], bool]) -> int:
    """Write ``data`` to ``fd`` until all of it is written, ``deadline`` (monotonic) passes or
    ``stopped()`` says so; return how many bytes were written. Raises OSError (EPIPE).
    The common case, a pipe that takes it all at once, is one ``os.write`` and nothing more."""
    written = 0
    if CAN_POLL:  # the common case, tried before stopped() is asked: the pipe takes it all at once
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            pass
        if written == len(data):
            return written
    view = memoryview(data)
    if not CAN_POLL:  # a blocking write: close() ends the process, which breaks the pipe
        while written < len(data):
            written += os.write(fd, view[written:])
        return written
    poller = None
    while written < len(data) and not stopped():
        try:
            written += os.write(fd, view[written:])
            continue
        except BlockingIOError:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        if poller is None:
            poller = select.poll()
            poller.register(fd, select.POLLOUT)
        poller.poll(min(remaining, _WRITE_SLICE) * 1000)
    return written


def unread_bytes(fd: int) -> int:
    """How many bytes written to the pipe ``fd`` nobody has read yet (0 where the OS cannot say)."""
    try:
        import array
        import fcntl
        import termios

        count = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, count, True)
        return int(count[0])
    except (ImportError, OSError, ValueError):  # pragma: no cover - Windows, or a pipe closed under us
        return 0


def describe_exit(code: int | None) -> str:
    """``"exited with code 3"``, ``"was killed by SIGKILL"`` or ``"exited"`` (code unknown)."""
    if code is None:
        return "exited"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


# -- the top-level "id" of a JSON-RPC envelope, from the head of a line -------------------------

_TOKEN = re.compile(
    rb'\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\],:])|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)'
    rb"|(true|false|null))"
)


def top_level_id(head: bytes) -> int | str | None:
    """The ``"id"`` member of the JSON object that ``head`` begins, or None when it cannot
    be told for certain from ``head`` (no top-level id in it, cut off, not an int or str, or
    not valid JSON up to there).

    Strings are skipped whole and nesting is tracked, so an ``"id"`` inside the result, or
    inside a string, never counts. If the object repeats ``"id"``, the first one counts.
    """
    depth = 0
    expect_key = False
    position = 0
    size = len(head)
    while position < size:
        match = _TOKEN.match(head, position)
        if match is None:
            return None  # invalid, or a token cut off by the end of the head
        position = match.end()
        string, punct = match.group(1), match.group(2)
        if depth == 0 and punct != b"{":
            return None  # not an object
        if punct is not None:
            if punct in b"{[":
                depth += 1
                expect_key = depth == 1
            elif punct in b"}]":
                depth -= 1
                if depth == 0:
                    return None  # the whole object, and no id in it
            elif punct == b",":
                expect_key = depth == 1
            continue
        if not (depth == 1 and expect_key and string is not None):
            continue
        expect_key = False
        try:
            key = json.loads(string)
        except ValueError:
            return None
        if key != "id":
            continue
        return _id_value(head, position)
    return None


def _id_value(head: bytes, position: int) -> int | str | None:
    colon = _TOKEN.match(head, position)
    if colon is None or colon.group(2) != b":":
        return None
    value = _TOKEN.match(head, colon.end())
    if value is None:
        return None
    after = _TOKEN.match(head, value.end())  # a number is complete only once its delimiter shows
    if after is None or after.group(2) not in (b",", b"}"):
        return None
    string, number = value.group(1), value.group(3)
    try:
        if string is not None:
            decoded = json.loads(string)
            return decoded if isinstance(decoded, str) else None
        if number is not None and number.lstrip(b"-").isdigit():
            return int(number)
    except ValueError:
        return None
    return None
