"""The OAuth 2.1 building blocks :class:`mcp_sync.OAuth` composes: bounded HTTP,
``WWW-Authenticate`` parsing, Protected Resource Metadata (A1) and
authorization server metadata discovery (A2), PKCE (A4), the redirect checks
(A6) and the token endpoint. Stateless functions; every failure raises
:class:`~mcp_sync.AuthorizationError`. ``requests`` is imported when first used.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import secrets
from typing import Any, Mapping
from urllib.parse import parse_qs, quote, urlencode, urlsplit, urlunsplit

from .exceptions import AuthorizationError

MAX_BODY = 1024 * 1024  # metadata and token responses are small; a larger body is an error
PRM_PATH = "/.well-known/oauth-protected-resource"
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1", "[::1]")

_PARAM = re.compile(r'\s*,?\s*([A-Za-z0-9_.\-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]*)')


# -- HTTP -----------------------------------------------------------------------------


class Http:
    """Bounded, time-limited HTTP for the flow: no redirects followed (metadata and
    token endpoints have no business redirecting, and following one could carry a
    client secret elsewhere), bodies capped at MAX_BODY, every call with a timeout."""

    def __init__(self, timeout: float) -> None:
        import requests  # lazily: importing mcp_sync must not import requests

        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["Accept"] = "application/json"

    def request(self, method: str, url: str, **kwargs: Any) -> tuple[int, Mapping[str, str], Any]:
        """``(status, headers, parsed JSON or None)``; raises AuthorizationError on a network failure."""
        import requests

        try:
            response = self.session.request(
                method, url, timeout=(self.timeout, self.timeout), allow_redirects=False, stream=True, **kwargs
            )
        except requests.RequestException as exc:
            raise AuthorizationError(f"OAuth: {method} {url} failed: {exc}") from exc
        try:
            data = response.raw.read(MAX_BODY + 1, decode_content=True)
        except Exception as exc:  # urllib3/socket errors while reading: same as a failed request
            raise AuthorizationError(f"OAuth: reading the answer of {method} {url} failed: {exc}") from exc
        finally:
            response.close()
        if len(data) > MAX_BODY:
            raise AuthorizationError(f"OAuth: the answer of {method} {url} exceeds {MAX_BODY} bytes")
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = None
        return response.status_code, response.headers, parsed

    def get_json(self, url: str) -> dict[str, Any] | None:
        """The JSON object at ``url``, or None when it is not there (any non-200 or non-object)."""
        status, _, parsed = self.request("GET", url)
        return parsed if status == 200 and isinstance(parsed, dict) else None

    def close(self) -> None:
        self.session.close()


# -- challenges -------------------------------------------------------------------------


def parse_bearer_challenge(header: str | None) -> dict[str, str]:
    """The parameters of the ``Bearer`` challenge in a ``WWW-Authenticate`` value.

    >>> parse_bearer_challenge('Bearer error="insufficient_scope", scope="a b"')
    {'error': 'insufficient_scope', 'scope': 'a b'}
    """
    if not header:
        return {}
    match = re.search(r"(?i)(?:^|,)\s*bearer(?:\s+|$)", header)
    if match is None:
        return {}
    params: dict[str, str] = {}
    pos = match.end()
    while pos < len(header):
        param = _PARAM.match(header, pos)
        if param is None or param.end() == pos:
            break  # the next scheme (a bare token) ends the Bearer challenge
        value = param.group(2)
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        params.setdefault(param.group(1).lower(), value)
        pos = param.end()
    return params


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
    no trailing slash (A5)."""
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
    """A1: the challenge's ``resource_metadata``, then the path-based well-known URI, then the root one."""
    parts = urlsplit(server_url)
    base = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [header_url] if header_url else []
    if path:
        urls.append(f"{base}{PRM_PATH}{path}")
    urls.append(f"{base}{PRM_PATH}")
    return list(dict.fromkeys(urls))


def as_metadata_candidates(issuer: str) -> list[str]:
    """A2: RFC 8414 and OpenID Connect discovery URLs for ``issuer``, in the spec's priority order."""
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
    """``(url, document)`` of the first Protected Resource Metadata found (A1), or None."""
    for url in prm_candidates(server_url, header_url):
        doc = http.get_json(url)
        if doc is not None and isinstance(doc.get("authorization_servers"), list):
            return url, doc
    return None


def discover_as(http: Http, issuer: str, *, same_origin: bool = False) -> dict[str, Any] | None:
    """Authorization server metadata for ``issuer`` (A2), or None when no discovery URL has any.

    A document whose ``issuer`` is not *identical* to the one the URL was built
    from is never used (RFC 8414 section 3.3; metadata-issuer-mismatch): it
    could point the flow at an attacker's endpoints. If only such documents
    exist, AuthorizationError says so. ``same_origin`` (LG15, 2025-03-26
    servers, whose metadata location comes from the MCP server's own origin
    rather than from an issuer) accepts any issuer on that origin instead.
    """
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
        raise AuthorizationError(
            f"OAuth: refusing the authorization server metadata of {issuer!r}: its issuer is not identical "
            f"to the issuer it was discovered from ({'; '.join(mismatched)})"
        )
    return None


# -- PKCE, redirect ------------------------------------------------------------------------


def pkce_pair() -> tuple[str, str]:
    """``(code_verifier, S256 code_challenge)`` (RFC 7636; A4): 64 unreserved characters, 384 bits."""
    verifier = secrets.token_urlsafe(48)
    return verifier, s256(verifier)


def s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def check_redirect(redirect_url: str, *, issuer: str, iss_advertised: bool, state: str) -> str:
    """The authorization code from the URL the user-agent was redirected to.

    A6 (RFC 9207 section 2.4): a present ``iss`` must equal the recorded issuer
    by simple string comparison (no case folding, port elision, trailing-slash or
    percent-encoding normalization), and an absent one is refused when the
    server advertised it. This runs before anything else in the response is
    looked at: on a mismatch its ``error`` is neither acted on nor shown.
    """
    params = parse_qs(urlsplit(redirect_url).query, keep_blank_values=True)
    iss = params.get("iss")
    if iss is not None:
        if len(iss) != 1 or iss[0] != issuer:
            raise AuthorizationError(
                f"OAuth: the authorization response came from issuer {iss[0]!r}, not the recorded {issuer!r} "
                "(RFC 9207 mix-up protection); refusing it"
            )
    elif iss_advertised:
        raise AuthorizationError(
            f"OAuth: {issuer} advertises authorization_response_iss_parameter_supported but its "
            "authorization response has no iss parameter (RFC 9207); refusing it"
        )
    if params.get("state") != [state]:
        raise AuthorizationError("OAuth: the authorization response's state does not match the request (A11)")
    if "error" in params:
        description = params.get("error_description", [""])[0]
        raise AuthorizationError(f"OAuth: authorization refused: {params['error'][0]} {description}".rstrip())
    code = params.get("code")
    if not code or not code[0]:
        raise AuthorizationError("OAuth: the authorization response carries no code")
    return code[0]


# -- token endpoint ---------------------------------------------------------------------------


def choose_auth_method(supported: Any, has_secret: bool) -> str:
    """Token endpoint client authentication: what the server supports that this client can do.
    RFC 8414 section 2: an absent list means ``client_secret_basic``."""
    methods = supported if isinstance(supported, list) else ["client_secret_basic"]
    if not has_secret:
        return "none"
    for method in ("client_secret_basic", "client_secret_post"):
        if method in methods:
            return method
    return "none" if "none" in methods else "client_secret_basic"


def token_request(http: Http, endpoint: str, form: dict[str, str], client: Mapping[str, Any]) -> dict[str, Any]:
    """POST ``form`` to the token endpoint with the client's authentication; the token response.

    ``client`` holds ``client_id``, ``client_secret`` and ``auth_method``.
    """
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
    status, _, body = http.request("POST", endpoint, data=form, headers=headers)
    if status != 200 or not isinstance(body, dict) or not isinstance(body.get("access_token"), str):
        error = body.get("error") if isinstance(body, dict) else None
        description = body.get("error_description", "") if isinstance(body, dict) else ""
        raise AuthorizationError(
            f"OAuth: the token endpoint {endpoint} refused {form.get('grant_type')}: "
            f"HTTP {status} {error or ''} {description}".rstrip()
        )
    token_type = str(body.get("token_type", "Bearer"))
    if token_type.lower() != "bearer":
        raise AuthorizationError(f"OAuth: unsupported token_type {token_type!r} from {endpoint} (Bearer only)")
    return body


def register_client(http: Http, endpoint: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """Dynamic Client Registration (RFC 7591; A9): the registration response."""
    status, _, body = http.request("POST", endpoint, json=metadata)
    if status not in (200, 201) or not isinstance(body, dict) or not isinstance(body.get("client_id"), str):
        error = body.get("error") if isinstance(body, dict) else None
        raise AuthorizationError(f"OAuth: dynamic client registration at {endpoint} failed: HTTP {status} {error}")
    return body
