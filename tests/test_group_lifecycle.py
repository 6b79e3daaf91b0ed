"""``ClientGroup``'s life (#10.4, #17.6, #18.12): ``connect()`` and ``remove()`` from other threads
wait for a connect in progress and then see its outcome; Ctrl-C while connecting stops every
server started so far and a later use tries again; a group nobody references closes its clients
even when one of them fails to close.
"""

from __future__ import annotations

import gc
import logging
import signal
import sys
import threading
import weakref

import pytest
from helpers import in_thread
from lifekit import gone, server_pid, wait_for

import mcp_sync

from conftest import PY, ROOT, SERVERS, fault_args

pytestmark = pytest.mark.timeout(60)
DEMO = {"command": PY, "args": [str(ROOT / "examples" / "demo_server.py")]}
#: answers everything (the era probe and the handshake too) a second late: a connect that lasts
SLOW = {"command": PY, "args": fault_args("--behaviour", "slow-all", "--delay", "1")}
#: starts and never answers
SILENT = {"command": PY, "args": [str(SERVERS / "lifecycle_server.py"), "--silent"]}


def test_connect_and_remove_wait_for_a_connect_in_progress(no_leaks: None) -> None:
    group = mcp_sync.ClientGroup({"slow": SLOW, "demo": DEMO}, timeout=30)
    try:
        connecting, connected = in_thread(group.connect)
        assert wait_for(lambda: "connecting" in repr(group), 10)
        removing, removed = in_thread(lambda: group.remove("demo"))
        assert group.connect() is group  # waited for the first one: every server is connected
        connecting.join(30)
        removing.join(30)
        assert connected.get("value") is group and "error" not in removed, (connected, removed)
        assert sorted(group.clients) == ["slow"]  # removed once the connect had ended, not before
        assert group.call_tool("echo", {"text": "slowly"}).text == "slowly"
    finally:
        group.close()


@pytest.mark.skipif(sys.platform == "win32", reason="pthread_kill")
def test_ctrl_c_while_connecting_stops_the_servers_and_a_later_use_tries_again(no_leaks: None) -> None:
    group = mcp_sync.ClientGroup({"silent": SILENT, "demo": DEMO}, timeout=30)
    main = threading.get_ident()

    def interrupt_the_connect() -> None:
        assert wait_for(lambda: "connecting" in repr(group), 10)
        signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        interrupter, _ = in_thread(interrupt_the_connect)
        with pytest.raises(KeyboardInterrupt):
            group.connect()  # waits on the silent server until the Ctrl-C
        interrupter.join(10)
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        assert repr(group) == "<ClientGroup new servers=['demo', 'silent'] failed=[]>" and group.clients == {}
        group.remove("silent")
        assert group.call_tool("echo", {"text": "again"}).text == "again"  # connects afresh
    finally:
        group.close()


class _FailingClose(mcp_sync.Client):
    """A client whose close() raises after closing (an application's subclass)."""

    def close(self) -> None:
        super().close()
        raise RuntimeError("close failed")


@pytest.mark.skipif(sys.implementation.name != "cpython", reason="reference counting")
def test_a_dropped_group_closes_every_client_even_when_one_fails_to(caplog: pytest.LogCaptureFixture,
                                                                     no_leaks: None) -> None:
    failing = _FailingClose.stdio(DEMO["command"], DEMO["args"])
    gc.collect()
    gc.disable()
    try:
        with pytest.warns(ResourceWarning, match="unclosed ClientGroup"), \
                caplog.at_level(logging.DEBUG, logger="mcp_sync"):
            group = mcp_sync.ClientGroup({"failing": failing, "demo": DEMO}, timeout=30).connect()
            pids = [server_pid(client) for client in group.clients.values()]
            ref = weakref.ref(group)
            del group
            assert ref() is None
        assert len(pids) == 2 and wait_for(lambda: all(gone(pid) for pid in pids), 10), pids
        assert "closing a collected group's client failed" in caplog.text
    finally:
        gc.enable()
