"""The listing methods of :class:`~mcp_sync.Client`: one page, or every page lazily.

A mixin of public methods only; its one hook is the client's session. Options
are spelled out (a misspelt one is a TypeError at once, not at iteration) and
checked before the iterator is returned. See :mod:`._protocol.paging`.
"""

from __future__ import annotations

from typing import Any, Mapping

from ._options import ProgressCallback, call_options
from ._progress import shows_progress
from ._protocol import paging
from ._protocol.session import Session
from ._sentinels import USE_CLIENT_DEFAULT
from ._values import Timeout
from .cancellation import CancellationToken
from .models import Listing, Page, Prompt, Resource, ResourceTemplate, Tool


class ListingMethods:
    """The listing half of :class:`~mcp_sync.Client` (thread-safe like the client)."""

    _session: Session

    @shows_progress()
    def list_tools(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[Tool]:
        """One page of tools.

        Example: ``page = client.list_tools(); page.items, page.next_cursor``
        """
        options = call_options(
            "list_tools", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return paging.page(self._session, "tools", cursor, options)

    @shows_progress(lazy=True)
    def tools(
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
    ) -> Listing[Tool]:
        """Every tool, fetching pages lazily: a :class:`Listing`, whose ``.show()`` fetches them all
        into one :class:`Page` that displays as a table in Jupyter.

        Example: ``for tool in client.tools(): print(tool.name)``; in a notebook ``client.tools().show()``
        """
        options = call_options(
            "tools", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return Listing(paging.walk(self._session, "tools", options), "tools")

    @shows_progress()
    def list_resources(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[Resource]:
        """One page of resources.

        Example: ``page = client.list_resources(); uris = [r.uri for r in page.items]; page.next_cursor``
        """
        options = call_options(
            "list_resources", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return paging.page(self._session, "resources", cursor, options)

    @shows_progress(lazy=True)
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
        """Every resource, lazily (a :class:`Listing`: ``.show()`` displays them all as a table).

        Example: ``uris = [r.uri for r in client.resources()]``
        """
        options = call_options(
            "resources", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return Listing(paging.walk(self._session, "resources", options), "resources")

    @shows_progress()
    def list_resource_templates(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[ResourceTemplate]:
        """One page of resource templates.

        Example: ``page = client.list_resource_templates(); [t.uri_template for t in page.items]``
        """
        options = call_options(
            "list_resource_templates", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return paging.page(self._session, "resource_templates", cursor, options)

    @shows_progress(lazy=True)
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
        """Every resource template, lazily (a :class:`Listing`: ``.show()`` displays them as a table).

        Example: ``for template in client.resource_templates(): print(template.uri_template)``
        """
        options = call_options(
            "resource_templates", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return Listing(paging.walk(self._session, "resource_templates", options), "resource templates")

    @shows_progress()
    def list_prompts(
        self,
        cursor: str | None = None,
        *,
        cache: str | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        cancel: CancellationToken | None = None,
        progress: ProgressCallback | bool | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
    ) -> Page[Prompt]:
        """One page of prompts.

        Example: ``page = client.list_prompts(cursor=None); names = [p.name for p in page.items]``
        """
        options = call_options(
            "list_prompts", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return paging.page(self._session, "prompts", cursor, options)

    @shows_progress(lazy=True)
    def prompts(
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
    ) -> Listing[Prompt]:
        """Every prompt, lazily (a :class:`Listing`: ``.show()`` displays them all as a table).

        Example: ``names = [p.name for p in client.prompts()]``
        """
        options = call_options(
            "prompts", cache=cache, timeout=timeout, cancel=cancel, progress=progress, meta=meta,
            headers=headers,
            reset_timeout_on_progress=reset_timeout_on_progress, max_total_timeout=max_total_timeout,
        )
        return Listing(paging.walk(self._session, "prompts", options), "prompts")
