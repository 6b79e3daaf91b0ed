"""HTTP header mirroring for modern Streamable HTTP: value encoding and
``x-mcp-header`` tool annotations (checklist H7-H9).

Pure functions, no I/O, so the client (which validates tools and computes the
headers of a call) and the HTTP transport (which encodes ``Mcp-Name``) share
one definition.

Example::

    >>> schema = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}
    >>> param_headers(header_fields(schema), {"region": "us-west1"})
    {'Mcp-Param-Region': 'us-west1'}
    >>> encode_header_value("Hello, 世界")
    '=?base64?SGVsbG8sIOS4lueVjA==?='
"""

from __future__ import annotations

import base64
import re
import string
from typing import Any, Iterator, Mapping, Optional, Tuple

from .exceptions import HEADER_MISMATCH

__all__ = ["AUTHORIZATION", "FRAMING_HEADERS", "HEADER_MISMATCH", "HeaderField", "encode_header_value",
           "header_fields", "header_problem", "param_headers", "tool_header_problem"]

ANNOTATION = "x-mcp-header"
PARAM_PREFIX = "Mcp-Param-"
#: RFC 9110 section 5.6.2 ``tchar``: the only characters of a field-name token.
_TCHAR = frozenset("!#$%&'*+-.^_`|~" + string.ascii_letters + string.digits)
_HEADER_TYPES = ("string", "integer", "boolean")
_MAX_SAFE_INTEGER = 2**53 - 1
#: Schema keywords whose values are instance data, not subschemas: an
#: "x-mcp-header" key inside a ``default`` is data, not an annotation.
_DATA_KEYWORDS = frozenset(("default", "const", "enum", "examples"))
_SENTINEL_PREFIX, _SENTINEL_SUFFIX = "=?base64?", "?="
#: How a caller's credential header is spelled once checked: per-request headers that name it
#: replace the client's own credentials (see ``header_problem``'s callers), found by one lookup.
AUTHORIZATION = "Authorization"
#: Headers that frame the message or the connection. The transport sets them from the body it
#: sends; a caller's value (a second Content-Length, a Transfer-Encoding) would make the server
#: read the body as another request, whose answer the next request on the kept-alive
#: connection would then read as its own.
FRAMING_HEADERS = frozenset({
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
    "proxy-connection", "expect",
})
#: What a field value may hold (RFC 9110 5.5): visible ASCII, space, tab and obs-text (the rest of
#: Latin-1, which is how http.client encodes a value). A single character class: linear search.
_BAD_VALUE_CHAR = re.compile(r"[^\t\x20-\x7e\x80-\xff]")


def encode_header_value(value: str) -> str:
    """A header-safe form of ``value``.

    Plain printable ASCII without leading/trailing space is sent as is;
    anything else (non-ASCII, control characters, edge whitespace) and any
    plain value that looks like the sentinel itself becomes
    ``=?base64?{base64(UTF-8)}?=``.
    """
    plain = all(" " <= ch <= "~" for ch in value) and value == value.strip(" ")
    if plain and not (value.startswith(_SENTINEL_PREFIX) and value.endswith(_SENTINEL_SUFFIX)):
        return value
    return _SENTINEL_PREFIX + base64.b64encode(value.encode("utf-8")).decode("ascii") + _SENTINEL_SUFFIX


def header_problem(name: Any, value: Any) -> str | None:
    """Why ``name: value`` cannot go on the wire as a caller's header, or None when it can.

    Refused: a name that is not an RFC 9110 token (a tab, a control character,
    a parenthesis, anything outside ``!#$%&'*+-.^_`|~``, letters and digits: a
    lenient server may read such a line as the end of the headers), a header
    that frames the message (:data:`FRAMING_HEADERS`), and a value that starts
    with whitespace or holds a control character other than tab or a character
    beyond Latin-1 (which no HTTP/1.1 request can carry). Linear in the sizes; the message names the
    header, never its value (often a token).

    Example::

        >>> header_problem("X\tA", "x")
        'is not an HTTP token (RFC 9110: letters, digits and !#$%&\'*+-.^_`|~ only)'
        >>> header_problem("X-Team", "a") is None
        True
    """
    if not isinstance(name, str) or not isinstance(value, str):
        return "must map a string to a string"
    if not name or not set(name) <= _TCHAR:
        return "is not an HTTP token (RFC 9110: letters, digits and !#$%&'*+-.^_`|~ only)"
    if name.lower() in FRAMING_HEADERS:
        return "frames the HTTP message: the transport sets it, a caller may not"
    if value[:1] in (" ", "\t"):  # not part of a field value (RFC 9110 5.5); requests refuses it late
        return "has a value starting with whitespace"
    bad = _BAD_VALUE_CHAR.search(value)
    if bad is None:
        return None
    if bad.group() in "\r\n\0":
        what = "a CR, LF or NUL character (a header is one line)"
    elif bad.group() > "\xff":
        what = "a character beyond Latin-1, which HTTP/1.1 cannot carry"
    else:
        what = "a control character"
    return f"has a value holding {what}, at index {bad.start()}"


def _annotations(
    schema: Any, path: tuple[str, ...], reachable: bool
) -> Iterator[tuple[tuple[str, ...], Any, Any, bool]]:
    """Yield ``(path, header_name, property_schema, reachable)`` for every annotation under ``schema``.

    ``reachable`` is True only along a chain of ``properties`` keys from the
    root: ``items``, ``anyOf``, ``$ref``, ``$defs``... all break it.
    """
    if isinstance(schema, list):
        for item in schema:
            yield from _annotations(item, path, False)
        return
    if not isinstance(schema, dict):
        return
    if ANNOTATION in schema:
        yield path, schema[ANNOTATION], schema, reachable and bool(path)
    for key, value in schema.items():
        if key == ANNOTATION or key in _DATA_KEYWORDS:
            continue
        if key == "properties" and isinstance(value, dict):
            for name, sub in value.items():
                yield from _annotations(sub, (*path, str(name)), reachable)
        else:
            yield from _annotations(value, (*path, key), False)


def _property_type(prop: dict[str, Any]) -> str | None:
    """The one header-able type of ``prop``, allowing a nullable form like ``["string", "null"]``."""
    declared = prop.get("type")
    types = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    concrete = [t for t in types if t != "null"]
    if len(concrete) == 1 and concrete[0] in _HEADER_TYPES:
        return str(concrete[0])
    return None


def tool_header_problem(tool_raw: Mapping[str, Any]) -> str | None:
    """Why ``tool_raw``'s ``x-mcp-header`` annotations are invalid, or None if they are fine.

    Invalid: an empty name, a name that is not an RFC 9110 token (this also
    excludes CR, LF and other controls), a duplicate (case-insensitive), an
    annotation on a property whose type is not string/integer/boolean (so not
    ``number``), or one not reachable from the root through ``properties`` alone.

    Example::

        >>> schema = {"properties": {"n": {"type": "number", "x-mcp-header": "N"}}}
        >>> tool_header_problem({"name": "t", "inputSchema": schema})
        "x-mcp-header 'N' on n: the property type must be string, integer or boolean"
    """
    schema = tool_raw.get("inputSchema")
    seen: dict[str, str] = {}
    for path, name, prop, reachable in _annotations(schema, (), True):
        where = "/".join(path) or "the schema root"
        if not isinstance(name, str) or not name:
            return f"x-mcp-header on {where} is empty or not a string"
        if not set(name) <= _TCHAR:
            return f"x-mcp-header {name!r} on {where} is not an HTTP token"
        if not reachable:
            return f"x-mcp-header {name!r} on {where} is not reachable through 'properties' alone"
        if _property_type(prop) is None:
            return f"x-mcp-header {name!r} on {where}: the property type must be string, integer or boolean"
        if name.lower() in seen:
            return f"x-mcp-header {name!r} on {where} duplicates the one on {seen[name.lower()]} (case-insensitively)"
        seen[name.lower()] = where
    return None


#: One mirrored argument: its path through ``properties``, its header name, its declared type.
HeaderField = Tuple[Tuple[str, ...], str, Optional[str]]


def header_fields(input_schema: Mapping[str, Any]) -> tuple[HeaderField, ...]:
    """The arguments of a tool that :func:`param_headers` mirrors, worked out once per listing.

    Unreachable or malformed annotations are left out (such tools are dropped at
    listing time, see :func:`tool_header_problem`).
    """
    return tuple(
        (path, name, _property_type(prop))
        for path, name, prop, reachable in _annotations(dict(input_schema), (), True)
        if reachable and isinstance(name, str) and name and set(name) <= _TCHAR
    )


def param_headers(fields: tuple[HeaderField, ...], arguments: Mapping[str, Any]) -> dict[str, str]:
    """The ``Mcp-Param-{Name}`` headers for a ``tools/call``, values encoded by :func:`encode_header_value`.

    ``fields`` are the tool's :func:`header_fields`. A value that is absent or
    null omits its header; strings go as is, integers in decimal, booleans as
    ``true``/``false``. Raises ValueError for an integer outside +-(2**53 - 1).
    """
    headers: dict[str, str] = {}
    for path, name, declared in fields:
        value: Any = arguments
        for key in path:
            value = value.get(key) if isinstance(value, Mapping) else None
        if value is None:
            continue
        text = _header_text(value, declared)
        if text is not None:
            headers[PARAM_PREFIX + name] = encode_header_value(text)
    return headers


def _header_text(value: Any, declared: str | None) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and declared == "integer":
        value = int(value)
    if isinstance(value, int):
        if abs(value) > _MAX_SAFE_INTEGER:
            raise ValueError(f"integer {value} is outside the range an x-mcp-header may carry (+-(2**53 - 1))")
        return str(value)
    if isinstance(value, str):
        return value
    return None
