"""``USE_CLIENT_DEFAULT``: keeps "omitted" apart from ``None`` ("wait for ever")."""

from __future__ import annotations

import enum


class _Default(enum.Enum):
    """The type of :data:`USE_CLIENT_DEFAULT`: a per-call ``timeout`` left to the client's default.

    Example::

        def call(name, args, timeout=mcp_sync.USE_CLIENT_DEFAULT):   # None would mean "wait for ever"
            return client.call_tool(name, args, timeout=timeout)
    """

    USE_CLIENT_DEFAULT = "USE_CLIENT_DEFAULT"


#: Sentinel for "omitted": use the client's default (``None`` means wait for ever).
#: Example: ``client.call_tool("slow", {}, timeout=mcp_sync.USE_CLIENT_DEFAULT)`` (same as no ``timeout``)
USE_CLIENT_DEFAULT = _Default.USE_CLIENT_DEFAULT
