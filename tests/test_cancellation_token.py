"""CancellationToken (mcp_sync/cancellation.py), a one-shot flag: the first reason is the one
kept, each callback runs once, a callback added to a cancelled token runs at once, removed
callbacks never run."""

from __future__ import annotations

import threading

import pytest

import mcp_sync

from conftest import PY, SERVERS


def test_only_the_first_cancel_counts() -> None:
    """A second cancel() keeps the first reason and runs no callback again."""
    token = mcp_sync.CancellationToken()
    reasons: list[str | None] = []
    token.add_callback(reasons.append)
    assert repr(token) == "<CancellationToken cancelled=False>" and not token.cancelled
    token.cancel("user pressed stop")
    token.cancel("a later reason")
    assert token.cancelled and token.reason == "user pressed stop"
    assert reasons == ["user pressed stop"]
    assert repr(token) == "<CancellationToken cancelled=True>"


def test_a_callback_added_after_the_cancel_runs_at_once_with_the_reason() -> None:
    """Adding a callback to a cancelled token runs it on the adding thread, with the first
    reason; the remover it returns does nothing (there is nothing left to remove)."""
    token = mcp_sync.CancellationToken()
    token.cancel("deadline")
    seen: list[tuple[str | None, str]] = []
    remove = token.add_callback(lambda reason: seen.append((reason, threading.current_thread().name)))
    assert seen == [("deadline", threading.current_thread().name)]
    remove()
    remove()
    assert seen == [("deadline", threading.current_thread().name)]


def test_a_removed_callback_never_runs() -> None:
    token = mcp_sync.CancellationToken()
    kept: list[str | None] = []
    dropped: list[str | None] = []
    token.add_callback(kept.append)
    remove = token.add_callback(dropped.append)
    remove()
    remove()  # removing twice is harmless
    token.cancel()
    assert kept == [None] and dropped == []


def test_a_client_call_with_a_token_cancelled_in_advance_sends_nothing() -> None:
    """Through the client: a token cancelled before the call makes it raise Cancelled with the
    reason, before connecting (no server is started)."""
    token = mcp_sync.CancellationToken()
    token.cancel("not needed any more")
    client = mcp_sync.Client.stdio(PY, [str(SERVERS / "hostile_stdio.py")], mode="legacy")
    try:
        with pytest.raises(mcp_sync.Cancelled, match="not needed any more") as info:
            client.call_tool("echo", {"text": "x"}, cancel=token)
        assert info.value.reason == "not needed any more"
        assert client.pid is None
    finally:
        client.close()
