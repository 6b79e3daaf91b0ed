"""The modern request envelope (``params._meta``: protocol version, client info, capabilities, log
level) is built and encoded once, then spliced into every request while it stays the same (#16).

Checked on the bytes the Python SDK server receives over stdio: the envelope is right, follows a
change of handlers or log level at once, cannot be changed through ``Client.meta()``, and encodes
to the same JSON as a plain encoding (property).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync.transports import stdio
from mcp_sync.transports.base import EncodedObject, encode_message

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(60)

CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
VERSION = "io.modelcontextprotocol/protocolVersion"

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(params=st.dictionaries(st.text(max_size=6), JSON, max_size=4), meta=st.dictionaries(st.text(max_size=6), JSON,
       max_size=4), request_id=st.integers(0, 10**6), meta_first=st.booleans())
def test_a_pre_encoded_envelope_encodes_to_the_same_json(
    params: dict[str, Any], meta: dict[str, Any], request_id: int, meta_first: bool
) -> None:
    """Splicing the pre-encoded ``_meta`` gives the JSON a plain encoding gives, whatever else the
    params hold (none, some, ``_meta`` first or last)."""
    params = {key: value for key, value in params.items() if key != "_meta"}
    params = {"_meta": EncodedObject(meta), **params} if meta_first else {**params, "_meta": EncodedObject(meta)}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    plain = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
    assert json.loads(encode_message(message)) == json.loads(plain)


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every message the stdio transport writes, parsed back from the bytes sent."""
    sent: list[dict[str, Any]] = []

    def recording(message: Any) -> bytes:
        data = encode_message(message)
        sent.append(json.loads(data))
        return data

    monkeypatch.setattr(stdio, "encode_message", recording)
    return sent


def _calls(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [message["params"] for message in wire if message.get("method") == "tools/call"]


def test_the_envelope_follows_handlers_and_log_level_at_once(wire: list[dict[str, Any]]) -> None:
    """Each request carries the envelope as it is now: a roots handler set between two calls is
    declared on the next one, so is a log level; the server answers every call."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern") as client:
        assert client.call_tool("echo", {"text": "a"}).text == "a"
        assert client.call_tool("echo", {"text": "b"}).text == "b"
        client.set_roots(["file:///tmp"])
        assert client.call_tool("echo", {"text": "c"}).text == "c"
        client.set_log_level("debug")
        assert client.call_tool("echo", {"text": "d"}).text == "d"
        version = client.protocol_version
    first, second, with_roots, with_level = _calls(wire)
    assert first["_meta"] == second["_meta"] and first["_meta"][VERSION] == version
    assert "roots" not in first["_meta"][CAPABILITIES] and LOG_LEVEL not in first["_meta"]
    assert "roots" in with_roots["_meta"][CAPABILITIES] and LOG_LEVEL not in with_roots["_meta"]
    assert "roots" in with_level["_meta"][CAPABILITIES] and with_level["_meta"][LOG_LEVEL] == "debug"
    assert [call["arguments"]["text"] for call in (first, second, with_roots, with_level)] == ["a", "b", "c", "d"]


def test_client_meta_is_the_callers_copy(wire: list[dict[str, Any]]) -> None:
    """Changing what ``Client.meta()`` returned changes nothing that is sent."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern") as client:
        mine = client.meta()
        mine[VERSION] = "1999-01-01"
        mine[CAPABILITIES]["sampling"] = {}
        assert client.call_tool("echo", {"text": "a"}).text == "a"
        assert client.meta()[VERSION] == client.protocol_version
    [call] = _calls(wire)
    assert call["_meta"][VERSION] != "1999-01-01" and "sampling" not in call["_meta"][CAPABILITIES]


def test_a_callers_meta_goes_along_with_the_envelope(wire: list[dict[str, Any]]) -> None:
    """A call's own ``meta=`` entries travel beside the envelope; the envelope's keys win."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="modern") as client:
        assert client.call_tool("echo", {"text": "a"}, meta={"example.com/trace": "t1", VERSION: "x"}).text == "a"
        version = client.protocol_version
    [call] = _calls(wire)
    assert call["_meta"]["example.com/trace"] == "t1" and call["_meta"][VERSION] == version


def test_legacy_requests_carry_no_envelope(wire: list[dict[str, Any]]) -> None:
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy") as client:
        assert client.call_tool("echo", {"text": "a"}).text == "a"
    [call] = _calls(wire)
    assert "_meta" not in call
