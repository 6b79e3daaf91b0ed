"""OAuth 2.1 for MCP's HTTP transports.

:class:`OAuth` is the ``auth=`` object of :meth:`mcp_sync.Client.http` and
:meth:`mcp_sync.Client.sse`. The transport asks it for headers on every
request (:meth:`OAuth.headers_for`, also reachable as a ``requests`` auth
callable) and hands it every 401 and 403 (:meth:`OAuth.handle_challenge`),
then repeats the request once it has a (better) token.

On a challenge it runs the whole flow: Protected Resource Metadata discovery
and the check that it describes this server, authorization server metadata
discovery with the identical-issuer rule, PKCE S256, a client id
(pre-registered, Client ID Metadata Document, or Dynamic Client
Registration), the authorization request with ``resource`` and a scope taken
from the challenge, the metadata or ``scopes``, the RFC 9207 ``iss`` checks
and the token request. A 403 ``insufficient_scope`` steps up to the union of
the scopes, a bounded number of times. Registrations and tokens are kept per
authorization server issuer in a pluggable :class:`TokenStore`.

Tokens are refreshed shortly before they expire (:data:`REFRESH_MARGIN`), by
one thread for all; URLs a server advertises are fetched only where
:class:`~mcp_sync._oauth_flow.UrlPolicy` allows (SSRF guards, checked on the name
and again on the address each connection reaches). Private-key
client authentication and cross-app access sign or carry JWTs; their crypto is
the optional ``jwt`` extra (``pip install PyJWT cryptography``).

Example (a script or notebook: the system browser, the redirect caught on loopback,
tokens kept across runs)::

    import mcp_sync

    auth = mcp_sync.OAuth(client_name="My app", redirect_uri="http://127.0.0.1:8765/callback",
                          on_authorize=mcp_sync.auth.browser_authorize,
                          token_store=mcp_sync.FileTokenStore("~/.config/my-app/tokens.json"))
    with mcp_sync.Client.http("https://mcp.example.com/mcp", auth=auth) as client:
        print([tool.name for tool in client.tools()])
"""
# Internal: checklist 1.19, A1-A11; LG15. The codes stay in comments, never in user-facing docstrings.

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Union

from ._browser_auth import browser_authorize
from ._oauth_flow import (
    AUTHORIZATION,
    DISCOVERY,
    REGISTRATION,
    REVOCATION,
    TOKEN,
    Http,
    UrlPolicy,
    canonical_resource,
    check_redirect,
    choose_auth_method,
    discover_as,
    discover_prm,
    failure,
    is_loopback,
    origin_of,
    parse_bearer_challenge,
    pkce_pair,
    register_client,
    resource_covers,
    revoke_token,
    scope_list,
    strip_query,
    token_request,
    with_query,
)
from ._token_store import FileTokenStore
from .exceptions import AuthorizationError, InsufficientScopeError

log = logging.getLogger("mcp_sync.auth")

GRANTS = ("authorization_code", "client_credentials", "cross_app_access")
REFRESH_MARGIN = 60.0  # seconds before expiry a token is renewed (half its lifetime if it lives < 2 min)
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"  # RFC 8693
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"  # RFC 7523 section 2.1
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag"  # Identity Assertion JWT Authorization Grant

PrivateKey = Union[str, bytes, Mapping[str, Any]]

__all__ = [
    "REFRESH_MARGIN",
    "FileTokenStore",
    "MemoryTokenStore",
    "OAuth",
    "TokenStore",
    "browser_authorize",
    "token_cache_path",
]

#: Where the browser comes back to in the one-word form, ``auth="oauth"`` (and ``OAuth``'s default).
REDIRECT_URI = "http://127.0.0.1:8765/callback"
#: The accepted string values of ``auth=`` (anything else is refused when the client is made).
AUTH_WORDS = ("oauth",)


def token_cache_path(url: str) -> Path:
    """Where ``auth="oauth"`` keeps the registration and tokens for the MCP server at ``url``.

    One file per server URL (the canonical URL: scheme and host lower-cased, no
    fragment), in the user's cache directory: ``$XDG_CACHE_HOME/mcp_sync/oauth/``,
    or ``~/.cache/mcp_sync/oauth/`` when that variable is unset or not an absolute
    path. The file is named after the host and a digest of the URL, created with
    mode 0600 (see :class:`FileTokenStore`). Delete it to forget a login without
    revoking it; ``client.logout()`` revokes it and forgets it.

    Example::

        path = mcp_sync.auth.token_cache_path("https://mcp.example.com/mcp")
        print(path)   # ~/.cache/mcp_sync/oauth/mcp.example.com-3f1c...json
    """
    resource = canonical_resource(url)
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    host = re.sub(r"[^A-Za-z0-9.-]+", "_", origin_of(resource).split("://", 1)[-1])[:64]
    digest = hashlib.sha256(resource.encode("utf-8")).hexdigest()[:24]
    return root / "mcp_sync" / "oauth" / f"{host}-{digest}.json"


def resolve_auth(auth: Any, url: str, where: str) -> Any:
    """``auth=`` as the transport takes it: the one word ``"oauth"`` becomes an :class:`OAuth`
    logging in with the browser and keeping its tokens in :func:`token_cache_path`; any
    other string is refused now (ValueError naming the accepted forms), not at the first
    request; every other value is returned as it is."""
    if not isinstance(auth, str):
        return auth
    if auth not in AUTH_WORDS:
        raise ValueError(
            f"{where}: auth={auth!r} is not an accepted form of auth=. Use auth='oauth' (log in with the "
            "browser, tokens kept in the user's cache directory), an mcp_sync.OAuth(...), a requests auth "
            "object, a callable taking and returning a requests.PreparedRequest, or a (user, password) tuple; "
            "a static token goes in headers={'Authorization': 'Bearer ...'}"
        )
    return OAuth(
        redirect_uri=REDIRECT_URI, on_authorize=browser_authorize, token_store=FileTokenStore(token_cache_path(url))
    )


def refresh_due(tokens: Mapping[str, Any], now: float | None = None) -> bool:
    """True when ``tokens`` expire within the refresh margin: REFRESH_MARGIN seconds, or half
    their lifetime for tokens that live less than twice that. Tokens without an expiry never are."""
    expires_at, issued_at = tokens.get("expires_at"), tokens.get("issued_at")
    if not isinstance(expires_at, (int, float)):
        return False
    lifetime = expires_at - issued_at if isinstance(issued_at, (int, float)) else float("inf")
    if lifetime <= 0:
        return False  # nonsense lifetimes: leave it to the 401
    margin = REFRESH_MARGIN if lifetime >= 2 * REFRESH_MARGIN else lifetime / 2
    return (time.time() if now is None else now) >= expires_at - margin


class TokenStore(Protocol):
    """Where :class:`OAuth` keeps what it learned, one JSON-serialisable dict per
    authorization server issuer: ``{"client": {...}, "tokens": {resource: {...}}}``.

    Implement it to persist registrations and tokens across runs (or use
    :class:`FileTokenStore`); keep the storage private to the user, it holds
    refresh tokens and client secrets.
    Called with :class:`OAuth`'s flow lock held, from transport worker threads.
    A store may also offer ``update(issuer, change)`` (read, change, write as one
    step, as :class:`FileTokenStore` does); OAuth then uses it for every write.
    """

    def load(self, issuer: str) -> dict[str, Any] | None: ...

    def save(self, issuer: str, state: dict[str, Any]) -> None: ...


class MemoryTokenStore:
    """The default :class:`TokenStore`: a dict for the life of the process (thread-safe).

    Example::

        store = mcp_sync.auth.MemoryTokenStore()
        a = mcp_sync.OAuth(token_store=store, on_authorize=...)
        b = mcp_sync.OAuth(token_store=store, on_authorize=...)   # shares a's registrations and tokens
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._data: dict[str, str] = {}

    def load(self, issuer: str) -> dict[str, Any] | None:
        with self._lock:
            raw = self._data.get(issuer)
        return json.loads(raw) if raw is not None else None  # a copy: callers may mutate it

    def save(self, issuer: str, state: dict[str, Any]) -> None:
        with self._lock:
            self._data[issuer] = json.dumps(state)

    def _issuers(self) -> list[str]:
        with self._lock:
            return list(self._data)


def _without_tokens(state: dict[str, Any], resource: str) -> dict[str, Any]:
    """An issuer's stored state without the tokens for ``resource`` (its registration is kept)."""
    tokens = state.get("tokens")
    if isinstance(tokens, dict):
        state["tokens"] = {key: value for key, value in tokens.items() if key != resource}
    return state


class _Context:
    """What discovery established for one flow."""

    __slots__ = ("issuer", "meta", "resource", "scopes_supported", "server_url")

    def __init__(
        self, issuer: str, meta: dict[str, Any], resource: str, scopes_supported: list[str], server_url: str
    ) -> None:
        self.issuer = issuer
        self.meta = meta
        self.resource = resource
        self.scopes_supported = scopes_supported
        self.server_url = server_url


class OAuth:
    """OAuth 2.1 client for one MCP server (or several); pass as ``auth=`` to ``Client.http``.

    Parameters (all keyword-only):

    ``client_name``
        Shown to the user by the authorization server; sent in registrations.
    ``redirect_uri``
        Where the authorization server sends the user-agent back; a loopback
        URI (the default) registers the client as ``application_type`` native.
    ``scopes``
        Scopes to ask for when neither the server's 401 challenge nor its
        Protected Resource Metadata names any.
    ``client_id``, ``client_secret``, ``issuer``
        A pre-registered client. With ``issuer`` set the credentials are
        used only with that authorization server; otherwise with any.
    ``private_key``, ``signing_algorithm``, ``key_id``
        Authenticate the pre-registered ``client_id`` with signed JWT assertions
        (``private_key_jwt``, RFC 7523) instead of a secret: a PEM private key
        (str or bytes) or a JWK (dict or JSON); the algorithm (ES256, RS256, ...)
        defaults to the JWK's ``alg`` or the key type's usual one. Needs the
        ``jwt`` extra: ``pip install PyJWT cryptography``.
    ``client_metadata_url``
        An HTTPS URL serving this client's Client ID Metadata Document; used
        as the client id where the server advertises
        ``client_id_metadata_document_supported``, ahead of registration.
    ``on_authorize``
        ``callable(authorization_url) -> redirect_url``: show the URL to the
        user (open a browser) and return the full URL the browser was
        redirected to. :func:`browser_authorize` does that for scripts and
        notebooks. Runs on the transport's worker thread and may block as long
        as the user takes. Without it, only the non-interactive grants or
        stored tokens work.
    ``token_store``
        A :class:`TokenStore`; default in-memory, private to this object.
        :class:`FileTokenStore` keeps tokens across restarts.
    ``max_step_ups``
        How many times one request may be re-authorized for a 403
        ``insufficient_scope`` before :class:`~mcp_sync.InsufficientScopeError`. Default 2.
    ``grant_type``
        ``"authorization_code"`` (default, on behalf of a user),
        ``"client_credentials"`` (a machine client: ``client_secret_basic``,
        ``client_secret_post`` or ``private_key_jwt``), or ``"cross_app_access"``
        (enterprise-managed authorization: the user's ID token from the
        enterprise identity provider is exchanged there for an identity
        assertion grant, RFC 8693, which the MCP authorization server takes as
        a ``jwt-bearer`` grant, RFC 7523).
    ``id_token``, ``idp_token_endpoint``, ``idp_client_id``, ``idp_client_secret``
        For ``cross_app_access``: the user's ID token (or a callable returning
        a fresh one), and this client at the identity provider.
    ``timeout``
        Seconds for each HTTP call to metadata, registration and token endpoints.

    Tokens are renewed shortly before they expire (a refresh token, or the
    non-interactive grant again), once for all threads, and again on a 401.

    Raises :class:`~mcp_sync.AuthorizationError` (from the request that hit the
    challenge) whenever the flow fails or is refused; its ``step`` and ``url``
    say where. Thread-safe: concurrent 401s from many threads run one flow,
    the others wait and reuse its token.

    Example::

        auth = mcp_sync.OAuth(client_id="my-app", client_secret=secret, grant_type="client_credentials")
        client = mcp_sync.Client.http("https://mcp.example.com/mcp", auth=auth)

        signed = mcp_sync.OAuth(client_id="my-app", private_key=open("key.pem").read(),
                                grant_type="client_credentials")   # pip install PyJWT cryptography
    """

    def __init__(
        self,
        *,
        client_name: str = "mcp-sync",
        redirect_uri: str = "http://127.0.0.1:8765/callback",
        scopes: list[str] | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        issuer: str | None = None,
        private_key: PrivateKey | None = None,
        signing_algorithm: str | None = None,
        key_id: str | None = None,
        client_metadata_url: str | None = None,
        on_authorize: Callable[[str], str] | None = None,
        token_store: TokenStore | None = None,
        max_step_ups: int = 2,
        grant_type: str = "authorization_code",
        id_token: str | Callable[[], str] | None = None,
        idp_token_endpoint: str | None = None,
        idp_client_id: str | None = None,
        idp_client_secret: str | None = None,
        timeout: float = 30.0,
    ) -> None:
        if grant_type not in GRANTS:
            raise ValueError(f"grant_type must be one of {GRANTS}, not {grant_type!r}")
        if max_step_ups < 0:
            raise ValueError("max_step_ups must be >= 0")
        if grant_type != "authorization_code" and not client_id:
            raise ValueError(f"grant_type={grant_type!r} needs client_id (and client_secret or private_key)")
        if grant_type == "cross_app_access" and not (id_token and idp_token_endpoint):
            raise ValueError("grant_type='cross_app_access' needs id_token and idp_token_endpoint")
        if private_key is not None and not client_id:
            raise ValueError("private_key authenticates a pre-registered client: pass client_id too")
        self.client_name = client_name
        self.redirect_uri = redirect_uri
        self.scopes = list(scopes or [])
        self.client_id = client_id
        self.client_secret = client_secret
        self.issuer = issuer
        self.client_metadata_url = client_metadata_url
        self.on_authorize = on_authorize
        self.token_store: TokenStore = token_store if token_store is not None else MemoryTokenStore()
        self.max_step_ups = max_step_ups
        self.grant_type = grant_type
        self.id_token = id_token
        self.idp_token_endpoint = idp_token_endpoint
        self.idp_client_id = idp_client_id
        self.idp_client_secret = idp_client_secret
        self.timeout = timeout
        self._signing_key: Any = None
        if private_key is not None:
            from ._jwt import SigningKey

            self._signing_key = SigningKey(private_key, signing_algorithm, key_id)
            self._signing_key.sign({"probe": True})  # a missing extra or a bad key fails here, not mid-flow
        self._lock = threading.Lock()  # guards _active, _server and _stale
        self._flow_lock = threading.Lock()  # one flow at a time, whatever the number of threads
        self._active: tuple[_Context, dict[str, Any]] | None = None
        self._server: str | None = None  # origin the active token may be sent to
        self._stale: dict[str, Any] | None = None  # tokens whose early renewal failed: wait for the 401
        self._request_local = threading.local()  # step-ups of the request this thread is answering

    # -- what the transport calls ---------------------------------------------------------

    def headers_for(self, url: str) -> dict[str, str]:
        """``{"Authorization": "Bearer ..."}`` for a request to ``url``, or ``{}``.

        The token goes on every request to the MCP server (POST, GET stream,
        DELETE), in the header only, and never to another origin. A token about
        to expire is renewed first (one thread renews, the others wait for it).
        """
        active = self._active_for(url)
        if active is None:
            return {}
        tokens = active[1]
        if refresh_due(tokens) and tokens is not self._stale:
            tokens = self._renew_early(active)
        return {"Authorization": f"Bearer {tokens['access_token']}"}

    def _active_for(self, url: str) -> tuple[_Context, dict[str, Any]] | None:
        with self._lock:
            active, server = self._active, self._server
        if active is None or server is None or origin_of(canonical_resource(url)) != server:
            return None
        return active

    @property
    def auth_context(self) -> str | None:
        """Identifies the grant in use (issuer and a digest of the token), so results the
        server marked ``private`` are never served under another authorization."""  # C5
        with self._lock:
            active = self._active
        if active is None:
            return None
        digest = hashlib.sha256(active[1]["access_token"].encode()).hexdigest()[:16]
        return f"{active[0].issuer}#{digest}"

    def __call__(self, request: Any) -> Any:
        """The ``requests`` auth protocol: add :meth:`headers_for` to a prepared request."""
        request.headers.update(self.headers_for(request.url))
        return request

    #: ``handle_challenge`` takes ``deadline=``: the HTTP transports pass the request's deadline.
    challenge_takes_deadline = True

    def handle_challenge(self, response: Any, attempt: int = 0, *, deadline: float | None = None) -> bool:
        """Answer a 401/403 ``response`` of the MCP server; True means "send the request again".

        ``attempt`` counts the challenges this same request already had. A 401
        (re)authorizes, or refreshes a token; a 403 ``insufficient_scope`` steps
        up to the union of the scopes at most ``max_step_ups`` times per
        request; any other 403 is not about OAuth (False). Blocks for the whole
        flow (including ``on_authorize``); raises AuthorizationError.

        Every HTTP exchange of the flow ends within ``timeout`` seconds, however
        slowly the server answers. ``deadline`` (a ``time.monotonic()`` value: the
        caller's, when the request has one) bounds the whole flow as well: waiting
        for another thread's flow, discovery, registration and token requests all
        end by then. The user's own time in ``on_authorize`` is not cut short (it
        has its own bound, e.g. ``browser_authorize(timeout=...)``); the code it
        brings back is then redeemed within ``timeout``, so a login is not wasted.

        Example (what a transport does with a response)::

            if response.status_code in (401, 403) and auth.handle_challenge(response, deadline=time.monotonic() + 30):
                response = session.send(request)   # now with the new token
        """
        status = response.status_code
        challenge = parse_bearer_challenge(response.headers.get("WWW-Authenticate"))
        if status not in (401, 403) or (status == 403 and challenge.get("error") != "insufficient_scope"):
            return False
        request = getattr(response, "request", None)
        sent = request.headers.get("Authorization") if request is not None else None
        server_url = canonical_resource(response.url or (request.url if request is not None else ""))
        if status == 401 and attempt > 0:
            raise failure(TOKEN, server_url, "the server refused the token it was just given (HTTP 401)")
        # A8 retry limit, per request: one request's rounds all run on one transport thread.
        step_ups = 0 if attempt == 0 else getattr(self._request_local, "step_ups", 0)
        if status == 403:
            if step_ups >= self.max_step_ups:
                scope, description = challenge.get("scope"), challenge.get("error_description")
                raise InsufficientScopeError(
                    f"OAuth authorization failed at {server_url}: the server still answers insufficient_scope "
                    f"after {step_ups} step-up authorizations (scope {scope!r}"
                    f"{f', {description}' if description else ''}); giving up (retry limit max_step_ups="
                    f"{self.max_step_ups})",
                    scope=scope,
                    error_description=description,
                    url=server_url,
                )
            step_ups += 1
        self._request_local.step_ups = step_ups
        # Another thread's flow may hold the lock for as long as its user takes: wait no longer
        # than this request may (acquire(timeout=-1) waits for ever when there is no deadline).
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._flow_lock.acquire(timeout=wait):
            detail = "another thread's authorization flow outlasted this request's deadline"
            raise failure(AUTHORIZATION, server_url, detail)
        try:
            active = self._active_for(server_url)
            current = f"Bearer {active[1]['access_token']}" if active is not None else None
            if current is not None and current != sent:
                return True  # another thread got a new token while this one waited: just retry with it
            http = Http(self.timeout, UrlPolicy(server_url), deadline=deadline)
            try:
                context = self._discover(http, server_url, challenge)
                if status == 401:
                    self._unauthorized(http, context, challenge, sent)
                else:
                    self._obtain(http, context, self._step_up_scopes(context, challenge))
            finally:
                http.close()
            with self._lock:
                self._server = origin_of(server_url)
        finally:
            self._flow_lock.release()
        return True

    # -- logging in and out ahead of the requests ---------------------------------------------------

    def authorize(self, url: str, *, timeout: float | None = None) -> None:
        """Log in for the MCP server at ``url`` now, before its first request.

        Runs what a 401 from that server would: the protected resource metadata
        (at its well-known URLs: no request to the server itself), the
        authorization server's metadata, a client id, then stored tokens if the
        store has live ones, else a refresh, else the grant (for
        ``authorization_code``, ``on_authorize``: the browser). Does nothing
        when this object already holds a token for that server that is not
        about to expire. ``timeout`` (seconds) bounds the flow's exchanges
        with the servers, not the user's own time in ``on_authorize``; raises
        :class:`~mcp_sync.AuthorizationError` as a request would.

        Example::

            auth = mcp_sync.OAuth(on_authorize=mcp_sync.auth.browser_authorize)
            auth.authorize("https://mcp.example.com/mcp")   # the browser opens now, not mid-call
        """
        server_url = canonical_resource(url)
        active = self._active_for(server_url)
        if active is not None and not refresh_due(active[1]):
            return
        deadline = None if timeout is None else time.monotonic() + timeout
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._flow_lock.acquire(timeout=wait):
            raise failure(AUTHORIZATION, server_url, "another thread's authorization flow outlasted the timeout")
        try:
            active = self._active_for(server_url)
            if active is not None and not refresh_due(active[1]):
                return  # another thread logged in while this one waited
            http = Http(self.timeout, UrlPolicy(server_url), deadline=deadline)
            try:
                context = self._discover(http, server_url, {})
                self._unauthorized(http, context, {}, None)
            finally:
                http.close()
            with self._lock:
                self._server = origin_of(server_url)
        finally:
            self._flow_lock.release()

    def logout(self, url: str) -> bool:
        """Revoke this object's tokens for the MCP server at ``url`` and forget them.

        Where the authorization server's metadata offers a ``revocation_endpoint``
        (RFC 7009), the refresh token and the access token are revoked there; then
        they are removed from the token store and from this object, whatever the
        revocation did (the client registration is kept). Returns True when the
        authorization server revoked every token there was (or there were none),
        False when it offers no revocation endpoint or the revocation failed;
        a failure is also logged as a warning on the ``mcp_sync.auth`` logger.
        It never raises for the authorization server's answers: the local
        tokens are gone either way. The next request authorizes afresh.

        Example::

            if not auth.logout("https://mcp.example.com/mcp"):
                print("forgotten here; the server may honour the token until it expires")
        """
        server_url = canonical_resource(url)
        if not self._flow_lock.acquire(timeout=self.timeout):
            raise failure(REVOCATION, server_url, "another thread's authorization flow is still running")
        try:
            with self._lock:
                active = self._active
            mine = active is not None and active[0].server_url == server_url
            context, active_tokens = (active[0], active[1]) if active is not None and mine else (None, None)
            http = Http(self.timeout, UrlPolicy(server_url))
            try:
                if context is None:
                    try:
                        context = self._discover(http, server_url, {})
                    except AuthorizationError as exc:
                        log.warning("mcp_sync: logout: cannot find the authorization server of %s (%s); "
                                    "forgetting its tokens without revoking them", server_url, exc)
                        self._forget_everywhere(server_url)
                        return False
                revoked = self._revoke(http, context, active_tokens)
            finally:
                http.close()
            self._update_store(context.issuer, lambda state: _without_tokens(state, context.resource))
            return revoked
        finally:
            with self._lock:
                if self._active is not None and self._active[0].server_url == server_url:
                    self._active = None
                    self._server = None
                self._stale = None
            self._flow_lock.release()

    def _revoke(self, http: Http, context: _Context, active_tokens: dict[str, Any] | None) -> bool:
        """RFC 7009 at the authorization server, refresh token first; True when all were revoked."""
        state = self.token_store.load(context.issuer) or {}
        stored = (state.get("tokens") or {}).get(context.resource)
        pairs = [
            (tokens.get(kind), hint)
            for tokens in (active_tokens, stored) if isinstance(tokens, dict)
            for kind, hint in (("refresh_token", "refresh_token"), ("access_token", "access_token"))
        ]
        pending = list(dict.fromkeys((token, hint) for token, hint in pairs if isinstance(token, str) and token))
        if not pending:
            return True
        endpoint = context.meta.get("revocation_endpoint")
        if not isinstance(endpoint, str) or not endpoint:
            log.info("mcp_sync: logout: %s offers no token revocation; the tokens were only forgotten here",
                     context.issuer)
            return False
        client = state.get("client")
        if not isinstance(client, dict) or not client.get("client_id"):
            client = self._client_for(http, context) if self.client_id else None
        if client is None:
            log.warning("mcp_sync: logout: no client registration for %s to revoke with", context.issuer)
            return False
        revoked = True
        for token, hint in pending:
            try:
                endpoint = self._checked(endpoint, REVOCATION)
                assertion = None
                if client.get("auth_method") == "private_key_jwt" and self._signing_key is not None:
                    from ._jwt import client_assertion

                    assertion = client_assertion(self._signing_key, client["client_id"], context.issuer)
                revoke_token(http, endpoint, token, hint, client, assertion)
            except AuthorizationError as exc:
                log.warning("mcp_sync: logout: %s; the token is forgotten here all the same", exc)
                revoked = False
        return revoked

    def _forget_everywhere(self, server_url: str) -> None:
        """Drop the tokens for ``server_url`` under every issuer of a store that can list them."""
        issuers = getattr(self.token_store, "_issuers", None)  # the stores of this module can list theirs
        for issuer in issuers() if callable(issuers) else []:
            self._update_store(issuer, lambda state: _without_tokens(state, server_url))

    # -- discovery ----------------------------------------------------------------------------

    def _discover(self, http: Http, server_url: str, challenge: dict[str, str]) -> _Context:
        """Protected Resource Metadata and its resource check, then authorization server
        metadata and PKCE support.

        Run on every challenge, never cached: the server may have moved to
        another authorization server meanwhile (authorization-server-migration).
        """
        found = discover_prm(http, server_url, challenge.get("resource_metadata"))
        if found is None:
            return self._legacy_context(http, server_url)
        prm_url, prm = found
        resource = prm.get("resource")
        if not isinstance(resource, str) or not resource_covers(resource, server_url):
            raise failure(
                DISCOVERY,
                prm_url,
                f"the protected resource metadata is for resource {resource!r}, "
                f"not this server ({server_url}); refusing to authorize for it",
            )
        servers = [s for s in prm["authorization_servers"] if isinstance(s, str) and s]
        if not servers:
            raise failure(DISCOVERY, prm_url, "the protected resource metadata names no authorization server")
        issuer = servers[0]
        meta = discover_as(http, issuer)
        if meta is None:
            raise failure(DISCOVERY, issuer, "no authorization server metadata found (RFC 8414, OpenID Connect)")
        if self.grant_type == "authorization_code":
            methods = meta.get("code_challenge_methods_supported")
            if not isinstance(methods, list) or "S256" not in methods:
                raise failure(
                    DISCOVERY,
                    issuer,
                    f"the authorization server does not advertise PKCE S256 (code_challenge_methods_supported: "
                    f"{methods!r}); refusing to proceed",
                )
        return _Context(issuer, meta, resource, scope_list(prm.get("scopes_supported")), server_url)

    def _legacy_context(self, http: Http, server_url: str) -> _Context:
        """A 2025-03-26 server has no PRM; its origin is the authorization server, whose
        metadata sits at the root, or else the default ``/authorize``, ``/token``, ``/register``."""  # LG15
        issuer = origin_of(server_url)
        meta = discover_as(http, issuer, same_origin=True)
        if meta is not None:
            issuer = meta["issuer"]  # the one iss (A6) and the store (A3) go by
        else:
            log.info("mcp_sync: %s has no OAuth metadata; using the 2025-03-26 default endpoints", issuer)
            meta = {
                "issuer": issuer,
                "authorization_endpoint": f"{issuer}/authorize",
                "token_endpoint": f"{issuer}/token",
                "registration_endpoint": f"{issuer}/register",
            }
        methods = meta.get("code_challenge_methods_supported")
        if isinstance(methods, list) and "S256" not in methods and self.grant_type == "authorization_code":
            raise failure(DISCOVERY, issuer, "the authorization server does not support PKCE S256")
        return _Context(issuer, meta, server_url, [], server_url)

    # -- tokens -------------------------------------------------------------------------------

    def _unauthorized(self, http: Http, context: _Context, challenge: dict[str, str], sent: str | None) -> None:
        """A 401: a stored token not yet tried, else a refresh, else a new authorization."""
        state = self.token_store.load(context.issuer) or {}
        tokens = state.get("tokens", {}).get(context.resource)
        if tokens and f"Bearer {tokens.get('access_token')}" != sent and not refresh_due(tokens):
            self._activate(context, tokens)
            return
        if tokens and tokens.get("refresh_token") and isinstance(state.get("client"), dict):
            try:
                self._refresh(http, context, state["client"], tokens)
                return
            except AuthorizationError as exc:  # refresh tokens may be revoked at any time
                log.info("mcp_sync: refreshing the token failed (%s); authorizing again", exc)
        scopes = scope_list(challenge.get("scope")) or context.scopes_supported or self.scopes
        self._obtain(http, context, scopes)

    def _renew_early(self, active: tuple[_Context, dict[str, Any]]) -> dict[str, Any]:
        """Renew the active tokens before they expire; the tokens to send now.

        One thread renews; the others wait on the flow lock and then find the new
        tokens. Only non-interactive renewals happen here (a refresh token, or the
        client credentials / cross-app grant again); when there is none, or it
        fails, the request goes with the old token and a 401 runs the full flow.
        """
        context, tokens = active
        if not tokens.get("refresh_token") and self.grant_type == "authorization_code":
            return tokens
        # bounded: another thread may hold the lock for a whole interactive flow
        if not self._flow_lock.acquire(timeout=self.timeout):
            return tokens
        try:
            with self._lock:
                current = self._active
            if current is not None and current[1] is not tokens:
                return current[1]  # another thread renewed them while this one waited
            http = Http(self.timeout, UrlPolicy(context.server_url))
            try:
                client = (self.token_store.load(context.issuer) or {}).get("client")
                if tokens.get("refresh_token") and isinstance(client, dict):
                    self._refresh(http, context, client, tokens)
                else:
                    self._obtain(http, context, list(tokens.get("scopes") or []))
            except AuthorizationError as exc:
                log.info("mcp_sync: renewing the token before it expires failed (%s)", exc)
                with self._lock:
                    self._stale = tokens
                return tokens
            finally:
                http.close()
            with self._lock:
                current = self._active
            return current[1] if current is not None else tokens
        finally:
            self._flow_lock.release()

    def _step_up_scopes(self, context: _Context, challenge: dict[str, str]) -> list[str]:
        """The union of what was asked before (from this issuer) and what the challenge names."""
        with self._lock:
            active = self._active
        previous = active[1].get("scopes", []) if active is not None and active[0].issuer == context.issuer else []
        return list(dict.fromkeys([*previous, *scope_list(challenge.get("scope"))]))

    def _obtain(self, http: Http, context: _Context, scopes: list[str]) -> None:
        client = self._client_for(http, context)
        if self.grant_type == "client_credentials":
            form = {"grant_type": "client_credentials", "resource": context.resource}
            if scopes:
                form["scope"] = " ".join(scopes)
            body = self._token(http, context, form, client)
        elif self.grant_type == "cross_app_access":
            form = {"grant_type": JWT_BEARER, "assertion": self._identity_grant(http, context, scopes)}
            form["resource"] = context.resource
            if scopes:
                form["scope"] = " ".join(scopes)
            body = self._token(http, context, form, client)
        else:
            body = self._authorization_code(http, context, client, scopes)
        self._save(context, client, body, scopes)

    def _token(self, http: Http, context: _Context, form: dict[str, str], client: dict[str, Any]) -> dict[str, Any]:
        """A token request at the authorization server, signing a client assertion where needed."""
        endpoint = self._endpoint(context, "token_endpoint", TOKEN)
        assertion = None
        if client.get("auth_method") == "private_key_jwt":
            from ._jwt import client_assertion

            if self._signing_key is None:
                raise failure(TOKEN, endpoint, "the client authenticates with private_key_jwt but has no private_key")
            # aud: the authorization server's issuer identifier (RFC 7523bis; what MCP servers check)
            assertion = client_assertion(self._signing_key, client["client_id"], context.issuer)
        return token_request(http, endpoint, form, client, assertion=assertion)

    def _identity_grant(self, http: Http, context: _Context, scopes: list[str]) -> str:
        """Cross-app access: exchange the user's ID token at the identity provider (RFC 8693)
        for an identity assertion grant (ID-JAG) for this authorization server and resource."""
        endpoint = self._checked(str(self.idp_token_endpoint), TOKEN)
        id_token = self.id_token() if callable(self.id_token) else self.id_token
        if not isinstance(id_token, str) or not id_token:
            raise failure(TOKEN, endpoint, "no ID token to exchange (id_token gave none)")
        form = {
            "grant_type": TOKEN_EXCHANGE,
            "requested_token_type": ID_JAG_TYPE,
            "subject_token": id_token,
            "subject_token_type": ID_TOKEN_TYPE,
            "audience": context.issuer,
            "resource": context.resource,
        }
        if scopes:
            form["scope"] = " ".join(scopes)
        idp_client = {
            "client_id": self.idp_client_id or self.client_id,
            "client_secret": self.idp_client_secret,
            "auth_method": "client_secret_basic" if self.idp_client_secret else "none",
        }
        # the identity provider is configured by the user, not advertised by a server: no SSRF policy
        body = token_request(http, endpoint, form, idp_client, bearer=False, guarded=False)
        if body.get("issued_token_type", ID_JAG_TYPE) != ID_JAG_TYPE:
            issued = body.get("issued_token_type")
            raise failure(TOKEN, endpoint, f"the token exchange issued a {issued!r}, not an identity assertion grant")
        grant: str = body["access_token"]
        return grant

    def _authorization_code(
        self, http: Http, context: _Context, client: dict[str, Any], scopes: list[str]
    ) -> dict[str, Any]:
        endpoint = self._endpoint(context, "authorization_endpoint", AUTHORIZATION)
        if self.on_authorize is None:
            raise failure(
                AUTHORIZATION,
                endpoint,
                f"{context.resource} needs authorization by a user at {context.issuer}; "
                "pass OAuth(on_authorize=...), e.g. mcp_sync.auth.browser_authorize",
            )
        # A6: the issuer is recorded with the verifier and state of this one request (locals of this call).
        issuer, meta = context.issuer, context.meta
        verifier, challenge = pkce_pair()
        state = secrets.token_urlsafe(24)
        params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": self.redirect_uri,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "state": state,
            "resource": context.resource,  # A5
        }
        asked = list(scopes)
        if asked and "offline_access" in scope_list(meta.get("scopes_supported")):
            asked.append("offline_access")  # SEP-2207: ask for a refresh token where the AS offers them
        if asked:
            params["scope"] = " ".join(dict.fromkeys(asked))
        url = with_query(endpoint, params)
        log.info("mcp_sync: authorizing %s at %s", context.resource, issuer)
        try:
            landed = self.on_authorize(url)
        except AuthorizationError:
            raise
        except Exception as exc:
            raise failure(AUTHORIZATION, endpoint, f"on_authorize failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(landed, str):
            raise failure(AUTHORIZATION, endpoint, f"on_authorize must return the redirect URL, not {type(landed)}")
        # The user took their time (bounded by on_authorize itself): redeem the single-use code
        # within this call's own timeout rather than a request deadline that may have passed meanwhile.
        http.deadline = None
        code = check_redirect(
            landed,
            issuer=issuer,
            iss_advertised=meta.get("authorization_response_iss_parameter_supported") is True,
            state=state,
            endpoint=endpoint,
        )
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
            "resource": context.resource,  # A5: in the token request too
        }
        return self._token(http, context, form, client)

    def _refresh(self, http: Http, context: _Context, client: dict[str, Any], tokens: dict[str, Any]) -> None:
        form = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "resource": context.resource}
        body = self._token(http, context, form, client)
        body.setdefault("refresh_token", tokens["refresh_token"])  # RFC 6749 section 6: the old one stays valid
        self._save(context, client, body, tokens.get("scopes", []))

    def _save(self, context: _Context, client: dict[str, Any], body: dict[str, Any], scopes: list[str]) -> None:
        expires_in = body.get("expires_in")
        now = time.time()
        timed = isinstance(expires_in, (int, float)) and not isinstance(expires_in, bool)
        tokens = {
            "access_token": body["access_token"],
            "refresh_token": body.get("refresh_token") if isinstance(body.get("refresh_token"), str) else None,
            "issued_at": now,
            "expires_at": now + float(expires_in) if timed else None,  # type: ignore[arg-type]
            "scopes": scopes,
        }
        def change(state: dict[str, Any]) -> dict[str, Any]:
            state["client"] = client
            state.setdefault("tokens", {})[context.resource] = tokens
            return state

        self._update_store(context.issuer, change)  # A3: per issuer, never shared across them
        self._activate(context, tokens)

    def _update_store(self, issuer: str, change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        """Read-change-write of one issuer's entry; atomic across processes where the store can do it."""
        update = getattr(self.token_store, "update", None)
        if callable(update):
            update(issuer, change)
        else:
            self.token_store.save(issuer, change(self.token_store.load(issuer) or {}))

    def _activate(self, context: _Context, tokens: dict[str, Any]) -> None:
        with self._lock:
            self._active = (context, tokens)

    # -- client identity ----------------------------------------------------------------------

    def _client_for(self, http: Http, context: _Context) -> dict[str, Any]:
        """In the spec's order: pre-registered, then CIMD, then Dynamic Client Registration.

        What one issuer registered is stored under that issuer only, so a
        new authorization server always gets a new registration.
        """
        meta = context.meta
        if self.client_id and (self.issuer is None or self.issuer == context.issuer):
            method = choose_auth_method(
                meta.get("token_endpoint_auth_methods_supported"),
                bool(self.client_secret),
                has_key=self._signing_key is not None,
            )
            return {"client_id": self.client_id, "client_secret": self.client_secret, "auth_method": method}
        stored = (self.token_store.load(context.issuer) or {}).get("client")
        if isinstance(stored, dict) and stored.get("client_id"):
            return stored
        if (
            self.client_metadata_url
            and meta.get("client_id_metadata_document_supported") is True
            and self.grant_type == "authorization_code"
        ):
            return {"client_id": self.client_metadata_url, "client_secret": None, "auth_method": "none"}
        endpoint = meta.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise failure(
                REGISTRATION,
                context.issuer,
                "no client id: the authorization server offers neither Client ID Metadata Documents "
                "(or no client_metadata_url was given) nor dynamic registration; pass OAuth(client_id=...)",
            )
        supported = meta.get("token_endpoint_auth_methods_supported")
        supported = supported if isinstance(supported, list) else ["client_secret_basic"]
        wanted = next((m for m in ("none", "client_secret_basic", "client_secret_post") if m in supported), "none")
        grants = ["authorization_code", "refresh_token"]  # SEP-2207: say we want refresh tokens
        if self.grant_type == "client_credentials":
            grants = ["client_credentials"]
        registration = register_client(
            http,
            self._checked(endpoint, REGISTRATION),
            {
                "client_name": self.client_name,
                "redirect_uris": [self.redirect_uri],
                "grant_types": grants,
                "response_types": ["code"] if "authorization_code" in grants else [],
                "token_endpoint_auth_method": wanted,
                "application_type": "native" if is_loopback(self.redirect_uri) else "web",  # A9, SEP-837
            },
        )
        secret = registration.get("client_secret") if isinstance(registration.get("client_secret"), str) else None
        method = registration.get("token_endpoint_auth_method") or wanted
        if method != "none" and not secret:
            method = "none"
        client = {"client_id": registration["client_id"], "client_secret": secret, "auth_method": method}
        self._update_store(context.issuer, lambda state: {**state, "client": client})
        return client

    def _endpoint(self, context: _Context, name: str, step: str) -> str:
        value = context.meta.get(name)
        if not isinstance(value, str) or not value:
            raise failure(DISCOVERY, context.issuer, f"the authorization server metadata has no {name}")
        return self._checked(value, step)

    @staticmethod
    def _checked(url: str, step: str) -> str:
        """Codes, secrets and tokens travel over HTTPS only, loopback excepted (OAuth 2.1 section 1.5)."""
        if url.startswith("https://") or (url.startswith("http://") and is_loopback(url)):
            return url
        raise failure(step, strip_query(url), "refusing a non-HTTPS endpoint")

    def __repr__(self) -> str:
        with self._lock:
            active = self._active
        where = f" issuer={active[0].issuer!r}" if active is not None else ""
        return f"<OAuth {self.grant_type}{where}>"
