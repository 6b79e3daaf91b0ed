"""What the session does around a client's requests (mcp_sync/_protocol/session.py): a call
that connects first checks the capability it needs once connected; a client without a default
timeout connects inside a call without a deadline; discover() is for modern servers only; a
log level the server refuses at connect is a warning, not a failure; an answer about a task
carries the task's id back; roots changes are announced on legacy connections only; results are
kept per credentials even when the credentials' key cannot be hashed. Peers: the fault server
with a wire log and scripted answers (tests/wirekit.py Peer) and, for credentials, the in-memory
FakeTransport."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import wait_until
from lifekit import gone, in_child
from wirekit import DISCOVER, FakeTransport, Peer

import mcp_sync

pytestmark = pytest.mark.timeout(60)

RELATED_TASK = "io.modelcontextprotocol/related-task"


def tools_only(tmp_path: Path) -> Peer:
    """A legacy handshake that declares tools and nothing else."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "tools-only", "version": "1"}}
    return Peer(tmp_path, {"initialize": [{"result": init}]})


def test_a_call_that_connects_first_checks_its_capability_once_connected(tmp_path: Path) -> None:
    """get_prompt() as the first call: the client connects (the capabilities were unknown),
    then refuses it with CapabilityError, so prompts/get never reaches the server."""
    peer = tools_only(tmp_path)
    client = peer.client(mode="legacy", stderr=lambda line: None)  # not entered: that would connect
    try:
        assert client.state.name == "NEW"
        with pytest.raises(mcp_sync.CapabilityError, match="prompts/get: the server did not declare the 'prompts'"):
            client.get_prompt("greet", {"name": "Ada"})
        assert client.state.name == "OPEN"
    finally:
        client.close()
    assert [m["method"] for m in peer.requests()] == ["initialize"]


def test_a_client_without_a_default_timeout_connects_inside_its_first_call(tmp_path: Path) -> None:
    """timeout=None: the first call connects and is answered; neither waits with a deadline
    (nothing times out, the connect included)."""
    peer = Peer(tmp_path)
    client = peer.client(mode="legacy", timeout=None, stderr=lambda line: None)  # not entered: that would connect
    try:
        assert client.timeout is None and client.state.name == "NEW"
        assert client.call_tool("echo", {"text": "no deadline"}).text == "no deadline"
    finally:
        client.close()
    assert [m["method"] for m in peer.requests()] == ["initialize", "tools/call"]


def test_discover_on_a_legacy_server_is_a_capability_error(tmp_path: Path) -> None:
    """server/discover belongs to modern servers: on a legacy connection discover() raises
    CapabilityError saying so, and sends nothing."""
    peer = Peer(tmp_path)
    with peer.client(mode="legacy", stderr=lambda line: None) as client:
        assert client.era == "legacy" and client.server_info["serverInfo"]["name"] == "fault-server"
        with pytest.raises(mcp_sync.CapabilityError, match="server/discover: the server is a legacy server"):
            client.discover()
    assert "server/discover" not in [m["method"] for m in peer.requests()]


def test_a_log_level_refused_at_connect_is_a_warning_not_a_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """log_level= is sent as logging/setLevel right after a legacy handshake; a server that
    refuses it gets a warning naming the level and its error, and the client works on."""
    error = {"code": -32603, "message": "no logging today"}
    peer = Peer(tmp_path, {"logging/setLevel": [{"error": error}]})
    with caplog.at_level(logging.WARNING, logger="mcp_sync"), peer.client(
        mode="legacy", log_level="debug", stderr=lambda line: None
    ) as client:
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"
    assert "logging/setLevel debug failed" in caplog.text and "no logging today" in caplog.text
    (set_level,) = peer.requests("logging/setLevel")
    assert set_level["params"] == {"level": "debug"}


def test_an_answer_about_a_task_carries_the_tasks_id_back(tmp_path: Path) -> None:
    """A legacy server asks for roots on behalf of a task (its _meta names the related task):
    the client's answer carries the same related-task _meta back with the roots, also when
    the client hosts tasks itself (the request is not a task request)."""
    related = {"taskId": "task-7"}
    ask = {"jsonrpc": "2.0", "id": "r1", "method": "roots/list", "params": {"_meta": {RELATED_TASK: related}}}
    peer = Peer(tmp_path, {"tools/call ask": [{"send": [ask], "result": {"content": [], "isError": False}}]})
    with peer.client(mode="legacy", on_roots=["file:///work"], host_tasks=True, stderr=lambda line: None) as client:
        client.call_tool("ask")
        assert wait_until(lambda: any(m.get("id") == "r1" for m in peer.sent()), 10)
    (answer,) = [m for m in peer.sent() if m.get("id") == "r1"]
    assert answer["result"]["roots"] == [{"uri": "file:///work"}]
    assert answer["result"]["_meta"] == {RELATED_TASK: related}


@pytest.mark.parametrize(("mode", "announced"), [("legacy", True), ("modern", False)])
def test_new_roots_are_announced_on_legacy_connections_only(tmp_path: Path, mode: str, announced: bool) -> None:
    """set_roots() on a legacy connection sends notifications/roots/list_changed; a modern
    server asks for roots with each request, so nothing is sent to it."""
    peer = Peer(tmp_path)
    with peer.client(mode=mode, on_roots=["file:///a"], stderr=lambda line: None) as client:
        client.call_tool("echo", {"text": "connected"})
        client.set_roots(["file:///b"])
        client.call_tool("echo", {"text": "after"})  # stdio is ordered: a notice would be logged before this
    methods = [m.get("method") for m in peer.sent()]
    assert ("notifications/roots/list_changed" in methods) is announced
    assert methods[-1] == "tools/call"


def test_private_results_are_kept_per_credentials_whose_key_cannot_be_hashed(no_leaks: None) -> None:
    """The transport's credentials key (auth_context) is a dict here, which cannot be hashed:
    private results are still kept apart per credentials (by the key's repr) and reused for
    the same ones."""

    def handler(method: str, params: dict) -> dict[str, Any]:
        if method == "server/discover":
            return DISCOVER
        return {"resultType": "complete", "tools": [{"name": "t", "inputSchema": {}}], "ttlMs": 60_000,
                "cacheScope": "private"}

    transport = FakeTransport(handler)
    with mcp_sync.Client(transport, mode="modern", timeout=10) as client:
        transport.auth_context = {"token": "ada"}
        client.list_tools()
        client.list_tools()
        assert transport.count("tools/list") == 1
        transport.auth_context = {"token": "bob"}
        client.list_tools()
        assert transport.count("tools/list") == 2
        transport.auth_context = {"token": "ada"}
        client.list_tools()
        assert transport.count("tools/list") == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_of_a_client_without_cache_connects_afresh(tmp_path: Path) -> None:
    """A client made with cache=False, used across os.fork(): the child gets fresh session
    state (still without a cache) and a server of its own; the parent's is untouched."""
    peer = Peer(tmp_path)
    with peer.client(mode="legacy", cache=False, timeout=20, stderr=lambda line: None) as client:
        assert client.call_tool("echo", {"text": "parent"}).text == "parent"
        parent_server = client.pid

        def child() -> dict[str, Any]:
            text = client.call_tool("echo", {"text": "child"}).text
            report = {"text": text, "server": client.pid, "cache": client.cache_enabled}
            client.close()
            return report

        report = in_child(child)
        assert report == {"text": "child", "server": report["server"], "cache": False}, report
        assert report["server"] not in (None, parent_server) and gone(report["server"])
        assert client.pid == parent_server and client.call_tool("echo", {"text": "again"}).text == "again"
