"""Listing: one-page methods, the lazy all-pages iterators, and x-mcp-header tool checks.

Mixed into :class:`mcp_sync.Client`; every method here is part of its public
surface. The iterators fetch a page only when the previous one is consumed
(G1), stop after ``max_pages`` or on a repeated cursor, and restart once from
the first page when a cached later page's cursor is refused (C7).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, TypeVar

from ._headers import param_headers, tool_header_problem
from .exceptions import INVALID_PARAMS, PaginationLimitError, ProtocolError, ServerError
from .models import Page, Prompt, Resource, ResourceTemplate, Tool

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
        _tool_schemas: dict[str, dict[str, Any]]
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
        **kwargs: Any,
    ) -> Page[T]:
        self._require(capability, method)
        params = {"cursor": cursor} if cursor is not None else None
        raw = self._send_cached(method, params, kwargs.pop("cache", None), **kwargs)
        items = raw.get(key)
        if not isinstance(items, list):
            raise ProtocolError(f"{method}: the result has no {key!r} list", method=method)
        next_cursor = raw.get("nextCursor")
        return Page(
            items=[model(item) for item in items if isinstance(item, dict)],
            next_cursor=next_cursor if isinstance(next_cursor, str) else None,  # G1: "" is a cursor
            ttl_ms=raw.get("ttlMs") if isinstance(raw.get("ttlMs"), int) else None,
            cache_scope=raw.get("cacheScope") if isinstance(raw.get("cacheScope"), str) else None,
            meta=raw.get("_meta"),
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

    def list_tools(self, cursor: str | None = None, **kwargs: Any) -> Page[Tool]:
        """One page of tools. Example: ``page = client.list_tools(); page.items, page.next_cursor``."""
        page = self._check_tool_headers(self._page("tools/list", "tools", Tool.from_wire, "tools", cursor, **kwargs))
        self._schemas.remember(page.items)  # for call_tool's schema checks
        return page

    def _mirrors_param_headers(self) -> bool:
        """x-mcp-header applies on modern connections over a transport that mirrors it (HTTP, H8)."""
        negotiated, engine = self._negotiated, self._engine
        if negotiated is None or negotiated.era != "modern" or engine is None:
            return False
        return bool(getattr(engine.transport, "mirrors_param_headers", False))

    def _check_tool_headers(self, page: Page[Tool]) -> Page[Tool]:
        """H9: drop tools whose x-mcp-header annotations are invalid (with a warning); remember the
        schemas of the others for :meth:`_param_headers`."""
        if not self._mirrors_param_headers():
            return page
        kept: list[Tool] = []
        with self._tool_schemas_lock:
            for tool in page.items:
                problem = tool_header_problem(tool.raw)
                if problem is None:
                    kept.append(tool)
                    self._tool_schemas[tool.name] = tool.input_schema
                else:
                    log.warning("mcp_sync: ignoring tool %r: %s (H9)", tool.name, problem)
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
            schema = self._tool_schemas.get(name)
        return (param_headers(schema, arguments) or None) if schema else None

    def tools(self, **kwargs: Any) -> Iterator[Tool]:
        """Every tool, fetching pages lazily. Example: ``for tool in client.tools(): print(tool.name)``."""
        return self._walk(lambda c: self.list_tools(c, **kwargs), "tools/list")

    def list_resources(self, cursor: str | None = None, **kwargs: Any) -> Page[Resource]:
        """One page of resources.

        Example: ``page = client.list_resources(); uris = [r.uri for r in page.items]; page.next_cursor``
        """
        return self._page("resources/list", "resources", Resource.from_wire, "resources", cursor, **kwargs)

    def resources(self, **kwargs: Any) -> Iterator[Resource]:
        """Every resource, lazily. Example: ``uris = [r.uri for r in client.resources()]``."""
        return self._walk(lambda c: self.list_resources(c, **kwargs), "resources/list")

    def list_resource_templates(self, cursor: str | None = None, **kwargs: Any) -> Page[ResourceTemplate]:
        """One page of resource templates.

        Example: ``page = client.list_resource_templates(); [t.uri_template for t in page.items]``
        """
        return self._page(
            "resources/templates/list", "resourceTemplates", ResourceTemplate.from_wire, "resources", cursor, **kwargs
        )

    def resource_templates(self, **kwargs: Any) -> Iterator[ResourceTemplate]:
        """Every resource template, lazily.

        Example: ``for template in client.resource_templates(): print(template.uri_template)``
        """
        return self._walk(lambda c: self.list_resource_templates(c, **kwargs), "resources/templates/list")

    def list_prompts(self, cursor: str | None = None, **kwargs: Any) -> Page[Prompt]:
        """One page of prompts.

        Example: ``page = client.list_prompts(cursor=None); names = [p.name for p in page.items]``
        """
        return self._page("prompts/list", "prompts", Prompt.from_wire, "prompts", cursor, **kwargs)

    def prompts(self, **kwargs: Any) -> Iterator[Prompt]:
        """Every prompt, lazily. Example: ``names = [p.name for p in client.prompts()]``."""
        return self._walk(lambda c: self.list_prompts(c, **kwargs), "prompts/list")
