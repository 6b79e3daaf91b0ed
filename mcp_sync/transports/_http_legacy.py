"""Legacy Streamable HTTP sessions (2025-03-26 ... 2025-11-25), mixed into HttpTransport:
renewing an expired session, the GET stream and the DELETE at close (checklist LG3, LG5).

Kept apart from :mod:`.http` so that module reads as the request path; this
one only runs once an ``initialize`` has made the connection legacy.
"""

from __future__ import annotations

import abc
import json
import logging
import re
import threading
from typing import Any, Iterator, Mapping

from ..exceptions import ConnectionClosed, MCPError, ProtocolError, SessionExpiredError
from ._http_common import (
    STREAM_ERRORS,
    Aborted,
    HttpBase,
    Slot,
    content_type,
    describe_failure,
    header_safe,
    jsonrpc_error,
    session_id_of,
)
from ._sse_stream import BadBody
from .base import MessageSink, encode_message

log = logging.getLogger("mcp_sync.http")

DEFAULT_RETRY_S = 0.5  # LG6: reconnect delay when the server sent no retry field
MAX_LISTEN_FAILURES = 5


#: Words with which servers say that they do not know the session a request named
#: (server-everything: "Bad Request: No valid session ID provided"; others: "Session not
#: found", "Invalid or expired session", "Unknown session id").
_SESSION_GONE = re.compile(
    r"\bsession\b.{0,40}\b(invalid|unknown|no valid|not found|expired|terminated|missing)\b|"
    r"\b(invalid|unknown|no valid|expired|missing)\b.{0,40}\bsession\b"
    # a session the server holds but never saw initialized (the TypeScript SDK's wording)
    r"|\bserver not initialized\b",
    re.IGNORECASE,
)


def session_refused(status: int, body: tuple[Any, Any] | None) -> bool:
    """True when a 400 answer proves the server does not know our session: its JSON-RPC
    error says the session id is unknown, invalid or missing (so the request did not run)."""
    if status != 400 or body is None:
        return False
    error = jsonrpc_error(body[0])
    message = error.get("message") if error is not None else None
    return isinstance(message, str) and _SESSION_GONE.search(message[:500]) is not None


class LegacySession(HttpBase):
    """Session state and the legacy-only threads; HttpTransport provides the request path."""

    _sink: MessageSink
    _session_id: str | None
    _protocol_version: str | None
    _init_message: dict[str, Any] | None
    _initialized_message: dict[str, Any] | None
    _listen_slot: Slot | None
    _listening: bool
    _listen_ready: threading.Event
    _session_lock: threading.Lock
    _stream_epoch: int  # counts the GET streams opened (#19.2)
    _stream_open: bool

    @property
    def notification_stream(self) -> Any:
        """A new token each time the session's GET stream opens; None while none is open."""
        delegate = self.delegate
        if delegate is not None:
            return delegate.notification_stream
        return self._stream_epoch if self._stream_open else None

    # What HttpTransport provides (declared here for the type checker; the bodies are its own).

    @property
    @abc.abstractmethod
    def delegate(self) -> Any:
        """The HTTP+SSE transport this one fell back to, if it did."""

    @abc.abstractmethod
    def _send_oneway(
        self, message: dict[str, Any], extra: Mapping[str, str | None] | None, version: str | None,
        resent: bool = False, session: str | None = None,
    ) -> None:
        """POST a notification or a response on the calling thread (on ``session`` if given)."""

    @abc.abstractmethod
    def _post_headers(
        self, message: dict[str, Any], extra: Mapping[str, str | None] | None, version: str | None,
        session_id: str | None,
    ) -> dict[str, str | None]:
        """The headers of a POST of ``message``."""

    @abc.abstractmethod
    def _deliver_text(self, text: str, request_id: Any, method: str | None) -> bool:
        """Hand an SSE event's JSON to the sink; True when it answers ``request_id``."""

    def _renew_session(self, stale: str) -> None:
        """The server forgot session ``stale``: replay initialize + initialized.

        Concurrent callers that hit the same 404 wait here and find it renewed.
        If it cannot be renewed the transport is finished (``sink.closed``).
        """
        with self._session_lock:
            if self._session_id != stale:
                return
            init = self._init_message
            log.info("mcp_sync: the server %s no longer knows our HTTP session; starting a new one", self.name)
            try:
                assert init is not None, "a session id comes only from the answer to an initialize"
                renewed = self._replay_initialize(init)
            except MCPError as exc:
                error = SessionExpiredError(
                    f"the server no longer knows the HTTP session and a new one could not start: {exc}; "
                    "reconnect the client once the server is back"
                )
                self._sink.closed(error)
                self._abandon_exchanges()  # their answers can never come: end them now (#22.7)
                raise error from exc
            # The new session is published only once it is initialized: a request sent meanwhile
            # goes on the stale one, is refused, and waits here for the new one (on a session not
            # yet initialized, or with none, a TypeScript server answers 400 "Server not
            # initialized", which says nothing of a session to renew).
            if self._initialized_message is not None:
                self._send_oneway(self._initialized_message, None, None, resent=True, session=renewed)
            self._session_id = renewed
        self._sink.session_renewed()  # the new session holds none of the old one's state

    def _abandon_exchanges(self) -> None:
        """End every exchange still under way (the session they belong to is gone)."""

    def _replay_initialize(self, init: dict[str, Any]) -> str | None:
        """POST ``init`` again; returns the new session's id (not yet published)."""
        with self._oneway_slot() as slot:
            response = self.exchange(
                "POST", self.url, slot, headers=self._post_headers(init, None, None, None), body=encode_message(init)
            )
            try:
                if not 200 <= response.status_code < 300:
                    raise self.error_for(response, "initialize (new session)")[1]
                renewed = session_id_of(response)
                answers: Iterator[Any]
                if content_type(response) == "text/event-stream":
                    answers = (json.loads(e.data) for e in self.events(response) if e.data)
                else:
                    answers = iter([self.read_json(response)])
                for answer in answers:
                    if isinstance(answer, dict) and answer.get("id") == init.get("id") and "method" not in answer:
                        if "error" in answer:
                            raise ProtocolError(f"initialize (new session) failed: {answer['error']!r:.200}")
                        return renewed
                    self._sink.message(answer)
                raise ProtocolError("initialize (new session): no answer")
            except (BadBody, RecursionError, *STREAM_ERRORS) as exc:
                raise ProtocolError(f"initialize (new session): {exc}") from exc
            finally:
                slot.finish()
                response.close()

    def _start_listening(self) -> None:
        with self._lock:
            if self._listening or self._closing:
                return
            self._listening = True
        try:
            self._spawn(self._listen, "listen")
        except ConnectionClosed:
            self._listening = False

    def _listen(self) -> None:
        """The legacy GET stream: unsolicited server messages; 405 means none is offered.

        A 404, or a 400 saying the session is unknown, means the server forgot the
        session (restarted, expired): the session is renewed here, once until the
        new one has carried an event, so a client that only listens recovers too.
        """
        failures, last_id, retry_ms = 0, None, None
        may_renew = True
        try:
            while not self._closing:
                slot = Slot()
                with self._lock:
                    if self._closing:
                        return
                    self._listen_slot = slot
                session_id = self._session_id
                try:
                    response = self.exchange("GET", self.url, slot, headers=self._get_headers(last_id))
                except Aborted:
                    return
                except MCPError as exc:
                    log.debug("mcp_sync: GET stream of %s: %s", self.name, exc)
                    response = None
                finally:
                    self._listen_ready.set()  # answered (or failed): nobody waits on it any longer
                if response is not None:
                    try:
                        status = response.status_code
                        body = self.error_for(response, "GET stream") if status == 400 else None
                        gone = session_id is not None and (status == 404 or session_refused(status, body))
                        if gone and may_renew and session_id is not None:
                            may_renew, last_id = False, None
                            response.close()
                            self._renew_session(session_id)  # raises (and ends the transport) if it cannot
                            continue
                        if status in (404, 405):  # none offered, or the session is gone for good
                            log.debug("mcp_sync: %s offers no GET stream (HTTP %s)", self.name, status)
                            return
                        if status == 200 and content_type(response) == "text/event-stream":
                            with self._lock:
                                self._stream_epoch += 1
                                self._stream_open = True
                            for event in self.events(response):
                                failures, may_renew = 0, True
                                last_id = header_safe(event.id) or last_id
                                retry_ms = event.retry_ms if event.retry_ms is not None else retry_ms
                                if event.data:
                                    self._deliver_text(event.data, None, None)
                    except BadBody as exc:
                        log.warning("mcp_sync: GET stream of %s: %s", self.name, exc)
                    except STREAM_ERRORS:
                        pass
                    finally:
                        self._stream_open = False
                        slot.finish()
                        response.close()
                failures += 1
                if failures > MAX_LISTEN_FAILURES:
                    log.warning("mcp_sync: giving up on the GET stream of %s after %d attempts", self.name, failures)
                    return
                delay = retry_ms / 1000 if retry_ms is not None else min(DEFAULT_RETRY_S * 2 ** (failures - 1), 8.0)
                if self._closed_event.wait(delay):
                    return
        except MCPError as exc:  # the session could not be renewed: the transport has ended
            log.debug("mcp_sync: GET stream of %s ends: %s", self.name, exc)
        except Exception:  # a bug must be seen, not end the stream silently
            log.exception("mcp_sync: the GET stream of %s failed", self.name)
        finally:
            self._stream_open = False
            self._listen_ready.set()
            with self._lock:
                self._listening = False

    def _delete_session(self) -> None:
        """End the session; 404/405 (already gone, not allowed) are fine."""  # LG3
        try:
            response = self.send_once(  # close() must not wait long for a goodbye
                "DELETE", self.url, self._get_headers(None), None, 2.0, connect_timeout=min(self.connect_timeout, 2.0)
            )
            response.close()
            if response.status_code not in (200, 202, 204, 404, 405):
                log.debug("mcp_sync: DELETE of the session answered HTTP %s", response.status_code)
        except Exception as exc:  # closing never fails on a server that went away
            log.debug("mcp_sync: DELETE of the session failed: %s", describe_failure(exc))

    def _legacy_version(self) -> str | None:
        version = self._protocol_version
        return version if version is not None and version >= "2025-06-18" else None  # LG2: none before

    def _get_headers(self, last_event_id: str | None) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._session_id is not None:
            headers["Mcp-Session-Id"] = self._session_id
        legacy_version = self._legacy_version()
        if legacy_version is not None:
            headers["MCP-Protocol-Version"] = legacy_version
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        return headers
