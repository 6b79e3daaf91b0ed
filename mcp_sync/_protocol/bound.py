"""A session seen through a bound view (``Client.bind``): the same connection, its own credentials.

:class:`BoundSession` stands in for a :class:`~.session.Session` wherever the
facade uses one. Every request it sends carries the view's headers (its
``auth`` turned into headers, per request) and a credential key made of exactly
those headers, so that results cached for it are only ever served to a request
that sends the same credential (C5), whatever becomes of the objects that
produced them. On a
legacy HTTP server, where a session belongs to the credentials that opened it,
a view with credentials uses a session of its own instead (``own_session``,
made by the facade on first need). Everything else is the shared session's:
attribute reads go to it.

Thread-safe like the session; it holds no reference to a client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping

import attrs

from .._options import DEFAULT, CallOptions, credential_of
from ..exceptions import ClientStateError
from .connection import ClientState
from .session import Session

if TYPE_CHECKING:
    from .lifecycle import Negotiated


class BoundSession(Session):
    """``base`` with credentials: ``headers()`` gives the headers of each request (called per
    request, so a token that refreshes is read afresh), which also key its cached results;
    ``own_session()`` gives the session of its own on a legacy server (None: always shared);
    ``lease()`` gives it for one request, with what to call once the request is done (a session
    evicted meanwhile is closed only then, never under a request)."""

    def __init__(  # no super().__init__(): a view of ``base``, whose state it reads
        self,
        base: Session,
        *,
        headers: Callable[[], Mapping[str, str | None]],
        own_session: Callable[[], Session] | None,
        lease: Callable[[], tuple[Session, Callable[[], None]]] | None = None,
    ) -> None:
        self._base = base
        self._headers = headers
        self._own_session = own_session
        self._lease = lease

    def __getattr__(self, name: str) -> Any:
        """Everything but the request path is the shared (or own) session's."""
        if name.startswith("__"):
            raise AttributeError(name)
        if self._base.connection.live() is None:  # nothing to choose between yet; a read never connects
            return getattr(self._base, name)
        return getattr(self._target("connect", DEFAULT)[0], name)

    def _target(self, method: str, options: CallOptions) -> tuple[Session, CallOptions]:
        """The session a request goes to, and its options: which one is known once connected,
        so a view with credentials connects first, within the request's own deadline and token."""
        base = self._base
        if self._own_session is None or base.connection.state is ClientState.CLOSED:
            return base, options
        legacy, options = self._legacy(method, options)
        return (self._own_session() if legacy else base), options

    def _legacy(self, method: str, options: CallOptions) -> tuple[bool, CallOptions]:
        """Connected (within the request's deadline and token): is the server legacy? With the
        request's options (what is left of its deadline)."""
        negotiated = self._base.connection.live()
        if negotiated is None:
            negotiated, options = self._base.connected_within(method, options)
        return negotiated.era == "legacy", options

    def _checked(self, method: str, options: CallOptions) -> tuple[Session, CallOptions]:
        if self._base.connection.state is ClientState.CLOSED:
            raise ClientStateError("the client this view was bound from is closed")
        return self._target(method, options)

    def _leased(self, method: str, options: CallOptions) -> tuple[Session, CallOptions, Callable[[], None] | None]:
        """:meth:`_checked` for a request: a session of its own is held until ``release()``."""
        if self._base.connection.state is ClientState.CLOSED:
            raise ClientStateError("the client this view was bound from is closed")
        if self._lease is None:
            target, options = self._target(method, options)
            return target, options, None
        legacy, options = self._legacy(method, options)
        if not legacy:
            return self._base, options, None
        own, release = self._lease()
        return own, options, release

    def _options(self, target: Session, options: CallOptions) -> CallOptions:
        if target is not self._base:
            return options  # its own session carries the credentials itself
        # The credential key is what this request sends, read once: the cache can never pair it
        # with the results of other headers (an auth object's id would be reused once collected).
        headers = {**self._headers(), **(options.headers or {})}
        return attrs.evolve(options, headers=headers or None, credential=credential_of(headers))

    def send(self, method: str, params: dict[str, Any] | None = None, options: CallOptions = DEFAULT,
             traced: bool = False) -> dict[str, Any]:
        target, options, release = self._leased(method, options)
        try:
            return target.send(method, params, self._options(target, options), traced)
        finally:
            if release is not None:
                release()

    def send_cached(self, method: str, params: dict[str, Any] | None, options: CallOptions = DEFAULT
                    ) -> dict[str, Any]:
        target, options, release = self._leased(method, options)
        try:
            return target.send_cached(method, params, self._options(target, options))
        finally:
            if release is not None:
                release()

    def require(self, capability: str, method: str, options: CallOptions = DEFAULT) -> None:
        # Held like a request: a session of its own evicted by another view meanwhile would be
        # closed under the check, which then reads "the client is closed" (#29.3).
        target, options, release = self._leased(method, options)
        try:
            target.require(capability, method, options)
        finally:
            if release is not None:
                release()

    def connected_within(self, method: str, options: CallOptions) -> tuple[Negotiated, CallOptions]:
        target, options = self._checked(method, options)
        return target.connected_within(method, options)
