"""Re-running a notebook cell leaks no server (#29.4).

A connect cell that ends by showing its client (``client`` as its last line) left that client in
IPython's output cache (``Out[n]``, ``_``), so every re-run kept one more server alive until the
kernel exited; ``gc.collect()`` freed nothing. Now a client (or group) made at a cell's call site
closes the one that site made in an earlier execution with an equal recipe.

The kernel tests run cells in a real IPython kernel (``nbclient`` + ``ipykernel``, this venv's
python, this checkout's mcp_sync) against the stdio demo server; the unit tests check the
site-matching rule with a stand-in shell, cells compiled under a cell-like file name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import types
import weakref
from typing import Any, Iterator

import pytest
from lifekit import gone, wait_for

import mcp_sync

from conftest import ROOT

DEMO = ROOT / "examples" / "demo_server.py"
SETUP = f"import json, sys\nimport mcp_sync\npids = []\nDEMO = {str(DEMO)!r}"


# -- in a real kernel ------------------------------------------------------------------------------


class Kernel:
    """One IPython kernel (this interpreter, this checkout on its path) running cells one by one."""

    def __init__(self) -> None:
        nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (the test extra has it)")
        nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the test extra has it)")
        pytest.importorskip("ipykernel", reason="ipykernel is not installed (the test extra has it)")
        self._nbformat = nbformat
        self.notebook = nbformat.v4.new_notebook()
        # "python3" with argv[0] "python": jupyter_client runs it with sys.executable, this venv's python
        self.client = nbclient.NotebookClient(self.notebook, timeout=60, kernel_name="python3")
        self._context: Any = None

    def run(self, source: str) -> str:
        """Run ``source`` as a new cell; its stdout (a failing cell raises CellExecutionError)."""
        cell = self._nbformat.v4.new_code_cell(source)
        self.notebook.cells.append(cell)
        self.client.execute_cell(cell, len(self.notebook.cells) - 1)
        return "".join(output.get("text", "") for output in cell.outputs if output.get("name") == "stdout")

    def start(self, env: dict[str, str]) -> None:
        self._context = self.client.setup_kernel(env=env)
        self._context.__enter__()

    def shutdown(self) -> None:
        """Shut the kernel down (gracefully: its exit hooks run); idempotent."""
        context, self._context = self._context, None
        if context is not None:
            context.__exit__(None, None, None)

    def rerun(self, index: int) -> None:
        """Run the cell at ``index`` again, unchanged (what Shift-Enter on it does)."""
        self.client.execute_cell(self.notebook.cells[index], index)


@pytest.fixture
def kernel() -> Iterator[Kernel]:
    kernel = Kernel()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        kernel.start(env)
    except Exception as exc:  # no kernel on this machine: say why, do not fail
        pytest.skip(f"an IPython kernel cannot start here: {type(exc).__name__}: {exc}")
    try:
        where = json.loads(kernel.run(
            "import json, sys, mcp_sync\nprint(json.dumps([sys.executable, mcp_sync.__file__]))"
        ))
        assert where == [sys.executable, str(ROOT / "mcp_sync" / "__init__.py")], where
        yield kernel
    finally:
        kernel.shutdown()


def _live(pids: list[int]) -> list[int]:
    return [pid for pid in pids if not gone(pid)]


CONNECT = "{var} = mcp_sync.connect([sys.executable, DEMO])\npids[{key!r}].append({var}.pid)\n"
GROUP = (
    '{var} = mcp_sync.ClientGroup({{"demo": {{"command": sys.executable, "args": [DEMO]}}}}).connect()\n'
    'pids[{key!r}].append({var}.clients["demo"].pid)\n'
)
#: how a cell may end; the client or group as the last line (shown, so kept by Out[]) leaked before #29.4
ENDINGS = ["{var}", "{var};", "print({var})", "display({var})", "{var}.tools()"]


def _cells() -> dict[str, str]:
    """Cell name ("connect, client;") -> source. Each cell has its own variable: one kernel runs
    them all, and one cell's rebinding must not free another's client."""
    cells = {}
    for kind, template, endings in (("connect", CONNECT, ENDINGS), ("group", GROUP, ENDINGS[:2])):
        for n, ending in enumerate(endings):
            key, var = f"{kind}, {ending.format(var=kind)}", f"{kind}{n}"
            cells[key] = template.format(var=var, key=key) + ending.format(var=var)
    return cells


CELLS = _cells()


def test_rerun_cells_leave_one_server_each_and_none_after_shutdown(kernel: Kernel) -> None:
    """Each cell (the documented connect cell, however it ends; a group cell) is run three times:
    exactly the last run's server is alive. After the kernel shuts down, none is. (One kernel for
    every cell: a kernel takes seconds to start.)"""
    kernel.run(SETUP.replace("pids = []", "import collections\npids = collections.defaultdict(list)"))
    for source in CELLS.values():
        kernel.run(source)
        index = len(kernel.notebook.cells) - 1
        kernel.rerun(index)
        kernel.rerun(index)
    pids: dict[str, list[int]] = json.loads(kernel.run("print(json.dumps(pids))"))
    assert sorted(pids) == sorted(CELLS) and all(len(set(each)) == 3 for each in pids.values()), pids
    # the earlier servers are closed when the new client is made: no wait beyond their exit
    def leaks() -> dict[str, list[int]]:
        return {cell: _live(each[:-1]) for cell, each in pids.items() if _live(each[:-1])}

    wait_for(lambda: not leaks(), seconds=10)
    assert leaks() == {}
    assert all(_live(each[-1:]) for each in pids.values()), "the last run's client must still serve"
    everything = [pid for each in pids.values() for pid in each]
    kernel.shutdown()
    assert wait_for(lambda: not _live(everything), seconds=15), f"left after the kernel shut down: {_live(everything)}"


# -- the rule, without a kernel: a stand-in shell and cells compiled under cell-like names ----------


class Shell:
    """What the rule reads of IPython's shell: its namespace and its execution count."""

    def __init__(self) -> None:
        self.user_global_ns: dict[str, Any] = {"mcp_sync": mcp_sync, "sys": sys, "DEMO": str(DEMO), "made": []}
        self.execution_count = 1

    def run(self, source: str, cell: str = "cell_a") -> None:
        """Execute ``source`` as the next execution of the cell whose code file is ``cell``."""
        self.execution_count += 1
        exec(compile(source, f"/tmp/ipykernel_0/{cell}.py", "exec"), self.user_global_ns)

    @property
    def made(self) -> list[mcp_sync.Client]:
        return self.user_global_ns["made"]  # type: ignore[no-any-return]


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch) -> Iterator[Shell]:
    shell = Shell()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    yield shell
    for client in shell.made:
        client.close()


# Client.stdio makes a client without starting its server (that waits for the first use): cheap
MAKE = "made.append(mcp_sync.Client.stdio(sys.executable, [DEMO]))\n"


def _open(clients: list[Any]) -> list[bool]:
    return [client.state.value != "closed" for client in clients]


def test_same_site_in_a_new_execution_closes_the_earlier_client(shell: Shell) -> None:
    shell.run(MAKE)
    shell.run(MAKE)
    shell.run(MAKE)
    assert _open(shell.made) == [False, False, True]


def test_a_loop_in_one_execution_keeps_every_client(shell: Shell) -> None:
    loop = "for _ in range(3):\n    " + MAKE
    shell.run(loop)
    assert _open(shell.made) == [True, True, True]
    shell.run(loop)  # the re-run replaces the three of the earlier run, keeps its own three
    assert _open(shell.made) == [False, False, False, True, True, True]


def test_a_different_recipe_keeps_both(shell: Shell) -> None:
    cell = "made.append(mcp_sync.Client.stdio(sys.executable, [DEMO], timeout=TIMEOUT))\n"
    shell.user_global_ns["TIMEOUT"] = 5
    shell.run(cell)
    shell.user_global_ns["TIMEOUT"] = 6
    shell.run(cell)
    assert _open(shell.made) == [True, True]
    shell.run(cell)  # equal to the second: replaces it, not the first
    assert _open(shell.made) == [True, False, True]


def test_another_cell_or_another_line_keeps_both(shell: Shell) -> None:
    shell.run(MAKE, cell="cell_a")
    shell.run(MAKE, cell="cell_b")
    shell.run("\n" + MAKE, cell="cell_a")  # the same cell file, another line
    assert _open(shell.made) == [True, True, True]


def test_a_helper_called_from_two_cells_keeps_both(shell: Shell) -> None:
    shell.run("def make():\n    " + MAKE, cell="helpers")
    shell.run("make()", cell="cell_a")
    shell.run("make()", cell="cell_b")
    assert _open(shell.made) == [True, True]
    shell.run("make()", cell="cell_a")  # cell_a re-run: its own earlier client only
    assert _open(shell.made) == [False, True, True]


def test_connect_and_the_constructor_share_the_cell_line_as_site(shell: Shell) -> None:
    """Frames inside mcp_sync (connect -> Client.stdio) are not part of the site; the handler made
    anew by the re-run is the same option (same definition)."""
    cell = "made.append(mcp_sync.Client.stdio(sys.executable, [DEMO], on_notification=lambda m, p: None))\n"
    shell.run(cell)
    shell.run(cell)
    assert _open(shell.made) == [False, True]


def test_clients_made_in_a_thread_the_cell_started_are_kept(shell: Shell) -> None:
    cell = "import threading\nt = threading.Thread(target=lambda: " + MAKE.strip() + ")\nt.start()\nt.join()\n"
    shell.run(cell)
    shell.run(cell)
    assert _open(shell.made) == [True, True]


def test_shared_clients_are_never_replaced(shell: Shell) -> None:
    cell = "made.append(mcp_sync.shared([sys.executable, DEMO], timeout=7))\n"
    shell.run(cell)
    shell.user_global_ns["made"][0].close()  # closed: the next shared() call makes a new one
    shell.run(cell)
    shell.run(cell)
    assert shell.made[1] is shell.made[2] and _open(shell.made[1:]) == [True, True]


def test_a_group_rerun_closes_the_earlier_group(shell: Shell) -> None:
    cell = 'made.append(mcp_sync.ClientGroup({"demo": {"command": sys.executable, "args": [DEMO]}}))\n'
    shell.run(cell)
    shell.run(cell)
    first, second = shell.made
    assert (first._state, second._state) == ("closed", "new")


def test_nothing_is_kept_alive(shell: Shell) -> None:
    """The rule keeps weak references only: a client dropped in the cell is freed at once."""
    shell.run("client = mcp_sync.Client.stdio(sys.executable, [DEMO])\n")
    ref = weakref.ref(shell.user_global_ns.pop("client"))
    assert ref() is None


def test_recipes_compare_by_value_functions_by_definition() -> None:
    from mcp_sync import _notebook  # here: the kernel tests must run (and fail) on the code before #29.4

    def handler(method: str, params: dict[str, Any]) -> None: ...

    assert _notebook.recipes_equal({"a": [1, {"b": handler}]}, {"a": [1, {"b": handler}]})
    assert not _notebook.recipes_equal({"a": [1, 2]}, {"a": (1, 2)})
    assert not _notebook.recipes_equal({"auth": object()}, {"auth": object()})
    one: list[Any] = []
    one.append(one)
    other: list[Any] = []
    other.append(other)
    assert not _notebook._equal(one, other)  # cyclic, past the recursion limit: not equal, no error


def test_outside_ipython_nothing_changes_and_ipython_is_not_imported() -> None:
    code = (
        "import sys, mcp_sync\n"
        f"made = [mcp_sync.Client.stdio(sys.executable, [{str(DEMO)!r}]) for _ in range(2)]\n"
        "print('IPython' in sys.modules, [c.state.value for c in made])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True)
    assert out.stdout.split() == ["False", "['new',", "'new']"]


def test_untracked_is_per_thread() -> None:
    from mcp_sync import _notebook

    seen = []
    with _notebook.untracked():
        worker = threading.Thread(target=lambda: seen.append(_notebook._depth()))
        worker.start()
        worker.join(10)
        assert _notebook._depth() == 1
    assert seen == [0] and _notebook._depth() == 0


def test_freed_clients_leave_no_entries_behind(shell: Shell) -> None:
    """What the rule remembers of freed clients (their recipes) is swept as it goes: a loop that
    makes and drops 5,000 clients leaves at most a constant number of entries, and each one
    costs a constant time (no list of the loop's earlier clients is walked)."""
    from mcp_sync import _notebook

    class Made:
        def close(self) -> None: ...

    shell.user_global_ns.update(Made=Made, _notebook=_notebook)
    shell.run("for _ in range(5000):\n    _notebook.replace_earlier(Made(), ('stdio', {'command': 'x'}))\n")
    assert _notebook._counts["entries"] <= 2 * _notebook._counts["swept"] + 64
    assert sum(len(made) for runs in _notebook._made.values() for made in runs.values()) <= 200


def test_ipython_imported_without_a_shell_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A script that imported IPython (a library did) runs no shell: nothing is replaced."""
    ns = {"mcp_sync": mcp_sync, "sys": sys, "DEMO": str(DEMO), "made": []}
    # no shell; then an IPython module still being imported (no get_ipython yet)
    for ipython in (types.SimpleNamespace(get_ipython=lambda: None), types.SimpleNamespace()):
        monkeypatch.setitem(sys.modules, "IPython", ipython)
        for _ in range(2):
            exec(compile(MAKE, "/tmp/ipykernel_0/cell_a.py", "exec"), ns)
    assert _open(ns["made"]) == [True, True, True, True]
    for client in ns["made"]:
        client.close()


def test_an_earlier_object_that_fails_to_close_does_not_fail_the_cell(shell: Shell) -> None:
    from mcp_sync import _notebook

    class Stubborn:
        closes = 0

        def close(self) -> None:
            Stubborn.closes += 1
            raise OSError("cannot close")

    class Strange:
        def __eq__(self, other: object) -> bool:
            raise ValueError("the truth value of an array is ambiguous")

    shell.user_global_ns.update(Stubborn=Stubborn, _notebook=_notebook, keep=[], Strange=Strange)
    cell = "keep.append(Stubborn()); _notebook.replace_earlier(keep[-1], {'target': 'x'})\n"
    shell.run(cell)
    shell.run(cell)  # closes the first: its OSError is swallowed
    assert Stubborn.closes == 1
    cell = "keep.append(Stubborn()); _notebook.replace_earlier(keep[-1], {'target': Strange()})\n"
    shell.run(cell)
    shell.run(cell)  # an option whose == raises is not equal: nothing closed
    assert Stubborn.closes == 1
