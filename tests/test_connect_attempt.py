"""The connect-in-progress primitive (``_protocol.resources.Attempt``) at its race windows.

A connect runs on its own thread; callers join it, the session asks to hear of its failure,
and close() aborts it. Each of those can come a moment after the attempt ended (the window
between taking the attempt under the client's lock and using it). Real servers cannot
place a call in that window on demand, so the contract is checked on the primitive itself:
a late comer gets the outcome at once, never a wait.
"""

from __future__ import annotations

import logging
import threading

import pytest
from wirekit import Wire

import mcp_sync
from mcp_sync._engine import Engine
from mcp_sync._protocol.resources import Attempt

pytestmark = pytest.mark.timeout(30)


def test_joining_an_attempt_that_already_ended_settles_at_once() -> None:
    """A caller that joins after the connect ended gets its result (or its error) without waiting."""
    done = Attempt(previous=None, restarted=False)
    done.finish("negotiated")
    waiter = done.join()
    assert waiter.wait(0) and waiter.result() == "negotiated"

    failed = Attempt(previous=None, restarted=False)
    failed.finish(error=mcp_sync.ConnectionClosed("the server exited at start"))
    waiter = failed.join()
    assert waiter.wait(0)
    with pytest.raises(mcp_sync.ConnectionClosed, match="exited at start"):
        waiter.result()


def test_failure_callbacks_run_once_whenever_they_were_registered(caplog: pytest.LogCaptureFixture) -> None:
    """on_failure: registered before the failure, run when it comes; registered after, run at
    once; never for a connect that succeeded. One that raises is logged and the others still run."""
    calls: list[str] = []
    attempt = Attempt(previous=None, restarted=True)

    def broken(error: BaseException) -> None:
        raise RuntimeError("callback bug")

    attempt.on_failure(broken)
    attempt.on_failure(lambda error: calls.append(f"early: {error}"))
    caplog.set_level(logging.ERROR, logger="mcp_sync")
    attempt.finish(error=mcp_sync.ConnectionClosed("gone"))
    attempt.on_failure(lambda error: calls.append(f"late: {error}"))
    attempt.finish(error=mcp_sync.ConnectionClosed("a second ending is ignored"))
    assert calls == ["early: gone", "late: gone"]
    assert "a connect-failure callback raised" in caplog.text and "callback bug" in caplog.text

    succeeded = Attempt(previous=None, restarted=True)
    succeeded.finish("negotiated")
    succeeded.on_failure(lambda error: calls.append("must not run"))
    assert calls == ["early: gone", "late: gone"]


def test_abort_fails_the_engines_requests_and_refuses_later_engines(no_leaks: None) -> None:
    """close() aborting a connect: the requests of the engines it started fail at once, waiters
    get the abort's error, and an engine started a moment later is refused (its starter closes
    it), so nothing started after close() is left running."""
    attempt = Attempt(previous=None, restarted=False)
    started = Engine(Wire())
    started.start()
    assert attempt.add_engine(started)
    waiter = attempt.join()
    box: dict[str, BaseException] = {}

    def request() -> None:
        try:
            started.request("server/discover", {}, timeout=30)
        except mcp_sync.MCPError as exc:
            box["error"] = exc

    thread = threading.Thread(target=request)
    thread.start()
    try:
        assert attempt.abort(mcp_sync.ClientStateError("connect: closed while connecting")) == [started]
        thread.join(10)
        assert isinstance(box.get("error"), mcp_sync.ConnectionClosed)
        assert waiter.wait(0)
        with pytest.raises(mcp_sync.ClientStateError, match="closed while connecting"):
            waiter.result()
        late = Engine(Wire())
        assert not attempt.add_engine(late)
        assert attempt.engines == [started]
    finally:
        started.close()
