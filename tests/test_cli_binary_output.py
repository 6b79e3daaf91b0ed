"""``mcp-sync call --save-dir``: what it prints for each saved image, audio or blob (#30.4).

Each line says where the content went and what it is: its MIME type, its size in bytes (human
readable) and, for a PNG, GIF, WebP or JPEG, its pixel dimensions read from the header by a
small linear-time parser that never raises (hypothesis: any bytes give dimensions or None).
``--json`` output is unchanged: the wire shape, nothing saved.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import time
from pathlib import Path

import pytest
from clikit import run_cli
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_sync._media import human_size, image_size

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(120)

SAVED = re.compile(r"(?:^|: )\[(?P<what>.*) \((?P<facts>[^()]*)\) saved to (?P<path>\S+)\]")


def saved_lines(stdout: str) -> list[re.Match[str]]:
    return [match for line in stdout.splitlines() if (match := SAVED.search(line))]


def png_dimensions(data: bytes) -> tuple[int, int]:
    """The IHDR's width and height, read here independently of mcp_sync's parser."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# -- against real servers ------------------------------------------------------------------------


def test_an_image_says_its_type_dimensions_size_and_file(everything_js: Path, tmp_path: Path) -> None:
    result = run_cli("call", f"node {everything_js} stdio", "get-tiny-image", "--save-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    [line] = saved_lines(result.stdout)
    path = Path(line["path"])
    data = path.read_bytes()
    width, height = png_dimensions(data)
    assert line["what"] == "image image/png" and path.parent == tmp_path and path.suffix == ".png"
    assert line["facts"] == f"{width}x{height} px, {human_size(len(data))}"
    assert result.stdout.count("saved to") == 1  # the text blocks around it stay text


def test_a_blob_resource_says_its_type_and_size(everything_js: Path, tmp_path: Path) -> None:
    result = run_cli("read", f"node {everything_js} stdio", "demo://resource/dynamic/blob/1",
                     "--save-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    [line] = saved_lines(result.stdout)
    size = Path(line["path"]).stat().st_size
    assert line["what"] == "demo://resource/dynamic/blob/1"
    assert line["facts"] == f"text/plain, {size} bytes"  # not an image: no dimensions


def test_a_prompts_image_and_pdf(tmp_path: Path) -> None:
    """The Python SDK's server: a 1x1 PNG and an embedded PDF in one prompt."""
    result = run_cli("prompt", f"{PY} {SDK_SERVER} stdio", "review", "code=x", "--save-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    image, pdf = saved_lines(result.stdout)
    assert (image["what"], image["facts"]) == ("image image/png", f"1x1 px, {Path(image['path']).stat().st_size} bytes")
    assert (pdf["what"], pdf["facts"]) == ("file:///review/spec.pdf", "application/pdf, 15 bytes")
    assert Path(pdf["path"]).read_bytes().startswith(b"%PDF")


def test_json_output_is_unchanged(everything_js: Path, tmp_path: Path) -> None:
    """``--json``: the CallToolResult as sent, the image still base64 in it, no file written."""
    result = run_cli("call", f"node {everything_js} stdio", "get-tiny-image", "--json", "--save-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    [image] = [block for block in printed["content"] if block["type"] == "image"]
    assert set(image) >= {"type", "data", "mimeType"} and image["mimeType"] == "image/png"
    assert png_dimensions(base64.b64decode(image["data"]))  # the data itself, not a path
    assert "saved to" not in result.stdout and not list(tmp_path.iterdir())


# -- the header parser ---------------------------------------------------------------------------


def png(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I4sII", 13, b"IHDR", width, height) + b"\x08\x06\x00\x00\x00"


def jpeg(width: int, height: int, fill: int = 0) -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    dht = b"\xff\xc4" + struct.pack(">H", 4) + b"\x00\x00"  # C4 is no frame header, though in C0-CF
    sof = b"\xff" * fill + b"\xff\xc2" + struct.pack(">HBHH", 17, 8, height, width) + b"\x03" + b"\x00" * 9
    return b"\xff\xd8" + app0 + dht + sof + b"\xff\xda\x00\x02" + b"\x00" * 10


def riff(chunk: bytes) -> bytes:
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


@pytest.mark.parametrize(("data", "size"), [
    (png(640, 480), (640, 480)),
    (png(1, 70000), (1, 70000)),
    (b"GIF89a" + struct.pack("<HH", 320, 200) + b"\x00" * 4, (320, 200)),
    (b"GIF87a" + struct.pack("<HH", 1, 1), (1, 1)),
    (jpeg(800, 600), (800, 600)),
    (jpeg(3, 2, fill=3), (3, 2)),  # fill bytes before a marker
    (riff(b"VP8 " + struct.pack("<I", 10) + b"\x00\x00\x00\x9d\x01\x2a" + struct.pack("<HH", 400, 300)), (400, 300)),
    (riff(b"VP8L" + struct.pack("<I", 5) + b"\x2f" + ((99) | (49 << 14)).to_bytes(4, "little")), (100, 50)),
    (riff(b"VP8X" + struct.pack("<I", 10) + b"\x00" * 4 + (1919).to_bytes(3, "little") + (1079).to_bytes(3, "little")),
     (1920, 1080)),
], ids=["png", "png-tall", "gif89a", "gif87a", "jpeg", "jpeg-fill", "webp-lossy", "webp-lossless", "webp-extended"])
def test_image_size_reads_each_format(data: bytes, size: tuple[int, int]) -> None:
    assert image_size(data) == size


@pytest.mark.parametrize("data", [
    b"", b"\x89PNG\r\n\x1a\n", png(0, 10), png(10, 10)[:20], b"GIF89a\x01", b"\xff\xd8\xff", b"\xff\xd8\xffZ",
    jpeg(10, 10)[:-30], b"\xff\xd8" + b"\xff\xda\x00\x02", b"\xff\xd8\xff\xe0\x00\x01", riff(b"VP8 " + b"\x00" * 6),
    b"RIFF\x00\x00\x00\x00WEBPVP8X", b"%PDF-1.0", b"<svg xmlns='http://www.w3.org/2000/svg' width='10'/>",
], ids=lambda data: repr(data[:12]))
def test_image_size_is_none_for_what_it_cannot_read(data: bytes) -> None:
    assert image_size(data) is None


SIGNATURES = [b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR", b"GIF89a", b"GIF87a", b"\xff\xd8\xff",
              b"\xff\xd8", b"RIFF\x00\x00\x00\x00WEBPVP8 ", b"RIFF\x00\x00\x00\x00WEBPVP8L",
              b"RIFF\x00\x00\x00\x00WEBPVP8X", b""]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SIGNATURES), st.binary(max_size=200))
def test_image_size_never_raises(signature: bytes, tail: bytes) -> None:
    size = image_size(signature + tail)
    assert size is None or (isinstance(size, tuple) and len(size) == 2 and all(
        isinstance(n, int) and 0 < n < 2**32 for n in size))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"\xff", b"\xff\xfe\x00\x02", b"\xff\xd0", b"\xff\xe1\x00\x04ab", b"\x00"]),
                max_size=60))
def test_image_size_on_jpeg_segment_soup(segments: list[bytes]) -> None:
    assert image_size(b"\xff\xd8" + b"".join(segments)) is None  # no frame header among them


def test_image_size_is_linear_in_the_bytes() -> None:
    """The worst a server can send: a JPEG of only empty segments or only fill bytes, walked to
    its end. Twice the bytes cost about twice the CPU time, never more than a bound."""
    for unit in (b"\xff\xfe\x00\x02", b"\xff", b"\xff\xd0"):
        costs = []
        for count in (250_000, 500_000):
            data = b"\xff\xd8" + unit * count
            started = time.thread_time()
            assert image_size(data) is None
            costs.append(time.thread_time() - started)
        # seconds of CPU for up to 2 MB (about 1 s under coverage's tracer: a bound, not a benchmark)
        assert costs[1] < 8.0, costs
        assert costs[1] < 4 * costs[0] + 0.05, costs  # linear, not quadratic


@pytest.mark.parametrize(("count", "text"), [
    (0, "0 bytes"), (1, "1 byte"), (1023, "1023 bytes"), (1024, "1.0 KiB"), (1536, "1.5 KiB"),
    (5 * 1024 * 1024, "5.0 MiB"), (3 * 1024**3, "3.0 GiB"), (2048 * 1024**4, "2048.0 TiB"),
])
def test_human_size(count: int, text: str) -> None:
    assert human_size(count) == text
