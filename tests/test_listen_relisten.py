"""A modern listen stream over Streamable HTTP that breaks while the connection is up (U6, #19.3).

The client listens again at once, with a short backoff, up to three times in a row without
an acknowledgment in between; then the subscription ends and says why. The scripted HTTP
server (httpkit) breaks the streams on purpose: a real server does it only when a proxy or
the network cuts the response.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from helpers import wait_until

import mcp_sync
from mcp_sync._protocol import subscriptions as subscriptions_module

from httpkit import MODERN, FakeServer, Reply, Request, json_reply, result, sse_reply

pytestmark = pytest.mark.timeout(60)

SUB_ID = "io.modelcontextprotocol/subscriptionId"


def acknowledgment(request: Request) -> str:
    params = {"notifications": request.json["params"]["notifications"], "_meta": {SUB_ID: request.json["id"]}}
    message = {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": params}
    return "event: message\ndata: " + json.dumps(message)


class BreakingListens:
    """Acknowledges the first ``acked`` listens, then ends every listen stream at once, without
    an answer (a bare close of the response)."""

    def __init__(self, fake: FakeServer, acked: int = 1) -> None:
        self.fake, self.acked = fake, acked
        self.listens = 0
        self.lock = threading.Lock()
        fake.override = self

    def __call__(self, request: Request) -> Reply | None:
        if request.rpc_method == "server/discover":
            caps = {"tools": {"listChanged": True}}
            return json_reply(result(request, {"supportedVersions": [MODERN], "capabilities": caps}))
        if request.rpc_method != "subscriptions/listen":
            return None
        with self.lock:
            self.listens += 1
            acked = self.listens <= self.acked
        return sse_reply(acknowledgment(request)) if acked else sse_reply(": no acknowledgment")

    def count(self) -> int:
        with self.lock:
            return self.listens


class Events:
    """The connection events the application was told of."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def lost(self, error: mcp_sync.MCPError) -> None:
        self.seen.append(("lost", error))

    def reconnected(self, client: mcp_sync.Client) -> None:
        self.seen.append(("reconnected", None))


def test_a_stream_that_keeps_breaking_ends_the_subscription(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """The stream breaks after the acknowledgment; each listen sent again breaks before one: after
    three tries the subscription ends with the reason, the application heard of the loss once,
    and of no comeback."""
    monkeypatch.setattr(subscriptions_module, "_RELISTEN_BACKOFF", (0.01, 0.02, 0.03))
    events = Events()
    with FakeServer("modern") as fake:
        server = BreakingListens(fake)
        with mcp_sync.Client.http(fake.url, timeout=10, on_connection_lost=events.lost,
                                  on_reconnected=events.reconnected) as client:
            sub = client.listen(tools_list_changed=True)
            assert list(sub) == []  # ends by itself
            assert sub.state == "ended"
            assert sub.end_reason is not None and sub.end_reason.startswith("the subscription stream failed")
            assert server.count() == 4  # the first listen and three more
            assert wait_until(lambda: len(events.seen) == 1, 5)
            assert events.seen[0][0] == "lost" and isinstance(events.seen[0][1], mcp_sync.MCPError)
            assert client.call_tool("echo", {"x": 1}).text == '{"x": 1}'  # the connection itself is fine


def test_closing_during_the_backoff_stops_listening_again(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    """close() while the client waits to listen again: it returns at once and nothing more is
    sent (the backoff here is 30 s, so a close that did not interrupt it would show)."""
    monkeypatch.setattr(subscriptions_module, "_RELISTEN_BACKOFF", (30.0, 30.0, 30.0))
    events = Events()
    with FakeServer("modern") as fake:
        server = BreakingListens(fake)
        with mcp_sync.Client.http(fake.url, timeout=10, on_connection_lost=events.lost) as client:
            sub = client.listen(tools_list_changed=True)
            assert wait_until(lambda: len(events.seen) == 1, 10)  # told of the break: now in the backoff
            started = time.monotonic()
            sub.close()
            assert time.monotonic() - started < 10
            assert sub.state == "closed" and server.count() == 1
