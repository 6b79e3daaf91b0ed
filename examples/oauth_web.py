"""OAuth for an MCP server inside a web app (Flask; Django is the same three views).

Run: pip install flask && python examples/oauth_web.py https://mcp.example.com/mcp
Then open http://127.0.0.1:5000/tools

mcp_sync runs the authorization flow on the transport's worker thread and calls
``on_authorize(url)`` there, blocking until it returns the URL the browser was
sent back to. In a web app the user's browser is on the other side of an HTTP
request, so the pattern is:

1. start: a view needs the MCP server; the first call hits a 401 and the flow
   calls ``on_authorize`` on the worker thread, which parks the authorization
   URL and waits;
2. redirect: the view answers with a redirect to that URL;
3. callback: the authorization server sends the browser to ``/oauth/callback``;
   that view hands the full URL to the waiting flow, which checks ``state`` and
   exchanges the code, and the original call completes.

This sketch serves one identity for the whole app (an internal tool acting as
one account). For per-user tokens create one OAuth and Client per user (in the
session), each with its own FileTokenStore path or a database-backed TokenStore.
In Django: the same ``WebAuthorization`` object in a module, ``start`` and
``callback`` as views, the client created in ``AppConfig.ready()``.
"""

from __future__ import annotations

import sys
import threading
from urllib.parse import parse_qs, urlsplit

from flask import Flask, jsonify, redirect, request

import mcp_sync


class WebAuthorization:
    """``on_authorize`` for a web app: hands the authorization URL to a view, waits for the callback."""

    def __init__(self, timeout: float = 300.0) -> None:
        self.timeout = timeout
        self.lock = threading.Lock()
        self.pending_url: str | None = None
        self.url_ready = threading.Condition(self.lock)
        self.waiting: dict[str, tuple[threading.Event, list[str]]] = {}  # state -> (done, [callback URL])

    def __call__(self, authorization_url: str) -> str:  # runs on mcp_sync's worker thread
        state = parse_qs(urlsplit(authorization_url).query)["state"][0]
        done, landed = threading.Event(), []
        with self.lock:
            self.waiting[state] = (done, landed)
            self.pending_url = authorization_url
            self.url_ready.notify_all()
        try:
            if not done.wait(self.timeout):
                raise mcp_sync.AuthorizationError("the user did not come back from the authorization server in time")
            return landed[0]
        finally:
            with self.lock:
                self.waiting.pop(state, None)
                self.pending_url = None

    def next_url(self, wait: float) -> str | None:
        """The authorization URL the flow is waiting on, if it asks within ``wait`` seconds."""
        with self.lock:
            self.url_ready.wait_for(lambda: self.pending_url is not None, timeout=wait)
            return self.pending_url

    def complete(self, callback_url: str) -> bool:
        state = (parse_qs(urlsplit(callback_url).query).get("state") or [""])[0]
        with self.lock:
            slot = self.waiting.get(state)
        if slot is None:
            return False  # not an answer to a pending request: ignore it
        slot[1].append(callback_url)
        slot[0].set()
        return True


MCP_URL = sys.argv[1] if len(sys.argv) > 1 else "https://mcp.example.com/mcp"
web_auth = WebAuthorization()
oauth = mcp_sync.OAuth(
    client_name="My web app",
    redirect_uri="http://127.0.0.1:5000/oauth/callback",  # registered as a "web" client (not loopback-native)
    on_authorize=web_auth,
    token_store=mcp_sync.FileTokenStore("instance/mcp-tokens.json"),
)
mcp = mcp_sync.Client.http(MCP_URL, auth=oauth, timeout=60)
app = Flask(__name__)


@app.get("/tools")
def tools():  # type: ignore[no-untyped-def]
    result: dict[str, object] = {}

    def call() -> None:
        try:
            result["tools"] = [tool.name for tool in mcp.tools()]
        except mcp_sync.MCPError as exc:
            result["error"] = str(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(timeout=5)  # authorized already: the answer comes now
    if worker.is_alive():
        url = web_auth.next_url(wait=5)
        if url is not None:
            return redirect(url)  # 2. the browser goes to the authorization server
        worker.join(timeout=55)
    return jsonify(result) if "tools" in result else (jsonify(result), 502)


@app.get("/oauth/callback")
def callback():  # type: ignore[no-untyped-def]
    if not web_auth.complete(request.url):  # 3. hand the redirect to the waiting flow
        return "no authorization is pending", 400
    return redirect("/tools")


if __name__ == "__main__":
    app.run(threaded=True)
