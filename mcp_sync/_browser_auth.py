"""The authorization step for scripts and notebooks: the system browser, and a one-shot
loopback server that catches the redirect."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

from ._oauth_flow import AUTHORIZATION, LOOPBACK_HOSTS, failure, strip_query

DEFAULT_TIMEOUT = 300.0  # the user has five minutes to log in
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

    Example::

        import functools
        auth = mcp_sync.OAuth(redirect_uri="http://127.0.0.1:8765/callback",
                              on_authorize=functools.partial(mcp_sync.auth.browser_authorize, timeout=120))
        with mcp_sync.Client.http("https://mcp.example.com/mcp", auth=auth) as client:
            client.tools()   # the browser opens on the first 401
    """
    from http.server import BaseHTTPRequestHandler, HTTPServer

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
    landed: list[str] = []
    done = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        timeout = 2.0  # a connection that sends nothing (a browser's preconnect) holds the loop this long at most

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            if parts.path != path:
                self._answer(404, b"not found")
                return
            if parse_qs(parts.query).get("state") != [state]:
                self._answer(400, b"this is not the answer to the pending authorization request")
                return
            self._answer(200, PAGE)
            if not done.is_set():
                landed.append(f"http://{target.netloc}{self.path}")
                done.set()

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8" if status == 200 else "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:  # the query holds the code: never log it
            pass

    host = (target.hostname or "127.0.0.1").strip("[]")

    class Server(HTTPServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    try:
        server = Server((host, port), Handler)
    except OSError as exc:
        raise failure(AUTHORIZATION, endpoint, f"cannot listen on {redirect_uri}: {exc.strerror or exc}") from exc
    server.timeout = 0.2  # handle_request wakes up this often to look at the deadline
    try:
        opened = False
        if open_browser and _can_open_browser():
            import webbrowser

            try:
                opened = webbrowser.open(authorization_url)
            except Exception:  # a broken browser setup is the same as no browser
                opened = False
        if not opened:
            print(f"Open this URL in a browser to authorize:\n\n    {authorization_url}\n", file=out or sys.stderr)
        deadline = time.monotonic() + timeout
        while not done.is_set():
            if time.monotonic() >= deadline:
                detail = f"no redirect to {redirect_uri} within {timeout:g} s (authorization timed out)"
                raise failure(AUTHORIZATION, endpoint, detail)
            server.handle_request()
    finally:
        server.server_close()
    return landed[0]
