"""``load_config`` reading a file (#17.9): what cannot be read is a ConfigError saying why, never
an exception of another kind, a hang or an unbounded read.

A path with a NUL character; a file whose read fails (``/proc/self/mem`` at offset 0: EIO); a file
that says it is empty (``st_size`` 0, as ``/proc`` files do) but holds more than the limit: read
up to the limit and one byte more, then refused; a string left open at the end of the file
(the brackets in it do not count as nesting).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import mcp_sync
from mcp_sync._config import MAX_ENV_FILE_BYTES


def test_a_nul_in_the_path() -> None:
    with pytest.raises(mcp_sync.ConfigError, match="cannot read: the path holds a NUL character") as info:
        mcp_sync.load_config("mcp.json\0.txt")
    assert info.value.file == "mcp.json\0.txt"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux's /proc/self/mem")
def test_a_read_that_fails() -> None:
    with pytest.raises(mcp_sync.ConfigError, match="cannot read: Input/output error"):
        mcp_sync.load_config("/proc/self/mem")


@pytest.mark.skipif(not os.access("/proc/kallsyms", os.R_OK), reason="needs Linux's /proc/kallsyms")
def test_a_file_larger_than_it_says_is_read_up_to_the_limit() -> None:
    """/proc/kallsyms says 0 bytes (the size check alone lets it through) and holds megabytes."""
    with open("/proc/kallsyms", "rb") as symbols:
        if len(symbols.read(MAX_ENV_FILE_BYTES + 1)) <= MAX_ENV_FILE_BYTES:
            pytest.skip("this kernel lists few symbols")
    assert os.stat("/proc/kallsyms").st_size == 0
    entry = {"command": "node", "envFile": "/proc/kallsyms"}
    with pytest.raises(mcp_sync.ConfigError, match=f"more than the limit of {MAX_ENV_FILE_BYTES} bytes") as info:
        mcp_sync.load_config({"servers": {"srv": entry}})
    assert (info.value.server, info.value.field) == ("srv", "envFile")


def test_a_string_left_open(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{"mcpServers": {"srv": {"command": "npx ' + "[" * 100)  # brackets in a string do not nest
    with pytest.raises(mcp_sync.ConfigError, match="not valid JSON: Unterminated string"):
        mcp_sync.load_config(path)
