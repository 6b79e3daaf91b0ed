"""Lists: one page, every page lazily, and the tools' mirrored header fields.

:func:`page` fetches one page of a list (through the result cache) and turns
it into a :class:`~mcp_sync.Page`; :func:`walk` yields every item, fetching
a page only when the previous one is consumed, stopping after ``max_pages``
or on a repeated cursor, and restarting once from the first page when a
cached later page's cursor is refused (G1, C7). Listed tools go through
:class:`~.tool_headers.ToolHeaders` (x-mcp-header, H8/H9) and the session's schema checks.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .._options import CallOptions
from ..exceptions import INVALID_PARAMS, PaginationLimitError, ProtocolError, ServerError
from ..models import Page, Prompt, Resource, ResourceTemplate, Tool, _opt_dict, ttl_ms

if TYPE_CHECKING:
    from .session import Session

log = logging.getLogger("mcp_sync")

#: kind -> (method, result key, model constructor, server capability)
LISTS: dict[str, tuple[str, str, Callable[[dict], Any], str]] = {
    "tools": ("tools/list", "tools", Tool.from_wire, "tools"),
    "resources": ("resources/list", "resources", Resource.from_wire, "resources"),
    "resource_templates": ("resources/templates/list", "resourceTemplates", ResourceTemplate.from_wire, "resources"),
    "prompts": ("prompts/list", "prompts", Prompt.from_wire, "prompts"),
}


def page(session: Session, kind: str, cursor: str | None, options: CallOptions) -> Page[Any]:
    """One page of the list ``kind`` (``"tools"``, ``"resources"``, ``"resource_templates"``, ``"prompts"``)."""
    method, key, model, capability = LISTS[kind]
    if cursor is not None and not isinstance(cursor, str):
        raise TypeError(f"{method}: cursor must be the string the server sent, not {type(cursor).__name__}")
    session.require(capability, method, options)
    raw = session.send_cached(method, {"cursor": cursor} if cursor is not None else None, options)
    items = raw.get(key)
    if not isinstance(items, list):
        raise ProtocolError(f"{method}: the result has no {key!r} list", method=method)
    parsed: list[Any] = []
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ProtocolError(f"{method}: {key}[{index}] is not an object", method=method)
        try:
            parsed.append(model(item))
        except ProtocolError as exc:
            raise ProtocolError(f"{method}: {key}[{index}]: {exc.message}", method=method) from None
    next_cursor = raw.get("nextCursor")
    result: Page[Any] = Page(
        items=parsed,
        next_cursor=next_cursor if isinstance(next_cursor, str) else None,  # G1: "" is a cursor
        ttl_ms=ttl_ms(raw.get("ttlMs")),
        cache_scope=raw.get("cacheScope") if isinstance(raw.get("cacheScope"), str) else None,
        meta=_opt_dict(raw.get("_meta")),
        raw=raw,
    )
    if kind == "tools":
        if session.mirrors_param_headers():
            result = session.tool_headers.check(result)
        session.schemas.remember(result.items)  # for call_tool's schema checks
    return result


def walk(session: Session, kind: str, options: CallOptions) -> Iterator[Any]:
    """Every item of the list ``kind``, fetching pages lazily."""
    method = LISTS[kind][0]
    cursor: str | None = None
    seen: set[str] = set()
    yielded = skip = 0
    restarted = False
    for _ in range(session.max_pages):
        try:
            fetched = page(session, kind, cursor, options)
        except ServerError as exc:
            # C7: a cursor from a cached page can go stale. Discard the cached pages and
            # walk again from the start, once, not yielding again the items already given.
            cache = session.cache
            if restarted or cursor is None or exc.code != INVALID_PARAMS or cache is None:
                raise
            if not cache.invalidate(method):
                raise
            log.info("mcp_sync: %s rejected a cursor (%s); re-fetching from the first page", method, exc)
            restarted, cursor, seen, skip = True, None, set(), yielded
            continue
        for item in fetched.items:
            if skip:
                skip -= 1
                continue
            yielded += 1
            yield item
        if fetched.next_cursor is None:
            return
        if fetched.next_cursor in seen:
            raise PaginationLimitError(f"{method}: the server repeated cursor {fetched.next_cursor!r}", method=method)
        seen.add(fetched.next_cursor)
        cursor = fetched.next_cursor
    raise PaginationLimitError(f"{method}: more than max_pages={session.max_pages} pages", method=method)
