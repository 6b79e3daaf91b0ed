"""``mcp_sync.connect(target)``: one call from a URL, a command or a config entry."""

from __future__ import annotations

import shlex
from typing import Any, Mapping, Sequence, Union

from ._client import Client

Target = Union[str, Sequence[str], Mapping[str, Any]]


def connect(target: Target, **options: Any) -> Client:
    """Open a client for ``target`` and connect it.

    ``target`` is an ``http(s)://`` URL (Streamable HTTP), a command line as a
    string or list (stdio), or a dict shaped like one entry of an
    ``"mcpServers"`` config: ``{"command": ..., "args": [...], "env": {...}}``
    or ``{"url": ..., "headers": {...}, "type": "sse"}``.

    Example::

        with mcp_sync.connect("python server.py") as client:
            print([t.name for t in client.tools()])
    """
    client = _client_for(target, **options)
    try:
        client.connect()
    except BaseException:
        client.close()
        raise
    return client


def _client_for(target: Target, **options: Any) -> Client:
    if isinstance(target, str):
        if target.startswith(("http://", "https://")):
            return Client.http(target, **options)
        target = shlex.split(target)
    if isinstance(target, Mapping):
        entry = dict(target)
        if "url" in entry:
            kind = str(entry.get("type", entry.get("transport", "http"))).lower()
            factory = Client.sse if kind == "sse" else Client.http
            return factory(entry["url"], headers=entry.get("headers"), **options)
        if "command" not in entry:
            raise ValueError("a server config entry needs 'command' or 'url'")
        return Client.stdio(
            entry["command"], list(entry.get("args") or []), env=entry.get("env"), cwd=entry.get("cwd"), **options
        )
    parts = list(target)
    if not parts:
        raise ValueError("empty command")
    return Client.stdio(parts[0], parts[1:], **options)
