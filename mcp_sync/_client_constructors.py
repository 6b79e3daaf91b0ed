"""How a :class:`~mcp_sync.Client` is made: its constructors, the recipe it pickles as, and the
legacy HTTP sessions its views open.

``ClientConstructors`` is a mixin of public classmethods only: each spells out every Client
option (a typed API: a misspelt option is a TypeError at once and a mypy error), builds the
transport factory and hands everything to ``cls(...)``, its one hook. A client made this way
remembers its recipe (constructor and arguments), so it pickles as what it connects to (#19.5)
and a view with other credentials can open a session of its own (#19.1).
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, TypeVar

from ._headers import AUTHORIZATION
from ._notebook import replace_earlier, untracked
from ._options import ProgressCallback, Roots, check_request_headers, credential_of  # noqa: F401  (ProgressCallback: hints)
from ._protocol.connection import ClientState
from ._values import check_env, command_line, http_options
from ._worker_clients import unpickle_client  # noqa: F401  (what a Client pickles to; #29.1)
from .exceptions import ClientStateError, MCPError
from .transports.base import Transport

if TYPE_CHECKING:
    from ._protocol.session import Session

_C = TypeVar("_C", bound="ClientConstructors")

#: The most legacy HTTP sessions one client keeps for its views' credentials (least recently used closed).
MAX_VIEW_SESSIONS = 64


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
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        on_connection_lost: Callable[[MCPError], None] | None = None,
        on_reconnected: Callable[[_C], None] | None = None,
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
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
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
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        on_connection_lost: Callable[[MCPError], None] | None = None,
        on_reconnected: Callable[[_C], None] | None = None,
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
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
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
        name: str | None = None,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "auto",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        on_connection_lost: Callable[[MCPError], None] | None = None,
        on_reconnected: Callable[[_C], None] | None = None,
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
    ) -> _C:
        """A client for a Streamable HTTP server (falls back to HTTP+SSE for old servers).

        HTTP options: ``session`` (your ``requests.Session``, used as is),
        ``verify`` (bool or CA bundle path), ``cert``, ``proxies``,
        ``connect_timeout`` (seconds) and ``max_retries`` (only where nothing
        reached the server). The other options are the :class:`Client` options.

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
        return _with_recipe("http", recipe, cls(
            lambda: HttpTransport(url, headers=headers, auth=auth, max_message_bytes=max_message_bytes,
                                  **transport_options),
            name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
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
        name: str | None = None,
        client_info: Mapping[str, Any] | None = None,
        mode: str = "legacy",
        protocol_version: str | None = None,
        timeout: float | None = 60.0,
        probe_timeout: float | None = 10.0,
        max_message_bytes: int = 64 * 1024 * 1024,
        max_pages: int = 1000,
        input_required_max_rounds: int = 10,
        on_elicitation: Callable[[dict], dict] | None = None,
        on_sampling: Callable[[dict], dict] | None = None,
        on_roots: Roots | None = None,
        on_notification: Callable[[str, dict], None] | None = None,
        on_connection_lost: Callable[[MCPError], None] | None = None,
        on_reconnected: Callable[[_C], None] | None = None,
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
    ) -> _C:
        """A client for a deprecated HTTP+SSE (2024-11-05) server; always legacy.

        Takes the HTTP options of :meth:`http` and the :class:`Client` options.

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
        return _with_recipe("sse", recipe, cls(
            lambda: SseTransport(url, headers=headers, auth=auth, max_message_bytes=max_message_bytes,
                                 **transport_options),
            name=name, client_info=client_info, mode=mode, protocol_version=protocol_version,
            timeout=timeout, probe_timeout=probe_timeout, max_message_bytes=max_message_bytes, max_pages=max_pages,
            input_required_max_rounds=input_required_max_rounds, on_elicitation=on_elicitation,
            on_sampling=on_sampling, on_roots=on_roots, on_notification=on_notification, log_level=log_level,
            on_connection_lost=on_connection_lost, on_reconnected=on_reconnected, tracing=tracing,
            extensions=extensions, cache=cache, sampling_tools=sampling_tools, host_tasks=host_tasks,
            restart=restart, url_elicitation=url_elicitation, validate_output=validate_output,
            validate_input=validate_input,
        ))


# -- pickling (#19.5): a client pickles as what it connects to and how (its recipe) -------------------------


def _recipe(arguments: dict[str, Any]) -> dict[str, Any]:
    """A constructor's arguments (its ``locals()`` on entry), without ``cls``."""
    return {key: value for key, value in arguments.items() if key != "cls"}


def _with_recipe(constructor: str, recipe: dict[str, Any], client: _C) -> _C:
    client._recipe = (constructor, recipe)  # type: ignore[attr-defined]
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


class ViewSessions:
    """The legacy HTTP sessions of one client's views, one per credential (#19.1).

    A legacy server ties a session to the credentials that opened it, so a view with other
    credentials gets a client of its own, made like the viewed one (its recipe) with those
    credentials, reused by views with equal credentials, closed with the client. Thread-safe
    under the client's connection lock.
    """

    def __init__(self) -> None:
        self._clients: dict[Any, Any] = {}  # credential -> the client holding its session, LRU last

    def session_for(self, client: Any, headers: dict[str, str], auth: Any) -> Session:
        """The session of ``headers`` and ``auth`` on ``client``'s server (made on first use)."""
        key = credential_of(headers, auth)
        connection = client._session.connection
        with connection.lock:
            if connection.state is ClientState.CLOSED:
                raise ClientStateError("the client this view was bound from is closed")
            own = self._clients.pop(key, None)
            if own is None:
                if client._recipe is None:
                    raise TypeError("bind: a client built on a transport object cannot open sessions for views")
                constructor, recipe = client._recipe
                merged, own_auth = {**(recipe.get("headers") or {}), **headers}, recipe.get("auth")
                if auth is not None or AUTHORIZATION in headers:  # the view's credential, never the client's
                    own_auth = auth
                    if AUTHORIZATION not in headers:
                        merged = {n: v for n, v in merged.items() if n.lower() != "authorization"}
                with untracked():  # the client closes its views' sessions, not a re-run cell (#29.4)
                    own = getattr(type(client), constructor)(**{**recipe, "headers": merged, "auth": own_auth})
            self._clients[key] = own
            doomed = list(self._clients)[:-MAX_VIEW_SESSIONS]
            closing = [self._clients.pop(each) for each in doomed]
        for each in closing:
            each.close()
        return own._session  # type: ignore[no-any-return]

    def close(self, lock: threading.RLock) -> None:
        """Close every view's session (the client is closing)."""
        with lock:
            clients, self._clients = list(self._clients.values()), {}
        for each in clients:
            each.close()
