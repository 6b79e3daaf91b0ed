"""Where a stdio server's stderr goes (the ``stderr=`` option of Client.stdio and
StdioTransport): a file gets each line, a target that raises is dropped without losing the
lines for error messages, a process without sys.stderr (pythonw, a daemon) is no problem, and
a wrong kind of target is refused at once. Peers: the hostile server (one line at start) and
the fault server (``stderr_flood`` writes N lines)."""

from __future__ import annotations

import io
import logging
import sys
import time
from typing import Any

import pytest
from helpers import wait_until

import mcp_sync
from mcp_sync.transports.stdio import StdioTransport

from conftest import PY, SERVERS, fault_args

pytestmark = pytest.mark.timeout(60)

HOSTILE = str(SERVERS / "hostile_stdio.py")


@pytest.mark.parametrize("target", [42, "file", b"log", ["log"]])
def test_a_target_that_is_no_file_callable_or_log_is_refused(target: Any) -> None:
    """stderr must be None, "log", a file or a callable: anything else is a TypeError naming
    the choices, before any process is started."""
    with pytest.raises(TypeError, match=r'^stderr must be None, "log", a file or a callable taking a line, not '):
        StdioTransport(PY, [HOSTILE], stderr=target)
    with pytest.raises(TypeError, match="stderr must be None"):
        mcp_sync.Client.stdio(PY, [HOSTILE], stderr=target)


def test_a_file_target_gets_each_line(no_leaks: None) -> None:
    """A file-like object gets every stderr line, newline-terminated, as the server wrote it."""
    sink = io.StringIO()
    with mcp_sync.Client.stdio(PY, [HOSTILE, "--stderr", "ready on stdio"], mode="legacy", stderr=sink) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        assert wait_until(lambda: "ready on stdio" in sink.getvalue(), 5)
    assert sink.getvalue() == "ready on stdio\n"


def test_a_target_that_raises_is_dropped_and_the_lines_still_explain_errors(
    caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """The stderr callback raises on its first line: that is logged once, the callback is not
    called again, and the server's later lines are still kept for the diagnostics that error
    messages quote."""
    calls: list[str] = []

    def broken(line: str) -> None:
        calls.append(line)
        raise RuntimeError("the application's log is gone")

    with caplog.at_level(logging.ERROR, logger="mcp_sync"), mcp_sync.Client.stdio(
        PY, fault_args(), stderr=broken
    ) as client:
        assert client.call_tool("stderr_flood", {"lines": 3}).text == "wrote 3 lines"
        transport = client.transport
        assert wait_until(lambda: "flood 000002" in transport.diagnostics(), 5), transport.diagnostics()
    assert len(calls) == 1
    assert caplog.text.count("the stderr target raised") == 1


def test_without_a_parent_stderr_the_lines_are_kept_and_nothing_fails(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, no_leaks: None
) -> None:
    """The default target writes to sys.stderr, looked up for each line; where there is none
    (pythonw, a daemon) the line is not shown, nothing raises, and it is still kept."""
    monkeypatch.setattr(sys, "stderr", None)
    with caplog.at_level(logging.ERROR, logger="mcp_sync"), mcp_sync.Client.stdio(
        PY, [HOSTILE, "--stderr", "no terminal here"], mode="legacy"
    ) as client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        transport = client.transport
        assert wait_until(lambda: "no terminal here" in transport.diagnostics(), 5)
    assert "the stderr target raised" not in caplog.text


def test_close_delivers_the_stderr_lines_still_in_the_pipe(no_leaks: None) -> None:
    """The server writes 500 stderr lines, then answers; the application's target takes 4 ms a
    line, so when the client closes right after the answer up to a pipe's worth of lines
    are still unread. The server has exited by then: its last lines (often the most useful)
    must still reach the target, not be dropped."""
    lines: list[str] = []

    def slow(line: str) -> None:
        time.sleep(0.004)
        lines.append(line)

    with mcp_sync.Client.stdio(PY, fault_args(), stderr=slow) as client:
        assert client.call_tool("stderr_flood", {"lines": 500}, timeout=30).text == "wrote 500 lines"
    flood = [line for line in lines if line.startswith("flood ")]
    assert len(flood) == 500 and flood[-1].startswith("flood 000499"), f"{len(flood)} lines reached the target"
