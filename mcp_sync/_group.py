"""``ClientGroup``: many MCP servers used as one (tools, resources and prompts routed by name)."""

from __future__ import annotations

import functools
import inspect
import logging
import os
import pickle
import threading
import warnings
import weakref
from collections import OrderedDict
from typing import Any, Callable, Iterator, Mapping, Union

import attrs

from ._client import Client, ClientState
from ._client_constructors import pickle_recipe
from ._client_tasks import Task
from ._config import load_config
from ._connect import NOT_GIVEN, _client_for, given_options, is_whole_config
from ._glob import NameFilter
from ._llm_formats import LLMFormatsMixin, ToolNames, shortened_name
from ._notebook import replace_earlier, untracked
from ._options import ProgressCallback, Roots, call_options
from ._sentinels import USE_CLIENT_DEFAULT
from ._threads import run_concurrently
from ._tool_transform import ToolFilter, ToolTransform
from ._typed import ResultT
from ._values import Timeout
from .cancellation import CancellationToken
from .exceptions import CapabilityError, ClientStateError, MCPError, ServerError, ToolNotFound
from .models import (
    CallToolResult,
    GetPromptResult,
    Listing,
    ProgressEvent,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    Tool,
)

log = logging.getLogger("mcp_sync")

SEPARATOR = "__"
_MAX_ORIGINS = 10_000  # items handed out whose server server_of() still knows by identity
Servers = Union[str, "os.PathLike[str]", Mapping[str, Union[Client, Mapping[str, Any]]]]
#: per-server glob patterns: ``{"github": ["search_*"]}``
Patterns = Mapping[str, Union[str, "list[str]", "tuple[str, ...]"]]


class AmbiguousToolError(MCPError, ValueError):
    """More than one server has a tool (or prompt, or resource) of that name; pass ``server=``.

    ``name`` is the name asked for, ``servers`` the servers that have it.

    Example::

        try:
            group.call_tool("search", {"q": "x"})
        except mcp_sync.AmbiguousToolError as e:
            group.call_tool("search", {"q": "x"}, server=e.servers[0])
    """

    def __init__(self, message: str, *, name: str, servers: list[str]) -> None:
        super().__init__(message)
        self.name, self.servers = name, servers


class _Names:
    """``<server>__<name>`` names, valid for every LLM API, and the way back. Once given, a
    name keeps meaning the same (server, name) for the group's life."""

    def __init__(self) -> None:
        self.to_key: dict[str, tuple[str, str]] = {}
        self.to_name: dict[tuple[str, str], str] = {}

    def prefixed(self, server: str, name: str) -> str:
        key = (server, name)
        if key in self.to_name:
            return self.to_name[key]
        wanted, hash_key = f"{server}{SEPARATOR}{name}", f"{server}\0{name}"
        candidate, hash_len = shortened_name(wanted, hash_key), 8
        while candidate in self.to_key:  # e.g. server "a__b" + tool "c" and server "a" + tool "b__c"
            candidate = shortened_name(wanted, hash_key, hash_len, force_hash=True)
            hash_len += 4
        self.to_key[candidate], self.to_name[key] = key, candidate
        return candidate


def _template_parts(template: str) -> tuple[list[str], bool]:
    """The literal pieces of a URI template (one more than its ``{...}`` expressions) and whether
    every expression is a simple ``{name}`` (RFC 6570 level 1). Linear: one ``find`` pass."""
    literals: list[str] = []
    simple = True
    position = literal_start = 0
    while True:
        opening = template.find("{", position)
        if opening < 0:
            break
        closing = template.find("}", opening + 1)
        if closing < 0:
            break
        # "{a{b}": the expression is the inner one (no "{" inside an expression); rfind walks back
        # over text just walked, once, so the whole stays linear even on "{" * n + "}"
        opening = template.rfind("{", opening, closing)
        literals.append(template[literal_start:opening])
        first = template[opening + 1 : opening + 2]
        simple = simple and (first.isalnum() or first == "_")
        position = literal_start = closing + 1
    literals.append(template[literal_start:])
    return literals, simple


_SEPARATORS = ("/", "?", "#")


def _has_separator(text: str, start: int, end: int) -> bool:
    return any(text.find(separator, start, end) >= 0 for separator in _SEPARATORS)


def template_fits(template: str, uri: str) -> bool:
    """Whether ``uri`` could come from the URI template ``template`` (RFC 6570), loosely.
    Used only to choose which server to ask first, so a wrong guess costs an extra request.

    "Fits" means: the template's literal text is in ``uri`` in order (the text before the first
    expression at its start, the text after the last one at its end), and what is left between
    them is what the expressions stand for. When every expression is a simple ``{name}``, each
    stands for text within one path segment (no ``/``, ``?`` or ``#``), exactly as RFC 6570
    expands it; a template with any operator (``{+path}``, ``{?q}``, ``{/p}``, ...) lets every
    expression stand for any text.

    Time: linear in ``len(template) + len(uri)`` (each literal is looked for once, from where the
    previous one ended; the leftmost place is always a right choice), never a regex, whose
    backtracking on ``.*`` per expression froze ``read_resource`` on a template with 24
    ``{+a}`` (#17.6).

    Example: ``template_fits("test://items/{id}", "test://items/7") is True``
    """
    literals, simple = _template_parts(template)
    if len(literals) == 1:
        return uri == template
    first, last = literals[0], literals[-1]
    if not uri.startswith(first) or len(uri) < len(first) + len(last) or not uri.endswith(last):
        return False
    position, end = len(first), len(uri) - len(last)
    for literal in literals[1:-1]:
        found = uri.find(literal, position, end)
        if found < 0 or (simple and _has_separator(uri, position, found)):
            return False
        position = found + len(literal)
    return not (simple and _has_separator(uri, position, end))


class ClientGroup(LLMFormatsMixin):
    """Several MCP servers as one: their tools, resources and prompts, routed by name.

    ``servers`` maps names to config entries (as :func:`load_config` returns
    them, or as :func:`connect` takes them) or to :class:`Client` objects; a
    path, or a whole config's dict (``{"mcpServers": ...}``), is read with
    :func:`load_config`. The keyword options (those of :func:`connect`: the
    :class:`Client` options, and the stdio or HTTP ones) apply to every client
    built from an entry; ``options={"github": {"timeout": 5}}`` adds per-server
    ones (timeouts, auth, handlers). The group owns its clients: ``close()``
    closes them all.

    Connecting (``__enter__``, :meth:`connect` or the first use) starts every
    server at once, each within its client's ``timeout``; a server that fails
    lands in :attr:`errors` and is logged, unless ``strict=True``, which closes
    the others and raises that error.

    ``include={"github": ["search_*"]}`` / ``exclude={"fs": ["delete_*"]}`` (glob
    patterns, matched in linear time, on the names each client shows) leave tools out:
    not listed, not offered to a model, :class:`ToolNotFound` for :meth:`call_tool`.
    A config entry's ``"tools"`` section (``include``, ``exclude``, ``tags``,
    ``exclude_tags``, ``transform``) is its client's ``tool_filter`` and
    ``tool_transforms`` (see :class:`ToolTransform`); the group's ``include`` for a
    server replaces its entry's, both excludes apply. Per-server ``options=`` may give
    ``tool_transforms``, ``tool_filter`` and ``list_ttl`` too. ``on_notification(server, method,
    params)`` names the server. :meth:`add` and :meth:`remove` change a live group.

    In a notebook, re-running the cell that made a group closes the group that
    cell line made before with the same servers and options (as :func:`connect`).

    Thread-safe like :class:`Client`: share one group between threads; the
    name maps sit behind one lock and the calls themselves run unlocked.

    Example::

        servers = mcp_sync.load_config("claude_desktop_config.json")
        with mcp_sync.ClientGroup(servers, timeout=30) as group:
            for tool in group.tools():
                print(group.server_of(tool), tool.name)
            group.call_tool("read_file", {"path": "x"})
            group.call_tool("search", {"q": "mcp"}, server="github")
    """

    def __init__(
        self,
        servers: Servers,
        *,
        strict: bool = False,
        options: Mapping[str, Mapping[str, Any]] | None = None,
        include: Patterns | None = None,
        exclude: Patterns | None = None,
        env: Mapping[str, str] | None = NOT_GIVEN,
        cwd: str | os.PathLike[str] | None = NOT_GIVEN,
        inherit_env: bool = NOT_GIVEN,
        stderr: Any = NOT_GIVEN,
        headers: Mapping[str, str] | None = NOT_GIVEN,
        auth: Any = NOT_GIVEN,
        session: Any = NOT_GIVEN,
        verify: bool | str | None = NOT_GIVEN,
        cert: str | tuple[str, str] | None = NOT_GIVEN,
        proxies: Mapping[str, str] | None = NOT_GIVEN,
        connect_timeout: float = NOT_GIVEN,
        max_retries: int = NOT_GIVEN,
        max_view_sessions: int = NOT_GIVEN,
        name: str | None = NOT_GIVEN,
        client_info: Mapping[str, Any] | None = NOT_GIVEN,
        mode: str = NOT_GIVEN,
        protocol_version: str | None = NOT_GIVEN,
        timeout: float | None = NOT_GIVEN,
        probe_timeout: float | None = NOT_GIVEN,
        max_message_bytes: int = NOT_GIVEN,
        max_pages: int = NOT_GIVEN,
        input_required_max_rounds: int = NOT_GIVEN,
        on_elicitation: Callable[..., dict[str, Any]] | None = NOT_GIVEN,
        on_sampling: Callable[..., dict[str, Any]] | None = NOT_GIVEN,
        on_roots: Roots | None = NOT_GIVEN,
        on_notification: Callable[[str, str, dict[str, Any]], None] | None = NOT_GIVEN,
        on_connection_lost: Callable[[MCPError], None] | None = NOT_GIVEN,
        on_reconnected: Callable[[Client], None] | None = NOT_GIVEN,
        on_progress: Callable[[ProgressEvent], None] | None = NOT_GIVEN,
        tracing: bool = NOT_GIVEN,
        log_level: str | None = NOT_GIVEN,
        extensions: Mapping[str, Any] | None = NOT_GIVEN,
        cache: bool = NOT_GIVEN,
        sampling_tools: bool = NOT_GIVEN,
        host_tasks: bool = NOT_GIVEN,
        restart: bool = NOT_GIVEN,
        url_elicitation: bool = NOT_GIVEN,
        validate_output: str | bool = NOT_GIVEN,
        validate_input: bool = NOT_GIVEN,
        discover_result: Any = NOT_GIVEN,
        tool_transforms: Mapping[str, ToolTransform | Mapping[str, Any]] | None = NOT_GIVEN,
        tool_filter: ToolFilter | Mapping[str, Any] | None = NOT_GIVEN,
        list_ttl: float | None = NOT_GIVEN,
        on_list_changed: Callable[[str, list[Any]], None] | None = NOT_GIVEN,
    ) -> None:
        # first: locals() holds only the parameters here
        client_options = given_options(locals(), "self", "servers", "strict", "options", "include", "exclude")
        self._recipe = {  # for pickling (#19.5)
            "strict": strict, "options": options, "include": include, "exclude": exclude, **client_options
        }
        #: the group's ``on_notification(server, method, params)``; each client gets its own, naming it
        self._on_notification = client_options.pop("on_notification", None)
        if isinstance(servers, (str, os.PathLike)) or is_whole_config(servers):
            servers = load_config(servers)
        self._sources: dict[str, Client | Mapping[str, Any]] = {str(name): src for name, src in servers.items()}
        per_server = {str(name): dict(opts) for name, opts in (options or {}).items()}
        unknown = sorted(set(per_server) - set(self._sources))
        if unknown:
            raise ValueError(f"options for servers that are not in the group: {unknown}")
        for server, opts in per_server.items():  # a misspelt option fails here, not as a connect failure
            misspelt = sorted(set(opts) - _CLIENT_OPTIONS)
            if misspelt:
                raise TypeError(f"ClientGroup: options for {server!r}: unknown option(s) {misspelt}")
        built = sorted(name for name in per_server if isinstance(self._sources[name], Client))
        if built:
            raise ValueError(f"options for {built}: these are Client objects already built with their options")
        self._client_options = client_options
        self._options = {name: {**client_options, **per_server.get(name, {})} for name in self._sources}
        for which, given in (("include", include), ("exclude", exclude)):
            stray = sorted(set(given or {}) - set(self._sources))
            if stray:
                raise ValueError(f"{which} patterns for servers that are not in the group: {stray}")
        self._own_include = {str(name) for name in (include or {})}  # their entries' include is replaced
        self._filters = {
            name: _tool_filter(name, source, (include or {}).get(name), (exclude or {}).get(name))
            for name, source in self._sources.items()
        }
        self.strict = strict
        #: name -> connected :class:`Client`, for the servers that connected
        self.clients: dict[str, Client] = {}
        #: name -> exception, for the servers that failed to connect
        self.errors: dict[str, BaseException] = {}
        self._lock = threading.RLock()
        self._tool_names = ToolNames()  # the LLM names handed out, for run_tool_call
        # connect() waits here (the lock released) while another thread connects; close() wakes it
        self._changed = threading.Condition(self._lock)
        self._state = "new"  # new -> connecting -> open -> closed (closed from any of them)
        self._connecting: dict[str, Client] = {}  # the clients of a connect in progress
        self._adding: dict[str, Client] = {}  # the clients add() is connecting
        # every client the group owns, for the finalizer: a plain list that never refers back to
        # the group, so that a group nobody references is freed (and closes its servers) at once
        self._owned: list[Client] = [source for source in self._sources.values() if isinstance(source, Client)]
        self._finalizer = weakref.finalize(self, _collect_group, self._owned, f"ClientGroup {sorted(self._sources)}")
        self._finalizer.atexit = False  # at exit the clients' own exit hook closes them
        self._names = {"tool": _Names(), "prompt": _Names()}
        # kind -> server -> name/uri -> item, from each server's last complete listing
        self._seen: dict[str, dict[str, dict[str, Any]]] = {
            "tool": {}, "prompt": {}, "resource": {}, "resource_template": {}
        }  # fmt: skip
        self._origins: OrderedDict[int, tuple[Any, str]] = OrderedDict()
        #: an unpickled group's servers are its process's shared clients, seen through copies (#29.1)
        self._worker_copies = False
        # last, when nothing above raised: a re-run notebook cell closes the group it made before (#29.4)
        replace_earlier(self, {"servers": dict(self._sources), **self._recipe})

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as its servers (entries, or clients as what they connect to) and options,
        never their connections: the copy connects on first use where it is unpickled.
        There, each server's client is a copy of that process's one client for it (as for
        a pickled :class:`Client`, its entries included): a worker unpickling the group for
        1,000 tasks starts each server once, and closing the group closes its copies only.
        An option that cannot be pickled (a lambda handler) is a TypeError naming it.

        Example: ``pickle.loads(pickle.dumps(group)).call_tool("echo", {"text": "hi"})``
        """
        recipe = {"servers": dict(self._sources), **self._recipe}
        pickle_recipe("ClientGroup", recipe)
        return (_unpickle_group, (type(self), recipe))

    # -- lifecycle ------------------------------------------------------------------------------

    def __enter__(self) -> ClientGroup:
        self.connect()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def connect(self) -> ClientGroup:
        """Connect every server at once (done by the first use too); returns the group.

        Failures go to :attr:`errors` (and the log), or with ``strict=True``
        close everything and raise the first failure (in config order). No lock
        is held while servers start: :meth:`close` from another thread returns at
        once and makes this raise :class:`ClientStateError`; another thread's
        ``connect()`` (or first use) waits for this one.

        Example::

            group = mcp_sync.ClientGroup(servers).connect()
            print(sorted(group.clients), group.errors)
        """
        with self._lock:
            while self._state == "connecting":  # another thread connects: wait for it, unlocked
                self._changed.wait(1.0)
            if self._state == "closed":
                raise ClientStateError("this ClientGroup is closed")
            if self._state == "open":
                return self
            self._state = "connecting"
            sources = dict(self._sources)  # add() and remove() wait while a connect runs
        clients: dict[str, Client] = {}
        errors: dict[str, BaseException] = {}
        try:
            for name, source in sources.items():
                try:
                    # named after its key ("[crashes] boom" on stderr), unless a name is given
                    clients[name] = source if isinstance(source, Client) else self._build(name, source)
                except (ValueError, TypeError, OSError) as exc:  # a bad entry is that server's failure
                    errors[name] = _without_traceback(exc)
            with self._lock:
                self._owned.extend(client for client in clients.values() if client not in self._owned)
                closed = self._state == "closed"
                self._connecting = dict(clients)
            if closed:
                raise ClientStateError("this ClientGroup was closed while connecting")
            connects = {name: (client.connect,) for name, client in clients.items()}
            outcomes = run_concurrently(connects, "group", "connect")  # unlocked: close() may run meanwhile
            with self._lock:
                self._connecting = {}
                if self._state == "closed":  # close() closed these clients already
                    raise ClientStateError("this ClientGroup was closed while connecting")
                for name, client in clients.items():
                    error = outcomes[name][1]
                    if error is None:
                        self.clients[name] = client
                    else:
                        errors[name] = _without_traceback(error)
                self.errors.update((name, errors[name]) for name in self._sources if name in errors)  # config order
                self._state = "open"
                self._changed.notify_all()
        except BaseException:  # closed meanwhile, or Ctrl-C while connecting: leave no server running
            with self._lock:
                self._connecting = {}
                if self._state == "connecting":
                    self._state = "new"  # a later use tries again
                self._changed.notify_all()
            for client in clients.values():
                client.close()
            raise
        for name, client in clients.items():
            if name in self.errors:
                client.close()
        for name, error in self.errors.items():
            log.warning("mcp_sync: server %r failed to connect: %s: %s", name, type(error).__name__, error)
        if self.strict and self.errors:
            first = next(iter(self.errors.values()))
            self.close()
            raise first
        return self

    def close(self) -> None:
        """Close every client (idempotent; bounded like :meth:`Client.close`).

        Returns at once even while another thread connects (the servers still
        starting are closed too, and that ``connect()`` raises
        :class:`ClientStateError`).

        Example: ``group.close()``
        """
        with self._lock:
            if self._state == "closed":
                return
            self._state = "closed"
            clients = [*self._owned, *self.clients.values(), *self._connecting.values(), *self._adding.values()]
            self._changed.notify_all()
        self._finalizer.detach()
        unique = {id(client): client for client in clients}
        run_concurrently({str(key): (client.close,) for key, client in unique.items()}, "group", "close")

    def _build(self, name: str, source: Mapping[str, Any]) -> Client:
        """An unconnected client for one entry, with its options; the group's ``on_notification``
        gets the server's name first (a per-server ``on_notification`` in ``options`` wins)."""
        options = {"name": name, **self._options[name]}
        tools = source.get("tools")
        if name in self._own_include and isinstance(tools, Mapping) and "include" in tools:
            # the group's include for this server replaces its entry's (both excludes apply)
            source = {**source, "tools": {key: value for key, value in tools.items() if key != "include"}}
        if self._on_notification is not None and "on_notification" not in options:
            options["on_notification"] = functools.partial(_notify, self._on_notification, name)
        with untracked():  # the group closes its clients, not a re-run cell (#29.4): the group is tracked
            client = _client_for(source, **options)
        if not self._worker_copies:
            return client
        # An unpickled group (a task's argument in a worker) shares its process's one client
        # per entry, as a pickled Client does: the round trip makes that copy (#29.1). The
        # client built here never connected: closing it costs nothing.
        copy: Client = pickle.loads(pickle.dumps(client))
        client.close()
        return copy

    def add(self, name: str, spec: Client | Mapping[str, Any], *, options: Mapping[str, Any] | None = None) -> Client:
        """Add a server to a live group, connect it and return its client.

        ``spec`` is a config entry (as :func:`load_config` returns them, ``"tools"``
        filters included) or a :class:`Client`; ``options`` are this server's client
        options (``{"timeout": 5}``), like ``options={name: {...}}`` of the
        constructor, added to the group's. Connecting runs outside the group's lock, within the client's
        ``timeout``: other threads go on using the group meanwhile. A server that
        fails to connect is not added; its error is raised. Thread-safe; the name
        must be new (ValueError).

        Example::

            group.add("time", {"command": "uvx", "args": ["mcp-server-time"]})
            group.call_tool("get_current_time", {"timezone": "UTC"})
        """
        name = str(name)
        options = dict(options or {})
        misspelt = sorted(set(options) - _CLIENT_OPTIONS)
        if misspelt:
            raise TypeError(f"ClientGroup.add: unknown option(s) {misspelt}")
        if options and isinstance(spec, Client):
            raise ValueError(f"options for {name!r}: a Client object is already built with its options")
        if not isinstance(spec, (Client, Mapping)):
            raise TypeError(f"ClientGroup.add: spec must be a config entry or a Client, not {type(spec).__name__}")
        tool_filter = _tool_filter(name, spec, None, None)
        self._open_clients()  # the group's own servers first
        with self._lock:
            if self._state == "closed":
                raise ClientStateError("this ClientGroup is closed")
            if name in self._sources:
                raise ValueError(f"the group already has a server named {name!r}")
            self._sources[name] = spec  # the name is taken from here on: a second add of it fails
            self._options[name] = {**self._client_options, **options}
            self._filters[name] = tool_filter
        client: Client | None = None
        try:
            client = spec if isinstance(spec, Client) else self._build(name, spec)
            with self._lock:
                self._owned.append(client)
                self._adding[name] = client  # close() closes it while it connects
                closed = self._state == "closed"
            if closed:
                raise ClientStateError("this ClientGroup was closed while adding a server")
            client.connect()  # unlocked: the network wait
            with self._lock:
                if self._state == "closed" or self._adding.get(name) is not client:  # closed, or removed meanwhile
                    raise ClientStateError(f"this ClientGroup was closed, or {name!r} removed, while adding it")
                self.clients[name] = client
                self._adding.pop(name, None)
        except BaseException:
            with self._lock:  # forget the name unless it was removed and taken again meanwhile
                if self._sources.get(name) is spec and self._adding.get(name) in (None, client):
                    self._forget(name)
            if client is not None:
                client.close()
            raise
        return client

    def remove(self, name: str) -> None:
        """Close one server and take it out of the group (its tools, prompts and resources go with it).

        Thread-safe; calls to that server that are running meanwhile end as
        :meth:`Client.close` ends them. Raises :class:`ToolNotFound` (a KeyError)
        for a name the group does not have.

        Example: ``group.remove("time")``
        """
        name = str(name)
        with self._lock:
            while self._state == "connecting":  # connect() reads the servers: wait for it, unlocked
                self._changed.wait(1.0)
            if name not in self._sources:
                raise ToolNotFound(f"no server named {name!r}; the servers are {sorted(self._sources)}", name=name)
            client = self.clients.get(name) or self._adding.get(name)
            self._forget(name)
        if client is not None:
            client.close()

    def _forget(self, name: str) -> None:
        """Everything the group knows of one server, dropped (under the lock)."""
        client = self.clients.pop(name, None) or self._adding.get(name)
        self._adding.pop(name, None)
        self._sources.pop(name, None)
        self._options.pop(name, None)
        self._filters.pop(name, None)
        self.errors.pop(name, None)
        for seen in self._seen.values():
            seen.pop(name, None)
        if client is not None and client in self._owned:
            self._owned.remove(client)

    def _open_clients(self) -> dict[str, Client]:
        if self._state != "open":
            self.connect()
        if self._state == "closed":
            raise ClientStateError("this ClientGroup is closed")
        return dict(self.clients)

    def _client(self, server: str, name: str) -> Client:
        clients = self._open_clients()
        if server in clients:
            return clients[server]
        if server in self.errors:
            error = self.errors[server]
            raise ToolNotFound(f"server {server!r} failed to connect: {error}", name=name) from error
        raise ToolNotFound(f"no server named {server!r}; the servers are {sorted(self._sources)}", name=name)

    # -- listing --------------------------------------------------------------------------------

    def _walk(self, kind: str, prefix: bool, options: Mapping[str, Any]) -> Iterator[Any]:
        key = {"resource": "uri", "resource_template": "uri_template"}.get(kind, "name")  # what names an item
        for server, client in self._open_clients().items():
            listed: dict[str, Any] = {}
            listers: dict[str, Callable[..., Iterator[Any]]] = {
                "tool": client.tools, "prompt": client.prompts, "resource": client.resources,
                "resource_template": client.resource_templates,
            }  # fmt: skip
            lister = listers[kind]
            items: Iterator[Any] = lister(**options)
            try:
                with self._lock:
                    tool_filter = self._filters.get(server) if kind == "tool" else None
                for item in items:
                    if tool_filter is not None and not tool_filter.allows(item.name):
                        continue  # left out by the group's include/exclude patterns
                    listed[getattr(item, key)] = item
                    shown = item
                    if prefix and kind in ("tool", "prompt"):
                        with self._lock:
                            name = self._names[kind].prefixed(server, item.name)
                        shown = attrs.evolve(item, name=name)
                    with self._lock:
                        self._origins[id(item)] = (item, server)  # the server's own item too (approve gets it)
                        self._origins[id(shown)] = (shown, server)
                        while len(self._origins) > _MAX_ORIGINS:
                            self._origins.popitem(last=False)
                    yield shown
            except CapabilityError:
                continue  # the server has no such things
            except MCPError as exc:
                log.warning("mcp_sync: listing %ss of server %r failed: %s", kind, server, exc)
                continue
            with self._lock:
                if server in self._sources:  # not removed meanwhile
                    self._seen[kind][server] = listed

    def tools(
        self,
        prefix: bool = False,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Listing[Tool]:
        """Every server's tools, fetched lazily, server by server (config order): a
        :class:`~mcp_sync.Listing`, whose ``.show()`` displays them all as one table in Jupyter.

        ``prefix=True`` names them ``<server>__<tool>`` (valid for every LLM
        API: ``^[a-zA-Z0-9_-]{1,64}$``, long or odd names shortened with a short
        hash, never two alike); :meth:`call_tool` takes those names at any time.
        A server whose listing fails is logged and skipped. The other options are
        those of :meth:`Client.tools`, for each server's listing.

        Example::

            for tool in group.tools(prefix=True):
                print(tool.name)        # e.g. "github__search_issues"
        """
        options = _call_options(
            cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout, headers
        )
        return Listing(self._walk("tool", prefix, options), "tools")

    def prompts(
        self,
        prefix: bool = False,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Listing[Prompt]:
        """Every server's prompts, lazily (``prefix=True`` and the options as for :meth:`tools`).

        Example: ``names = [p.name for p in group.prompts()]``
        """
        options = _call_options(
            cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout, headers
        )
        return Listing(self._walk("prompt", prefix, options), "prompts")

    def resources(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Listing[Resource]:
        """Every server's resources, lazily (the options as for :meth:`tools`).

        Example: ``uris = [r.uri for r in group.resources()]``
        """
        options = _call_options(
            cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout, headers
        )
        return Listing(self._walk("resource", False, options), "resources")

    def resource_templates(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Listing[ResourceTemplate]:
        """Every server's resource templates, lazily (the options as for :meth:`tools`).

        :meth:`read_resource` then asks first the servers whose listed templates fit an
        unlisted URI.

        Example: ``templates = {t.uri_template: group.server_of(t) for t in group.resource_templates()}``
        """
        options = _call_options(
            cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout, headers
        )
        return Listing(self._walk("resource_template", False, options), "resource_templates")

    def server_of(self, item: Tool | Prompt | Resource | ResourceTemplate | str) -> str:
        """The name of the server a tool, prompt or resource this group listed comes from.

        Takes the object itself or a name (a prefixed name, or a plain one only
        one server has).

        Example::

            for tool in group.tools():
                print(group.server_of(tool), tool.name)
        """
        with self._lock:
            origin = self._origins.get(id(item))
            if origin is not None and origin[0] is item:
                return origin[1]
        if isinstance(item, Resource):
            return self._route("resource", item.uri, None)[0]
        if isinstance(item, ResourceTemplate):
            return self._route("resource_template", item.uri_template, None)[0]
        kind = "prompt" if isinstance(item, Prompt) else "tool"
        return self._route(kind, item if isinstance(item, str) else item.name, None)[0]

    # -- routing --------------------------------------------------------------------------------

    def _matches(self, kind: str, name: str) -> set[tuple[str, str]]:
        with self._lock:
            found = {(server, name) for server, items in self._seen[kind].items() if name in items}
            names = self._names.get(kind)
            if names is not None and name in names.to_key:
                found.add(names.to_key[name])
        return found

    def _route(self, kind: str, name: str, server: str | None) -> tuple[str, str]:
        """(server, name on that server) for a plain or prefixed ``name``; a tool the group's
        include/exclude patterns leave out is not found."""
        found = self._find_route(kind, name, server)
        if kind == "tool":
            with self._lock:
                tool_filter = self._filters.get(found[0])
            if tool_filter is not None and not tool_filter.allows(found[1]):
                raise ToolNotFound(f"tool {found[1]!r} of server {found[0]!r} is left out by the group's filters",
                                   name=name)
        return found

    def _find_route(self, kind: str, name: str, server: str | None) -> tuple[str, str]:
        if server is not None:
            self._client(server, name)
            names = self._names.get(kind)
            with self._lock:
                key = names.to_key.get(name) if names is not None else None
            return (server, key[1]) if key is not None and key[0] == server else (server, name)
        found = self._matches(kind, name)
        if not found:  # not seen yet (or new since): list everything once more, prefixed names included
            for _ in self._walk(kind, kind != "resource", {}):
                pass
            found = self._matches(kind, name)
        if not found:
            failed = f" (not connected: {sorted(self.errors)})" if self.errors else ""
            raise ToolNotFound(f"no connected server has a {kind} named {name!r}{failed}", name=name)
        if len(found) > 1:
            servers = sorted(server for server, _ in found)
            raise AmbiguousToolError(
                f"{kind} {name!r} exists on servers {servers}; pass server=... or use prefixed names",
                name=name,
                servers=servers,
            )
        return next(iter(found))

    def find_tool(self, name: str, server: str | None = None) -> tuple[str, Tool]:
        """``(server, Tool)`` for a plain or prefixed tool name.

        Raises :class:`AmbiguousToolError` when several servers have it and
        ``server`` is not given, :class:`ToolNotFound` when none has it.

        Example::

            server, tool = group.find_tool("read_file")
            print(server, tool.input_schema)
        """
        server, plain = self._route("tool", name, server)
        with self._lock:
            tool = self._seen["tool"].get(server, {}).get(plain)
        if tool is None:
            tool = next((t for t in self._client(server, name).tools() if t.name == plain), None)
        if tool is None:
            raise ToolNotFound(f"server {server!r} has no tool named {plain!r}", name=name)
        return server, tool

    def call_tool(
        self,
        name: str | Tool,
        arguments: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
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
        """Call a tool on the server that has it (``name`` plain or prefixed, or a listed Tool).

        The options are those of :meth:`Client.call_tool` (``timeout``,
        ``progress``, ``cancel``, ``raise_on_error``, ``output_type``, ...). Raises
        :class:`AmbiguousToolError` / :class:`ToolNotFound` as :meth:`find_tool`.

        Example::

            group.call_tool("github__search_issues", {"q": "bug"})
            group.call_tool("search", {"q": "bug"}, server="github")
        """
        if isinstance(name, Tool):
            server = server or self.server_of(name)
            name = name.name
        server, plain = self._route("tool", name, server)
        return self._client(server, name).call_tool(
            plain, arguments, validate=validate, timeout=timeout, progress=progress, cancel=cancel, meta=meta,
            headers=headers, raise_on_error=raise_on_error, input_responses=input_responses,
            request_state=request_state,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
            output_type=output_type,
        )

    def call_tool_as_task(
        self,
        name: str | Tool,
        arguments: Mapping[str, Any] | None = None,
        *,
        server: str | None = None,
        ttl: int | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> Task:
        """Start a tool call as a task on the server that has the tool (routed like :meth:`call_tool`).

        The options are those of :meth:`Client.call_tool_as_task`; the :class:`Task`
        is that server's (``task.wait()``, ``group.clients[server].get_task(task)``).

        Example::

            task = group.call_tool_as_task("long_job", {"input": "data"}, ttl=60_000)
            result = task.wait(timeout=600)
        """
        if isinstance(name, Tool):
            server = server or self.server_of(name)
            name = name.name
        server, plain = self._route("tool", name, server)
        return self._client(server, name).call_tool_as_task(
            plain, arguments, ttl=ttl, timeout=timeout, cancel=cancel, meta=meta
        )

    def get_prompt(
        self,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        server: str | None = None,
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
        """Render a prompt on the server that has it (plain or prefixed name).

        The options are those of :meth:`Client.get_prompt`.

        Example: ``group.get_prompt("greet", {"name": "Ada"}).messages``
        """
        server, plain = self._route("prompt", name, server)
        return self._client(server, name).get_prompt(
            plain, arguments, timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers,
            input_responses=input_responses, request_state=request_state,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )

    def read_resource(
        self,
        uri: str,
        *,
        server: str | None = None,
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
        """Read a resource from the server that lists it.

        A URI no server lists (e.g. one made from a resource template) is asked
        of each server that has resources, in turn, until one has it; if none
        does, the last server's error is raised. The options are those of
        :meth:`Client.read_resource`.

        Example: ``text = group.read_resource("file:///notes.txt").text``
        """
        options: dict[str, Any] = {
            "timeout": timeout, "cancel": cancel, "progress": progress, "meta": meta, "cache": cache,
            "headers": headers, "input_responses": input_responses, "request_state": request_state,
            "reset_timeout_on_progress": reset_timeout_on_progress, "max_total_timeout": max_total_timeout,
        }  # fmt: skip
        if server is None:
            try:
                server, _ = self._route("resource", uri, None)
            except ToolNotFound:
                return self._read_from_any(uri, options)
        return self._client(server, uri).read_resource(uri, **options)

    def _read_from_any(self, uri: str, options: Mapping[str, Any]) -> ReadResourceResult:
        clients = self._open_clients()
        with self._lock:  # a copy under the lock; the matching (linear, but a server's size) outside it
            listed = {server: list(templates) for server, templates in self._seen["resource_template"].items()}
        fitting = {server for server, templates in listed.items()
                   if any(template_fits(template, uri) for template in templates)}
        last: MCPError | None = None
        for _, client in sorted(clients.items(), key=lambda entry: entry[0] not in fitting):  # fitting first
            try:
                return client.read_resource(uri, **options)
            except (CapabilityError, ServerError) as exc:
                last = exc
        if last is None or isinstance(last, CapabilityError):
            raise ToolNotFound(f"no connected server has the resource {uri!r}", name=uri) from last
        raise last

    # -- LLM formats ---------------------------------------------------------------------------

    def _llm_tools(self) -> list[Tool]:
        return list(self.tools(prefix=True))

    def _tool_to_approve(self, name: str) -> Tool:
        return self.find_tool(name)[1]  # as its server names it; server_of() knows it

    def __repr__(self) -> str:
        return f"<ClientGroup {self._state} servers={sorted(self._sources)} failed={sorted(self.errors)}>"


def _without_traceback(error: BaseException) -> BaseException:
    """``error`` (and the errors chained to it) without tracebacks, to be kept in ``errors``: a
    traceback holds frames, and a frame of ``connect`` holds the group, so a kept traceback made a
    reference cycle that kept a dropped group (and its servers) alive until a gc ran (#18.12)."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.__traceback__ = None
        pending.extend(chained for chained in (current.__cause__, current.__context__) if chained is not None)
    return error


def _collect_group(owned: list[Client], label: str) -> None:
    """The finalizer of a group nobody references any more: close what it left open."""
    if any(client.state is ClientState.OPEN for client in owned):
        warnings.warn(f"unclosed {label}: call close() or use 'with'", ResourceWarning, stacklevel=2)
    for client in owned:
        if client.state is ClientState.CLOSED:
            continue
        try:
            client.close()
        except Exception:  # a finalizer must not raise
            log.debug("mcp_sync: closing a collected group's client failed", exc_info=True)


def _unpickle_group(cls: type[ClientGroup], recipe: dict[str, Any]) -> ClientGroup:
    """A new group made like the pickled one (it connects on first use), whose servers are this
    process's shared clients (copies of them)."""
    group = cls(**recipe)
    group._worker_copies = True
    return group


#: the option names a per-server ``options=`` entry may use: the group's own keyword options
_CLIENT_OPTIONS = frozenset(inspect.signature(ClientGroup.__init__).parameters) - {
    "self", "servers", "strict", "options", "include", "exclude"}


def _call_options(
    cache: str | None,
    timeout: Timeout,
    cancel: CancellationToken | None,
    progress: ProgressCallback | bool | None,
    meta: Mapping[str, Any] | None,
    reset_timeout_on_progress: bool,
    max_total_timeout: float | None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One listing call's options as keywords for each member, checked at once (the walks are lazy)."""
    call_options(
        "listing", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta, headers=headers,
        reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
    )
    return {
        "cache": cache, "timeout": timeout, "cancel": cancel, "progress": progress, "meta": meta,
        "reset_timeout_on_progress": reset_timeout_on_progress, "max_total_timeout": max_total_timeout,
        "headers": headers,
    }


def _notify(on_notification: Callable[[str, str, dict[str, Any]], None], server: str, method: str,
            params: dict[str, Any]) -> None:
    """A group's ``on_notification``, as one client's: the server's name first."""
    on_notification(server, method, params)


def _tool_filter(name: str, source: Any, include: Any, exclude: Any) -> NameFilter | None:
    """The group's own tool filter of one server (``include``/``exclude`` given to the group), on
    the names its client shows; None when nothing is filtered. A config entry's ``"tools"`` section
    is its client's (``tool_filter``, ``tool_transforms``: see :func:`connect`), checked here."""
    tools = source.get("tools") if isinstance(source, Mapping) else None
    if tools is not None and not isinstance(tools, Mapping):
        raise ValueError(f"server {name!r}: 'tools' must be an object with 'include' and/or 'exclude'")
    excluded = _listed(exclude, name, "exclude")
    if include is None and not excluded:
        return None
    return NameFilter(None if include is None else _listed(include, name, "include"), excluded)


def _listed(patterns: Any, server: str, which: str) -> list[str]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        return [patterns]
    if not isinstance(patterns, (list, tuple)) or not all(isinstance(p, str) for p in patterns):
        raise TypeError(f"server {server!r}: {which} patterns must be a list of strings")
    return list(patterns)

