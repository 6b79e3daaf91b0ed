"""A fork server for the test suite's Python SDK server (sdk_server.py), stdlib only.

Importing the SDK (``mcp``, its pydantic models) costs about 1.5 s of CPU, and the suite starts
the SDK server some 180 times: on two cores that was the largest single cost of a run (#32).
The fork server imports sdk_server.py once per pytest worker and forks a fresh process for
each start. The server's code is the same code; only its imports are shared.

How a start goes:

- The test (through mcp_sync, ``subprocess``, the CLI, a worker pool or anything else) runs
  ``python sdk_server.py ...`` as before. sdk_server.py, before any heavy import, calls
  :func:`launch`: it looks for a fork server started by one of its ancestors (conftest starts one
  per pytest process, listening on the Linux abstract socket ``name_for(pid)``: no file, and
  nothing to find once that process is gone). It hands it its stdin, stdout and stderr
  (SCM_RIGHTS), its arguments, working folder and environment, and from then on stands in for
  the server: a SIGTERM, SIGINT or SIGHUP it gets is passed on, and it ends as the server ended
  (the same exit code, or killed by the same signal). Where no fork server answers, it returns
  and sdk_server.py starts the usual way. ``MCP_SYNC_TEST_FORKSERVER=off`` in its environment
  starts it the usual way; ``=<name>`` uses that fork server only.
- The fork server forks a manager for the start, and the manager forks the server on those
  descriptors. When the stand-in dies, even by SIGKILL, the manager sees its connection end and
  kills the server: nothing outlives the process the test started.
- The fork server serves its own user only, and ends when the process that started it closes
  its stdin (or dies).
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import traceback
from typing import Callable, NoReturn

ENV = "MCP_SYNC_TEST_FORKSERVER"
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_LENGTH = struct.Struct("!I")


def name_for(pid: int) -> str:
    """The abstract socket name of the fork server that process ``pid`` started."""
    return f"mcp-sync-test-forkserver-{pid}"


def _ancestors() -> list[int]:
    """This process's ancestors, its parent first (Linux: /proc)."""
    found, pid = [], os.getppid()
    while pid > 1 and len(found) < 32:
        found.append(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def launch() -> None:
    """Have a fork server run this process's command; never returns once one does.

    Returns (having done nothing) when none answers: no ancestor started one, or
    ``MCP_SYNC_TEST_FORKSERVER=off``."""
    chosen = os.environ.get(ENV, "")
    if chosen == "off" or not sys.platform.startswith("linux"):
        return
    for name in [chosen] if chosen else [name_for(pid) for pid in _ancestors()]:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.settimeout(5.0)
        try:
            conn.connect("\0" + name)
        except OSError:
            conn.close()
            continue
        _hand_over(conn)  # returns only where the fork server did not take the start
        return


def _hand_over(conn: socket.socket) -> None:
    try:
        body = json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        conn.sendmsg([_LENGTH.pack(len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("3i", 0, 1, 2))])
        conn.sendall(body)
        replies = conn.makefile("rb")  # buffered: "STARTED" and "EXIT n" may come in one read
        reply = replies.readline().decode(errors="replace")
    except OSError:
        conn.close()
        return
    if not reply.startswith("STARTED"):
        conn.close()
        return
    # The server has the descriptors now: the stand-in holds none of them open, so that the
    # client sees the server's stdout end exactly when the server's does.
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    conn.settimeout(None)

    def forward(signum: int, _frame: object) -> None:
        try:
            conn.sendall(f"SIG {signum}\n".encode())
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    try:
        line = replies.readline().decode(errors="replace")
    except OSError:
        line = ""
    code = int(line.split()[1]) if line.startswith("EXIT ") else 1
    if code < 0:  # killed by a signal: end the same way
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def serve(name: str, run: Callable[[], object]) -> None:
    """Accept starts at the abstract socket ``name`` until stdin ends; each runs ``run()`` in a
    fresh fork. The managers are reaped here, so a parent's CPU accounting (``time``) counts the
    servers' CPU as it did when they were its own children."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind("\0" + name)  # bound only now, after the imports: a start before this runs the usual way
    listener.listen(64)
    try:
        while True:
            ready, _, _ = select.select([listener, 0], [], [], 1.0)
            _reap()
            if 0 in ready and not os.read(0, 1024):
                return
            if listener in ready:
                conn, _ = listener.accept()
                uid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[1]
                if uid != os.getuid():  # another user's process: not served
                    conn.close()
                    continue
                if os.fork() == 0:
                    listener.close()
                    _manage(conn, run)
                conn.close()
    finally:
        listener.close()


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _manage(conn: socket.socket, run: Callable[[], object]) -> NoReturn:
    """In the manager: receive a start, fork its server, pass signals on, report how it ended."""
    pid = 0  # the server's, once forked (never 0 in a kill: that is the process group)
    ended = threading.Event()  # set once the server is reaped: its pid may be reused after
    try:
        conn.settimeout(10.0)
        head, ancillary, _, _ = conn.recvmsg(_LENGTH.size, socket.CMSG_SPACE(3 * 4))
        fds = [fd for level, kind, data in ancillary if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS
               for fd in struct.unpack(f"{len(data) // 4}i", data[: len(data) - len(data) % 4])]
        (length,) = _LENGTH.unpack(head)
        body = b""
        while len(body) < length:
            chunk = conn.recv(length - len(body))
            if not chunk:
                os._exit(1)
            body += chunk
        request = json.loads(body)
        if len(fds) != 3:
            os._exit(1)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _become_server(fds, request, run)
        for fd in fds:
            os.close(fd)
        conn.settimeout(None)
        conn.sendall(b"STARTED\n")

        def relay() -> None:  # the stand-in's signals; its end (EOF) kills the server
            buffered = b""
            while True:
                try:
                    chunk = conn.recv(256)
                except OSError:
                    chunk = b""
                if not chunk:
                    if not ended.is_set():
                        os.kill(pid, signal.SIGKILL)
                    return
                buffered += chunk
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    if line.startswith(b"SIG ") and not ended.is_set():
                        os.kill(pid, int(line.split()[1]))

        threading.Thread(target=relay, daemon=True).start()
        _, status = os.waitpid(pid, 0)
        ended.set()
        conn.sendall(f"EXIT {os.waitstatus_to_exitcode(status)}\n".encode())
    except BaseException:
        if pid > 0 and not ended.is_set():  # the stand-in is gone (or the manager failed): the server goes too
            os.kill(pid, signal.SIGKILL)
    os._exit(0)


def _become_server(fds: list[int], request: dict, run: Callable[[], object]) -> NoReturn:
    """In the server: take the stand-in's descriptors, arguments, folder and environment; run."""
    code = 1
    try:
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, signal.SIG_DFL)
        try:
            run()
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except KeyboardInterrupt:
            traceback.print_exc()
            _flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            traceback.print_exc()
    finally:
        _flush()
        os._exit(code)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
