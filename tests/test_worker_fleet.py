"""A pickled Client in a worker fleet (#29.1): one server per worker process, not one per task.

A client handed to a process pool or a cluster as a task argument is unpickled once per task.
Each unpickle in a worker process must use that process's one client for an equal recipe
(equal target, options and credentials; unequal ones never share), closed when the worker
exits; a task that closes its copy must not break the other tasks of its worker. Checked with
``concurrent.futures`` (spawn and fork), ``multiprocessing.Pool`` (a clean close and a
terminate), and a real ``dask.distributed`` LocalCluster: every result right, the distinct
server processes (``client.pid`` seen by the tasks) at most the worker processes, and none of
them alive once the pool or cluster is closed. The server is ``examples/demo_server.py``
(stdio, standard library only: it starts in a few milliseconds, so a run on the old code, one
server per task, fails on the count rather than on time).
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import mcp_sync

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "examples" / "demo_server.py")
SDK_SERVER = str(ROOT / "tests" / "servers" / "sdk_server.py")
PY = sys.executable


def _client(**options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [DEMO], timeout=30, **options)


# -- the tasks (module level: a pool pickles them by name) ----------------------------------------


def _echo(client: mcp_sync.Client, text: str) -> tuple[str, int | None, int]:
    """A task: one tool call; which server answered (its pid) and in which worker."""
    return client.call_tool("echo", {"text": text}).text, client.pid, os.getpid()


def _echo_and_close(client: mcp_sync.Client, text: str) -> tuple[str, int | None, int]:
    """A task that tidies up after itself: its ``with`` block closes its copy."""
    with client:
        return client.call_tool("echo", {"text": text}).text, client.pid, os.getpid()


def _gone(pids: set[int], within: float = 15.0) -> set[int]:
    """The pids among ``pids`` still alive after waiting up to ``within`` seconds for them to end."""
    deadline = time.monotonic() + within
    while True:
        alive = set()
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            alive.add(pid)
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def _check(results: list[tuple[str, int | None, int]], texts: list[str], workers: int) -> set[int]:
    """Every answer right; at most one server per worker process; returns the server pids."""
    assert [text for text, _pid, _worker in results] == texts
    servers = {pid for _text, pid, _worker in results}
    assert None not in servers
    worker_pids = {worker for _text, _pid, worker in results}
    assert len(worker_pids) <= workers
    assert len(servers) <= len(worker_pids), f"{len(servers)} servers for {len(worker_pids)} workers"
    return servers  # type: ignore[return-value]


# -- process pools --------------------------------------------------------------------------------


@pytest.mark.timeout(180)
@pytest.mark.parametrize("context", ["spawn", "fork"])
def test_a_process_pool_starts_one_server_per_worker(context: str) -> None:
    client = _client()
    texts = [f"task {n}" for n in range(300)]
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(context)) as pool:
        results = list(pool.map(_echo, [client] * len(texts), texts, chunksize=1))
        closing = list(pool.map(_echo_and_close, [client] * 40, texts[:40], chunksize=1))
    servers = _check(results, texts, 2)
    assert {pid for _text, pid, _worker in closing} <= servers  # closing copies left the servers to the next
    assert _check(closing, texts[:40], 2)
    assert not _gone(servers), "a server outlived its worker process"
    assert client.state is mcp_sync.ClientState.NEW  # the parent's own client is untouched


@pytest.mark.timeout(180)
@pytest.mark.parametrize("ending", ["close", "terminate"])
def test_a_multiprocessing_pool_starts_one_server_per_worker(ending: str) -> None:
    """``close()`` + ``join()``: the workers leave through multiprocessing's exit path (finalizers,
    no atexit); ``terminate()`` (what ``with Pool()`` does) kills them: their servers read EOF."""
    client = _client()
    texts = [f"job {n}" for n in range(300)]
    pool = multiprocessing.get_context("spawn").Pool(2)
    try:
        results = pool.starmap(_echo, [(client, text) for text in texts], chunksize=1)
    finally:
        if ending == "close":
            pool.close()
        else:
            pool.terminate()
        pool.join()
    servers = _check(results, texts, 2)
    assert not _gone(servers), f"a server outlived its worker process ({ending})"


def _serve_until_killed(client: mcp_sync.Client, answers: Any) -> None:
    """A worker that answers once, then hangs until it is killed."""
    answers.put((client.call_tool("echo", {"text": "up"}).text, client.pid))
    time.sleep(120)


@pytest.mark.timeout(120)
def test_a_killed_worker_leaves_no_server() -> None:
    """SIGKILL runs no exit hook at all: the server must end on its own (EOF on its stdin)."""
    import signal

    context = multiprocessing.get_context("spawn")
    answers = context.Queue()
    worker = context.Process(target=_serve_until_killed, args=(_client(), answers))
    worker.start()
    try:
        text, server = answers.get(timeout=60)
        assert text == "up" and _gone({server}, within=0) == {server}  # running
    finally:
        os.kill(worker.pid, signal.SIGKILL)  # type: ignore[arg-type]
        worker.join(30)
    assert not _gone({server}), "the server outlived its killed worker"


# -- a real distributed engine --------------------------------------------------------------------


# Run in a child process: importing distributed installs tblib's reducers for every exception
# class then defined (copyreg), which changes how exceptions pickle for the rest of the process.
DASK_RUN = r"""
import json, os, sys
from distributed import Client as DaskClient, LocalCluster
import mcp_sync

def echo_and_close(client, text):  # cloudpickled by value: defined in __main__
    with client:
        return client.call_tool("echo", {"text": text}).text, client.pid, os.getpid()

if __name__ == "__main__":
    client = mcp_sync.Client.stdio(sys.executable, [sys.argv[1]], timeout=30)
    texts = [f"dask {n}" for n in range(1000)]
    with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, DaskClient(cluster) as dask:
        workers = sorted(set(dask.run(os.getpid).values()))
        futures = dask.map(echo_and_close, [client] * len(texts), texts, pure=False)
        results = dask.gather(futures)
        del futures
    print(json.dumps({"texts": texts, "results": results, "workers": workers}))
"""


@pytest.mark.timeout(240)
def test_a_dask_cluster_starts_one_server_per_worker_process(tmp_path: Path) -> None:
    """1,000 tasks on 2 worker processes of 2 threads each, every task closing its copy in a
    ``with`` block while the other thread of its worker is using its own."""
    import importlib.util

    if importlib.util.find_spec("distributed") is None:  # pragma: no cover - the test extra installs it
        pytest.skip("dask.distributed is not installed here (pip install distributed)")
    script = tmp_path / "dask_run.py"
    script.write_text(DASK_RUN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run([PY, str(script), DEMO], capture_output=True, text=True, timeout=220, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    answer = json.loads(run.stdout.strip().splitlines()[-1])
    results = [tuple(each) for each in answer["results"]]
    servers = _check(results, answer["texts"], 2)  # type: ignore[arg-type]
    assert {worker for _text, _pid, worker in results} <= set(answer["workers"])
    assert not _gone(servers), "a server outlived the cluster"
    assert not _gone(set(answer["workers"])), "a worker process outlived the cluster"


# -- a copy: what it shares, what closing it does -------------------------------------------------


def _two_copies_one_closed(blob: bytes) -> tuple[str, str, int | None, int | None, str]:
    """In a worker: two tasks' copies; one closes, the other goes on; a third copy too."""
    first, second = pickle.loads(blob), pickle.loads(blob)
    assert first is not second
    first.call_tool("echo", {"text": "warm"})
    first.close()
    try:
        first.call_tool("echo", {"text": "closed"})
        refused = "no error"
    except mcp_sync.ClientStateError as exc:
        refused = type(exc).__name__
    third = pickle.loads(pickle.dumps(second))  # a copy pickles again, as the same recipe
    return (second.call_tool("echo", {"text": "still"}).text, refused, second.pid, third.pid,
            third.call_tool("echo", {"text": "third"}).text)


@pytest.mark.timeout(120)
def test_closing_a_copy_leaves_the_other_copies_of_its_worker_working() -> None:
    client = _client()
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        still, refused, second_pid, third_pid, third = pool.submit(
            _two_copies_one_closed, pickle.dumps(client)).result(timeout=90)
        after = pool.submit(_echo, client, "next task").result(timeout=90)
    assert (still, refused, third) == ("still", "ClientStateError", "third")
    assert second_pid == third_pid == after[1]  # one server for all of them
    assert after[0] == "next task"
    assert not _gone({second_pid})  # type: ignore[arg-type]


def test_a_closed_copy_opens_again_and_nested_with_blocks_close_it_once() -> None:
    copy = pickle.loads(pickle.dumps(_client()))
    other = pickle.loads(pickle.dumps(_client()))
    with copy:
        with copy:
            assert copy.call_tool("echo", {"text": "a"}).text == "a"
        assert copy.state is mcp_sync.ClientState.OPEN  # the inner block's end closes nothing
    assert copy.state is mcp_sync.ClientState.CLOSED
    assert other.state is mcp_sync.ClientState.OPEN and other.pid is not None
    with pytest.raises(mcp_sync.ClientStateError):
        copy.list_tools()
    with pytest.raises(mcp_sync.ClientStateError):
        copy.bind(headers={"X-User": "a"})
    copy.connect()  # like a closed client: connect() opens it again, on the same server
    assert copy.pid == other.pid and copy.call_tool("echo", {"text": "b"}).text == "b"
    assert "copy" in repr(copy) and isinstance(copy, mcp_sync.Client)


def test_equal_recipes_share_and_unequal_ones_never_do() -> None:
    base = pickle.loads(pickle.dumps(_client()))
    same = pickle.loads(pickle.dumps(_client()))  # another client, an equal recipe
    env = pickle.loads(pickle.dumps(_client(env={"TEAM": "b"})))
    slower = pickle.loads(pickle.dumps(mcp_sync.Client.stdio(PY, [DEMO], timeout=31)))
    pids = [each.call_tool("echo", {"text": "x"}) and each.pid for each in (base, same, env, slower)]
    assert pids[0] == pids[1]
    assert len({pids[0], pids[2], pids[3]}) == 3


@pytest.mark.timeout(120)
def test_different_credentials_never_share_a_client(sdk_http_url: str) -> None:
    import requests.auth

    def copy(**credentials: Any) -> mcp_sync.Client:
        return pickle.loads(pickle.dumps(mcp_sync.Client.http(sdk_http_url, mode="legacy", timeout=30,
                                                              **credentials)))

    alice, bob = copy(headers={"Authorization": "Bearer alice"}), copy(headers={"Authorization": "Bearer bob"})
    alice_again = copy(headers={"Authorization": "Bearer alice"})
    basic_a = copy(auth=requests.auth.HTTPBasicAuth("a", "1"))
    basic_b = copy(auth=requests.auth.HTTPBasicAuth("a", "2"))
    basic_a2 = copy(auth=requests.auth.HTTPBasicAuth("a", "1"))
    clients = {"alice": alice, "alice_again": alice_again, "bob": bob, "a": basic_a, "a2": basic_a2, "b": basic_b}
    seen = {name: each.call_tool("whoami").text for name, each in clients.items()}
    assert "Bearer alice" in seen["alice"] and "Bearer bob" in seen["bob"] and "alice" not in seen["bob"]
    assert seen["a"] == seen["a2"] != seen["b"]
    # a legacy session per client: equal credentials share one, unequal ones never do
    sessions = {name: each.transport.session_id for name, each in clients.items()}
    assert sessions["alice"] == sessions["alice_again"] and sessions["a"] == sessions["a2"]
    assert len({sessions["alice"], sessions["bob"], sessions["a"], sessions["b"]}) == 4


def test_pickling_registers_nothing_in_the_pickling_process() -> None:
    from mcp_sync import _worker_clients

    with _client() as client:
        client.call_tool("echo", {"text": "x"})
        pickle.dumps(client)
        assert not _worker_clients._clients
        assert client.state is mcp_sync.ClientState.OPEN


# -- ClientGroup: what its pickle does ------------------------------------------------------------


def _group_job(group: mcp_sync.ClientGroup, text: str) -> tuple[str, int | None, int | None, int]:
    with group:
        answer = group.call_tool("echo", {"text": text}, server="built")
        return answer.text, group.clients["built"].pid, group.clients["entry"].pid, os.getpid()


@pytest.mark.timeout(120)
def test_a_pickled_group_shares_its_servers_per_worker() -> None:
    """As documented: an unpickled group's servers, Clients and config entries alike, are its
    worker's shared clients; the task's ``with group`` block closes its copies only."""
    group = mcp_sync.ClientGroup({"built": _client(), "entry": {"command": PY, "args": [DEMO]}}, timeout=30)
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_group_job, [group] * 5, [str(n) for n in range(5)]))
    assert [text for text, *_ in results] == [str(n) for n in range(5)]
    assert len({built for _text, built, _entry, _worker in results}) == 1
    assert len({entry for _text, _built, entry, _worker in results}) == 1
    servers = {pid for _text, built, entry, _worker in results for pid in (built, entry)}
    assert not _gone(servers)  # type: ignore[arg-type]
    group.close()
