"""Reading HTTP bodies safely: incremental decompression with a size bound, and
an SSE event parser with a per-event bound.

Why not ``sseclient.SSEClient``: it drops events that carry no ``data``, but
2025-11-25 servers prime every stream with exactly such an event (an ``id``
and empty data) and announce ``retry:`` the same way, and both must be
remembered to resume a stream. Its buffering is also unbounded. The parser
here follows the WHATWG event-stream rules and yields every event block,
data or not.
"""

from __future__ import annotations

import zlib
from typing import Any, Iterable, Iterator

import attrs

CHUNK = 64 * 1024


class BadBody(Exception):
    """A body the client cannot read safely: too large, an encoding it did not offer, corrupt
    compressed data. Callers turn it into a ProtocolError for the request it belongs to."""


class TooLarge(BadBody):
    """A body or one SSE event exceeds the byte bound."""

    def __init__(self, size: int, limit: int, what: str) -> None:
        super().__init__(f"{what} of more than {limit} bytes (read {size}) exceeds max_message_bytes={limit}")
        self.size = size
        self.limit = limit


class UnsupportedEncoding(BadBody):
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
    try:
        for data in raw_chunks(raw):
            if decoder is None:
                decoder = zlib.decompressobj(zlib.MAX_WBITS if data[:1] == b"\x78" else -zlib.MAX_WBITS)
            while data:
                out = decoder.decompress(data, CHUNK)
                data = decoder.unconsumed_tail
                if out:
                    yield out
        if decoder is not None:
            tail = decoder.flush()  # every input was consumed above: only what zlib still holds
            if tail:
                yield tail
    except zlib.error as exc:
        raise BadBody(f"the {encoding} body is corrupt: {exc}") from exc


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

    Lines end with CRLF, LF or CR alone (a CR is a line end at once; an LF
    right after it, even in the next chunk, is then skipped), so the events
    do not depend on how the bytes were split. Work is linear in the input:
    each byte is searched once, and a long line is gathered in a bytearray.
    Comment lines (``:`` keep-alives) are ignored; every block that set any
    field is yielded, including data-less ones, so the caller sees ``id`` and
    ``retry`` (a priming event). An unfinished block at the end is dropped.
    """
    partial = bytearray()  # the start of a line not yet ended
    skip_lf = False  # the previous chunk ended with CR: a leading LF belongs to it
    first_line = True
    event_size = 0
    fields: dict[str, Any] = {}
    data_lines: list[str] = []
    for chunk in chunks:
        if not chunk:
            continue
        start = 1 if skip_lf and chunk[:1] == b"\n" else 0
        skip_lf = False
        for end, after in _line_ends(chunk, start):
            if partial:
                partial += chunk[start:end]
                line = bytes(partial)
                partial.clear()
            else:
                line = chunk[start:end]
            start = after
            # Only a CR that is the chunk's last byte may have its LF in the next chunk; a
            # CRLF ending the chunk is complete, and an LF after it starts a new (blank) line.
            skip_lf = end == len(chunk) - 1 and chunk[end] == 13  # CR
            if first_line:
                first_line = False
                line = line.removeprefix(b"\xef\xbb\xbf")  # a byte order mark opens the stream only
            event_size += len(line) + after - end
            if event_size > limit:
                raise TooLarge(event_size, limit, "SSE event")
            if line:
                _field(line.decode("utf-8", "replace"), fields, data_lines)
                continue
            if fields or data_lines:
                yield SseEvent(
                    event=fields.get("event") or "message",
                    data="\n".join(data_lines),
                    id=fields.get("id"),
                    retry_ms=fields.get("retry"),
                )
            fields, data_lines, event_size = {}, [], 0
        if event_size + len(partial) + len(chunk) - start > limit:
            raise TooLarge(event_size + len(partial) + len(chunk) - start, limit, "SSE event")
        partial += chunk[start:]


def _line_ends(chunk: bytes, start: int) -> Iterator[tuple[int, int]]:
    """``(end, after)`` of each line end (CRLF, LF or CR) in ``chunk`` from ``start``.

    Each search resumes past the last hit (bytes.find is a memchr), so a chunk
    is scanned once whatever its mix of CR and LF.
    """
    cr, lf = chunk.find(b"\r", start), chunk.find(b"\n", start)
    while cr != -1 or lf != -1:
        if lf == -1 or (cr != -1 and cr < lf):
            end, after = cr, (cr + 2 if lf == cr + 1 else cr + 1)
        else:
            end, after = lf, lf + 1
        yield end, after
        if cr != -1 and cr < after:
            cr = chunk.find(b"\r", after)
        if lf != -1 and lf < after:
            lf = chunk.find(b"\n", after)


#: The longest reconnection delay a server may ask for; anything longer is clamped to it.
MAX_RETRY_MS = 60_000


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
    elif name == "retry" and value and value.isascii() and value.isdigit():
        # ASCII digits only (str.isdigit alone accepts other scripts' digits); a huge
        # value is clamped before int() so that no digit count can overflow or stall.
        fields["retry"] = MAX_RETRY_MS if len(value) > 9 else min(int(value), MAX_RETRY_MS)
