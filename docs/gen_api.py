"""mkdocs hook: the API reference page (``api.md``), written from the docstrings at build time.

Every name in ``mcp_sync.__all__`` gets a section with its signature and
docstring; classes also list their public methods and properties. The page
reads from the facade down (issue #18.20): the client and how to connect
first, then the models it returns, then the errors (in their tree's order),
then authorization, helpers and constants; a name in no group lands in
"Other", so none is ever left out. Docstrings
are reStructuredText-flavoured (``Example::`` blocks, ``:class:`X``` roles):
they are turned into Markdown here, so no plugin beyond mkdocs is needed.
Run by hand to print the page: ``python docs/gen_api.py``.
"""

from __future__ import annotations

import enum
import inspect
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
_ROLE = re.compile(r":(?:class|meth|func|attr|data|mod|exc|obj):`~?([^`]+)`")
_FENCE = "```"


def markdown_of(doc: str) -> str:
    """A docstring in Markdown: ``::`` blocks become fenced code, roles and double backticks plain code."""
    out: list[str] = []
    lines = doc.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::"):
            intro = line.rstrip()[:-2].rstrip()
            if intro:
                out.append(_inline(intro + ":"))
            block: list[str] = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            code = textwrap.dedent("\n".join(block)).strip("\n")
            out += ["", f"{_FENCE}python", code, _FENCE, ""]
            continue
        out.append(_inline(line))
        i += 1
    return "\n".join(out).strip()


def _inline(text: str) -> str:
    text = _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1] if '(' not in m.group(1) else m.group(1)}`", text)
    return text.replace("``", "`")


def _signature(obj: Any) -> str:
    """``(a: int, *, b: str = 'x') -> None``; one parameter a line when long."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = [p for p in signature.parameters.values() if p.name not in ("self", "cls")]
    text = str(signature.replace(parameters=params))
    text = re.sub(r"(: |-> )'([^']*)'", r"\1\2", text)  # postponed annotations are strings: unquote them
    if len(text) <= 100:
        return text
    head, _, tail = text.rpartition(")")
    inner = head[1:]
    parts, depth, current = [], 0, ""
    for char in inner:  # split on top-level commas only
        depth += char in "([{"
        depth -= char in ")]}"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    parts.append(current.strip())
    return "(\n" + "".join(f"    {part},\n" for part in parts if part) + ")" + tail


def _members(cls: type) -> list[tuple[str, Any]]:
    found = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            found.append((name, value))
    for base in cls.__mro__[1:]:  # the mixins' public methods are the class's own surface
        if base.__module__.startswith("mcp_sync") and base.__name__.endswith("Mixin"):
            found += [m for m in _members(base) if m[0] not in dict(found)]
    return found


def section(name: str, obj: Any) -> str:
    """One reference section: heading, signature, docstring, then members for a class."""
    parts = [f"### `{name}`" if name.startswith("_") else f"### {name}", ""]  # __x__ would be bold
    if inspect.isclass(obj):
        kind = "exception" if issubclass(obj, BaseException) else "enum" if issubclass(obj, enum.Enum) else "class"
        bases = [b.__name__ for b in obj.__bases__ if b is not object]
        parts += [f"*{kind}*{' (' + ', '.join(bases) + ')' if bases else ''}", ""]
        if kind == "class":
            parts += [f"{_FENCE}python", f"{name}{_signature(obj)}", _FENCE, ""]
        parts.append(markdown_of(inspect.getdoc(obj) or ""))
        if kind != "exception":
            for member, value in _members(obj):
                if isinstance(value, property):
                    head = f"#### {name}.{member} *(property)*"
                    doc = inspect.getdoc(value) or ""
                else:
                    head = f"#### {name}.{member}"
                    doc = inspect.getdoc(value) or ""
                    parts += ["", head, "", f"{_FENCE}python", f"{member}{_signature(value)}", _FENCE, ""]
                    parts.append(markdown_of(doc))
                    continue
                parts += ["", head, "", markdown_of(doc)]
    elif callable(obj):
        parts += [f"{_FENCE}python", f"{name}{_signature(obj)}", _FENCE, "", markdown_of(inspect.getdoc(obj) or "")]
    else:
        parts += [f"{_FENCE}python", f"mcp_sync.{name} = {obj!r}", _FENCE]
    return "\n".join(parts).rstrip() + "\n"


#: The facade, in the order a reader meets it; then the groups :func:`groups` fills by kind.
CONNECTING = ["Client", "connect", "ClientGroup", "shared", "BoundClient", "load_config", "ClientState",
              "CancellationToken", "RequestContext", "Subscription", "Task"]
AUTHORIZATION = ["OAuth", "FileTokenStore", "browser_authorize"]
HELPERS = ["to_openai_tools", "to_anthropic_tools", "to_gemini_tools", "apply_defaults"]
CONSTANTS = ["__version__", "MODERN_VERSIONS", "LEGACY_VERSIONS", "USE_CLIENT_DEFAULT"]


def _source_order(obj: Any) -> tuple[str, int]:
    try:
        return (obj.__module__, inspect.getsourcelines(obj)[1])
    except (OSError, TypeError):
        return (getattr(obj, "__module__", ""), 0)


def _error_tree(errors: dict[str, type]) -> list[str]:
    """The exported exceptions depth first from their roots, siblings in source order
    (exceptions.py first): MCPError, ServerError, ResourceNotFound, ..."""
    exported = {cls: name for name, cls in errors.items()}

    def exported_parent(cls: type) -> type | None:
        return next((base for base in cls.__mro__[1:] if base in exported), None)

    def key(cls: type) -> tuple[bool, tuple[str, int]]:
        return (cls.__module__ != "mcp_sync.exceptions", _source_order(cls))

    order: list[str] = []

    def walk(parent: type | None) -> None:
        for cls in sorted((c for c in exported if exported_parent(c) is parent), key=key):
            order.append(exported[cls])
            walk(cls)

    walk(None)
    return order


def groups(namespace: Any) -> list[tuple[str, list[str]]]:
    """``[(heading, names)]`` covering every name in ``namespace.__all__`` exactly once."""
    names = list(namespace.__all__)
    objects = {name: getattr(namespace, name) for name in names}
    listed = [n for n in CONNECTING + AUTHORIZATION + HELPERS + CONSTANTS if n in objects]
    errors = {
        n: o for n, o in objects.items() if n not in listed and inspect.isclass(o) and issubclass(o, BaseException)
    }
    models = sorted(
        (n for n, o in objects.items() if n not in listed and getattr(o, "__module__", "") == "mcp_sync.models"),
        key=lambda n: _source_order(objects[n]),
    )
    placed = set(listed) | set(errors) | set(models)
    other = sorted(n for n in names if n not in placed)
    result = [
        ("Client and connecting", [n for n in CONNECTING if n in objects]),
        ("Models", models),
        ("Errors", _error_tree(errors)),
        ("Authorization", [n for n in AUTHORIZATION if n in objects]),
        ("Helpers", [n for n in HELPERS if n in objects]),
        ("Constants", [n for n in CONSTANTS if n in objects]),
        ("Other", other),
    ]
    return [(heading, members) for heading, members in result if members]


def render() -> str:
    """The whole reference page."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import mcp_sync

    grouped = groups(mcp_sync)
    head = [
        "# API reference",
        "",
        "Generated from the docstrings when the site is built. Every name here is importable from",
        "the package root: `from mcp_sync import Client`.",
        "",
    ]
    for heading, names in grouped:
        head.append(f"- **{heading}**: " + ", ".join(f"[{n}](#{n.lower()})" for n in names))
    body = []
    for heading, names in grouped:
        body.append(f"## {heading}\n")
        body += [section(n, getattr(mcp_sync, n)) for n in names]
    return "\n".join(head) + "\n\n" + "\n".join(body)


def on_files(files: Any, config: Any) -> Any:
    """mkdocs hook: add the generated ``api.md`` to the site."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "api.md", content=render()))
    return files


if __name__ == "__main__":
    print(render())
