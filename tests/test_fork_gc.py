"""Issue 9 points 5 and 6: a client used across os.fork(), and a client nobody closed.

Fork: the child must never touch the parent's pipes, sockets or threads; it
connects afresh on first use (a new server process for stdio, a new HTTP
session), and the parent carries on unaffected. The child reports through a
pipe and leaves with os._exit.

Collection: an unclosed client that nobody references is closed by the garbage
collector (server process ended, threads gone) with a ResourceWarning.
"""

from __future__ import annotations

import gc
import os
import threading
import warnings
from typing import Any

import pytest
from lifekit import gone, in_child, server_pid, transport_of, wait_for

import mcp_sync

from conftest import PY, SDK_SERVER, fault_args

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def echo_rounds(client: mcp_sync.Client, tag: str, rounds: int = 20) -> list[str]:
    """Texts the server echoed back that are not our own (must stay empty)."""
    wrong = []
    for i in range(rounds):
        text = f"{tag}-{i}"
        got = client.call_tool("echo", {"text": text}, timeout=15).text
        if got != text:
            wrong.append(got)
    return wrong


# -- fork -------------------------------------------------------------------------------------------


def test_fork_stdio_child_gets_its_own_server_and_the_parent_is_unaffected() -> None:
    """#9.5: the child's calls got the parent's answers (4 of 20 rounds seen), or hung."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=20) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        parent_server = server_pid(client)
        sub = client.listen(tools_list_changed=True)  # the parent's listen must survive the child
        stop = threading.Event()
        parent_wrong: list[str] = []

        def parent_load() -> None:  # the parent keeps using its client while the child works
            while not stop.is_set():
                parent_wrong.extend(echo_rounds(client, "parent", 1))

        load = threading.Thread(target=parent_load, daemon=True)
        load.start()

        def child() -> dict[str, Any]:
            before_use = server_pid(client)  # the parent's server is not the child's
            sub_state = sub.state  # the parent's subscription: closed here, without a word on the wire
            sub.close()
            wrong = echo_rounds(client, "child")
            report = {"wrong": wrong, "server": server_pid(client), "era": client.era, "before_use": before_use,
                      "sub_state": sub_state}
            client.close()
            report["closed_server_gone"] = gone(report["server"])
            return report

        report = in_child(child)
        stop.set()
        load.join(20)
        assert "error" not in report, report
        assert report["wrong"] == [] and report["era"] == "modern" and report["before_use"] is None
        assert report["server"] not in (None, parent_server)  # a new server process of its own
        assert report["closed_server_gone"] is True and report["sub_state"] == "closed"
        assert parent_wrong == []
        assert server_pid(client) == parent_server and not gone(parent_server)  # the child never killed it
        assert echo_rounds(client, "after") == []
        assert sub.state == "live"
        client.call_tool("add_tool", {"name": "forked"})
        event = sub.get(timeout=10)
        assert event is not None and event[0] == "notifications/tools/list_changed"
        sub.close()


def test_fork_http_child_gets_its_own_session_and_the_parent_is_unaffected(sdk_http_url: str) -> None:
    """#9.5 over Streamable HTTP (legacy session): the child makes its own session and connections."""
    with mcp_sync.Client.http(sdk_http_url, mode="legacy", timeout=20) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        parent_session = transport_of(client).session_id
        assert parent_session

        def child() -> dict[str, Any]:
            wrong = echo_rounds(client, "child", 10)
            report = {"wrong": wrong, "session": transport_of(client).session_id}
            client.close()
            return report

        report = in_child(child)
        assert "error" not in report, report
        assert report["wrong"] == []
        assert report["session"] not in (None, parent_session)
        assert transport_of(client).session_id == parent_session
        assert echo_rounds(client, "parent", 10) == []


# -- garbage collection -----------------------------------------------------------------------------------


def _mcp_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("mcp_sync")}


def test_unclosed_clients_are_collected_and_closed_with_a_resource_warning() -> None:
    """#9.6: five `client = mcp_sync.connect(...)` left five servers and sixteen threads after
    `del client; gc.collect()`."""
    gc.collect()  # other tests' leftovers first, so that only ours are counted
    before = _mcp_threads()
    pids = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for round_ in range(5):
            client = mcp_sync.connect([PY, *fault_args("--era", "modern")], timeout=20, name=f"unclosed-{round_}")
            assert client.call_tool("echo", {"text": str(round_)}).text == str(round_)
            sub = client.listen(tools_list_changed=True)  # a listen thread, too
            del sub
            pids.append(server_pid(client))
            del client
            gc.collect()
    ours = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning) and "unclosed-" in str(w.message)]
    assert len(ours) == 5 and all("fault_server.py" in text for text in ours), ours
    assert wait_for(lambda: all(gone(pid) for pid in pids), 10), pids
    assert wait_for(lambda: not (_mcp_threads() - before), 10), [t.name for t in _mcp_threads() - before]


def test_a_closed_or_never_connected_client_is_collected_quietly() -> None:
    """No warning for a client that was closed, or never started anything."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        client = mcp_sync.Client.stdio(PY, fault_args())
        del client
        with mcp_sync.Client.stdio(PY, fault_args(), timeout=20) as client:
            client.call_tool("echo", {"text": "x"})
        del client
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
