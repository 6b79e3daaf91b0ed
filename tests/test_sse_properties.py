"""Properties of the SSE framing and body decoding (issue #8.9, #8.10): whatever bytes a server
sends, in whatever pieces, the parser gives the same events, treats CR, LF and CRLF alike, reads
at most one event's worth before refusing an oversized one, and raises nothing but its own
BadBody errors (which the transports turn into ProtocolError)."""

from __future__ import annotations

import gzip
import itertools
import time
from typing import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_sync.transports._sse_stream import (
    MAX_RETRY_MS,
    BadBody,
    SseEvent,
    TooLarge,
    decoded_chunks,
    sse_events,
)

pytestmark = pytest.mark.timeout(120)

PROFILE = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Bytes that make SSE interesting: field names, separators, every line end, a BOM, NUL, UTF-8.
ALPHABET = [
    b"data",
    b"event",
    b"id",
    b"retry",
    b":",
    b" ",
    b"\r",
    b"\n",
    b"\r\n",
    b"x",
    b"1",
    b"\xef\xbb\xbf",
    b"\0",
    b"\xd9\xa1",
    b"\xff",
]
stream_bytes = st.lists(st.sampled_from(ALPHABET) | st.binary(max_size=8), max_size=60).map(b"".join)


def parse(chunks: list[bytes], limit: int = 1 << 20) -> list[SseEvent] | str:
    """The events, or the name of the (allowed) error that ended the parse."""
    try:
        return list(sse_events(chunks, limit))
    except TooLarge:
        return "TooLarge"


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(max(c, 0), len(data)) for c in cuts})
    pieces, last = [], 0
    for point in points:
        pieces.append(data[last:point])
        last = point
    return [*pieces, data[last:]]


@PROFILE
@given(stream_bytes, st.lists(st.integers(0, 600), max_size=20))
def test_any_split_gives_the_same_events(data: bytes, cuts: list[int]) -> None:
    """Chunk boundaries (empty chunks, a CRLF cut in two) never change the events."""
    assert parse(split(data, cuts)) == parse([data])


@PROFILE
@given(stream_bytes)
def test_byte_by_byte_equals_one_chunk(data: bytes) -> None:
    assert parse([data[i : i + 1] for i in range(len(data))]) == parse([data])


@PROFILE
@given(stream_bytes)
def test_a_cut_at_every_byte_position_gives_the_same_events(data: bytes) -> None:
    """Every two-chunk split, not a few random ones: a boundary that matters (CRLF then LF, issue
    #18.8) must not depend on the generator happening to cut there."""
    whole = parse([data])
    for i in range(len(data) + 1):
        assert parse([data[:i], data[i:]]) == whole, i


@PROFILE
@given(st.lists(st.sampled_from(ALPHABET) | st.binary(max_size=8), max_size=60))
def test_chunks_cut_at_token_boundaries_give_the_same_events(chunks: list[bytes]) -> None:
    """Chunks drawn as whole tokens (so a chunk often ends in CR, LF or CRLF exactly and the next
    starts with one) give the events of the joined stream."""
    assert parse(chunks) == parse([b"".join(chunks)])


#: A small universe searched exhaustively: a field line, a comment, every line end.
TOKENS = [b"data:x", b":c", b"\r", b"\n", b"\r\n"]


def test_every_short_stream_cut_anywhere_gives_the_same_events() -> None:
    """Every stream of up to 5 tokens, cut once at every byte and split byte by byte, parses as
    the whole: exhaustive, so a boundary case (CRLF ending a chunk then LF, #18.8) cannot hide
    behind what a random generator happens to draw."""
    for n in range(1, 6):
        for tokens in itertools.product(TOKENS, repeat=n):
            data = b"".join(tokens)
            whole = parse([data])
            assert parse([data[i : i + 1] for i in range(len(data))]) == whole, data
            for i in range(1, len(data)):
                assert parse([data[:i], data[i:]]) == whole, (data, i)


@pytest.mark.parametrize(
    "chunks",
    [
        [b"data: x\r\n", b"\n"],
        [b"data: x\r\n", b"", b"\n"],
        [b"data: x\r\n", b"\ndata: y\n\n"],
        [b"data: x\r", b"\n", b"\n"],
        [b"data: x\r", b"\n\n"],
        [b"data: x\r", b"\r"],
        [b"data: x\n\r", b"\ndata: y\r\n\r\n"],
    ],
)
def test_crlf_at_the_end_of_a_chunk_then_lf(chunks: list[bytes]) -> None:
    """Issue #18.8: a chunk ending in a complete CRLF made the parser skip the next chunk's LF
    as if it were that CRLF's, losing the blank line that dispatches the event."""
    joined = b"".join(chunks)
    assert parse(chunks) == parse([joined])
    assert next(e.data for e in sse_events(chunks, 100)) == "x"


line_text = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=12)
field_lines = st.lists(
    st.one_of(
        st.just(""),
        st.builds(
            lambda name, value: f"{name}:{value}", st.sampled_from(["data", "event", "id", "retry", ""]), line_text
        ),
        line_text,
    ),
    max_size=30,
)


@PROFILE
@given(field_lines, st.lists(st.sampled_from(["\r", "\n", "\r\n"]), min_size=1), st.lists(st.integers(0, 400)))
def test_cr_lf_and_crlf_are_equivalent(lines: list[str], ends: list[str], cuts: list[int]) -> None:
    """The same lines ended by any mix of CR, LF and CRLF, split anywhere, give the events of
    LF-only; in particular a stream ending in CR alone dispatches its last event."""
    reference = "".join(line + "\n" for line in lines).encode()
    pieces, previous = [], ""
    for i, line in enumerate(lines):
        end = ends[i % len(ends)]
        if previous == "\r" and not line and end == "\n":
            end = "\r"  # CR then an empty LF line would be one CRLF: not the same lines
        pieces.append(line + end)
        previous = end
    mixed = "".join(pieces).encode()
    expected = parse([reference])
    assert parse(split(mixed, cuts)) == expected
    for i in range(len(mixed) + 1):  # and cut at every byte: a CRLF ending a chunk, then LF (#18.8)
        assert parse([mixed[:i], mixed[i:]]) == expected, i


def test_cr_only_stream_keeps_its_last_event() -> None:
    assert [e.data for e in sse_events([b"data: a\r\rdata: b\r\r"], 100)] == ["a", "b"]
    assert [e.data for e in sse_events([b"data: a\r\r", b"data: b\r", b"\r"], 100)] == ["a", "b"]


@PROFILE
@given(line_text)
def test_retry_accepts_ascii_digits_only_and_is_clamped(value: str) -> None:
    """``retry`` counts only if made of ASCII digits (str.isdigit alone accepts e.g. Arabic-Indic
    digits), and never exceeds MAX_RETRY_MS, however many digits."""
    events = list(sse_events([f"retry:{value}\nid: 1\n\n".encode()], 1 << 16))
    assert len(events) == 1
    retry = events[0].retry_ms
    if value and all(ch in "0123456789" for ch in value):
        assert retry == min(int(value), MAX_RETRY_MS)
    else:
        assert retry is None


def test_absurd_retry_values() -> None:
    for value in ("1" + "0" * 20, "9" * 5000, "\u0661\u0662", "-5", "1e3", " 7"):
        events = list(sse_events([f"retry: {value}\nid: x\n\n".encode()], 1 << 16))
        assert events[0].retry_ms in (None, MAX_RETRY_MS, 7)


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 300), st.sampled_from([b"x", b"data: x\n", b"id:\r\n", b":"]))
def test_memory_is_bounded_by_the_limit(limit: int, chunk_size: int, unit: bytes) -> None:
    """An endless stream that never ends an event (one endless line, or lines without a blank
    one) is refused with TooLarge having read at most ``limit`` bytes plus a chunk or two: no
    event, line or buffer grows past the bound."""
    consumed = 0
    body = unit * (chunk_size // len(unit) + 1)

    def endless() -> Iterator[bytes]:
        nonlocal consumed
        while True:
            consumed += len(body)
            yield body

    with pytest.raises(TooLarge):
        for _ in sse_events(endless(), limit):
            pass
    assert consumed <= limit + 2 * len(body)


def test_blank_lines_and_comments_never_accumulate() -> None:
    """Keep-alives (comments, blank lines) for ever stay within any bound."""
    assert list(sse_events([b": ping\r\n\r", b"\n\n"] * 20000, 16)) == []


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200), st.sampled_from(["gzip", "deflate", "x-gzip", "br", "identity", "GZIP "]))
def test_decoding_raises_only_bad_body(data: bytes, encoding: str) -> None:
    """Garbage under any Content-Encoding ends in BadBody (corrupt, unsupported), never zlib.error."""

    class Raw:
        def __init__(self) -> None:
            self.pieces = [data[:50], data[50:]]

        def read1(self, n: int, decode_content: bool = False) -> bytes:
            return self.pieces.pop(0) if self.pieces else b""

    try:
        out = b"".join(decoded_chunks(Raw(), encoding))
    except BadBody:
        return
    if encoding.strip().lower() == "identity":
        assert out == data


def test_long_line_is_linear() -> None:
    """A 64 MiB line: refused at the bound in well under a second of parsing (was 22 s)."""
    chunks = [b"data: "] + [b"x" * 65536] * 1024 + [b"\n\n"]
    started = time.monotonic()
    with pytest.raises(TooLarge):
        list(sse_events(chunks, 64 << 20))
    assert time.monotonic() - started < 3.0
    started = time.monotonic()
    (event,) = list(sse_events(chunks, 65 << 20))
    assert len(event.data) == 64 << 20 and time.monotonic() - started < 5.0


def test_sse_gzip_bomb_stops_at_the_bound() -> None:
    """A gzip bomb on an SSE stream: decompression stops once one event passes the bound."""
    bomb = gzip.compress(b"data: " + b"0" * (256 << 20), compresslevel=1)
    assert len(bomb) < 2 << 20

    class Raw:
        def __init__(self) -> None:
            self.offset = 0

        def read1(self, n: int, decode_content: bool = False) -> bytes:
            piece = bomb[self.offset : self.offset + n]
            self.offset += len(piece)
            return piece

    raw = Raw()
    started = time.monotonic()
    with pytest.raises(TooLarge):
        list(sse_events(decoded_chunks(raw, "gzip"), 8 << 20))
    assert time.monotonic() - started < 3.0
    assert raw.offset < len(bomb)  # it stopped reading: the rest was never inflated
