"""What a piece of binary content is, read from its bytes: image dimensions and a readable size.

A server's bytes are untrusted: :func:`image_size` reads only the header of a PNG, GIF, WebP or
JPEG (standard library only, no image library), walks a JPEG's segments forward only (each step
moves on by at least two bytes: linear time), and answers None for anything it cannot read;
it never raises.
"""

from __future__ import annotations

_PNG = b"\x89PNG\r\n\x1a\n"
#: the JPEG start-of-frame markers (they carry the dimensions): C0-CF but DHT C4, JPG C8, DAC CC
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
#: markers without a length: TEM, RST0-7, SOI, EOI
_STANDALONE = frozenset({0x01, *range(0xD0, 0xDA)})


def _be16(data: bytes, at: int) -> int:
    return (data[at] << 8) | data[at + 1]


def _le16(data: bytes, at: int) -> int:
    return data[at] | (data[at + 1] << 8)


def _le24(data: bytes, at: int) -> int:
    return data[at] | (data[at + 1] << 8) | (data[at + 2] << 16)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    at, end = 2, len(data)
    while at + 1 < end:
        if data[at] != 0xFF:
            return None  # not at a marker: not a JPEG we can read
        marker = data[at + 1]
        if marker == 0xFF:  # a fill byte before the marker
            at += 1
            continue
        if marker in _STANDALONE:
            at += 2
            continue
        if marker == 0xDA or at + 4 > end:  # the image data starts before any frame header
            return None
        length = _be16(data, at + 2)
        if length < 2:
            return None
        if marker in _SOF:
            if at + 9 > end:
                return None
            return _be16(data, at + 7), _be16(data, at + 5)
        at += 2 + length
    return None


def _webp_size(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 " and len(data) >= 30 and data[23:26] == b"\x9d\x01\x2a":
        return _le16(data, 26) & 0x3FFF, _le16(data, 28) & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25 and data[20] == 0x2F:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X" and len(data) >= 30:
        return _le24(data, 24) + 1, _le24(data, 27) + 1
    return None


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` in pixels of a PNG, GIF, WebP or JPEG image, read from its header;
    None for other bytes, a truncated header or a size of zero. Never raises; linear time.

    Example: ``image_size(open("chart.png", "rb").read()) == (640, 480)``
    """
    size: tuple[int, int] | None = None
    if data.startswith(_PNG):
        if len(data) >= 24 and data[12:16] == b"IHDR":
            size = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    elif data[:6] in (b"GIF87a", b"GIF89a"):
        if len(data) >= 10:
            size = _le16(data, 6), _le16(data, 8)
    elif data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        size = _webp_size(data)
    elif data[:3] == b"\xff\xd8\xff":
        size = _jpeg_size(data)
    if size is None or not size[0] or not size[1]:
        return None
    return size


def human_size(count: int) -> str:
    """A byte count as people read it: bytes up to 1023, then KiB, MiB, GiB, TiB (one decimal).

    Example: ``human_size(1536) == "1.5 KiB"``; ``human_size(1) == "1 byte"``
    """
    if count < 1024:
        return f"{count} byte{'' if count == 1 else 's'}"
    value = float(count)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"
