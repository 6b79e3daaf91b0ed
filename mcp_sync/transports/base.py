"""The Transport interface: bytes in and out, nothing else.

A transport frames and moves JSON-RPC messages. It hands every parsed message
to a :class:`MessageSink` (the engine) and never matches ids, applies timeouts
or runs user code. Any object with these methods can be given to
``mcp_sync.Client(transport)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol, Sequence

from .._values import encode_json

if TYPE_CHECKING:
    from ..exceptions import ConnectionClosed, MCPError


class EncodedObject(dict):  # type: ignore[type-arg]
    """A JSON object encoded once, for a value sent unchanged in many messages (the modern
    request envelope, ``params._meta``): :func:`encode_message` splices in the text made when it
    was built. So it is read-only: copy it to change it.

    Example: ``EncodedObject({"a": 1}).encoded == '{"a":1}'``
    """

    __slots__ = ("encoded",)

    def __init__(self, value: Mapping[str, Any]) -> None:
        super().__init__(value)
        self.encoded = encode_json(self)


def encode_message(message: Any) -> bytes:
    """One JSON-RPC message as compact UTF-8 JSON: the one encoding every transport sends.

    NaN and infinities raise ValueError (JSON has neither), as does a value that contains
    itself; a value JSON has no form for raises TypeError. A lone surrogate becomes the JSON
    escape ``\\udXXX``, never invalid UTF-8. A ``params._meta`` that is an
    :class:`EncodedObject` is not encoded again (it goes last in ``params``).

    Example: ``encode_message({"jsonrpc": "2.0", "method": "ping"})`` is
    ``b'{"jsonrpc":"2.0","method":"ping"}'``
    """
    params = message.get("params") if type(message) is dict else None
    if type(params) is dict:
        meta = params.get("_meta")
        if type(meta) is EncodedObject and next(reversed(message)) == "params":
            rest = dict(params)
            del rest["_meta"]
            text = encode_json({**message, "params": rest})  # ends with "}}": params', then the message's
            joint = ',"_meta":' if rest else '"_meta":'
            return (text[:-2] + joint + meta.encoded + "}}").encode("utf-8", "backslashreplace")
    return encode_json(message).encode("utf-8", "backslashreplace")


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


class _NoSink:
    """Where a transport reports before ``start()`` gave it the engine's sink: nowhere."""

    def message(self, message: Any) -> None: ...

    def fail(self, request_id: Any, error: MCPError) -> None: ...

    def closed(self, error: ConnectionClosed) -> None: ...

    def session_renewed(self) -> None: ...


#: The sink of a transport not started yet (what it would report then is dropped), so that a
#: transport need not check for "no sink" wherever it reports.
NO_SINK: MessageSink = _NoSink()


#: How to give a stdio server more of the environment, in Python's words, as its start errors say
#: (the CLI puts its own options in their place).
ENV_OPTIONS = '(env={...} or inherit_env=True in Python, "env" in a config entry)'


class Transport(Protocol):
    """The methods the engine needs from a transport.

    ``send`` must not block for the answer: answers arrive through the sink.
    ``abort`` ends one request at the transport level and returns True when that
    *is* the cancellation (modern Streamable HTTP closes the response stream);
    False tells the engine to send ``notifications/cancelled`` instead.
    ``configure`` is told the era and protocol version once they are known.
    What a transport can do beyond these it declares by deriving from
    :class:`BaseTransport` and setting its attributes; nobody probes for them.
    """

    name: str

    def start(self, sink: MessageSink) -> None: ...

    def send(self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None) -> None: ...

    def abort(self, request_id: Any) -> bool: ...

    def configure(self, *, era: str, protocol_version: str) -> None: ...

    def close(self) -> None: ...


class BaseTransport:
    """What a transport may declare beyond :class:`Transport`'s methods; each default means "no".

    mcp_sync's transports derive from it and set what they can do; a transport of
    your own may too. An object that does not derive from it is taken as
    declaring nothing (see :func:`declared`).

    Example::

        class MyTransport(BaseTransport):
            name = "my-server"
            target = "my://server"
            def start(self, sink): ...
            def send(self, message, *, headers=None): ...
            def abort(self, request_id): return False
            def configure(self, *, era, protocol_version): ...
            def close(self): ...
    """

    #: what thread and logger names call the server
    name: str = "server"
    #: what it connects to, for reprs and errors (a command line, a URL without secrets)
    target: str = ""
    #: the key of the credentials in use: private cached results are kept apart per key (HTTP)
    auth_context: Any = None
    #: ``send(message, headers=..., timeout=seconds)`` bounds the write itself (stdio: a server
    #: that stops reading its stdin); RequestTimeout when it cannot finish in time
    bounded_writes: bool = False
    #: ``send_inline(message, headers=..., deadline=...)`` exchanges a request on the calling
    #: thread, its answer still reaching the sink (Streamable HTTP: no thread per request)
    inline_sends: bool = False
    #: the arguments a listed tool marks with x-mcp-header go out as ``Mcp-Param-*`` headers
    mirrors_param_headers: bool = False
    #: ``send(message, headers=...)`` sends those headers with that one request (HTTP): a caller's
    #: per-request headers and credentials (``headers=``, ``Client.bind``) need it (#19.1)
    per_request_headers: bool = False

    @property
    def notification_stream(self) -> Any:
        """While the server's messages outside any request reach the sink (list_changed and
        the like), a token that changes whenever that delivery was interrupted; None while
        they do not. stdio: one token for the transport's life; legacy Streamable HTTP: a new
        one each time its GET stream opens, None while it is closed; HTTP+SSE: while its
        stream is open. A client keeps a list until it changes only under such a token (#19.2)."""
        return None

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (stdio); None otherwise."""
        return None

    @property
    def session_id(self) -> str | None:
        """The session id the server assigned (legacy Streamable HTTP's ``Mcp-Session-Id``); None
        where there is none. Traced requests carry it as ``mcp.session.id``."""
        return None

    def send_inline(
        self, message: dict[str, Any], *, headers: Mapping[str, str | None] | None = None, deadline: float | None = None
    ) -> None:
        """Only where ``inline_sends`` is declared."""
        raise NotImplementedError(f"{type(self).__name__} declares no inline sends")

    def defer_server_stream(self) -> None:
        """Open no stream for the server's messages outside requests until :meth:`open_server_stream`
        (called before the connection starts). Legacy Streamable HTTP: no GET stream at the
        handshake (the spec lets a client skip it); elsewhere nothing changes (stdio's pipe and
        HTTP+SSE's stream are the connection itself)."""

    def open_server_stream(self) -> None:
        """Open the stream of the server's messages outside requests now, if it was deferred
        (:meth:`defer_server_stream`); waits a bounded time for the server to answer it. Idempotent."""

    def diagnostics(self) -> str:
        """What the server said that may explain a silence or an exit (stray output, its last
        stderr lines), or ``""``; the engine appends it to its errors."""
        return ""


#: What a transport that does not derive from BaseTransport declares: nothing.
_NOTHING = BaseTransport()


def declared(transport: object) -> BaseTransport:
    """``transport``'s declared features: itself when it derives from BaseTransport, else the defaults."""
    return transport if isinstance(transport, BaseTransport) else _NOTHING


def command_target(command: str, args: Sequence[str]) -> str:
    """A command line for reprs, at most 120 characters."""
    import shlex

    line = shlex.join([command, *map(str, args)])
    return line if len(line) <= 120 else line[:117] + "..."
