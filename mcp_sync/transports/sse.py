"""The deprecated HTTP+SSE transport of protocol revision 2024-11-05.

The client GETs the SSE URL; the server's first event, ``endpoint``, names the
URL to POST every client message to; every server message, responses
included, arrives as a ``message`` event on that one stream.

Threads (daemon, joined by :meth:`SseTransport.close`): ``mcp_sync-sse-<server>``
reads the stream; ``mcp_sync-post-<server>`` posts one request each, so
``send`` never waits for the network on behalf of a request.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import TYPE_CHECKING, Any, Mapping

from ..exceptions import ConnectionClosed, MCPError, ProtocolError
from ._http_common import (
    DEFAULT_MAX_BYTES,
    ONEWAY_TIMEOUT,
    SAFE_TO_RESEND,
    STREAM_ERRORS,
    UNAVAILABLE,
    Aborted,
    HttpBase,
    Slot,
    content_type,
    describe_failure,
    jsonrpc_error,
    redact_url,
    same_origin,
)
from ._sse_stream import BadBody
from .base import NO_SINK, MessageSink, encode_message

if TYPE_CHECKING:
    import requests

log = logging.getLogger("mcp_sync.http")


class SseTransport(HttpBase):
    """A client for a 2024-11-05 HTTP+SSE server (deprecated; always the legacy era).

    ``headers`` go on every request (the GET stream and each POST); ``auth`` is
    a ``requests`` auth object or callable applied to each request. Cancellation
    is a ``notifications/cancelled`` message (``abort`` returns False).

    Example::

        client = mcp_sync.Client(SseTransport("http://127.0.0.1:3001/sse"), mode="legacy")
        # or simply: mcp_sync.Client.sse("http://127.0.0.1:3001/sse")
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        max_message_bytes: int = DEFAULT_MAX_BYTES,
        connect_timeout: float = 10.0,
        endpoint_timeout: float = 10.0,
        max_retries: int = 3,
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
        self.endpoint_timeout = endpoint_timeout
        self.endpoint: str | None = None
        self._sink: MessageSink = NO_SINK
        self._stream_slot = Slot()
        self._ready = threading.Event()
        self._start_error: MCPError | None = None
        self._inflight: dict[Any, Slot] = {}

    # -- Transport -------------------------------------------------------------------

    def start(self, sink: MessageSink) -> None:
        """Open the SSE stream and wait for its ``endpoint`` event (at most ``endpoint_timeout`` s)."""
        self._sink = sink
        self._spawn(self._read_stream, "sse")
        if not self._ready.wait(self.endpoint_timeout):
            self._start_error = ConnectionClosed(
                f"{self.safe_url}: no 'endpoint' event within {self.endpoint_timeout} s"
            )
        if self._start_error is not None:
            self.close()
            raise self._start_error

    def configure(self, *, era: str, protocol_version: str) -> None:
        """Nothing to change: this transport always carries the legacy era."""

    @property
    def notification_stream(self) -> Any:
        """Everything comes on the one stream, and the transport ends with it: one token while it is open."""
        return 0 if self.endpoint is not None and not self._closing else None

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None) -> None:
        """POST ``message`` to the endpoint; requests on a worker, notifications and responses here."""
        endpoint = self.endpoint
        if endpoint is None or self._closing:
            raise ConnectionClosed("the HTTP+SSE transport is not connected")
        body = encode_message(message)
        post_headers = {"Content-Type": "application/json", **(headers or {})}
        if "method" in message and "id" in message:
            request_id = message["id"]
            slot = Slot()
            with self._lock:
                self._inflight[request_id] = slot
            resendable = message.get("method") in SAFE_TO_RESEND
            try:
                self._spawn(
                    lambda: self._post_request(request_id, endpoint, body, post_headers, slot, resendable), "post"
                )
            except ConnectionClosed:
                with self._lock:
                    self._inflight.pop(request_id, None)
                raise
            return
        with self._oneway_slot() as slot:
            self._post(endpoint, body, post_headers, slot, str(message.get("method", "response")), True, ONEWAY_TIMEOUT)

    def abort(self, request_id: Any) -> bool:
        """Stop the request's POST if it is still in progress; returns False: the answer would
        come on the shared stream, so the engine sends notifications/cancelled."""  # LG6
        with self._lock:
            slot = self._inflight.get(request_id)
        if slot is not None:
            slot.abort()
        return False

    def close(self) -> None:
        """Stop the stream and every POST, join the threads, close the session. Idempotent."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            slots = [self._stream_slot, *self._inflight.values(), *self._oneway]
        self._closed_event.set()
        for slot in slots:
            slot.abort()
        self._join_threads(2.0)
        self.close_session()

    # -- threads -------------------------------------------------------------------------

    def _post_request(
        self, request_id: Any, endpoint: str, body: bytes, headers: dict[str, str | None], slot: Slot, resendable: bool
    ) -> None:
        try:
            parsed = self._post(endpoint, body, headers, slot, "request", resendable)
            if parsed is not None:  # a JSON-RPC error body about this request
                self._sink.message({"jsonrpc": "2.0", "id": request_id, "error": parsed})
        except Aborted:
            pass
        except MCPError as exc:
            if not slot.aborted:
                self._sink.fail(request_id, exc)
        finally:
            with self._lock:
                self._inflight.pop(request_id, None)

    def _post(
        self,
        endpoint: str,
        body: bytes,
        headers: dict[str, str | None],
        slot: Slot,
        what: str,
        resendable: bool,
        timeout: float | None = None,
    ) -> Any:
        """POST; the answer comes on the stream, so 2xx is all we want. Returns a JSON-RPC error dict
        when the server refused with one, raises for other failures."""
        response = self.exchange(
            "POST", endpoint, slot, headers=headers, body=body, safe_to_resend=resendable, timeout=timeout
        )
        try:
            if 200 <= response.status_code < 300:
                return None
            parsed, error = self.error_for(response, f"POST {what}")
            rpc_error = jsonrpc_error(parsed)
            if rpc_error is not None and response.status_code not in (401, 403, *UNAVAILABLE):
                return rpc_error
            raise error
        finally:
            slot.finish()
            response.close()

    def _read_stream(self) -> None:
        slot = self._stream_slot
        started = False
        reason = "the HTTP+SSE stream ended"
        try:
            response = self.exchange("GET", self.url, slot, headers={"Accept": "text/event-stream"})
        except Aborted:  # close() while connecting: start() must not wait out endpoint_timeout
            self._start_error = ConnectionClosed("the HTTP+SSE transport was closed while connecting")
            self._ready.set()
            return
        except MCPError as exc:
            self._start_error = exc
            self._ready.set()
            return
        try:
            if response.status_code != 200 or content_type(response) != "text/event-stream":
                self._start_error = self.error_for(response, "GET (HTTP+SSE stream)")[1]
                return
            for event in self.events(response):
                if not started:
                    if event.event == "endpoint" and event.data:
                        self._set_endpoint(event.data.strip())
                        started = self._start_error is None
                        if not started:
                            return
                        self._ready.set()
                    elif event.data:
                        self._start_error = ProtocolError(
                            f"{self.safe_url}: the first SSE event is {event.event!r}, not 'endpoint'"
                        )
                        return
                    continue
                if event.event == "message" and event.data:
                    self._deliver(event.data)
        except BadBody as exc:
            reason = f"the HTTP+SSE stream could not be read: {exc}"
            log.warning("mcp_sync: %s", reason)
        except STREAM_ERRORS as exc:
            reason = f"the HTTP+SSE stream broke: {describe_failure(exc)}"
        finally:
            slot.finish()
            response.close()
            if not started and self._start_error is None:
                self._start_error = ConnectionClosed(f"{self.safe_url}: the stream ended before the 'endpoint' event")
            self._ready.set()
        if started and not self._closing:
            self._sink.closed(ConnectionClosed(reason))

    def _set_endpoint(self, data: str) -> None:
        try:
            self.endpoint = same_origin(data, self.url, "the endpoint event's URL")
        except ProtocolError as exc:
            self._start_error = exc

    def _deliver(self, data: str) -> None:
        try:
            message = json.loads(data)
        except (ValueError, RecursionError):
            log.warning("mcp_sync: %s sent an SSE event that is not JSON (skipped): %.200r", self.name, data)
            return
        self._sink.message(message)

    def __repr__(self) -> str:
        return f"<SseTransport {self.safe_url!r} endpoint={redact_url(self.endpoint) if self.endpoint else None!r}>"
