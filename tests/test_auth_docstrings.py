"""Issue 18.16: user-facing docstrings of the auth modules carry no internal checklist codes
(``(A3)``, ``H6``, ``LG15``, "checklist 1.19"): they mean nothing to a user. Comments may keep them."""

from __future__ import annotations

import inspect
import re
import types
from typing import Any, Iterator

import pytest

import mcp_sync.auth
from mcp_sync import _browser_auth, _jwt, _oauth_flow, _peer_guard, _token_store

#: A checklist item (one or two capital letters and a number: A3, H6, LG15, C5) or the
#: checklist's section references. Names such as ES256, RS256, S256 or RFC 9207 do not match.
CODE = re.compile(r"\b[A-Z]{1,2}\d{1,2}\b")
MODULES = [mcp_sync.auth, _oauth_flow, _browser_auth, _token_store, _jwt, _peer_guard]


def codes_in(text: str) -> list[str]:
    return CODE.findall(text) + re.findall(r"(?i)\bchecklist\b", text)


def documented(module: types.ModuleType) -> Iterator[tuple[str, Any]]:
    """The module and every public function, class, method and property it defines or re-exports."""
    yield module.__name__, module
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", "").split(".")[0] != "mcp_sync":
            continue  # imported from elsewhere (typing, requests)
        yield f"{module.__name__}.{name}", obj
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_") and attr != "__call__":
                    continue
                target = member.fget if isinstance(member, property) else member
                if inspect.isfunction(target) or isinstance(member, property):
                    yield f"{module.__name__}.{name}.{attr}", target


def all_docstrings() -> list[tuple[str, str]]:
    return [(where, obj.__doc__) for module in MODULES for where, obj in documented(module) if obj.__doc__]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_public_docstrings_carry_no_checklist_codes(module: types.ModuleType) -> None:
    found = {where: codes_in(doc) for where, obj in documented(module) if (doc := obj.__doc__) and codes_in(doc)}
    assert found == {}, f"internal codes in user-facing docstrings: {found}"


def test_the_check_sees_what_it_should() -> None:
    assert codes_in("kept per issuer (A3, A10); LG15: legacy; C5: cache; checklist 1.19") == [
        "A3",
        "A10",
        "LG15",
        "C5",
        "checklist",
    ]
    assert codes_in("ES256, RS256, PKCE S256, RFC 9207 section 2.4, SEP-2207, HTTP/1.1, 0600") == []
    wheres = [where for where, _ in all_docstrings()]
    for expected in (
        "mcp_sync.auth",
        "mcp_sync.auth.OAuth",
        "mcp_sync.auth.OAuth.handle_challenge",
        "mcp_sync.auth.OAuth.auth_context",
        "mcp_sync.auth.FileTokenStore",
        "mcp_sync.auth.browser_authorize",
        "mcp_sync._oauth_flow.check_redirect",
    ):
        assert expected in wheres
