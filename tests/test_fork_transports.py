"""A client across os.fork() when it cannot simply make a new transport in the child (#9.5).

A client built on a transport object has only its parent's transport: in the child it is
closed and says why. A client built on a transport factory makes its child's transport at
once; a factory that fails in the child does not break the fork, the child's first use
raises the factory's error. The parent's client is never touched.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from lifekit import gone, in_child

import mcp_sync
from mcp_sync.transports.stdio import StdioTransport

from conftest import PY, fault_args

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]


def test_a_client_on_a_transport_object_is_closed_in_the_child() -> None:
    """The child cannot use the parent's one transport object: the client is CLOSED there, a call
    raises ClientStateError and connect() says it cannot be opened again; the parent goes on."""
    with mcp_sync.Client(StdioTransport(PY, fault_args("--era", "modern"))) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        parent_server = client.pid

        def child() -> dict[str, Any]:
            report: dict[str, Any] = {"state": client.state.value}
            uses = (("call", lambda: client.call_tool("echo", {"text": "child"})), ("connect", client.connect))
            for name, use in uses:
                try:
                    use()
                    report[name] = "worked"
                except mcp_sync.ClientStateError as exc:
                    report[name] = str(exc)
            return report

        report = in_child(child)
        assert report["state"] == "closed", report
        assert "closed" in report["call"]
        assert "built on a transport object cannot be opened again" in report["connect"]
        assert client.pid == parent_server and parent_server is not None and not gone(parent_server)
        assert client.call_tool("echo", {"text": "after"}).text == "after"


def test_a_factory_that_fails_in_the_child_fails_the_childs_first_use() -> None:
    """The factory refuses to make a transport in another process: the fork goes on, and the
    child's first call raises the factory's error (the client is NEW there, not OPEN)."""
    parent = os.getpid()

    def factory() -> StdioTransport:
        if os.getpid() != parent:
            raise OSError("this factory makes no transport in a child")
        return StdioTransport(PY, fault_args("--era", "modern"))

    with mcp_sync.Client(factory, timeout=10) as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"

        def child() -> dict[str, Any]:
            report: dict[str, Any] = {"state": client.state.value}
            try:
                client.call_tool("echo", {"text": "child"})
                report["call"] = "worked"
            except OSError as exc:
                report["call"] = str(exc)
            return report

        report = in_child(child)
        assert report == {"state": "new", "call": "this factory makes no transport in a child"}, report
        assert client.call_tool("echo", {"text": "after"}).text == "after"
