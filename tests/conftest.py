"""Shared test fixtures: the real peers (the Python SDK server, server-everything)
and the project's fault server, started and stopped by the tests themselves."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
sys.path.insert(0, str(SERVERS))  # listening.py, beside the servers it starts
import listening  # noqa: E402

SDK_SERVER = str(SERVERS / "sdk_server.py")
FAULT_SERVER = str(SERVERS / "fault_server.py")
EVERYTHING_VERSION = "2026.8.31"
NPM_PREFIX = Path(os.environ.get("MCP_SYNC_NPM_PREFIX", ROOT / ".cache" / "npm"))
EVERYTHING_JS = NPM_PREFIX / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
PY = sys.executable

# A suite started in the background of a non-interactive shell (`cmd &` in a script) inherits
# SIGINT ignored, and so would every command line the tests start and then interrupt: a Python
# started with SIGINT ignored keeps ignoring it. Restore Python's own Ctrl-C handling here, so the
# children the tests start get the default disposition (handlers are reset on exec, ignores are not).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (the default, setup.cfg): two workers more than cores. Most tests wait on
    servers they started (subprocesses, sockets) rather than compute, so a core is rarely busy
    with one worker alone. Measured on two cores (#32, 2026-12-03): 3 workers 432 s, 4 workers
    344 s (the CPU busy 149% and 171% of one core)."""
    return (os.cpu_count() or 1) + 2


#: Tests that take tens of seconds each (``--durations`` of a parallel run, #32): they are sent to
#: the workers first, so that none of them starts last and keeps the run going alone at the end.
SLOW_FIRST = (
    "tests/test_conformance.py::test_conformance_scenarios",
    "tests/test_typed_api.py::test_user_script_passes_mypy_strict",
    "tests/test_worker_fleet.py::test_a_dask_cluster",
    "tests/test_llm_hardening.py::test_strict_arguments_match",
    "tests/test_doc_loops.py::",
    "tests/test_typed_loop.py::",
    "tests/test_schema_subset.py::test_quick_check_agrees_with_jsonschema",
    "tests/test_view_sessions_scale.py::",
    "tests/test_group_hardening.py::test_template_fits_agrees_with_rfc6570_level1",
    "tests/test_llm_schema_cleaning.py::test_a_null_is_dropped_only_where_the_schema_refuses_it",
    "tests/test_llm_formats.py::test_anthropic_loop_end_to_end",
    "tests/test_llm_formats.py::test_openai_loop_end_to_end",
    "tests/test_tracing_bounds.py::",
    "tests/test_port_races.py::",
    "tests/test_server_restart.py::",
    "tests/test_cancel_storm.py::",
    "tests/test_example_notebook.py::",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: one of the slowest tests (SLOW_FIRST); -m 'not slow' skips them")
    config.addinivalue_line("markers", "conformance: the official conformance suite's scenarios (Node, npm)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow tests first (a stable sort: the order within each part is kept, and every
    xdist worker computes the same order, as it must), marked ``slow``; the conformance
    scenarios marked ``conformance`` (``-m conformance`` runs only them)."""
    for item in items:
        if item.nodeid.startswith(SLOW_FIRST):
            item.add_marker(pytest.mark.slow)
        if item.nodeid.startswith("tests/test_conformance.py::"):
            item.add_marker(pytest.mark.conformance)
    items.sort(key=lambda item: not item.nodeid.startswith(SLOW_FIRST))


def fault_args(*extra: str) -> list[str]:
    return [FAULT_SERVER, *extra]


def _install_everything() -> Path:
    if EVERYTHING_JS.exists():
        return EVERYTHING_JS
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is needed for @modelcontextprotocol/server-everything; install Node.js and npm")
    NPM_PREFIX.mkdir(parents=True, exist_ok=True)
    # Test processes running side by side (pytest-xdist's workers, two runs) install one at a time:
    # npm writing one prefix twice at once can leave it broken. The lock ends with the process.
    with open(NPM_PREFIX / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _npm_install_everything(npm)


def _npm_install_everything(npm: str) -> Path:
    if EVERYTHING_JS.exists():  # another process installed it while this one waited for the lock
        return EVERYTHING_JS
    cmd = [npm, "install", "--prefix", str(NPM_PREFIX), "--no-audit", "--no-fund", "--loglevel=error",
           f"@modelcontextprotocol/server-everything@{EVERYTHING_VERSION}"]
    for attempt in (1, 2):  # retry once: the registry is sometimes slow to answer
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if result.returncode == 0 and EVERYTHING_JS.exists():
            return EVERYTHING_JS
        if attempt == 2:
            pytest.fail(f"npm install of server-everything failed (is the npm registry reachable?):\n{result.stderr}")
    return EVERYTHING_JS


def start_forkserver(name: str) -> subprocess.Popen[bytes]:
    """A fork server of the Python SDK server (tests/servers/forkserver.py) at the abstract socket
    ``name``: it listens once its imports are done, and ends with :func:`stop_forkserver`."""
    return subprocess.Popen([PY, SDK_SERVER, "--forkserver", name], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def stop_forkserver(proc: subprocess.Popen[bytes]) -> int:
    """End a fork server (it ends when its stdin does; killed after 10 s); its exit status."""
    assert proc.stdin is not None
    proc.stdin.close()
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait(10)


@pytest.fixture(scope="session", autouse=True)
def _sdk_forkserver() -> Iterator[None]:
    """One fork server of the Python SDK server per test process (tests/servers/forkserver.py):
    each ``sdk_server.py`` started below this process while it runs (by mcp_sync, the CLI, a
    worker pool) is forked from it instead of importing the SDK anew (1.5 s of CPU each time,
    some 180 times a run: #32). It is started in the background; a server started before it is
    ready starts the usual way. The servers are the same code."""
    from forkserver import name_for

    proc = start_forkserver(name_for(os.getpid()))
    try:
        yield
    finally:
        stop_forkserver(proc)


@pytest.fixture(scope="session")
def everything_js() -> Path:
    """Path of server-everything's dist/index.js (installed into .cache/npm on first use)."""
    return _install_everything()


@contextlib.contextmanager
def running_server(cmd: list[str], env: dict[str, str] | None = None, ready_timeout: float = 30.0
                   ) -> Iterator[listening.Started]:
    """Start an HTTP server told to bind port 0 (it says the port it got: tests/servers/listening.py),
    yield it (``.port``, ``.proc``), stop it and its session afterwards."""
    server = listening.start(cmd, env, ready_timeout)
    try:
        yield server
    finally:
        listening.stop(server.proc)


def everything_cmd(everything_js: Path, mode: str) -> list[str]:
    """server-everything in ``mode`` (streamableHttp, sse), saying its port (run it with PORT=0)."""
    return ["node", "--require", listening.REPORT_PORT_JS, str(everything_js), mode]


@contextlib.contextmanager
def refused_port(host: str = "127.0.0.1") -> Iterator[int]:
    """A port on ``host`` where connects are refused for as long as the block runs: a socket bound
    there and never listening holds it, so no other process can take it meanwhile."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as holder:
        holder.bind((host, 0))
        yield int(holder.getsockname()[1])


@pytest.fixture
def reserve_port() -> Iterator[Any]:
    """``reserve_port(host="127.0.0.1") -> int``: a port for code under test that binds it itself
    with SO_REUSEADDR (``browser_authorize`` listens on the port its redirect URI names, as
    ``http.server`` does), held until the test ends. On Linux a bound, never-listening socket with
    SO_REUSEADDR keeps every other process off the port (nobody else can bind it, and bind(0)
    never hands it out) while letting that code bind and listen there: no window for a stranger.
    Other systems' rules differ (BSD wants SO_REUSEPORT for that): the test is skipped there."""
    if not sys.platform.startswith("linux"):
        pytest.skip("holding a port for code that binds it itself relies on Linux's SO_REUSEADDR rules")
    holders: list[socket.socket] = []

    def reserve(host: str = "127.0.0.1") -> int:
        holder = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        holders.append(holder)
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        holder.bind((host.strip("[]"), 0))
        return int(holder.getsockname()[1])

    try:
        yield reserve
    finally:
        for holder in holders:
            holder.close()


@pytest.fixture(scope="module")
def sdk_http_url() -> Iterator[str]:
    """A Python SDK (mcp==2.3.0) server over Streamable HTTP, both eras, at this URL."""
    with running_server([PY, SDK_SERVER, "http"]) as server:
        yield f"http://127.0.0.1:{server.port}/mcp"


@pytest.fixture(scope="module")
def everything_http_url(everything_js: Path) -> Iterator[str]:
    """server-everything (2025-11-25) over Streamable HTTP."""
    with running_server(everything_cmd(everything_js, "streamableHttp"), env={"PORT": "0"}) as server:
        yield f"http://127.0.0.1:{server.port}/mcp"


@pytest.fixture(scope="module")
def everything_sse_url(everything_js: Path) -> Iterator[str]:
    """server-everything over the deprecated HTTP+SSE transport."""
    with running_server(everything_cmd(everything_js, "sse"), env={"PORT": "0"}) as server:
        yield f"http://127.0.0.1:{server.port}/sse"


@pytest.fixture
def no_leaks() -> Iterator[None]:
    """Fail the test if it leaves threads behind (every client must be closed)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5
    while True:
        extra = [t for t in threading.enumerate() if t not in before and t.name.startswith("mcp_sync")]
        if not extra or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not extra, f"threads left running: {[t.name for t in extra]}"


@pytest.fixture(autouse=True)
def _fresh_process_state(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test starts and ends with the process-wide state empty (#22.10): the per-origin
    era cache of the HTTP transport (mcp_sync.transports.http._ERA_CACHE), and OpenTelemetry's
    providers for every test but those that ask for them (the ``otel`` fixture of test_services
    sets them once per process: with them set, each request carries a new ``traceparent``, and a
    test comparing what two requests sent failed or passed by which tests ran before it; found
    running the test files in reverse order), and the clients the process owns until it exits
    (``mcp_sync.shared()``'s, and those an unpickled client or group uses) are closed after each
    test: left open, their threads were seen by a later test's "no mcp_sync thread is left" check
    (found running the test files in reverse order, #32)."""
    from mcp_sync.transports import http as http_module

    http_module._ERA_CACHE.clear()
    with contextlib.ExitStack() as stack:
        if "otel" not in request.fixturenames:
            stack.enter_context(_no_telemetry_providers())
        yield
    http_module._ERA_CACHE.clear()
    _close_process_clients()


def _close_process_clients() -> None:
    """Close and forget the clients this process keeps until it exits (cheap when there are none)."""
    from mcp_sync import _connect, _worker_clients

    with _worker_clients._lock:
        owned = list(_worker_clients._clients.values())
        _worker_clients._clients.clear()
    with _connect._shared_lock:
        owned += _connect._shared.values()
        _connect._shared.clear()
    for client in owned:
        client.close()


@contextlib.contextmanager
def _no_telemetry_providers() -> Iterator[None]:
    """OpenTelemetry as if no SDK were set up (its providers live in module variables), then back."""
    trace = sys.modules.get("opentelemetry.trace")
    internal = sys.modules.get("opentelemetry.metrics._internal")
    saved = (getattr(trace, "_TRACER_PROVIDER", None), getattr(internal, "_METER_PROVIDER", None))
    if saved == (None, None):
        yield
        return
    if trace is not None:
        trace._TRACER_PROVIDER = None  # type: ignore[attr-defined]
    if internal is not None:
        internal._METER_PROVIDER = None  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if trace is not None:
            trace._TRACER_PROVIDER = saved[0]  # type: ignore[attr-defined]
        if internal is not None:
            internal._METER_PROVIDER = saved[1]  # type: ignore[attr-defined]


@pytest.fixture
def world() -> Iterator[Any]:
    """The OAuth test world (tests/oauthkit.py): a resource server and an authorization server."""
    from oauthkit import World

    from httpkit import FakeServer

    with FakeServer("modern") as rs, FakeServer("modern") as auth:
        yield World(rs, auth)


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The user's browser for browser_authorize (oauthkit.Browser): webbrowser.open follows the
    URL on a thread; a display is set, so a browser may be opened."""
    import webbrowser

    from oauthkit import Browser

    fake = Browser()
    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(webbrowser, "open", lambda url, *a, **k: fake.open(url))
    yield fake
    fake.join()


@pytest.fixture
def authorization_server() -> Iterator[Any]:
    """An authorization server (a FakeServer) that approves at once (oauthkit.approve)."""
    from oauthkit import approve

    from httpkit import FakeServer

    with FakeServer("modern") as server:
        server.override = approve
        yield server


@pytest.fixture
def nothing_left() -> Iterator[None]:
    """Fail the test if it leaves an mcp_sync thread or a file descriptor behind (``no_leaks``
    checks threads only)."""
    threads_before = set(threading.enumerate())
    from helpers import open_fds

    fds_before = open_fds()
    yield
    deadline = time.monotonic() + 5
    while True:
        threads = [t.name for t in threading.enumerate() if t not in threads_before and t.name.startswith("mcp_sync")]
        fds = {fd: target for fd, target in open_fds().items() if fd not in fds_before}
        if (not threads and not fds) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not threads, f"threads left running: {threads}"
    assert not fds, f"file descriptors left open: {fds}"


@pytest.fixture
def blackhole() -> Iterator[str]:
    """A URL whose TCP connect never completes: a listening socket whose backlog is full."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=2)  # fills the backlog
    try:
        probe = socket.socket()
        probe.settimeout(0.3)
        with pytest.raises(OSError):  # the kernel drops further SYNs: connects hang
            probe.connect(("127.0.0.1", port))
        probe.close()
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        filler.close()
        server.close()
