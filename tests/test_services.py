"""Issue #19: mcp_sync in long-lived services (web apps, workers).

Against real servers (the Python SDK server, both eras, stdio and Streamable
HTTP) where they can show it, and the scripted HTTP server of ``httpkit`` for
what they will not do on demand (429/503 answers).
"""

from __future__ import annotations

import pickle
import sys

import pytest

import mcp_sync
from tests.httpkit import FakeServer, Reply, answering

PY = sys.executable
ERAS = ["modern", "legacy"]


# -- #19.4 retry hints ---------------------------------------------------------------------------


def test_a_tool_call_answered_503_raises_server_unavailable_with_the_retry_hint_and_is_not_resent() -> None:
    with FakeServer("modern") as server:
        server.override = answering("tools/call", Reply(503, {"Retry-After": "7"}, b"overloaded"))
        with mcp_sync.Client.http(server.url, max_retries=2) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.call_tool("echo", {"text": "hi"})
    error = caught.value
    assert isinstance(error, mcp_sync.ProtocolError)
    assert (error.status, error.retry_after, error.method) == (503, 7.0, "tools/call")
    assert len(server.seen("tools/call")) == 1  # a tools/call may have had effects: never sent twice


@pytest.mark.parametrize("era", ERAS)
def test_a_list_answered_429_is_retried_then_raises_server_unavailable(era: str) -> None:
    with FakeServer(era) as server:
        server.override = answering("tools/list", Reply(429, {}, b"slow down"))
        with mcp_sync.Client.http(server.url, max_retries=1, mode=era) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.list_tools()
    assert (caught.value.status, caught.value.retry_after) == (429, None)
    assert len(server.seen("tools/list")) == 2  # safe to repeat: retried once (max_retries=1)


def test_an_http_date_retry_after_becomes_seconds() -> None:
    import email.utils
    import time

    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    with FakeServer("modern") as server:
        server.override = answering("tools/call", Reply(502, {"Retry-After": when}, b""))
        with mcp_sync.Client.http(server.url) as client:
            with pytest.raises(mcp_sync.ServerUnavailable) as caught:
                client.call_tool("echo", {})
    assert caught.value.status == 502
    assert 100 < caught.value.retry_after <= 121


def test_every_other_http_failure_carries_its_status(sdk_http_url: str) -> None:
    wrong = sdk_http_url.rsplit("/", 1)[0] + "/nowhere"
    with pytest.raises(mcp_sync.ProtocolError) as caught:
        mcp_sync.Client.http(wrong, timeout=10).connect()
    assert not isinstance(caught.value, mcp_sync.ServerUnavailable)
    assert caught.value.status == 404


def test_a_protocol_error_without_http_has_no_status() -> None:
    assert mcp_sync.ProtocolError("bad").status is None


def test_server_unavailable_pickles_with_its_hints() -> None:
    error = mcp_sync.ServerUnavailable("HTTP 503", status=503, retry_after=2.5, method="tools/call", request_id=4)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is mcp_sync.ServerUnavailable
    assert (back.status, back.retry_after, back.method, back.request_id) == (503, 2.5, "tools/call", 4)
    assert "ServerUnavailable" in mcp_sync.__all__
    assert "ServerUnavailable" in mcp_sync.exceptions.__doc__
