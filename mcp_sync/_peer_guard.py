"""The connect-time half of the OAuth flow's SSRF guards.

:meth:`UrlPolicy.check <mcp_sync._oauth_flow.UrlPolicy.check>` looks a URL's host name up
before a request; the connection then looks it up again, and a name that resolved to a
public address the first time may resolve to ``169.254.169.254`` or ``127.0.0.1`` the
second (DNS rebinding). So the address a connection actually reached is checked too: right
after the TCP connect (before TLS, before a byte of the request is written) and again each
time a kept-alive connection is reused. A refused connection is closed and the request fails
with the policy's :class:`~mcp_sync.AuthorizationError`.

Through a proxy the connected address is the proxy's, which says nothing about the target:
the name check alone applies then (the proxy resolves the name).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator

from requests.adapters import HTTPAdapter
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from .exceptions import AuthorizationError
from .transports._http_common import _TrackedHTTPConnection, _TrackedHTTPSConnection, close_pools_on_clear

_current = threading.local()  # (policy, url, step) of the request this thread is making, or None


@contextlib.contextmanager
def guarding(policy: Any, url: str, step: str) -> Iterator[None]:
    """Around a request whose connections must pass ``policy.check_address(url, address, step)``;
    a refusal is raised as the policy's AuthorizationError in place of requests' wrapped error."""
    _current.state, _current.refused = (policy, url, step), None
    try:
        yield
    finally:
        refused: AuthorizationError | None = _current.refused
        _current.state = _current.refused = None
        if refused is not None:
            raise refused  # the refusal is what explains the failure


class _Checked:
    """Mixed into urllib3's connections: the peer address is checked before the request goes out."""

    def _check_peer(self, sock: Any) -> None:
        state = getattr(_current, "state", None)
        if state is None:
            return
        policy, url, step = state
        try:
            address = sock.getpeername()[0]
        except (OSError, IndexError, TypeError):
            return  # not connected: the request fails on its own
        try:
            policy.check_address(url, str(address), step)
        except AuthorizationError as refused:
            _current.refused = refused
            sock.close()
            raise ConnectionRefusedError(str(refused)) from None

    def _new_conn(self) -> Any:
        sock = super()._new_conn()  # type: ignore[misc]
        self._check_peer(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "sock", None) is not None:  # a kept-alive connection: checked again
            self._check_peer(self.sock)  # type: ignore[attr-defined]
        return super().request(*args, **kwargs)  # type: ignore[misc]


# On top of the transports' socket-tracking connections: each socket is reported to the
# exchange's Slot from before it connects, so the flow's deadline can shut it down mid-read
# (the peer check runs on the connected socket, the tracking from before the connect).
class _CheckedHTTPConnection(_Checked, _TrackedHTTPConnection):
    pass


class _CheckedHTTPSConnection(_Checked, _TrackedHTTPSConnection):
    pass


class _CheckedPool(HTTPConnectionPool):
    ConnectionCls = _CheckedHTTPConnection


class _CheckedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _CheckedHTTPSConnection


class PeerCheckingAdapter(HTTPAdapter):
    """An HTTPAdapter whose direct connections are checked against the policy of :func:`guarding`
    (and tracked, like the transports' own adapter, so that a deadline can abort them).

    Requests through a proxy go through requests' proxy managers, which use urllib3's own
    connection classes: they are not checked here (the peer would be the proxy).
    """

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": _CheckedPool, "https": _CheckedHTTPSPool}
        close_pools_on_clear(self.poolmanager)  # closing the session closes the connections (#22.4)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        return close_pools_on_clear(super().proxy_manager_for(proxy, **proxy_kwargs))
