"""A modern server's ``input_required`` result that is not well formed is a ProtocolError.

No real server sends these; a scripted in-memory server does. The call fails at once, naming the
field, and no handler is asked.
"""

from __future__ import annotations

from typing import Any

import pytest
from wirekit import DISCOVER, FakeTransport

import mcp_sync

pytestmark = pytest.mark.timeout(60)

ASK = {"method": "elicitation/create", "params": {"mode": "form", "message": "Name?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}}}}


@pytest.mark.parametrize(("answer", "message"), [
    ({"inputRequests": [ASK], "requestState": "s"}, "tools/call: inputRequests is not an object"),
    ({"inputRequests": {"name": ASK}, "requestState": 3}, "tools/call: requestState is not a string"),
])
def test_a_malformed_input_required_result_is_a_protocol_error(answer: dict[str, Any], message: str) -> None:
    asked: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Ada"}}

    def handler(method: str, params: dict) -> dict:
        return DISCOVER if method == "server/discover" else {"resultType": "input_required", **answer}

    transport = FakeTransport(handler)
    with mcp_sync.Client(transport, mode="modern", timeout=10, on_elicitation=on_elicitation) as client:
        with pytest.raises(mcp_sync.ProtocolError, match=message) as raised:
            client.call_tool("echo", {})
    assert raised.value.method == "tools/call"
    assert asked == [] and transport.count("tools/call") == 1  # no handler asked, no retry sent
