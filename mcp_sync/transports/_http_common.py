"""What the two HTTP transports share: one ``requests.Session``, abortable
exchanges, same-origin redirects, bounded retries, bounded bodies, and the
translation of HTTP failures into mcp_sync errors.

Aborting (H14, and ``close()``): closing a response from another thread does
not wake a thread blocked in ``recv`` on Linux, and a request that is still
waiting for its status line has no response to close yet. So the urllib3
connections of this session are tracked per exchange (:class:`Slot`) and an
abort shuts the socket down, which ends the blocked read at once.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import logging
import socket
import threading
import time
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .._threads import Workers
from .._version import __version__
from ..exceptions import AuthorizationError, ConnectionClosed, MCPError, ProtocolError
from ._sse_stream import SseEvent, TooLarge, UnsupportedEncoding, decoded_chunks, read_bounded, sse_events

log = logging.getLogger("mcp_sync.http")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_REDIRECTS = 5
POOL_MAXSIZE = 64  # kept-alive connections per host
ERROR_BODY_BYTES = 64 * 1024
RETRY_AFTER_CAP = 30.0  # longer Retry-After: give up instead of stalling a caller
MAX_CHALLENGES = 8  # backstop on 401/403 rounds per request; the auth object's own bound is lower
#: Failures raised while reading a body: socket errors, urllib3 wrappers, a read on a closed file.
STREAM_ERRORS = (
    OSError,
    ValueError,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    requests.RequestException,
)


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` with the default port filled in."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or {"http": 80, "https": 443}.get(scheme)


class Aborted(Exception):
    """Internal: the exchange was aborted (cancel, timeout, close); report nothing."""


# -- abortable connections -----------------------------------------------------------

_local = threading.local()


class Slot:
    """One exchange another thread may abort. The worker binds it with :meth:`bound`."""

    __slots__ = ("aborted", "conn", "lock", "wake")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: Any = None
        self.aborted = False
        self.wake = threading.Event()  # set on abort: interrupts backoff sleeps too

    def attach(self, conn: Any) -> None:
        with self.lock:
            if self.aborted:
                raise ConnectionAbortedError("the request was aborted")
            self.conn = conn

    def abort(self) -> None:
        with self.lock:  # held while shutting down, so finish() cannot hand the socket back meanwhile
            self.aborted = True
            self.wake.set()
            sock = getattr(self.conn, "sock", None)
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def finish(self) -> None:
        """The exchange is over: a later abort must not touch the (pooled) connection."""
        with self.lock:
            self.conn = None

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` unless aborted first (then raise Aborted)."""
        if self.wake.wait(seconds):
            raise Aborted


def _track(conn: Any) -> None:
    slot: Slot | None = getattr(_local, "slot", None)
    if slot is not None:
        slot.attach(conn)


class _Tracking:
    """Mixed into urllib3's connections: report each one to the request's slot as it is used."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        _track(self)
        return super().request(*args, **kwargs)  # type: ignore[misc]

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        _track(self)
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _TrackedHTTPConnection(_Tracking, HTTPConnection):
    pass


class _TrackedHTTPSConnection(_Tracking, HTTPSConnection):
    pass


class _TrackedPool(HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


class _TrackingAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _TrackedPool, "https": _TrackedHTTPSPool}


# -- the shared base -----------------------------------------------------------------


class HttpBase:
    """Session, threads and exchanges shared by HttpTransport and SseTransport."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None,
        auth: Any,
        max_message_bytes: int,
        connect_timeout: float,
        max_retries: int,
        name: str | None,
    ) -> None:
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.url = url
        self.headers = dict(headers or {})
        self.auth = auth
        self.max_message_bytes = max_message_bytes
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        parts = urlsplit(url)
        self.name = name or (f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname))
        self.session = requests.Session()
        # Many application threads share one client: keep that many connections for reuse
        # (requests' default of 10 would open and discard one per extra concurrent call).
        adapter = _TrackingAdapter(pool_maxsize=POOL_MAXSIZE)
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)
        # Only encodings decoded_chunks can bound; requests would also offer br/zstd when installed.
        self.session.headers.update({"User-Agent": f"mcp-sync/{__version__}", "Accept-Encoding": "gzip, deflate"})
        self.session.headers.update(self.headers)  # H17: caller headers on every request, GET and DELETE too
        self._lock = threading.Lock()
        self._workers = Workers(self.name)
        self._closing = False
        self._closed_event = threading.Event()

    @property
    def auth_context(self) -> Any:
        """C5: what private cache entries are keyed by: the auth object's ``auth_context``, if it has one."""
        return getattr(self.auth, "auth_context", None)

    # -- threads ---------------------------------------------------------------------

    def _spawn(self, target: Callable[[], None], role: str) -> None:
        """Start a worker that close() will join. Raises ConnectionClosed after close()."""
        if self._closing or self._workers.spawn(target, role) is None:
            raise ConnectionClosed("the HTTP transport is closed")

    def _join_threads(self, timeout: float) -> None:
        self._workers.close(timeout)

    # -- one exchange ------------------------------------------------------------------

    def exchange(
        self,
        method: str,
        url: str,
        slot: Slot,
        *,
        headers: Mapping[str, str],
        body: bytes | None = None,
        unsent_only: bool = False,
        timeout: float | None = None,
    ) -> requests.Response:
        """One HTTP exchange with bounded retries; the response is streamed (caller closes it).

        Retries with exponential backoff only where the request most likely did
        not reach the server: a failed connect, and 502/503/504 (honouring
        Retry-After). ``unsent_only`` (a ``tools/call``) narrows that to failed
        connects and 503, which says the server did not process it.
        Raises ConnectionClosed, ProtocolError (cross-origin redirect) or Aborted.
        """
        statuses = (503,) if unsent_only else (502, 503, 504)
        for attempt in range(self.max_retries + 1):
            if slot.aborted:
                raise Aborted
            last = attempt == self.max_retries
            try:
                response = self._follow_authorized(method, url, slot, headers, body, timeout)
            except requests.RequestException as exc:
                if slot.aborted:
                    raise Aborted from exc
                if last or not (
                    _connect_failure(exc) or (not unsent_only and isinstance(exc, requests.ConnectionError))
                ):
                    raise ConnectionClosed(f"{method} {url} failed: {exc}") from exc
                slot.sleep(min(0.1 * 2**attempt, 2.0))
                continue
            if response.status_code in statuses and not last:
                delay = _retry_after(response, default=min(0.1 * 2**attempt, 2.0))
                if delay is not None:
                    response.close()
                    log.debug("mcp_sync: HTTP %s from %s; retrying in %.2f s", response.status_code, url, delay)
                    slot.sleep(delay)
                    continue
            return response
        raise AssertionError("unreachable")

    def _follow_authorized(
        self, method: str, url: str, slot: Slot, headers: Mapping[str, str], body: bytes | None, timeout: float | None
    ) -> requests.Response:
        """:meth:`_follow`, letting an OAuth-style ``auth`` answer 401/403 challenges (A7, A8).

        ``auth.handle_challenge(response, attempt)`` runs the authorization flow
        (or raises AuthorizationError) and returns True to have the request sent
        again with the new token; ``auth`` bounds the rounds, MAX_CHALLENGES is a
        backstop. Plain ``requests`` auth objects have no such method.
        """
        handle = getattr(self.auth, "handle_challenge", None)
        for attempt in range(MAX_CHALLENGES + 1):
            response = self._follow(method, url, slot, headers, body, timeout)
            if handle is None or response.status_code not in (401, 403) or attempt == MAX_CHALLENGES:
                return response
            try:
                again = handle(response, attempt)
            except BaseException:
                response.close()
                raise
            if not again:
                return response
            response.close()
            if slot.aborted:  # cancelled or timed out while the flow ran
                raise Aborted
        raise AssertionError("unreachable")

    def _follow(
        self, method: str, url: str, slot: Slot, headers: Mapping[str, str], body: bytes | None, timeout: float | None
    ) -> requests.Response:
        """Send, following redirects only within the origin (credentials never leave it)."""
        _local.slot = slot
        try:
            for _ in range(MAX_REDIRECTS + 1):
                response = self.session.request(
                    method,
                    url,
                    data=body,
                    headers=dict(headers),
                    auth=self.auth,
                    stream=True,
                    allow_redirects=False,
                    timeout=(self.connect_timeout, timeout),
                )
                location = response.headers.get("Location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    return response
                response.close()
                target = urljoin(url, location)
                if origin(target) != origin(url):
                    raise ProtocolError(
                        f"refusing the redirect from {url} to another origin ({target}): "
                        "headers and credentials must not leave the server's origin"
                    )
                url = target
            raise ProtocolError(f"{method} {url}: more than {MAX_REDIRECTS} redirects")
        finally:
            _local.slot = None

    # -- reading bodies ------------------------------------------------------------------

    def read_json(self, response: requests.Response) -> Any:
        """The parsed JSON body, bounded by max_message_bytes (also after decompression)."""
        try:
            chunks = decoded_chunks(response.raw, response.headers.get("Content-Encoding"))
            data = read_bounded(chunks, self.max_message_bytes)
        except (TooLarge, UnsupportedEncoding) as exc:
            raise ProtocolError(f"response from {self.url}: {exc}") from exc
        except STREAM_ERRORS as exc:
            raise ConnectionClosed(f"the response from {self.url} broke off: {exc}") from exc
        try:
            return json.loads(data)
        except ValueError as exc:
            raise ProtocolError(f"the response from {self.url} is not JSON: {data[:200]!r}") from exc

    def events(self, response: requests.Response) -> Iterator[SseEvent]:
        """SSE events of ``response``; one event may not exceed max_message_bytes (TooLarge)."""
        try:
            chunks = decoded_chunks(response.raw, response.headers.get("Content-Encoding"))
        except UnsupportedEncoding as exc:
            raise ProtocolError(f"response from {self.url}: {exc}") from exc
        return sse_events(chunks, self.max_message_bytes)

    def error_for(self, response: requests.Response, what: str) -> tuple[Any, MCPError]:
        """``(parsed body or None, error)`` for a failed status: status, reason and the first bytes."""
        try:
            data = read_bounded(
                decoded_chunks(response.raw, response.headers.get("Content-Encoding")), ERROR_BODY_BYTES
            )
        except (TooLarge, UnsupportedEncoding, *STREAM_ERRORS):
            data = b""
        try:
            parsed: Any = json.loads(data) if data else None
        except ValueError:
            parsed = None
        status = response.status_code
        message = f"{what}: HTTP {status} {response.reason or ''} from {self.url}".rstrip()
        if data:
            message += f": {data[:300].decode('utf-8', 'replace')}"
        if status in (401, 403):
            return parsed, AuthorizationError(message)
        return parsed, ProtocolError(message)

    def close_session(self) -> None:
        try:
            self.session.close()
        except Exception:  # closing must not fail because a pool is half torn down
            log.debug("mcp_sync: closing the requests session failed", exc_info=True)


def content_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower()


def jsonrpc_error(parsed: Any) -> dict[str, Any] | None:
    """The ``error`` member of a JSON-RPC error body, if that is what ``parsed`` is."""
    if (
        isinstance(parsed, dict)
        and isinstance(parsed.get("error"), dict)
        and isinstance(parsed["error"].get("code"), int)
    ):
        return dict(parsed["error"])
    return None


def _connect_failure(exc: requests.RequestException) -> bool:
    """True when nothing reached the server: a refused or timed-out connect, a failed DNS lookup."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def _retry_after(response: requests.Response, default: float) -> float | None:
    """Seconds to wait before a retry, or None when the server asks for longer than we wait."""
    value = response.headers.get("Retry-After")
    if value is None:
        return default
    value = value.strip()
    if value.isdigit():
        delay = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return default
        delay = when.timestamp() - time.time()
    return max(0.0, delay) if delay <= RETRY_AFTER_CAP else None
