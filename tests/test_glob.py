"""Glob patterns for tool filters (#20.6): a segment between stars that holds ``?`` or a class is
found at its leftmost place, as :mod:`fnmatch` would match; patterns must be strings (one string
is one pattern); the reprs show the patterns."""

from __future__ import annotations

import fnmatch

import pytest

from mcp_sync._glob import Glob, NameFilter


@pytest.mark.parametrize(("pattern", "name"), [
    ("*_v?_*", "api_v2_list"),
    ("*_v?_*", "api_v10_list"),
    ("get_*[0-9]*_all", "get_item7_x_all"),
    ("*[!a-z]?x*", "ab1cxz"),
    ("*a?a*", "bbb"),
    ("s*[xy]?*e", "s__x_e"),
])
def test_a_middle_segment_with_wildcards_matches_like_fnmatch(pattern: str, name: str) -> None:
    assert Glob(pattern).match(name) == fnmatch.fnmatchcase(name, pattern)


def test_a_middle_segment_with_wildcards_is_found() -> None:
    assert Glob("*_v?_*").match("api_v2_list") and not Glob("*_v?_*").match("api_v10_list")


def test_patterns_must_be_strings() -> None:
    with pytest.raises(TypeError, match="a glob pattern must be a string, not int"):
        Glob(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a glob pattern must be a string, not bytes"):
        NameFilter(include=["search_*", b"get_*"])  # type: ignore[list-item]
    one = NameFilter(include="search_*", exclude="*_admin")  # a string is one pattern, not its characters
    assert one.allows("search_issues") and not one.allows("search_admin") and not one.allows("s")


def test_reprs_show_the_patterns() -> None:
    assert repr(Glob("search_*")) == "Glob('search_*')"
    assert repr(NameFilter(exclude="*_admin")) == "NameFilter(include=None, exclude=['*_admin'])"
    assert repr(NameFilter(include=["a*", "b?"])) == "NameFilter(include=['a*', 'b?'], exclude=[])"
