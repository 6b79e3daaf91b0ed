"""Showing URLs without their secrets. Standard library only, so that anything (the
client's repr, a transport's messages) can import it without loading an HTTP stack."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_url"]


def redact_url(url: str) -> str:
    """``url`` safe to show: the password (or a lone user name, often a token) of its user
    info, every query value and the fragment replaced by ``***``.

    Used in every message, log line and repr that names a URL.

    Example::

        >>> redact_url("https://me:pw@example.com/mcp?key=abc&v=2#tok")
        'https://me:***@example.com/mcp?key=***&v=***#***'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<a URL that does not parse>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, has_password, _ = userinfo.partition(":")
        netloc = f"{user}:***@{hostport}" if has_password else f"***@{hostport}"
    query = "&".join(
        f"{name}=***" if has_value else "***"
        for name, has_value, _ in (item.partition("=") for item in parts.query.split("&") if item)
    )
    return urlunsplit((parts.scheme, netloc, parts.path, query, "***" if parts.fragment else ""))
