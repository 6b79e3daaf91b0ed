"""Notebook re-runs (#29.4): re-running a connect cell replaces the client it made before.

In an IPython kernel a cell that ends by showing its client (``client`` as its last line) leaves
that client in the output cache (``Out[n]``, ``_``, ``__``, ``___``), so re-running the cell used to
keep every earlier client, and its server, alive until the kernel exited. Here a client (or a
:class:`~mcp_sync.ClientGroup`) made by a cell's code closes the one that the *same call site*
made in an *earlier execution* with an *equal recipe*:

- the call site is the chain of (file, line) from the cell's top-level code down to the call into
  mcp_sync. ipykernel names a cell's code file after a hash of its source, so an unchanged cell
  re-run has the same site; an edited cell, another cell, or the same helper function called from
  another cell has another one;
- the execution is the shell's ``execution_count``: clients made at one site in one execution (a
  loop over servers) are all kept;
- the recipe is the target and the options (:func:`recipes_equal`): a re-run with other options or
  another server keeps both.

Outside IPython nothing changes: :func:`replace_earlier` looks for ``IPython`` in ``sys.modules``
(never importing it) and returns. Clients made in a thread the cell started, by
:func:`~mcp_sync.shared`, for a group's servers or for a view's legacy session are not
tracked (:func:`untracked`): they belong to something else that closes them.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import types
import weakref
from typing import Any, Iterator

#: frames in this package are not call sites: ``connect()`` and ``Client.stdio`` made from one
#: cell line are the same site
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

_Site = tuple[tuple[str, int], ...]
_Made = list[tuple[Any, "weakref.ref[Any]"]]

_lock = threading.Lock()
#: call site -> execution -> what was made there then: [(recipe, weak reference to the client or group)]
_made: dict[_Site, dict[int, _Made]] = {}
#: entries in _made, and how many were alive at the last sweep: a sweep when the count doubles keeps
#: the recipes of freed clients from piling up, at a constant cost per client made
_counts = {"entries": 0, "swept": 0}
_local = threading.local()


@contextlib.contextmanager
def untracked() -> Iterator[None]:
    """Within this block (this thread), clients made are not replaced by re-runs: for clients that
    something else owns and closes (a group's, a shared one, a view's legacy session)."""
    _local.depth = _depth() + 1
    try:
        yield
    finally:
        _local.depth -= 1


def _no_shell() -> None:  # what an IPython module still being imported (no get_ipython yet) has
    return None


def _depth() -> int:
    depth: int = getattr(_local, "depth", 0)
    return depth


def replace_earlier(made: Any, recipe: Any) -> None:
    """Close what ``made``'s call site made in an earlier cell execution with an equal recipe.

    ``made`` (a client or group, just made) is remembered by a weak reference: this keeps nothing
    alive. A no-op outside an IPython shell, in a block of :func:`untracked`, and when no cell's
    top-level code is on the stack (a thread the cell started). Thread-safe.
    """
    ipython = sys.modules.get("IPython")  # never imported here: `import mcp_sync` stays light
    if ipython is None or _depth():
        return
    shell = getattr(ipython, "get_ipython", _no_shell)()  # None: IPython imported, no shell running
    if shell is None:
        return
    site = _cell_site(getattr(shell, "user_global_ns", None))
    execution = getattr(shell, "execution_count", None)
    if site is None or not isinstance(execution, int):
        return
    doomed = []
    with _lock:
        runs = _made.setdefault(site, {})
        for run in [run for run in runs if run != execution]:  # earlier executions of this site
            kept = []
            for entry in runs[run]:
                earlier = entry[1]()
                if earlier is not None and _equal(entry[0], recipe):
                    doomed.append(earlier)
                elif earlier is not None:
                    kept.append(entry)
            _counts["entries"] -= len(runs[run]) - len(kept)
            if kept:
                runs[run] = kept
            else:
                del runs[run]
        # this execution's list only grows: a loop is not compared with itself
        runs.setdefault(execution, []).append((recipe, weakref.ref(made)))
        _counts["entries"] += 1
        if _counts["entries"] > 2 * _counts["swept"] + 64:
            _sweep()
    for earlier in doomed:  # unlocked: close() joins threads and may take a moment
        try:
            earlier.close()
        except Exception:  # the new client is made; failing to close an old one must not fail the cell
            pass


def _sweep() -> None:
    """Drop the entries of freed clients everywhere (under _lock)."""
    for site in list(_made):
        runs = _made[site]
        for run in list(runs):
            runs[run] = [entry for entry in runs[run] if entry[1]() is not None]
            if not runs[run]:
                del runs[run]
        if not runs:
            del _made[site]
    _counts["entries"] = _counts["swept"] = sum(len(made) for runs in _made.values() for made in runs.values())


def _cell_site(user_globals: Any) -> tuple[tuple[str, int], ...] | None:
    """The (file, line) chain from the outermost cell's top-level code down to the call into
    mcp_sync, or None when no cell's code is on this thread's stack.

    A frame is a cell's top-level code when it is module code run in the shell's namespace; the
    outermost one counts, so that a ``%run -i`` script or an ``exec`` inside a cell is part of
    the cell's site, not a site shared by every cell that does the same."""
    frames: list[types.FrameType] = []
    top = 0
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:  # the whole stack: the outermost cell frame is known only at its top
        frames.append(frame)
        if frame.f_globals is user_globals and frame.f_code.co_name == "<module>":
            top = len(frames)
        frame = frame.f_back
    # (file, line) only up to the cell: the kernel's own frames above it are most of the stack
    chain = tuple(
        (each.f_code.co_filename, each.f_lineno) for each in frames[:top]
        if not each.f_code.co_filename.startswith(_PACKAGE_DIR)
    )
    frames.clear()  # no frame kept: a frame holds its locals (the new client among them)
    return chain or None


def _equal(one: Any, other: Any) -> bool:
    try:
        return recipes_equal(one, other)
    except RecursionError:  # a recipe nested past the recursion limit (or cyclic): not the same
        return False


def recipes_equal(one: Any, other: Any) -> bool:
    """Whether two recipes (targets and options) are equal: dicts, lists and tuples item by item,
    functions by their module and qualified name (a re-run defines a handler afresh: the same
    definition, a new object), anything else by ``==`` (an object without equality, such as an
    auth object made anew in the cell, is equal to itself only).

    Example: ``recipes_equal({"on_notification": lambda m, p: None}, {"on_notification": lambda m, p: None})``
    is True; ``recipes_equal({"timeout": 5}, {"timeout": 6})`` is False.
    """
    if one is other:
        return True
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(recipes_equal(one[key], other[key]) for key in one)
    if isinstance(one, (list, tuple)) and isinstance(other, (list, tuple)):
        return type(one) is type(other) and len(one) == len(other) and all(
            recipes_equal(a, b) for a, b in zip(one, other)
        )
    if isinstance(one, types.FunctionType) and isinstance(other, types.FunctionType):
        return (one.__module__, one.__qualname__) == (other.__module__, other.__qualname__)
    try:
        return bool(one == other)
    except Exception:  # an option whose == raises (an array) is not equal
        return False
