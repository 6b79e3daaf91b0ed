"""Glob patterns (``search_*``, ``get_?``, ``[a-c]*``) matched in linear time, never by a regex (#20.6).

``fnmatch`` turns a pattern into a regular expression; a pattern with several ``*`` run against a
long name a server chose can make a backtracking regex engine take time exponential in the number
of stars. Here a pattern is cut at its stars into segments, and the segments are looked for in
order, each at the leftmost place it fits (that choice is always right for globs): the name is
walked once per segment, so matching costs at most ``len(name) * len(pattern)``, and a plain
segment (no ``?`` or ``[...]``) is found with ``str.find``.

Syntax as :mod:`fnmatch`: ``*`` any text, ``?`` one character, ``[abc]`` / ``[a-z]`` one of them,
``[!abc]`` none of them; everything else is itself (case-sensitive).
"""

from __future__ import annotations

from typing import Iterable, Sequence, Union

#: One pattern character: a literal, "?" (None), or a class (chars and ranges, negated).
_Token = Union[str, None, "tuple[bool, str, tuple[tuple[str, str], ...]]"]


def _parse_class(pattern: str, start: int) -> tuple[_Token, int] | None:
    """``[...]`` at ``start``: (token, index after it), or None when it does not close (a literal "[")."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] == "!"
    if negated:
        i += 1
    first = i
    chars: list[str] = []
    ranges: list[tuple[str, str]] = []
    while i < len(pattern):
        char = pattern[i]
        if char == "]" and i > first:
            return (negated, "".join(chars), tuple(ranges)), i + 1
        if i + 2 < len(pattern) and pattern[i + 1] == "-" and pattern[i + 2] != "]":
            ranges.append((char, pattern[i + 2]))
            i += 3
            continue
        chars.append(char)
        i += 1
    return None


def _segments(pattern: str) -> list[list[_Token]]:
    """The pattern cut at its ``*``: one list of tokens per segment (len = stars + 1)."""
    segments: list[list[_Token]] = [[]]
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            segments.append([])
            i += 1
        elif char == "?":
            segments[-1].append(None)
            i += 1
        elif char == "[":
            parsed = _parse_class(pattern, i)
            if parsed is None:
                segments[-1].append("[")
                i += 1
            else:
                segments[-1].append(parsed[0])
                i = parsed[1]
        else:
            segments[-1].append(char)
            i += 1
    return segments


def _fits(token: _Token, char: str) -> bool:
    if token is None:
        return True
    if isinstance(token, str):
        return token == char
    negated, chars, ranges = token
    inside = char in chars or any(low <= char <= high for low, high in ranges)
    return inside != negated


def _at(segment: Sequence[_Token], name: str, position: int) -> bool:
    return all(_fits(token, name[position + k]) for k, token in enumerate(segment))


def _find(segment: Sequence[_Token], name: str, start: int, end: int) -> int:
    """The leftmost index >= start where ``segment`` fits inside ``name[:end]``, or -1."""
    if all(isinstance(token, str) for token in segment):
        return name.find("".join(segment), start, end)  # type: ignore[arg-type]
    for position in range(start, end - len(segment) + 1):
        if _at(segment, name, position):
            return position
    return -1


class Glob:
    """One compiled glob pattern; :meth:`match` is linear in the name (times the pattern's length).

    Example::

        Glob("search_*").match("search_issues")   # True
    """

    __slots__ = ("_segments", "pattern")

    def __init__(self, pattern: str) -> None:
        if not isinstance(pattern, str):
            raise TypeError(f"a glob pattern must be a string, not {type(pattern).__name__}")
        self.pattern = pattern
        self._segments = _segments(pattern)

    def match(self, name: str) -> bool:
        segments = self._segments
        first, last = segments[0], segments[-1]
        if len(segments) == 1:
            return len(name) == len(first) and _at(first, name, 0)
        if len(name) < len(first) + len(last) or not _at(first, name, 0):
            return False
        end = len(name) - len(last)
        if not _at(last, name, end):
            return False
        position = len(first)
        for segment in segments[1:-1]:
            found = _find(segment, name, position, end)
            if found < 0:
                return False
            position = found + len(segment)
        return True

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"


class NameFilter:
    """Which names pass: those matching one of ``include`` (all when it is None) and none of ``exclude``.

    Example::

        NameFilter(include=["search_*"], exclude=["*_admin"]).allows("search_issues")   # True
    """

    __slots__ = ("exclude", "include")

    def __init__(self, include: Iterable[str] | str | None = None, exclude: Iterable[str] | str | None = None) -> None:
        self.include = None if include is None else [Glob(p) for p in _patterns(include)]
        self.exclude = [Glob(p) for p in _patterns(exclude or [])]

    def allows(self, name: str) -> bool:
        if self.include is not None and not any(glob.match(name) for glob in self.include):
            return False
        return not any(glob.match(name) for glob in self.exclude)

    def __repr__(self) -> str:
        include = None if self.include is None else [g.pattern for g in self.include]
        return f"NameFilter(include={include!r}, exclude={[g.pattern for g in self.exclude]!r})"


def _patterns(value: Iterable[str] | str) -> list[str]:
    if isinstance(value, str):
        return [value]
    patterns = list(value)
    for pattern in patterns:
        if not isinstance(pattern, str):
            raise TypeError(f"a glob pattern must be a string, not {type(pattern).__name__}")
    return patterns
