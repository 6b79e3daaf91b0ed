"""The era decision when the probe is slow (D1, V1, section 4 of the checklist).

After ``probe_timeout`` the ``server/discover`` probe stays open and ``initialize`` is sent
alongside; whichever answer decides first wins. These tests script the fault server
(``wirekit.Peer``: ``--script`` answers, ``--log`` what the client wrote) so that each
answer of that race is the one a real server could give, and check the era, the revision
and what went on the wire.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from wirekit import DISCOVER, Peer

import mcp_sync

pytestmark = pytest.mark.timeout(60)

MODERN = "2026-07-28"
SLOW = ("--behaviour", "slow-all", "--delay", "0.4")  # every answer 0.4 s late


def unsupported(*supported: str, requested: str = MODERN) -> dict[str, Any]:
    """A -32022 answer listing ``supported``."""
    return {"error": {"code": -32022, "message": "Unsupported protocol version",
                      "data": {"supported": list(supported), "requested": requested}}}


def methods(peer: Peer) -> list[str]:
    return [message["method"] for message in peer.requests()]


def test_silent_probe_then_initialize_naming_our_modern_revision_is_modern(tmp_path: Path, no_leaks: None) -> None:
    """The probe gets no answer; initialize is refused with -32022 naming 2026-07-28 (a modern
    server that locked its era on the probe): the client is modern at that revision after one
    more server/discover, and never completes a legacy handshake."""
    script = {"server/discover": [{}, {"result": DISCOVER}],  # the first one stays unanswered
              "initialize": [unsupported(MODERN, requested="2025-11-25")]}
    peer = Peer(tmp_path, script)
    with peer.client(probe_timeout=0.2, timeout=10) as client:
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert client.call_tool("echo", {"text": "m"}).text == "m"
    assert methods(peer)[:3] == ["server/discover", "initialize", "server/discover"]
    assert "notifications/initialized" not in [m.get("method") for m in peer.sent()]
    # the unanswered probe is given up on the wire once initialize decided (before: it stayed
    # pending, its connect thread waiting, until the connect's deadline or close)
    probe_id = peer.requests()[0]["id"]
    cancelled = [m["params"].get("requestId") for m in peer.sent() if m.get("method") == "notifications/cancelled"]
    assert probe_id in cancelled


def test_the_abandoned_probe_is_cancelled_on_the_wire_before_the_connect_returns(
    tmp_path: Path, no_leaks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe's thread writes its notifications/cancelled when it wakes; on a loaded machine
    it woke after the client had connected, called and closed, and the notice was dropped (seen
    once running the suite on four workers). Its thread is made 0.3 s late here: the connect
    waits for it, so the notice is on the wire even when close() follows at once."""
    from mcp_sync._engine import Engine

    original = Engine._cancel_on_wire

    def late(self: Engine, request_id: Any, reason: str | None) -> None:
        if reason == "the protocol era was decided without it":
            time.sleep(0.3)
        original(self, request_id, reason)

    monkeypatch.setattr(Engine, "_cancel_on_wire", late)
    script = {"server/discover": [{}, {"result": DISCOVER}],
              "initialize": [unsupported(MODERN, requested="2025-11-25")]}
    peer = Peer(tmp_path, script)
    with peer.client(probe_timeout=0.2, timeout=10) as client:
        assert client.era == "modern"
    cancelled = [m["params"].get("requestId") for m in peer.sent() if m.get("method") == "notifications/cancelled"]
    assert peer.requests()[0]["id"] in cancelled


def test_initialize_names_our_modern_revision_but_discover_then_fails(tmp_path: Path, no_leaks: None) -> None:
    """initialize says modern (-32022 naming 2026-07-28) but the retried server/discover fails:
    the error is raised, saying what the probe found, and the client does not fall back to the
    legacy handshake (the server is modern: "do not fall back to initialize")."""
    broken = {"error": {"code": -32603, "message": "discover is broken"}}
    script = {"server/discover": [{}, broken], "initialize": [unsupported(MODERN, requested="2025-11-25")]}
    peer = Peer(tmp_path, script)
    client = peer.client(probe_timeout=0.2, timeout=10)
    with pytest.raises(mcp_sync.ServerError) as caught:
        client.connect()
    message = str(caught.value)
    assert "discover is broken" in message
    assert "server/discover probe: no answer within 0.2 s" in message
    assert client.state is not mcp_sync.ClientState.OPEN
    client.close()
    assert methods(peer).count("initialize") == 1  # neither a second handshake nor a restart


@pytest.mark.parametrize("slow", [False, True], ids=["prompt", "slow"])
def test_a_modern_server_of_another_modern_revision_is_refused(slow: bool, tmp_path: Path, no_leaks: None) -> None:
    """A stdio server that speaks only the modern revision 2027-01-01 answers the probe and
    initialize with -32022 listing it. No revision is shared, so (V1) the client surfaces
    UnsupportedProtocolVersionError naming it: no legacy handshake, no restart of the server,
    whether the probe answered in time or initialize was already racing it."""
    script = {"server/discover": [unsupported("2027-01-01")],
              "initialize": [unsupported("2027-01-01", requested="2025-11-25")]}
    peer = Peer(tmp_path, script, *(SLOW if slow else ()))
    client = peer.client(probe_timeout=0.1 if slow else 5, timeout=10)
    with pytest.raises(mcp_sync.UnsupportedProtocolVersionError) as caught:
        client.connect()
    assert caught.value.supported == ["2027-01-01"]
    client.close()
    sent = methods(peer)
    assert sent.count("server/discover") == 1  # started once: a restart would probe again
    assert sent.count("initialize") == (1 if slow else 0)


def test_a_modern_server_preferring_another_modern_revision_is_used_at_ours(tmp_path: Path, no_leaks: None) -> None:
    """Section 4 step 2: server/discover lists 2027-01-01 first and 2026-07-28 too: the client is
    modern at the highest revision both speak, and every request it sends declares that one."""
    discover = {**DISCOVER, "supportedVersions": ["2027-01-01", MODERN]}
    peer = Peer(tmp_path, {"server/discover": [{"result": discover}]})
    with peer.client(timeout=10) as client:
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert client.call_tool("echo", {"text": "ours"}).text == "ours"
    versions = {m["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] for m in peer.requests()}
    assert versions == {MODERN}


def test_a_late_bare_answer_to_the_probe_is_not_modern(tmp_path: Path, no_leaks: None) -> None:
    """A legacy server that answers any method with ``{}``, slowly: the late answer to the probe
    has no supportedVersions (D2), so it is no DiscoverResult; the handshake decides: legacy."""
    peer = Peer(tmp_path, {"server/discover": [{"result": {}}]}, *SLOW)
    with peer.client(probe_timeout=0.1, timeout=10) as client:
        assert (client.era, client.protocol_version) == ("legacy", "2025-11-25")
        assert client.call_tool("echo", {"text": "l"}).text == "l"


def test_a_late_32022_naming_our_revision_is_retried_at_it(tmp_path: Path, no_leaks: None) -> None:
    """V1 on a slow modern-only server: the probe's late -32022 lists 2026-07-28 (and initialize
    got -32601): one more server/discover at that revision, and the client is modern."""
    script = {"server/discover": [unsupported(MODERN), {"result": DISCOVER}]}
    peer = Peer(tmp_path, script, "--era", "modern", *SLOW)
    with peer.client(probe_timeout=0.1, timeout=10) as client:
        assert (client.era, client.protocol_version) == ("modern", MODERN)
        assert client.call_tool("echo", {"text": "v1"}).text == "v1"
    assert methods(peer)[:3] == ["server/discover", "initialize", "server/discover"]


def test_probe_timeout_none_lets_the_probe_alone_decide(tmp_path: Path, no_leaks: None) -> None:
    """probe_timeout=None: however late the probe's answer comes (within the connect's timeout),
    initialize is never sent alongside it."""
    peer = Peer(tmp_path, None, *SLOW)
    with peer.client(probe_timeout=None, timeout=10) as client:
        assert client.era == "modern"
        assert client.call_tool("echo", {"text": "x"}).text == "x"
    assert "initialize" not in methods(peer)


def test_mode_legacy_contradicting_a_modern_revision_is_refused() -> None:
    """mode='legacy' with protocol_version 2026-07-28 cannot both hold: ValueError at once."""
    with pytest.raises(ValueError, match="mode='legacy' contradicts the modern protocol_version"):
        mcp_sync.Client.stdio("true", [], mode="legacy", protocol_version=MODERN)
