"""#29.3: many users' views on a legacy server: the session cap is an option, a view's session is
cheap (no GET stream until something needs the server's messages) and the session it evicts is
closed without delaying the request that evicted it.

Against the real SDK server (mcp==2.3.0) in legacy mode, which writes a line per HTTP request
(``--http-log``): ``POST initialize`` opens a session; ``GET`` is a stream of server messages;
``DELETE`` ends a session. ``whoami`` answers with the credential that reached the server.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import random
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER, running_server


@contextlib.contextmanager
def logged_server(folder: Path, *extra: str) -> Iterator[tuple[str, Path]]:
    """A fresh SDK HTTP server writing its HTTP requests to a log: (its URL, the log)."""
    handle, name = tempfile.mkstemp(prefix="http-", suffix=".log", dir=folder)  # a name of its own
    os.close(handle)
    log = Path(name)
    with running_server([PY, SDK_SERVER, "http", "--http-log", str(log), *extra]) as server:
        yield f"http://127.0.0.1:{server.port}/mcp", log


def seen(log: Path) -> dict[str, int]:
    """What the server was asked for: sessions opened, GET streams, DELETEs."""
    lines = log.read_text().splitlines()
    return {
        "initialize": sum(line.startswith("POST initialize") for line in lines),
        "GET": sum(line.startswith("GET") for line in lines),
        "DELETE": sum(line.startswith("DELETE") for line in lines),
    }


def eventually(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.02)


def whoami(client: mcp_sync.Client, user: str) -> None:
    token = f"Bearer {user}"
    answer = json.loads(client.bind(headers={"Authorization": token}).call_tool("whoami", {}).text)
    assert answer["authorization"] == token  # its own credential's answer, never another's


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    with logged_server(tmp_path_factory.mktemp("views")) as server:
        yield server


def test_the_cap_is_a_checked_option_kept_in_the_recipe(legacy: tuple[str, Path]) -> None:
    url, _ = legacy
    for wrong in (0, -1, True, 2.5, "8"):
        with pytest.raises(ValueError, match="max_view_sessions"):
            mcp_sync.Client.http(url, max_view_sessions=wrong)
        with pytest.raises(ValueError, match="max_view_sessions"):
            mcp_sync.Client.sse(url, max_view_sessions=wrong)
    client = mcp_sync.Client.http(url, mode="legacy", max_view_sessions=5)
    copy = pickle.loads(pickle.dumps(client))  # a worker's copy keeps the user's cap
    assert copy._recipe[1]["max_view_sessions"] == 5
    grouped = mcp_sync.connect({"url": url, "max_view_sessions": 7}, mode="legacy")  # a config entry's option
    try:
        assert grouped._recipe[1]["max_view_sessions"] == 7
    finally:
        grouped.close()
    assert mcp_sync.shared(url, max_view_sessions=9)._recipe[1]["max_view_sessions"] == 9


def test_past_the_cap_the_least_recently_used_session_is_closed(legacy: tuple[str, Path], no_leaks: None) -> None:
    url, log = legacy
    before = seen(log)
    with mcp_sync.Client.http(url, mode="legacy", max_view_sessions=3) as client:
        for user in ("a", "b", "c", "a"):  # three sessions; "a" used last, "b" least recently
            whoami(client, user)
        assert seen(log)["initialize"] - before["initialize"] == 1 + 3  # the client's own, and a, b, c
        whoami(client, "d")  # the fourth credential: "b"'s session is closed
        eventually(lambda: seen(log)["DELETE"] - before["DELETE"] == 1)
        opened = seen(log)["initialize"]
        for user in ("a", "c", "d"):  # still open: no new session
            whoami(client, user)
        assert seen(log)["initialize"] == opened
        whoami(client, "b")  # closed: opened again
        assert seen(log)["initialize"] == opened + 1
    # "b", then "a" (evicted by "b"), then at close the client's own and those of c, d, b
    eventually(lambda: seen(log)["DELETE"] - before["DELETE"] == 1 + 1 + 1 + 3)


def test_the_default_cap_is_64(legacy: tuple[str, Path]) -> None:
    url, log = legacy
    with mcp_sync.Client.http(url, mode="legacy") as client:
        before = seen(log)
        for user in range(65):
            whoami(client, f"user-{user}")
        eventually(lambda: seen(log)["DELETE"] - before["DELETE"] == 1)  # user-0's
        opened = seen(log)["initialize"]
        whoami(client, "user-64")
        whoami(client, "user-1")
        assert seen(log)["initialize"] == opened


def test_a_view_session_opens_no_get_stream_until_a_listen_needs_it(legacy: tuple[str, Path], no_leaks: None) -> None:
    """The 2025-11-25 spec: the client MAY issue a GET. A view's session without handlers makes
    requests only; the first listen through it opens its stream (and what it sends is heard)."""
    url, log = legacy
    with mcp_sync.Client.http(url, mode="legacy") as client:
        before = seen(log)
        for user in ("a", "b", "c", "a", "b"):
            whoami(client, user)
        assert seen(log)["initialize"] - before["initialize"] == 3
        assert seen(log)["GET"] == before["GET"]  # three sessions, no GET stream
        view = client.bind(headers={"Authorization": "Bearer a"})
        with view.listen(tools_list_changed=True) as subscription:
            assert seen(log)["GET"] == before["GET"] + 1  # opened on demand, before listen returned
            view.call_tool("add_tool", {"name": "made_for_a"})  # announces tools/list_changed
            got: list[str] = []

            def first() -> None:
                got.append(next(iter(subscription))[0])

            reader = threading.Thread(target=first, daemon=True)
            reader.start()
            reader.join(10)
            assert got == ["notifications/tools/list_changed"]
        whoami(client, "b")
        assert seen(log)["GET"] == before["GET"] + 1  # still only a's


def test_a_view_session_of_a_client_with_handlers_opens_its_get_stream(legacy: tuple[str, Path]) -> None:
    url, log = legacy

    def heard(method: str, params: dict) -> None:
        pass

    with mcp_sync.Client.http(url, mode="legacy", on_notification=heard) as client:
        before = seen(log)
        whoami(client, "a")
        eventually(lambda: seen(log)["GET"] == before["GET"] + 1)  # the server's messages are wanted


def test_evicting_never_waits_for_the_evicted_session_delete(tmp_path: Path, no_leaks: None) -> None:
    """A server that takes 1.5 s to end a session: the request that evicts one is not delayed
    by it; close() still ends (and joins) everything."""
    with logged_server(tmp_path, "--delete-delay-ms", "1500") as (url, log):
        client = mcp_sync.Client.http(url, mode="legacy")
        for user in range(64):
            whoami(client, f"user-{user}")
        slowest = 0.0
        for user in range(64, 68):  # each evicts one
            start = time.monotonic()
            whoami(client, f"user-{user}")
            slowest = max(slowest, time.monotonic() - start)
        assert slowest < 1.0, f"an evicting request took {slowest:.2f} s"
        start = time.monotonic()
        client.close()
        closing = time.monotonic() - start
        assert seen(log)["DELETE"] == 1 + 68  # every session ended, the evicted ones included
        assert closing < 30, closing


def test_100_users_2000_requests_open_at_most_100_sessions(legacy: tuple[str, Path], no_leaks: None) -> None:
    """The newcomer's web app: 100 users, 16 threads, 2,000 requests, the cap set to the user
    count: one session per user (and the client's own), no GET stream for the views, no DELETE
    before close, and every answer the asking user's own."""
    url, log = legacy
    users = random.Random(29).choices(range(100), k=2000)
    errors: list[BaseException] = []
    lock = threading.Lock()
    with mcp_sync.Client.http(url, mode="legacy", max_view_sessions=100) as client:
        before = seen(log)

        def work(share: list[int]) -> None:
            try:
                for user in share:
                    whoami(client, f"user-{user}")
            except BaseException as exc:  # the assertion is made on the test's thread
                with lock:
                    errors.append(exc)

        threads = [threading.Thread(target=work, args=(users[i::16],)) for i in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(300)
        assert not errors, errors[:3]
        after = seen(log)
        assert after["initialize"] - before["initialize"] <= 100
        assert after["GET"] == before["GET"]
        assert after["DELETE"] == before["DELETE"]


def test_a_session_evicted_under_a_request_is_closed_only_after_it(legacy: tuple[str, Path], no_leaks: None) -> None:
    """More users at once than the cap (4 users, cap 2, 8 threads): sessions are evicted while
    other threads' requests are on them; those requests still get their answers (the session is
    closed once its last request is done), and every answer is the asking user's."""
    url, _ = legacy
    errors: list[BaseException] = []
    lock = threading.Lock()
    with mcp_sync.Client.http(url, mode="legacy", max_view_sessions=2) as client:

        def work(first: int) -> None:
            for turn in range(30):
                try:
                    whoami(client, f"user-{(first + turn) % 4}")
                except BaseException as exc:  # the assertion is made on the test's thread
                    with lock:
                        errors.append(exc)

        threads = [threading.Thread(target=work, args=(first,)) for first in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    assert not errors, [f"{type(error).__name__}: {error}" for error in errors[:3]]
