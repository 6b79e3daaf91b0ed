"""Load tests (issue #8, proof 2): many threads, one client, a server that stalls, dies and
answers out of order. Every call gets its own answer or its own error; close() during the load
releases every waiter at once and leaves no thread, process or descriptor behind.

CI sizes are modest; ``MCP_SYNC_LOAD=full`` runs 32 threads x 500 calls everywhere.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers import open_fds, wait_until

import mcp_sync

from conftest import PY, SDK_SERVER

LOAD_SERVER = str(Path(__file__).resolve().parent / "servers" / "load_server.py")
FULL = os.environ.get("MCP_SYNC_LOAD") == "full"
THREADS = 32
pytestmark = pytest.mark.timeout(600 if FULL else 120)


def fd_count() -> int:
    return len(open_fds())


def child_pids() -> set[int]:
    """Live (non-zombie) processes whose parent is this one."""
    me, found = os.getpid(), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me and fields[0] != "Z":
            found.add(int(entry))
    return found


def stalled(client: mcp_sync.Client) -> int:
    """Requests sent and not yet answered."""
    engine = client._engine
    return len(engine._pending) if engine is not None else 0


def library_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("mcp_sync")]


@dataclass
class Snapshot:
    """What the process holds before a test, to compare after close()."""

    threads: set[threading.Thread] = field(default_factory=lambda: set(threading.enumerate()))
    fds: int = field(default_factory=fd_count)
    children: set[int] = field(default_factory=child_pids)

    def assert_nothing_left(self, timeout: float = 5.0) -> None:
        """No garbage collection first (#22.4): what close() leaves to the collector is a leak."""
        deadline = time.monotonic() + timeout
        while True:
            threads = [t.name for t in library_threads() if t not in self.threads]
            children = child_pids() - self.children
            fds = fd_count()
            if (not threads and not children and fds <= self.fds) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert threads == [], f"threads left: {threads}"
        assert children == set(), f"processes left: {children}"
        assert fds <= self.fds, f"descriptors: {self.fds} before, {fds} after"


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    counts: dict[str, int] = field(default_factory=dict)
    wrong: list[str] = field(default_factory=list)

    def count(self, kind: str) -> None:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def fail(self, text: str) -> None:
        with self.lock:
            self.wrong.append(text)


def run_threads(worker: Callable[[int], None], threads: int, bound: float) -> None:
    pool = [threading.Thread(target=worker, args=(n,), name=f"load-{n}", daemon=True) for n in range(threads)]
    for thread in pool:
        thread.start()
    deadline = time.monotonic() + bound
    for thread in pool:
        thread.join(max(0.1, deadline - time.monotonic()))
    stuck = [t.name for t in pool if t.is_alive()]
    assert stuck == [], f"worker threads still running after {bound} s: {stuck}"


def mixed_worker(
    client: mcp_sync.Client, tally: Tally, calls: int, seed: int, *, scripted: bool
) -> Callable[[int], None]:
    """One worker's mix: echo with unique text (out of order), short timeouts on a stalled
    call, cancellations with a unique reason, and (scripted server) a rare death."""

    def check(ok: bool, text: str) -> None:
        if not ok:
            tally.fail(text)

    def worker(n: int) -> None:
        rng = random.Random(seed * 1000 + n)
        for i in range(calls):
            roll = rng.random()
            tag = f"{n}-{i}-{rng.randrange(10**9)}"
            started = time.monotonic()
            try:
                if scripted and n == 0 and i in (calls // 3, 2 * calls // 3):
                    kind = "die"
                    client.call_tool("die", timeout=10)
                    check(False, f"{tag}: die answered")
                elif roll < 0.72:
                    kind = "echo"
                    if scripted:
                        args = {"text": tag, "delay": rng.choice([0, 0, 0.001, 0.005])}
                    else:
                        args = {"text": tag}
                    result = client.call_tool("echo", args, timeout=20)
                    check(result.text == tag, f"{tag}: echo answered {result.text!r}")
                elif roll < 0.86:
                    kind = "timeout"
                    timeout = rng.uniform(0.05, 0.3)
                    if scripted:
                        client.call_tool("stall", timeout=timeout)
                    else:
                        client.call_tool("slow", {"seconds": 5}, timeout=timeout)
                    check(False, f"{tag}: a stalled call answered")
                else:
                    kind = "cancel"
                    token = mcp_sync.CancellationToken()
                    timer = threading.Timer(rng.uniform(0.01, 0.2), token.cancel, kwargs={"reason": tag})
                    timer.start()
                    try:
                        client.call_tool("slow", {"seconds": 5}, cancel=token, timeout=20)
                        check(False, f"{tag}: a cancelled call answered")
                    finally:
                        timer.cancel()
            except mcp_sync.RequestTimeout as exc:
                took = time.monotonic() - started
                check(kind == "timeout", f"{tag}: {kind} timed out: {exc}")
                check(timeout <= took + 0.01 < timeout + 3, f"{tag}: timeout {timeout:.2f} s ended after {took:.2f} s")
                # A call that timed out while the server was being restarted (it dies twice) sent
                # nothing, so it has no request id to name; every other timeout names its request.
                sent = "not connected within" not in str(exc)
                check(exc.method == "tools/call" and (exc.request_id is not None or not sent),
                      f"{tag}: {exc!r} names no request")
            except mcp_sync.Cancelled as exc:
                check(kind == "cancel" and exc.reason == tag, f"{tag}: {kind} cancelled with {exc.reason!r}")
            except mcp_sync.ConnectionClosed as exc:  # the server died under this call
                check(scripted, f"{tag}: {kind}: {exc}")
                check(exc.method == "tools/call", f"{tag}: {exc!r} names no request")
                kind = "closed"
            except Exception as exc:
                tally.fail(f"{tag}: {kind}: {type(exc).__name__}: {exc}")
                kind = "other"
            tally.count(kind)

    return worker


def scripted_client(**options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [LOAD_SERVER, *options.pop("args", [])], mode="legacy", **options)


def test_many_threads_one_client_scripted_server(tmp_path: Path) -> None:
    """32 threads x N mixed calls over stdio on one client, the server dying twice underneath."""
    calls = 500 if FULL else 150
    cancel_log = tmp_path / "cancelled.jsonl"
    before = Snapshot()
    tally = Tally()
    client = scripted_client(timeout=20, args=["--cancel-log", str(cancel_log)])
    started = time.monotonic()
    try:
        run_threads(mixed_worker(client, tally, calls, 1, scripted=True), THREADS, bound=400 if FULL else 90)
        assert client.call_tool("echo", {"text": "after"}, timeout=10).text == "after"
    finally:
        client.close()
    took = time.monotonic() - started
    assert tally.wrong == [], tally.wrong[:20]
    assert sum(tally.counts.values()) == THREADS * calls
    assert tally.counts.get("echo", 0) > THREADS * calls // 2
    assert tally.counts.get("timeout", 0) > 0 and tally.counts.get("cancel", 0) > 0
    # every timed-out or cancelled call that was on the wire was cancelled there (the few in
    # flight when the server died cannot be)
    stopped = tally.counts.get("timeout", 0) + tally.counts.get("cancel", 0)
    told = len(cancel_log.read_text().splitlines())
    assert told >= 0.9 * stopped, (told, stopped)
    before.assert_nothing_left()
    print(f"\n{THREADS * calls} calls in {took:.1f} s: {tally.counts}, server told of {told} cancellations")


def test_close_during_load_releases_every_waiter_at_once() -> None:
    """close() from another thread while 32 threads wait: each is released within a fraction
    of a second with ConnectionClosed (or is refused with ClientStateError once closed), even
    though the server takes 3 s to exit; nothing is left behind."""
    before = Snapshot()
    client = scripted_client(timeout=30, args=["--linger", "3"])
    client.connect()
    released: list[float] = []
    tally = Tally()
    closing = threading.Event()

    def worker(n: int) -> None:
        rng = random.Random(n)
        while True:
            try:
                if rng.random() < 0.5:
                    client.call_tool("stall", timeout=None)
                else:
                    client.call_tool("echo", {"text": "x", "delay": rng.choice([0, 0.01])}, timeout=None)
                    continue
            except mcp_sync.ClientStateError:
                return  # the client is closed: later calls are refused at once
            except mcp_sync.ConnectionClosed:
                with tally.lock:
                    released.append(time.monotonic())
                if closing.is_set():
                    return
            except Exception as exc:
                tally.fail(f"{type(exc).__name__}: {exc}")
                return
            if not closing.is_set():
                tally.fail("a stalled call ended before close()")

    pool = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(THREADS)]
    for thread in pool:
        thread.start()
    assert wait_until(lambda: stalled(client) >= THREADS // 4, 20)  # waiters to release (#22.6: no fixed sleep)
    closing.set()
    close_started = time.monotonic()
    client.close()
    close_took = time.monotonic() - close_started
    for thread in pool:
        thread.join(5)
    assert not any(t.is_alive() for t in pool)
    assert tally.wrong == []
    assert released, "no waiter was released"
    latest = max(released) - close_started
    # fixed: milliseconds; the regression releases them when the server exits (it lingers 3 s)
    assert latest < 1.5, f"the last waiter was released {latest:.2f} s after close() began"
    assert close_took < 10
    before.assert_nothing_left()


@pytest.mark.parametrize("options", [{}, {"mode": "legacy"}], ids=["modern", "legacy"])
def test_many_threads_one_client_sdk_server(options: dict) -> None:
    """The same mix against the real SDK server (stdio) in both eras."""
    calls = 500 if FULL else 6
    before = Snapshot()
    tally = Tally()
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30, **options) as client:
        client.connect()
        run_threads(mixed_worker(client, tally, calls, 2, scripted=False), THREADS, bound=400 if FULL else 90)
        assert client.call_tool("echo", {"text": "after"}, timeout=10).text == "after"
    assert tally.wrong == [], tally.wrong[:20]
    assert sum(tally.counts.values()) == THREADS * calls
    before.assert_nothing_left()


def test_cancel_log_format(tmp_path: Path) -> None:
    """The scripted server's cancellation log, which the load test relies on, records ids."""
    log = tmp_path / "c.jsonl"
    with scripted_client(timeout=5, args=["--cancel-log", str(log)]) as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("stall", timeout=0.1)
        deadline = time.monotonic() + 5
        while not log.exists() or not log.read_text():
            assert time.monotonic() < deadline
            time.sleep(0.02)
    assert all(isinstance(json.loads(line), int) for line in log.read_text().splitlines())


@pytest.mark.parametrize("options", [{}, {"mode": "legacy"}], ids=["modern", "legacy"])
def test_many_threads_one_client_sdk_http(sdk_http_url: str, options: dict) -> None:
    """The same mix over Streamable HTTP against the SDK server, both eras."""
    calls = 500 if FULL else 6
    before = Snapshot()
    tally = Tally()
    with mcp_sync.Client.http(sdk_http_url, timeout=30, **options) as client:
        client.connect()
        run_threads(mixed_worker(client, tally, calls, 3, scripted=False), THREADS, bound=400 if FULL else 90)
        assert client.call_tool("echo", {"text": "after"}, timeout=10).text == "after"
    assert tally.wrong == [], tally.wrong[:20]
    assert sum(tally.counts.values()) == THREADS * calls
    # No collection: ~25 sockets stayed open until the garbage collector ran, in pools that
    # urllib3 2's PoolManager.clear() forgot without closing them (#22.4).
    before.assert_nothing_left()


@pytest.mark.parametrize("options", [{}, {"mode": "legacy"}], ids=["modern", "legacy"])
def test_close_during_load_over_http(sdk_http_url: str, options: dict) -> None:
    """close() while 32 threads wait on slow calls over HTTP: all released at once, nothing left."""
    before = Snapshot()
    client = mcp_sync.Client.http(sdk_http_url, timeout=30, **options)
    client.connect()
    released: list[float] = []
    wrong: list[str] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        try:
            client.call_tool("slow", {"seconds": 20}, timeout=None)
            wrong.append("a slow call answered")
        except mcp_sync.ConnectionClosed:
            with lock:
                released.append(time.monotonic())
        except Exception as exc:
            wrong.append(f"{type(exc).__name__}: {exc}")

    pool = [threading.Thread(target=worker, args=(n,), daemon=True) for n in range(THREADS)]
    for thread in pool:
        thread.start()
    assert wait_until(lambda: stalled(client) == THREADS, 20)  # every slow call sent (#22.6: no fixed sleep)
    close_started = time.monotonic()
    client.close()
    close_took = time.monotonic() - close_started
    for thread in pool:
        thread.join(5)
    assert wrong == [] and len(released) == THREADS
    latest = max(released) - close_started
    # fixed: milliseconds; the regression releases them when the 20 s calls end
    assert latest < 2.0, f"the last waiter was released {latest:.2f} s after close() began"
    assert close_took < 10
    before.assert_nothing_left()
