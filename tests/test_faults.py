"""What real servers won't do on demand, from the project's fault server.

Each test names the checklist items it covers.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest
from helpers import process_exists, run_workers

import mcp_sync

from conftest import PY, fault_args

pytestmark = pytest.mark.timeout(60)


def fault(*extra: str, **options: object) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, fault_args(*extra), **options)  # type: ignore[arg-type]


def cancelled_ids(client: mcp_sync.Client) -> list:
    return json.loads(client.call_tool("cancelled_log").text)


# -- era detection (D1, V1, LG1, section 4) --------------------------------------------


@pytest.mark.parametrize(
    ("args", "options", "era"),
    [
        (("--era", "modern"), {}, "modern"),
        (("--era", "legacy"), {}, "legacy"),  # -32601 to the probe
        (("--behaviour", "slow-discover"), {"probe_timeout": 0.5}, "legacy"),  # silence
        (("--behaviour", "unsupported-version", "--supported", "2025-11-25,2025-06-18"), {}, "legacy"),
        (("--behaviour", "die-on-discover"), {}, "legacy"),  # restart, then initialize directly
        (("--behaviour", "lock-era", "--era", "legacy"), {}, "legacy"),  # probe poisons handshake: restart
    ],
)
def test_era_detection(args: tuple, options: dict, era: str, no_leaks: None) -> None:
    with fault(*args, **options) as client:
        assert client.era == era
        assert client.call_tool("echo", {"text": "x"}).text == "x"


def test_unsupported_version_with_no_known_revision_raises(no_leaks: None) -> None:
    """-32022 listing neither a modern nor a legacy revision we speak: no fallback."""
    client = fault("--behaviour", "unsupported-version", "--supported", "1999-01-01")
    with pytest.raises(mcp_sync.UnsupportedProtocolVersionError) as info:
        client.connect()
    assert info.value.supported == ["1999-01-01"]
    client.close()


def test_handshake_with_unknown_revision_disconnects(no_leaks: None) -> None:
    """LG1: an initialize answered with an unknown revision raises and disconnects."""
    client = fault("--behaviour", "bad-handshake-version", mode="legacy")
    with pytest.raises(mcp_sync.UnsupportedProtocolVersionError, match="1999-01-01"):
        client.connect()
    client.close()


def test_modern_mode_fails_clearly_on_legacy_server() -> None:
    with pytest.raises(mcp_sync.ProtocolError, match="mode='modern'"), fault("--era", "legacy", mode="modern"):
        pass


def test_modern_requests_carry_the_envelope() -> None:
    """E1/E2: every modern request has protocolVersion, clientInfo, clientCapabilities."""
    with fault("--era", "modern", client_info={"name": "t", "version": "9"}) as client:
        meta = client.meta()
        assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
        assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "t", "version": "9"}
        assert meta["io.modelcontextprotocol/clientCapabilities"] == {}
        # the modern-only fault server refuses requests without the envelope (-32602)
        trace = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"  # W3C form: E7 refuses others
        assert client.call_tool("echo", {"text": "ok"}, meta={"traceparent": trace}).text == "ok"


def test_server_ping_is_answered() -> None:
    """LG7: the client answers the server's ping."""
    lines: list[str] = []
    with fault("--behaviour", "ping-client", mode="legacy", stderr=lines.append) as client:
        client.call_tool("echo", {"text": "x"})
        deadline = time.monotonic() + 5
        while not any("got ping answer" in line for line in lines) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert any("got ping answer" in line for line in lines)


# -- bad input is skipped, never fatal --------------------------------------------------


def test_garbage_lines_are_skipped(no_leaks: None) -> None:
    with fault("--behaviour", "garbage") as client:
        for i in range(5):
            assert client.call_tool("echo", {"text": str(i)}).text == str(i)


def test_oversized_line_fails_only_its_request() -> None:
    with fault("--behaviour", "huge-line", max_message_bytes=1024 * 1024) as client:
        with pytest.raises(mcp_sync.ProtocolError, match="max_message_bytes"):
            client.call_tool("echo", {"text": "x"}, timeout=10)
        assert client.call_tool("counter").text  # the connection still serves


def test_chatty_stderr_never_blocks() -> None:
    """T2: stderr is drained continuously."""
    lines: list[str] = []
    with fault(stderr=lines.append) as client:
        assert client.call_tool("stderr_flood", {"lines": 20000}, timeout=20).text == "wrote 20000 lines"
    assert len(lines) >= 20000


# -- server death -----------------------------------------------------------------------


def test_death_fails_pending_requests_quickly(no_leaks: None) -> None:
    """Every pending request raises ConnectionClosed within a second, with exit code and stderr."""
    with fault(restart=False) as client:
        errors: list[BaseException] = []

        def wait_slow() -> None:
            try:
                client.call_tool("slow", {"seconds": 30})
            except mcp_sync.MCPError as exc:
                errors.append(exc)

        waiters = [threading.Thread(target=wait_slow) for _ in range(3)]
        for t in waiters:
            t.start()
        time.sleep(0.3)
        started = time.monotonic()
        with pytest.raises(mcp_sync.ConnectionClosed) as info:
            client.call_tool("die")
        for t in waiters:
            t.join(5)
        assert time.monotonic() - started < 1.5
        assert len(errors) == 3 and all(isinstance(e, mcp_sync.ConnectionClosed) for e in errors)
        assert info.value.exit_code == 3
        assert "dying now" in str(info.value)
        with pytest.raises(mcp_sync.ConnectionClosed):
            client.call_tool("echo", {"text": "x"})


def test_dead_server_is_restarted_on_next_request(no_leaks: None) -> None:
    """T6: the next request starts the server again."""
    with fault() as client:
        with pytest.raises(mcp_sync.ConnectionClosed):
            client.call_tool("die")
        assert client.call_tool("echo", {"text": "back"}).text == "back"


def test_exit_after_n_requests() -> None:
    with fault("--exit-after", "2", "--era", "legacy", mode="legacy", restart=False) as client:
        assert client.call_tool("echo", {"text": "1"}).text == "1"  # initialize was answer 1
        with pytest.raises(mcp_sync.ConnectionClosed, match="code 7"):
            client.call_tool("echo", {"text": "2"})


# -- pagination (G1) --------------------------------------------------------------------


def test_pagination_is_lazy_and_complete() -> None:
    with fault("--behaviour", "paged") as client:
        assert [t.name for t in client.tools()] == ["echo", "slow", "die", "counter", "cancelled_log", "stderr_flood"]
        page = client.list_tools()
        assert len(page.items) == 2 and page.next_cursor == "p2"
        assert client.list_tools(cursor="p3").next_cursor is None
        before = int(client.call_tool("counter").text)
        iterator = client.tools()
        next(iterator)  # only the first page is fetched
        assert int(client.call_tool("counter").text) == before + 2


def test_endless_cursor_hits_max_pages() -> None:
    with fault("--behaviour", "endless-cursor", max_pages=5) as client, pytest.raises(
        mcp_sync.PaginationLimitError, match="max_pages=5"
    ):
        list(client.tools())


def test_repeated_cursor_is_refused() -> None:
    with fault("--behaviour", "repeat-cursor") as client, pytest.raises(
        mcp_sync.PaginationLimitError, match="repeated"
    ):
        list(client.tools())


# -- cancellation races (K1-K3, T4) ------------------------------------------------------


def test_cancel_sends_one_notification(no_leaks: None) -> None:
    with fault() as client:
        token = mcp_sync.CancellationToken()
        threading.Timer(0.3, token.cancel, kwargs={"reason": "stop"}).start()
        started = time.monotonic()
        with pytest.raises(mcp_sync.Cancelled):
            client.call_tool("slow", {"seconds": 20}, cancel=token)
        assert time.monotonic() - started < 2
        time.sleep(0.2)
        assert len(cancelled_ids(client)) == 1


def test_cancel_before_send_sends_nothing() -> None:
    with fault() as client:
        token = mcp_sync.CancellationToken()
        token.cancel("early")
        with pytest.raises(mcp_sync.Cancelled):
            client.call_tool("slow", {"seconds": 5}, cancel=token)
        assert cancelled_ids(client) == []


def test_cancel_after_answer_sends_nothing() -> None:
    with fault() as client:
        token = mcp_sync.CancellationToken()
        assert client.call_tool("echo", {"text": "x"}, cancel=token).text == "x"
        token.cancel("late")
        time.sleep(0.1)
        assert cancelled_ids(client) == []


def test_timeout_cancels_on_the_wire() -> None:
    """K4: a timed-out request is cancelled with a notification."""
    with fault() as client:
        with pytest.raises(mcp_sync.RequestTimeout):
            client.call_tool("slow", {"seconds": 20}, timeout=0.2)
        time.sleep(0.1)
        log = cancelled_ids(client)
        assert len(log) == 1


def test_cancel_races_answer_many_times() -> None:
    """Whichever wins, the call either returns the answer or raises Cancelled, and a
    notification is sent only for requests that were really cancelled."""
    with fault() as client:
        outcomes = {"answered": 0, "cancelled": 0}
        for i in range(60):
            token = mcp_sync.CancellationToken()
            timer = threading.Timer(0.001 * (i % 6), token.cancel)
            timer.start()
            try:
                assert client.call_tool("echo", {"text": str(i)}, cancel=token).text == str(i)
                outcomes["answered"] += 1
            except mcp_sync.Cancelled:
                outcomes["cancelled"] += 1
            timer.join()
        time.sleep(0.2)
        assert sum(outcomes.values()) == 60
        assert len(cancelled_ids(client)) <= outcomes["cancelled"]


def test_progress_all_delivered_before_return() -> None:
    with fault() as client:
        ticks: list[float] = []
        result = client.call_tool("slow", {"seconds": 0.2}, progress=lambda p, t, m: ticks.append(p))
        assert result.text.startswith("slept")
        assert ticks == [1, 2, 3, 4, 5]


def test_callback_may_call_the_client() -> None:
    """Callbacks run on the dispatch thread, so they can make requests (no deadlock)."""
    with fault() as client:
        inner: list[str] = []

        def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if progress == 1:
                inner.append(client.call_tool("echo", {"text": "inner"}, progress=lambda *a: None).text)

        client.call_tool("slow", {"seconds": 0.2}, progress=on_progress, timeout=10)
        assert inner == ["inner"]


# -- concurrency and leaks ---------------------------------------------------------------


def test_sixteen_threads_share_one_client(no_leaks: None) -> None:
    with fault() as client:
        failures: list[str] = []

        def worker(n: int) -> None:
            for i in range(200):
                text = f"{n}-{i}"
                got = client.call_tool("echo", {"text": text}).text
                if got != text:
                    failures.append(f"{text} != {got}")

        run_workers(worker, [(n,) for n in range(16)], timeout=60)  # a worker that raises fails the test
        assert not failures
        assert int(client.call_tool("counter").text) >= 16 * 200


def test_close_leaves_no_thread_or_process() -> None:
    before = set(threading.enumerate())
    client = fault()
    client.connect()
    pid = client._engine.transport.pid  # type: ignore[union-attr]
    assert any(t.name.startswith("mcp_sync-reader") for t in threading.enumerate())
    client.close()
    client.close()  # idempotent
    assert set(threading.enumerate()) <= before
    assert isinstance(pid, int)
    assert not process_exists(pid)
    with pytest.raises(mcp_sync.ClientStateError):
        client.call_tool("echo", {"text": "x"})


def test_failed_connect_leaves_nothing(no_leaks: None) -> None:
    with pytest.raises(mcp_sync.ConnectionClosed, match="could not start"):
        mcp_sync.connect(["/nonexistent/server-binary"])


def test_stuck_server_is_killed_on_close() -> None:
    """T5: a server that ignores stdin EOF is terminated (SIGTERM, then SIGKILL)."""
    script = "import signal,sys,time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nsys.stdin.read()\ntime.sleep(60)\n"
    from mcp_sync.transports.stdio import StdioTransport

    transport = StdioTransport(sys.executable, ["-c", script], shutdown_timeout=0.3)

    class Sink:
        def message(self, m: object) -> None: ...
        def fail(self, i: object, e: object) -> None: ...
        def closed(self, e: object) -> None: ...

    transport.start(Sink())
    pid = transport.pid  # read while running: after close the transport forgets it (#22.2)
    assert isinstance(pid, int) and process_exists(pid)
    started = time.monotonic()
    transport.close()
    assert transport._process is not None and transport._process.poll() is not None
    assert time.monotonic() - started < 3
    assert not process_exists(pid)  # killed and reaped


def test_unsupported_version_listing_ours_is_retried_once(no_leaks: None) -> None:
    """V1: -32022 listing the very modern version sent: one retry, then the error (no loop)."""
    client = fault("--behaviour", "unsupported-version", "--supported", "2026-07-28", "--era", "modern")
    with pytest.raises(mcp_sync.UnsupportedProtocolVersionError):
        client.connect()
    client.close()
