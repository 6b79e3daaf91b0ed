"""What an unpickled :class:`~mcp_sync.Client` is: a copy that uses its worker process's one
client for that recipe (#29.1).

A client pickles as its recipe (constructor and arguments, #19.5). A process pool or a
cluster worker unpickles the same client for task after task; building a client per
unpickle started a server per task. Here the first unpickle of a recipe in a process makes
that process's client for it (kept in ``_clients`` until the process exits, like
``mcp_sync.shared``) and every unpickle returns a *copy*: an object of the pickled class whose
requests go to that client. A copy is a lease, not a reference count: closing it (``close()``,
the end of a ``with`` block) ends that copy only, so a task that tidies up never breaks the other
tasks of its worker, and the connection stays for the next task even when no copy is alive.

Keys are the recipe's values, compared by value (mappings in any order); a value that is
neither a plain value nor a container is compared by its pickled bytes (a recipe is picklable:
it was just unpickled), never by identity, so equal credentials share and unequal ones never do.

The process's clients are closed at exit: ``atexit`` in a plain interpreter, and a
``multiprocessing.util.Finalize`` with an exit priority for multiprocessing workers, which leave
through ``os._exit`` after running those finalizers, not atexit handlers. A worker that is
killed closes nothing, but its stdio servers read EOF on their stdin and exit. After a fork the
child forgets the parent's clients (as ``shared`` does) and makes its own.

This module imports no Client: the copy's class is the pickled class with :class:`_Copy` mixed
in front, made once per class (so a subclass of Client unpickles as a copy of that subclass).
"""

from __future__ import annotations

import atexit
import os
import pickle
import threading
from typing import TYPE_CHECKING, Any, Mapping, TypeVar

from ._notebook import untracked
from ._protocol.connection import ClientState
from .exceptions import ClientStateError

if TYPE_CHECKING:
    from ._protocol.session import Session

_C = TypeVar("_C")

_lock = threading.Lock()
#: this process's client per recipe key
_clients: dict[Any, Any] = {}
#: A forked child's inherited clients: kept referenced (never closed or collected there: they forgot
#: the parent's connection at the fork), never handed out again.
_left_behind: list[Any] = []
#: the copy class of each pickled class
_copy_classes: dict[type, type] = {}
_exit_hooked = False

_PLAIN = (str, bytes, int, float, complex, bool, type(None))


def unpickle_client(cls: type[_C], constructor: str, recipe: dict[str, Any]) -> _C:
    """A copy of this process's client for ``(cls, constructor, recipe)``, made on first use
    (unconnected: it connects on its first request)."""
    key = recipe_key((cls, constructor, recipe))
    with _lock:
        client = _clients.get(key)
        if client is None or client.state is ClientState.CLOSED:
            with untracked():  # the process owns it, not a re-run notebook cell (#29.4)
                client = _clients[key] = getattr(cls, constructor)(**recipe)  # cheap: no server until used
            _hook_exit()
        copy_class = _copy_classes.get(cls)
        if copy_class is None:
            copy_class = _copy_classes[cls] = type(cls.__name__, (_Copy, cls), {
                "__module__": cls.__module__, "__qualname__": cls.__qualname__, "__doc__": _Copy.__doc__})
    return _copy_of(copy_class, client, cls)  # type: ignore[no-any-return]


def recipe_key(value: Any) -> Any:
    """A hashable key, equal for equal recipes: mappings (in any order) and sequences by value,
    plain values by equality, anything else (an auth object, a handler) by its pickled bytes,
    so that equal credentials unpickled twice are equal and unequal ones never are."""
    if isinstance(value, Mapping):
        return ("dict", frozenset((recipe_key(key), recipe_key(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple)):
        return ("seq", type(value), tuple(recipe_key(item) for item in value))
    if isinstance(value, _PLAIN):
        return ("value", type(value), value)
    if isinstance(value, type):
        return ("type", value)
    if isinstance(value, os.PathLike):
        return ("path", type(value), os.fspath(value))
    try:
        return ("pickled", type(value), pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    except Exception:  # cannot happen for an unpickled recipe; if it does, share with nothing
        return ("unique", object())


class _Lease:
    """The process's client's session as one copy sees it: usable until the copy is closed.

    Every attribute read and write goes to the shared session; after :meth:`_Copy.close` each
    raises :class:`ClientStateError`, so every request method of the copy does."""

    __slots__ = ("_base", "closed")

    def __init__(self, base: Session) -> None:
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "closed", False)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._open(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "closed":
            object.__setattr__(self, name, value)
        else:  # a setting of the session (on_notification): the shared one's, while the copy is open
            setattr(self._open(), name, value)

    def _open(self) -> Session:
        if self.closed:
            raise ClientStateError("this copy of the client is closed (the worker's connection lives on for the"
                                   " other tasks); connect() or a with block opens the copy again")
        return self._base


class _Copy:
    """A copy of a pickled client: the worker process's one client for that recipe, seen
    through a lease. It has every method of the client; ``close()`` (or the end of a ``with``
    block) ends this copy only (its further requests raise :class:`ClientStateError`;
    ``connect()`` or a ``with`` block opens it again), never the worker's connection, which
    stays for the other tasks until the process exits. ``reconnect()`` reconnects the worker's
    connection (for every copy). Pickling a copy pickles the same recipe.

    Example::

        def job(client, text):            # client: unpickled in the worker
            with client:                  # closes this copy only
                return client.call_tool("echo", {"text": text}).text
    """

    _underlying: Any
    _lease: _Lease
    _pickled_as: type
    _entered: int
    _enter_lock: threading.Lock

    @property
    def state(self) -> ClientState:
        """CLOSED once this copy is closed; else the worker's client's state."""
        return ClientState.CLOSED if self._lease.closed else self._underlying.state  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close this copy (idempotent); the worker's connection stays for the other tasks."""
        self._lease.closed = True

    def connect(self, **options: Any) -> dict[str, Any]:
        """Open this copy (again, if closed) and connect the worker's client."""
        self._lease.closed = False
        return self._underlying.connect(**options)  # type: ignore[no-any-return]

    def __enter__(self) -> Any:
        with self._enter_lock:
            self._entered += 1
        try:
            self.connect()
        except BaseException:
            with self._enter_lock:
                self._entered = max(0, self._entered - 1)
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        with self._enter_lock:
            self._entered = max(0, self._entered - 1)
            outermost = self._entered == 0
        if outermost:
            self.close()

    def bind(self, *, headers: Mapping[str, str] | None = None, auth: Any = None) -> Any:
        """A view of the worker's client (see ``Client.bind``), while this copy is open."""
        if self._lease.closed:
            raise ClientStateError("this copy of the client is closed")
        return self._underlying.bind(headers=headers, auth=auth)

    def __reduce__(self) -> tuple[Any, ...]:
        constructor, arguments = self._underlying._recipe
        return (unpickle_client, (self._pickled_as, constructor, arguments))

    def __repr__(self) -> str:
        closed = "closed " if self._lease.closed else ""
        return f"<{closed}copy of {self._underlying!r}, shared by this process's tasks>"


def _copy_of(copy_class: type, client: Any, pickled_as: type) -> Any:
    """A new open copy of ``client``: an object of ``copy_class`` (``_Copy`` before ``pickled_as``)."""
    copy: Any = object.__new__(copy_class)  # not __init__: the client it stands for is made already
    copy.__dict__.update(client.__dict__)  # its options, tool names, recipe; a subclass's own attributes
    copy._underlying, copy._pickled_as = client, pickled_as
    copy._lease = _Lease(client._session)
    copy._session = copy._lease  # every request of the copy goes through the lease
    copy._entered, copy._enter_lock = 0, threading.Lock()
    return copy


def _hook_exit() -> None:
    """Close this process's clients when it exits, by either exit path (under ``_lock``)."""
    global _exit_hooked
    if _exit_hooked:
        return
    _exit_hooked = True
    import multiprocessing.util

    # A multiprocessing worker ends in os._exit after running the finalizers that have an exit
    # priority (multiprocessing.util._exit_function), never atexit; a plain interpreter runs atexit.
    multiprocessing.util.Finalize(None, close_all, exitpriority=10)


@atexit.register
def close_all() -> None:
    """Close this process's clients (at exit; idempotent, best effort)."""
    with _lock:
        clients = list(_clients.values())
    for client in clients:
        try:
            client.close()
        except Exception:  # at exit, closing is best effort
            pass


def _forget_after_fork() -> None:
    global _lock, _exit_hooked
    _lock = threading.Lock()  # the parent's may have been held at the fork
    _left_behind.extend(_clients.values())
    _clients.clear()
    _exit_hooked = False  # a multiprocessing child starts with no finalizers: register afresh


if hasattr(os, "register_at_fork"):  # pragma: no branch - false only where there is no fork (Windows)
    os.register_at_fork(after_in_child=_forget_after_fork)
