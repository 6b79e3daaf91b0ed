"""The Transport interface: bytes in and out, nothing else.

A transport frames and moves JSON-RPC messages. It hands every parsed message
to a :class:`MessageSink` (the engine) and never matches ids, applies timeouts
or runs user code. Any object with these methods can be given to
``mcp_sync.Client(transport)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from ..exceptions import ConnectionClosed, MCPError


class MessageSink(Protocol):
    """What a transport reports to. Called from the transport's own threads."""

    def message(self, message: Any) -> None:
        """One parsed JSON value from the server (a dict, or a list for a batch)."""

    def fail(self, request_id: Any, error: MCPError) -> None:
        """The answer to ``request_id`` could not be read (too large, broken stream)."""

    def closed(self, error: ConnectionClosed) -> None:
        """The connection ended; ``error`` says how. Called at most once."""

    def session_renewed(self) -> None:
        """A legacy HTTP session expired and the transport started a new one."""  # LG3


class Transport(Protocol):
    """The three-and-a-bit methods the engine needs from a transport.

    ``send`` must not block for the answer: answers arrive through the sink.
    ``abort`` ends one request at the transport level and returns True when that
    *is* the cancellation (modern Streamable HTTP closes the response stream);
    False tells the engine to send ``notifications/cancelled`` instead.
    ``configure`` is told the era and protocol version once they are known.
    A transport may also take ``send(..., timeout=seconds)`` to bound the write
    itself (RequestTimeout when it cannot finish), and offer ``diagnostics() -> str``:
    what the server said that may explain a silence or an exit (stray output, its
    last stderr lines), or ``""``; the engine appends it to its errors.
    """

    name: str

    def start(self, sink: MessageSink) -> None: ...

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str] | None = None) -> None: ...

    def abort(self, request_id: Any) -> bool: ...

    def configure(self, *, era: str, protocol_version: str) -> None: ...

    def close(self) -> None: ...

