"""Tools as a model sees them: renamed, re-described, arguments hidden or pre-filled, some left out.

Two small immutable specs, :class:`ToolTransform` (one tool) and :class:`ToolFilter` (which tools),
given to a :class:`~mcp_sync.Client` as ``tool_transforms=`` and ``tool_filter=`` (a
:class:`~mcp_sync.ClientGroup` per server through ``options=``, a config entry as its ``"tools"``
section). :class:`ToolRules` is the one implementation every path uses: the client's ``tools()``
and ``list_tools()`` show :meth:`ToolRules.view` of each listed tool, and its ``call_tool`` maps a
call back with :meth:`ToolRules.to_server` (original name, pre-filled values, hidden arguments
left to the server) and checks it against the tool's *original* ``inputSchema`` before sending.
Everything built on those two methods (the LLM formats, ``run_tool_call``, the LangChain and
OpenAI Agents adapters, a group, the CLI's listing) follows without a copy of its own.

Linear in what the server lists: a view copies the tool's top-level schema keys once and drops the
hidden names from ``properties`` and ``required`` with set look-ups; names are matched with the
linear-time globs of :mod:`._glob`.
"""

from __future__ import annotations

import functools
import logging
import types
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import attrs

from ._glob import NameFilter
from ._options import call_options
from ._protocol import paging
from ._values import check_json, copy_json
from .exceptions import ToolNotFound
from .models import Tool

if TYPE_CHECKING:
    from ._protocol.session import Session

log = logging.getLogger("mcp_sync")

#: Where fastmcp servers list a tool's tags (the MCP schema has no tags field): ``_meta._fastmcp.tags``.
FASTMCP_META = "_fastmcp"
_MAX_TAGS = 1000  # tags read from one tool's _meta, at most


def _strings(value: Any) -> tuple[str, ...]:
    """Names, tags or glob patterns: a list of non-empty strings (one string is a list of one)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    items = tuple(value)
    for item in items:
        if not isinstance(item, str) or not item:
            raise TypeError(f"expected a list of non-empty strings, and {item!r:.60} is not one")
    return items


def _optional_strings(value: Any) -> tuple[str, ...] | None:
    return None if value is None else _strings(value)


def _optional_text(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"a tool's name and description are non-empty strings or None, not {value!r:.60}")
    return value  # type: ignore[no-any-return]


def _fill(value: Any) -> Mapping[str, Any]:
    if value is None:
        value = {}
    if not isinstance(value, Mapping) or not all(isinstance(key, str) and key for key in value):
        raise TypeError(f"ToolTransform.fill must map argument names to values, not {value!r:.60}")
    check_json(dict(value), "ToolTransform.fill")
    return types.MappingProxyType(copy_json(dict(value)))


@attrs.frozen
class ToolTransform:
    """How one tool is shown to a model: ``name``, ``description``, ``hide`` and ``fill``.

    ``name`` renames the tool (the original name is then refused, so a model
    cannot go around the transform); ``description`` replaces its description;
    ``hide`` removes arguments from its ``inputSchema`` (a model's value for
    one is dropped, so the server's default applies, or the schema's
    ``default`` for a required one); ``fill`` pre-fills arguments: they are
    removed from the schema and their values are sent on every call, over
    anything a model sends. A call is mapped back to the original name and
    checked against the tool's original ``inputSchema`` before it is sent
    (:class:`InvalidArguments`, nothing sent). Immutable and hashable; ``fill``
    must be JSON.

    Example::

        client = mcp_sync.Client.stdio("python", ["server.py"], tool_transforms={
            "search_issues": mcp_sync.ToolTransform(name="search", description="Search our bugs",
                                                    hide=["per_page"], fill={"repo": "acme/app"}),
        })
        [t.name for t in client.tools()]   # [..., 'search', ...]; its schema has no repo, per_page
    """

    name: str | None = attrs.field(default=None, converter=_optional_text)
    description: str | None = attrs.field(default=None, converter=_optional_text)
    hide: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    fill: Mapping[str, Any] = attrs.field(factory=dict, converter=_fill, hash=False)

    def __reduce__(self) -> tuple[Any, ...]:  # fill is a read-only view, which does not pickle
        return (ToolTransform, (self.name, self.description, self.hide, dict(self.fill)))

    @classmethod
    def from_config(cls, entry: Any, where: str = "tool_transforms") -> ToolTransform:
        """A transform from a dict with the keys ``name``, ``description``, ``hide``, ``fill``
        (a config file's form); a ToolTransform is returned as it is.

        Example: ``ToolTransform.from_config({"name": "search", "fill": {"repo": "acme/app"}})``
        """
        if isinstance(entry, ToolTransform):
            return entry
        if not isinstance(entry, Mapping):
            raise TypeError(f"{where}: a transform is a ToolTransform or a dict, not {type(entry).__name__}")
        unknown = sorted(str(key) for key in entry if key not in ("name", "description", "hide", "fill"))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; a transform takes name, description, hide, fill")
        return cls(**dict(entry))


@attrs.frozen
class ToolFilter:
    """Which of a server's tools a client shows: by name (glob patterns) and by tag.

    ``include`` (None: all) and ``exclude`` are glob patterns (``search_*``,
    ``get_?``; matched in linear time) on the names the server lists;
    ``tags`` (None: any) keeps the tools with at least one of these tags,
    ``exclude_tags`` leaves out those with any of them. The MCP schema has
    no tags field: tags are read where fastmcp servers put them,
    ``_meta._fastmcp.tags``. A tool left out is not listed, not offered to a
    model, and :class:`ToolNotFound` for ``call_tool``.

    Example::

        client = mcp_sync.Client.stdio("python", ["server.py"],
                                       tool_filter=mcp_sync.ToolFilter(include=["get_*"], exclude_tags=["admin"]))
    """

    include: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_strings)
    exclude: tuple[str, ...] = attrs.field(default=(), converter=_strings)
    tags: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_strings)
    exclude_tags: tuple[str, ...] = attrs.field(default=(), converter=_strings)

    @classmethod
    def from_config(cls, entry: Any, where: str = "tool_filter") -> ToolFilter:
        """A filter from a dict with the keys ``include``, ``exclude``, ``tags``, ``exclude_tags``.

        Example: ``ToolFilter.from_config({"include": ["get_*"]})``
        """
        if isinstance(entry, ToolFilter):
            return entry
        if not isinstance(entry, Mapping):
            raise TypeError(f"{where}: a filter is a ToolFilter or a dict, not {type(entry).__name__}")
        unknown = sorted(str(key) for key in entry if key not in ("include", "exclude", "tags", "exclude_tags"))
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {unknown}; a filter takes include, exclude, tags, exclude_tags")
        return cls(**dict(entry))


def tool_tags(tool: Tool) -> frozenset[str]:
    """The tags a server gave ``tool`` (fastmcp's ``_meta._fastmcp.tags``); empty when none."""
    ours = (tool.meta or {}).get(FASTMCP_META)
    tags = ours.get("tags") if isinstance(ours, Mapping) else None
    if not isinstance(tags, list):
        return frozenset()
    return frozenset(tag for tag in tags[:_MAX_TAGS] if isinstance(tag, str))


class ToolRules:
    """A client's ``tool_filter`` and ``tool_transforms``, applied to listings and mapped back on calls.

    Its rules never change once made (safe to share between threads). Example::

        rules = ToolRules({"add": ToolTransform(name="plus", fill={"b": 1})}, None)
        rules.view(Tool(name="add", input_schema=schema)).name       # 'plus'
        rules.to_server("plus", {"a": 2}, lambda name: None)         # ('add', {'a': 2, 'b': 1}, ...)
    """

    def __init__(self, transforms: Mapping[str, Any] | None, tool_filter: Any) -> None:
        if transforms is not None and not isinstance(transforms, Mapping):
            raise TypeError(f"tool_transforms must map tool names to ToolTransform, not {type(transforms).__name__}")
        self.transforms: dict[str, ToolTransform] = {
            str(name): ToolTransform.from_config(spec, f"tool_transforms[{name!r}]")
            for name, spec in (transforms or {}).items()
        }
        self.filter = None if tool_filter is None else ToolFilter.from_config(tool_filter)
        self._renamed: dict[str, str] = {}  # new name -> original name
        self._warned: set[tuple[str, str]] = set()  # (tool, hidden argument) warned about
        for original, spec in self.transforms.items():
            if spec.name is None or spec.name == original:
                continue
            if spec.name in self._renamed:
                raise ValueError(
                    f"tool_transforms: {self._renamed[spec.name]!r} and {original!r} are both renamed {spec.name!r}"
                )
            self._renamed[spec.name] = original
        flt = self.filter
        self._names = None if flt is None or (flt.include is None and not flt.exclude) else NameFilter(
            flt.include, flt.exclude
        )
        self._tags = None if flt is None or flt.tags is None else frozenset(flt.tags)
        self._exclude_tags = frozenset(flt.exclude_tags) if flt is not None else frozenset()

    @property
    def uses_tags(self) -> bool:
        """Whether the filter looks at tags (a call then needs the tool's listing)."""
        return self._tags is not None or bool(self._exclude_tags)

    def shows(self, tool: Tool) -> bool:
        """Whether the filter lets the listed ``tool`` (its original name and its tags) through."""
        if self._names is not None and not self._names.allows(tool.name):
            return False
        if not self.uses_tags:
            return True
        tags = tool_tags(tool)
        if self._tags is not None and not (tags & self._tags):
            return False
        return not (tags & self._exclude_tags)

    def view(self, tool: Tool) -> Tool | None:
        """``tool`` as a model sees it, or None when the filter leaves it out."""
        if not self.shows(tool):
            return None
        spec = self.transforms.get(tool.name)
        if spec is None:
            return tool
        dropped = {*spec.hide, *spec.fill}
        schema = _without(tool.input_schema, dropped) if dropped else tool.input_schema
        required = tool.input_schema.get("required")
        properties = tool.input_schema.get("properties")
        needed = {key for key in required if isinstance(key, str)} if isinstance(required, list) else set()
        for name in spec.hide:
            warn = name in needed and name not in spec.fill and not _has_default(properties, name)
            if warn and (tool.name, name) not in self._warned:  # once per argument (bounded by the config)
                self._warned.add((tool.name, name))
                log.warning(
                    "mcp_sync: tool %r: hidden argument %r is required and has no default; "
                    "give it a value with fill=, or calls will be refused", tool.name, name,
                )
        name = spec.name or tool.name
        description = spec.description if spec.description is not None else tool.description
        raw = {**tool.raw, "name": name, "inputSchema": schema}
        if description is not None:
            raw["description"] = description
        return attrs.evolve(tool, name=name, description=description, input_schema=schema, raw=raw)

    def views(self, tools: Iterable[Tool]) -> Iterable[Tool]:
        """:meth:`view` of each tool, lazily, leaving out those the filter does not show."""
        for tool in tools:
            shown = self.view(tool)
            if shown is not None:
                yield shown

    def to_server(
        self, name: str, arguments: Mapping[str, Any], listed: Callable[[str], Tool | None]
    ) -> tuple[str, dict[str, Any], bool]:
        """(the server's name, the arguments to send, whether a transform applied) for a call of the
        shown name ``name``. ``listed(original)`` gives the tool as the server listed it (or None):
        asked for a filter by tags, and for the defaults of hidden required arguments.

        Raises :class:`ToolNotFound` for a name the rules leave out: a tool the filter hides, or
        the original name of a renamed tool."""
        original = self._renamed.get(name)
        if original is None:
            spec = self.transforms.get(name)
            if spec is not None and spec.name is not None and spec.name != name:
                raise ToolNotFound(f"tool {name!r} is offered as {spec.name!r}; call it by that name", name=name)
            original = name
        if self._names is not None and not self._names.allows(original):
            raise ToolNotFound(f"tool {name!r} is left out by the client's tool_filter", name=name)
        tool = listed(original) if self.uses_tags or original in self.transforms else None
        if self.uses_tags and (tool is None or not self.shows(tool)):
            raise ToolNotFound(f"tool {name!r} is left out by the client's tool_filter (tags)", name=name)
        spec = self.transforms.get(original)
        if spec is None:
            return original, dict(arguments), False
        sent = {key: value for key, value in arguments.items() if key not in spec.hide}
        if len(sent) < len(arguments):
            log.info("mcp_sync: tool %r: hidden arguments dropped from the call", name)
        if tool is not None:  # a hidden required argument gets the schema's default
            required = tool.input_schema.get("required")
            properties = tool.input_schema.get("properties")
            needed = {key for key in required if isinstance(key, str)} if isinstance(required, list) else set()
            for hidden in spec.hide:
                if hidden in needed and _has_default(properties, hidden):
                    sent[hidden] = copy_json(properties[hidden]["default"])  # type: ignore[index]
        sent.update(copy_json(dict(spec.fill)))  # pre-filled values win over the model's
        return original, sent, True


def server_tools(session: Session) -> Iterator[Tool]:
    """Every tool as the server lists it (original names and schemas: for the checks of a call)."""
    return paging.walk(session, "tools", call_options("tools"))  # type: ignore[no-any-return]


def map_call(
    session: Session, rules: ToolRules | None, name: str, arguments: dict[str, Any]
) -> tuple[str, dict[str, Any], bool]:
    """A call of the shown ``name`` as the server takes it: :meth:`ToolRules.to_server` with the
    server's listing at hand; the arguments unchanged without rules."""
    if rules is None:
        return name, arguments, False
    listed = functools.partial(session.schemas.listed, functools.partial(server_tools, session))
    return rules.to_server(name, arguments, listed)


def _has_default(properties: Any, name: str) -> bool:
    return isinstance(properties, Mapping) and isinstance(properties.get(name), Mapping) and (
        "default" in properties[name]
    )


def _without(schema: Mapping[str, Any], dropped: set[str]) -> dict[str, Any]:
    """``schema`` without the arguments ``dropped`` in its top-level ``properties`` and ``required``."""
    out = dict(schema)
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        out["properties"] = {key: value for key, value in properties.items() if key not in dropped}
    required = schema.get("required")
    if isinstance(required, list):
        out["required"] = [key for key in required if not (isinstance(key, str) and key in dropped)]
        if not out["required"]:
            del out["required"]
    return out
