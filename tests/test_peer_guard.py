"""The connect-time SSRF check on sockets it cannot judge: a connection the server has already
reset has no peer address any more, so it is let through unjudged (sending on it fails by
itself) rather than refused in the guard's name; a connected one to a forbidden address is
closed and refused, the refusal raised when the guarded request ends."""

from __future__ import annotations

import socket
import struct
from typing import Any, Iterator

import pytest

import mcp_sync
from mcp_sync._oauth_flow import UrlPolicy
from mcp_sync._peer_guard import _CheckedHTTPConnection, guarding

TARGET = "https://auth.example.com/token"


def public_dns(host: str, port: int, *args: Any) -> list[Any]:
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", port))]


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """A loopback TCP connection: (the client's socket, the server's)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        ours = socket.create_connection(listener.getsockname(), timeout=5)
        theirs, _ = listener.accept()
    yield ours, theirs
    ours.close()
    theirs.close()


def test_a_connection_the_server_reset_is_not_judged(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, theirs = pair
    theirs.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    theirs.close()  # an RST: the client's socket is no longer connected
    policy = UrlPolicy("https://mcp.example.com/mcp", resolve=public_dns)  # would refuse 127.0.0.1
    with guarding(policy, TARGET, "token"):
        _CheckedHTTPConnection("auth.example.com", 443)._check_peer(ours)
    assert ours.fileno() != -1  # not closed by the guard: the request's own send reports the failure


def test_a_connected_socket_to_a_forbidden_address_is_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    ours, _ = pair
    policy = UrlPolicy("https://mcp.example.com/mcp", resolve=public_dns)
    with pytest.raises(mcp_sync.AuthorizationError, match=r"a connection to 127\.0\.0\.1") as caught:
        with guarding(policy, TARGET, "token"):
            with pytest.raises(ConnectionRefusedError):
                _CheckedHTTPConnection("auth.example.com", 443)._check_peer(ours)
    assert caught.value.step == "token" and ours.fileno() == -1
