"""HTTP servers under test bind port 0 themselves and say the port they got.

No port is ever picked by one process and bound later by another: that leaves a window in
which anything else on the machine (another test run beside this one, a parallel worker) may
take it, and the test then talks to a stranger. Instead a server binds port 0, and before its
first accept writes one line ``LISTENING <port>`` to its standard error: the Python SDK server
(``sdk_server.py``) through :func:`announce`, Node servers through ``report_port.cjs``, which
``node --require`` preloads. :func:`start` starts such a server and reads that line.
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import IO

PREFIX = b"LISTENING "
REPORT_PORT_JS = str(Path(__file__).resolve().with_name("report_port.cjs"))


def announce(port: int) -> None:
    """Say the port this server listens on (call it once the socket listens)."""
    import sys

    print(f"LISTENING {port}", file=sys.stderr, flush=True)


class Started:
    """A server process started by :func:`start`: its ``proc``, its ``port`` and its ``stderr()``."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int, tail: list[bytes]) -> None:
        self.proc, self.port, self._tail = proc, port, tail

    def stderr(self) -> str:
        """The last lines the server wrote to its standard error (for failure messages)."""
        return b"".join(self._tail).decode(errors="replace")


def start(cmd: list[str], env: dict[str, str] | None = None, ready_timeout: float = 30.0) -> Started:
    """Start ``cmd`` (a server told to bind port 0) in a session of its own; wait for its port.

    Its standard error is drained for as long as it runs (the last 50 lines are kept), so it never
    blocks on a full pipe. RuntimeError if it exits or says no port within ``ready_timeout``
    (it is killed then).
    """
    proc = subprocess.Popen(cmd, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    tail: list[bytes] = []
    found: list[int] = []
    ready = threading.Event()
    assert proc.stderr is not None
    threading.Thread(target=_drain, args=(proc.stderr, tail, found, ready), daemon=True).start()
    if not ready.wait(ready_timeout) or not found:
        exited = ready.is_set()  # its standard error closed before it said a port
        stop(proc)
        said = b"".join(tail).decode(errors="replace")
        why = f"exited with {proc.returncode}" if exited else f"said no port within {ready_timeout} s"
        raise RuntimeError(f"server {cmd} {why}: {said[-2000:]}")
    return Started(proc, found[0], tail)


def _drain(stream: IO[bytes], tail: list[bytes], found: list[int], ready: threading.Event) -> None:
    for line in stream:  # a line at a time, whatever its length: the server is ours
        if not found and line.startswith(PREFIX) and line[len(PREFIX):].strip().isdigit():
            found.append(int(line[len(PREFIX):]))
            ready.set()
        tail.append(line[:2000])
        del tail[:-50]
    ready.set()  # the server closed its standard error: it has exited (or is exiting)


def stop(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """End the server and everything in its session: SIGTERM, then SIGKILL after ``grace`` s."""
    for sig in (15, 9):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            proc.wait(grace)
            return
        except subprocess.TimeoutExpired:
            continue
    deadline = time.monotonic() + grace  # SIGKILL cannot be refused: the wait below is a formality
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
