"""The tools' mirrored arguments (x-mcp-header): which arguments of a listed tool
a modern HTTP call repeats as ``Mcp-Param-*`` headers, learnt when tools are listed."""

from __future__ import annotations

import logging
import threading
from typing import Any, Mapping

from .._headers import HeaderField, header_fields, param_headers, tool_header_problem
from ..models import Page, Tool

log = logging.getLogger("mcp_sync")


class ToolHeaders:
    """Each listed tool's mirrored arguments (x-mcp-header). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fields: dict[str, tuple[HeaderField, ...]] = {}

    def check(self, page: Page[Tool]) -> Page[Tool]:
        """H9: drop tools whose x-mcp-header annotations are invalid (with a warning); remember the
        mirrored arguments of the others for :meth:`headers`."""
        kept: list[Tool] = []
        with self._lock:
            for tool in page.items:
                problem = tool_header_problem(tool.raw)
                if problem is None:
                    kept.append(tool)
                    self._fields[tool.name] = header_fields(tool.input_schema)
                else:
                    log.warning("mcp_sync: ignoring tool %r: %s", tool.name, problem)  # H9
                    self._fields.pop(tool.name, None)
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

    def headers(self, name: str, arguments: Mapping[str, Any]) -> dict[str, str] | None:
        """The ``Mcp-Param-*`` headers of a call (H8), from the schema seen when tools were listed."""
        with self._lock:
            fields = self._fields.get(name)
        return (param_headers(fields, arguments) or None) if fields else None
