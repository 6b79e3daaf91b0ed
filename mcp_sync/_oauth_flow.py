"""The OAuth 2.1 building blocks :class:`mcp_sync.OAuth` composes: bounded HTTP,
``WWW-Authenticate`` parsing, Protected Resource Metadata and authorization
server metadata discovery, PKCE, the redirect checks and the token endpoint.
Stateless functions; every failure raises :class:`~mcp_sync.AuthorizationError`.
``requests`` is imported when first used.
"""  # checklist 1.19: A1, A2, A4, A6

from __future__ import annotations

import base64
import contextlib
import hashlib
import ipaddress
import json
import re
import secrets
import socket
import time
from typing import Any, Callable, ContextManager, Mapping
from urllib.parse import parse_qs, quote, urlencode, urljoin, urlsplit, urlunsplit

from .exceptions import AuthorizationError

MAX_BODY = 1024 * 1024  # metadata and token responses are small; a larger body is an error
MAX_REDIRECTS = 3  # same-origin redirects followed by a metadata GET
PRM_PATH = "/.well-known/oauth-protected-resource"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")

# Steps of the flow, as AuthorizationError.step names them.
DISCOVERY, REGISTRATION, AUTHORIZATION, TOKEN = "discovery", "registration", "authorization", "token"
REVOCATION = "revocation"  # RFC 7009, at logout


def failure(step: str, url: str | None, detail: str) -> AuthorizationError:
    """The one shape of every flow error: which step failed, at which URL (never a secret), and why."""
    where = f" at {strip_query(url)}" if url else ""
    return AuthorizationError(f"OAuth {step} failed{where}: {detail}", step=step, url=strip_query(url) if url else None)


def strip_query(url: str) -> str:
    """``url`` without query and fragment: authorization URLs and redirects carry state and codes."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


# -- where the flow may go (SSRF guards) -------------------------------------------------------

LOOPBACK, PRIVATE, LINK_LOCAL, PUBLIC, FORBIDDEN = "loopback", "private", "link-local", "public", "forbidden"


def address_kind(address: str) -> str:
    """What kind of network an IP address is on: loopback, link-local, private, public, or
    forbidden (unspecified, multicast, reserved: never a metadata or token endpoint)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return LOOPBACK
    if ip.is_link_local:
        return LINK_LOCAL
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        return FORBIDDEN
    return PRIVATE if (ip.is_private or not ip.is_global) else PUBLIC


Resolver = Callable[..., Any]


def host_kinds(host: str, port: int, resolve: Resolver | None = None) -> set[str]:
    """The kinds of every address ``host`` stands for (an IP literal, or each address DNS gives).

    An empty set means the name does not resolve: the request itself will fail then.
    """
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return {LOOPBACK}
    try:
        return {address_kind(host)}
    except ValueError:
        pass
    try:
        infos = (resolve or socket.getaddrinfo)(host, port, 0, socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return set()
    return {address_kind(str(info[4][0])) for info in infos}


class UrlPolicy:
    """Where the flow may send requests on behalf of one MCP server (SSRF guards).

    URLs the server advertises (``resource_metadata``, ``authorization_servers``,
    the endpoints in authorization server metadata) are used only over HTTPS,
    plain HTTP being allowed for loopback targets when the MCP server itself is
    on loopback; and never to a loopback, link-local or private address unless
    the MCP server is on the same kind of address. The MCP server's own origin
    is always allowed (the client talks to it anyway).
    """

    def __init__(self, server_url: str, resolve: Resolver | None = None) -> None:
        self.server_origin = origin_of(server_url)
        self._resolve = resolve
        parts = urlsplit(server_url)
        self.server_kinds = host_kinds(parts.hostname or "", _port(parts), resolve)

    def guards(self, url: str) -> bool:
        """Whether requests to ``url`` are checked at all (not to the MCP server's own origin)."""
        return origin_of(url) != self.server_origin

    def check(self, url: str, step: str) -> str:
        """``url`` if the flow may request it; AuthorizationError (naming the step) if not.

        This looks the name up; a name that resolves differently a moment later (DNS
        rebinding) is caught when connecting: see :meth:`check_address`.
        """
        if not self.guards(url):
            return url
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise failure(step, url, "refusing a URL that is not http(s)")
        self._judge(url, parts.scheme, host_kinds(parts.hostname, _port(parts), self._resolve), step, "a URL")
        return url

    def check_address(self, url: str, address: str, step: str) -> None:
        """AuthorizationError unless the flow may talk to ``address``, the IP a request to ``url``
        actually connected to (checked on the connected socket, before anything is sent)."""
        if self.guards(url):
            self._judge(url, urlsplit(url).scheme, {address_kind(address)}, step, f"a connection to {address}")

    def _judge(self, url: str, scheme: str, kinds: set[str], step: str, what: str) -> None:
        loopback_server = self.server_kinds == {LOOPBACK}
        if scheme == "http" and not (kinds == {LOOPBACK} and loopback_server):
            detail = "plain-HTTP: HTTPS only, except loopback for a loopback server"
            raise failure(step, url, f"refusing {what} ({detail})")
        for kind in kinds - {PUBLIC}:
            if kind == FORBIDDEN or kind not in self.server_kinds:
                detail = f"on a {kind} address: the MCP server is not on one (SSRF guard)"
                raise failure(step, url, f"refusing {what} {detail}")


def _port(parts: Any) -> int:
    try:
        return int(parts.port or (443 if parts.scheme == "https" else 80))
    except ValueError:
        return 0



# -- HTTP -----------------------------------------------------------------------------


class Http:
    """Bounded, time-limited HTTP for the flow: bodies capped at MAX_BODY (after
    decompression), every exchange ended at its deadline, every URL checked against
    ``policy`` (SSRF guards) when one is given. POSTs follow no redirect (a token
    endpoint has no business redirecting, and following one could carry a client
    secret elsewhere); metadata GETs follow at most MAX_REDIRECTS within the origin,
    and refuse a cross-origin one.

    Each exchange (connect, headers and body together) ends ``timeout`` seconds after
    it starts, or at ``deadline`` (``time.monotonic()``, the whole flow's) if that
    comes first. A socket timeout alone would not do: it bounds each read, and a server
    sending a byte a second never trips it. The transports' watchdog
    (:class:`~mcp_sync.transports._http_common.Deadlines`) shuts the socket down at the
    deadline, which ends a blocked connect or read at once.

    Example::

        http = Http(5.0, UrlPolicy("https://mcp.example.com/mcp"))
        try:
            meta = http.get_json("https://mcp.example.com/.well-known/oauth-protected-resource")
        finally:
            http.close()
    """

    def __init__(self, timeout: float, policy: UrlPolicy | None = None, *, deadline: float | None = None) -> None:
        import requests  # lazily: importing mcp_sync must not import requests

        from .transports._http_common import Deadlines, _TrackingAdapter

        self.timeout = timeout
        self.policy = policy
        self.deadline = deadline
        self._deadlines = Deadlines("oauth")
        self.session = requests.Session()
        self.session.headers["Accept"] = "application/json"
        self.session.headers["Accept-Encoding"] = "gzip, deflate"  # what decoded_chunks can bound
        adapter: Any = _TrackingAdapter()
        if policy is not None:  # the address each connection reaches is checked too (DNS rebinding)
            from ._peer_guard import PeerCheckingAdapter

            adapter = PeerCheckingAdapter()
        for prefix in ("http://", "https://"):
            self.session.mount(prefix, adapter)

    def request(
        self, method: str, url: str, step: str, *, guarded: bool = True, **kwargs: Any
    ) -> tuple[int, Mapping[str, str], Any]:
        """``(status, headers, parsed JSON or None)``; raises AuthorizationError on a network
        failure, a body over MAX_BODY, or an exchange that outlives its deadline.

        ``guarded=False`` skips the policy for a URL the user configured (not one a server advertised).
        """
        for _ in range(MAX_REDIRECTS + 1):
            guard: ContextManager[None] = contextlib.nullcontext()
            if guarded and self.policy is not None:
                from ._peer_guard import guarding  # loaded with requests, when HTTP is first used

                self.policy.check(url, step)
                guard = guarding(self.policy, url, step)
            with guard:
                status, headers, parsed = self._once(method, url, step, **kwargs)
            location = headers.get("Location")
            if method != "GET" or status not in (301, 302, 303, 307, 308) or not location:
                return status, headers, parsed
            target = urljoin(url, location)
            if origin_of(target) != origin_of(url):
                raise failure(step, url, f"refusing its redirect to another origin ({origin_of(target)})")
            url = target
        raise failure(step, url, f"more than {MAX_REDIRECTS} redirects")

    def _once(self, method: str, url: str, step: str, **kwargs: Any) -> tuple[int, Mapping[str, str], Any]:
        import requests

        from .transports import _http_common
        from .transports._sse_stream import BadBody, TooLarge, decoded_chunks, read_bounded

        now = time.monotonic()
        until = now + self.timeout
        if self.deadline is not None and self.deadline < until:
            until = self.deadline
        if until <= now:
            raise failure(step, url, f"no time left for {method}: the authorization flow's deadline has passed")
        slot = _http_common.Slot()
        self._deadlines.add(slot, until)  # the watchdog shuts the socket at `until`, whatever the server sends
        # The tracking connections report their sockets to the thread's slot. An early renewal
        # runs inside a transport's exchange (OAuth.headers_for): its slot is put back after.
        outer = getattr(_http_common._local, "slot", None)
        _http_common._local.slot = slot
        try:
            try:
                response = self.session.request(
                    method, url, timeout=(until - now, until - now), allow_redirects=False, stream=True, **kwargs
                )
            except requests.RequestException as exc:
                raise self._failed(slot, step, url, method, until - now, f"{method} failed: {exc}") from exc
            try:
                data = read_bounded(decoded_chunks(response.raw, response.headers.get("Content-Encoding")), MAX_BODY)
            except TooLarge as exc:
                raise failure(step, url, f"the answer to {method} exceeds {MAX_BODY} bytes") from exc
            except BadBody as exc:  # an encoding it was not offered, corrupt compressed data
                raise failure(step, url, f"the answer to {method}: {exc}") from exc
            except Exception as exc:  # urllib3/socket errors while reading: same as a failed request
                detail = f"reading the answer to {method} failed: {type(exc).__name__}"
                raise self._failed(slot, step, url, method, until - now, detail) from exc
            finally:
                response.close()
        finally:
            _http_common._local.slot = outer
            self._deadlines.discard(slot)
            slot.finish()
        try:
            parsed = json.loads(data) if data else None
        except (ValueError, RecursionError):
            parsed = None
        return response.status_code, response.headers, parsed

    @staticmethod
    def _failed(slot: Any, step: str, url: str, method: str, allowed: float, detail: str) -> AuthorizationError:
        """The error for a failed exchange: a deadline says so (the socket error it caused would not)."""
        if slot.aborted:
            detail = f"{method} took longer than {allowed:.3g} s (the exchange's deadline); gave up"
        return failure(step, url, detail)

    def get_json(self, url: str, step: str = DISCOVERY) -> dict[str, Any] | None:
        """The JSON object at ``url``, or None when it is not there (any non-200 or non-object)."""
        status, _, parsed = self.request("GET", url, step)
        return parsed if status == 200 and isinstance(parsed, dict) else None

    def close(self) -> None:
        self._deadlines.close(1.0)
        self.session.close()


# -- challenges -------------------------------------------------------------------------


# The pieces of a WWW-Authenticate value (RFC 9110 section 11.6.1). None of them can backtrack
# more than linearly: each repetition is over one character class, or (quoted strings, the
# "unrolled loop" form) alternates between classes that share no character. The value comes
# from a server, and a regex holds the interpreter lock: no timeout could stop a slow one.
_SEPARATORS = re.compile(r"[\s,]*")
_SPACES = re.compile(r"\s*")
_NAME = re.compile(r"[A-Za-z0-9_.\-]+")  # a parameter name or auth-scheme, as far as the flow needs
_QUOTED = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"')
_UNQUOTED = re.compile(r"[^\s,]*")
_ESCAPE = re.compile(r"\\(.)")
_TO_COMMA = re.compile(r"[^,]*")


def _past(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where a run of ``pattern`` (one that matches the empty string too) starting at ``pos`` ends."""
    match = pattern.match(text, pos)
    return match.end() if match is not None else pos


def parse_bearer_challenge(header: str | None) -> dict[str, str]:
    """The parameters of the ``Bearer`` challenge in a ``WWW-Authenticate`` value.

    Names are lower-cased, the first of a repeated name wins, quoted values are
    unescaped. Other challenges (``Basic realm="..."``, ``DPoP ...``) are skipped,
    commas inside their quoted strings included. Linear in the length of the value
    (a single pass; a hostile header costs no more than reading it).

    >>> parse_bearer_challenge('Bearer error="insufficient_scope", scope="a b"')
    {'error': 'insufficient_scope', 'scope': 'a b'}
    >>> parse_bearer_challenge('Basic realm="a, Bearer x", Bearer realm="mcp", error=invalid_token')
    {'realm': 'mcp', 'error': 'invalid_token'}
    """
    if not header:
        return {}
    params: dict[str, str] = {}
    in_bearer = False
    pos, end = 0, len(header)
    element_start = True  # at the start of the value or after a comma: where a scheme may begin
    while True:
        skipped = _past(_SEPARATORS, header, pos)
        element_start = element_start or "," in header[pos:skipped]
        pos = skipped
        if pos >= end:
            return params
        name = _NAME.match(header, pos)
        if name is None:  # not a token: garbage (or a token68 of another scheme)
            if in_bearer:
                return params
            pos = _past(_TO_COMMA, header, pos)
            continue
        after = _past(_SPACES, header, name.end())
        if after < end and header[after] == "=":  # a parameter (or a token68 with padding)
            value_at = _past(_SPACES, header, after + 1)
            if value_at < end and header[value_at] == '"':
                quoted = _QUOTED.match(header, value_at)
                if quoted is None:  # an unterminated quoted string: nothing after it can be trusted
                    return params
                value, pos = _ESCAPE.sub(r"\1", quoted.group(1)), quoted.end()
            else:
                pos = _past(_UNQUOTED, header, value_at)
                value = header[value_at:pos]
            if in_bearer:
                params.setdefault(name.group().lower(), value)
            element_start = False
            continue
        if in_bearer:  # the next scheme ends the Bearer challenge
            return params
        in_bearer = element_start and name.group().lower() == "bearer"
        element_start = False
        pos = name.end()


def scope_list(value: Any) -> list[str]:
    """A space-separated scope string (or a list of them) as a list without duplicates."""
    items = value.split() if isinstance(value, str) else value if isinstance(value, list) else []
    return list(dict.fromkeys(s for s in items if isinstance(s, str) and s))


# -- URLs -----------------------------------------------------------------------------------


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def canonical_resource(url: str) -> str:
    """RFC 8707 canonical URI of the MCP server: lower-case scheme and host, no fragment or query,
    no trailing slash."""  # A5
    parts = urlsplit(url)
    netloc = parts.netloc.lower()
    return urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))


def _comparable(url: str) -> tuple[str, str, int | None, str]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port, parts.path.rstrip("/")


def resource_covers(resource: str, server_url: str) -> bool:
    """True when the PRM ``resource`` identifies ``server_url``: same origin and a path prefix
    on a segment boundary (a server's PRM may name its whole origin, RFC 9728 section 3.3)."""
    try:
        r_scheme, r_host, r_port, r_path = _comparable(resource)
        s_scheme, s_host, s_port, s_path = _comparable(server_url)
    except ValueError:  # a malformed port
        return False
    if (r_scheme, r_host, r_port) != (s_scheme, s_host, s_port) or not r_host:
        return False
    return r_path == "" or s_path == r_path or s_path.startswith(r_path + "/")


def prm_candidates(server_url: str, header_url: str | None) -> list[str]:
    """The challenge's ``resource_metadata``, then the path-based well-known URI, then the root one."""  # A1
    parts = urlsplit(server_url)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [header_url] if header_url else []
    if path:
        urls.append(f"{base}{PRM_PATH}{path}")
    urls.append(f"{base}{PRM_PATH}")
    return list(dict.fromkeys(urls))


def as_metadata_candidates(issuer: str) -> list[str]:
    """RFC 8414 and OpenID Connect discovery URLs for ``issuer``, in the spec's priority order."""  # A2
    parts = urlsplit(issuer)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if path:
        return [
            f"{base}/.well-known/oauth-authorization-server{path}",
            f"{base}/.well-known/openid-configuration{path}",
            f"{base}{path}/.well-known/openid-configuration",
        ]
    return [f"{base}/.well-known/oauth-authorization-server", f"{base}/.well-known/openid-configuration"]


def is_loopback(redirect_uri: str) -> bool:
    parts = urlsplit(redirect_uri)
    return parts.scheme not in ("http", "https") or (parts.hostname or "") in LOOPBACK_HOSTS


def with_query(url: str, params: Mapping[str, str]) -> str:
    """``url`` with ``params`` appended to whatever query it already has."""
    parts = urlsplit(url)
    query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, parts.fragment))


# -- discovery -----------------------------------------------------------------------------


def discover_prm(http: Http, server_url: str, header_url: str | None) -> tuple[str, dict[str, Any]] | None:
    """``(url, document)`` of the first Protected Resource Metadata found, or None."""  # A1
    for url in prm_candidates(server_url, header_url):
        doc = http.get_json(url)
        if doc is not None and isinstance(doc.get("authorization_servers"), list):
            return url, doc
    return None


def discover_as(http: Http, issuer: str, *, same_origin: bool = False) -> dict[str, Any] | None:
    """Authorization server metadata for ``issuer``, or None when no discovery URL has any.

    A document whose ``issuer`` is not *identical* to the one the URL was built
    from is never used (RFC 8414 section 3.3; metadata-issuer-mismatch): it
    could point the flow at an attacker's endpoints. If only such documents
    exist, AuthorizationError says so. ``same_origin`` (2025-03-26
    servers, whose metadata location comes from the MCP server's own origin
    rather than from an issuer) accepts any issuer on that origin instead.
    """
    # A2; same_origin is LG15
    mismatched: list[str] = []
    for url in as_metadata_candidates(issuer):
        doc = http.get_json(url)
        if doc is None:
            continue
        named = doc.get("issuer")
        if same_origin and isinstance(named, str) and origin_of(named) == origin_of(issuer):
            return doc
        if named != issuer:
            mismatched.append(f"{url} names issuer {doc.get('issuer')!r}")
            continue
        return doc
    if mismatched:
        raise failure(
            DISCOVERY,
            issuer,
            f"refusing the authorization server metadata of {issuer!r}: its issuer is not identical "
            f"to the issuer it was discovered from ({'; '.join(mismatched)})",
        )
    return None


# -- PKCE, redirect ------------------------------------------------------------------------


def pkce_pair() -> tuple[str, str]:
    """``(code_verifier, S256 code_challenge)`` (RFC 7636): 64 unreserved characters, 384 bits."""  # A4
    verifier = secrets.token_urlsafe(48)
    return verifier, s256(verifier)


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def check_redirect(redirect_url: str, *, issuer: str, iss_advertised: bool, state: str, endpoint: str = "") -> str:
    """The authorization code from the URL the user-agent was redirected to.

    RFC 9207 section 2.4: a present ``iss`` must equal the recorded issuer
    by simple string comparison (no case folding, port elision, trailing-slash or
    percent-encoding normalization), and an absent one is refused when the
    server advertised it. This runs before anything else in the response is
    looked at: on a mismatch its ``error`` is neither acted on nor shown.
    ``endpoint`` (the authorization endpoint) is named in the errors.
    """
    # A6
    params = parse_qs(urlsplit(redirect_url).query, keep_blank_values=True)
    iss = params.get("iss")
    if iss is not None:
        if len(iss) != 1 or iss[0] != issuer:
            raise failure(
                AUTHORIZATION,
                endpoint,
                f"the authorization response came from issuer {iss[0]!r}, not the recorded {issuer!r} "
                "(RFC 9207 mix-up protection); refusing it",
            )
    elif iss_advertised:
        raise failure(
            AUTHORIZATION,
            endpoint,
            f"{issuer} advertises authorization_response_iss_parameter_supported but its "
            "authorization response has no iss parameter (RFC 9207); refusing it",
        )
    if params.get("state") != [state]:
        raise failure(AUTHORIZATION, endpoint, "the authorization response's state does not match the request")
    if "error" in params:
        description = params.get("error_description", [""])[0]
        raise failure(AUTHORIZATION, endpoint, f"authorization refused: {params['error'][0]} {description}".rstrip())
    code = params.get("code")
    if not code or not code[0]:
        raise failure(AUTHORIZATION, endpoint, "the authorization response carries no code")
    return code[0]


# -- token endpoint ---------------------------------------------------------------------------


def choose_auth_method(supported: Any, has_secret: bool, has_key: bool = False) -> str:
    """Token endpoint client authentication: what the server supports that this client can do.
    RFC 8414 section 2: an absent list means ``client_secret_basic``. A private key wins
    where the server takes ``private_key_jwt``."""
    methods = supported if isinstance(supported, list) else ["client_secret_basic"]
    if has_key and ("private_key_jwt" in methods or not has_secret):
        return "private_key_jwt"
    if not has_secret:
        return "none"
    for method in ("client_secret_basic", "client_secret_post"):
        if method in methods:
            return method
    return "none" if "none" in methods else "client_secret_basic"


def token_request(
    http: Http,
    endpoint: str,
    form: dict[str, str],
    client: Mapping[str, Any],
    *,
    assertion: str | None = None,
    bearer: bool = True,
    guarded: bool = True,
) -> dict[str, Any]:
    """POST ``form`` to the token endpoint with the client's authentication; the token response.

    ``client`` holds ``client_id``, ``client_secret`` and ``auth_method``; for
    ``private_key_jwt`` the signed ``assertion`` goes with it (RFC 7523 section 2.2).
    ``bearer=False`` accepts an issued token that is not a Bearer access token
    (an RFC 8693 token exchange answers ``token_type`` N_A).
    """
    form, headers = authenticated(form, client, assertion)
    status, _, body = http.request("POST", endpoint, TOKEN, data=form, headers=headers, guarded=guarded)
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
        error = body.get("error") if isinstance(body, dict) else None
        description = body.get("error_description", "") if isinstance(body, dict) else ""
        raise failure(
            TOKEN, endpoint, f"refused {form.get('grant_type')}: HTTP {status} {error or ''} {description}".rstrip()
        )
    token_type = str(body.get("token_type", "Bearer"))
    if bearer and token_type.lower() != "bearer":
        raise failure(TOKEN, endpoint, f"unsupported token_type {token_type!r} (Bearer only)")
    return body


def authenticated(
    form: Mapping[str, str], client: Mapping[str, Any], assertion: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """``form`` and the request headers with the client's authentication at the authorization
    server (token and revocation endpoints alike): Basic, or the client id (and secret or
    signed assertion) in the form."""
    form = dict(form)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    method, client_id, secret = client.get("auth_method", "none"), client["client_id"], client.get("client_secret")
    if method == "client_secret_basic" and secret:
        # RFC 6749 section 2.3.1: form-encode each part before base64
        raw = f"{quote(client_id, safe='')}:{quote(secret, safe='')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(raw).decode("ascii")
    else:
        form["client_id"] = client_id
        if method == "client_secret_post" and secret:
            form["client_secret"] = secret
        elif method == "private_key_jwt" and assertion:
            form["client_assertion_type"] = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
            form["client_assertion"] = assertion
    return form, headers


def revoke_token(
    http: Http, endpoint: str, token: str, hint: str, client: Mapping[str, Any], assertion: str | None = None
) -> None:
    """RFC 7009: ask the authorization server to revoke ``token`` (``hint``: ``refresh_token`` or
    ``access_token``). Section 2.2: HTTP 200 means revoked, or already invalid; anything else
    raises AuthorizationError (step ``revocation``) with the server's error, if it gave one."""
    form, headers = authenticated({"token": token, "token_type_hint": hint}, client, assertion)
    status, _, body = http.request("POST", endpoint, REVOCATION, data=form, headers=headers)
    if status != 200:
        error = body.get("error") if isinstance(body, dict) else None
        detail = f"refused to revoke the {hint.replace('_', ' ')}: HTTP {status} {error or ''}".rstrip()
        raise failure(REVOCATION, endpoint, detail)


def register_client(http: Http, endpoint: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """Dynamic Client Registration (RFC 7591): the registration response."""  # A9
    status, _, body = http.request("POST", endpoint, REGISTRATION, json=metadata)
    if status not in (200, 201) or not isinstance(body, dict) or not isinstance(body.get("client_id"), str):
        error = body.get("error") if isinstance(body, dict) else None
        detail = f"dynamic client registration refused: HTTP {status} {error or ''}".rstrip()
        raise failure(REGISTRATION, endpoint, detail)
    return body
