"""``progress=True``: a progress bar driven by a real server's progress notifications (#30.3).

tqdm's bar when tqdm is importable, a plain one-line stderr bar otherwise (a carriage-return
redraw on a terminal, sparse lines when not); total known or not; the server's message shown
escaped; closed when the call ends, fails, times out or is cancelled (from another thread too);
no update after the close. The CLI shows the bar on a terminal (a real pseudo-terminal) and
nothing when piped.
"""

from __future__ import annotations

import inspect
import io
import os
import struct
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from clikit import cli_env

import mcp_sync
from mcp_sync import _progress

from conftest import PY, ROOT, SDK_SERVER

pytestmark = pytest.mark.timeout(120)

ERAS = ["legacy", "modern"]

#: A real peer (the official SDK's MCPServer): ``burst`` reports ``n`` progress notifications at
#: once, with a total or not, each with ``message`` (may be hostile) and its step.
BURST_SERVER = textwrap.dedent(
    """
    import warnings
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer("burst")

    @server.tool()
    async def burst(n: int, with_total: bool, message: str, ctx: Context) -> str:
        for i in range(n):
            await ctx.report_progress(i + 1, n if with_total else None, f"{message} {i + 1}")
        return "done"

    server.run("stdio")
    """
)


class Stream(io.StringIO):
    """A stderr that says whether it is a terminal, and can tell when a text shows on it."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty
        self.writes = 0
        self.changed = threading.Condition()

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        with self.changed:
            self.writes += 1
            written = super().write(text)
            self.changed.notify_all()
            return written

    def wait_for(self, text: str, seconds: float = 30) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: text in self.getvalue(), seconds)


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch) -> None:
    """No tqdm: the plain bar; every update drawn (no 0.1 s throttle) so tests see each."""
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails as if not installed
    monkeypatch.setattr(_progress, "REDRAW_EVERY", 0.0)


def stderr(monkeypatch: pytest.MonkeyPatch, tty: bool) -> Stream:
    stream = Stream(tty)
    monkeypatch.setattr(sys, "stderr", stream)
    return stream


@pytest.fixture(params=ERAS, scope="module")
def sdk(request: pytest.FixtureRequest) -> Iterator[mcp_sync.Client]:
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=request.param, timeout=30, stderr="log") as client:
        yield client


@pytest.fixture(scope="module")
def burst(tmp_path_factory: pytest.TempPathFactory) -> Iterator[mcp_sync.Client]:
    script = tmp_path_factory.mktemp("burst") / "burst_server.py"
    script.write_text(BURST_SERVER)
    with mcp_sync.Client.stdio(PY, [str(script)], timeout=30, stderr="log") as client:
        yield client


def redraws(text: str) -> list[str]:
    return text.split("\r\x1b[K")[1:]


# -- the plain bar (P1: progress with or without a total and a message) -------------------------


def test_plain_bar_on_a_terminal_with_a_total(sdk: mcp_sync.Client, plain: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    assert sdk.call_tool("slow", {"seconds": 0.5}, progress=True).text == "slept 0.5"
    shown = redraws(err.getvalue())
    assert shown[0] == "call_tool slow ..."  # drawn at once: the call is under way
    assert shown[1:-1] == [f"call_tool slow [{'#' * 4 * n}{' ' * (20 - 4 * n)}] {n}/5 {20 * n}% step {n}/5"
                           for n in range(1, 6)]
    assert shown[-1] == "call_tool slow [####################] 5/5 100% step 5/5\n"  # closed: a newline


def test_plain_bar_on_a_terminal_without_a_total(sdk: mcp_sync.Client, plain: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """P1: ``total`` is optional: a counter, not a fraction."""
    err = stderr(monkeypatch, tty=True)
    assert sdk.call_tool("count_up", {"n": 4}, progress=True).text == "counted 4"
    shown = redraws(err.getvalue())
    # a counter with a spinner, no fraction, no percentage
    spinner = "|/-\\"
    assert shown[1:-1] == [f"call_tool count_up {spinner[n % 4]} {n} item {n}" for n in range(1, 5)]
    assert shown[-1].endswith(" 4 item 4\n") and "%" not in err.getvalue()


def test_plain_bar_not_on_a_terminal_writes_sparse_lines(burst: mcp_sync.Client, plain: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=False)
    burst.call_tool("burst", {"n": 200, "with_total": True, "message": "m"}, progress=True)
    lines = err.getvalue().splitlines()
    # one line per tenth (0 % .. 100 %), no carriage return, the last state not written twice
    assert [line.split("] ")[1].split()[1] for line in lines] == [f"{10 * n}%" for n in range(11)]
    assert "\r" not in err.getvalue() and lines[-1].endswith("200/200 100% m 200")
    err.seek(0)
    err.truncate()
    burst.call_tool("burst", {"n": 200, "with_total": False, "message": "m"}, progress=True)
    # no total: a line at most every 5 s, and the last state when the call ends
    assert err.getvalue().splitlines() == ["call_tool burst 1 m 1", "call_tool burst 200 m 200"]


def test_a_call_without_progress_writes_nothing_when_not_a_terminal(sdk: mcp_sync.Client, plain: None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=False)
    assert sdk.call_tool("echo", {"text": "hi"}, progress=True).text == "hi"
    assert err.getvalue() == ""


def test_false_and_none_show_nothing_and_a_callable_still_works(sdk: mcp_sync.Client,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    seen: list[tuple[float, float | None, str | None]] = []
    sdk.call_tool("slow", {"seconds": 0.4}, progress=False)
    sdk.call_tool("slow", {"seconds": 0.4}, progress=None)
    sdk.call_tool("slow", {"seconds": 0.4}, progress=lambda *args: seen.append(args))
    assert err.getvalue() == ""
    assert seen == [(n, 4, f"step {n}/4") for n in range(1, 5)]
    with pytest.raises(TypeError, match="progress must be a callable, True or None"):
        sdk.call_tool("echo", {"text": "x"}, progress="yes")  # type: ignore[arg-type]


def test_the_servers_message_is_escaped_and_bounded(burst: mcp_sync.Client, plain: None,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    hostile = "\x1b]52;c;eA==\x07\x1b[2J\u202e" + "x" * 5000
    burst.call_tool("burst", {"n": 3, "with_total": True, "message": hostile}, progress=True)
    text = err.getvalue()
    assert "\x1b]" not in text and "\x07" not in text and "\x1b[2J" not in text and "\u202e" not in text
    assert "\\x1b]52;c;eA==\\x07\\x1b[2J\\u202e" in text  # shown as visible escapes
    assert all(len(line) <= 200 for line in redraws(text))  # cut to the terminal's width


def test_server_everything_long_running_operation(everything_js: Path, plain: None,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference server's own long-running tool, over stdio, its total and steps as sent."""
    err = stderr(monkeypatch, tty=True)
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], timeout=30, stderr="log") as client:
        result = client.call_tool("trigger-long-running-operation", {"duration": 0.6, "steps": 3}, progress=True)
    assert "completed" in result.text.lower(), result.text
    bar = "call_tool trigger-long-running-operation"
    assert redraws(err.getvalue()) == [
        f"{bar} ...", f"{bar} [######              ] 1/3 33%", f"{bar} [#############       ] 2/3 66%",
        f"{bar} [####################] 3/3 100%", f"{bar} [####################] 3/3 100%\n",
    ]  # it sends no message: none shown


# -- closed when the call fails, times out or is cancelled ------------------------------------


def settled(err: Stream) -> str:
    """The stream once it has stopped changing, then checked not to change for 0.5 s more: an
    update after the close would show here."""
    before = err.getvalue()
    time.sleep(0.5)
    assert err.getvalue() == before, "written after the bar was closed"
    return before


def test_a_timeout_closes_the_bar_and_says_so(sdk: mcp_sync.Client, plain: None,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    with pytest.raises(mcp_sync.RequestTimeout):
        sdk.call_tool("slow", {"seconds": 2}, progress=True, timeout=0.45)
    last = redraws(settled(err))[-1]
    assert last.startswith("call_tool slow [") and last.endswith(" (RequestTimeout)\n"), last


def test_a_cancel_from_another_thread_closes_the_bar(sdk: mcp_sync.Client, plain: None,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    token = mcp_sync.CancellationToken()

    def cancel_after_the_second_step() -> None:
        if err.wait_for("2/20"):
            token.cancel()

    canceller = threading.Thread(target=cancel_after_the_second_step)
    canceller.start()
    try:
        with pytest.raises(mcp_sync.Cancelled):
            sdk.call_tool("slow", {"seconds": 2}, progress=True, cancel=token)
    finally:
        canceller.join(30)
    last = redraws(settled(err))[-1]
    assert " 2/20 " in last or " 3/20 " in last, last  # the bar as it stood
    assert last.endswith(" (Cancelled)\n"), last


def test_an_error_answer_closes_the_bar(sdk: mcp_sync.Client, plain: None, monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    with pytest.raises(mcp_sync.MCPError) as caught:
        sdk.read_resource("test://no-such-thing", progress=True)
    assert redraws(settled(err))[-1] == f"read_resource test://no-such-thing ... ({type(caught.value).__name__})\n"


def test_an_update_racing_the_close_is_dropped() -> None:
    """Updates come on the dispatch thread, the close on the caller's: once close() returns,
    nothing more is written, however the two interleave."""
    for _ in range(20):
        err = Stream(tty=True)
        bar = _progress.PlainBar("race", err)
        bar.start()
        go = threading.Event()

        def hammer(bar: _progress.PlainBar = bar, go: threading.Event = go) -> None:
            go.set()
            for i in range(2000):
                bar(i, 2000, "m")

        updater = threading.Thread(target=hammer)
        updater.start()
        go.wait(5)
        bar.close()
        closed_at = err.writes
        updater.join(30)
        assert err.writes == closed_at and err.getvalue().endswith("\n")


# -- every method that takes progress= -------------------------------------------------------


def test_every_method_with_progress_takes_true() -> None:
    for cls in (mcp_sync.Client, mcp_sync.BoundClient):
        for name, method in inspect.getmembers(cls, inspect.isfunction):
            parameters = inspect.signature(method).parameters
            if not name.startswith("_") and "progress" in parameters:
                # keyword-only: the bar's wrapper finds it among the keywords
                assert parameters["progress"].kind is inspect.Parameter.KEYWORD_ONLY, name
                forwards = name == "run_tool_call"  # it calls call_tool, which draws the bar
                assert forwards or hasattr(method, "__wrapped__"), f"{cls.__name__}.{name} has no bar for True"


def test_listings_reads_and_prompts_show_a_bar_that_goes_when_no_progress_came(
        sdk: mcp_sync.Client, plain: None, monkeypatch: pytest.MonkeyPatch) -> None:
    err = stderr(monkeypatch, tty=True)
    assert "slow" in [tool.name for tool in sdk.list_tools(progress=True).items]
    walk = sdk.tools(progress=True)
    assert err.getvalue() == "\r\x1b[Klist_tools ...\r\x1b[K"  # a lazy walk: no bar until it is walked
    assert "count_up" in [tool.name for tool in walk]
    assert sdk.read_resource("test://static", progress=True).contents
    assert sdk.get_prompt("greet", {"name": "Ada"}, progress=True).messages
    # each drawn at once, and erased at the end: these servers send no progress for them
    assert err.getvalue() == "".join(f"\r\x1b[K{label} ...\r\x1b[K" for label in [
        "list_tools", "tools", "read_resource test://static", "get_prompt greet"])


def test_a_group_passes_true_to_its_member(monkeypatch: pytest.MonkeyPatch, plain: None) -> None:
    err = stderr(monkeypatch, tty=True)
    servers = {"sdk": {"command": PY, "args": [SDK_SERVER, "stdio"], "stderr": "log"}}
    with mcp_sync.ClientGroup(servers, timeout=30) as group:
        assert group.call_tool("slow", {"seconds": 0.4}, progress=True).text == "slept 0.4"
    assert redraws(err.getvalue())[-1] == "call_tool slow [####################] 4/4 100% step 4/4\n"


# -- tqdm's bar --------------------------------------------------------------------------------


def test_tqdm_bar_when_tqdm_is_installed(sdk: mcp_sync.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    tqdm = pytest.importorskip("tqdm")
    err = stderr(monkeypatch, tty=False)
    assert sdk.call_tool("slow", {"seconds": 0.5}, progress=True).text == "slept 0.5"
    assert sdk.call_tool("count_up", {"n": 3}, progress=True).text == "counted 3"
    text = err.getvalue()
    assert "call_tool slow: 100%" in text and "5/5" in text and "step 5/5" in text
    assert "call_tool count_up: 3" in text and "item 3" in text  # a counter: no total
    # tqdm's monitor thread is off: mcp_sync leaves no thread behind that close() cannot end
    assert not [t for t in threading.enumerate() if type(t).__name__ == "TMonitor"]
    assert tqdm.__name__ in sys.modules


def test_tqdm_bar_closed_on_cancel(sdk: mcp_sync.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tqdm")
    err = stderr(monkeypatch, tty=False)
    token = mcp_sync.CancellationToken()
    threading.Timer(0.35, token.cancel).start()
    with pytest.raises(mcp_sync.Cancelled):
        sdk.call_tool("slow", {"seconds": 2}, progress=True, cancel=token)
    text = settled(err)
    assert "(Cancelled)" in text.rsplit("\r", 1)[-1] and text.endswith("\n"), text


def test_tqdm_is_imported_only_for_a_bar() -> None:
    code = ("import sys, mcp_sync; c = mcp_sync.Client.stdio(sys.executable, [sys.argv[1], 'stdio'], timeout=30)\n"
            "c.call_tool('echo', {'text': 'x'}, progress=lambda *a: None); print('tqdm' in sys.modules)\n"
            "c.call_tool('echo', {'text': 'x'}, progress=True); print('tqdm' in sys.modules); c.close()")
    out = subprocess.run([PY, "-c", code, SDK_SERVER], capture_output=True, text=True, timeout=60,
                         env=cli_env()).stdout
    assert out.split() == ["False", "True"]


# -- the CLI -------------------------------------------------------------------------------------


def cli_on_a_terminal(tmp_path: Path, *args: str, tqdm: bool) -> tuple[int, str]:
    """``mcp-sync ARGS`` with stderr on a pseudo-terminal (stdout piped); what stderr showed.
    ``tqdm=False``: a tqdm that fails to import comes first on the path."""
    import fcntl  # POSIX only, as the next two
    import pty
    import termios

    env = cli_env()
    if not tqdm:
        (tmp_path / "tqdm").mkdir(exist_ok=True)
        (tmp_path / "tqdm" / "__init__.py").write_text("raise ImportError('not installed, for the test')\n")
        env["PYTHONPATH"] = f"{tmp_path}{os.pathsep}{env['PYTHONPATH']}"
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # a window 80 wide, as a shell's
    process = subprocess.Popen([PY, "-m", "mcp_sync", *args], stdout=subprocess.PIPE, stderr=child,
                               stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(child)
    seen = bytearray()
    try:
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # EIO: the CLI ended and closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        status = process.wait(30)
        assert process.stdout is not None
        out = process.stdout.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        os.close(main)
    shown = "".join(line for line in seen.decode("utf-8", "replace").splitlines(keepends=True)
                    if not line.startswith("[sdk_server]"))
    return status, out + "\0" + shown


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
@pytest.mark.parametrize("tqdm", [False, True], ids=["plain", "tqdm"])
def test_the_cli_shows_the_bar_on_a_terminal(tmp_path: Path, tqdm: bool) -> None:
    if tqdm:
        pytest.importorskip("tqdm")
    status, both = cli_on_a_terminal(tmp_path, "call", f"{PY} {SDK_SERVER} stdio", "slow", "seconds=0.5", tqdm=tqdm)
    out, shown = both.split("\0")
    assert (status, out) == (0, "slept 0.5\n"), shown
    if tqdm:
        assert "call_tool slow: 100%" in shown and "5/5" in shown and "step 5/5" in shown, shown
    else:
        assert "\r\x1b[Kcall_tool slow [####################] 5/5 100% step 5/5\r\n" in shown, shown


def test_the_cli_shows_no_bar_when_piped() -> None:
    result = subprocess.run([PY, "-m", "mcp_sync", "call", f"{PY} {SDK_SERVER} stdio", "slow", "seconds=0.4"],
                            capture_output=True, text=True, timeout=60, cwd=ROOT, env=cli_env())
    assert (result.returncode, result.stdout) == (0, "slept 0.4\n")
    assert "step" not in result.stderr and "call_tool" not in result.stderr and "\r" not in result.stderr

