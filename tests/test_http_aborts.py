"""Aborting HTTP exchanges from another thread (cancel, timeout, close) at the edges of an
exchange's life: aborted before it began, aborted while its connection was being made, and
a deadline watcher that was closed."""

from __future__ import annotations

import threading
import time

import pytest
from helpers import open_fds
from urllib3.connection import HTTPConnection

from mcp_sync.transports._http_common import Aborted, Deadlines, Slot, _connect_tracked
from mcp_sync.transports.http import HttpTransport

from httpkit import RawServer, read_request

pytestmark = pytest.mark.timeout(60)


def test_an_exchange_aborted_before_it_began_never_reaches_the_server(no_leaks: None) -> None:
    with RawServer(read_request) as raw:
        transport = HttpTransport(raw.url)
        slot = Slot()
        slot.abort()
        try:
            with pytest.raises(Aborted):
                transport.exchange("POST", raw.url, slot, headers={}, body=b"{}")
        finally:
            transport.close()
        assert raw.connections == 0


def test_a_connection_aborted_while_being_made_never_connects(no_leaks: None) -> None:
    """The abort came between the exchange's start and its connect: the socket made for the
    connect is refused by the slot and closed; the server sees no connection."""
    with RawServer(read_request) as raw:
        port = int(raw.url.split(":")[2].split("/")[0])
        conn = HTTPConnection("127.0.0.1", port, timeout=5)
        slot = Slot()
        slot.abort()
        fds = len(open_fds())
        with pytest.raises(ConnectionAbortedError, match="the request was aborted"):
            _connect_tracked(conn, slot)
        assert len(open_fds()) == fds  # the socket was closed
        assert raw.connections == 0 and slot.sock is None


def test_a_closed_deadline_watcher_watches_nothing() -> None:
    """After close() (the transport is closing), add() starts no thread and will abort nothing."""
    deadlines = Deadlines("closed")
    deadlines.close(1.0)
    slot = Slot()
    deadlines.add(slot, time.monotonic())
    assert slot.deadline is None and not slot.aborted
    assert not [t for t in threading.enumerate() if t.name == "mcp_sync-deadline-closed"]
