"""What a :class:`~mcp_sync.Client` owns, kept apart from the client itself.

* :class:`Resources` holds everything a client must shut down (engine, connect
  in progress, dispatcher, subscriptions, hosted tasks) and nothing that refers
  back to the client. So an unclosed client that nobody references can be
  collected, and a ``weakref.finalize`` on it closes these (with a
  ``ResourceWarning``, as ``subprocess.Popen`` does).
* :class:`Attempt` is one connect in progress. It runs on its own thread so
  that every caller waits for it with its own deadline and cancel token, and
  ``close()`` can fail it at once.
* :func:`weakly` wraps a client method for the engine's callbacks without
  keeping the client alive.
* :func:`default_name` and :func:`describe_target` tell clients apart in
  reprs and logger names.
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ._threads import Dispatcher, Outcome, Workers
from .exceptions import ClientStateError, ConnectionClosed, MCPError

if TYPE_CHECKING:
    from ._engine import Engine
    from ._hosted_tasks import HostedTasks
    from ._subscriptions import Subscriptions

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

    def __init__(self, make_subscriptions: Callable[[], Subscriptions], make_hosted: Callable[[], HostedTasks],
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
    except Exception:  # a finalizer must not raise
        log.debug("mcp_sync: closing a collected client failed", exc_info=True)


def weakly(method: Callable[..., Any], gone: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """``method`` (a bound method) called through a weak reference to its object.

    Engines and threads hold these, so they never keep a client alive. Once the
    object is gone, ``gone(*args)`` is called instead (default: nothing).
    """
    ref = weakref.WeakMethod(method)

    def call(*args: Any) -> Any:
        bound = ref()
        if bound is None:
            return gone(*args) if gone is not None else None
        return bound(*args)

    return call


# -- names -------------------------------------------------------------------------------

#: Commands that run something else: the name comes from what they run.
_RUNNERS = frozenset({
    "python", "python3", "py", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "npx", "pnpx", "bunx",
    "uvx", "uv", "pipx", "ruby", "java", "php", "perl", "bash", "sh", "zsh", "env", "npm", "pnpm", "yarn",
    "docker", "podman", "poetry", "pdm", "hatch", "conda",
})
_SUBCOMMANDS = frozenset({"run", "exec", "x", "dlx", "tool", "start"})
_GENERIC_STEMS = frozenset({"index", "main", "__main__", "server", "cli", "app", "run", "start"})
_BUILD_DIRS = frozenset({"dist", "build", "lib", "src", "bin", "out", "build-output", "esm", "cjs"})


def _is_runner(base: str) -> bool:
    stem = base[:-4] if base.lower().endswith(".exe") else base
    return stem in _RUNNERS or stem.rstrip("0123456789.") in _RUNNERS


def _name_of_path(path: str) -> str:
    """``demo_server.py`` -> ``demo_server``; ``.../server-everything/dist/index.js`` -> ``server-everything``;
    ``@scope/pkg@1.2`` -> ``pkg``."""
    if path.startswith("@") or ("/" not in path and "@" in path):
        body = path[1:] if path.startswith("@") else path
        return body.split("@", 1)[0].rsplit("/", 1)[-1]
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts:
        return ""
    stem = parts[-1].split("==")[0]
    stem = stem.rsplit(".", 1)[0] if "." in stem[1:] and not stem.startswith(".") else stem
    if stem in _GENERIC_STEMS:
        for parent in reversed(parts[:-1]):
            if parent not in _BUILD_DIRS and not parent.startswith("."):
                return parent
    return stem


def name_from_command(command: str, args: Sequence[str]) -> str:
    """A stdio server's name: the script or package a runner (python, node, npx, uvx, ...) runs,
    else the command's own name.

    Example: ``name_from_command("npx", ["-y", "@modelcontextprotocol/server-everything"])``
    is ``"server-everything"``; ``("python", ["demo_server.py"])`` is ``"demo_server"``.
    """
    base = os.path.basename(command.replace("\\", "/")) or command
    if not _is_runner(base):
        return _name_of_path(base) or "server"
    args = list(args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" and i + 1 < len(args):  # python -m package.module
            return args[i + 1]
        if arg in ("-c", "-e") or arg == "--":  # inline code: nothing better than the runner
            break
        if arg.startswith("-") or arg in _SUBCOMMANDS:
            i += 1
            continue
        name = _name_of_path(arg)
        if name:
            return name
        i += 1
    return _name_of_path(base) or "server"


def default_name(transport: Any) -> str:
    """What a client is called when ``name=`` is not given: see ``Client.name``."""
    command = getattr(transport, "command", None)
    if isinstance(command, str):
        return name_from_command(command, list(getattr(transport, "args", ()) or ()))
    return str(getattr(transport, "name", "") or "server")


def describe_target(transport: Any) -> str:
    """The command line, or the URL without credentials or query (never a secret)."""
    import shlex  # lazily: `import mcp_sync` stays light
    from urllib.parse import urlsplit

    command = getattr(transport, "command", None)
    if isinstance(command, str):
        line = shlex.join([command, *map(str, getattr(transport, "args", ()) or ())])
        return line if len(line) <= 120 else line[:117] + "..."
    url = getattr(transport, "url", None)
    if isinstance(url, str):
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
        return f"{parts.scheme}://{host}{parts.path}"
    return type(transport).__name__
