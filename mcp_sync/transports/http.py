"""Streamable HTTP, both eras, with a fallback to the deprecated HTTP+SSE transport.

The era is inferred per message (the engine and lifecycle decide it, the
transport only frames it):

* a message whose ``params._meta`` carries ``io.modelcontextprotocol/protocolVersion``
  is **modern** (2026-07-28): its own POST with ``MCP-Protocol-Version``,
  ``Mcp-Method`` and ``Mcp-Name``; no session, no GET stream;
  cancelling closes its response stream;
* an ``initialize`` switches to **legacy** (2025-03-26 ... 2025-11-25): the
  ``Mcp-Session-Id`` it returns goes on every later request with the
  negotiated ``MCP-Protocol-Version``, a GET stream carries unsolicited
  server messages, broken streams resume with ``Last-Event-ID``, a request
  the server refuses for an unknown session is sent again on a new session,
  and ``close()`` DELETEs it;
* an ``initialize`` refused with 400/404/405 where a GET opens an SSE stream
  whose first event is ``endpoint`` switches to :class:`SseTransport`.

Threads (daemon, joined by ``close()``): ``mcp_sync-http-<server>``, one per
request in flight (``send`` never blocks for an answer); ``mcp_sync-listen-<server>``
for the legacy GET stream. Notifications and responses are POSTed on the
calling thread, so they reach the server in the order they were sent.
"""

# Checklist items (../shared/spec/client-checklist.md): modern H1-H7, H12-H15; legacy LG2, LG3,
# LG5, LG6; the HTTP+SSE fallback LG14.

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Mapping

from .._headers import encode_header_value
from .._ids import normalize_id
from ..exceptions import ConnectionClosed, MCPError, ProtocolError, ServerUnreachable
from ._http_common import (
    DEFAULT_MAX_BYTES,
    ONEWAY_TIMEOUT,
    SAFE_TO_RESEND,
    STREAM_ERRORS,
    UNAVAILABLE,
    Aborted,
    Deadlines,
    Slot,
    content_type,
    describe_failure,
    header_safe,
    jsonrpc_error,
    origin,
    session_id_of,
)
from ._http_legacy import DEFAULT_RETRY_S, LegacySession, session_refused
from ._sse_stream import BadBody
from .base import NO_SINK, MessageSink, encode_message
from .sse import SseTransport

if TYPE_CHECKING:
    import requests

log = logging.getLogger("mcp_sync.http")

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
#: Where Mcp-Name comes from (H6; tasks/* from the tasks extension).
NAME_FIELDS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
ACCEPT_BOTH = "application/json, text/event-stream"

#: Era decisions per origin, for the life of the process (section 4, step 7; V4 allows
#: persisting them): "legacy" or "sse" lets a reconnect, or another client of the same
#: origin, skip the modern probe. A connection that relied on the cache and then failed
#: to connect forgets the entry, so the next one probes again ("re-probe if the cached
#: assumption later fails").
_ERA_CACHE: dict[tuple[str, str, Any], str] = {}
_ERA_LOCK = threading.Lock()


def cached_era(url: str) -> str | None:
    with _ERA_LOCK:
        return _ERA_CACHE.get(origin(url))


def _remember_era(url: str, era: str | None) -> None:
    with _ERA_LOCK:
        if era is None:
            _ERA_CACHE.pop(origin(url), None)
        else:
            _ERA_CACHE[origin(url)] = era


def _modern_version(message: dict[str, Any]) -> str | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) and message.get("method") != "initialize" else None


def _recognized_modern_error(status: int, error: dict[str, Any]) -> bool:
    """A 4xx body that proves a modern server (section 4): -32020, -32021, -32022 + supported, 404 + -32601."""
    code, data = error.get("code"), error.get("data")
    if code == -32022:
        return isinstance(data, dict) and isinstance(data.get("supported"), list)
    return code in (-32020, -32021) or (status == 404 and code == -32601)


class _InFlight:
    __slots__ = ("modern", "slot")

    def __init__(self, slot: Slot, modern: bool) -> None:
        self.slot = slot
        self.modern = modern


#: How long a POST's SSE stream may take to end after the answer before it is closed (seconds).
STREAM_END_WAIT = 0.02

#: Longest wait in configure() for a legacy GET stream to answer (seconds).
LISTEN_READY_WAIT = 2.0


class HttpTransport(LegacySession):
    """A Streamable HTTP client transport (modern and legacy; falls back to HTTP+SSE).

    ``headers`` go on every request (POST, GET stream, DELETE); ``auth`` is a
    ``requests`` auth object or a callable ``(PreparedRequest) -> PreparedRequest``
    applied to every request. ``max_message_bytes`` bounds a body after
    decompression and each SSE event. Thread-safe: ``send`` may be called from
    any number of threads; one ``requests.Session`` is shared by all of them.

    Sending again (at most ``max_retries`` times, with backoff): any request
    whose connection could not be made (refused, timed out, name not
    resolved) or whose write failed before all of it was sent, since the
    server cannot have run it; reads and lists (``tools/list``,
    ``resources/read``, ``ping``, the handshake...) also after a 502/503/504
    (honouring ``Retry-After`` up to 30 s) or a connection reset or ended
    after the request was written. A ``tools/call`` or any other request that
    may change something is never sent twice on such an answer: a 503 does
    not prove the server did nothing. What is left of a connection failure
    raises :class:`~mcp_sync.ServerUnreachable` (a ``ServerUnavailable``, with
    ``may_have_run``), as during a server restart.
    A legacy request the server refuses because it no longer knows the
    session (404, or a 400 saying so, as after a server restart) is sent again
    once on a new session. Redirects are followed only to the same origin, and
    URLs in messages and logs hide passwords and query values.

    ``session`` is your own ``requests.Session``, used as is (its adapters,
    headers, cookies, hooks, auth, proxies and TLS settings; it is not closed
    with the transport). ``verify`` (True, False or a CA bundle path), ``cert``
    (a client certificate file, or ``(cert, key)``) and ``proxies`` (``{"https":
    "http://proxy:3128"}``, may hold ``no_proxy``) override the environment, as
    these arguments do in ``requests``. Otherwise the environment is honoured as
    ``requests`` honours it (``HTTPS_PROXY``, ``NO_PROXY``, ``REQUESTS_CA_BUNDLE``,
    netrc), read once when the first request is made. ``connect_timeout`` bounds
    each connect (seconds).

    Example::

        transport = HttpTransport("http://127.0.0.1:8000/mcp", headers={"X-Team": "a"})
        with mcp_sync.Client(transport) as client:
            print(client.call_tool("echo", {"text": "hi"}).text)
        # usually simply: mcp_sync.Client.http("http://127.0.0.1:8000/mcp")

        corporate = requests.Session()
        corporate.verify = "/etc/ssl/corp-ca.pem"
        transport = HttpTransport("https://mcp.internal/mcp", session=corporate)
    """

    #: The client mirrors x-mcp-header parameters only on this transport (checklist H8).
    mirrors_param_headers = True
    inline_sends = True  # send_inline: a plain request is exchanged on the calling thread

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        max_message_bytes: int = DEFAULT_MAX_BYTES,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        max_resume_attempts: int = 3,
        name: str | None = None,
        session: requests.Session | None = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(
            url,
            headers=headers,
            auth=auth,
            max_message_bytes=max_message_bytes,
            connect_timeout=connect_timeout,
            max_retries=max_retries,
            name=name,
            session=session,
            verify=verify,
            cert=cert,
            proxies=proxies,
        )
        self.max_resume_attempts = max_resume_attempts
        self._sink: MessageSink = NO_SINK
        self._era: str | None = None
        self._modern_version: str | None = None  # the revision in use, once the era is modern
        self._saw_modern = False
        self._protocol_version: str | None = None
        self._session_id: str | None = None
        self._init_message: dict[str, Any] | None = None
        self._initialized_message: dict[str, Any] | None = None
        self._inflight: dict[Any, _InFlight] = {}
        self._listen_slot: Slot | None = None
        self._listening = False
        self._listen_deferred = False  # no GET stream until open_server_stream() (#29.3)
        self._stream_epoch, self._stream_open = 0, False
        self._listen_ready = threading.Event()  # the GET stream answered (opened, or none offered)
        self._relied_on_cache = False  # skipped the probe because the origin's era was cached
        self._session_lock = threading.Lock()
        self._delegate: SseTransport | None = None
        self._deadlines = Deadlines(self.name)
        self._linger = True  # read the end of a POST's stream after the answer (see _await_stream_end)
        #: Requests may be read on the calling thread: close, cancel and timeouts can interrupt them.
        self._inline_ok = self.abortable

    @property
    def session_id(self) -> str | None:
        """The legacy ``Mcp-Session-Id``, if the server assigned one."""
        return self._session_id

    @property
    def delegate(self) -> SseTransport | None:
        """The HTTP+SSE transport this one fell back to, if it did."""
        return self._delegate

    # -- Transport -------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Nothing to open yet: every message makes its own request."""
        self._sink = sink

    def configure(self, *, era: str, protocol_version: str) -> None:
        """Told the era once decided: legacy requests now carry ``MCP-Protocol-Version``.

        On a legacy session, wait (at most ``LISTEN_READY_WAIT`` s) until the GET stream
        the handshake started has answered, so that what the server announces right
        after the handshake (list_changed, a roots/list request) is not missed and
        ``listen()`` returns with the session's notification stream open.
        """
        self._era = era
        if era == "modern":
            self._modern_version = protocol_version  # H5: notifications carry no _meta, yet need the header
        if era == "legacy" and self._listening:
            self._listen_ready.wait(LISTEN_READY_WAIT)
        if era == "legacy" and self._protocol_version is None:
            self._protocol_version = protocol_version
        if self._delegate is not None:
            self._delegate.configure(era=era, protocol_version=protocol_version)
        elif era == "modern" or self._saw_modern:  # only an auto detection teaches the cache anything
            _remember_era(self.url, era)

    def defer_server_stream(self) -> None:
        """A legacy session opens its GET stream only on :meth:`open_server_stream` (#29.3): the
        spec's client MAY open it, and a session that only makes requests (a view's, with no
        handlers) gets every answer and every message about its requests on the POST's own
        stream. Called before the handshake."""
        self._listen_deferred = True

    def open_server_stream(self) -> None:
        """Open the legacy GET stream now if the handshake did not (deferred), and wait (at most
        ``LISTEN_READY_WAIT`` s) until the server answers it, so what it sends next is heard."""
        if not self._listen_deferred or self._delegate is not None or self._era != "legacy":
            return  # opened at the handshake; HTTP+SSE's stream is the connection; modern has none
        with self._lock:
            already = self._listening
        if not already:
            self._listen_ready.clear()
            self._start_listening()
        self._listen_ready.wait(LISTEN_READY_WAIT)

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None) -> None:
        """POST ``message``: a request on a worker thread, anything else on this thread."""
        self._send(message, headers, inline=False, deadline=None)

    def send_inline(
        self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None, deadline: float | None = None
    ) -> None:
        """POST ``message`` and, for a request, read its answer on this thread: when this
        returns, the answer (or the request's failure) has gone to the sink.

        The engine calls this instead of :meth:`send` for a plain request (no stream to
        follow, no timeout that moves with progress), which saves a thread and two thread
        switches per call. Messages the server sends on the way (progress, its own
        requests) go to the sink as they arrive, as from a worker. The exchange ends
        early, like a cancelled one, on :meth:`abort` or :meth:`close` from another thread,
        or at ``deadline`` (``time.monotonic()``); the engine then reports the timeout.
        With a caller's session whose adapter cannot be interrupted, this is :meth:`send`.
        """
        self._send(message, headers, inline=self._inline_ok, deadline=deadline)

    def _send(
        self, message: dict[str, Any], headers: Mapping[str, str | None] | None, *, inline: bool, deadline: float | None
    ) -> None:
        delegate = self._delegate
        if delegate is not None:
            delegate.send(message, headers=headers)
            return
        if self._closing:
            raise ConnectionClosed("the HTTP transport is closed")
        method = message.get("method")
        version = _modern_version(message) if self._era != "legacy" else None
        if version is None and self._era == "modern":
            version = self._modern_version
        self._saw_modern = self._saw_modern or version is not None
        if method == "initialize":
            self._init_message = message
        elif method == "notifications/initialized":
            self._initialized_message = message
        if method is None or "id" not in message:
            self._send_oneway(message, headers, version)
            return
        request_id = message["id"]
        if version is not None and self._era is None and cached_era(self.url) in ("legacy", "sse"):
            self._relied_on_cache = True
            # section 4 step 7: skip a probe this origin already failed
            self._sink.fail(request_id, ProtocolError(f"{self.safe_url} is a legacy server (cached for its origin)"))
            return
        slot = Slot()
        with self._lock:
            if self._closing:
                raise ConnectionClosed("the HTTP transport is closed")
            self._inflight[request_id] = _InFlight(slot, version is not None)
        if not inline:
            try:
                self._spawn(lambda: self._run_request(message, headers, version, slot), "http")
            except ConnectionClosed:
                with self._lock:
                    self._inflight.pop(request_id, None)
                raise
            return
        if deadline is not None:
            self._deadlines.add(slot, deadline)
        try:
            self._run_request(message, headers, version, slot)  # forgets the request when done
        finally:
            if deadline is not None:
                self._deadlines.discard(slot)

    def abort(self, request_id: Any) -> bool:
        """End the request's exchange at once (its worker does not read on for as long as the
        server sends). Modern: closing the stream *is* the cancellation (True). Legacy: False,
        the engine sends notifications/cancelled as well (a closed stream alone does not
        cancel there)."""  # H14, LG6
        if self._delegate is not None:
            return self._delegate.abort(request_id)
        with self._lock:
            record = self._inflight.get(request_id)
        if record is None:
            return self._era == "modern"
        record.slot.abort()
        return record.modern

    def _abandon_exchanges(self) -> None:
        """The session expired and could not be renewed: a call waiting on its POST (on a worker
        or inline on its own thread) would otherwise wait for the server or its deadline."""
        with self._lock:
            slots = [record.slot for record in self._inflight.values()]
        for slot in slots:
            slot.abort()

    def close(self) -> None:
        """End every stream and request, join the threads, DELETE a legacy session. Idempotent."""  # LG3
        with self._lock:
            if self._closing:
                return
            self._closing = True
            slots = [record.slot for record in self._inflight.values()] + list(self._oneway)
            if self._listen_slot is not None:
                slots.append(self._listen_slot)
        self._closed_event.set()
        if self._relied_on_cache and self._era is None:  # V4: the cached era did not hold: probe next time
            _remember_era(self.url, None)
        if self._delegate is not None:
            self._delegate.close()
        for slot in slots:
            slot.abort()
        self._deadlines.close(1.0)
        self._join_threads(2.0)
        if self._session_id is not None:
            self._delete_session()
        self.close_session()

    # -- requests (worker threads) -------------------------------------------------------

    def _run_request(
        self, message: dict[str, Any], extra: Mapping[str, str | None] | None, version: str | None, slot: Slot
    ) -> None:
        request_id = message["id"]
        try:
            if message["method"] == "initialize" and cached_era(self.url) == "sse":
                self._relied_on_cache = True
                self._switch_to_sse(message, slot, None, None)
            else:
                self._request(message, extra, version, slot, resent=False)
        except Aborted:
            pass
        except MCPError as exc:
            if not slot.aborted:
                self._sink.fail(request_id, exc)
        except Exception as exc:  # a bug must fail the request, not leave its caller waiting
            log.exception("mcp_sync: the HTTP transport failed on %s", message.get("method"))
            self._sink.fail(request_id, ProtocolError(f"internal error in the HTTP transport (logged): {exc}"))
        finally:
            with self._lock:
                self._inflight.pop(request_id, None)

    def _request(
        self, message: dict[str, Any], extra: Mapping[str, str | None] | None, version: str | None, slot: Slot, *,
        resent: bool,
    ) -> None:
        method, request_id = message["method"], message["id"]
        session_id = None if version else self._session_id
        response = self.exchange(
            "POST",
            self.url,
            slot,
            headers=self._post_headers(message, extra, version, session_id),
            body=encode_message(message),
            safe_to_resend=method in SAFE_TO_RESEND,
        )
        try:
            status = response.status_code
            if method == "initialize":
                if status in (400, 404, 405):  # no Streamable HTTP here: try HTTP+SSE (section 4 step 6)
                    refusal = self.error_for(response, "initialize")
                    response.close()
                    self._switch_to_sse(message, slot, status, refusal)
                    return
                if 200 <= status < 300:
                    self._session_id = session_id_of(response)
            body = None
            if status == 400 and session_id is not None and not resent:
                body = self.error_for(response, method)
            if session_id is not None and not resent and (status == 404 or session_refused(status, body)):
                # The server refused the request because it does not know the session (LG3): it did
                # not run it, so once a new session is open it is sent again, tools/call included.
                response.close()
                self._renew_session(session_id)
                self._request(message, extra, version, slot, resent=True)
                return
            if not 200 <= status < 300:
                self._fail_status(message, response, version, body)
                return
            kind = content_type(response)
            if kind == "text/event-stream":
                self._read_post_stream(message, response, slot, version is not None)
            elif kind == "application/json" or kind.endswith("+json"):
                if not self._deliver(self.read_json(response), request_id, method):
                    raise ProtocolError(f"{method}: the JSON body from {self.safe_url} is not the answer")
            else:
                raise ProtocolError(
                    f"{method}: HTTP {status} from {self.safe_url} with Content-Type {kind!r} and no answer"
                )
        finally:
            slot.finish()
            response.close()

    def _fail_status(
        self, message: dict[str, Any], response: Any, version: str | None, body: tuple[Any, MCPError] | None = None
    ) -> None:
        """An error status: a JSON-RPC error body becomes a ServerError; anything else raises.

        While probing (era unknown), only a recognized modern error counts as an
        answer; any other 4xx is a ProtocolError, so the lifecycle falls back to
        ``initialize`` (section 4 step 5).
        """
        parsed, error = body if body is not None else self.error_for(response, message["method"])
        rpc_error = jsonrpc_error(parsed)
        status = response.status_code
        if rpc_error is not None and status not in (401, 403) and status not in UNAVAILABLE:
            probing = version is not None and self._era is None
            if not probing or _recognized_modern_error(status, rpc_error):
                self._sink.message({"jsonrpc": "2.0", "id": message["id"], "error": rpc_error})
                return
        raise error

    def _read_post_stream(self, message: dict[str, Any], response: Any, slot: Slot, modern: bool) -> None:
        """Deliver a POST's SSE stream until the answer (then close it).

        Legacy streams that break are resumed with GET + ``Last-Event-ID``
        after the server's ``retry`` delay, a bounded number of fruitless times;
        modern streams are not resumable, so the request fails.
        """  # H12, H13, LG6
        method, request_id = message["method"], message["id"]
        last_id: str | None = None
        retry_ms: int | None = None
        attempts = 0
        current = response
        answered = False
        try:
            while True:
                try:
                    for event in self.events(current):
                        attempts = 0
                        last_id = header_safe(event.id) or last_id
                        retry_ms = event.retry_ms if event.retry_ms is not None else retry_ms
                        if event.data and self._deliver_text(event.data, request_id, method) and not answered:
                            answered = True
                            if current is not response or not self._await_stream_end(slot):
                                return
                    if answered:  # the server ended the stream at once: its connection is reusable
                        return
                except BadBody as exc:
                    if answered:
                        return
                    raise ProtocolError(f"{method}: {exc}") from exc
                except STREAM_ERRORS as exc:
                    if answered:  # the stream did not end at once: it is closed, as before
                        self._linger = False
                        return
                    if slot.aborted or self._closing:
                        raise Aborted from exc
                    log.debug("mcp_sync: the %s stream broke: %s", method, describe_failure(exc))
                if slot.aborted or self._closing:
                    raise Aborted
                if modern or last_id is None or attempts >= self.max_resume_attempts:
                    why = " (a modern stream cannot be resumed)" if modern else ""  # H13
                    if method == "tools/call":
                        why += "; the call may have run on the server, so it was not sent again"
                    raise ServerUnreachable(  # sent, then cut off: it may have run (#29.2)
                        f"{method}: the response stream from {self.safe_url} ended before the answer{why}"
                    )
                attempts += 1
                slot.sleep(retry_ms / 1000 if retry_ms is not None else DEFAULT_RETRY_S)
                if current is not response:
                    current.close()
                try:
                    current = self.exchange("GET", self.url, slot, headers=self._get_headers(last_id))
                except ServerUnreachable as exc:  # the GET never got there; the POST it resumes did
                    raise ServerUnreachable(f"{method}: resuming its stream failed: {exc.message}") from exc
                if current.status_code != 200 or content_type(current) != "text/event-stream":
                    raise ConnectionClosed(f"{method}: resuming the stream failed with HTTP {current.status_code}")
        finally:
            if current is not response:
                current.close()

    def _await_stream_end(self, slot: Slot) -> bool:
        """After the answer, give the server STREAM_END_WAIT s to end the stream.

        Servers end a POST's stream right after the answer; reading that end (instead
        of closing the stream at once) keeps the connection for the next request,
        which saves a connect per call. A server that keeps streams open costs one
        wait and is not waited for again. False when there is nothing to wait on.
        """
        if not self._linger:
            return False
        # Through the slot, under its lock: when the stream's end was read with the answer, the
        # connection is back in the pool already, and its socket another request's to time.
        return slot.set_socket_timeout(STREAM_END_WAIT)  # urllib3 sets its own again on the next request

    def _deliver_text(self, text: str, request_id: Any, method: str | None) -> bool:
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):
            log.warning("mcp_sync: %s sent an SSE event that is not JSON (skipped): %.200r", self.name, text)
            return False
        return self._deliver(parsed, request_id, method)

    def _deliver(self, parsed: Any, request_id: Any, method: str | None) -> bool:
        """Hand messages to the sink; True when one of them answers ``request_id``."""
        answered = False
        for item in parsed if isinstance(parsed, list) else [parsed]:
            if isinstance(item, dict) and "method" not in item and normalize_id(item.get("id")) == request_id:
                answered = True
                result = item.get("result")
                if method == "initialize" and isinstance(result, dict):
                    version = result.get("protocolVersion")
                    self._protocol_version = version if isinstance(version, str) else None
            self._sink.message(item)
        return answered

    # -- notifications and responses (calling thread) ---------------------------------

    def _send_oneway(
        self, message: dict[str, Any], extra: Mapping[str, str | None] | None, version: str | None,
        resent: bool = False, session: str | None = None,
    ) -> None:
        method = message.get("method")
        session_id = None if version else session or self._session_id
        with self._oneway_slot() as slot:
            response = self.exchange(
                "POST",
                self.url,
                slot,
                headers=self._post_headers(message, extra, version, session_id),
                body=encode_message(message),
                timeout=ONEWAY_TIMEOUT,
            )
            try:
                status = response.status_code
                body = None
                if status == 400 and session_id is not None and not resent:
                    body = self.error_for(response, str(method or "response"))
                if session_id is not None and not resent and (status == 404 or session_refused(status, body)):
                    if method is None:
                        return  # an answer to a request of the expired session: nobody waits for it
                    response.close()
                    self._renew_session(session_id)
                    self._send_oneway(message, extra, version, resent=True)
                    return
                if not 200 <= status < 300:
                    raise (body or self.error_for(response, str(method or "response")))[1]
            finally:
                slot.finish()
                response.close()
        if method == "notifications/initialized" and version is None and not self._listen_deferred:
            self._start_listening()

    # -- HTTP+SSE fallback -------------------------------------------------------------------

    def _switch_to_sse(
        self, init: dict[str, Any], slot: Slot, status: int | None, refusal: tuple[Any, MCPError] | None
    ) -> None:
        """``initialize`` found no Streamable HTTP: GET the URL; an ``endpoint`` event means HTTP+SSE.

        If it is not HTTP+SSE either, the initialize fails with the server's own
        refusal: its JSON-RPC error (e.g. a modern-only server's -32022) or the status.
        """
        if status is not None:
            response = self.exchange(
                "GET", self.url, slot, headers={"Accept": "text/event-stream"}, timeout=self.connect_timeout
            )
            first = None
            try:
                if response.status_code == 200 and content_type(response) == "text/event-stream":
                    first = next((e.event for e in self.events(response) if e.data), None)
            except (BadBody, *STREAM_ERRORS) as exc:
                log.debug("mcp_sync: probing %s for HTTP+SSE: %s", self.safe_url, describe_failure(exc))
            finally:
                slot.finish()
                response.close()
            if first != "endpoint":
                rpc_error = jsonrpc_error(refusal[0]) if refusal else None
                if rpc_error is not None:
                    self._sink.message({"jsonrpc": "2.0", "id": init["id"], "error": rpc_error})
                    return
                raise ProtocolError(
                    f"initialize: HTTP {status} from {self.safe_url}, and a GET there opens no HTTP+SSE stream "
                    f"(first event: {first!r}); is this an MCP endpoint?",
                    status=status,
                )
        delegate = SseTransport(
            self.url,
            headers=self.headers,
            auth=self.auth,
            max_message_bytes=self.max_message_bytes,
            connect_timeout=self.connect_timeout,
            max_retries=self.max_retries,
            name=self.name,
            session=self.session,  # shared; closed by this transport if it made it
            verify=self.verify,
            cert=self.cert,
            proxies=self.proxies,
        )
        delegate.start(self._sink)
        with self._lock:
            if self._closing:
                delegate.close()
                raise Aborted
            self._delegate = delegate
        _remember_era(self.url, "sse")
        log.info("mcp_sync: %s has no Streamable HTTP; using the HTTP+SSE transport (2024-11-05)", self.safe_url)
        delegate.send(init)

    # -- headers -------------------------------------------------------------------------------

    def _post_headers(
        self, message: dict[str, Any], extra: Mapping[str, str | None] | None, version: str | None,
        session_id: str | None,
    ) -> dict[str, str | None]:
        headers = dict(extra or {})  # first, so the protocol's own headers win on a clash
        headers.update({"Accept": ACCEPT_BOTH, "Content-Type": "application/json"})
        method = message.get("method")
        if version is not None:  # H5, H6, H7
            headers["MCP-Protocol-Version"] = version
            headers["Mcp-Method"] = str(method)
            params = message.get("params")
            field = NAME_FIELDS.get(str(method))
            value = params.get(field) if field and isinstance(params, dict) else None
            if isinstance(value, str):
                headers["Mcp-Name"] = encode_header_value(value)
            return headers
        if session_id is not None:
            headers["Mcp-Session-Id"] = session_id
        legacy_version = self._legacy_version()
        if legacy_version is not None and method != "initialize":
            headers["MCP-Protocol-Version"] = legacy_version
        return headers

    def __repr__(self) -> str:
        return f"<HttpTransport {self.safe_url!r} era={self._era} session={self._session_id!r}>"
