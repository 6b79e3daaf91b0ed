"""The authorization step for scripts and notebooks: the system browser, and a one-shot
loopback server that catches the redirect."""

from __future__ import annotations

import errno
import os
import selectors
import socket
import sys
import time
from typing import Callable, TextIO
from urllib.parse import parse_qs, urlsplit

from ._oauth_flow import AUTHORIZATION, LOOPBACK_HOSTS, failure, strip_query

DEFAULT_TIMEOUT = 300.0  # the user has five minutes to log in
#: Seconds one connection to the redirect listener may take to send its request head. A browser
#: sends it at once; a preconnected socket left idle, or a local program dripping bytes, is
#: dropped then (browsers open a new connection for a request when an idle one was closed).
CONNECTION_TIMEOUT = 10.0
MAX_HEAD = 16 * 1024  # bytes of request line and headers (a redirect with a long code fits easily)
MAX_CONNECTIONS = 16  # open at once; a new one replaces the oldest past that
#: accept() failing for want of file descriptors or memory: the pending connection keeps the
#: listener readable, so the loop waits this long before trying again instead of spinning
ACCEPT_BACKOFF = 0.1
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
PAGE = (
    b"<!doctype html><html><head><meta charset='utf-8'><title>Authorized</title></head>"
    b"<body><p>Authorization complete. You can close this window and return to the application.</p></body></html>"
)


def _can_open_browser() -> bool:
    """False where ``webbrowser`` could only start a console browser in this terminal (SSH, containers)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or os.environ.get("BROWSER"))


def browser_authorize(
    authorization_url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    open_browser: bool = True,
    out: TextIO | None = None,
) -> str:
    """Send the user to ``authorization_url`` and return the URL the browser is redirected to.

    Usable as ``OAuth(on_authorize=browser_authorize)``. Listens on the
    ``redirect_uri`` the authorization URL carries (it must be a loopback
    ``http://`` URI with a port, e.g. ``http://127.0.0.1:8765/callback``),
    opens the system browser (``webbrowser``), or prints the URL to ``out``
    (default stderr) for the user to open when no browser can be started (SSH,
    containers), and waits at most ``timeout`` seconds for the redirect whose
    ``state`` matches the request's. Requests with another path or state are
    answered 400/404 and ignored. Raises AuthorizationError on a timeout or an
    unusable ``redirect_uri``.

    ``timeout`` holds whatever other local programs do: connections are served
    side by side (one that stalls or sends a byte a second delays no other),
    each must send its request within :data:`CONNECTION_TIMEOUT` seconds and
    :data:`MAX_HEAD` bytes or is dropped, and past :data:`MAX_CONNECTIONS` open
    ones a new connection replaces the oldest.

    Example::

        import functools
        auth = mcp_sync.OAuth(redirect_uri="http://127.0.0.1:8765/callback",
                              on_authorize=functools.partial(mcp_sync.auth.browser_authorize, timeout=120))
        with mcp_sync.Client.http("https://mcp.example.com/mcp", auth=auth) as client:
            client.tools()   # the browser opens on the first 401
    """
    endpoint = strip_query(authorization_url)
    params = parse_qs(urlsplit(authorization_url).query)
    redirect_uri = (params.get("redirect_uri") or [""])[0]
    state = (params.get("state") or [""])[0]
    target = urlsplit(redirect_uri)
    try:
        port = target.port
    except ValueError:
        port = None
    if target.scheme != "http" or (target.hostname or "") not in LOOPBACK_HOSTS or not port:
        raise failure(
            AUTHORIZATION,
            endpoint,
            f"browser_authorize needs a loopback http redirect_uri with a port (like http://127.0.0.1:8765/callback), "
            f"not {redirect_uri!r}",
        )
    if not state:
        raise failure(AUTHORIZATION, endpoint, "the authorization URL has no state parameter")
    path = target.path or "/"
    host = (target.hostname or "127.0.0.1").strip("[]")
    try:
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    except OSError as exc:
        raise failure(AUTHORIZATION, endpoint, f"cannot listen on {redirect_uri}: {exc.strerror or exc}") from exc
    try:
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server does
            listener.bind((host, port))
            listener.listen(MAX_CONNECTIONS)
            listener.setblocking(False)
        except OSError as exc:
            raise failure(AUTHORIZATION, endpoint, f"cannot listen on {redirect_uri}: {exc.strerror or exc}") from exc
        opened = False
        if open_browser and _can_open_browser():
            import webbrowser

            try:
                opened = webbrowser.open(authorization_url)
            except Exception:  # a broken browser setup is the same as no browser
                opened = False
        if not opened:
            print(f"Open this URL in a browser to authorize:\n\n    {authorization_url}\n", file=out or sys.stderr)
        landed = _serve(listener, _Redirect(path, state), time.monotonic() + timeout)
    finally:
        listener.close()
    if landed is None:
        detail = f"no redirect to {redirect_uri} within {timeout:g} s (authorization timed out)"
        raise failure(AUTHORIZATION, endpoint, detail)
    return f"http://{target.netloc}{landed}"


class _Redirect:
    """What the awaited redirect looks like: its path, and the state of the pending request."""

    __slots__ = ("path", "state")

    def __init__(self, path: str, state: str) -> None:
        self.path = path
        self.state = state


class _Connection:
    """One accepted connection: what it sent so far, and when it is dropped."""

    __slots__ = ("buffer", "scanned", "sock", "until")

    def __init__(self, sock: socket.socket, until: float) -> None:
        self.sock = sock
        self.until = until
        self.buffer = bytearray()
        self.scanned = 0  # the end of the head is searched for in new bytes only: linear in what arrives


def _serve(listener: socket.socket, redirect: _Redirect, deadline: float) -> str | None:
    """Serve the redirect listener until the awaited request comes (its request target) or
    ``deadline`` (None).

    One thread, non-blocking sockets: every connection is read as its bytes arrive, so one
    that stalls or sends a byte a second delays no other. Each must deliver its request
    head within CONNECTION_TIMEOUT (capped by ``deadline``) and MAX_HEAD bytes, or it is
    dropped; when MAX_CONNECTIONS are open, a new one replaces the oldest. The deadline
    is looked at whenever anything happens and at least at the earliest expiry.
    """
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    connections: dict[socket.socket, _Connection] = {}

    def drop(connection: _Connection) -> None:
        connections.pop(connection.sock, None)
        selector.unregister(connection.sock)
        connection.sock.close()

    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return None
            for connection in [c for c in connections.values() if c.until <= now]:
                drop(connection)
            wake = min([deadline, *(c.until for c in connections.values())])
            for key, _ in selector.select(max(0.0, wake - now)):
                if key.fileobj is listener:  # (the clock moved during select: read it again)
                    if not _accept(listener, selector, connections, drop,
                                   min(time.monotonic() + CONNECTION_TIMEOUT, deadline)):
                        time.sleep(max(0.0, min(ACCEPT_BACKOFF, deadline - time.monotonic())))
                    continue
                connection = connections.get(key.fileobj)  # type: ignore[call-overload]
                if connection is None:
                    continue  # dropped earlier in this round
                done, landed = _read(connection, redirect)
                if done:
                    drop(connection)
                    if landed is not None:
                        return landed
    finally:
        for connection in list(connections.values()):
            drop(connection)
        selector.close()


def _accept(
    listener: socket.socket,
    selector: selectors.BaseSelector,
    connections: dict[socket.socket, _Connection],
    drop: Callable[[_Connection], None],
    until: float,
) -> bool:
    """Take every pending connection; past MAX_CONNECTIONS, the oldest makes room for a new one
    (so a local program holding connections open cannot keep the browser's redirect out). Out
    of file descriptors, the oldest connection is dropped to make room too; with none to drop,
    returns False (the caller backs off: the listener stays readable, and retrying at once spins)."""

    def drop_oldest() -> None:
        drop(min(connections.values(), key=lambda c: c.until))

    for _ in range(MAX_CONNECTIONS):
        try:
            sock, _address = listener.accept()
        except (BlockingIOError, InterruptedError):
            return True
        except OSError as exc:
            if exc.errno not in _EXHAUSTED:
                continue  # e.g. the peer reset before accept: nothing to serve
            if not connections:
                return False
            drop_oldest()
            continue
        sock.setblocking(False)
        if len(connections) >= MAX_CONNECTIONS:
            drop_oldest()
        connections[sock] = _Connection(sock, until)
        selector.register(sock, selectors.EVENT_READ)
    return True


def _read(connection: _Connection, redirect: _Redirect) -> tuple[bool, str | None]:
    """Read what ``connection`` has sent: ``(done with it, request target of the awaited redirect)``.

    Done means answered (the awaited redirect with 200) or broken; not done, keep waiting."""
    try:
        data = connection.sock.recv(4096)
    except (BlockingIOError, InterruptedError):
        return False, None
    except OSError:
        return True, None
    if not data:
        return True, None
    connection.buffer += data
    start = max(0, connection.scanned - 3)
    head_end = connection.buffer.find(b"\n\r\n", start)
    if head_end < 0:
        head_end = connection.buffer.find(b"\n\n", start)
    connection.scanned = len(connection.buffer)
    if head_end < 0:
        if len(connection.buffer) > MAX_HEAD:
            _answer(connection.sock, 431, b"request header fields too large")
            return True, None
        return False, None
    line = bytes(connection.buffer[: connection.buffer.find(b"\n")]).rstrip(b"\r").decode("latin-1")
    parts = line.split(" ")
    if len(parts) != 3 or not parts[1].startswith("/") or not parts[2].startswith("HTTP/"):
        _answer(connection.sock, 400, b"bad request")
        return True, None
    method, request_target = parts[0], parts[1]
    if method != "GET":
        _answer(connection.sock, 405, b"method not allowed")
        return True, None
    target = urlsplit(request_target)
    if target.path != redirect.path:
        _answer(connection.sock, 404, b"not found")
        return True, None
    if parse_qs(target.query).get("state") != [redirect.state]:
        _answer(connection.sock, 400, b"this is not the answer to the pending authorization request")
        return True, None
    _answer(connection.sock, 200, PAGE)
    return True, request_target


def _answer(sock: socket.socket, status: int, body: bytes) -> None:
    """Send a whole small response without waiting: a client that does not read loses it."""
    reasons = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
    kind = "text/html; charset=utf-8" if status == 200 else "text/plain"
    head = (
        f"HTTP/1.1 {status} {reasons.get(status, 'Request Header Fields Too Large')}\r\n"
        f"Content-Type: {kind}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
        "Cache-Control: no-store\r\n\r\n"
    ).encode("ascii")
    try:
        sock.send(head + body)  # well under a socket buffer: one non-blocking send takes it all
    except OSError:
        pass
