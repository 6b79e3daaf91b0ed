"""The blocking facade: :class:`Client`.

Public methods only: each checks its arguments, resolves its options once
into a frozen :class:`~._options.CallOptions`, asks the session
(:mod:`._protocol.session`) and turns the answer into a model. Nothing below
refers back to a client: the connection, the threads and the protocol state
live in the session, so a client nobody references is collected (and closed)
at once.
"""

from __future__ import annotations

import functools
import logging
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import attrs

from ._client_constructors import ClientConstructors, ViewSessions, pickle_recipe, unpickle_client
from ._client_lists import ListingMethods
from ._client_tasks import TaskMethods
from ._headers import AUTHORIZATION, HEADER_MISMATCH
from ._llm_formats import LLMFormatsMixin, ToolNames
from ._options import (
    CallOptions,
    ProgressCallback,
    Roots,
    call_options,
    check_mode,
    check_request_headers,
)
from ._progress import shows_progress
from ._protocol import input_required
from ._protocol.bound import BoundSession
from ._protocol.connection import ClientState
from ._protocol.session import LOG_LEVELS, Session, check_roots
from ._protocol.subscriptions import Subscription
from ._protocol.tasks import Task
from ._schemas import ToolSchemas
from ._sentinels import USE_CLIENT_DEFAULT, _Default
from ._tool_transform import ToolFilter, ToolRules, ToolTransform, map_call, server_tools
from ._typed import ResultT, build_result
from ._values import Timeout, check_json, check_timeout, check_tool_call, copy_json
from .cancellation import CancellationToken
from .exceptions import (
    INVALID_PARAMS,
    RESOURCE_NOT_FOUND_LEGACY,
    MCPError,
    ResourceNotFound,
    ServerError,
    ToolError,
    ToolNotFound,
)
from .models import (
    CallToolResult,
    Completion,
    DiscoverResult,
    GetPromptResult,
    ProgressEvent,
    Prompt,
    ReadResourceResult,
    ResourceTemplate,
    Tool,
)
from .transports.base import Transport, declared

if TYPE_CHECKING:
    from ._engine import Engine

log = logging.getLogger("mcp_sync")

__all__ = ["USE_CLIENT_DEFAULT", "BoundClient", "Client", "ClientState"]



class Client(ClientConstructors, ListingMethods, TaskMethods, LLMFormatsMixin):
    """A blocking MCP client. Thread-safe: share one between many threads.

    Build one with :meth:`stdio`, :meth:`http`, :meth:`sse` or
    :func:`mcp_sync.connect`; use it as a context manager or call
    :meth:`close`. Every method may be called from any thread, including from
    inside a callback (callbacks run on the client's dispatch thread).
    ``name=`` names it in reprs, thread names and loggers (see :attr:`name`).

    After ``os.fork()`` (gunicorn ``--preload``, multiprocessing), a client in
    the child leaves the parent's server process, sockets and threads alone and
    connects afresh on first use; the parent's connection is unaffected. A
    client built on a transport object cannot make a new one: in the child it
    is closed. An unclosed client that is no longer referenced is closed by
    the garbage collector, with a ``ResourceWarning``.

    Handlers: ``on_elicitation(params) -> ElicitResult`` (``url_elicitation=True``
    also accepts URL-mode requests), ``on_sampling(params) -> CreateMessageResult``,
    ``on_roots`` (a list, or a callable returning one). A handler with one more
    parameter (``on_sampling(params, context)``, ``on_roots(context)``) also gets
    a :class:`RequestContext`: the server, the request id, the era, a cancel
    token the server's cancellation sets, progress reporting. Every ``on_*``
    option may also be set on a live client (``client.on_sampling = f``, see
    the properties). ``on_progress(event)`` gets every request's progress
    notifications as :class:`ProgressEvent`, besides each call's ``progress=``. A handler that raises, or
    answers with something invalid, makes the call that led the server to ask
    raise :class:`HandlerError` (its exception as ``__cause__``), in both eras;
    raise :class:`ServerRequestError` to refuse on purpose. Arguments are
    checked before anything is sent: a wrong type is a TypeError, a value JSON
    cannot carry (NaN, infinity, a lone surrogate) a ValueError, naming it.

    Connection events (run on the dispatch thread, in order; one that raises is
    logged): ``on_connection_lost(error)`` when a stdio server dies, a legacy
    HTTP session is lost (a :class:`SessionExpiredError`, even when a new one
    is started at once) or a listen stream breaks; never for :meth:`close`.
    ``on_reconnected(client)`` after a restart or :meth:`reconnect`, a session
    renewal, or a listen stream that came back; the client is passed in (the
    callback holds it weakly). ``on_list_changed(kind, items)`` (``kind``:
    ``"tools"``, ``"prompts"`` or ``"resources"``) gets the new list, fetched on
    the dispatch thread, when the server announces a change (legacy servers
    announce on their own; modern servers only while a :meth:`listen` for that
    list is open); the tools as ``tools()`` shows them. ``list_ttl`` (seconds):
    a list the server gives no ``ttlMs`` for (legacy servers never do) and that
    is not kept until changed is reused that long, then fetched again by the
    next ``tools()``/``list_tools()`` (a ``ttlMs`` the server sends, 0
    included, wins; needs ``cache=True``).

    Tools a model sees: ``tool_transforms={"name": ToolTransform(...)}``
    renames tools, replaces descriptions, hides arguments and pre-fills them
    (values a model never sees and cannot override); ``tool_filter=ToolFilter(...)``
    leaves tools out by name (glob patterns) or tag. ``tools()``,
    ``list_tools()`` and so every LLM format, ``run_tool_call`` and the
    framework adapters show the result; ``call_tool`` takes the shown name and
    maps the call back (original name, pre-filled values), checking it
    against the original ``inputSchema`` before it is sent. A name left out
    (or a renamed tool's original name) is :class:`ToolNotFound`.

    ``tracing=True`` (the default): with
    ``opentelemetry-api`` installed, each request is an OpenTelemetry client
    span (see the Services page); ``tracing=False`` turns that off.

    In Jupyter a client displays as a small table (server name and version,
    era, transport target, what the server offers; displaying never connects),
    and so do its results: ``client.list_tools()`` and ``client.tools().show()``
    as a table of tools, a tool result with its images inline.

    No probe when the caller already knows: with ``protocol_version="2026-07-28"``
    (a modern pin) the client sends no ``server/discover`` to connect; each
    request carries that version, and the server's capabilities are asked for
    only when read (:attr:`server_capabilities`, :meth:`discover`). Given
    ``discover_result=`` (a :class:`DiscoverResult` an earlier client got from
    this server, e.g. kept by a service across restarts), the client takes
    that server for modern with those capabilities, and sends no probe either.

    Example::

        with mcp_sync.Client.stdio("python", ["server.py"]) as client:
            for tool in client.tools():
                print(tool.name)
            print(client.call_tool("echo", {"text": "hi"}).text)
    """

    def __init__(
        self,
        transport: Transport | Callable[[], Transport],
        *,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "auto",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[..., dict] | None = None,
        on_sampling: Callable[..., dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        on_connection_lost: Callable[[MCPError], None] | None = None,
        on_reconnected: Callable[[Client], None] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        tracing: bool = True,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
        discover_result: DiscoverResult | Mapping[str, Any] | None = None,
        url_elicitation: bool = False,
        name: str | None = None,
        tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = None,
        tool_filter: ToolFilter | Mapping[str, Any] | None = None,
        list_ttl: float | None = None,
        on_list_changed: Callable[[str, list[Any]], None] | None = None,
    ) -> None:
        timeout = check_timeout(timeout, allow_default=False)
        if list_ttl is not None:
            list_ttl = check_timeout(list_ttl, "list_ttl", allow_default=False) or float("inf")  # huge: for ever
            if not cache:
                raise ValueError("list_ttl keeps lists in the result cache: it needs cache=True")
        probe_timeout = check_timeout(probe_timeout, "probe_timeout", allow_default=False)
        if max_pages < 1 or input_required_max_rounds < 1:
            raise ValueError("max_pages and input_required_max_rounds must be at least 1")
        if log_level is not None and log_level not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {list(LOG_LEVELS)}")
        if name is not None and (not isinstance(name, str) or not name):
            raise TypeError(f"name must be a non-empty str, not {name!r}")
        for label, value in (("client_info", client_info), ("extensions", extensions)):  # sent to every server
            if value is not None:
                if not isinstance(value, Mapping):
                    raise TypeError(f"{label} must be a dict, not {type(value).__name__}")
                check_json(dict(value), label)
        self._session = Session(
            transport, name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, schemas=ToolSchemas(validate_output, validate_input), url_elicitation=url_elicitation,
            on_connection_lost=_checked_callback("on_connection_lost", on_connection_lost),
            on_reconnected=_reconnected_callback(self, _checked_callback("on_reconnected", on_reconnected)),
            tracing=bool(tracing), on_progress=_checked_callback("on_progress", on_progress),
            discover_result=_discover_result(discover_result), list_ttl=list_ttl,
            on_list_changed=_list_changed_callback(self, _checked_callback("on_list_changed", on_list_changed)),
        )
        self._session.connection.finalizer_for(self)
        #: what tools() shows and how call_tool maps a shown name back (None: as the server lists them)
        self._tool_rules = ToolRules(tool_transforms, tool_filter) if tool_transforms or tool_filter else None
        self._tool_names = ToolNames()  # the LLM names handed out by to_*_tools, for run_tool_call
        #: (constructor, arguments) it was made with, for pickling; None when built on a transport
        self._recipe: tuple[str, dict[str, Any]] | None = None
        #: (url, auth object) of an HTTP client, for authorize() and logout(); None otherwise
        self._auth: tuple[str, Any] | None = None
        #: the legacy HTTP sessions of its views' credentials (#19.1)
        self._views = ViewSessions()

    # -- lifecycle ----------------------------------------------------------------------

    def __enter__(self) -> Client:
        """Connect (opening a closed client afresh); blocks may nest: only the outermost exit closes."""
        connection = self._session.connection
        with connection.lock:
            connection.entered += 1
        try:
            self.connect()
        except BaseException:
            with connection.lock:
                connection.entered = max(0, connection.entered - 1)
            raise
        return self

    def __exit__(self, *exc_info: Any) -> None:
        connection = self._session.connection
        with connection.lock:
            connection.entered = max(0, connection.entered - 1)
            outermost = connection.entered == 0
        if outermost:
            self.close()

    @property
    def state(self) -> ClientState:
        """:class:`ClientState`: NEW, OPEN or CLOSED."""
        return self._session.state

    @property
    def name(self) -> str:
        """What this client is called in its repr, its thread names and its loggers.

        ``name=`` sets it; by default it is what the server is called, not the
        interpreter that runs it: for stdio, the script or package a runner runs
        (``python demo_server.py`` -> ``"demo_server"``, ``npx -y
        @modelcontextprotocol/server-everything`` -> ``"server-everything"``,
        ``node .../server-everything/dist/index.js`` -> ``"server-everything"``,
        ``uvx mcp-server-time`` -> ``"mcp-server-time"``), else the command's
        name; for HTTP, the host (and port). The server's stderr goes to the
        logger ``mcp_sync.stderr.<name>`` and its log messages to
        ``mcp_sync.server.<name>``.

        Example: ``mcp_sync.Client.stdio("python", ["demo_server.py"]).name == "demo_server"``
        """
        return self._session.name

    @property
    def transport(self) -> Transport:
        """The transport of the current connection (before the first connect: the one it will use).

        Example: ``client.transport.session_id`` (Streamable HTTP, legacy servers)
        """
        connection = self._session.connection
        engine = connection.res.engine
        return engine.transport if engine is not None else connection.transport

    @property
    def pid(self) -> int | None:
        """The stdio server's process id while it runs; None for HTTP or when no process runs.

        Example: ``os.kill(client.pid, 0)`` (the server is alive)
        """
        engine = self._session.engine
        if self.state is ClientState.CLOSED or (engine is not None and not engine.alive):
            return None
        pid = declared(self.transport).pid
        return pid if isinstance(pid, int) else None

    def connect(
        self, *, timeout: float | _Default | None = USE_CLIENT_DEFAULT, cancel: CancellationToken | None = None
    ) -> dict[str, Any]:
        """Connect (probe / handshake) if not yet connected; returns the server_info dict.

        The first request also connects, within that request's own ``timeout`` and
        ``cancel``; ``connect()`` waits, unless given a ``timeout``, as long as the
        connect takes. The connect runs on its own thread, bounded by the client's
        ``timeout`` and ``probe_timeout``; a caller that stops waiting (its
        timeout: :class:`RequestTimeout`; its token: :class:`Cancelled`) leaves it
        running, and later calls wait for the same connect; if it fails, every
        caller waiting for it gets the error and the next call tries again.
        ``close()`` interrupts a connect at once (its waiters get
        :class:`ClientStateError`). If connecting fails, everything the attempt
        started is stopped before the exception propagates. On a closed client,
        ``connect()`` opens it afresh (a new server process or HTTP session;
        subscriptions closed by ``close()`` stay closed). A client pinned to a modern
        revision (``protocol_version="2026-07-28"``) sends nothing to connect and
        returns ``{}``; one given ``discover_result=`` returns that result's dict.

        Example: ``client.connect(timeout=30); print(client.era, client.protocol_version)``
        """
        self._session.connection.reopen_if_closed()
        wait = None if timeout is USE_CLIENT_DEFAULT else check_timeout(timeout)
        return self._session.connected(wait, cancel, "connect").server_info

    def reconnect(
        self, *, timeout: float | _Default | None = USE_CLIENT_DEFAULT, cancel: CancellationToken | None = None
    ) -> dict[str, Any]:
        """Drop the connection and connect afresh; returns the new server_info dict.

        For a server that lost its state under the client (restarted, session
        gone): stdio starts a new server process, HTTP a new session. Requests
        waiting on the old connection fail with :class:`ConnectionClosed`. What
        the client asked for survives, as after a restart: subscriptions are
        re-established (each delivers ``("mcp_sync/resubscribed", {...})``),
        roots and the log level are given to the new session, cached results
        are dropped. Raises :class:`ClientStateError` on a closed client or one
        built on a transport object (it cannot make a new one).

        Example::

            try:
                client.call_tool("echo", {"text": "hi"})
            except mcp_sync.ConnectionClosed:
                client.reconnect()
        """
        wait = None if timeout is USE_CLIENT_DEFAULT else check_timeout(timeout)
        return self._session.reconnect(wait, cancel).server_info

    def close(self) -> None:
        """Close the connection; idempotent. Ends every thread and child process the client started.

        First every waiting call is released at once with
        :class:`ConnectionClosed` (a connect in progress: its waiters get
        :class:`ClientStateError`), then subscriptions end, then the transport
        shuts down (the stdio server is asked to exit, then signalled) and the
        threads are joined. A handler of yours (elicitation, sampling, roots)
        still running cannot be stopped: ``close()`` waits about a second for
        it, then returns; the handler runs on to its end on its daemon thread
        and whatever it returns is dropped. After ``close()``, requests raise
        :class:`ClientStateError`; ``connect()`` (or ``with client:``) opens the
        client afresh. A client that is garbage-collected unclosed is closed
        then, with a ``ResourceWarning``.

        Example: ``client.close()`` (a ``with mcp_sync.Client.stdio(...) as client:`` block does it on exit)
        """
        self._session.connection.close()
        connection = self._session.connection
        self._views.close(connection.lock, connection.name)  # the legacy sessions of its views (#19.1)

    def authorize(self, *, timeout: Timeout = USE_CLIENT_DEFAULT) -> None:
        """Log in now, before the first request: at a service's start, or before a notebook's first call.

        For a client made with ``auth="oauth"`` or ``auth=mcp_sync.OAuth(...)``:
        runs the authorization flow (the browser, for the one-word form) unless
        tokens are at hand: live ones in the token store are used without asking
        the user, an expired one is refreshed. Does nothing when the client is
        already authorized. ``timeout`` (default the client's) bounds the
        exchanges with the servers, not the user's time in the browser.
        Raises :class:`AuthorizationError` if the login fails, TypeError for a
        client without OAuth.

        Example::

            client = mcp_sync.Client.http("https://mcp.example.com/mcp", auth="oauth")
            client.authorize()   # the browser opens here, once; later runs reuse the cached tokens
        """
        url, auth = _oauth_of(self, "authorize")
        auth.authorize(url, timeout=self.timeout if timeout is USE_CLIENT_DEFAULT else check_timeout(timeout))

    def logout(self) -> bool:
        """Revoke this client's OAuth tokens at the authorization server and forget them.

        Where the authorization server offers token revocation (RFC 7009, its
        metadata's ``revocation_endpoint``) the refresh and access tokens are
        revoked there; then they are removed from the token store (for
        ``auth="oauth"``, the file in the user's cache directory) whatever the
        revocation did, and cached results are dropped. Returns True when every
        token was revoked (or there was none), False when the authorization
        server offers no revocation or refused it (logged as a warning on
        ``mcp_sync.auth``): the tokens are forgotten here either way. The next
        request logs in again. TypeError for a client without OAuth.

        Example::

            if not client.logout():
                print("logged out here; the server did not confirm the revocation")
        """
        url, auth = _oauth_of(self, "logout")
        revoked: bool = auth.logout(url)
        self.clear_cache()
        return revoked

    def bind(self, *, headers: Mapping[str, str] | None = None, auth: Any = None) -> BoundClient:
        """A view of this client that sends its own credentials (HTTP): :class:`BoundClient`.

        The view has this client's request methods and shares its connection,
        threads and options; each request it sends carries ``headers`` (on top of
        the client's) and ``auth`` (what :meth:`http` takes: a ``requests`` auth
        object, a callable, ``(user, password)``, or :class:`OAuth`; applied per
        request, so a refreshed token is used at once) in place of the client's.
        The view's credential always wins over the client's: its ``auth``, else
        an ``Authorization`` in its ``headers``; with either, the client's
        ``auth`` and ``Authorization`` are never sent (a call's own
        ``headers=`` Authorization wins over both; docs/services.md has the
        order). Results it has cached are keyed by the headers it sends, never
        served to another credential. Header names and values are checked
        (ValueError naming the header), as for every ``headers=``.
        On a legacy HTTP server, whose sessions belong to the credentials that
        opened them, a view with other credentials gets its own session
        (``Mcp-Session-Id``), made on first use and reused by views with equal
        credentials (the same headers and the same ``auth`` object; at most
        ``max_view_sessions`` of :meth:`http`, 64 by default, the least recently
        used closed first, in the background; it opens no GET stream until a
        ``listen()`` needs one, unless the client has handlers that listen).
        A view has no ``close()``:
        closing the client ends its views (their requests raise
        :class:`ClientStateError`). Making a view costs no request; views are
        thread-safe. On stdio: TypeError (no headers there).

        Example::

            @app.get("/search")
            def search():
                user = client.bind(headers={"Authorization": f"Bearer {request_token()}"})
                return user.call_tool("search", {"q": request.args["q"]}).text
        """
        header_map = check_request_headers(headers, "bind") or {}
        if not declared(self._session.connection.transport).per_request_headers:
            raise TypeError(f"bind: per-request headers and credentials need an HTTP transport; {self!r} is not one")
        if isinstance(self, BoundClient):  # a view of a view: the client's view with both credentials
            parent, base = self._parent, self._binding
            return parent.bind(headers={**base[0], **header_map}, auth=auth if auth is not None else base[1])
        return BoundClient._of(self, header_map, auth)

    # -- what was negotiated ------------------------------------------------------------

    @property
    def era(self) -> str:
        """``"modern"`` or ``"legacy"`` (connects if needed)."""
        return self._session.connected().era

    @property
    def protocol_version(self) -> str:
        """The protocol revision in use, e.g. ``"2026-07-28"``."""
        return self._session.connected().protocol_version

    @property
    def server_capabilities(self) -> dict[str, Any]:
        """The server's capabilities (from discover or initialize)."""
        return self._session.known().server_capabilities

    @property
    def server_implementation(self) -> dict[str, Any] | None:
        """The server's ``{"name", "version"}``, or None if it did not say."""
        return self._session.known().server_implementation

    @property
    def instructions(self) -> str | None:
        """The server's instructions for the model, if any."""
        return self._session.known().instructions

    @property
    def server_info(self) -> dict[str, Any]:
        """The raw InitializeResult or DiscoverResult."""
        return self._session.known().server_info

    def has_capability(self, name: str, feature: str | None = None) -> bool:
        """Whether the server declared capability ``name`` (``"tools"``, ``"resources"``,
        ``"prompts"``, ``"logging"``, ``"completions"``, ``"tasks"``, ...) or, for a name
        with a ``/`` in it, the extension of that id (``"io.modelcontextprotocol/tasks"``).
        With ``feature``, whether that capability also sets that flag (``"subscribe"``,
        ``"listChanged"``) or has that entry. Connects if needed; an answer from a modern
        server whose capabilities went stale (their ttlMs ran out) is fetched again before
        saying no, as the requests that need a capability do.

        Example::

            if client.has_capability("resources", "subscribe"):
                client.listen(resources=["file:///log.txt"])
            client.has_capability("io.modelcontextprotocol/tasks")   # offers tasks (2026-07-28)
        """
        if not isinstance(name, str) or not (feature is None or isinstance(feature, str)):
            raise TypeError(f"has_capability(name, feature=None) takes strings, not {name!r}, {feature!r}")
        negotiated = self._session.connected()
        found = _declared(negotiated.server_capabilities, name, feature)
        if not found and negotiated.era == "modern":
            self._session.discover()  # reuses a fresh answer; a stale one is fetched again
            found = _declared(self._session.connected().server_capabilities, name, feature)
        return found

    def find_tool(self, name: str) -> Tool:
        """The tool the server lists under ``name``, or :class:`ToolNotFound` (a ``KeyError``).
        Walks :meth:`tools` (through the client's cache: a listing still fresh is not fetched
        again) and stops at the first page that has it.

        Example::

            tool = client.find_tool("add")
            print(tool.description, tool.input_schema["properties"])
        """
        if not isinstance(name, str):
            raise TypeError(f"find_tool(name): name must be a string, not {type(name).__name__}")
        for tool in self.tools():
            if tool.name == name:
                return tool
        raise ToolNotFound(f"{self.name}: the server lists no tool named {name!r}", name=name)

    def meta(self) -> dict[str, Any]:
        """The ``_meta`` envelope this client adds to modern requests.

        Example: ``client.meta()["io.modelcontextprotocol/protocolVersion"]`` (e.g. ``"2026-07-28"``)
        """
        return copy_json(self._session.lifecycle.meta(self._session.connected().protocol_version))  # the caller's own

    # -- the client's options ---------------------------------------------------------------

    @property
    def timeout(self) -> float | None:
        """The default timeout of every request, in seconds (None waits for ever)."""
        return self._session.timeout

    @property
    def max_pages(self) -> int:
        """Bound on the pages the all-pages iterators walk."""
        return self._session.max_pages

    @property
    def max_message_bytes(self) -> int:
        """Bound on one message from the server."""
        return self._session.max_message_bytes

    @property
    def input_required_max_rounds(self) -> int:
        """Bound on the ``input_required`` rounds of one request."""
        return self._session.input_required_max_rounds

    @property
    def cache_enabled(self) -> bool:
        """Whether results are cached (``cache=True``)."""
        return self._session.cache is not None

    @property
    def on_notification(self) -> Callable[[str, dict], None] | None:
        """The callback given every notification (on the dispatch thread); may be replaced.

        Example: ``client.on_notification = lambda method, params: print(method)``
        """
        return self._session.on_notification

    @on_notification.setter
    def on_notification(self, callback: Callable[[str, dict], None] | None) -> None:
        self._session.on_notification = _checked_callback("on_notification", callback)
        _remember(self, "on_notification", callback)

    @property
    def on_sampling(self) -> Callable[..., dict] | None:
        """The sampling handler; may be set or replaced on a live client, from any thread.

        A modern server sees the change on the client's next request (each one
        declares the client's capabilities). A legacy server learned them at
        connect: setting a handler it was told the client lacks raises
        :class:`CapabilityError` (pass it when the client is made, or
        ``close()``, set it, and connect again); replacing or removing one is fine.

        Example: ``client.on_sampling = lambda params: {"role": "assistant", "content": {...}, "model": "m"}``
        """
        return self._session.handlers.on_sampling

    @on_sampling.setter
    def on_sampling(self, handler: Callable[..., dict] | None) -> None:
        _set_handler(self, "on_sampling", handler)

    @property
    def on_elicitation(self) -> Callable[..., dict] | None:
        """The elicitation handler; may be set or replaced on a live client (as :attr:`on_sampling`).

        Example: ``client.on_elicitation = lambda params: {"action": "decline"}``
        """
        return self._session.handlers.on_elicitation

    @on_elicitation.setter
    def on_elicitation(self, handler: Callable[..., dict] | None) -> None:
        _set_handler(self, "on_elicitation", handler)

    @property
    def on_roots(self) -> Roots | None:
        """The roots given to servers (a list, or a callable returning one): the same as :attr:`roots`.

        Example: ``client.on_roots = lambda: [f"file://{os.getcwd()}"]``
        """
        return self._session.handlers.on_roots

    @on_roots.setter
    def on_roots(self, roots: Roots | None) -> None:
        _set_handler(self, "on_roots", roots)

    @property
    def roots(self) -> Roots | None:
        """The roots given to servers; setting it is :meth:`set_roots` (None: no roots).

        Example: ``client.roots = ["file:///home/me/project"]; print(client.roots)``
        """
        return self._session.handlers.on_roots

    @roots.setter
    def roots(self, roots: Roots | None) -> None:
        _set_handler(self, "on_roots", roots)

    @property
    def on_progress(self) -> Callable[[ProgressEvent], None] | None:
        """The client-wide progress callback: every request's progress, as :class:`ProgressEvent`.

        It runs on the dispatch thread, after the call's own ``progress=``
        callback; while it is set every request asks for progress (carries a
        ``progressToken``). May be set or replaced at any time.

        Example: ``client.on_progress = lambda event: print(event.method, event.progress, event.total)``
        """
        return self._session.on_progress

    @on_progress.setter
    def on_progress(self, callback: Callable[[ProgressEvent], None] | None) -> None:
        self._session.on_progress = _checked_callback("on_progress", callback)
        _remember(self, "on_progress", callback)

    @property
    def on_connection_lost(self) -> Callable[[MCPError], None] | None:
        """``on_connection_lost(error)`` (see the class docs); may be set or replaced at any time.

        Example: ``client.on_connection_lost = lambda error: print("lost:", error)``
        """
        return self._session.on_connection_lost

    @on_connection_lost.setter
    def on_connection_lost(self, callback: Callable[[MCPError], None] | None) -> None:
        self._session.on_connection_lost = _checked_callback("on_connection_lost", callback)
        _remember(self, "on_connection_lost", callback)

    @property
    def on_reconnected(self) -> Callable[[Client], None] | None:
        """``on_reconnected(client)`` (see the class docs); may be set or replaced at any time.

        Example: ``client.on_reconnected = lambda client: print("back:", client.name)``
        """
        reconnected = self._session.on_reconnected
        return getattr(reconnected, "callback", None)

    @on_reconnected.setter
    def on_reconnected(self, callback: Callable[[Client], None] | None) -> None:
        self._session.on_reconnected = _reconnected_callback(self, _checked_callback("on_reconnected", callback))
        _remember(self, "on_reconnected", callback)

    @property
    def on_list_changed(self) -> Callable[[str, list[Any]], None] | None:
        """``on_list_changed(kind, items)`` (see the class docs); may be set or replaced at any time.

        Example: ``client.on_list_changed = lambda kind, items: print(kind, len(items))``
        """
        changed = self._session.on_list_changed
        return getattr(changed, "callback", None)

    @on_list_changed.setter
    def on_list_changed(self, callback: Callable[[str, list[Any]], None] | None) -> None:
        self._session.on_list_changed = _list_changed_callback(self, _checked_callback("on_list_changed", callback))
        _remember(self, "on_list_changed", callback)

    def __setattr__(self, name: str, value: Any) -> None:
        """Only the settable properties (and methods, for tests that replace one) may be assigned:
        a misspelt ``client.on_samplng = f`` raises AttributeError instead of doing nothing."""
        if name.startswith("_") or hasattr(type(self), name):
            object.__setattr__(self, name, value)
            return
        settable = sorted(n for n, v in vars(Client).items() if isinstance(v, property) and v.fset is not None)
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r} to set; these can be set: {settable}")


    def set_roots(self, roots: Roots) -> None:
        """Replace the roots given to the server (a list, or a callable asked each time).

        Legacy servers are told with ``notifications/roots/list_changed``; modern
        servers ask for roots per request, so they see the new ones next time.

        Example: ``client.set_roots(["file:///home/me/project"])``
        """
        check_roots(roots)
        _set_handler(self, "on_roots", roots)

    # -- operations ---------------------------------------------------------------------
    # Every public method spells out its options; each checks its arguments before
    # anything is sent (TypeError/ValueError naming the parameter), so a server never
    # sees NaN, a lone surrogate or a list where an object belongs.

    @shows_progress()
    def call_tool(
        self,
        name: str | Tool,
        arguments: Mapping[str, Any] | None = None,
        *,
        validate: bool | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        progress: ProgressCallback | bool | None = None,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        raise_on_error: bool = False,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        output_type: type[ResultT] = CallToolResult,  # type: ignore[assignment]  # ResultT's default
    ) -> ResultT:
        """Call a tool and return its :class:`CallToolResult` (with ``output_type=T``: a ``T``).

        ``progress(progress, total, message)`` runs on the dispatch thread for
        each progress notification, in order, all before this returns (only past
        1,000 waiting for one call does the newest replace the last waiting);
        ``progress=True`` shows a progress bar instead (tqdm's when installed). With
        ``reset_timeout_on_progress=True`` each progress notification restarts
        ``timeout``; ``max_total_timeout`` bounds the whole call. ``raise_on_error``
        turns an ``isError`` result into :class:`ToolError`. ``arguments`` must
        be JSON: NaN, infinities and lone surrogates raise ValueError before
        anything is sent. ``name`` may be a :class:`Tool`. ``validate=True``
        checks the arguments against the tool's ``inputSchema`` first
        (:class:`InvalidArguments`, nothing sent; default: the client's
        ``validate_input``); the result is checked against its ``outputSchema``
        as the client's ``validate_output`` says. ``output_type`` (a dataclass,
        TypedDict or attrs class) returns the result's :attr:`~CallToolResult.data`
        built as that type instead: :class:`ProtocolError` naming the field that
        does not fit, :class:`ToolError` for an ``isError`` result.

        Example::

            result = client.call_tool("echo", {"text": "hi"}, timeout=5)
            print(result.text)
            weather = client.call_tool("weather", {"city": "Oslo"}, output_type=Weather)   # a Weather
        """
        tool, tool_name = (name, name.name) if isinstance(name, Tool) else (None, name)
        args = check_tool_call("call_tool", tool_name, arguments)
        options = call_options(
            "call_tool", timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers,
            input_responses=input_responses, request_state=request_state,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        session = self._session
        session.require("tools", "tools/call", options)
        bound = session.timeout if options.timeout is USE_CLIENT_DEFAULT else options.timeout  # of the checks too
        listed = functools.partial(server_tools, session)  # the tools as the server lists them
        tool_name, args, transformed = map_call(session, self._tool_rules, tool_name, args)  # shown -> server's
        if transformed:  # checked against the original inputSchema, always
            tool, validate = None, True
        session.schemas.check_arguments(listed, tool_name, tool, args, validate, bound)
        typed = output_type is not None and output_type is not CallToolResult
        request_ids: list[Any] | None = [] if raise_on_error or typed else None  # for ToolError only
        params = {"name": tool_name, "arguments": args}
        try:
            raw = input_required.complete(
                session, "tools/call", params, _tool_call_options(session, options, tool_name, args, request_ids)
            )
        except ServerError as exc:
            if exc.code != HEADER_MISMATCH or not session.mirrors_param_headers():
                raise
            log.info("mcp_sync: %s answered HeaderMismatch for %r; listing tools again", self, tool_name)  # H10
            list(listed())  # refreshes the remembered schemas
            raw = input_required.complete(
                session, "tools/call", params, _tool_call_options(session, options, tool_name, args, request_ids)
            )
        if raw.get("resultType") == "task":  # X2: a task handle, unasked: wait for it like a call
            result = Task.from_wire(raw, "modern", session).wait(timeout=bound)
        else:
            result = CallToolResult.from_wire(raw)
        session.schemas.check_result(listed, tool_name, tool, result, bound)
        if (raise_on_error or typed) and result.is_error:
            raise ToolError(
                f"tool {tool_name!r} failed: {result.text[:200]}",
                result=result,
                method="tools/call",
                request_id=request_ids[-1] if request_ids else None,
            )
        if typed:
            what = f"tool {tool_name!r}: the structured content"
            return build_result(output_type, result.structured_content, result.data, what=what, seconds=bound)
        return result  # type: ignore[return-value]  # ResultT is CallToolResult here

    @shows_progress()
    def read_resource(
        self,
        uri: str,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        cache: str | None = None,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> ReadResourceResult:
        """Read a resource. Raises :class:`ResourceNotFound` if it does not exist.

        ``cache="use"|"refresh"|"bypass"``: see :meth:`clear_cache`.

        Example: ``text = client.read_resource("file:///notes.txt").text``
        """
        if not isinstance(uri, str):
            raise TypeError(f"read_resource: uri must be a string, not {type(uri).__name__}")
        check_json(uri, "read_resource: uri")
        options = call_options(
            "read_resource", timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers, cache=cache,
            input_responses=input_responses, request_state=request_state,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        self._session.require("resources", "resources/read", options)
        try:
            raw = input_required.complete(self._session, "resources/read", {"uri": uri}, options)
        except ServerError as exc:
            if exc.code in (INVALID_PARAMS, RESOURCE_NOT_FOUND_LEGACY):  # Q1: either code, in both eras
                raise ResourceNotFound(
                    exc.code, exc.message, exc.data, method="resources/read", request_id=exc.request_id
                ) from exc
            raise
        return ReadResourceResult.from_wire(raw)

    @shows_progress()
    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        input_responses: Mapping[str, Any] | None = None,
        request_state: str | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> GetPromptResult:
        """Render a prompt; ``arguments`` maps argument names to strings.

        Example: ``client.get_prompt("greet", {"name": "Ada"}).messages``
        """
        options = call_options(
            "get_prompt", timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers,
            input_responses=input_responses, request_state=request_state,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        params = _prompt_params(name, arguments)
        self._session.require("prompts", "prompts/get", options)
        return GetPromptResult.from_wire(input_required.complete(self._session, "prompts/get", params, options))

    @shows_progress()
    def complete(
        self,
        ref: Mapping[str, Any] | Prompt | ResourceTemplate,
        argument: Mapping[str, str] | tuple[str, str],
        context: Mapping[str, str] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Completion:
        """Ask for completions of a prompt or resource-template argument.

        ``ref`` is a wire dict (``{"type": "ref/prompt", "name": "greet"}``), a
        :class:`Prompt` or a :class:`ResourceTemplate`; ``argument`` is
        ``{"name": ..., "value": ...}`` or a ``(name, value)`` pair; ``context``
        maps already-filled argument names to values.

        Example: ``client.complete(prompt, ("name", "Al")).values``
        """
        options = call_options(
            "complete", timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        params = _completion_params(ref, argument, context)
        self._session.require("completions", "completion/complete", options)
        return Completion.from_wire(self._session.send("completion/complete", params, options))

    def discover(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> DiscoverResult:
        """``server/discover`` (modern servers): versions, capabilities, identity.

        Cached like the lists (the connect-time answer seeds the cache): a fresh
        one is reused within its ttlMs, a stale one re-fetched, and a re-fetched
        one updates :attr:`server_capabilities` and :attr:`instructions`. Works
        before the first request (it connects first). On a client that connected
        without asking (pinned to ``protocol_version="2026-07-28"``, or given
        ``discover_result=``), the first call asks the server.

        Example: ``client.discover(cache="refresh").capabilities``
        """
        check_mode(cache)
        options = call_options("discover", cache=cache, timeout=timeout, cancel=cancel, meta=meta, headers=headers)
        return DiscoverResult.from_wire(self._session.discover(options))

    def ping(
        self,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Check the server is alive. Legacy: ``ping``; modern servers have no ping,
        so a ``server/discover`` round trip stands in for it.

        Example: ``client.ping(timeout=5)`` (raises :class:`RequestTimeout` if no answer in 5 s)
        """
        self._session.ping(call_options("ping", timeout=timeout, cancel=cancel, meta=meta, headers=headers))

    def set_log_level(self, level: str) -> None:
        """Ask the server for log messages at ``level`` and above.

        Modern: sent as ``io.modelcontextprotocol/logLevel`` in each request's
        ``_meta`` from now on; legacy: ``logging/setLevel`` now.

        Example: ``client.set_log_level("debug")`` (messages go to the ``mcp_sync.server.<name>`` logger)
        """
        if not isinstance(level, str) or level not in LOG_LEVELS:
            raise ValueError(f"level must be one of {list(LOG_LEVELS)}, not {level!r:.40}")
        self._session.set_log_level(level)

    @shows_progress()
    def request(
        self,
        method: str,
        params: Mapping[str, Any] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> dict[str, Any]:
        """Send any request and return the raw result dict (the escape hatch).

        Example: ``client.request("tools/list", {"cursor": None})["tools"]``
        """
        wire_params = _raw_params("request", method, params)
        options = call_options(
            "request", timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return self._session.send(method, wire_params, options)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send any notification.

        Example: ``client.notify("notifications/roots/list_changed")``
        """
        self._session.notify(method, _raw_params("notify", method, params))

    def listen(
        self,
        tools_list_changed: bool = False,
        prompts_list_changed: bool = False,
        resources_list_changed: bool = False,
        resource_uris: Sequence[str] = (),
        on_notification: Callable[[str, dict], None] | None = None,
        *,
        timeout: Timeout = USE_CLIENT_DEFAULT,
    ) -> Subscription:
        """Subscribe to change notifications; returns a live :class:`Subscription`.

        Modern servers: one ``subscriptions/listen`` request, returned from once
        acknowledged (``timeout``, default the client's, then
        :class:`RequestTimeout` and the listen is cancelled). Legacy servers:
        ``resources/subscribe`` per URI and a ``ping``. Only what the server's
        capabilities allow is asked for; :class:`CapabilityError` if that
        leaves nothing. ``on_notification(method, params)`` runs on the
        dispatch thread for each event, and may call the client. After a server
        restart the subscription is re-established and delivers
        ``("mcp_sync/resubscribed", {...})``.

        Example::

            with client.listen(tools_list_changed=True) as sub:
                for method, params in sub:
                    print(method, [t.name for t in client.tools()])
        """
        timeout = check_timeout(timeout)
        if isinstance(resource_uris, str) or not all(isinstance(uri, str) for uri in resource_uris):
            raise TypeError("listen: resource_uris must be a list of URI strings")
        # what may be asked for (a client pinned to a modern revision asks the server now, once)
        self._session.known(self.timeout if timeout is USE_CLIENT_DEFAULT else timeout, "subscriptions/listen")
        return self._session.subscriptions.listen(
            tools_list_changed=tools_list_changed,
            prompts_list_changed=prompts_list_changed,
            resources_list_changed=resources_list_changed,
            resource_uris=resource_uris,
            on_notification=on_notification,
            timeout=self.timeout if timeout is USE_CLIENT_DEFAULT else timeout,
        )

    def clear_cache(self) -> None:
        """Forget cached list, read and discover results.

        The cache (``cache=True``, the default) reuses a result while its
        ``ttlMs`` lasts (absent or 0 means never; at most a day), keeps
        ``cacheScope: "private"`` results per authorization context, and drops
        entries when a list_changed or resources/updated notification arrives or
        the server restarts. A list whose server declares ``listChanged`` is
        kept until it changes (a positive ``ttlMs`` still bounds it) while its
        change notifications reach the client: legacy servers on stdio, or on
        HTTP while the session's notification stream is open; modern servers
        while a :meth:`listen` for that list is open. Per call, the list/read methods and ``discover``
        take ``cache="use"`` (default), ``"refresh"`` (re-fetch and store) or
        ``"bypass"`` (neither read nor store).

        Example: ``client.clear_cache(); client.list_tools(cache="refresh")``
        """
        self._session.clear_cache()

    def __repr__(self) -> str:
        connection = self._session.connection
        negotiated = connection.negotiated
        is_open = negotiated is not None and connection.state is ClientState.OPEN
        era = f" {negotiated.era} {negotiated.protocol_version}" if is_open and negotiated else ""
        pid = self.pid
        where = f" {connection.target}" + (f" pid={pid}" if pid is not None else "")
        return f"<mcp_sync.Client {connection.name!r} {connection.state.value}{era}{where}>"

    def _repr_html_(self) -> str:
        """In Jupyter: the client's name, state and target; once connected the server's name and
        version, the era and revision, and what the server offers. Displaying never connects."""
        from . import _display

        connection = self._session.connection
        negotiated = connection.negotiated if connection.state is ClientState.OPEN else None
        transport = self.transport
        kind = {"StdioTransport": "stdio", "HttpTransport": "Streamable HTTP", "SseTransport": "HTTP+SSE"}.get(
            type(transport).__name__, type(transport).__name__)
        return _display.client_html(connection.name, connection.state.value, negotiated,
                                    f"{kind}: {connection.target}", self.pid)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as what it connects to and with which options, never its connection.

        In the process that unpickles it (a pool or cluster worker), the copy uses
        that process's one client for an equal recipe (equal constructor, target,
        options and credentials; unequal ones never share), made on the first
        unpickle and connected on first use: a worker running 1,000 tasks starts
        one server, not 1,000. Closing a copy (``close()``, a ``with`` block) ends
        that copy only (its requests then raise :class:`ClientStateError`); the
        worker's connection stays for its other tasks and is closed when the
        process exits (a forked child makes its own). The client pickled is not
        changed or registered anywhere. A client built on a transport object
        cannot be pickled; neither can one with an option that does not pickle
        (a lambda handler, an open file): TypeError naming the option.

        Example: ``pool.submit(job, client)`` (``job`` calls ``client.call_tool(...)`` in the worker)
        """
        recipe = self._recipe
        if recipe is None:
            raise TypeError("cannot pickle a Client built on a transport object; use Client.stdio/http/sse")
        constructor, arguments = recipe
        pickle_recipe("Client", arguments)
        return (unpickle_client, (type(self), constructor, arguments))

    # -- for tests and diagnostics: one line each over the session ------------------------------

    @property
    def _engine(self) -> Engine | None:
        return self._session.engine

    def _send(self, method: str, params: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
        return self._session.send(method, params, call_options("_send", **options))

    @property
    def _factory(self) -> Callable[[], Transport] | None:  # what restarts make transports with (None: no restart)
        return self._session.connection.factory

    def _transport_factory(self) -> Transport:
        return self._session.connection.transport_factory()

    def _dispatch_notification(self, method: str, params: dict[str, Any]) -> None:
        self._session.dispatch_notification(method, params)


# -- views with their own credentials (#19.1) ------------------------------------------------------



def _no_lifecycle(name: str) -> Any:
    def refuse(self: BoundClient) -> Any:
        raise AttributeError(f"a BoundClient has no {name}(): it lives and ends with the client it was bound from")

    return property(refuse)


class BoundClient(Client):
    """A view of a :class:`Client` with its own credentials; made by :meth:`Client.bind`.

    It has the client's request methods (``call_tool``, ``tools``,
    ``read_resource``, ``get_prompt``, ``request``, ...) and shares its
    connection, threads and options; every request carries the view's headers
    and auth. It has no ``close()``, ``connect()`` or ``with`` block: closing
    the client ends its views. Thread-safe; cheap to make (one per web request
    is fine). It does not pickle.

    Example::

        alice = client.bind(headers={"Authorization": "Bearer alice-token"})
        print([tool.name for tool in alice.tools()])   # the tools Alice may see
    """

    # Class-level hints resolve in the package's namespace (its __module__): builtins and Client only.
    _parent: Client
    _binding: tuple  # (headers, auth)

    def __init__(self, client: Client) -> None:
        raise TypeError("a BoundClient is made by client.bind(headers=..., auth=...)")

    @classmethod
    def _of(cls, client: Client, headers: dict[str, str], auth: Any) -> BoundClient:
        from .transports._http_common import auth_headers

        view = cls.__new__(cls)
        url = (client._recipe[1].get("url") if client._recipe else None) or client._session.connection.target
        own: Callable[[], Session] | None = None
        lease: Callable[[], tuple[Session, Callable[[], None]]] | None = None
        if headers or auth is not None:
            own = functools.partial(client._views.session_for, client, headers, auth)
            lease = functools.partial(client._views.lease, client, headers, auth)

        def request_headers() -> dict[str, str | None]:
            if auth is None:
                return headers  # type: ignore[return-value]
            # The view's auth wins over its headers (as a client's auth= over its headers=); a view
            # with auth never sends the client's credential: its own Authorization, or none (None).
            made = check_request_headers(auth_headers(auth, url), "bind(auth=...)") or {}
            return {AUTHORIZATION: None, **headers, **made}

        view._session = BoundSession(client._session, headers=request_headers, own_session=own, lease=lease)
        view._parent, view._binding = client, (headers, auth)
        view._recipe, view._views = None, ViewSessions()
        view._tool_rules, view._tool_names = client._tool_rules, client._tool_names
        return view

    close = _no_lifecycle("close")
    connect = _no_lifecycle("connect")
    reconnect = _no_lifecycle("reconnect")
    __enter__ = _no_lifecycle("__enter__")
    __exit__ = _no_lifecycle("__exit__")

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("a BoundClient does not pickle: pickle the client, and bind in the worker")

    def __setattr__(self, name: str, value: Any) -> None:
        """A view shares its client's handlers and callbacks: they are set on the client."""
        if name.startswith("_") or not isinstance(getattr(Client, name, None), property):
            Client.__setattr__(self, name, value)
            return
        raise AttributeError(f"a BoundClient shares its client's {name}: set it on the client it was bound from")

    def __repr__(self) -> str:
        return f"<mcp_sync.BoundClient of {self._parent!r}>"


BoundClient.__module__ = "mcp_sync"


# -- argument checks (before anything is sent) ---------------------------------------------------


def _set_handler(client: Client, name: str, handler: Any) -> None:
    """``client.on_sampling = handler`` and the like: checked, given to the session, remembered."""
    if handler is not None:
        if name == "on_roots":
            check_roots(handler)
        else:
            _checked_callback(name, handler)
    client._session.set_handler(name, handler)
    _remember(client, name, handler)


def _remember(client: Client, option: str, value: Any) -> None:
    """A pickled copy is made with the handlers set since, not the ones given to the constructor."""
    recipe = client._recipe
    if recipe is not None:
        client._recipe = (recipe[0], {**recipe[1], option: value})


def _oauth_of(client: Client, method: str) -> tuple[str, Any]:
    """The (url, OAuth) of ``client``; TypeError naming ``method`` when it has no OAuth."""
    from .auth import OAuth  # loaded on use: import mcp_sync stays light

    url, auth = getattr(client, "_auth", None) or ("", None)  # a view (bind) has none of its own
    if not isinstance(auth, OAuth):
        raise TypeError(
            f"{method}() needs a client made with auth='oauth' or auth=mcp_sync.OAuth(...) "
            f"(Client.http, Client.sse), not auth={auth!r:.60}"
        )
    return url, auth


def _discover_result(value: Any) -> dict[str, Any] | None:
    """``discover_result=``: a :class:`DiscoverResult` (or its raw dict), as the raw dict; TypeError otherwise."""
    if value is None:
        return None
    if isinstance(value, DiscoverResult):
        value = value.raw
    if not isinstance(value, Mapping):
        raise TypeError(f"discover_result must be a DiscoverResult (client.discover()), not {type(value).__name__}")
    raw = dict(value)
    check_json(raw, "discover_result")
    return raw


def _checked_callback(option: str, callback: Any) -> Any:
    if callback is not None and not callable(callback):
        raise TypeError(f"{option} must be a callable or None, not {type(callback).__name__}")
    return callback


def _reconnected_callback(client: Client, callback: Callable[[Client], None] | None) -> Callable[[], None] | None:
    """``on_reconnected(client)`` as the session calls it: with no argument. The client is held
    weakly, so the session never keeps it alive (a dropped client still closes at once)."""
    if callback is None:
        return None
    ref = weakref.ref(client)

    def reconnected() -> None:
        target = ref()
        if target is not None:
            callback(target)

    reconnected.callback = callback  # type: ignore[attr-defined]  # what client.on_reconnected reads back
    return reconnected


def _list_changed_callback(
    client: Client, callback: Callable[[str, list[Any]], None] | None
) -> Callable[[str], None] | None:
    """``on_list_changed(kind, items)`` as the session calls it: with the kind only; the new list is
    fetched here (dispatch thread; the notification already dropped the cached one). The client is
    held weakly. A listing that fails, or a callback that raises, is logged."""
    if callback is None:
        return None
    ref = weakref.ref(client)

    def changed(kind: str) -> None:
        target = ref()
        if target is None:
            return
        try:
            items = list(getattr(target, kind)())
        except MCPError as exc:
            log.warning("mcp_sync: %r: listing %s after its change notification failed: %s", target, kind, exc)
            return
        try:
            callback(kind, items)
        except Exception:
            log.exception("mcp_sync: on_list_changed(%r, ...) raised", kind)

    changed.callback = callback  # type: ignore[attr-defined]  # what client.on_list_changed reads back
    return changed


def _tool_call_options(
    session: Session, options: CallOptions, name: str, arguments: dict[str, Any], request_ids: list[Any] | None
) -> CallOptions:
    """A tool call's options: its mirrored headers (H8) and, when a ToolError may name it, each request id."""
    headers: Mapping[str, str | None] | None = (
        session.tool_headers.headers(name, arguments) if session.mirrors_param_headers() else None
    )
    if headers is None and request_ids is None:
        return options  # the common case: nothing to add, no copy
    if headers is not None and options.headers:  # the caller's own headers (#19.1) go along
        headers = {**options.headers, **headers}
    return attrs.evolve(
        options, headers=headers if headers is not None else options.headers,
        on_request_id=None if request_ids is None else request_ids.append,
    )


def _prompt_params(name: Any, arguments: Any) -> dict[str, Any]:
    if not isinstance(name, str):
        raise TypeError(f"get_prompt: the prompt name must be a string, not {type(name).__name__}")
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        if not isinstance(arguments, Mapping):
            raise TypeError(
                f"get_prompt({name!r}): arguments must be a dict of names to strings, not {type(arguments).__name__}"
            )
        wrong = [key for key, value in arguments.items() if not isinstance(value, str)]
        if wrong:
            raise TypeError(f"get_prompt({name!r}): prompt arguments are strings; {wrong[0]!r} is not")
        if arguments:
            params["arguments"] = dict(arguments)
    check_json(params, f"get_prompt({name!r}):")
    return params


def _completion_params(ref: Any, argument: Any, context: Any) -> dict[str, Any]:
    if isinstance(ref, Prompt):
        ref = {"type": "ref/prompt", "name": ref.name}
    elif isinstance(ref, ResourceTemplate):
        ref = {"type": "ref/resource", "uri": ref.uri_template}
    elif not isinstance(ref, Mapping):
        raise TypeError(f"complete: ref must be a Prompt, a ResourceTemplate or a dict, not {type(ref).__name__}")
    if isinstance(argument, (tuple, list)) and len(argument) == 2:
        argument = {"name": argument[0], "value": argument[1]}
    if not isinstance(argument, Mapping):
        raise TypeError(f"complete: argument must be a (name, value) pair or a dict, not {argument!r:.60}")
    params: dict[str, Any] = {"ref": dict(ref), "argument": dict(argument)}
    if context:
        if not isinstance(context, Mapping):
            raise TypeError(f"complete: context must be a dict of names to values, not {type(context).__name__}")
        params["context"] = {"arguments": dict(context)}
    check_json(params, "complete:")
    return params


def _raw_params(label: str, method: Any, params: Any) -> dict[str, Any] | None:
    if not isinstance(method, str):
        raise TypeError(f"{label}: method must be a string, not {type(method).__name__}")
    if params is None:
        return None
    if not isinstance(params, Mapping):
        raise TypeError(f"{label}({method!r}): params must be a dict, not {type(params).__name__}")
    wire_params = dict(params)
    check_json(wire_params, f"{label}({method!r}): params")
    return wire_params


def _declared(capabilities: Mapping[str, Any], name: str, feature: str | None) -> bool:
    """``name`` (an extension id when it has a ``/``) in ``capabilities``, with ``feature`` set."""
    if "/" in name:
        extensions = capabilities.get("extensions")
        capabilities = extensions if isinstance(extensions, Mapping) else {}
    if name not in capabilities:
        return False
    found = capabilities[name]
    return feature is None or (isinstance(found, Mapping) and found.get(feature) not in (None, False))
