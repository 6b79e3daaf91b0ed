"""stdio transport: a spawned server process, one JSON message per line.

Threads (all daemon, all ended by :meth:`StdioTransport.close`):

* ``mcp_sync-reader-<server>`` reads stdout, parses lines, hands them to the sink;
* ``mcp_sync-stderr-<server>`` drains stderr continuously (T2) so a chatty
  server never blocks on a full pipe, keeping the last lines for error messages;
* ``mcp_sync-exit-<server>`` waits for the process, so a server that dies while
  a grandchild still holds its stdout is noticed within a second.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
from typing import IO, Any, Callable, Mapping, Sequence, Union

from .._threads import join_quietly, spawn
from ..exceptions import ConnectionClosed, ProtocolError
from .base import MessageSink

log = logging.getLogger("mcp_sync.stdio")

#: Environment variables a child gets by default (like other MCP clients).
DEFAULT_ENV_VARS: tuple[str, ...] = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
)

StderrTarget = Union[None, IO[str], Callable[[str], None]]

_STDERR_TAIL_LINES = 20
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)  # built once; never NaN
_CHUNK = 1 << 20
_ID_PATTERN = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


def default_environment(env: Mapping[str, str] | None = None, *, inherit: bool = False) -> dict[str, str]:
    """The child's environment: the allow-list (or everything, with ``inherit``) plus ``env``."""
    base = dict(os.environ) if inherit else {k: os.environ[k] for k in DEFAULT_ENV_VARS if k in os.environ}
    base.update(env or {})
    return base


class StdioTransport:
    """Runs ``command args`` and talks newline-delimited JSON-RPC over its pipes.

    ``stderr`` is where the server's stderr lines go: ``None`` logs them to the
    ``mcp_sync.stderr.<server>`` logger at INFO, a file-like object gets them
    written, a callable is called with each line (on the stderr thread: keep it
    quick). ``shutdown_timeout`` bounds each step of close(): stdin closed ->
    wait -> SIGTERM to the process group -> wait -> SIGKILL (T5).

    Thread-safe: ``send`` may be called from any thread; writes are serialized.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        inherit_env: bool = False,
        stderr: StderrTarget = None,
        max_message_bytes: int = 64 * 1024 * 1024,
        shutdown_timeout: float = 2.0,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env else None
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.stderr_target = stderr
        self.max_message_bytes = max_message_bytes
        self.shutdown_timeout = shutdown_timeout
        self.name = os.path.basename(command) or "server"
        self._process: subprocess.Popen[bytes] | None = None
        self._sink: MessageSink | None = None
        self._write_lock = threading.Lock()
        self._close_lock = threading.Lock()
        self._closing = False
        self._reported = False
        self._threads: list[threading.Thread] = []
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._stderr_log = logging.getLogger(f"mcp_sync.stderr.{self.name}")  # renamed at start()

    # -- lifecycle -------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, sink: MessageSink) -> None:
        """Spawn the server and its reader threads. Raises ConnectionClosed if it cannot start."""
        self._sink = sink
        self._stderr_log = logging.getLogger(f"mcp_sync.stderr.{self.name}")  # the client may rename us
        popen_kwargs: dict[str, Any] = {}
        if sys.platform == "win32":
            popen_kwargs["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
        else:
            popen_kwargs["start_new_session"] = True  # own process group: close() can end grandchildren
        try:
            self._process = subprocess.Popen(
                [self.command, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=default_environment(self.env, inherit=self.inherit_env),
                cwd=self.cwd,
                **popen_kwargs,
            )
        except OSError as exc:
            raise ConnectionClosed(f"could not start MCP server {self.command!r}: {exc}") from exc
        self._threads = [
            spawn(self._read_stdout, "reader", self.name),
            spawn(self._drain_stderr, "stderr", self.name),
            spawn(self._watch_exit, "exit", self.name),
        ]

    def configure(self, *, era: str, protocol_version: str) -> None:
        """stdio frames both eras the same way: nothing to change."""

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str] | None = None) -> None:
        """Write one message as one line (T1). Raises ConnectionClosed if the pipe is gone."""
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionClosed("the stdio transport is not started")
        data = _ENCODER.encode(message).encode("utf-8") + b"\n"
        try:
            with self._write_lock:
                process.stdin.write(data)
                process.stdin.flush()
        except (OSError, ValueError) as exc:  # BrokenPipe, or closed file
            raise self._closed_error("could not write to the server") from exc

    def abort(self, request_id: Any) -> bool:
        """stdio has no per-request stream: the engine sends notifications/cancelled (T4)."""
        return False

    def close(self) -> None:
        """Stop the server: close stdin, wait, SIGTERM, wait, SIGKILL; join every thread. Idempotent."""
        with self._close_lock:
            if self._closing:
                return
            self._closing = True
        process = self._process
        if process is not None:
            try:
                if process.stdin:
                    with self._write_lock:
                        process.stdin.close()
            except OSError:
                pass
            self._stop_process(process)
        for thread in self._threads:
            join_quietly(thread, self.shutdown_timeout)
        if process is not None:
            for pipe in (process.stdout, process.stderr):
                try:
                    if pipe:
                        pipe.close()
                except OSError:
                    pass

    def _stop_process(self, process: subprocess.Popen[bytes]) -> None:
        try:
            process.wait(self.shutdown_timeout)
            return
        except subprocess.TimeoutExpired:
            pass
        for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            self._signal_group(process, sig)
            try:
                process.wait(self.shutdown_timeout)
                return
            except subprocess.TimeoutExpired:
                continue
        log.warning("mcp_sync: server %s (pid %s) did not exit", self.name, process.pid)

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], sig: int) -> None:
        try:
            if sys.platform == "win32":
                process.kill()
            else:
                os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError, OSError):
            try:
                process.send_signal(sig)
            except OSError:
                pass

    # -- threads -----------------------------------------------------------------

    def _read_stdout(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None and self._sink is not None
        stdout, sink, limit = process.stdout, self._sink, self.max_message_bytes
        try:
            while True:
                line = stdout.readline(limit + 1)
                if not line:
                    break
                if len(line) > limit and not line.endswith(b"\n"):
                    self._skip_oversized(stdout, line)
                    continue
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    log.warning("mcp_sync: %s wrote a line that is not JSON (skipped): %.200r", self.name, line)
                    continue
                sink.message(message)
        except (OSError, ValueError):
            pass  # pipe closed under us by close()
        except Exception:  # a bug in the sink must not pass silently, nor hang the waiters
            log.exception("mcp_sync: the stdio reader failed")
        self._report_closed()

    def _skip_oversized(self, stdout: IO[bytes], head: bytes) -> None:
        """Discard the rest of a line past ``max_message_bytes``; fail its request if the id shows."""
        size, tail = len(head), b""
        while True:
            chunk = stdout.readline(_CHUNK)
            size += len(chunk)
            tail = (tail + chunk)[-4096:]
            if not chunk or chunk.endswith(b"\n"):
                break
        match = _ID_PATTERN.search(head[:4096]) or _ID_PATTERN.search(tail)
        request_id = json.loads(match.group(1)) if match else None
        error = ProtocolError(
            f"message of {size} bytes from {self.name} exceeds max_message_bytes={self.max_message_bytes}",
            request_id=request_id,
        )
        log.warning("mcp_sync: %s", error)
        if request_id is not None and self._sink is not None:
            self._sink.fail(request_id, error)

    def _drain_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        target = self.stderr_target
        try:
            for raw in iter(process.stderr.readline, b""):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self._stderr_tail.append(line)
                if target is None:
                    self._stderr_log.info("%s", line)
                elif callable(target):
                    target(line)
                else:
                    target.write(line + "\n")
        except (OSError, ValueError):
            pass
        except Exception:
            log.exception("mcp_sync: the stderr target raised; stderr is now discarded")
            try:
                for _ in iter(process.stderr.readline, b""):
                    pass
            except (OSError, ValueError):
                pass

    def _watch_exit(self) -> None:
        process = self._process
        assert process is not None
        process.wait()
        # stdout normally reaches EOF now; if a grandchild keeps it open, report anyway.
        reader = self._threads[0] if self._threads else None
        join_quietly(reader, 0.5)
        self._report_closed()

    def _report_closed(self) -> None:
        with self._close_lock:
            if self._reported:
                return
            self._reported = True
        if self._sink is not None:
            self._sink.closed(self._closed_error("the server closed the connection"))

    def _closed_error(self, what: str) -> ConnectionClosed:
        process = self._process
        code = None
        if process is not None:
            try:
                code = process.wait(1.0)
            except subprocess.TimeoutExpired:
                code = None
        stderr_threads = self._threads[1:2]
        for thread in stderr_threads:  # let the last stderr lines arrive
            join_quietly(thread, 0.2)
        tail = "\n".join(self._stderr_tail)
        if self._closing:
            message = f"{what}: the client closed it"
        else:
            message = f"{what}: {self.name} exited" + (f" with code {code}" if code is not None else "")
            if tail:
                message += f"; last stderr lines:\n{tail}"
        return ConnectionClosed(message, exit_code=code, stderr_tail=tail)

    def __repr__(self) -> str:
        return f"<StdioTransport {self.command!r} pid={self.pid}>"
