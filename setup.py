"""Packaging lives in setup.cfg; only the version is read here, without importing the
package (old setuptools would import mcp_sync, and with it attrs, to read ``attr:``)."""

import re
from pathlib import Path

from setuptools import setup

VERSION_FILE = Path(__file__).parent / "mcp_sync" / "_version.py"
match = re.search(r'^__version__ = "([^"]+)"', VERSION_FILE.read_text(encoding="utf-8"), re.M)
if match is None:
    raise RuntimeError(f"no __version__ in {VERSION_FILE}")

setup(version=match.group(1))
