"""stdio transport: a spawned server process, one JSON message per line.

Threads (all daemon, all ended by :meth:`StdioTransport.close`):

* ``mcp_sync-reader-<server>`` reads stdout, parses lines, hands them to the sink;
  no line, however malformed or large, ends it;
* ``mcp_sync-stderr-<server>`` drains stderr continuously, in bounded pieces, so a
  chatty server never blocks on a full pipe, keeping the last lines for error messages;
* ``mcp_sync-exit-<server>`` waits for the process, so a server that dies while
  a grandchild still holds its stdout is noticed within a second.

Nothing waits without a bound: a write stops at its deadline (a server that no
longer reads its stdin), close() ends the server's whole process group and wakes
the readers even if some process it started still holds the pipes.
"""

from __future__ import annotations

import collections
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, Callable, Mapping, Sequence, Union

from .._names import name_from_command
from .._terminal import escape
from .._threads import join_quietly, spawn
from ..exceptions import ConnectionClosed, ProtocolError, RequestTimeout
from ._pipes import (
    BLANK,
    CAN_POLL,
    describe_exit,
    make_nonblocking,
    parse_line,
    read_lines,
    top_level_id,
    unread_bytes,
    write_until,
)
from .base import ENV_OPTIONS, NO_SINK, BaseTransport, MessageSink, command_target, encode_message

log = logging.getLogger("mcp_sync.stdio")

_PROXY_AND_CA_VARS = (
    # Reaching the network and trusting its certificates: without these a server behind a
    # proxy or a TLS-inspecting firewall fails with no hint. They name places, not secrets.
    # Package-index settings (PIP_*, UV_*, npm_config_*) stay out: they often embed tokens,
    # so pass them with env= or inherit_env=True.
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
)

#: Environment variables a child gets by default (like other MCP clients): what a
#: program needs to run (paths, user, locale, temp dir) and to reach the network
#: (proxy and CA-certificate settings), nothing that usually holds a secret.
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
        *_PROXY_AND_CA_VARS,
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", *_PROXY_AND_CA_VARS)
)

#: None (the default) writes each stderr line to ``sys.stderr`` prefixed with
#: ``[<server>]``; ``"log"`` logs it; a file gets it written; a callable gets it.
StderrTarget = Union[None, str, IO[str], Callable[[str], None]]

_STDERR_TAIL_LINES = 20
_STDERR_LINE_BYTES = 4096  # a longer stderr line is cut: a server without newlines cannot fill memory
_DIAGNOSTIC_LINES = 5  # how many non-JSON-RPC stdout lines, and stderr lines, an error quotes
_DIAGNOSTIC_CHARS = 200
_ID_SCAN_BYTES = 1 << 20  # how much of an oversized line is searched for its top-level id
_ENV_HINT = f"it sees only an allow-listed environment: give it the variables it needs {ENV_OPTIONS}"
_NETWORK_HINT = (
    "it may have failed to reach the network: it sees only an allow-listed environment, which passes "
    "proxy and CA-certificate variables but not package-index settings (npm_config_*, PIP_*, UV_*): "
    f"give it the variables it needs {ENV_OPTIONS}"
)
#: Words in a server's last stderr lines that say it missed a setting (compared lower-cased,
#: as plain substrings: linear in the text). Only then is the environment hint given.
_MISSING_SETTING = (
    "environment", "env var", "not set", "is required", "are required", "missing", "api key", "api_key",
    "apikey", "token", "credential", "keyerror", "undefined variable",
)
#: Words that say it could not reach the network (a registry fetch of npx or uvx, most often),
#: which an allow-listed environment may cause (a package index's settings are not passed).
_NETWORK_TROUBLE = (
    "enotfound", "econnrefused", "econnreset", "etimedout", "eai_again", "getaddrinfo", "proxy",
    "name or service not known", "temporary failure in name resolution", "could not resolve host",
    "failed to resolve", "network is unreachable", "connection refused", "unable to get local issuer",
    "certificate verify failed", "self signed certificate", "self-signed certificate",
)


def default_environment(env: Mapping[str, str] | None = None, *, inherit: bool = False) -> dict[str, str]:
    """The child's environment: the allow-list (or everything, with ``inherit``) plus ``env``.

    Example: ``default_environment({"DEBUG": "1"})`` is ``{"PATH": ..., "HOME": ..., "DEBUG": "1"}``
    """
    base = dict(os.environ) if inherit else {k: os.environ[k] for k in DEFAULT_ENV_VARS if k in os.environ}
    base.update(env or {})
    return base


def _cut(text: str) -> str:
    return text if len(text) <= _DIAGNOSTIC_CHARS else text[:_DIAGNOSTIC_CHARS] + "..."


class StdioTransport(BaseTransport):
    """Runs ``command args`` and talks newline-delimited JSON-RPC over its pipes.

    ``stderr`` is where the server's stderr lines go: None (the default) writes
    each to ``sys.stderr`` prefixed with ``[<name>]``, as a terminal would show
    them; ``"log"`` logs them to the ``mcp_sync.stderr.<name>`` logger at INFO; a
    file-like object gets them written; a callable is called with each line (on
    the stderr thread: keep it quick). Lines longer than 4 KiB are cut.

    ``write_timeout`` bounds a write that is given no ``timeout`` (a server that
    stops reading its stdin). ``shutdown_timeout`` bounds each step of close():
    stdin closed -> wait -> SIGTERM to the process group -> wait -> SIGKILL.
    ``name`` (default: the script or package the command runs) names the
    threads, the logger and the stderr prefix.

    Thread-safe: ``send`` may be called from any thread; writes are serialized.

    Example::

        transport = StdioTransport("python", ["server.py"], stderr="log")
        client = mcp_sync.Client(transport)
    """

    bounded_writes = True  # send(timeout=) bounds a write to a server that stops reading

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
        write_timeout: float = 30.0,
        name: str | None = None,
    ) -> None:
        if not (stderr is None or stderr == "log" or callable(stderr) or hasattr(stderr, "write")):
            raise TypeError(f'stderr must be None, "log", a file or a callable taking a line, not {stderr!r}')
        self.command = command
        self.args = list(args)
        self.env = dict(env) if env else None
        self.cwd = cwd
        self.inherit_env = inherit_env
        self.stderr_target = stderr
        self.max_message_bytes = max_message_bytes
        self.shutdown_timeout = shutdown_timeout
        self.write_timeout = write_timeout
        self.name = name or name_from_command(command, self.args)
        self.target = command_target(command, self.args)
        self._process: subprocess.Popen[bytes] | None = None
        self._sink: MessageSink = NO_SINK  # until start()
        self._write_lock = threading.Lock()
        self._unsent = b""  # the rest of a message whose write ran out of time: it goes out first
        self._close_lock = threading.Lock()
        self._closing = False
        self._reported = False
        self._answered = False  # a JSON-RPC message came from the server
        self._wake: tuple[IO[bytes], IO[bytes]] | None = None  # written by close() to end the readers' waits
        self._threads: list[threading.Thread] = []
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=_STDERR_TAIL_LINES)
        self._stdout_noise: list[str] = []  # the first lines of stdout that were not JSON-RPC
        self._stdout_noise_count = 0
        self._stderr_log = logging.getLogger(f"mcp_sync.stderr.{self.name}")  # renamed at start()

    # -- lifecycle -------------------------------------------------------------

    @property
    def notification_stream(self) -> Any:
        """Every line the server writes reaches the sink while it runs: one token for its life."""
        return 0 if self.pid is not None else None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs; None before start and once it has exited."""
        process = self._process
        return process.pid if process is not None and process.returncode is None else None

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
            where = "is it installed, and on PATH?" if isinstance(exc, FileNotFoundError) else str(exc)
            raise ConnectionClosed(f"could not start MCP server {self.command!r}: {where}") from exc
        process = self._process
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        for pipe in (process.stdin, process.stdout, process.stderr):
            make_nonblocking(pipe.fileno())
        if CAN_POLL:  # file objects, so that a transport never closed still frees them when collected
            wake_read, wake_write = os.pipe()
            self._wake = (open(wake_read, "rb", buffering=0), open(wake_write, "wb", buffering=0))
        self._threads = [
            spawn(self._read_stdout, "reader", self.name),
            spawn(self._drain_stderr, "stderr", self.name),
            spawn(self._watch_exit, "exit", self.name),
        ]

    def configure(self, *, era: str, protocol_version: str) -> None:
        """stdio frames both eras the same way: nothing to change."""

    def send(
        self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None, timeout: float | None = None
    ) -> None:
        """Write one message as one line.

        ``timeout`` (default: ``write_timeout``) bounds the wait for the server to
        read it: RequestTimeout when it does not, ConnectionClosed if the pipe is
        gone or the transport is closed meanwhile.
        """
        process = self._process
        if process is None or process.stdin is None:
            raise ConnectionClosed("the stdio transport is not started")
        data = encode_message(message) + b"\n"
        limit = self.write_timeout if timeout is None else max(timeout, 0.0)
        why: str | None
        try:
            lock = self._write_lock
            waited_from = None if lock.acquire(False) else time.monotonic()
            if waited_from is not None and not lock.acquire(timeout=limit):
                why = "another message is still being written"
            else:  # the wait for the lock counts against the limit
                try:
                    left = limit if waited_from is None else limit - (time.monotonic() - waited_from)
                    why = self._write(process.stdin.fileno(), data, left)
                finally:
                    lock.release()
        except (OSError, ValueError) as exc:  # BrokenPipe, or closed file
            raise self._closed_error("could not write to the server", on_caller=True) from exc
        if why is not None:  # made outside the lock: _closed_error waits a little for the process
            if self._closing:
                raise self._closed_error("could not write to the server", on_caller=True)
            method = message.get("method")
            raise RequestTimeout(
                f"{method if isinstance(method, str) else 'answer'}: could not write to {self.name} "
                f"within {limit} s ({why})",
                method=method if isinstance(method, str) else None,
                request_id=message.get("id") if "method" in message else None,
            )

    def _write(self, fd: int, data: bytes, limit: float) -> str | None:
        """Under the write lock: finish an earlier message's line, then write this one, within
        ``limit`` seconds. Returns why the write did not finish, or None when it did."""
        if self._closing:
            return "the transport is closing"
        deadline = time.monotonic() + limit
        if self._unsent:
            done = write_until(fd, self._unsent, deadline, self._is_closing)
            self._unsent = self._unsent[done:]
            if self._unsent:
                return "an earlier message is still being written"
        done = write_until(fd, data, deadline, self._is_closing)
        if done < len(data):
            if done:  # the line is started: the next write finishes it, keeping the stream framed
                self._unsent = data[done:]
            return "the server is not reading its stdin"
        return None

    def _is_closing(self) -> bool:
        return self._closing

    def abort(self, request_id: Any) -> bool:
        """stdio has no per-request stream: the engine sends notifications/cancelled."""
        return False

    def diagnostics(self) -> str:
        """What the server printed that explains a silence or an exit, or ``""``.

        Example: ``"stdout lines that were not JSON-RPC: 'Server starting on port 3000'"``
        """
        parts = []
        if self._stdout_noise:
            more = self._stdout_noise_count - len(self._stdout_noise)
            parts.append(
                "stdout lines that were not JSON-RPC: "
                + ", ".join(repr(line) for line in self._stdout_noise)
                + (f" (and {more} more)" if more > 0 else "")
            )
        tail = list(self._stderr_tail)[-_DIAGNOSTIC_LINES:]
        if tail:
            parts.append("last stderr lines: " + " | ".join(repr(_cut(line)) for line in tail))
        return "; ".join(parts)

    def close(self) -> None:
        """Stop the server: close stdin, wait, SIGTERM, wait, SIGKILL the process group; let the
        readers deliver the last lines; join every thread. Returns within about five
        ``shutdown_timeout``. Idempotent."""
        with self._close_lock:
            if self._closing:
                return
            self._closing = True
        process = self._process
        if process is not None:
            stdin_closed = self._close_stdin(process)
            self._stop_process(process)
            if not stdin_closed:
                self._close_stdin(process)
        # The server has ended: its pipes reach end of file once their last lines are read, so the
        # readers get one shutdown_timeout to deliver them (the last stderr lines are often the
        # ones that explain); the wake-up is for a process outside the group that holds a pipe.
        grace = time.monotonic() + self.shutdown_timeout
        for thread in self._threads[:2]:
            join_quietly(thread, max(grace - time.monotonic(), 0.0))
        if self._wake is not None:
            self._wake[1].write(b"x")
        for thread in self._threads:
            join_quietly(thread, self.shutdown_timeout)
        if process is not None:
            for pipe, reader in ((process.stdout, self._threads[:1]), (process.stderr, self._threads[1:2])):
                if pipe is None:
                    continue
                if any(thread.is_alive() for thread in reader):  # never close a pipe a thread may still read
                    log.warning("mcp_sync: a reader of %s did not stop; its pipe is left open", self.name)
                    continue
                try:
                    pipe.close()
                except OSError:
                    pass
        if self._wake is not None and not any(thread.is_alive() for thread in self._threads[:2]):
            for pipe in self._wake:
                pipe.close()
            self._wake = None

    def _close_stdin(self, process: subprocess.Popen[bytes]) -> bool:
        """Close the server's stdin (EOF: time to exit); False if a writer kept the lock."""
        # a blocked writer sees _closing within one poll slice and lets go of the lock
        if not self._write_lock.acquire(timeout=self.shutdown_timeout):
            return False
        try:
            if process.stdin:
                process.stdin.close()
        except OSError:
            pass
        finally:
            self._write_lock.release()
        return True

    def _stop_process(self, process: subprocess.Popen[bytes]) -> None:
        """Let the server exit on stdin EOF, then end its whole process group, each step bounded."""
        try:
            process.wait(self.shutdown_timeout)
        except subprocess.TimeoutExpired:
            pass
        reader = self._threads[0] if self._threads else None

        def ended() -> bool:  # the server, and everything still holding its stdout
            return process.poll() is not None and (reader is None or not reader.is_alive())

        for sig in (signal.SIGTERM, getattr(signal, "SIGKILL", signal.SIGTERM)):
            if not self._signal_group(process, sig):
                return  # nothing left in the group
            deadline = time.monotonic() + self.shutdown_timeout
            while not ended() and time.monotonic() < deadline:
                time.sleep(0.02)
            if ended() and not self._group_alive(process):
                return
        if process.poll() is None:
            log.warning("mcp_sync: server %s (pid %s) did not exit", self.name, process.pid)

    @staticmethod
    def _group_alive(process: subprocess.Popen[bytes]) -> bool:
        if sys.platform == "win32":
            return process.poll() is None
        try:
            os.killpg(process.pid, 0)
        except OSError:
            return False
        return True

    @staticmethod
    def _signal_group(process: subprocess.Popen[bytes], sig: int) -> bool:
        """Send ``sig`` to the server's process group; False when the group is empty."""
        if sys.platform == "win32":
            if process.poll() is not None:
                return False
            process.kill()
            return True
        try:
            os.killpg(process.pid, sig)  # the server is its group's leader (start_new_session)
        except ProcessLookupError:
            return False
        except OSError:
            try:
                process.send_signal(sig)
            except OSError:
                return False
        return True

    # -- threads -----------------------------------------------------------------

    def _wake_fd(self) -> int | None:
        return self._wake[0].fileno() if self._wake is not None else None

    def _read_stdout(self) -> None:
        process = self._process
        assert process is not None and process.stdout is not None
        try:
            for line, cut in read_lines(process.stdout.fileno(), self._wake_fd(), self.max_message_bytes):
                try:
                    if cut:
                        self._oversized(line)
                    else:
                        self._line(line)
                except Exception:  # any byte sequence: skip the line, keep reading
                    log.exception("mcp_sync: a line from %s could not be handled (skipped): %.200r", self.name, line)
        except (OSError, ValueError):
            pass  # the pipe was closed under us
        except Exception:
            log.exception("mcp_sync: the stdio reader failed")
        self._report_closed()

    def _line(self, line: bytes) -> None:
        message = parse_line(line)
        if message is BLANK:
            return
        if not (isinstance(message, list) or (isinstance(message, dict) and message.get("jsonrpc") == "2.0")):
            self._noise(line)
            return
        self._answered = True
        self._sink.message(message)

    def _noise(self, line: bytes) -> None:
        """A stdout line that is not JSON-RPC: keep the first few for diagnostics()."""
        self._stdout_noise_count += 1
        if len(self._stdout_noise) < _DIAGNOSTIC_LINES:
            text = line[: _DIAGNOSTIC_CHARS * 4].decode("utf-8", "replace").strip()
            self._stdout_noise.append(_cut(text))
            log.warning("mcp_sync: %s wrote a line that is not JSON-RPC (skipped): %.200r", self.name, line)
        else:
            log.debug("mcp_sync: %s wrote a line that is not JSON-RPC (skipped): %.200r", self.name, line)

    def _oversized(self, head: bytes) -> None:
        """A line past ``max_message_bytes`` (its rest is skipped): fail its request if its
        top-level id shows in the head; if it cannot be told for sure, fail nothing."""
        request_id = top_level_id(head[:_ID_SCAN_BYTES])
        error = ProtocolError(
            f"a message from {self.name} is larger than max_message_bytes={self.max_message_bytes} (skipped)",
            request_id=request_id,
        )
        log.warning("mcp_sync: %s", error)
        if request_id is not None:
            self._sink.fail(request_id, error)

    def _drain_stderr(self) -> None:
        process = self._process
        assert process is not None and process.stderr is not None
        target = self.stderr_target
        try:
            for raw, cut in read_lines(process.stderr.fileno(), self._wake_fd(), _STDERR_LINE_BYTES):
                line = raw.decode("utf-8", "replace").rstrip("\r")
                if cut:
                    line += " [line cut]"
                self._stderr_tail.append(line)
                if target is not False:
                    target = self._show_stderr(target, line)
        except (OSError, ValueError):
            pass

    def _show_stderr(self, target: Any, line: str) -> Any:
        """Hand one stderr line to ``target``; returns False (stop showing) if the target raised."""
        try:
            if target is None:
                parent = sys.stderr  # looked up each time: pytest capture, notebooks
                if parent is not None:  # a terminal, likely: the server's control sequences are shown, not run
                    parent.write(f"[{self.name}] {escape(line, one_line=True)}\n")
            elif target == "log":
                self._stderr_log.info("%s", line)
            elif callable(target):
                target(line)
            else:
                target.write(line + "\n")
        except Exception:
            log.exception("mcp_sync: the stderr target raised; %s's stderr is no longer shown", self.name)
            return False
        return target

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
        self._sink.closed(self._closed_error("the server closed the connection"))

    def _closed_error(self, what: str, *, on_caller: bool = False) -> ConnectionClosed:
        """The ConnectionClosed that says why: the exit code, the last stderr lines. On a reader
        thread it waits a little for the process to exit and its last lines to arrive; on the
        caller's thread (a write that failed) only a moment, since that is the caller's time: a
        server that closed its stdin may well still run."""
        process = self._process
        code = None
        if process is not None:
            try:
                code = process.wait(0.1 if on_caller else 1.0)
            except subprocess.TimeoutExpired:
                code = None
        if not on_caller:
            # Let the last stderr lines arrive. Once the process has exited its stderr ends at
            # once (unless a child of its own holds it), so waiting longer costs nothing then,
            # and on a loaded machine 0.2 s was seen to be too short: the error lacked the
            # server's traceback (#32).
            for thread in self._threads[1:2]:
                join_quietly(thread, 1.0 if code is not None else 0.2)
        tail = "\n".join(self._stderr_tail)
        unread = 0
        if process is not None and process.stdin is not None and not process.stdin.closed:
            unread = unread_bytes(process.stdin.fileno())
        who = self.name if self.target.startswith(self.name) else f"{self.name} ({self.target})"
        if self._closing:
            message = f"{what}: the client closed it"
        elif on_caller and code is None:  # the pipe broke, the process runs on
            message = f"{what}: {who} closed its stdin (it still runs)"
        else:
            message = f"{what}: {who} {describe_exit(code)}"
            if not self._answered:
                message += " before answering anything"
                # The hint only where it may help: the server said it misses a setting, or said nothing.
                lowered = tail[-4000:].lower()
                if self.inherit_env:
                    pass
                elif any(word in lowered for word in _NETWORK_TROUBLE):
                    message += f" ({_NETWORK_HINT})"
                elif not tail.strip() or any(word in lowered for word in _MISSING_SETTING):
                    message += f" ({_ENV_HINT})"
            diagnostics = self.diagnostics()  # the engine adds it only where it is missing
            if diagnostics:
                message += f"\n{diagnostics}"
        return ConnectionClosed(message, exit_code=code, stderr_tail=tail, unread_input=unread)

    def __repr__(self) -> str:
        return f"<StdioTransport {self.name!r} pid={self.pid}>"
