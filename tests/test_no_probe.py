"""Issue #31.6: no ``server/discover`` probe when the caller already knows (checklist V2, D1).

The 2026-07-28 specification makes ``server/discover`` optional (basic/versioning.mdx, "Protocol
Version Negotiation": a client "is free to invoke any RPC inline"; stdio.mdx: a modern-only
client "does not need to probe"). A client pinned to ``protocol_version="2026-07-28"``, or given
a server's earlier DiscoverResult, skips the round trip; the server's capabilities are asked
for once, when read. Counted on the wire: the Python SDK server (modern era) logs every HTTP
request with its ``Mcp-Method`` header (``--http-log``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER, running_server
from httpkit import FakeServer, Reply, Request, json_reply

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """One SDK HTTP server for the module: (its URL, its request log)."""
    handle, name = tempfile.mkstemp(prefix="http-", suffix=".log", dir=tmp_path_factory.mktemp("probe"))
    os.close(handle)
    log = Path(name)
    with running_server([PY, SDK_SERVER, "http", "--http-log", str(log)]) as running:
        yield f"http://127.0.0.1:{running.port}/mcp", log


class Wire:
    """Counts the ``server/discover`` requests the server got since it was made."""

    def __init__(self, log: Path) -> None:
        self.log, self.start = log, len(log.read_text().splitlines())

    def methods(self) -> list[str]:
        lines = self.log.read_text().splitlines()[self.start:]
        return [line.split()[3] for line in lines if line.startswith("POST") and len(line.split()) > 3]

    def discovers(self) -> int:
        return self.methods().count("server/discover")


def test_a_client_left_to_find_out_probes_once(server: tuple[str, Path]) -> None:
    """The baseline the others are measured against: mode="auto" asks server/discover first."""
    url, log = server
    wire = Wire(log)
    with mcp_sync.Client.http(url) as client:
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert client.era == "modern"
    assert wire.discovers() == 1
    assert wire.methods()[0] == "server/discover"


@pytest.mark.parametrize("mode", ["auto", "modern"])
def test_a_pinned_client_sends_no_probe(server: tuple[str, Path], mode: str) -> None:
    url, log = server
    wire = Wire(log)
    with mcp_sync.Client.http(url, mode=mode, protocol_version="2026-07-28") as client:
        assert client.connect() == {}  # nothing was asked to connect
        assert client.era == "modern" and client.protocol_version == "2026-07-28"
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert "echo" in [tool.name for tool in client.tools()]
        assert client.read_resource("test://static").text
        assert wire.discovers() == 0
        assert wire.methods()[0] == "tools/call"  # the first request went inline
        # the capabilities are asked for when read: once
        assert "tools" in client.server_capabilities
        assert client.server_implementation is not None
        assert wire.discovers() == 1
        assert "tools" in client.server_capabilities and client.server_info["supportedVersions"]
        client.call_tool("echo", {"text": "again"})
    assert wire.discovers() == 1


def test_discover_works_before_the_first_request(server: tuple[str, Path]) -> None:
    url, log = server
    wire = Wire(log)
    with mcp_sync.Client.http(url, protocol_version="2026-07-28") as client:
        result = client.discover()
        assert "2026-07-28" in result.supported_versions and "tools" in result.capabilities
        assert wire.methods() == ["server/discover"]
        assert client.server_capabilities == result.capabilities  # what it said is what was negotiated
        client.call_tool("echo", {"text": "hi"})
    assert wire.discovers() == 1
    fresh = mcp_sync.Client.http(url)  # unpinned, never connected: discover() connects first
    try:
        assert "tools" in fresh.discover().capabilities
    finally:
        fresh.close()


def test_a_given_discover_result_is_taken_as_is(server: tuple[str, Path]) -> None:
    url, log = server
    with mcp_sync.Client.http(url) as first:
        earlier = first.discover()
    wire = Wire(log)
    with mcp_sync.Client.http(url, discover_result=earlier) as client:
        assert client.connect() == earlier.raw
        assert client.era == "modern" and client.protocol_version == "2026-07-28"
        assert client.server_capabilities == earlier.capabilities
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        with client.listen(tools_list_changed=True):
            pass
    assert wire.discovers() == 0
    with mcp_sync.Client.http(url, discover_result=earlier.raw) as client:  # its raw dict works too
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
    assert wire.discovers() == 0


def test_a_pinned_client_listens_for_what_the_server_offers(server: tuple[str, Path]) -> None:
    """listen() asks only for what the server declares, so it reads the capabilities first."""
    url, log = server
    wire = Wire(log)
    with mcp_sync.Client.http(url, protocol_version="2026-07-28") as client:
        with client.listen(tools_list_changed=True):
            pass
    assert wire.discovers() == 1


def test_a_given_result_is_checked_when_the_client_is_made(server: tuple[str, Path]) -> None:
    url, _ = server
    with pytest.raises(TypeError, match="discover_result must be a DiscoverResult"):
        mcp_sync.Client.http(url, discover_result="2026-07-28")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="supportedVersions"):
        mcp_sync.Client.http(url, discover_result={"capabilities": {}})
    with pytest.raises(ValueError, match="no mutually supported"):
        mcp_sync.Client.http(url, discover_result={"supportedVersions": ["2031-01-01"]})
    given = {"supportedVersions": ["2026-07-28"], "capabilities": {}}
    with pytest.raises(ValueError, match="contradicts"):
        mcp_sync.Client.http(url, mode="legacy", discover_result=given)
    with pytest.raises(ValueError, match="contradicts"):
        mcp_sync.Client.http(url, protocol_version="2025-11-25", discover_result=given)


def test_a_pinned_stdio_client_goes_inline_too() -> None:
    """stdio: a modern-only client "does not need to probe" (stdio.mdx, Backward Compatibility).
    The SDK's stdio server locks its era on the first request: an enveloped tools/call opens modern."""
    with mcp_sync.Client.stdio(PY, [str(SDK_SERVER), "stdio"], protocol_version="2026-07-28") as client:
        assert client.connect() == {}
        assert client.call_tool("echo", {"text": "hi"}).text == "hi"
        assert "tools" in client.server_capabilities  # asked now, on the modern connection
        assert client.era == "modern" and client.server_info["supportedVersions"]


def _refusing(fake: FakeServer, method: str, supported: list[str], times: int) -> list[int]:
    """Make ``fake`` answer the first ``times`` ``method`` requests with -32022 listing ``supported``."""
    refusals = [0]

    def refuse(request: Request) -> Reply | None:
        if request.rpc_method == method and refusals[0] < times:
            refusals[0] += 1
            error = {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": supported}}
            return json_reply({"jsonrpc": "2.0", "id": request.json["id"], "error": error}, 400)
        return None

    fake.override = refuse
    return refusals


def test_a_pinned_client_retries_a_request_refused_at_its_revision_once(no_leaks: None) -> None:
    """V1 without a probe: the first request carries the pinned revision inline; a -32022 listing
    a revision we speak (even the one sent, as the conformance suite's request-metadata does)
    sends it once more at that revision, and the client goes on at it."""
    with FakeServer("modern") as fake:
        refusals = _refusing(fake, "tools/list", ["2026-07-28"], 1)
        with mcp_sync.Client.http(fake.url, protocol_version="2026-07-28") as client:
            assert [tool.name for tool in client.tools()] == ["echo"]
            assert client.protocol_version == "2026-07-28"
        assert refusals[0] == 1 and len(fake.seen("tools/list")) == 2
        assert not fake.seen("server/discover")


@pytest.mark.parametrize(("supported", "sent"), [(["2026-07-28"], 2), (["2025-11-25"], 1), ([], 1)])
def test_a_refusal_that_stands_is_raised_without_a_loop(no_leaks: None, supported: list[str], sent: int) -> None:
    """Refused again after the retry, or listing only revisions this era cannot use: the error,
    naming what the server speaks; never more than one retry."""
    with FakeServer("modern") as fake:
        _refusing(fake, "tools/call", supported, 10)
        with mcp_sync.Client.http(fake.url, protocol_version="2026-07-28", timeout=10) as client:
            with pytest.raises(mcp_sync.UnsupportedProtocolVersionError) as caught:
                client.call_tool("echo", {"text": "hi"})
            assert caught.value.supported == supported
        assert len(fake.seen("tools/call")) == sent
