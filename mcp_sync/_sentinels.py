"""``USE_CLIENT_DEFAULT``: keeps "omitted" apart from ``None`` ("wait for ever")."""

from __future__ import annotations

import enum


class _Default(enum.Enum):
    USE_CLIENT_DEFAULT = "USE_CLIENT_DEFAULT"


#: Sentinel for "omitted": use the client's default (``None`` means wait for ever).
USE_CLIENT_DEFAULT = _Default.USE_CLIENT_DEFAULT
