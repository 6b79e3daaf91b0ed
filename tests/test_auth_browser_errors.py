"""browser_authorize when things go wrong around it: a redirect_uri whose port is no port, an
authorization URL without state, a port already taken, no file descriptor left (for the
listener, then for accepting), a broken browser setup, the platforms where a browser can always
be started, and local programs that hang up, reset, or vanish before their answer, or are pushed
out by a flood of connections. The redirect still lands whenever it can; otherwise the error
says why. No real browser is started."""

from __future__ import annotations

import io
import json
import socket
import struct
import subprocess
import sys
import threading
import time
import types
import webbrowser
from typing import Any, Iterator

import pytest
from oauthkit import Browser, authorization_url

import mcp_sync
from mcp_sync import _browser_auth
from mcp_sync.auth import browser_authorize

from httpkit import FakeServer

pytestmark = pytest.mark.timeout(30)

REDIRECT = b"GET /cb?code=c&state=st4te HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
OTHER = b"GET /favicon.ico HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


@pytest.mark.parametrize("port", ["99999", "http"])
def test_a_redirect_uri_whose_port_is_no_port_is_refused(authorization_server: FakeServer, port: str) -> None:
    redirect_uri = f"http://127.0.0.1:{port}/callback"
    with pytest.raises(mcp_sync.AuthorizationError, match="loopback http redirect_uri with a port") as caught:
        browser_authorize(authorization_url(authorization_server, redirect_uri), timeout=1)
    assert caught.value.step == "authorization" and redirect_uri in str(caught.value)


def test_an_authorization_url_without_state_is_refused(reserve_port: Any, authorization_server: FakeServer) -> None:
    url = authorization_url(authorization_server, f"http://127.0.0.1:{reserve_port()}/cb", state="")
    with pytest.raises(mcp_sync.AuthorizationError, match="the authorization URL has no state parameter") as caught:
        browser_authorize(url, timeout=1, open_browser=False)
    assert caught.value.url == f"http://127.0.0.1:{authorization_server.port}/authorize"


def test_a_port_already_taken_is_refused_without_opening_a_browser(
    authorization_server: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: pytest.fail("no browser for a flow that cannot finish"))
    monkeypatch.setenv("DISPLAY", ":0")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        redirect_uri = f"http://127.0.0.1:{taken.getsockname()[1]}/cb"
        with pytest.raises(mcp_sync.AuthorizationError, match="Address already in use") as caught:
            browser_authorize(authorization_url(authorization_server, redirect_uri), timeout=1)
    assert f"cannot listen on {redirect_uri}" in str(caught.value)


# Run in a child process: it uses up its file descriptors (and gives them back before it exits).
OUT_OF_DESCRIPTORS = r"""
import io, json, os, resource, socket, sys, time
import mcp_sync
from mcp_sync import _browser_auth
from mcp_sync.auth import browser_authorize

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), hard))
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(4)
listener.setblocking(False)
browser = socket.create_connection(listener.getsockname())  # waits in the backlog, not yet accepted
browser.sendall(sys.argv[1].encode("latin-1"))
fillers = []
try:
    while True:
        fillers.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
outcome = {}
try:
    url = "http://127.0.0.1:9/authorize?redirect_uri=http%3A%2F%2F127.0.0.1%3A8765%2Fcb&state=st4te"
    browser_authorize(url, timeout=5, open_browser=False, out=io.StringIO())
except mcp_sync.AuthorizationError as exc:
    outcome["listen"] = str(exc)
os.close(fillers.pop())  # one for the selector, none to accept with
redirect = _browser_auth._Redirect("/cb", "st4te")
outcome["starved"] = _browser_auth._serve(listener, redirect, time.monotonic() + 0.3)
for fd in fillers:
    os.close(fd)
resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
outcome["served"] = _browser_auth._serve(listener, redirect, time.monotonic() + 5)
outcome["answer"] = browser.recv(100).split(b"\r\n")[0].decode()
print(json.dumps(outcome))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_no_file_descriptor_left_is_an_error_then_a_wait() -> None:
    """Out of descriptors: no listener is an AuthorizationError naming the cause; a listener that
    cannot accept waits until its deadline instead of failing, and serves the waiting redirect
    once descriptors are free again."""
    child = subprocess.run(
        [sys.executable, "-c", OUT_OF_DESCRIPTORS, REDIRECT.decode("latin-1")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert child.returncode == 0, child.stderr
    outcome = json.loads(child.stdout)
    assert outcome["listen"].startswith("OAuth authorization failed at http://127.0.0.1:9/authorize: cannot listen")
    assert outcome["listen"].endswith("Too many open files")
    assert outcome["starved"] is None
    assert outcome["served"] == "/cb?code=c&state=st4te" and outcome["answer"] == "HTTP/1.1 200 OK"


def test_a_broken_browser_setup_falls_back_to_printing_the_url(
    authorization_server: FakeServer, monkeypatch: pytest.MonkeyPatch, reserve_port: Any
) -> None:
    def broken(url: str, *args: object, **kwargs: object) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setenv("DISPLAY", ":0")
    monkeypatch.setattr(webbrowser, "open", broken)
    user, out = Browser(), io.StringIO()
    url = authorization_url(authorization_server, f"http://127.0.0.1:{reserve_port()}/cb")

    def paste() -> None:  # the user reads the printed URL and opens it elsewhere
        deadline = time.monotonic() + 5
        while url not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.02)
        user.open(url)

    pasting = threading.Thread(target=paste)
    pasting.start()
    try:
        assert "code=the-code" in browser_authorize(url, timeout=5, out=out)
    finally:
        pasting.join(10)
        user.join()
    assert f"Open this URL in a browser to authorize:\n\n    {url}\n" in out.getvalue()
    assert user.visits[0].status_code == 200


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_on_macos_and_windows_a_browser_is_opened_without_a_display(
    browser: Browser, authorization_server: FakeServer, monkeypatch: pytest.MonkeyPatch, platform: str,
    reserve_port: Any,
) -> None:
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(_browser_auth, "sys", types.SimpleNamespace(platform=platform, stderr=sys.stderr))
    out = io.StringIO()
    landed = browser_authorize(authorization_url(authorization_server, f"http://127.0.0.1:{reserve_port()}/cb"),
                               timeout=5, out=out)  # fmt: skip
    assert "code=the-code" in landed and out.getvalue() == ""  # opened, not printed
    browser.join()
    assert len(browser.visits) == 1


# -- the listener's own loop, on a listener the test made (clients queue up before it serves) -----


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    sock.setblocking(False)
    yield sock
    sock.close()


def client(listener: socket.socket, data: bytes = b"", reset: bool = False) -> socket.socket:
    sock = socket.create_connection(listener.getsockname(), timeout=5)
    if data:
        sock.sendall(data)
    if reset:  # close with an RST, as a killed program's connection ends
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """The status line the listener sent ``sock``, or b"" when it hung up without answering."""
    try:
        return sock.recv(4096).split(b"\r\n")[0]
    except ConnectionResetError:
        return b""
    finally:
        sock.close()


def serve(listener: socket.socket) -> str | None:
    return _browser_auth._serve(listener, _browser_auth._Redirect("/cb", "st4te"), time.monotonic() + 5)


def test_programs_that_hang_up_reset_or_vanish_before_their_answer_are_dropped(listener: socket.socket) -> None:
    hung_up = client(listener)
    hung_up.shutdown(socket.SHUT_WR)  # connects and closes without a word (a port scanner)
    client(listener, reset=True)  # connects and resets
    client(listener, OTHER, reset=True)  # asks, then is gone before the answer can be sent
    browser = client(listener, REDIRECT)
    assert serve(listener) == "/cb?code=c&state=st4te"
    assert answer_of(browser) == b"HTTP/1.1 200 OK" and answer_of(hung_up) == b""


def test_a_connection_pushed_out_is_not_read_in_the_same_round(listener: socket.socket) -> None:
    """MAX_CONNECTIONS are open with a request each when one more arrives: the oldest makes room
    and is closed unanswered, even though its request was ready in the same round."""
    count = _browser_auth.MAX_CONNECTIONS
    waiting = [client(listener, OTHER) for _ in range(count)]
    browser = client(listener, REDIRECT)
    assert serve(listener) == "/cb?code=c&state=st4te"
    answers = [answer_of(sock) for sock in waiting]
    assert answers == [b""] + [b"HTTP/1.1 404 Not Found"] * (count - 1)
    assert answer_of(browser) == b"HTTP/1.1 200 OK"


def test_a_wakeup_without_data_keeps_the_connection() -> None:
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.setblocking(False)
        connection = _browser_auth._Connection(ours, time.monotonic() + 5)
        redirect = _browser_auth._Redirect("/cb", "st4te")
        assert _browser_auth._read(connection, redirect) == (False, None)  # nothing yet: keep waiting
        theirs.sendall(REDIRECT)
        assert _browser_auth._read(connection, redirect) == (True, "/cb?code=c&state=st4te")
        assert theirs.recv(4096).startswith(b"HTTP/1.1 200 OK\r\n")

