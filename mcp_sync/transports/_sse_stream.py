"""Reading HTTP bodies safely: incremental decompression with a size bound, and
an SSE event parser with a per-event bound.

Why not ``sseclient.SSEClient``: it drops events that carry no ``data``, but
2025-11-25 servers prime every stream with exactly such an event (an ``id``
and empty data) and announce ``retry:`` the same way (LG6), and both must be
remembered to resume a stream. Its buffering is also unbounded. The parser
here follows the WHATWG event-stream rules and yields every event block,
data or not.
"""

from __future__ import annotations

import zlib
from typing import Any, Iterable, Iterator

import attrs

CHUNK = 64 * 1024


class TooLarge(Exception):
    """A body or one SSE event exceeds the byte bound."""

    def __init__(self, size: int, limit: int, what: str) -> None:
        super().__init__(f"{what} of more than {limit} bytes (read {size}) exceeds max_message_bytes={limit}")
        self.size = size
        self.limit = limit


class UnsupportedEncoding(Exception):
    """The server used a Content-Encoding the client did not offer."""


def raw_chunks(raw: Any) -> Iterator[bytes]:
    """Bytes as they arrive from a urllib3 response, still compressed.

    ``read1`` returns whatever one socket read gives (so an SSE event is seen
    as soon as it arrives, chunked or not); older urllib3 only has ``stream``.
    """
    read1 = getattr(raw, "read1", None)
    if read1 is None:
        yield from raw.stream(CHUNK, decode_content=False)
        return
    while True:
        data = read1(CHUNK, decode_content=False)
        if not data:
            return
        yield data


def decoded_chunks(raw: Any, content_encoding: str | None) -> Iterator[bytes]:
    """``raw_chunks`` decompressed incrementally; no single chunk exceeds CHUNK bytes.

    Bounding each decompress call (``max_length``) is what stops a tiny gzip
    bomb from expanding in memory before the caller can count it.
    """
    encoding = (content_encoding or "identity").strip().lower()
    if encoding in ("", "identity"):
        yield from raw_chunks(raw)
        return
    if encoding in ("gzip", "x-gzip"):
        decoder: Any = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        decoder = None  # zlib-wrapped or raw deflate: decided on the first bytes
    else:
        raise UnsupportedEncoding(f"unsupported Content-Encoding {content_encoding!r}")
    for data in raw_chunks(raw):
        if decoder is None:
            decoder = zlib.decompressobj(zlib.MAX_WBITS if data[:1] == b"\x78" else -zlib.MAX_WBITS)
        while data:
            out = decoder.decompress(data, CHUNK)
            data = decoder.unconsumed_tail
            if out:
                yield out
    if decoder is not None:
        tail = decoder.flush()
        if tail:
            yield tail


def read_bounded(chunks: Iterable[bytes], limit: int, what: str = "response body") -> bytes:
    """Join ``chunks``, raising TooLarge as soon as the total passes ``limit``."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise TooLarge(size, limit, what)
        parts.append(chunk)
    return b"".join(parts)


@attrs.define
class SseEvent:
    """One dispatched event block. ``data`` may be empty (a priming event)."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry_ms: int | None = None


def sse_events(chunks: Iterable[bytes], limit: int) -> Iterator[SseEvent]:
    """Parse an event stream; raises TooLarge if one event (or one line) passes ``limit`` bytes.

    Comment lines (``:`` keep-alives, H12) are ignored; every block that set
    any field is yielded, including data-less ones, so the caller sees ``id``
    and ``retry`` (LG6).
    """
    buffer = b""
    event_size = 0
    fields: dict[str, Any] = {}
    data_lines: list[str] = []
    for chunk in chunks:
        buffer += chunk
        start = 0
        while True:
            cr, lf = buffer.find(b"\r", start), buffer.find(b"\n", start)
            if cr == -1 and lf == -1:
                break
            end = min(i for i in (cr, lf) if i != -1)
            if end == cr and end == len(buffer) - 1:
                break  # a CR at the chunk end may be the first half of CRLF
            line = buffer[start:end]
            start = end + (2 if end == cr and buffer[end + 1 : end + 2] == b"\n" else 1)
            event_size += len(line)
            if event_size > limit:
                raise TooLarge(event_size, limit, "SSE event")
            if not line:
                if fields or data_lines:
                    yield SseEvent(
                        event=fields.get("event") or "message",
                        data="\n".join(data_lines),
                        id=fields.get("id"),
                        retry_ms=fields.get("retry"),
                    )
                fields, data_lines, event_size = {}, [], 0
                continue
            _field(line.decode("utf-8", "replace"), fields, data_lines)
        buffer = buffer[start:]
        if event_size + len(buffer) > limit:
            raise TooLarge(event_size + len(buffer), limit, "SSE event")


def _field(line: str, fields: dict[str, Any], data_lines: list[str]) -> None:
    if line.startswith(":"):
        return
    name, _, value = line.partition(":")
    if value.startswith(" "):
        value = value[1:]
    if name == "data":
        data_lines.append(value)
    elif name == "event":
        fields["event"] = value
    elif name == "id" and "\0" not in value:
        fields["id"] = value
    elif name == "retry" and value.isdigit():
        fields["retry"] = int(value)
