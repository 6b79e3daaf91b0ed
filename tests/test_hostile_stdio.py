"""The stdio transport against a hostile server (tests/servers/hostile_stdio.py).

Each test names the issue point it covers (#8.x: nothing hangs, nothing leaks;
#9.x: nothing silent) and bounds its own time: a regression shows up as a
failed assertion, not as a hung suite.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from helpers import process_gone, wait_until
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync.transports._pipes import BLANK, make_nonblocking, parse_line, read_lines, top_level_id
from mcp_sync.transports.stdio import StdioTransport, default_environment

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

HOSTILE = str(SERVERS / "hostile_stdio.py")


def hostile(*extra: str, **options: Any) -> mcp_sync.Client:
    options.setdefault("mode", "legacy")
    return mcp_sync.Client.stdio(PY, [HOSTILE, *extra], **options)


def hostile_with(*extra: str, **transport_options: Any) -> mcp_sync.Client:
    """A client whose StdioTransport gets options Client.stdio does not pass through."""
    return mcp_sync.Client(lambda: StdioTransport(PY, [HOSTILE, *extra], **transport_options), mode="legacy")


def within(seconds: float, work: Callable[[], Any]) -> Any:
    """Run ``work`` on a daemon thread; fail (instead of hanging the suite) if it takes longer."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the test thread
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


class RecordingSink:
    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.closed_with: list[mcp_sync.ConnectionClosed] = []

    def message(self, message: Any) -> None:
        self.messages.append(message)

    def fail(self, request_id: Any, error: mcp_sync.MCPError) -> None:
        self.messages.append(("fail", request_id, error))

    def closed(self, error: mcp_sync.ConnectionClosed) -> None:
        self.closed_with.append(error)

    def session_renewed(self) -> None:
        pass


# -- #8.1: a server that stops reading its stdin --------------------------------------------


def test_a_cancellation_the_server_cannot_take_does_not_hold_the_caller(nothing_left: None) -> None:
    """#8.1: a request that was written but timed out is cancelled on the wire; when the server has
    stopped reading and its stdin pipe is full, that best-effort write gives up within a second
    instead of holding the caller for the transport's whole write timeout (30 s)."""
    import fcntl

    from mcp_sync._engine import Engine

    transport = StdioTransport(PY, ["-c", "import time; time.sleep(60)"], shutdown_timeout=0.5)
    engine = Engine(transport)
    engine.start()
    try:
        assert transport._process is not None and transport._process.stdin is not None
        capacity = fcntl.fcntl(transport._process.stdin.fileno(), 1032)  # F_GETPIPE_SZ
        # Fill the pipe so that the request (~120 bytes) still fits and the cancellation does not.
        filler = {"jsonrpc": "2.0", "method": "notifications/filler", "params": {"pad": ""}}
        filler["params"]["pad"] = "x" * (capacity - 150 - len(json.dumps(filler, separators=(",", ":"))))
        transport.send(filler, timeout=2)
        started = time.monotonic()
        with pytest.raises(mcp_sync.RequestTimeout) as info:
            within(40, lambda: engine.request("m" * 60, {}, timeout=0.5))
        assert "stdin" not in str(info.value)  # the request itself was written; its answer timed out
        assert time.monotonic() - started < 0.5 + MARGIN  # #17.9: was 0.5 + the 1 s cancel write
    finally:
        within(10, engine.close)


#: How late past its deadline a call may return: scheduling on a loaded two-core machine.
MARGIN = 0.4


def test_a_timed_out_call_returns_at_its_deadline_when_the_server_stopped_reading(nothing_left: None) -> None:
    """#17.9: call_tool(timeout=1) on a stdio server that stopped reading returned after 2 s (the
    report: timeout=2 took 3.0 s): the notifications/cancelled write waited on the caller's time.
    Bound: the deadline plus MARGIN; the notice goes out in the background (or is dropped)."""
    import fcntl

    client = hostile_with(shutdown_timeout=0.5)
    try:
        assert client.call_tool("stall_stdin").text == "stalling"
        transport = client.transport
        assert isinstance(transport, StdioTransport)
        assert transport._process is not None and transport._process.stdin is not None
        capacity = fcntl.fcntl(transport._process.stdin.fileno(), 1032)  # F_GETPIPE_SZ
        # Fill the pipe to 150 bytes short: the call (~120 bytes) still fits, its cancellation not.
        filler = {"jsonrpc": "2.0", "method": "notifications/filler", "params": {"pad": ""}}
        filler["params"]["pad"] = "x" * (capacity - 150 - len(json.dumps(filler, separators=(",", ":"))) - 1)
        transport.send(filler, timeout=2)
        for attempt in range(2):  # the second call's own write waits behind the first's notice
            started = time.monotonic()
            with pytest.raises(mcp_sync.RequestTimeout) as info:
                within(30, lambda: client.call_tool("echo", {"text": "z" * 40}, timeout=1))
            took = time.monotonic() - started
            assert took < 1.0 + MARGIN, (attempt, took, info.value)
    finally:
        within(10, client.close)


def test_write_to_a_server_that_never_reads_is_bounded(nothing_left: None) -> None:
    """#8.1 (T1, T5): a write that cannot finish in its time fails with RequestTimeout; a second
    writer is not stuck behind it for ever; close() does not wait for either."""
    transport = StdioTransport(PY, ["-c", "import time; time.sleep(60)"], shutdown_timeout=0.5)
    transport.start(RecordingSink())
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"text": "x" * (4 << 20)}}
    started = time.monotonic()
    with pytest.raises(mcp_sync.RequestTimeout, match="stdin") as info:
        within(5, lambda: transport.send(big, timeout=0.5))
    assert 0.4 < time.monotonic() - started < 2
    assert info.value.request_id == 1 and info.value.method == "tools/call"
    with pytest.raises(mcp_sync.RequestTimeout):  # the rest of the first message is still queued
        within(5, lambda: transport.send({"jsonrpc": "2.0", "method": "notifications/x"}, timeout=0.3))

    blocked: list[BaseException] = []

    def blocked_writer() -> None:
        try:
            transport.send(big, timeout=30)
        except mcp_sync.MCPError as exc:
            blocked.append(exc)

    writer = threading.Thread(target=blocked_writer)
    writer.start()
    time.sleep(0.3)
    started = time.monotonic()
    within(5, transport.close)
    writer.join(3)
    assert not writer.is_alive() and isinstance(blocked[0], mcp_sync.ConnectionClosed)
    assert time.monotonic() - started < 3


def test_calls_to_a_server_that_stopped_reading_end_and_close_returns(nothing_left: None) -> None:
    """#8.1 through the client: 8 threads writing to a full pipe each get an MCPError within
    their own timeout (the engine hands the request's deadline to the write; the transport's
    own write_timeout is 30 s)."""
    client = hostile_with(shutdown_timeout=0.5)
    assert client.call_tool("stall_stdin").text == "stalling"
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.call_tool("echo", {"text": "y" * 300_000}, timeout=2)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, daemon=True) for _ in range(8)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(8)
    assert not any(thread.is_alive() for thread in threads), "a call is stuck behind the blocked write"
    assert len(errors) == 8
    assert all(isinstance(e, (mcp_sync.RequestTimeout, mcp_sync.ConnectionClosed)) for e in errors), errors
    assert time.monotonic() - started < 8
    within(5, client.close)


# -- #8.2: a server that exits while a grandchild holds its stdout ---------------------------


def test_exit_with_a_grandchild_holding_stdout_restarts_and_closes(nothing_left: None) -> None:
    """#8.2 (T5, T6): the restart and close() do not hang; the grandchild is ended with the group."""
    client = hostile_with(shutdown_timeout=0.5)
    grandchild = int(client.call_tool("spawn_and_exit").text)
    assert not process_gone(grandchild)
    deadline = time.monotonic() + 5  # a call made before the exit is noticed fails, as it should
    while client._engine.alive and time.monotonic() < deadline:  # type: ignore[union-attr]
        time.sleep(0.02)
    assert within(10, lambda: client.call_tool("echo", {"text": "back"}).text) == "back"
    deadline = time.monotonic() + 5
    while not process_gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(grandchild), "the old server's grandchild outlived the restart"
    second = int(client.call_tool("spawn_and_exit").text)
    within(5, client.close)
    deadline = time.monotonic() + 3
    while not process_gone(second) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process_gone(second), "the grandchild outlived close()"


def test_close_ends_the_whole_process_group(nothing_left: None) -> None:
    """#8.2: close() of a live server also ends the processes it started (#22.3: a grandchild
    in the server's process group is started, and must be gone within 3 s of close)."""
    client = hostile_with(shutdown_timeout=0.5)
    client.call_tool("echo", {"text": "up"})
    transport = client._engine.transport  # type: ignore[union-attr]
    group = transport.pid
    grandchild = int(client.call_tool("spawn_child").text)
    try:
        assert os.getpgid(grandchild) == group  # the server leads its own group; the grandchild is in it
        within(8, client.close)
        assert transport.pid is None
        assert wait_until(lambda: process_gone(grandchild), 3), "the grandchild outlived close()"
        left = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()
        assert all(process_gone(int(pid)) for pid in left), left  # zombies awaiting init's reaping count as gone
    finally:
        if not process_gone(grandchild):
            os.kill(grandchild, signal.SIGKILL)


def test_close_returns_when_a_process_outside_the_group_holds_stdout(nothing_left: None) -> None:
    """#8.2: a grandchild in its own session keeps the pipes open; close() still returns in
    time and leaves no reader thread or descriptor (it cannot end what left the group)."""
    client = hostile_with(shutdown_timeout=0.3)
    escaped = int(client.call_tool("spawn_escaped").text)
    try:
        started = time.monotonic()
        within(5, client.close)
        assert time.monotonic() - started < 2
    finally:
        os.kill(escaped, signal.SIGKILL)


# -- #8.5: the reader survives any byte sequence ---------------------------------------------

NASTY_LINES = [
    b'{"jsonrpc":"2.0","id":[1],"result":{}}',
    b'{"jsonrpc":"2.0","id":{"a":1},"result":{}}',
    b'{"jsonrpc":"2.0","id":1e400,"result":{}}',
    b"[" * 200_000,
    b'{"a":' * 50_000,
    b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":[1],"progress":1}}',
    b'{"jsonrpc":"2.0","id":{},"method":"ping"}',
    b"\xff\xfe\x00garbage\x80",
    b'{"jsonrpc":"2.0","id":"\\ud800","result":{}}',
    b"[1, 2, {\"jsonrpc\": \"2.0\", \"id\": [], \"error\": 5}]",
]


def emit(client: mcp_sync.Client, data: bytes) -> str:
    return str(client.call_tool("emit", {"b64": base64.b64encode(data).decode()}, timeout=10).text)


def test_reader_survives_malformed_lines(nothing_left: None) -> None:
    """#8.5: ids that are lists or objects, numbers out of range, nesting past the recursion
    limit, invalid UTF-8: each line is skipped and the connection keeps serving."""
    with hostile() as client:
        pid = client._engine.transport.pid  # type: ignore[union-attr]
        for line in NASTY_LINES:
            assert emit(client, line) == "emitted", line[:40]
        assert client.call_tool("echo", {"text": "still here"}).text == "still here"
        assert client._engine.transport.pid == pid  # type: ignore[union-attr]  # never restarted


@pytest.fixture(scope="module")
def relay() -> Iterator[mcp_sync.Client]:
    client = hostile()
    client.connect()
    yield client
    client.close()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["id", "jsonrpc", "result",
                                                                                  "error", "method", "x"]),
                                                               inner, max_size=4),
    max_leaves=12,
)
ENVELOPES = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0", 2])},
    optional={"id": JSON_VALUES, "result": JSON_VALUES, "error": JSON_VALUES, "method": JSON_VALUES,
              "params": JSON_VALUES},
).map(lambda d: json.dumps(d).encode())
LINES = st.one_of(
    st.binary(max_size=200).map(lambda b: b.replace(b"\n", b" ")),
    ENVELOPES,
    st.integers(1, 5000).map(lambda depth: b"[" * depth * 10),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINES, min_size=1, max_size=5))
def test_reader_never_dies_property(relay: mcp_sync.Client, lines: list[bytes]) -> None:
    """#8.5 property: whatever lines come first, the answer after them is still delivered
    (or, if a line answered the very request, that request alone gets it) and the server
    process is never restarted because the reader died."""
    pid = relay._engine.transport.pid  # type: ignore[union-attr]
    try:
        emit(relay, b"\n".join(lines))
    except mcp_sync.MCPError:
        pass  # a line may have been a (bad) answer to this very request: only it fails
    assert relay.call_tool("echo", {"text": "next"}, timeout=10).text == "next"
    assert relay._engine.transport.pid == pid  # type: ignore[union-attr]


# -- #8.6: an oversized line is attributed only by its top-level id ----------------------------


def test_oversized_line_with_nested_id_fails_no_other_request(nothing_left: None) -> None:
    """#8.6: the nested "id" names the held request; it must not be failed. The oversized
    line's own id comes after the bulk, so nobody can be told: its caller times out."""
    with hostile(max_message_bytes=1 << 20) as client:
        held: list[Any] = []
        holder = threading.Thread(target=lambda: held.append(client.call_tool("hold", timeout=15).text))
        holder.start()
        assert wait_until(lambda: client.call_tool("held").text == "1", 10)  # the hold has arrived (#22.3)
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("big_nested", {"bytes": 2_000_000}, timeout=1.5)
        assert client.call_tool("release").text == "ok"
        holder.join(5)
        assert held == ["released"]


def test_oversized_line_with_top_level_id_first_fails_its_request_at_once() -> None:
    """#8.6: when the envelope's id comes first, that request fails quickly; the held one does not."""
    with hostile(max_message_bytes=1 << 20) as client:
        held: list[Any] = []
        holder = threading.Thread(target=lambda: held.append(client.call_tool("hold", timeout=15).text))
        holder.start()
        assert wait_until(lambda: client.call_tool("held").text == "1", 10)  # the hold has arrived (#22.3)
        started = time.monotonic()
        with pytest.raises(mcp_sync.ProtocolError, match="max_message_bytes"):
            client.call_tool("big_nested", {"bytes": 2_000_000, "id_first": True}, timeout=10)
        assert time.monotonic() - started < 3
        assert client.call_tool("release").text == "ok"
        holder.join(5)
        assert held == ["released"]


@settings(max_examples=150, deadline=None)
@given(message=st.dictionaries(st.sampled_from(["id", "jsonrpc", "result", "a", "i\\d", "ID"]), JSON_VALUES,
                               max_size=5),
       cut=st.integers(0, 400), spaced=st.booleans())
def test_top_level_id_is_never_wrong(message: dict, cut: int, spaced: bool) -> None:
    """#8.6 property: from any head of a JSON object, the scanner finds its top-level "id" or
    says it cannot tell (None), never an id from inside a value."""
    text = json.dumps(message, indent=1 if spaced else None).encode()
    found = top_level_id(text[:cut])
    has_id = isinstance(message.get("id"), (int, str)) and not isinstance(message.get("id"), bool)
    if found is not None:
        assert has_id and found == message["id"] and type(found) is type(message["id"])
    elif cut >= len(text):
        assert not has_id, "the whole object was given and its id was not found"


# -- #8.9: stderr is read in bounded pieces ----------------------------------------------------


def test_stderr_without_newlines_is_bounded(nothing_left: None) -> None:
    """#8.9: 32 MiB of stderr without a newline: memory stays bounded, the line is cut, the
    lines after it still arrive."""
    lines: list[str] = []
    with hostile(stderr=lines.append) as client:
        tracemalloc.start()
        try:
            assert client.call_tool("stderr_blob", {"mb": 32}, timeout=30).text == "blob"
            deadline = time.monotonic() + 5
            while "end of blob" not in lines and time.monotonic() < deadline:
                time.sleep(0.05)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert "end of blob" in lines
    assert max(len(line) for line in lines) < 10_000
    assert peak < 8 << 20, f"{peak} bytes held while reading stderr"


# -- #9.12, #9.13, #9.15, #9.16, #9.17: nothing silent -----------------------------------------


def test_banner_and_stderr_are_named_in_the_timeout(nothing_left: None) -> None:
    """#9.12: a server that prints a banner and never answers: the error says what it printed."""
    client = hostile("--banner", "--silent", "--stderr", "listening on 3000", timeout=1, stderr=lambda line: None)
    started = time.monotonic()
    with pytest.raises(mcp_sync.RequestTimeout) as info:
        client.connect()
    assert time.monotonic() - started < 5
    assert "Server starting on port 3000" in str(info.value)
    assert "listening on 3000" in str(info.value)
    client.close()


def test_diagnostics_of_the_transport(nothing_left: None) -> None:
    """#9.12: diagnostics() is empty for a well-behaved server and names what was skipped."""
    transport = StdioTransport(PY, [HOSTILE, "--banner", "--silent"], stderr=lambda line: None)
    assert transport.diagnostics() == ""
    transport.start(RecordingSink())
    deadline = time.monotonic() + 5
    while not transport.diagnostics() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert transport.diagnostics() == "stdout lines that were not JSON-RPC: 'Server starting on port 3000'"
    transport.close()


def test_stderr_is_shown_by_default_with_the_server_name(capsys: pytest.CaptureFixture[str],
                                                         nothing_left: None) -> None:
    """#9.13: by default the server's stderr reaches the parent's stderr, prefixed with its name."""
    with hostile("--stderr", "hello from the server") as client:
        client.call_tool("echo", {"text": "x"})
    assert "[hostile_stdio] hello from the server" in capsys.readouterr().err


def test_stderr_to_the_logger_on_request(caplog: pytest.LogCaptureFixture, nothing_left: None) -> None:
    """#9.13: stderr="log" keeps the logger option."""
    with caplog.at_level("INFO", logger="mcp_sync.stderr"), hostile("--stderr", "to the log", stderr="log") as client:
        client.call_tool("echo", {"text": "x"})
    assert any(r.name == "mcp_sync.stderr.hostile_stdio" and r.getMessage() == "to the log" for r in caplog.records)


def test_pid_is_none_when_not_running(nothing_left: None) -> None:
    """#9.15: transport.pid is the running server's pid, None before start and after close."""
    transport = StdioTransport(PY, [HOSTILE])
    assert transport.pid is None
    transport.start(RecordingSink())
    pid = transport.pid
    assert isinstance(pid, int) and not process_gone(pid)
    transport.close()
    assert transport.pid is None and process_gone(pid)


@pytest.mark.parametrize("name", ["HTTPS_PROXY", "no_proxy", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE",
                                  "NODE_EXTRA_CA_CERTS"])
def test_proxy_and_ca_variables_are_passed_by_default(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """#9.16: a child behind a proxy or a TLS-inspecting CA gets what it needs; secrets do not."""
    monkeypatch.setenv(name, "value")
    monkeypatch.setenv("SOME_API_TOKEN", "secret")
    env = default_environment()
    assert env[name] == "value"
    assert "SOME_API_TOKEN" not in env


def test_exit_before_answering_names_inherit_env(nothing_left: None) -> None:
    """#9.16: a server that exits before answering anything hints at the environment."""
    client = mcp_sync.Client.stdio(PY, ["-c", "import sys; sys.exit(2)"], stderr=lambda line: None, mode="legacy")
    with pytest.raises(mcp_sync.ConnectionClosed, match="inherit_env=True") as info:
        within(15, client.connect)
    assert info.value.exit_code == 2
    client.close()
    # #18.10: a command that does not exist is not an environment problem: no hint, but PATH
    with pytest.raises(mcp_sync.ConnectionClosed, match="installed, and on PATH") as missing:
        mcp_sync.connect([str(Path(HOSTILE).with_name("no-such-server"))])
    assert "inherit_env" not in str(missing.value)


def test_a_killed_server_says_which_signal(nothing_left: None) -> None:
    """#9.17: a server killed by a signal is reported by the signal's name."""
    with hostile(restart=False) as client:
        with pytest.raises(mcp_sync.ConnectionClosed, match="killed by SIGKILL") as info:
            client.call_tool("die_by_signal", timeout=10)
        assert info.value.exit_code == -signal.SIGKILL


def test_default_name_is_the_script_or_package() -> None:
    """#9.15: the name in thread names, logger and stderr prefix is the script or package, not
    the interpreter or launcher."""
    assert StdioTransport(sys.executable, [HOSTILE]).name == "hostile_stdio"
    assert StdioTransport("npx", ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]).name == (
        "server-everything")
    assert StdioTransport("uvx", ["mcp-server-time"]).name == "mcp-server-time"
    assert StdioTransport("python", ["-m", "my_server.main"]).name == "my_server.main"
    assert StdioTransport("/usr/local/bin/my-server", []).name == "my-server"
    assert StdioTransport("node", ["/srv/x/dist/index.js"], name="x").name == "x"


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.binary(max_size=300).map(lambda b: b.replace(b"\n", b"")), max_size=20),
       cuts=st.lists(st.integers(1, 400), min_size=1, max_size=20), final_newline=st.booleans())
def test_line_splitting_property(lines: list[bytes], cuts: list[int], final_newline: bool) -> None:
    """#8.9 property: however the pipe chunks the stream, read_lines gives back exactly the
    lines written, each line over the bound once as its cut head, and nothing else."""
    limit = 100
    stream = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    expected = [(line[:limit], len(line) > limit) for line in lines]
    if lines and not final_newline and lines[-1] == b"":
        expected.pop()  # an empty unterminated last line is no line at all
    read_fd, write_fd = os.pipe()
    wake_read, wake_write = os.pipe()

    def write() -> None:
        position, index = 0, 0
        while position < len(stream):
            size = cuts[index % len(cuts)]
            os.write(write_fd, stream[position:position + size])
            position, index = position + size, index + 1
        os.close(write_fd)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        make_nonblocking(read_fd)
        assert list(read_lines(read_fd, wake_read, limit)) == expected
    finally:
        writer.join(5)
        for fd in (read_fd, wake_read, wake_write):
            os.close(fd)


def _reference(line: bytes) -> Any:
    """What the stdio reader took a line to be before parse_line: json.loads, blank lines skipped."""
    if not line.strip():
        return BLANK
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


@settings(max_examples=400, deadline=None)
@given(value=JSON_VALUES, before=st.sampled_from([b"", b" ", b"\t", b"\xef\xbb\xbf", b"\r", b"x"]),
       after=st.sampled_from([b"", b" ", b"\r", b"\t\r", b"}", b"1", b"\xff", b" x"]),
       ensure_ascii=st.booleans())
def test_parse_line_accepts_exactly_what_json_loads_accepts(
    value: Any, before: bytes, after: bytes, ensure_ascii: bool
) -> None:
    """#16: the reader's quick parse (one UTF-8 decode, json's C scanner) gives the same value as
    json.loads for any JSON text with any surroundings (whitespace, CR, a byte-order mark,
    trailing garbage, bad UTF-8), and None exactly where json.loads refuses."""
    line = before + json.dumps(value, ensure_ascii=ensure_ascii).encode("utf-8") + after
    assert parse_line(line) == _reference(line)


@settings(max_examples=300, deadline=None)
@given(line=LINES)
def test_parse_line_agrees_with_json_loads_on_hostile_lines(line: bytes) -> None:
    """#16: on random bytes, envelopes and deep nesting, parse_line and json.loads agree."""
    assert parse_line(line) == _reference(line)
