"""One user's credentials never reach another user (#28.1, #28.2; checklist C5).

Two properties of one client serving many users through views (``Client.bind``):

* "A view's cached or session state is only ever used for equal credentials": results a
  view cached are served only to a request that sends the very same credential headers,
  whatever happens to the auth objects behind them (short-lived, collected, their ``id()``
  reused), from many threads at once; a legacy view session belongs to the very same auth
  object, across the session cap, a renewal and a 401.
* "The view's credential is the one sent": whatever the client's ``auth=`` / ``headers=``,
  the view's ``headers=`` / ``auth=`` and a call's own ``headers=``, the server receives
  exactly the credential the documented precedence names (docs/services.md), on every
  HTTP transport and in both eras.

Peers: the Python SDK server (mcp==2.3.0: Streamable HTTP in both eras, HTTP+SSE), whose
``whoami`` tool answers with the Authorization header it received; the scripted server of
tests/httpkit.py for what the SDK server does not do (``ttlMs`` on lists, a 401 on demand).
"""

from __future__ import annotations

import base64
import gc
import itertools
import json
import threading
from typing import Any, Iterator

import pytest
import requests

import mcp_sync
from mcp_sync import _client_constructors

from conftest import PY, SDK_SERVER, running_server
from httpkit import FakeServer, Reply, json_reply, result

pytestmark = pytest.mark.timeout(120)


class Bearer(requests.auth.AuthBase):
    """A per-user auth object as a web app makes one per request: a new object each time,
    equal tokens in distinct objects (no ``__eq__``: compared by identity)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request


class ApiKey(requests.auth.AuthBase):
    """An auth object that sends no Authorization header at all (its credential is elsewhere)."""

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["X-Api-Key"] = "k"
        return request


def _listing_per_user(request: Any) -> Reply | None:
    """tools/list answers with a tool named after the caller's bearer token, private, for an hour
    (longer than any run: a loaded machine once took 3 minutes over one test, and a minute's ttlMs
    then re-fetched lists the test counts as served from the cache)."""
    if request.rpc_method != "tools/list":
        return None
    user = request.headers.get("authorization", "nobody").split()[-1]
    tools = [{"name": f"for_{user}", "inputSchema": {"type": "object"}}]
    return json_reply(result(request, {"tools": tools, "ttlMs": 3_600_000, "cacheScope": "private"}))


# -- the cache: only ever equal credentials -----------------------------------------------------


def test_short_lived_auth_objects_never_get_another_users_cached_list() -> None:
    """The issue's case: one view per request with a fresh auth object. The objects die at once,
    so their ids are reused; a key made of the id served 14-19 of 40 users another's list."""
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url) as client:
        server.override = _listing_per_user
        tokens = [f"u{n}" for n in range(40)]
        ids = []
        for round_ in range(3):
            for token in tokens:
                auth = Bearer(token)
                ids.append(id(auth))
                names = [tool.name for tool in client.bind(auth=auth).tools()]
                assert names == [f"for_{token}"], (round_, token)
                del auth
                # the young generations only: a full collection in a test worker that has run
                # hundreds of tests took over a second each time (3 minutes for this test)
                gc.collect(1)
        # equal credentials share: every later view of a token was served from the cache
        assert len(server.seen("tools/list")) == len(tokens)
    assert len(set(ids)) < len(ids) / 2, "the auth objects' ids were not reused: the test proves nothing"


def test_many_threads_many_short_lived_views_each_get_their_own_list() -> None:
    """8 threads x 300 views, each with a new auth object, tokens drawn from 50 users, the
    collector running between them: every answer is the caller's own."""
    wrong: list[tuple[str, list[str]]] = []
    errors: list[BaseException] = []
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, timeout=30) as client:
        server.override = _listing_per_user

        def work(seed: int) -> None:
            try:
                for n in range(300):
                    token = f"u{(seed * 7919 + n * 31) % 50}"
                    names = [tool.name for tool in client.bind(auth=Bearer(token)).tools()]
                    if names != [f"for_{token}"]:
                        wrong.append((token, names))
                    if n % 50 == 0:
                        gc.collect(1)
            except BaseException as exc:  # reported below, not lost on the thread
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(100)
        assert not any(thread.is_alive() for thread in threads)
    assert not errors and not wrong, (errors[:3], wrong[:5])


def test_views_with_auth_that_sends_no_authorization_share_what_the_server_saw_alike() -> None:
    """A view whose auth adds no Authorization sends none (never the client's): its cache key
    is what it sends, so it does not meet the results of a view that sends a token."""
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, auth=Bearer("service")) as client:
        server.override = _listing_per_user
        assert [t.name for t in client.bind(auth=ApiKey()).tools()] == ["for_nobody"]
        assert [t.name for t in client.bind(auth=Bearer("ann")).tools()] == ["for_ann"]
        assert [t.name for t in client.tools()] == ["for_service"]
        assert [t.name for t in client.bind(auth=ApiKey()).tools()] == ["for_nobody"]
        sent = [(r.headers.get("authorization"), r.headers.get("x-api-key")) for r in server.seen("tools/list")]
    assert sent == [(None, "k"), ("Bearer ann", None), ("Bearer service", None)]


def test_a_legacy_view_session_belongs_to_its_very_auth_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """Legacy sessions of views are keyed by the auth object itself (held while its session
    lives), so a collected object's id reused by another user's object never finds the
    first user's session; past the session cap the evicted user gets a new session of its
    own, with its own credential."""
    monkeypatch.setattr(_client_constructors, "MAX_VIEW_SESSIONS", 4)
    with FakeServer("legacy") as server, mcp_sync.Client.http(server.url, mode="legacy") as client:
        for round_ in range(3):
            for n in range(10):
                view = client.bind(auth=Bearer(f"u{n}"))
                view.call_tool("echo", {"user": n, "round": round_})
                del view
                gc.collect(1)
        calls = server.seen("tools/call")
        sessions: dict[str, set[str]] = {}
        for call in calls:
            user = call.json["params"]["arguments"]["user"]
            assert call.headers["authorization"] == f"Bearer u{user}"
            sessions.setdefault(call.headers["mcp-session-id"], set()).add(call.headers["authorization"])
    assert all(len(users) == 1 for users in sessions.values()), sessions  # no session served two users


def test_a_renewed_legacy_view_session_keeps_its_credential() -> None:
    """The server forgets a view's session (404): the view opens a new one with its own
    credential, never the client's or another view's."""
    with FakeServer("legacy") as server, mcp_sync.Client.http(server.url, mode="legacy", auth=Bearer("svc")) as client:
        ann, bob = client.bind(auth=Bearer("ann")), client.bind(headers={"Authorization": "Bearer bob"})
        ann.call_tool("echo", {"who": "ann"})
        bob.call_tool("echo", {"who": "bob"})
        server.sessions.clear()  # every session forgotten: the next requests get 404
        ann.call_tool("echo", {"who": "ann"})
        bob.call_tool("echo", {"who": "bob"})
        client.call_tool("echo", {"who": "svc"})
        inits = [r.headers.get("authorization") for r in server.seen("initialize")]
        calls = [(r.json["params"]["arguments"]["who"], r.headers.get("authorization"))
                 for r in server.seen("tools/call")]
    assert sorted(set(inits)) == ["Bearer ann", "Bearer bob", "Bearer svc"]
    assert all(auth == f"Bearer {who}" for who, auth in calls), calls


def test_a_401_for_a_views_credential_does_not_start_the_clients_login() -> None:
    """The client's auth answers 401s (an OAuth-style ``handle_challenge``); a 401 to a view's
    own credential is the view's: the client's flow does not run, and its token is never sent."""

    class ServiceLogin(Bearer):
        challenged = 0

        def handle_challenge(self, response: Any, attempt: int) -> bool:
            ServiceLogin.challenged += 1
            return False

    def refuse_bob(request: Any) -> Reply | None:
        if request.headers.get("authorization") == "Bearer bob" and request.rpc_method == "tools/call":
            return Reply(401, {"WWW-Authenticate": "Bearer"}, b"")
        return None

    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, auth=ServiceLogin("svc")) as client:
        server.override = refuse_bob
        with pytest.raises(mcp_sync.MCPError):
            client.bind(headers={"Authorization": "Bearer bob"}).call_tool("echo", {})
        sent = {r.headers.get("authorization") for r in server.seen("tools/call")}
    assert ServiceLogin.challenged == 0 and sent == {"Bearer bob"}


# -- precedence: the view's credential is the one sent ------------------------------------------

CLIENT_CREDENTIALS = {  # name -> (Client.http keyword arguments, the credential it sends)
    "none": ({}, None),
    "auth": ({"auth": Bearer("svc-auth")}, "Bearer svc-auth"),
    "headers": ({"headers": {"authorization": "Bearer svc-header"}}, "Bearer svc-header"),
    "both": ({"headers": {"Authorization": "Bearer svc-header"}, "auth": Bearer("svc-auth")}, "Bearer svc-auth"),
}
VIEW_HEADERS: dict[str, dict[str, str] | None] = {
    "none": None, "auth-header": {"AUTHORIZATION": "Bearer bob-header"}, "other": {"X-User": "u"},
}
VIEW_AUTH = {"none": None, "bearer": "bob-auth", "basic": ("bob", "pw"), "no-authorization": "api-key"}
CALL_HEADERS: dict[str, dict[str, str] | None] = {"none": None, "auth-header": {"authorization": "Bearer call"}}


def _view_auth(kind: str) -> Any:
    value = VIEW_AUTH[kind]
    if value == "api-key":
        return ApiKey()
    return Bearer(value) if isinstance(value, str) else value


def expected_credential(client: str, view_headers: str, view_auth: str, call_headers: str) -> str | None:
    """The documented precedence, most specific first: a call's own Authorization header, the
    view's auth, the view's Authorization header, the client's auth, the client's Authorization
    header. A view with auth or an Authorization header never sends the client's (an auth that
    adds no Authorization sends none)."""
    if call_headers == "auth-header":
        return "Bearer call"
    if view_auth == "bearer":
        return "Bearer bob-auth"
    if view_auth == "basic":
        return "Basic " + base64.b64encode(b"bob:pw").decode()
    if view_headers == "auth-header":
        return "Bearer bob-header"
    if view_auth == "no-authorization":
        return None
    return CLIENT_CREDENTIALS[client][1]


def _whoami(view: Any, call_headers: dict[str, str] | None) -> str | None:
    answer = view.call_tool("whoami", {}, headers=call_headers)
    assert not answer.is_error, answer.text
    return json.loads(answer.text)["authorization"]  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def sdk_sse_url() -> Iterator[str]:
    """The SDK server over the deprecated HTTP+SSE transport (legacy only)."""
    with running_server([PY, SDK_SERVER, "sse"]) as server:
        yield f"http://127.0.0.1:{server.port}/sse"


def _every_combination(make_client: Any) -> list[tuple[tuple[str, ...], str | None, str | None]]:
    """Every client x view headers x view auth x call headers combination: (case, expected, sent)."""
    wrong = []
    for client_kind, (options, _) in CLIENT_CREDENTIALS.items():
        with make_client(**options) as client:
            views = {
                (headers, auth): client.bind(headers=VIEW_HEADERS[headers], auth=_view_auth(auth))
                for headers, auth in itertools.product(VIEW_HEADERS, VIEW_AUTH)
            }
            for (headers, auth), call in itertools.product(views, CALL_HEADERS):
                case = (client_kind, headers, auth, call)
                expected = expected_credential(*case)
                sent = _whoami(views[(headers, auth)], CALL_HEADERS[call])
                if sent != expected:
                    wrong.append((case, expected, sent))
            assert _whoami(client, None) == CLIENT_CREDENTIALS[client_kind][1]  # the client's own, unchanged
    return wrong


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_views_credential_is_the_one_the_server_receives(era: str, sdk_http_url: str) -> None:
    """Streamable HTTP, both eras (modern: the shared connection; legacy: each view's session)."""
    wrong = _every_combination(lambda **options: mcp_sync.Client.http(sdk_http_url, mode=era, timeout=30, **options))
    assert not wrong, wrong


def test_the_views_credential_is_the_one_the_server_receives_over_http_sse(sdk_sse_url: str) -> None:
    """The deprecated HTTP+SSE transport (legacy only: each view's own SSE session)."""
    wrong = _every_combination(lambda **options: mcp_sync.Client.sse(sdk_sse_url, timeout=30, **options))
    assert not wrong, wrong


def test_views_of_views_keep_the_precedence(sdk_http_url: str) -> None:
    """A view of a view is the client's view with both credentials: the newer auth wins, and
    an Authorization header given later still loses to an auth given earlier (auth beats headers)."""
    with mcp_sync.Client.http(sdk_http_url, auth=Bearer("svc"), timeout=30) as client:
        ann = client.bind(auth=Bearer("ann"))
        assert _whoami(ann.bind(auth=Bearer("bob")), None) == "Bearer bob"
        assert _whoami(ann.bind(headers={"Authorization": "Bearer hdr"}), None) == "Bearer ann"
        assert _whoami(client.bind(headers={"Authorization": "Bearer hdr"}).bind(headers={"X-User": "1"}), None) \
            == "Bearer hdr"
