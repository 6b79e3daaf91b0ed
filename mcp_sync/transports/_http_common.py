"""What the two HTTP transports share: one ``requests.Session``, abortable
exchanges, same-origin redirects, bounded retries, bounded bodies, and the
translation of HTTP failures into mcp_sync errors.

Aborting (cancel, timeout, ``close()``): closing a response from another
thread does not wake a thread blocked in ``recv`` on Linux, and a request that
is still connecting or waiting for its status line has no response to close
yet. So the sockets of this session are tracked per exchange (:class:`Slot`)
from the moment they are created, and an abort shuts the socket down, which
ends a blocked connect or read at once. The socket itself is kept, not only
the connection: for a close-delimited response (``Connection: close``, no
length, no chunking) ``http.client`` drops the connection's reference to it
as soon as the headers are read.
"""

from __future__ import annotations

import collections
import contextlib
import email.utils
import errno
import http.client
import json
import logging
import math
import re
import socket
import ssl
import threading
import time
from typing import Any, Callable, Iterator, Mapping
from urllib.parse import urljoin, urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from requests.cookies import RequestsCookieJar, extract_cookies_to_jar, merge_cookies
from requests.hooks import dispatch_hook
from requests.structures import CaseInsensitiveDict
from requests.utils import get_auth_from_url, get_netrc_auth
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util import connection as urllib3_connection
from urllib3.util.timeout import _DEFAULT_TIMEOUT

from .._headers import AUTHORIZATION
from .._options import check_request_headers
from .._threads import Workers, join_quietly, spawn
from .._urls import redact_url
from .._version import __version__
from ..exceptions import (
    AuthorizationError,
    ConnectionClosed,
    MCPError,
    ProtocolError,
    ServerUnavailable,
    ServerUnreachable,
)
from ._sse_stream import BadBody, SseEvent, decoded_chunks, read_bounded, sse_events
from .base import BaseTransport

log = logging.getLogger("mcp_sync.http")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
MAX_REDIRECTS = 5
POOL_MAXSIZE = 64  # kept-alive connections per host
#: A pooled connection idle longer than this is closed instead of reused (#32): a server ends an
#: idle kept-alive connection on a timer (uvicorn, Node, Apache, hypercorn: 5 s), and a request
#: written just as that timer fires is reset after it went out: for a tools/call that proves
#: nothing, so it fails. 3 s leaves 2 s of margin for a loaded machine; the cost is one new
#: connection for a request after 3 s of quiet, which the server would have asked for at 5.
MAX_IDLE_REUSE_S = 3.0
ERROR_BODY_BYTES = 64 * 1024
RETRY_AFTER_CAP = 30.0  # longer Retry-After: give up instead of stalling a caller
#: The most ServerUnavailable.retry_after says (one hour): a server's date ten years ahead must
#: not become a sleep of ten years in an application that honours the hint.
RETRY_AFTER_HINT_CAP = 3600.0
#: Statuses that say "not now" (rate limit, gateway, overload): retried while safe, then ServerUnavailable
UNAVAILABLE = frozenset({429, 502, 503, 504})
#: Read timeout of a notification's or a response's POST: the server only acknowledges those.
ONEWAY_TIMEOUT = 30.0
MAX_CHALLENGES = 8  # backstop on 401/403 rounds per request; the auth object's own bound is lower
#: Failures raised while sending a request or reading a body: socket errors, urllib3 wrappers
#: (some reach the caller unwrapped by requests, e.g. a malformed header), a read on a closed file.
STREAM_ERRORS = (
    OSError,
    ValueError,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    requests.RequestException,
)


#: Requests that may be sent again after a failure that does not prove the server saw
#: nothing (a 502/503/504, a reset mid-exchange): reads and lists, and the handshakes (an
#: initialize the server never completed leaves at most an unused session behind). Any
#: other request (tools/call above all) is sent again only when it provably never left:
#: a refused or timed-out connect, a failed DNS lookup.
SAFE_TO_RESEND = frozenset(
    {
        "initialize",
        "server/discover",
        "ping",
        "tools/list",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "completion/complete",
        "tasks/get",
        "tasks/list",
        "tasks/result",
        "logging/setLevel",
    }
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: What makes a URL mean different things to different parsers: backslashes (urllib3
#: reads ``\\`` as a path start, urlsplit does not), whitespace and control characters.
_AMBIGUOUS = re.compile(r"[\\\x00-\x20\x7f]")


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` a request to ``url`` goes to, as the HTTP stack parses it
    (urllib3's ``parse_url``, the parser it connects with), default port filled in.

    Raises ValueError for a URL the parsers may read differently (a backslash,
    whitespace or a control character, or a disagreement between ``urlsplit``
    and ``parse_url``): comparing such URLs proves nothing.

    Example::

        >>> origin("HTTP://Example.com/mcp")
        ('http', 'example.com', 80)
    """
    if _AMBIGUOUS.search(url):
        raise ValueError("it contains a backslash, whitespace or a control character")
    try:
        split = urlsplit(url)
        split_port = split.port
        parsed = urllib3.util.parse_url(url)
    except ValueError as exc:  # urllib3's LocationParseError is a ValueError too
        raise ValueError(f"it does not parse: {exc}") from None
    scheme = (parsed.scheme or "").lower()
    host = (parsed.host or "").lower().strip("[]")
    port = parsed.port or _DEFAULT_PORTS.get(scheme)
    seen_by_urlsplit = (split.scheme.lower(), (split.hostname or "").lower(), split_port or _DEFAULT_PORTS.get(scheme))
    if (scheme, host, port) != seen_by_urlsplit or bool(parsed.auth) != ("@" in split.netloc):
        raise ValueError("its parts read differently to different URL parsers")
    return scheme, host, port


def same_origin(reference: str, base: str, what: str) -> str:
    """``reference`` resolved against ``base``, if it is safe to send this connection's
    headers there; otherwise a ProtocolError.

    Safe: the same scheme, host and port as ``base``, parsed the way the HTTP
    stack will connect, with no user info and nothing ambiguous, in the
    reference as the server wrote it (``urljoin`` silently drops tabs and
    newlines) and in the resolved URL.
    """
    target = reference
    try:
        if _AMBIGUOUS.search(reference.strip(" ")):
            raise ValueError("it contains a backslash, whitespace or a control character")
        target = urljoin(base, reference.strip(" "))
        target_origin = origin(target)
        if "@" in urlsplit(target).netloc:
            raise ValueError("it carries user info (user:password@)")
        if target_origin == origin(base):
            return target
        problem = "it is on another origin"
    except ValueError as exc:
        problem = str(exc)
    raise ProtocolError(
        f"refusing {what} {redact_url(target)!r}: {problem}; headers and credentials must not leave the server's origin"
    )


def auth_headers(auth: Any, url: str) -> dict[str, str]:
    """The headers ``auth`` adds to a request to ``url`` (#19.1: a bound view's credentials, sent
    on the client's shared connection): :class:`mcp_sync.OAuth`'s current token, or what a
    ``requests`` auth object or callable sets on a prepared request; ``(user, password)`` is
    Basic auth. Read afresh for each request."""
    headers_for = getattr(auth, "headers_for", None)  # mcp_sync.OAuth: no request needed
    if callable(headers_for):
        return dict(headers_for(url))
    if isinstance(auth, tuple) and len(auth) == 2:
        auth = requests.auth.HTTPBasicAuth(*auth)
    prepared = requests.Request("POST", url).prepare()
    before = dict(prepared.headers)
    result = auth(prepared)
    after = getattr(result, "headers", prepared.headers)
    return {name: value for name, value in after.items() if before.get(name) != value}


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps, nearest first, each once: requests wraps urllib3, which wraps the
    socket or TLS error (in ``reason``, ``args``, ``__cause__`` or ``__context__``)."""
    seen: set[int] = set()
    todo: collections.deque[object] = collections.deque([exc])
    while todo:
        current = todo.popleft()
        if not isinstance(current, BaseException) or id(current) in seen:
            continue  # None, or a string: ssl.SSLError's reason is one
        seen.add(id(current))
        yield current
        todo.extend((getattr(current, "reason", None), current.__cause__, current.__context__, *current.args))


def describe_failure(exc: BaseException) -> str:
    """What went wrong with a connection, for a user: no library class names.

    Follows the chain of wrapped exceptions (requests wraps urllib3, which
    wraps the socket error) down to the cause that explains it.
    """
    # First: urllib3's NewConnectionError is a ConnectTimeoutError too, but requests raises
    # ConnectTimeout only for a connect that timed out (its chain says no more than "timed out").
    if isinstance(exc, requests.ConnectTimeout):
        return "connecting timed out"
    for current in _causes(exc):
        if isinstance(current, socket.gaierror):
            return "the host name could not be resolved"
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        if isinstance(current, http.client.RemoteDisconnected):  # a ConnectionResetError too: first
            return "the server closed the connection without answering"
        if isinstance(current, ConnectionResetError):
            return "the connection was reset by the server"
        if isinstance(current, http.client.IncompleteRead):
            return "the connection broke off in the middle of the response"
        if isinstance(current, (requests.exceptions.InvalidHeader, urllib3.exceptions.InvalidHeader)):
            return f"the server's answer has a malformed header: {current}"
        if isinstance(current, http.client.HTTPException):
            return "the server's answer is not valid HTTP"
        if isinstance(current, ssl.SSLCertVerificationError):
            return f"its TLS certificate was not accepted: {current.verify_message}"
        if isinstance(current, ssl.SSLError):
            return f"TLS failed: {current.reason or current}"
        if isinstance(current, TimeoutError):
            return "timed out"
        if type(current) is OSError and current.errno is not None:
            return (current.strerror or errno.errorcode.get(current.errno, "error")).lower()
    if isinstance(exc, (requests.Timeout, urllib3.exceptions.TimeoutError)):  # a timeout on a non-blocking read
        return "timed out"
    return "the connection failed"


class Aborted(Exception):
    """Internal: the exchange was aborted (cancel, timeout, close); report nothing."""


# -- abortable connections -----------------------------------------------------------

_local = threading.local()


class _RedactExchangeUrls(logging.Filter):
    """urllib3 logs each request's path and query at DEBUG; on a thread that is running one of
    our exchanges, its query values are replaced by ``***`` (other users of urllib3 in the
    process are left alone)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(_local, "slot", None) is not None and isinstance(record.args, tuple):
            record.args = tuple(
                redact_url(arg) if isinstance(arg, str) and ("?" in arg or "@" in arg) else arg for arg in record.args
            )
        return True


_urllib3_log = logging.getLogger("urllib3.connectionpool")
# Once per process: after importlib.reload the filter already there is of the old class (by name, then).
if not any(type(f).__name__ == _RedactExchangeUrls.__name__ for f in _urllib3_log.filters):
    _urllib3_log.addFilter(_RedactExchangeUrls())


class Slot:
    """One exchange another thread may abort. The worker binds it with :meth:`bound`."""

    __slots__ = ("aborted", "conn", "deadline", "lock", "sock", "unsent", "wake")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.conn: Any = None  # the urllib3 connection in use, while this exchange owns it
        self.sock: socket.socket | None = None  # its socket, kept even once http.client lets go of it
        self.aborted = False
        self.wake = threading.Event()  # set on abort: interrupts backoff sleeps too
        self.deadline: float | None = None  # when Deadlines aborts it (time.monotonic()): an auth flow keeps to it
        #: The last request of this exchange was not fully written (its write, or the connect
        #: before it, failed): the server cannot have read all of it, so it cannot have run it.
        self.unsent = False

    def attach(self, conn: Any) -> None:
        """This exchange now uses ``conn`` (and its socket, if connected)."""
        with self.lock:
            if self.aborted:
                raise ConnectionAbortedError("the request was aborted")
            conn._mcp_sync_slot = self  # the owner: an abort of another exchange leaves it alone
            self.conn = conn
            if conn.sock is not None:
                self.sock = conn.sock

    def attach_socket(self, sock: socket.socket) -> None:
        """A socket this exchange is connecting: an abort interrupts the connect."""
        with self.lock:
            if self.aborted:
                raise ConnectionAbortedError("the request was aborted")
            self.sock = sock

    def abort(self) -> None:
        # Held while shutting down, so that the connection cannot go back to the pool meanwhile
        # (release() takes this lock too): what this shuts down is this exchange's alone.
        with self.lock:
            self.aborted = True
            self.wake.set()
            if self.conn is not None and getattr(self.conn, "_mcp_sync_slot", None) is not self:
                return  # defence in depth: release() already took the connection from this slot
            if self.conn is not None:  # release() closes it instead of pooling a shut-down socket
                self.conn._mcp_sync_shut = True
            # The connection's socket while it has one (for TLS, the wrapped socket: wrapping
            # detached the raw one we saw connect), and the one we kept, for a connect still
            # in progress or a close-delimited response that http.client let go of.
            for sock in {id(s): s for s in (getattr(self.conn, "sock", None), self.sock) if s is not None}.values():
                try:  # wakes a recv or a connect blocked in another thread (Linux: SYN_SENT too)
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def release(self, conn: Any) -> bool:
        """``conn`` is going back to the pool (the pool calls this): from now on it may serve
        another exchange, so this slot lets go of it, and a later abort of this exchange
        leaves it alone. urllib3 hands a connection back the moment its body has been read,
        before this exchange has finished (a cancel or a deadline can still come after the
        answer): an abort that shut the socket down then would cut the next request sent on
        it, which urllib3's dropped-connection check, made before that, lets through.

        True when an abort of this exchange shut the connection's socket down: it must be
        closed, not pooled, so that no request is ever sent on it (urllib3's check would
        catch most such sockets, but not one shut down after it looked)."""
        with self.lock:
            if getattr(conn, "_mcp_sync_slot", None) is self:
                conn._mcp_sync_slot = None
            if self.conn is conn:
                self.conn = None
                self.sock = None  # this connection's (a socket http.client let go of is at its end too)
            shut: bool = conn.__dict__.pop("_mcp_sync_shut", False)
            return shut

    def set_socket_timeout(self, seconds: float) -> bool:
        """Set this exchange's socket's timeout, if it still holds one (False otherwise): once the
        connection went back to the pool its socket is another exchange's to time."""
        with self.lock:
            sock = self.sock
            if sock is None or self.aborted:
                return False
            try:
                sock.settimeout(seconds)
            except OSError:
                return False
            return True

    def finish(self) -> None:
        """The exchange is over: a later abort must not touch the (pooled) connection."""
        with self.lock:
            self.conn = None
            self.sock = None

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` unless aborted first (then raise Aborted)."""
        if self.wake.wait(seconds):
            raise Aborted


class Deadlines:
    """Aborts the exchanges that outlive their deadline, from one thread per transport.

    An exchange made on the calling thread cannot watch the clock while it waits for
    the server; this thread does it for all of them, and a late exchange ends as a
    cancelled one does (its socket is shut down). Cheap per exchange: adding and
    removing are dictionary operations, and the thread is woken only when a new
    deadline is earlier than the one it sleeps until (requests with the same timeout,
    one after the other, wake it about once a second). Started on first use, it ends
    when it finds nothing to watch, and ``close()`` ends it.
    """

    #: Longest sleep of the thread: how soon it notices it has nothing left to watch.
    IDLE_CHECK_S = 1.0

    def __init__(self, server: str) -> None:
        self._server = server
        self._cond = threading.Condition(threading.Lock())
        self._slots: dict[Slot, float] = {}
        self._wake_at = math.inf
        self._thread: threading.Thread | None = None
        self._closed = False

    def add(self, slot: Slot, deadline: float) -> None:
        """Abort ``slot`` at ``deadline`` (``time.monotonic()``) unless :meth:`discard` comes first."""
        with self._cond:
            if self._closed:
                return
            self._slots[slot] = deadline
            slot.deadline = deadline
            if self._thread is None:
                self._thread = spawn(self._run, "deadline", self._server)
            elif deadline < self._wake_at:
                self._cond.notify()

    def discard(self, slot: Slot) -> None:
        with self._cond:
            self._slots.pop(slot, None)

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                expired = [slot for slot, deadline in self._slots.items() if deadline <= now]
                for slot in expired:
                    del self._slots[slot]
                    slot.abort()  # takes only the slot's own lock; never calls back here
                if not self._slots and not expired:  # idle: end; the next add() starts a new thread
                    break
                self._wake_at = min(self._slots.values(), default=now)
                # Awake at least every IDLE_CHECK_S, so that an idle thread ends soon (a transport
                # nobody closes keeps no thread), while calls in a row rarely wake it.
                self._cond.wait(max(0.0, min(self._wake_at - now, self.IDLE_CHECK_S)))
            self._thread = None
            self._wake_at = math.inf

    def close(self, timeout: float) -> None:
        with self._cond:
            self._closed = True
            self._slots.clear()
            self._cond.notify()
            thread = self._thread
        join_quietly(thread, timeout)


def _track(conn: Any) -> None:
    slot: Slot | None = getattr(_local, "slot", None)
    if slot is not None:
        slot.attach(conn)


def _connect_tracked(conn: Any, slot: Slot) -> socket.socket:
    """``urllib3.util.connection.create_connection`` with each socket reported to ``slot``
    before it connects, so that an abort (close()) interrupts a connect that never completes."""
    host, port = conn._dns_host, conn.port
    error: OSError | None = None
    for family, kind, proto, _, address in socket.getaddrinfo(
        host.strip("[]"), port, urllib3_connection.allowed_gai_family(), socket.SOCK_STREAM
    ):
        sock = socket.socket(family, kind, proto)
        try:
            slot.attach_socket(sock)
            for option in conn.socket_options or ():
                sock.setsockopt(*option)
            if conn.timeout is not _DEFAULT_TIMEOUT:  # pragma: no branch - requests always passes a timeout
                sock.settimeout(conn.timeout)
            sock.connect(address)  # (no source_address: requests never sets one on its pools)
            return sock
        except OSError as exc:
            error = exc
            sock.close()
            if slot.aborted:
                break
    raise error if error is not None else OSError("getaddrinfo returned nothing")


class _Tracking:
    """Mixed into urllib3's connections: report each one (and its socket, from before it
    connects) to the request's slot as it is used."""

    def _new_conn(self) -> socket.socket:
        slot: Slot | None = getattr(_local, "slot", None)
        if slot is None:
            return super()._new_conn()  # type: ignore[misc, no-any-return]
        conn: Any = self
        try:
            return _connect_tracked(conn, slot)
        except socket.gaierror as exc:  # the same translation as urllib3's own _new_conn
            raise urllib3.exceptions.NameResolutionError(conn.host, conn, exc) from exc
        except TimeoutError as exc:
            raise urllib3.exceptions.ConnectTimeoutError(
                conn, f"Connection to {conn.host} timed out. (connect timeout={conn.timeout})"
            ) from exc
        except OSError as exc:
            raise urllib3.exceptions.NewConnectionError(conn, f"Failed to establish a new connection: {exc}") from exc

    def request(self, *args: Any, **kwargs: Any) -> Any:
        _track(self)
        conn: Any = self
        pooled_at = conn.__dict__.pop("_mcp_sync_pooled_at", None)
        slot: Slot | None = getattr(_local, "slot", None)
        if slot is None:
            return super().request(*args, **kwargs)  # type: ignore[misc]
        # Seen here, not by the caller: urllib3 swallows a reset or a broken pipe while writing
        # (a server may answer early, then close) and reports only the failed read that follows.
        # urllib3 writes the headers, then the body, each with sendall, which raises only with
        # bytes still unsent: the server never had the whole request (Content-Length says how
        # much it waits for), so it cannot have run it (#29.2).
        slot.unsent = True
        if conn.sock is not None and conn.proxy is None:
            # A kept-alive connection the server closed (or shut down by an abort) after urllib3
            # looked at it in the pool: under many threads that look can be milliseconds old. A
            # request written now would go out, then read the close as "no answer", which for a
            # tools/call proves nothing. So is one idle long enough that the server may be
            # closing it right now (MAX_IDLE_REUSE_S). Closed here, as urllib3 does when its look
            # sees it, the request goes out on a new connection (connected below), whatever its
            # method, and costs no retry (#29.2). (A connection through a proxy is left to
            # urllib3: its tunnel is set up before this.)
            idle_too_long = pooled_at is not None and time.monotonic() - pooled_at > MAX_IDLE_REUSE_S
            if idle_too_long or not conn.is_connected:
                conn.close()
        result = super().request(*args, **kwargs)  # type: ignore[misc]
        slot.unsent = False
        return result

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        _track(self)  # keeps the socket: a close-delimited response makes http.client drop it
        return super().getresponse(*args, **kwargs)  # type: ignore[misc]


class _TrackedHTTPConnection(_Tracking, HTTPConnection):
    pass


class _TrackedHTTPSConnection(_Tracking, HTTPSConnection):
    pass


class _Releasing:
    """Mixed into urllib3's pools: a connection going back to the pool is first taken from the
    exchange that used it (:meth:`Slot.release`), under that exchange's lock, so that an abort
    of that exchange can no longer reach it; one whose socket such an abort shut down is
    closed (the pool reconnects it on its next use) instead of being handed out again."""

    def _put_conn(self, conn: Any) -> None:
        slot: Slot | None = getattr(conn, "_mcp_sync_slot", None) if conn is not None else None
        if slot is not None and slot.release(conn):
            conn.close()
        if conn is not None:
            conn._mcp_sync_pooled_at = time.monotonic()  # how long it idles is checked before reuse
        super()._put_conn(conn)  # type: ignore[misc]


class _TrackedPool(_Releasing, HTTPConnectionPool):
    ConnectionCls = _TrackedHTTPConnection


class _TrackedHTTPSPool(_Releasing, HTTPSConnectionPool):
    ConnectionCls = _TrackedHTTPSConnection


def close_pools_on_clear(manager: Any) -> Any:
    """Make ``manager`` (a urllib3 PoolManager) close each pool it drops or clears.

    urllib3 2's PoolManager.clear() (what ``Session.close()`` ends in) only forgets its pools:
    their idle connections close when the pool is garbage collected, which can be long after
    close() when a pool sits in a reference cycle (a dead exception's traceback holds one
    after an aborted exchange): about 25 sockets stayed open after a load test (#22.4). A
    connection in use when its pool closes is closed when it is handed back."""
    manager.pools.dispose_func = _close_pool
    return manager


def _close_pool(pool: Any) -> None:
    pool.close()


class _TrackingAdapter(HTTPAdapter):
    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _TrackedPool, "https": _TrackedHTTPSPool}
        close_pools_on_clear(self.poolmanager)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        return close_pools_on_clear(super().proxy_manager_for(proxy, **proxy_kwargs))


class _Session(requests.Session):
    """A Session that never looks at redirects: :meth:`HttpBase._follow` follows them itself,
    within the origin. (With ``allow_redirects=False`` requests still prepares the next
    request, and a hostile Location can make that raise before anyone checked it.)"""

    def get_redirect_target(self, resp: requests.Response) -> str | None:  # pragma: no cover - see below
        # Defence in depth: _Sender's fast path sends through the adapter and never asks; only
        # Session.send would, should this session ever be sent through the ordinary way.
        return None


# -- the shared base -----------------------------------------------------------------


class HttpBase(BaseTransport):
    """Session, threads and exchanges shared by HttpTransport and SseTransport."""

    per_request_headers = True  # send(..., headers=) goes out with that request (#19.1)

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
        session: requests.Session | None = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> None:
        if urlsplit(url).scheme not in ("http", "https"):
            raise ValueError(f"not an http(s) URL: {redact_url(url)!r}")
        if not urlsplit(url).hostname:  # "http://:8080/mcp" would fail at every request, far from here
            raise ValueError(f"the URL names no host: {redact_url(url)!r} (e.g. http://localhost:8080/mcp)")
        try:
            origin(url)
        except ValueError as exc:
            raise ValueError(f"ambiguous URL {redact_url(url)!r}: {exc}") from None
        self.url = url
        self.safe_url = redact_url(url)  # what messages, logs and reprs show
        self.target = _target_of(url)
        self.headers = check_request_headers(headers, type(self).__name__, none_leaves_out=True) or {}
        self.auth = auth
        self.max_message_bytes = max_message_bytes
        self.connect_timeout = connect_timeout
        self.max_retries = max_retries
        parts = urlsplit(url)
        self.name = name or (f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname))
        self.verify = verify
        self.cert = cert
        self.proxies = dict(proxies) if proxies is not None else None
        self.owns_session = session is None
        if session is None:
            session = _Session()
            # Many application threads share one client: keep that many connections for reuse
            # (requests' default of 10 would open and discard one per extra concurrent call).
            adapter = _TrackingAdapter(pool_maxsize=POOL_MAXSIZE)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        self.session = session  # a caller's session is used as is: its adapters, hooks, auth and settings
        #: On every request (POST, GET stream, DELETE), over the session's own headers: only the
        #: encodings decoded_chunks can bound (requests would also offer br/zstd when installed),
        #: then the caller's headers (H17).
        self.request_headers = {"User-Agent": f"mcp-sync/{__version__}", "Accept-Encoding": "gzip, deflate"}
        self.request_headers.update(self.headers)
        #: What a request carrying its own credential (its headers name Authorization: a call's
        #: ``headers=``, a bound view's) goes out over: the client's headers without its own.
        self.request_headers_without_credential = {
            name: value for name, value in self.request_headers.items() if name != AUTHORIZATION
        }
        self._senders: dict[str, _Sender] = {}  # per URL: what requests would work out on every call
        self._lock = threading.Lock()
        self._workers = Workers(self.name)
        self._closing = False
        self._closed_event = threading.Event()
        self._oneway: set[Slot] = set()  # exchanges on calling threads, aborted by close()

    @property
    def auth_context(self) -> Any:
        """What private cache entries are keyed by: the auth object's ``auth_context``, if it has one."""  # C5
        return getattr(self.auth, "auth_context", None)

    # -- threads ---------------------------------------------------------------------

    def _spawn(self, target: Callable[[], None], role: str) -> None:
        """Start a worker that close() will join. Raises ConnectionClosed after close()."""
        if self._closing or self._workers.spawn(target, role) is None:
            raise ConnectionClosed("the HTTP transport is closed")

    def _join_threads(self, timeout: float) -> None:
        self._workers.close(timeout)

    # -- one exchange ------------------------------------------------------------------

    @contextlib.contextmanager
    def _oneway_slot(self) -> Iterator[Slot]:
        """A slot for an exchange made on the calling thread, aborted by close(); an exchange
        cut short by close() raises ConnectionClosed."""
        slot = Slot()
        with self._lock:
            if self._closing:
                raise ConnectionClosed("the HTTP transport is closed")
            self._oneway.add(slot)
        try:
            yield slot
        except Aborted as exc:
            raise ConnectionClosed("the HTTP transport was closed") from exc
        finally:
            with self._lock:
                self._oneway.discard(slot)

    def exchange(
        self,
        method: str,
        url: str,
        slot: Slot,
        *,
        headers: Mapping[str, str | None],
        body: bytes | None = None,
        safe_to_resend: bool = True,
        timeout: float | None = None,
    ) -> requests.Response:
        """One HTTP exchange with bounded retries; the response is streamed (caller closes it).

        A request is sent again, with exponential backoff, when it provably never
        reached the server (see :func:`connection_failure` for the rule): a refused
        or timed-out connect, a failed DNS lookup, a write that failed before the
        whole request was sent. Only when ``safe_to_resend`` (a read, a list, a GET)
        also after failures that prove nothing either way: a connection reset or
        ended after the request was written, or 429/502/503/504 (honouring
        Retry-After). A ``tools/call`` answered 503 is therefore never sent twice.
        Raises ServerUnreachable (what is left of connection failures),
        ConnectionClosed (a refused TLS certificate), ProtocolError (cross-origin
        redirect) or Aborted.
        """
        for attempt in range(self.max_retries + 1):
            if slot.aborted:
                raise Aborted
            last = attempt == self.max_retries
            try:
                response = self._follow_authorized(method, url, slot, headers, body, timeout)
            except MCPError:
                raise
            except STREAM_ERRORS as exc:
                if slot.aborted:
                    raise Aborted from exc
                never_sent = _connect_failure(exc) or slot.unsent
                resend = never_sent or (safe_to_resend and isinstance(exc, requests.ConnectionError))
                if last or not resend or _certificate_refused(exc):  # a refused certificate stays refused
                    raise connection_failure(f"{method} {redact_url(url)} failed", exc, may_have_run=not never_sent,
                                             safe_to_resend=safe_to_resend) from exc
                log.debug("mcp_sync: %s %s failed (%s); sending it again", method, redact_url(url),
                          describe_failure(exc))
                slot.sleep(min(0.1 * 2**attempt, 2.0))
                continue
            if safe_to_resend and response.status_code in UNAVAILABLE and not last:
                delay = _retry_after(response, default=min(0.1 * 2**attempt, 2.0))
                if delay is not None:
                    response.close()
                    log.debug(
                        "mcp_sync: HTTP %s from %s; retrying in %.2f s", response.status_code, redact_url(url), delay
                    )
                    slot.sleep(delay)
                    continue
            return response
        raise AssertionError("unreachable")

    def _follow_authorized(
        self, method: str, url: str, slot: Slot, headers: Mapping[str, str | None], body: bytes | None,
        timeout: float | None,
    ) -> requests.Response:
        """:meth:`_follow`, letting an OAuth-style ``auth`` answer 401/403 challenges.

        ``auth.handle_challenge(response, attempt)`` runs the authorization flow
        (or raises AuthorizationError) and returns True to have the request sent
        again with the new token; ``auth`` bounds the rounds, MAX_CHALLENGES is a
        backstop. Plain ``requests`` auth objects have no such method.
        """
        # A request with its own credential (a view's) is not the client's to log in again for.
        handle = None if AUTHORIZATION in headers else getattr(self.auth, "handle_challenge", None)
        # An auth object that declares it (mcp_sync.OAuth) keeps its whole flow to the request's deadline.
        bounded = handle is not None and getattr(self.auth, "challenge_takes_deadline", False) is True
        for attempt in range(MAX_CHALLENGES + 1):
            response = self._follow(method, url, slot, headers, body, timeout)
            if handle is None or response.status_code not in (401, 403) or attempt == MAX_CHALLENGES:
                return response
            try:
                if bounded and slot.deadline is not None:
                    again = handle(response, attempt, deadline=slot.deadline)
                else:
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
        self, method: str, url: str, slot: Slot, headers: Mapping[str, str | None], body: bytes | None,
        timeout: float | None,
    ) -> requests.Response:
        """Send, following redirects only within the origin (credentials never leave it)."""
        _local.slot = slot
        try:
            for _ in range(MAX_REDIRECTS + 1):
                response = self.send_once(method, url, headers, body, timeout)
                location = response.headers.get("Location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    return response
                response.close()
                url = same_origin(location, url, f"the redirect from {redact_url(url)} to")
            raise ProtocolError(f"{method} {redact_url(url)}: more than {MAX_REDIRECTS} redirects")
        finally:
            _local.slot = None

    def send_once(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str | None],
        body: bytes | None,
        timeout: float | None,
        *,
        connect_timeout: float | None = None,
    ) -> requests.Response:
        """One request, streamed, redirects not followed, exactly as ``session.request`` would send it.

        What does not change between the calls of a client (the environment's proxies,
        ``no_proxy``, CA bundle and netrc, the adapter for the URL) is worked out once per
        URL (:class:`_Sender`); the auth object still runs on every request.
        """
        sender = self._senders.get(url)
        if sender is None:
            sender = _Sender(self, url)
            if len(self._senders) < 16:  # the server's URL, a redirect target or two, an SSE endpoint
                self._senders[url] = sender
        connect = self.connect_timeout if connect_timeout is None else connect_timeout
        if AUTHORIZATION in headers:  # the request's own credential replaces every one of the client's
            return sender.send(method, {**self.request_headers_without_credential, **headers}, body,
                               (connect, timeout), own_credential=True)
        return sender.send(method, {**self.request_headers, **headers}, body, (connect, timeout))

    @property
    def abortable(self) -> bool:
        """True when an exchange can be ended from another thread (close, cancel, timeout) at
        once: the session's adapter for the URL is this library's socket-tracking one."""
        return isinstance(self.session.get_adapter(self.url), _TrackingAdapter)

    # -- reading bodies ------------------------------------------------------------------

    def read_json(self, response: requests.Response) -> Any:
        """The parsed JSON body, bounded by max_message_bytes (also after decompression)."""
        try:
            chunks = decoded_chunks(response.raw, response.headers.get("Content-Encoding"))
            data = read_bounded(chunks, self.max_message_bytes)
        except BadBody as exc:
            raise ProtocolError(f"response from {self.safe_url}: {exc}") from exc
        except STREAM_ERRORS as exc:
            raise connection_failure(f"the response from {self.safe_url} broke off", exc, may_have_run=True) from exc
        try:
            return json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise ProtocolError(f"the response from {self.safe_url} is not JSON: {data[:200]!r}") from exc

    def events(self, response: requests.Response) -> Iterator[SseEvent]:
        """SSE events of ``response``; an event past max_message_bytes, or a body that cannot be
        decoded, raises BadBody while iterating."""
        chunks = decoded_chunks(response.raw, response.headers.get("Content-Encoding"))
        return sse_events(chunks, self.max_message_bytes)

    def error_for(self, response: requests.Response, what: str) -> tuple[Any, MCPError]:
        """``(parsed body or None, error)`` for a failed status: status, reason and the first bytes."""
        try:
            data = read_bounded(
                decoded_chunks(response.raw, response.headers.get("Content-Encoding")), ERROR_BODY_BYTES
            )
        except (BadBody, *STREAM_ERRORS):
            data = b""
        try:
            parsed: Any = json.loads(data) if data else None
        except (ValueError, RecursionError):
            parsed = None
        status = response.status_code
        message = f"{what}: HTTP {status} {response.reason or ''} from {self.safe_url}".rstrip()
        if data:
            message += f": {data[:300].decode('utf-8', 'replace')}"
        if status in (401, 403):
            return parsed, AuthorizationError(message)
        if status in UNAVAILABLE:
            return parsed, ServerUnavailable(message, status=status, retry_after=retry_after_seconds(response))
        return parsed, ProtocolError(message, status=status)

    def close_session(self) -> None:
        """Close the session this transport made (a caller's session stays open: it is theirs)."""
        if not self.owns_session:
            return
        try:
            self.session.close()
        except Exception:  # closing must not fail because a pool is half torn down
            log.debug("mcp_sync: closing the requests session failed", exc_info=True)


#: The Session methods :class:`_Sender` stands in for: a subclass that overrides one of them
#: (an OAuth session adding its token in ``request``) is called the ordinary way instead.
_SESSION_METHODS = ("request", "prepare_request", "send", "merge_environment_settings")


class _Sender:
    """Sends requests to one URL through a session the way ``Session.request`` does, with
    what ``requests`` recomputes on every call worked out once.

    Per call, ``Session.request`` walks the process environment (proxy variables and their
    ``no_proxy`` bypass, ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``, netrc), merges cookies,
    hooks and settings, builds a Request and then a PreparedRequest, and finds the adapter.
    Here the environment, the adapter and the URL are resolved when the sender is made; a
    call builds the PreparedRequest directly (session headers, the request's headers,
    cookies if the jar has any, the body, then the auth object: applied on every request)
    and hands it to the adapter, dispatches response hooks (``HTTPDigestAuth`` answers its
    401 there) and keeps the cookies the server sets. A session whose class overrides
    ``request``, ``prepare_request``, ``send`` or ``merge_environment_settings`` is called
    the ordinary way.
    """

    __slots__ = ("adapter", "fast", "fixed_auth", "owner", "prepared_url", "send_kwargs", "session", "url_auth")

    def __init__(self, owner: HttpBase, url: str) -> None:
        session = owner.session
        self.owner = owner
        self.session = session
        self.fast = all(
            getattr(type(session), name, None) is getattr(requests.Session, name) for name in _SESSION_METHODS
        )
        settings = session.merge_environment_settings(url, dict(owner.proxies or {}), True, owner.verify, owner.cert)
        self.send_kwargs: dict[str, Any] = {
            "proxies": settings["proxies"],
            "verify": settings["verify"],
            "cert": settings["cert"],
        }
        self.adapter = session.get_adapter(url)
        probe = requests.PreparedRequest()
        probe.prepare_url(url, session.params or None)
        self.prepared_url: str = probe.url or url
        # The auth when the transport has none: the session's, else netrc's (if the environment is
        # trusted), else none (PreparedRequest.prepare_auth then reads user:password from the URL).
        fixed: Any = None
        if session.trust_env and not session.auth:
            fixed = get_netrc_auth(url)
        self.fixed_auth = fixed if fixed else session.auth
        self.url_auth = any(get_auth_from_url(self.prepared_url))  # user:password@ in the URL

    def send(self, method: str, headers: Mapping[str, str | None], body: bytes | None, timeout: Any,
             own_credential: bool = False) -> requests.Response:
        """Send one request. ``own_credential``: its headers carry the caller's credential (an
        Authorization value, or None for none), so no other auth is applied: not the
        transport's, the session's, netrc's nor the URL's ``user:password``."""
        owner, session = self.owner, self.session
        if not self.fast:
            return session.request(
                method,
                self.prepared_url,
                data=body,
                headers=dict(headers),
                auth=_no_auth if own_credential else owner.auth,
                stream=True,
                allow_redirects=False,
                timeout=timeout,
                proxies=owner.proxies,
                verify=owner.verify,
                cert=owner.cert,
            )
        prepared = requests.PreparedRequest()
        prepared.method = method
        prepared.url = self.prepared_url
        merged: CaseInsensitiveDict[Any] = CaseInsensitiveDict(session.headers)
        merged.update(headers)
        if None in merged.values():  # a header set to None is left out, as in requests
            for name in [name for name, value in merged.items() if value is None]:
                del merged[name]
        prepared.headers = merged
        jar = session.cookies
        if len(jar):
            prepared.prepare_cookies(merge_cookies(RequestsCookieJar(), jar))
        prepared.body = body
        prepared.prepare_content_length(body)
        auth = owner.auth if owner.auth is not None else self.fixed_auth
        if (auth is not None or self.url_auth) and not own_credential:
            prepared.prepare_auth(auth, self.prepared_url)
        if any(session.hooks.values()):
            prepared.prepare_hooks(session.hooks)
        response = self.adapter.send(prepared, stream=True, timeout=timeout, **self.send_kwargs)
        if prepared.hooks["response"]:
            response = dispatch_hook(
                "response", prepared.hooks, response, stream=True, timeout=timeout, **self.send_kwargs
            )
        if len(response.cookies):
            extract_cookies_to_jar(jar, prepared, response.raw)
        return response


def _no_auth(request: requests.PreparedRequest) -> requests.PreparedRequest:
    """The auth of a request that carries its own credential: applies nothing (and, being given,
    keeps ``requests`` from falling back to the session's auth, netrc or the URL's)."""
    return request


def header_safe(value: str | None, limit: int = 1024) -> str | None:
    """``value`` if it can go back to the server in a header (printable ASCII, at most
    ``limit`` characters), else None: a server-chosen value must not break or inject headers."""
    if value is None or len(value) > limit or not all(" " <= ch <= "~" for ch in value):
        return None
    return value


def session_id_of(response: requests.Response) -> str | None:
    """The ``Mcp-Session-Id`` the server assigned, checked: visible ASCII only (the spec's
    rule); anything else is a ProtocolError rather than a header that breaks every request."""
    value = response.headers.get("Mcp-Session-Id")
    if value is not None and (header_safe(value) is None or " " in value or not value):
        raise ProtocolError(f"the server assigned an Mcp-Session-Id that is not visible ASCII: {value[:80]!r}")
    return value


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


def _certificate_refused(exc: BaseException) -> bool:
    """Whether the server's TLS certificate was not accepted (anywhere in the chain of causes):
    sending again would only be refused again, after a backoff for nothing."""
    return any(isinstance(cause, ssl.SSLCertVerificationError) for cause in _causes(exc))


def connection_failure(
    what: str, exc: BaseException, *, may_have_run: bool, safe_to_resend: bool = True
) -> ConnectionClosed:
    """The error for a request whose connection failed: ``what`` and why, as a
    :class:`ServerUnreachable` (a ServerUnavailable an app maps to 503, and a ConnectionClosed).

    The rule for "provably never reached the server" (``may_have_run=False``, #29.2): the
    connect failed (refused, timed out, the name did not resolve), or writing the request
    raised before all of it was sent (a reset or a broken pipe on a kept-alive connection
    the server had closed). A connection the server closed while it idled in the pool is
    caught before anything is written (urllib3 checks a pooled connection before reusing it,
    and connects afresh), and then fails, if at all, as a connect; one idle longer than
    MAX_IDLE_REUSE_S is not reused at all, so that a server's idle timer cannot end it just
    as a request goes out. Everything else is "may
    have run": once the whole request is written, an answer that never starts (the
    connection ended or was reset, even on a reused connection, before the first byte) is
    what a server that read the request and died looks like as well, so it proves nothing.

    A refused TLS certificate is not an outage (sending again would be refused again): it
    stays a plain ConnectionClosed.
    """
    why = describe_failure(exc)
    if _certificate_refused(exc):
        return ConnectionClosed(f"{what}: {why}")
    if may_have_run and not safe_to_resend:
        why += "; the request may have reached the server and run, so it was not sent again"
    return ServerUnreachable(f"{what}: {why}", may_have_run=may_have_run)


def _connect_failure(exc: BaseException) -> bool:
    """True when nothing reached the server: a refused or timed-out connect, a failed DNS lookup."""
    if isinstance(exc, requests.ConnectTimeout):
        return True
    reason = getattr(exc.args[0], "reason", None) if exc.args else None
    return isinstance(reason, urllib3.exceptions.NewConnectionError)


def _retry_after_delay(value: str) -> float | None:
    """A Retry-After value in seconds from now: delay-seconds (ASCII digits; ten or more are inf)
    or an HTTP date (one in the past is 0); None when unreadable."""
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value) if len(value) <= 9 else math.inf
    try:
        delay = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, IndexError, OSError):
        return None
    return max(0.0, delay) if delay == delay else None


def retry_after_seconds(response: requests.Response) -> float | None:
    """What the server's Retry-After asks for, in seconds, for the caller
    (``ServerUnavailable.retry_after``), or None when it sent none or nothing readable. At most
    RETRY_AFTER_HINT_CAP: an application that sleeps on it (as the docs show) must not be told
    to park a thread for ten years because a server said so."""
    value = response.headers.get("Retry-After")
    delay = None if value is None else _retry_after_delay(value)
    if delay is None or delay == math.inf:  # ten digits or more: not a delay anyone means
        return None
    return min(delay, RETRY_AFTER_HINT_CAP)


def _retry_after(response: requests.Response, default: float) -> float | None:
    """Seconds to wait before a retry of ours, or None when the server asks for longer than we
    wait (RETRY_AFTER_CAP); ``default`` when it sent none or nothing readable."""
    value = response.headers.get("Retry-After")
    delay = None if value is None else _retry_after_delay(value)
    if delay is None:
        return default
    return delay if delay <= RETRY_AFTER_CAP else None


def _target_of(url: str) -> str:
    """The URL for a client's repr: scheme, host, port and path (never credentials or a query)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets, or the target is no URL (and has no port)
        host = f"[{host}]"
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}"
