"""JSON-RPC request ids as the client compares them: one rule for the engine and every transport.

JSON has one number type, so a server may write the id ``7`` back as ``7.0``;
both name request 7. Booleans are not ids (``True == 1`` in Python, not on the
wire), and neither are other floats, lists, objects or ``null``.
"""

from __future__ import annotations

import math
from typing import Any


def normalize_id(value: Any) -> int | str | None:
    """The request id ``value`` names, or None when it is not a valid id.

    An integral float means that integer; strings stay strings (``"7"`` is not
    ``7``); booleans, other floats, ``None``, lists and objects are invalid.

    Example: ``normalize_id(7.0) == 7``, ``normalize_id("7") == "7"``, ``normalize_id(True) is None``
    """
    kind = type(value)
    if kind is int or kind is str:
        return value  # type: ignore[no-any-return]
    if kind is float and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool):  # an int subclass
        return int(value)
    if isinstance(value, str):
        return str(value)
    return None
