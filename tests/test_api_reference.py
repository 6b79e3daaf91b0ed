"""The API reference page (docs/gen_api.py) reads from the facade down (issue #18.20): Client,
connect and ClientGroup first, then the models, then the errors in their tree's order; every
exported name appears exactly once."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import mcp_sync

ROOT = Path(__file__).resolve().parent.parent


def _gen_api() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen_api()
PAGE = GEN.render()
#: The documented names, in page order (level-3 headings; members are level 4).
ORDER = [m.group(1).strip("`") for m in re.finditer(r"^### (\S+)$", PAGE, re.M)]


def _is_error(name: str) -> bool:
    obj = getattr(mcp_sync, name)
    return isinstance(obj, type) and issubclass(obj, BaseException)


def test_every_exported_name_once() -> None:
    assert sorted(ORDER) == sorted(mcp_sync.__all__)
    grouped = [name for _, names in GEN.groups(mcp_sync) for name in names]
    assert grouped == ORDER


def test_the_facade_comes_first_then_models_then_errors() -> None:
    assert ORDER[:3] == ["Client", "connect", "ClientGroup"]
    errors = [i for i, n in enumerate(ORDER) if _is_error(n)]
    models = [i for i, n in enumerate(ORDER) if getattr(getattr(mcp_sync, n), "__module__", "") == "mcp_sync.models"]
    assert max(models) < min(errors)  # every model before every error
    assert errors == list(range(min(errors), max(errors) + 1))  # the errors together
    headings = re.findall(r"^## (.+)$", PAGE, re.M)
    assert headings[:3] == ["Client and connecting", "Models", "Errors"]


def test_errors_follow_their_tree() -> None:
    """A parent before its subclasses, MCPError first."""
    errors = [n for n in ORDER if _is_error(n)]
    assert errors[0] == "MCPError"
    for i, name in enumerate(errors):
        for base in getattr(mcp_sync, name).__mro__[1:]:
            if base.__name__ in errors and getattr(mcp_sync, base.__name__) is base:
                assert errors.index(base.__name__) < i, (base.__name__, name)


def test_a_new_name_is_never_left_out() -> None:
    class Namespace:
        __all__ = ["Client", "brand_new_helper"]
        Client = mcp_sync.Client

        @staticmethod
        def brand_new_helper() -> None: ...

    assert GEN.groups(Namespace) == [("Client and connecting", ["Client"]), ("Other", ["brand_new_helper"])]
