"""How a :class:`~mcp_sync.Client` is made: its constructors, the recipe it pickles as, and the
legacy HTTP sessions its views open.

``ClientConstructors`` is a mixin of public classmethods only: each spells out every Client
option (a typed API: a misspelt option is a TypeError at once and a mypy error), builds the
transport factory and hands everything to ``cls(...)``, its one hook. A client made this way
remembers its recipe (constructor and arguments), so it pickles as what it connects to (#19.5)
and a view with other credentials can open a session of its own (#19.1).
"""

from __future__ import annotations

import collections
import functools
import logging
import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

from ._headers import AUTHORIZATION
from ._notebook import replace_earlier, untracked
from ._options import ProgressCallback, Roots, check_request_headers, credential_of  # noqa: F401  (ProgressCallback: hints)
from ._protocol.connection import ClientState
from ._threads import Workers
from ._tool_transform import ToolFilter, ToolTransform
from ._values import check_env, command_line, http_options
from ._worker_clients import unpickle_client  # noqa: F401  (what a Client pickles to; #29.1)
from .exceptions import ClientStateError, MCPError
from .models import DiscoverResult, ProgressEvent
from .transports.base import Transport

if TYPE_CHECKING:
    from ._protocol.session import Session

_C = TypeVar("_C", bound="ClientConstructors")

#: The default of ``max_view_sessions``: the most legacy HTTP sessions one client keeps for its
#: views' credentials (least recently used closed).
MAX_VIEW_SESSIONS = 64

log = logging.getLogger("mcp_sync")


class ClientConstructors:
    """The constructors of :class:`~mcp_sync.Client` (``stdio``, ``inprocess``, ``http``, ``sse``)."""

    if TYPE_CHECKING:  # the hook: Client's own __init__

        def __init__(self, transport: Any, **options: Any) -> None: ...

    # Each factory spells out every Client option (a typed API: a misspelt option is a
    # TypeError at once and a mypy error), then hands them to __init__ unchanged.

    @classmethod
    def stdio(
        cls: type[_C],
        command: str | os.PathLike[str],
        args: Sequence[str | os.PathLike[str]] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        *,
        inherit_env: bool = False,
        stderr: Any = None,
        name: str | None = None,
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
        on_reconnected: Callable[[_C], None] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        tracing: bool = True,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
        discover_result: DiscoverResult | Mapping[str, Any] | None = None,
        tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = None,
        tool_filter: ToolFilter | Mapping[str, Any] | None = None,
        list_ttl: float | None = None,
        on_list_changed: Callable[[str, list[Any]], None] | None = None,
    ) -> _C:
        """A client for a server run as a subprocess (stdio transport).

        ``command`` is resolved on ``PATH``; ``args`` is a list of strings (not
        one string). The child gets an allow-listed environment with ``env`` on
        top, or the whole environment with ``inherit_env=True``. The allow-list:
        HOME, LOGNAME, PATH, SHELL, TERM, USER, LANG, LC_ALL, TMPDIR (on Windows
        APPDATA, PATH, SYSTEMROOT, TEMP, USERPROFILE, ...) and the proxy and CA
        settings (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, ALL_PROXY and lower-case
        forms, SSL_CERT_FILE, SSL_CERT_DIR, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE,
        NODE_EXTRA_CA_CERTS); API keys and package-index settings go in ``env``.
        ``stderr``: None (the default) shows each line of the server's stderr on
        ``sys.stderr`` prefixed with ``[<name>]``; ``"log"`` logs it to
        ``mcp_sync.stderr.<name>`` at INFO; or a file, or a callable taking each
        line. If the server dies, the next request starts it again;
        ``restart=False`` turns that off. The other options are the
        :class:`Client` options.

        Example::

            client = mcp_sync.Client.stdio("python", ["server.py"], env={"DEBUG": "1"})
        """
        recipe = _recipe(locals())  # first: what to pickle this client as (#19.5)
        from .transports.stdio import StdioTransport

        program, arguments = command_line(command, args)
        check_env(env)
        if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
            raise TypeError(f"Client.stdio: cwd must be a path or None, not {type(cwd).__name__}")

        def factory() -> Transport:
            return StdioTransport(
                program,
                arguments,
                env=env,
                cwd=cwd,
                inherit_env=inherit_env,
                stderr=stderr,
                max_message_bytes=max_message_bytes,
            )

        return _with_recipe("stdio", recipe, cls(
            factory, name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, on_progress=on_progress,
            tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input, discover_result=discover_result, tool_transforms=tool_transforms,
            tool_filter=tool_filter, list_ttl=list_ttl, on_list_changed=on_list_changed,
        ))

    @classmethod
    def inprocess(
        cls: type[_C],
        server: Any,
        *,
        name: str | None = None,
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
        on_reconnected: Callable[[_C], None] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        tracing: bool = True,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
        discover_result: DiscoverResult | Mapping[str, Any] | None = None,
        tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = None,
        tool_filter: ToolFilter | Mapping[str, Any] | None = None,
        list_ttl: float | None = None,
        on_list_changed: Callable[[str, list[Any]], None] | None = None,
    ) -> _C:
        """A client of an MCP server object in this process, for tests: no subprocess, no socket.

        ``server`` is a Python SDK ``MCPServer`` (or its low-level ``Server``, or a
        ``fastmcp`` server). It runs on a private event-loop thread over in-memory
        streams, as it would on stdio: both eras (``mode`` as for any client),
        handlers, progress and notifications work as they do over a pipe.
        ``close()`` stops it. Needs the ``mcp`` package (``mcp-sync-client[inprocess]``).
        The other options are the :class:`Client` options.

        Example::

            from mcp.server.mcpserver import MCPServer

            server = MCPServer("calc")

            @server.tool()
            def add(a: int, b: int) -> int:
                return a + b

            with mcp_sync.Client.inprocess(server) as client:
                assert client.call_tool("add", {"a": 1, "b": 2}).data == 3
        """
        from .transports.inprocess import InProcessTransport, lowlevel_server

        lowlevel_server(server)  # a TypeError now for what is no server, not at the first call
        label = name

        def factory() -> Transport:
            return InProcessTransport(server, name=label)

        return cls(
            factory, name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, on_progress=on_progress,
            tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input, discover_result=discover_result, tool_transforms=tool_transforms,
            tool_filter=tool_filter, list_ttl=list_ttl, on_list_changed=on_list_changed,
        )

    @classmethod
    def http(
        cls: type[_C],
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        *,
        session: Any = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        max_view_sessions: int = MAX_VIEW_SESSIONS,
        name: str | None = None,
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
        on_reconnected: Callable[[_C], None] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        tracing: bool = True,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
        discover_result: DiscoverResult | Mapping[str, Any] | None = None,
        tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = None,
        tool_filter: ToolFilter | Mapping[str, Any] | None = None,
        list_ttl: float | None = None,
        on_list_changed: Callable[[str, list[Any]], None] | None = None,
    ) -> _C:
        """A client for a Streamable HTTP server (falls back to HTTP+SSE for old servers).

        HTTP options: ``session`` (your ``requests.Session``, used as is),
        ``verify`` (bool or CA bundle path), ``cert``, ``proxies``,
        ``connect_timeout`` (seconds) and ``max_retries`` (only where nothing
        reached the server). ``max_view_sessions``: on a legacy server, the
        most sessions kept for views with their own credentials
        (:meth:`Client.bind`), one per credential; set it to the number of
        users your app serves at once (past it, the least recently used
        session is closed, in the background, and made again on its next
        request). A whole number >= 1, 64 by default. The other options are
        the :class:`Client` options.

        Example::

            client = mcp_sync.Client.http("http://127.0.0.1:8000/mcp", headers={"X-Team": "a"})
        """
        recipe = _recipe(locals())  # first: what to pickle this client as (#19.5)
        from .transports.http import HttpTransport

        transport_options = http_options(
            HttpTransport, "Client.http", url, session=session, verify=verify, cert=cert, proxies=proxies,
            connect_timeout=connect_timeout, max_retries=max_retries,
        )
        check_request_headers(headers, "Client.http", none_leaves_out=True)  # now, not at the first request
        check_max_view_sessions(max_view_sessions, "Client.http")
        if isinstance(auth, str):  # auth="oauth": the browser and the cache directory; a typo: refused now
            from .auth import resolve_auth  # (mcp_sync.auth loads on use: import mcp_sync stays light)

            auth = resolve_auth(auth, url, "Client.http")
        return _with_recipe("http", recipe, oauth=(url, auth), client=cls(
            lambda: HttpTransport(url, headers=headers, auth=auth, max_message_bytes=max_message_bytes,
                                  **transport_options),
            name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, on_progress=on_progress,
            tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input, discover_result=discover_result, tool_transforms=tool_transforms,
            tool_filter=tool_filter, list_ttl=list_ttl, on_list_changed=on_list_changed,
        ))

    @classmethod
    def sse(
        cls: type[_C],
        url: str,
        headers: Mapping[str, str] | None = None,
        auth: Any = None,
        *,
        session: Any = None,
        verify: bool | str | None = None,
        cert: str | tuple[str, str] | None = None,
        proxies: Mapping[str, str] | None = None,
        connect_timeout: float = 10.0,
        max_retries: int = 3,
        max_view_sessions: int = MAX_VIEW_SESSIONS,
        name: str | None = None,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "legacy",
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
        on_reconnected: Callable[[_C], None] | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        tracing: bool = True,
        log_level: str | None = None,
        extensions: Mapping[str, Any] | None = None,
        cache: bool = True,
        sampling_tools: bool = False,
        host_tasks: bool = False,
        restart: bool = True,
        url_elicitation: bool = False,
        validate_output: str | bool = "warn",
        validate_input: bool = False,
        discover_result: DiscoverResult | Mapping[str, Any] | None = None,
        tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = None,
        tool_filter: ToolFilter | Mapping[str, Any] | None = None,
        list_ttl: float | None = None,
        on_list_changed: Callable[[str, list[Any]], None] | None = None,
    ) -> _C:
        """A client for a deprecated HTTP+SSE (2024-11-05) server; always legacy.

        Takes the HTTP options of :meth:`http` (``max_view_sessions`` included)
        and the :class:`Client` options.

        Example::

            client = mcp_sync.Client.sse("http://127.0.0.1:3001/sse")
        """
        recipe = _recipe(locals())  # first: what to pickle this client as (#19.5)
        from .transports.sse import SseTransport

        transport_options = http_options(
            SseTransport, "Client.sse", url, session=session, verify=verify, cert=cert, proxies=proxies,
            connect_timeout=connect_timeout, max_retries=max_retries,
        )
        check_request_headers(headers, "Client.sse", none_leaves_out=True)  # now, not at the first request
        check_max_view_sessions(max_view_sessions, "Client.sse")
        if isinstance(auth, str):  # auth="oauth": the browser and the cache directory; a typo: refused now
            from .auth import resolve_auth  # (mcp_sync.auth loads on use: import mcp_sync stays light)

            auth = resolve_auth(auth, url, "Client.sse")
        return _with_recipe("sse", recipe, oauth=(url, auth), client=cls(
            lambda: SseTransport(url, headers=headers, auth=auth, max_message_bytes=max_message_bytes,
                                 **transport_options),
            name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, on_progress=on_progress,
            tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input, discover_result=discover_result, tool_transforms=tool_transforms,
            tool_filter=tool_filter, list_ttl=list_ttl, on_list_changed=on_list_changed,
        ))


# -- pickling (#19.5): a client pickles as what it connects to and how (its recipe) -------------------------


def _recipe(arguments: dict[str, Any]) -> dict[str, Any]:
    """A constructor's arguments (its ``locals()`` on entry), without ``cls``."""
    return {key: value for key, value in arguments.items() if key != "cls"}


def _with_recipe(
    constructor: str, recipe: dict[str, Any], client: _C, oauth: tuple[str, Any] | None = None
) -> _C:
    client._recipe = (constructor, recipe)  # type: ignore[attr-defined]
    client._auth = oauth  # type: ignore[attr-defined]  # (url, auth) for authorize() and logout()
    replace_earlier(client, client._recipe)  # type: ignore[attr-defined]  # a re-run notebook cell (#29.4)
    return client


def pickle_recipe(what: str, recipe: Mapping[str, Any]) -> None:
    """Raise TypeError naming the first option of ``recipe`` that cannot be pickled."""
    import pickle

    for option, value in recipe.items():
        try:
            pickle.dumps(value)
        except Exception as exc:  # PicklingError, TypeError, AttributeError (a lambda, a lock, a file)
            raise TypeError(
                f"cannot pickle {what}: its option {option}={value!r:.60} cannot be pickled ({exc}); "
                f"pass one that can (a module-level function, not a lambda) or build the {what} in the worker"
            ) from exc


#: Threads that close evicted view sessions at once (each close may wait on a slow server's DELETE),
#: and how many close them all when the client closes.
VIEW_CLOSERS, VIEW_CLOSERS_AT_CLOSE = 4, 16

#: The longest a client's close() waits for the closing of its views' sessions (seconds): each close is
#: bounded (a DELETE ends within about 4 s), so this bounds a backlog that a slow server made.
VIEW_CLOSE_WAIT = 10.0

#: The Client options that make a view's legacy session need the server's messages outside its
#: requests (notifications, the server's own requests): with any of them set, its GET stream opens
#: at once, as the client's own does.
_LISTENING_OPTIONS = ("on_notification", "on_sampling", "on_elicitation", "on_roots", "log_level", "host_tasks")


def check_max_view_sessions(value: Any, where: str) -> None:
    """ValueError unless ``value`` is a whole number >= 1 (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{where}: max_view_sessions must be a whole number >= 1, not {value!r}")


def view_needs_server_stream(recipe: Mapping[str, Any]) -> bool:
    """True when a view's legacy session, made from ``recipe``, opens its GET stream at once (#29.3).

    The rule: a session made for a view's credentials opens no GET stream (the stream of the
    server's messages outside any request) unless the client was made with something that
    listens to such messages: ``on_notification``, ``on_sampling``, ``on_elicitation``,
    ``on_roots``, a ``log_level`` or ``host_tasks``. Otherwise the stream opens on demand, when a
    ``listen()`` or a resource subscription is made through the view. What a request needs from
    the server on the way (its answer, its progress, an elicitation or sampling request about
    it) comes on the POST's own stream, GET stream or not. Without the stream a view's cached
    lists are not kept until they change (nothing would say they did): they are fetched again.
    The 2025-11-25 spec lets a client skip the GET stream (it MAY issue one).

    Example: ``view_needs_server_stream({"url": url, "on_roots": None})`` is False.
    """
    return any(recipe.get(option) not in (None, False) for option in _LISTENING_OPTIONS)


class ViewSessions:
    """The legacy HTTP sessions of one client's views, one per credential (#19.1, #29.3).

    A legacy server ties a session to the credentials that opened it, so a view with other
    credentials gets a client of its own, made like the viewed one (its recipe) with those
    credentials, reused by views with equal credentials, closed with the client. At most the
    client's ``max_view_sessions`` are kept (64 by default): past that the least recently used
    is closed, on a closer thread, so the request that evicted it never waits for its DELETE
    (up to ``VIEW_CLOSERS`` threads; with a backlog as long as the cap, the evicting request
    closes it itself, which bounds what a slow server can make pile up). Requests hold their
    session (:meth:`lease`): one evicted while requests are on it (more users at once than the
    cap) is closed when the last of them is done, never under them. Such a session opens
    its GET stream only on need (:func:`view_needs_server_stream`). Thread-safe under the
    client's connection lock; ``close()`` ends every session and joins the closers.
    """

    def __init__(self) -> None:
        self._clients: dict[Any, Any] = {}  # credential -> the client holding its session, LRU last
        self._retired: collections.deque[Any] = collections.deque()  # evicted, waiting for a closer
        self._retired_lock = threading.Lock()
        self._closers: Workers | None = None  # made at the first eviction
        self._running = 0  # closer threads at work
        self._leases: dict[int, int] = {}  # id(client) -> its requests under way (see lease)
        self._in_use: dict[int, Any] = {}  # id(client) -> an evicted client whose requests are under way
        self._server, self._cap = "views", MAX_VIEW_SESSIONS  # of the last request: the closers' name, the backlog

    def session_for(self, client: Any, headers: dict[str, str], auth: Any) -> Session:
        """The session of ``headers`` and ``auth`` on ``client``'s server (made on first use)."""
        return self._own(client, headers, auth, lease=False)._session  # type: ignore[no-any-return]

    def lease(self, client: Any, headers: dict[str, str], auth: Any) -> tuple[Session, Callable[[], None]]:
        """:meth:`session_for` for one request, and what to call when it is done: a session evicted
        meanwhile is closed only once its last request is done (never under a request)."""
        own = self._own(client, headers, auth, lease=True)
        return own._session, functools.partial(self._release, own)

    def _own(self, client: Any, headers: dict[str, str], auth: Any, *, lease: bool) -> Any:
        key = credential_of(headers, auth)
        connection = client._session.connection
        with connection.lock:
            if connection.state is ClientState.CLOSED:
                raise ClientStateError("the client this view was bound from is closed")
            if client._recipe is None:
                raise TypeError("bind: a client built on a transport object cannot open sessions for views")
            constructor, recipe = client._recipe
            own = self._clients.pop(key, None)
            if own is None:
                merged, own_auth = {**(recipe.get("headers") or {}), **headers}, recipe.get("auth")
                if auth is not None or AUTHORIZATION in headers:  # the view's credential, never the client's
                    own_auth = auth
                    if AUTHORIZATION not in headers:
                        merged = {n: v for n, v in merged.items() if n.lower() != "authorization"}
                with untracked():  # the client closes its views' sessions, not a re-run cell (#29.4)
                    own = getattr(type(client), constructor)(**{**recipe, "headers": merged, "auth": own_auth})
                own._session.connection.server_stream_on_demand = not view_needs_server_stream(recipe)
            self._clients[key] = own
            if lease:
                with self._retired_lock:
                    self._leases[id(own)] = self._leases.get(id(own), 0) + 1
            self._server = connection.name
            self._cap = cap = recipe.get("max_view_sessions", MAX_VIEW_SESSIONS)
            doomed = list(self._clients)[:-cap]
            evicted = [self._clients.pop(each) for each in doomed]
        for each in evicted:
            self._retire(each)
        return own

    def _release(self, own: Any) -> None:
        """A request on ``own``'s session is done: close it now if it was evicted meanwhile."""
        with self._retired_lock:
            left = self._leases.pop(id(own), 1) - 1
            if left:
                self._leases[id(own)] = left
            evicted = self._in_use.pop(id(own), None) if not left else None
        if evicted is not None:
            self._retire(evicted)

    def _retire(self, evicted: Any) -> None:
        """Close ``evicted`` on a closer thread (the caller goes on with its request); one still
        serving a request is closed when that request is done (:meth:`_release`)."""
        with self._retired_lock:
            if self._leases.get(id(evicted)):
                self._in_use[id(evicted)] = evicted
                return
            queued = len(self._retired) < self._cap
            if queued:
                self._retired.append(evicted)
        if not queued:  # a backlog as long as the cap: the server is slow to end sessions
            evicted.close()
        elif not self._start_closers(self._server, VIEW_CLOSERS):  # the client is closing: close() drains the rest
            self._drain()

    def _start_closers(self, server: str, wanted: int) -> bool:
        """Have ``wanted`` closer threads at work (starting what is missing); False once closed."""
        with self._retired_lock:
            if self._closers is None:
                self._closers = Workers(server)
            while self._running < min(wanted, len(self._retired)):
                if self._closers.spawn(functools.partial(self._drain, True), "view-closer") is None:
                    return False
                self._running += 1
            return True

    def _drain(self, closer: bool = False) -> None:
        """Close evicted sessions until none is left (on a closer thread when ``closer``)."""
        while True:
            with self._retired_lock:
                if not self._retired:
                    if closer:  # under the lock that queues: a session queued from now on gets a closer
                        self._running -= 1
                    return
                evicted = self._retired.popleft()
            try:
                evicted.close()
            except Exception:  # closing never fails the closer: the others still get closed
                log.debug("mcp_sync: closing a view's session failed", exc_info=True)

    def close(self, lock: threading.RLock, server: str) -> None:
        """Close every view's session (the client is closing), the evicted ones included: on the
        closer threads and this one, then join the closers (``VIEW_CLOSE_WAIT`` s at most)."""
        with lock:
            clients, self._clients = list(self._clients.values()), {}
        with self._retired_lock:
            self._retired.extend(clients)
            self._retired.extend(self._in_use.values())  # their requests end now, with the client
            self._in_use.clear()
            pending = len(self._retired)
        if pending > 1:  # in parallel: each may wait on a slow server's DELETE (up to about 4 s)
            self._start_closers(server, min(pending - 1, VIEW_CLOSERS_AT_CLOSE))
        self._drain()
        with self._retired_lock:
            closers, self._closers = self._closers, None  # a client opened again makes new ones
        if closers is not None:
            closers.close(VIEW_CLOSE_WAIT)  # those still closing one: each close is bounded
