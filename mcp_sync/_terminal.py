"""Text from a server, made safe for a terminal: one table for the CLI and the stdio stderr display.

A server's names, descriptions, errors and stderr lines may carry terminal control sequences
(``ESC ] 52`` writes the clipboard, ``ESC [ 2J`` clears the screen) or bidirectional overrides;
shown raw, they act on the user's terminal. :func:`escape` shows them as visible escapes.
"""

from __future__ import annotations

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))  # "Trojan Source" controls
_SURROGATES = range(0xD800, 0xE000)  # lone ones: not encodable, print would fail


def _escape_table(keep: str) -> dict[int, str]:
    table = {code: f"\\x{code:02x}" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
             if chr(code) not in keep}
    table.update({code: f"\\u{code:04x}" for code in (*_BIDI, *_SURROGATES)})
    return table


_LINES = _escape_table("\n\t")  # text shown as text: newlines and tabs stay
_ONE_LINE = _escape_table("")  # a name, a column, an error line: nothing may break it
_RAW = {code: "\ufffd" for code in _SURROGATES}  # raw output: only what cannot be encoded is replaced
_JSON = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0), *_BIDI, *_SURROGATES)}


def escape(text: str, one_line: bool = False) -> str:
    """``text`` from a server, safe for a terminal: C0 and C1 control characters (except newline
    and tab, unless ``one_line``), DEL, bidirectional overrides and lone surrogates shown as
    visible escapes. Linear (``str.translate``); nothing else changes.

    Example: ``escape("a\\x1b]52;c;eA==\\x07b") == "a\\\\x1b]52;c;eA==\\\\x07b"``
    """
    return text.translate(_ONE_LINE if one_line else _LINES)
