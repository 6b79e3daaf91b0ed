"""Every error mcp_sync raises, rooted at :class:`MCPError`.

::

    MCPError
    ├── ServerError                  the server answered with a JSON-RPC error (.code .message .data)
    │   ├── ResourceNotFound         read_resource of a missing resource (-32602 or -32002, both eras)
    │   ├── UrlElicitationRequiredError   -32042: the user must visit a URL first (.elicitations, .urls)
    │   └── UnsupportedProtocolVersionError   -32022, or no mutually supported revision
    ├── CapabilityError              the server lacks the capability a method needs (nothing sent)
    ├── RequestTimeout               no answer within the timeout (also a TimeoutError)
    ├── Cancelled                    the request's CancellationToken fired
    ├── ConnectionClosed             the transport ended while the request waited
    │   └── SessionExpiredError      legacy HTTP session gone and the request is unsafe to repeat
    ├── ProtocolError                the answer is not valid MCP / JSON-RPC, or too large (.status: an HTTP status)
    │   └── ServerUnavailable        HTTP 429/502/503/504 after the safe retries (.status .retry_after)
    │       └── ServerUnreachable    HTTP: refused, reset or cut off before the answer (also a ConnectionClosed)
    ├── PaginationLimitError         max_pages pages walked, or a cursor repeated
    ├── InputRequiredError           the server asked for input no handler can give
    ├── ToolError                    call_tool(raise_on_error=True) got an isError result
    ├── AuthorizationError           OAuth failed or was refused (.step .url)
    │   └── InsufficientScopeError   step-up authorizations did not get the scope (.scope)
    ├── HandlerError                 your on_elicitation / on_sampling / on_roots raised or answered wrongly
    ├── InvalidArguments             arguments break the tool's inputSchema (validate=True; also a ValueError)
    └── ClientStateError             misuse: a request on a closed client (also a RuntimeError)

    ServerRequestError               raised by *handlers* to answer the server with an error

Errors the server sent and errors made locally are different classes: only
:class:`ServerError` and its subclasses carry a code that came from the peer.
"""

from __future__ import annotations

import pickle
from typing import Any


class MCPError(Exception):
    """Root of every error mcp_sync raises.

    ``method`` and ``request_id`` name the request the error belongs to, when
    there is one.

    Example::

        try:
            client.call_tool("echo", {"text": "hi"})
        except mcp_sync.MCPError as e:
            print(type(e).__name__, e.message, e.method)
    """

    def __init__(self, message: str, *, method: str | None = None, request_id: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.method = method
        self.request_id = request_id

    def _repr_html_(self) -> str:
        from . import _display

        return _display.error_html(self)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle every subclass, wherever defined, with its attributes (issue #18.18).

        ``BaseException`` pickles as ``cls(*self.args)``, which fails for any
        class whose ``__init__`` takes keywords (``ServerError(code, message)``,
        ``HandlerError(..., handler=...)``): an error raised in a
        ``ProcessPoolExecutor`` worker then reaches the parent as a TypeError.
        Rebuilding without ``__init__`` from ``args`` and ``__dict__`` works for
        any signature. An attribute that cannot be pickled (a result holding a
        lock) becomes None and is named in ``__notes__``; ``__cause__`` goes
        along when it pickles.

        Example::

            e = pickle.loads(pickle.dumps(mcp_sync.ServerError(-32000, "boom", method="tools/call")))
            assert (e.code, e.message, e.method) == (-32000, "boom", "tools/call")
        """
        state: dict[str, Any] = {}
        dropped: list[str] = []
        for name, value in self.__dict__.items():
            if _picklable(value):
                state[name] = value
            else:
                state[name] = None
                dropped.append(f"{name} ({type(value).__name__})")
        if dropped:
            notes = [*state.get("__notes__", ()), f"not pickled, set to None: {', '.join(dropped)}"]
            state["__notes__"] = notes
        cause = self.__cause__ if _picklable(self.__cause__) else None
        return (_rebuild_error, (type(self), self.args, state, cause))


def _picklable(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True  # the common case, without serialising twice
    try:
        pickle.dumps(value)
    except Exception:  # any failure (TypeError, PicklingError, a __reduce__ raising) means "no"
        return False
    return True


def _rebuild_error(cls: type[MCPError], args: tuple[Any, ...], state: dict[str, Any], cause: Any) -> MCPError:
    """Unpickle an MCPError: create it without running ``__init__`` (whose signature varies)."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    if cause is not None:
        error.__cause__ = cause
    return error


class ServerError(MCPError):
    """The server answered a request with a JSON-RPC error.

    Example::

        try:
            client.call_tool("nope", {})
        except mcp_sync.ServerError as e:
            print(e.code, e.message, e.data)
    """

    def __init__(
        self,
        code: int,
        message: str,
        data: Any = None,
        *,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.code = code
        self.data = data

    def __str__(self) -> str:
        where = f" ({self.method})" if self.method else ""
        return f"[{self.code}] {self.message}{where}"


class ResourceNotFound(ServerError):
    """``read_resource`` named a resource the server does not have.

    Example::

        try:
            text = client.read_resource("file:///missing.txt").text
        except mcp_sync.ResourceNotFound as e:
            text = None   # e.code: -32602, or -32002 (older servers), in either era
    """


class UrlElicitationRequiredError(ServerError):
    """The server needs the user to complete a URL elicitation first (error -32042).

    ``elicitations`` lists what the server sent (each with ``url``,
    ``elicitationId`` and ``message``); ``urls`` are just the URLs. Show them to
    the user, then call again.

    Example::

        try:
            client.call_tool("list_files", {})
        except mcp_sync.UrlElicitationRequiredError as e:
            for url in e.urls:
                print("please open", url)
    """

    @property
    def elicitations(self) -> list[dict[str, Any]]:
        data = self.data if isinstance(self.data, dict) else {}
        items = data.get("elicitations")
        return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []

    @property
    def urls(self) -> list[str]:
        return [item["url"] for item in self.elicitations if isinstance(item.get("url"), str)]


class UnsupportedProtocolVersionError(ServerError):
    """The server and the client share no protocol revision.

    ``supported`` lists what the server said it speaks (may be empty).

    Example::

        try:
            client.connect()
        except mcp_sync.UnsupportedProtocolVersionError as e:
            print("the server speaks", e.supported)
    """

    @property
    def supported(self) -> list[str]:
        data = self.data if isinstance(self.data, dict) else {}
        supported = data.get("supported")
        return [v for v in supported if isinstance(v, str)] if isinstance(supported, list) else []


class CapabilityError(MCPError):
    """The server's capabilities lack the one this method needs; nothing was sent.

    Example::

        try:
            prompts = list(client.prompts())
        except mcp_sync.CapabilityError:   # the server did not declare "prompts"
            prompts = []
    """


class RequestTimeout(MCPError, TimeoutError):
    """No answer arrived within the timeout; the request was cancelled on the wire.

    Example::

        try:
            client.call_tool("slow", {}, timeout=5)
        except mcp_sync.RequestTimeout:   # also a TimeoutError
            print("no answer within 5 s")
    """


class Cancelled(MCPError):
    """The request's :class:`~mcp_sync.CancellationToken` fired.

    ``reason`` is the reason given to ``token.cancel()``.

    Example::

        try:
            client.call_tool("slow", {}, cancel=token)
        except mcp_sync.Cancelled as e:
            print("stopped:", e.reason)
    """

    def __init__(
        self, message: str, *, reason: str | None = None, method: str | None = None, request_id: Any = None
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.reason = reason

    def __str__(self) -> str:
        if self.reason and self.reason not in self.message:
            return f"{self.message} (reason: {self.reason})"
        return self.message


class ConnectionClosed(MCPError):
    """The connection ended while the request waited (process exit, broken stream).

    For stdio, ``exit_code`` and ``stderr_tail`` tell how the server went, and
    ``unread_input`` how many bytes of what the client wrote it never read (a
    server that exits at start, before reading anything, leaves them all).

    Example::

        try:
            client.call_tool("crash", {})
        except mcp_sync.ConnectionClosed as e:
            print(e.exit_code, e.stderr_tail)   # a stdio server restarts on the next request
    """

    def __init__(
        self,
        message: str,
        *,
        exit_code: int | None = None,
        stderr_tail: str = "",
        method: str | None = None,
        request_id: Any = None,
        unread_input: int = 0,
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail
        self.unread_input = unread_input


class SessionExpiredError(ConnectionClosed):
    """A legacy HTTP session expired and the request may not be repeated safely.

    Example::

        try:
            client.call_tool("charge", {"amount": 5})
        except mcp_sync.SessionExpiredError:
            ...   # the call may or may not have run: call again only if repeating it is safe
    """


class ProtocolError(MCPError):
    """The answer is not valid MCP / JSON-RPC, or exceeds ``max_message_bytes``.

    ``status`` is the HTTP status when an HTTP server refused the request with
    one (404, 400, 500, ...), else None.

    Example::

        try:
            result = client.read_resource("file:///huge.bin")
        except mcp_sync.ProtocolError as e:   # malformed, or larger than max_message_bytes
            print("bad answer from the server:", e, e.status)
    """

    def __init__(
        self, message: str, *, method: str | None = None, request_id: Any = None, status: int | None = None
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.status = status


class ServerUnavailable(ProtocolError):
    """HTTP 429, 502, 503 or 504, still, after the client's own safe retries.

    The server is overloaded, rate-limiting or behind a failing gateway: try
    again later. ``status`` is the HTTP status; ``retry_after`` the seconds
    the server's ``Retry-After`` header asked for (delay-seconds or an HTTP
    date), or None when it sent none. A request that is not safe to repeat
    (``tools/call``) is never retried by the client itself: whether to call
    again is yours to decide.

    Example::

        try:
            result = client.call_tool("search", {"q": "x"})
        except mcp_sync.ServerUnavailable as e:
            time.sleep(e.retry_after or 1.0)   # then try again, or tell the user
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message, method=method, request_id=request_id, status=status)
        self.retry_after = retry_after


class ServerUnreachable(ServerUnavailable, ConnectionClosed):
    """An HTTP server could not be reached, or the connection broke before its answer (a
    restart, a crash, a reset), still, after the client's own safe retries.

    Both a :class:`ServerUnavailable` (one ``except`` maps every "not now" to 503 +
    ``Retry-After``) and a :class:`ConnectionClosed` (what such failures raised before, so
    ``except ConnectionClosed`` still catches them). ``status`` is None (no HTTP status
    came), ``retry_after`` a hint of 1 s (the server gave none: a restart usually takes
    about that).

    ``may_have_run`` says whether the request may have reached the server. False: it
    provably did not (the connect failed, or writing the request failed before all of it
    was sent): the client sent it again itself, whatever the method, and this is what is
    left after those retries. True: it was written and the answer never came (the stream
    ended, the connection was reset while waiting): reads and lists were sent again, a
    ``tools/call`` never is, as it may have run; whether to call again is yours to decide.

    Example::

        try:
            result = client.call_tool("charge", {"amount": 5})
        except mcp_sync.ServerUnreachable as e:
            if e.may_have_run:
                ...   # check before charging again
            time.sleep(e.retry_after or 1.0)
    """

    def __init__(
        self,
        message: str,
        *,
        may_have_run: bool = True,
        retry_after: float | None = 1.0,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        ServerUnavailable.__init__(
            self, message, status=None, retry_after=retry_after, method=method, request_id=request_id
        )
        # ConnectionClosed's attributes: this is one too (no process, nothing on stderr)
        self.exit_code: int | None = None
        self.stderr_tail = ""
        self.unread_input = 0
        self.may_have_run = may_have_run


class PaginationLimitError(MCPError):
    """An all-pages iterator walked ``max_pages`` pages or saw a cursor twice.

    Example::

        try:
            tools = list(client.tools())   # bounded by Client(..., max_pages=1000)
        except mcp_sync.PaginationLimitError:
            tools = client.list_tools().items   # the first page only
    """


class InputRequiredError(MCPError):
    """The server asked for input that no handler can give, or the round bound was hit.

    ``input_requests`` and ``request_state`` let the caller answer by hand::

        except mcp_sync.InputRequiredError as e:
            answers = {key: my_answer(req) for key, req in e.input_requests.items()}
            client.call_tool(name, args, input_responses=answers, request_state=e.request_state)
    """

    def __init__(
        self,
        message: str,
        *,
        input_requests: dict[str, Any] | None = None,
        request_state: str | None = None,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.input_requests = input_requests or {}
        self.request_state = request_state


class ToolError(MCPError):
    """``call_tool(..., raise_on_error=True)`` and the tool reported ``isError``.

    ``result`` is the :class:`~mcp_sync.CallToolResult`.

    Example::

        try:
            client.call_tool("divide", {"a": 1, "b": 0}, raise_on_error=True)
        except mcp_sync.ToolError as e:
            print(e.result.text)   # the tool's own error message
    """

    def __init__(
        self, message: str, *, result: Any = None, method: str | None = None, request_id: Any = None
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.result = result


class AuthorizationError(MCPError):
    """OAuth failed or the server refused the credentials.

    ``step`` names the part of the OAuth flow that failed (``"discovery"``,
    ``"registration"``, ``"authorization"`` or ``"token"``; None when the
    error is not from :class:`mcp_sync.OAuth`) and ``url`` the URL it failed
    at. Neither the message nor these attributes ever hold a secret or token.

    Example::

        try:
            client = mcp_sync.connect("https://example.com/mcp")
        except mcp_sync.AuthorizationError as e:   # e.g. HTTP 401 or 403
            print("not authorized:", e, e.step, e.url)
    """

    def __init__(
        self,
        message: str,
        *,
        step: str | None = None,
        url: str | None = None,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.step = step
        self.url = url


class InsufficientScopeError(AuthorizationError):
    """The server still answers ``403 insufficient_scope`` after the allowed step-up
    authorizations: the user (or the client's registration) cannot get the scope.

    ``scope`` is what the server asked for last, ``error_description`` its explanation
    (either may be None).

    Example::

        try:
            client.call_tool("delete_repo", {"name": "x"})
        except mcp_sync.InsufficientScopeError as e:
            print("needs scope", e.scope, "-", e.error_description)
    """

    def __init__(
        self,
        message: str,
        *,
        scope: str | None = None,
        error_description: str | None = None,
        step: str | None = "authorization",
        url: str | None = None,
    ) -> None:
        super().__init__(message, step=step, url=url)
        self.scope = scope
        self.error_description = error_description


class HandlerError(MCPError):
    """A handler you registered raised, or returned something that is not a valid answer.

    ``handler`` names it (``"on_elicitation"``, ``"on_sampling"``, ``"on_roots"``);
    the exception it raised, if any, is ``__cause__``. The call that led the
    server to ask raises it, in both eras; a 2025-11-25 server has also been
    answered with an internal error (-32603). To refuse on purpose, raise
    :class:`ServerRequestError` from the handler instead.

    Example::

        try:
            client.call_tool("ask_name", {})
        except mcp_sync.HandlerError as e:
            print(e.handler, "failed:", e.__cause__ or e)
    """

    def __init__(self, message: str, *, handler: str, method: str | None = None, request_id: Any = None) -> None:
        super().__init__(message, method=method, request_id=request_id)
        self.handler = handler


class ClientStateError(MCPError, RuntimeError):
    """The client was used in a state that does not allow it (e.g. after ``close()``).

    Example::

        client.close()
        client.call_tool("echo", {"text": "hi"})   # raises mcp_sync.ClientStateError (a RuntimeError)
    """


class ServerRequestError(Exception):
    """Raised by a handler (``on_elicitation``, ``on_sampling``, ``on_roots``) to answer
    the server with a JSON-RPC error.

    ``code=-1`` means the user refused. Any other exception from a handler becomes
    an internal-error (-32603) answer.

    Example::

        def on_sampling(params):
            raise mcp_sync.ServerRequestError("user declined", code=-1)
    """

    def __init__(self, message: str, code: int = -1, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.data = data


# JSON-RPC / MCP codes the client gives a class of its own.
UNSUPPORTED_PROTOCOL_VERSION = -32022
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
HEADER_MISMATCH = -32020
RESOURCE_NOT_FOUND_LEGACY = -32002
URL_ELICITATION_REQUIRED = -32042
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


def server_error_from(error: Any, *, method: str | None = None, request_id: Any = None) -> MCPError:
    """Build the right :class:`ServerError` subclass from a JSON-RPC ``error`` member."""
    if not isinstance(error, dict) or not isinstance(error.get("code"), int):
        return ProtocolError(f"malformed JSON-RPC error: {error!r:.200}", method=method, request_id=request_id)
    code = error["code"]
    message = error.get("message")
    message = message if isinstance(message, str) else ""
    cls: type[ServerError] = ServerError
    if code == UNSUPPORTED_PROTOCOL_VERSION:
        cls = UnsupportedProtocolVersionError
    elif code == URL_ELICITATION_REQUIRED:
        cls = UrlElicitationRequiredError
    data = error.get("data")
    if code == MISSING_REQUIRED_CLIENT_CAPABILITY and isinstance(data, dict) and data.get("requiredCapabilities"):
        # E4: name the capability, so the fix (register a handler) is obvious
        message = f"{message} (the server requires client capabilities {data['requiredCapabilities']})"
    return cls(code, message, error.get("data"), method=method, request_id=request_id)


class InvalidArguments(ValueError, MCPError):
    """Arguments that do not match the tool's ``inputSchema``; nothing was sent.

    Raised by ``call_tool(..., validate=True)`` and by every call of a client
    made with ``validate_input=True``. ``path`` is where the first mismatch is
    (``"$"`` is the arguments object itself), ``errors`` every mismatch found.

    Example::

        try:
            client.call_tool("add", {"a": "one"}, validate=True)
        except mcp_sync.InvalidArguments as e:
            print(e.path, e.errors)     # $.a ["$.a: 'one' is not of type 'number'"]
    """

    def __init__(
        self,
        message: str,
        *,
        path: str = "$",
        errors: list[str] | None = None,
        method: str | None = None,
        request_id: Any = None,
    ) -> None:
        MCPError.__init__(self, message, method=method, request_id=request_id)
        self.path = path
        self.errors = list(errors or [])
