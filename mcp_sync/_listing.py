"""Listing: one-page methods, the lazy all-pages iterators, and x-mcp-header tool checks.

Mixed into :class:`mcp_sync.Client`; every method here is part of its public
surface. The iterators fetch a page only when the previous one is consumed, stop
after ``max_pages`` or on a repeated cursor, and restart once from the first
page when a cached later page's cursor is refused (checklist G1, C7).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar

from ._cache import check_mode
from ._headers import HeaderField, header_fields, param_headers, tool_header_problem
from ._sentinels import USE_CLIENT_DEFAULT
from ._values import Timeout, check_timeout
from .exceptions import INVALID_PARAMS, PaginationLimitError, ProtocolError, ServerError
from .models import Page, Prompt, Resource, ResourceTemplate, Tool, _opt_dict, ttl_ms

if TYPE_CHECKING:
    from ._engine import ProgressCallback
    from .cancellation import CancellationToken

if TYPE_CHECKING:
    import threading

    from ._cache import ResultCache
    from ._engine import Engine
    from ._lifecycle import Negotiated
    from ._schemas import ToolSchemas

log = logging.getLogger("mcp_sync")

T = TypeVar("T")


class ListingMixin:
    """The listing half of :class:`~mcp_sync.Client` (thread-safe like the client)."""

    if TYPE_CHECKING:  # provided by Client
        max_pages: int
        _cache: ResultCache | None
        _engine: Engine | None
        _negotiated: Negotiated | None
        _tool_schemas: dict[str, tuple[HeaderField, ...]]
        _tool_schemas_lock: threading.Lock
        _schemas: ToolSchemas

        def _require(self, capability: str, method: str) -> None: ...

        def _send_cached(
            self, method: str, params: dict[str, Any] | None, cache: str | None, **kwargs: Any
        ) -> dict[str, Any]: ...

    def _page(
        self,
        method: str,
        key: str,
        model: Callable[[dict], T],
        capability: str,
        cursor: str | None,
        options: dict[str, Any],
    ) -> Page[T]:
        if cursor is not None and not isinstance(cursor, str):
            raise TypeError(f"{method}: cursor must be the string the server sent, not {type(cursor).__name__}")
        self._require(capability, method)
        params = {"cursor": cursor} if cursor is not None else None
        options = dict(options)
        raw = self._send_cached(method, params, options.pop("cache"), **options)
        items = raw.get(key)
        if not isinstance(items, list):
            raise ProtocolError(f"{method}: the result has no {key!r} list", method=method)
        parsed: list[T] = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise ProtocolError(f"{method}: {key}[{index}] is not an object", method=method)
            try:
                parsed.append(model(item))
            except ProtocolError as exc:
                raise ProtocolError(f"{method}: {key}[{index}]: {exc.message}", method=method) from None
        next_cursor = raw.get("nextCursor")
        return Page(
            items=parsed,
            next_cursor=next_cursor if isinstance(next_cursor, str) else None,  # G1: "" is a cursor
            ttl_ms=ttl_ms(raw.get("ttlMs")),
            cache_scope=raw.get("cacheScope") if isinstance(raw.get("cacheScope"), str) else None,
            meta=_opt_dict(raw.get("_meta")),
            raw=raw,
        )

    def _walk(self, fetch: Callable[[str | None], Page[T]], method: str) -> Iterator[T]:
        cursor: str | None = None
        seen: set[str] = set()
        yielded = skip = 0
        restarted = False
        for _ in range(self.max_pages):
            try:
                page = fetch(cursor)
            except ServerError as exc:
                # C7: a cursor from a cached page can go stale. Discard the cached pages and
                # walk again from the start, once, not yielding again the items already given.
                cache = self._cache
                if restarted or cursor is None or exc.code != INVALID_PARAMS or cache is None:
                    raise
                if not cache.invalidate(method):
                    raise
                log.info("mcp_sync: %s rejected a cursor (%s); re-fetching from the first page", method, exc)
                restarted, cursor, seen, skip = True, None, set(), yielded
                continue
            for item in page.items:
                if skip:
                    skip -= 1
                    continue
                yielded += 1
                yield item
            if page.next_cursor is None:
                return
            if page.next_cursor in seen:
                raise PaginationLimitError(f"{method}: the server repeated cursor {page.next_cursor!r}", method=method)
            seen.add(page.next_cursor)
            cursor = page.next_cursor
        raise PaginationLimitError(f"{method}: more than max_pages={self.max_pages} pages", method=method)

    def _mirrors_param_headers(self) -> bool:
        """x-mcp-header applies on modern connections over a transport that mirrors it (HTTP, H8)."""
        negotiated, engine = self._negotiated, self._engine
        if negotiated is None or negotiated.era != "modern" or engine is None:
            return False
        return bool(getattr(engine.transport, "mirrors_param_headers", False))

    def _check_tool_headers(self, page: Page[Tool]) -> Page[Tool]:
        """H9: drop tools whose x-mcp-header annotations are invalid (with a warning); remember the
        mirrored arguments of the others for :meth:`_param_headers`."""
        if not self._mirrors_param_headers():
            return page
        kept: list[Tool] = []
        with self._tool_schemas_lock:
            for tool in page.items:
                problem = tool_header_problem(tool.raw)
                if problem is None:
                    kept.append(tool)
                    self._tool_schemas[tool.name] = header_fields(tool.input_schema)
                else:
                    log.warning("mcp_sync: ignoring tool %r: %s", tool.name, problem)  # H9
                    self._tool_schemas.pop(tool.name, None)
        if len(kept) == len(page.items):
            return page
        return Page(
            items=kept,
            next_cursor=page.next_cursor,
            ttl_ms=page.ttl_ms,
            cache_scope=page.cache_scope,
            meta=page.meta,
            raw=page.raw,
        )

    def _param_headers(self, name: str, arguments: Mapping[str, Any]) -> dict[str, str] | None:
        """The ``Mcp-Param-*`` headers of a call (H8), from the schema seen when tools were listed."""
        if not self._mirrors_param_headers():
            return None
        with self._tool_schemas_lock:
            fields = self._tool_schemas.get(name)
        return (param_headers(fields, arguments) or None) if fields else None

    # -- the public listing methods: one page, or every page lazily --------------------
    # Options are spelled out (a misspelt one is a TypeError at once, not at iteration)
    # and checked before the iterator is returned.

    def _list_page(self, kind: str, cursor: str | None, options: dict[str, Any]) -> Page[Any]:
        method, key, model, capability = _LISTS[kind]
        page = self._page(method, key, model, capability, cursor, options)
        if kind != "tools":
            return page
        page = self._check_tool_headers(page)
        self._schemas.remember(page.items)  # for call_tool's schema checks
        return page

    def list_tools(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[Tool]:
        """One page of tools.

        Example: ``page = client.list_tools(); page.items, page.next_cursor``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._list_page("tools", cursor, options)

    def tools(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Iterator[Tool]:
        """Every tool, fetching pages lazily.

        Example: ``for tool in client.tools(): print(tool.name)``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._walk(lambda cursor: self._list_page("tools", cursor, options), _LISTS["tools"][0])

    def list_resources(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[Resource]:
        """One page of resources.

        Example: ``page = client.list_resources(); uris = [r.uri for r in page.items]; page.next_cursor``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._list_page("resources", cursor, options)

    def resources(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Iterator[Resource]:
        """Every resource, lazily.

        Example: ``uris = [r.uri for r in client.resources()]``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._walk(lambda cursor: self._list_page("resources", cursor, options), _LISTS["resources"][0])

    def list_resource_templates(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[ResourceTemplate]:
        """One page of resource templates.

        Example: ``page = client.list_resource_templates(); [t.uri_template for t in page.items]``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._list_page("resource_templates", cursor, options)

    def resource_templates(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Iterator[ResourceTemplate]:
        """Every resource template, lazily.

        Example: ``for template in client.resource_templates(): print(template.uri_template)``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._walk(
            lambda cursor: self._list_page("resource_templates", cursor, options), _LISTS["resource_templates"][0]
        )

    def list_prompts(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[Prompt]:
        """One page of prompts.

        Example: ``page = client.list_prompts(cursor=None); names = [p.name for p in page.items]``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._list_page("prompts", cursor, options)

    def prompts(
        self,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | None = None,
        meta: Mapping[str, Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Iterator[Prompt]:
        """Every prompt, lazily.

        Example: ``names = [p.name for p in client.prompts()]``
        """
        options = _call_options(cache, timeout, cancel, progress, meta, reset_timeout_on_progress, max_total_timeout)
        return self._walk(lambda cursor: self._list_page("prompts", cursor, options), _LISTS["prompts"][0])


def _call_options(
    cache: str | None,
    timeout: Timeout,
    cancel: CancellationToken | None,
    progress: ProgressCallback | None,
    meta: Mapping[str, Any] | None,
    reset_timeout_on_progress: bool,
    max_total_timeout: float | None,
) -> dict[str, Any]:
    """One listing call's options, checked at once (the iterators are lazy)."""
    check_mode(cache)
    return {
        "cache": cache,
        "timeout": check_timeout(timeout),
        "cancel": cancel,
        "progress": progress,
        "meta": meta,
        "reset_timeout_on_progress": reset_timeout_on_progress,
        "max_total_timeout": check_timeout(max_total_timeout, "max_total_timeout", allow_default=False),
    }


#: kind -> (method, result key, model constructor, server capability)
_LISTS: dict[str, tuple[str, str, Callable[[dict], Any], str]] = {
    "tools": ("tools/list", "tools", Tool.from_wire, "tools"),
    "resources": ("resources/list", "resources", Resource.from_wire, "resources"),
    "resource_templates": ("resources/templates/list", "resourceTemplates", ResourceTemplate.from_wire, "resources"),
    "prompts": ("prompts/list", "prompts", Prompt.from_wire, "prompts"),
}
