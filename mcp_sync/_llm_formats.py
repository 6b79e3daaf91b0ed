"""MCP tools in the shapes LLM APIs take (OpenAI, Anthropic, Gemini), and tool calls back.

Plain dicts, no provider SDK. Each converter cleans the tool's ``inputSchema``
to what that provider accepts and gives every tool a name valid for all of
them (:func:`llm_name`); the name is a pure function of the MCP name, so
:meth:`LLMFormatsMixin.run_tool_call` maps it back at any time.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, Literal, Mapping, Union, overload

from ._options import ProgressCallback
from ._sentinels import USE_CLIENT_DEFAULT
from ._values import Timeout
from .cancellation import CancellationToken
from .exceptions import MCPError
from .models import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    Tool,
)

if TYPE_CHECKING:
    # The provider SDKs' own types, for type checkers only (#18.4): with the SDKs installed the
    # results fit their parameters under mypy --strict; without them these names are Any. The
    # ignores keep a check quiet where an SDK is missing or older.
    from anthropic.types import ToolParam as AnthropicTool  # type: ignore[import-not-found,attr-defined,unused-ignore]
    from anthropic.types import (  # type: ignore[import-not-found,attr-defined,unused-ignore]
        ToolResultBlockParam as AnthropicToolResult,
    )
    from anthropic.types import ToolUseBlock  # type: ignore[import-not-found,attr-defined,unused-ignore]
    from openai.types.chat import (  # type: ignore[import-not-found,attr-defined,unused-ignore]
        ChatCompletionFunctionToolParam as OpenAIChatTool,
    )
    from openai.types.chat import (  # type: ignore[import-not-found,attr-defined,unused-ignore]
        ChatCompletionMessageToolCallUnion,
    )
    from openai.types.chat import (  # type: ignore[import-not-found,attr-defined,unused-ignore]
        ChatCompletionToolMessageParam as OpenAIToolMessage,
    )
    from openai.types.responses import (  # type: ignore[import-not-found,attr-defined,unused-ignore]
        FunctionToolParam as OpenAIResponsesTool,
    )
    from openai.types.responses import ResponseFunctionToolCall  # type: ignore[import-not-found,attr-defined,unused-ignore]
    from openai.types.responses.response_input_item_param import (  # type: ignore[import-not-found,attr-defined,unused-ignore]
        FunctionCallOutput as OpenAIFunctionCallOutput,
    )
else:  # at run time they are Any (importing the SDKs would cost seconds), so get_type_hints() resolves
    AnthropicTool = AnthropicToolResult = ToolUseBlock = OpenAIChatTool = Any
    ChatCompletionMessageToolCallUnion = OpenAIToolMessage = OpenAIResponsesTool = Any
    ResponseFunctionToolCall = OpenAIFunctionCallOutput = Any

log = logging.getLogger("mcp_sync")

#: ``approve(tool, arguments) -> bool | str`` for :meth:`LLMFormatsMixin.run_tool_call`: True runs the
#: tool; False, or a reason, sends the model an error result instead.
Approve = Callable[[Tool, Dict[str, Any]], Union[bool, str]]

# The strictest rule among the three APIs: OpenAI and Anthropic take ^[a-zA-Z0-9_-]{1,64}$,
# Gemini also wants a letter or underscore first.
_VALID_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}\Z")  # \Z: "$" would accept a trailing newline
_INVALID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LEN = 8
_MAX_DEPTH = 32  # bound on schema nesting walked (and $ref inlining)
#: The most schema nodes (keys copied, counted) one tool's schema may expand to while its ``$ref`` are
#: inlined: a DAG of references can otherwise expand exponentially (30 $defs each naming the next twice:
#: 2^30 copies from a 2 KB schema). Past it the tool is sent with its references kept, or loose (#17.2).
EXPANSION_BUDGET = 50_000
_MAX_ARGUMENT_DEPTH = 200  # a model's arguments nested deeper are refused (sending them would recurse)
_MAX_NAME_SHOWN = 100  # characters of a model's tool name quoted back or compared
_FORMATS = ("openai", "anthropic", "gemini")
_NO_OUTPUT = "(no output)"  # an empty result, said in words: some APIs refuse empty text
# Image types Anthropic takes in a tool_result image block.
_ANTHROPIC_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def _short_hash(text: str, length: int = _HASH_LEN) -> str:
    import hashlib  # here, not at import: it loads OpenSSL (~15 ms)

    # surrogatepass: a server may list a name with a lone surrogate (JSON "\\ud800"); it still hashes
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def shortened_name(wanted: str, key: str, hash_len: int = _HASH_LEN, force_hash: bool = False) -> str:
    """``wanted`` made valid for every LLM API: invalid characters become ``_``, and a
    name that had to change, or is too long (or ``force_hash``), ends with a short hash of ``key``."""
    cleaned = _INVALID_CHARS.sub("_", wanted)
    if not cleaned or not (cleaned[0].isalpha() or cleaned[0] == "_"):
        cleaned = "_" + cleaned
    if cleaned == wanted and _VALID_NAME.match(cleaned) and not force_hash:
        return cleaned
    suffix = "_" + _short_hash(key, hash_len)
    return cleaned[: 64 - len(suffix)] + suffix


def llm_name(name: str) -> str:
    """The name an LLM API sees for the MCP tool ``name`` (``name`` itself when valid).

    Valid means ``^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$``, accepted by OpenAI,
    Anthropic and Gemini alike. Other names keep their valid characters and
    end with a short hash of the original, so distinct names stay distinct.

    Example::

        llm_name("read_file")        # 'read_file'
        llm_name("files/read.v2")    # 'files_read_v2_<8 hex>'
    """
    return shortened_name(name, name)


# -- schema cleaning --------------------------------------------------------------------------


class _TooBig(Exception):
    """A schema expanded past :data:`EXPANSION_BUDGET`."""


class _Budget:
    """What is left of one schema conversion's :data:`EXPANSION_BUDGET`."""

    __slots__ = ("left",)

    def __init__(self, left: int = EXPANSION_BUDGET) -> None:
        self.left = left

    def spend(self, amount: int) -> None:
        self.left -= amount + 1
        if self.left < 0:
            raise _TooBig


def _resolve_ref(root: Mapping[str, Any], ref: str) -> dict[str, Any] | None:
    """A local ``#/...`` JSON pointer into ``root``; None for anything else (never fetched)."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return dict(node) if isinstance(node, Mapping) else None


def _deref(
    node: Mapping[str, Any], root: Mapping[str, Any], seen: tuple[str, ...], budget: _Budget | None = None
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """``node`` with its ``$ref`` replaced by the target (siblings kept); an unresolvable or
    cyclic reference becomes an unconstrained value (only the description survives)."""
    budget = budget or _Budget()
    budget.spend(len(node))
    out = dict(node)
    while isinstance(out.get("$ref"), str):
        ref = out.pop("$ref")
        target = _resolve_ref(root, ref)
        budget.spend(len(target) if target is not None else 0)
        if target is None or ref in seen or len(seen) >= _MAX_DEPTH:
            log.debug("mcp_sync: schema $ref %r cannot be inlined; left unconstrained", ref)
            return ({"description": out["description"]} if "description" in out else {}), seen
        seen = (*seen, ref)
        out = {**target, **out}
    out.pop("$ref", None)
    return out, seen


def _merge_all_of(
    node: dict[str, Any], root: Mapping[str, Any], seen: tuple[str, ...], budget: _Budget | None = None, depth: int = 0
) -> dict[str, Any]:
    """Fold ``allOf`` branches into ``node``: properties and required are unioned, other
    keys keep the first value seen."""
    budget = budget or _Budget()
    branches = node.pop("allOf", None)
    if not isinstance(branches, list) or depth > _MAX_DEPTH:
        return node
    for branch in branches:
        if not isinstance(branch, Mapping):
            continue
        branch, branch_seen = _deref(branch, root, seen, budget)
        branch = _merge_all_of(branch, root, branch_seen, budget, depth + 1)  # the refs followed so far: a cycle ends
        for key, value in branch.items():
            if key == "properties" and isinstance(value, Mapping):
                budget.spend(len(value) + len(node.get("properties") or {}))
                node["properties"] = {**value, **(node.get("properties") or {})}
            elif key == "required" and isinstance(value, list):
                budget.spend(len(value) + len(node.get("required") or []))
                node["required"] = list(dict.fromkeys([*(node.get("required") or []), *value]))
            else:
                node.setdefault(key, value)
    return node


def _object_root(schema: Any, budget: _Budget | None = None) -> dict[str, Any]:
    """Every API wants an object schema at the root without top-level combinators."""
    budget = budget or _Budget()
    root = dict(schema) if isinstance(schema, Mapping) else {}
    root, _ = _deref(root, root, (), budget)  # {"$ref": "#/definitions/Args", "definitions": ...} (zod-to-json-schema)
    root = _merge_all_of(root, root, (), budget)
    for key in ("anyOf", "oneOf"):
        branches = root.pop(key, None)
        # one of several argument shapes: offer every branch's properties, none required by it
        for branch in branches if isinstance(branches, list) else []:
            if isinstance(branch, Mapping):
                branch, _ = _deref(branch, root, (), budget)
                props = branch.get("properties")
                if isinstance(props, Mapping):
                    budget.spend(len(props) + len(root.get("properties") or {}))
                    root["properties"] = {**props, **(root.get("properties") or {})}
    for key in ("not", "enum", "const", "$schema", "if", "then", "else"):
        root.pop(key, None)
    root["type"] = "object"
    if not isinstance(root.get("properties"), Mapping):
        root["properties"] = {}
    return root


_GEMINI_KEYS = (
    "title", "description", "minItems", "maxItems", "minLength", "maxLength", "minProperties",
    "maxProperties", "pattern", "minimum", "maximum", "default", "example", "propertyOrdering",
)  # fmt: skip
_GEMINI_FORMATS = {"string": {"enum", "date-time"}, "integer": {"int32", "int64"}, "number": {"float", "double"}}


def gemini_schema(
    schema: Any,
    root: Mapping[str, Any] | None = None,
    seen: tuple[str, ...] = (),
    depth: int = 0,
    budget: _Budget | None = None,
) -> dict[str, Any]:
    """A JSON Schema reduced to Gemini's OpenAPI 3.0 subset.

    ``$ref`` is inlined (a cycle or a non-local reference becomes an
    unconstrained value), ``allOf`` merged, ``oneOf`` becomes ``anyOf``, a
    ``null`` type or branch becomes ``nullable``, ``const`` becomes a one-value
    ``enum``; keys Gemini rejects (``$schema``, ``additionalProperties``,
    ``$defs``, non-string enums, unknown formats, ...) are dropped. The expansion is
    bounded (:data:`EXPANSION_BUDGET`): past it, ``{"type": "object"}`` with a warning.

    Example::

        gemini_schema({"type": ["string", "null"], "const": "a"})
        # {'type': 'string', 'enum': ['a'], 'nullable': True}
    """
    if budget is None:  # the outermost call: the whole conversion shares one budget
        try:
            return gemini_schema(schema, root, seen, depth, _Budget())
        except _TooBig:
            log.warning("mcp_sync: a schema expands past %d nodes; sent to Gemini as a loose object", EXPANSION_BUDGET)
            return {"type": "object"}
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return {}
    root = schema if root is None else root
    node, seen = _deref(schema, root, seen, budget)
    node = _merge_all_of(node, root, seen, budget)
    out: dict[str, Any] = {}
    nullable = False

    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        nullable = len(kinds) < len(kind)
        kind = kinds[0] if len(kinds) == 1 else None
        if len(kinds) > 1:
            out["anyOf"] = [{"type": k} for k in kinds if isinstance(k, str)]
    if isinstance(kind, str) and kind != "null":
        out["type"] = kind
    elif kind == "null":
        nullable = True

    branches = node.get("anyOf", node.get("oneOf"))
    if isinstance(branches, list):
        non_null = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
        nullable = nullable or len(non_null) < len(branches)
        converted = [gemini_schema(b, root, seen, depth + 1, budget) for b in non_null]
        if len(converted) == 1:
            out = {**converted[0], **out}
        elif converted:
            out["anyOf"] = converted

    if "const" in node:
        node.setdefault("enum", [node["const"]])
    enum = node.get("enum")
    if isinstance(enum, list):
        values = [v for v in enum if v is not None]
        nullable = nullable or len(values) < len(enum)
        if values and all(isinstance(v, str) for v in values):  # Gemini enums are strings only
            out["enum"] = values
            out.setdefault("type", "string")

    for key in _GEMINI_KEYS:
        if key in node:
            out[key] = node[key]
    if "example" not in out and isinstance(node.get("examples"), list) and node["examples"]:
        out["example"] = node["examples"][0]
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt in _GEMINI_FORMATS.get(str(out.get("type")), ()):
        out["format"] = fmt

    props = node.get("properties")
    if isinstance(props, Mapping) and props:
        out["properties"] = {str(k): gemini_schema(v, root, seen, depth + 1, budget) for k, v in props.items()}
        required = [r for r in node.get("required") or [] if r in out["properties"]]
        if required:
            out["required"] = required
        out.setdefault("type", "object")
    items = node.get("items")
    if isinstance(items, list):  # tuple form: the first item's schema is the closest Gemini has
        items = items[0] if items else {}
    if isinstance(items, Mapping):
        out["items"] = gemini_schema(items, root, seen, depth + 1, budget)
        out.setdefault("type", "array")
    if nullable:
        out["nullable"] = True
    return out


class _NotStrict(Exception):
    """This schema cannot be expressed in OpenAI's strict subset."""


# What OpenAI strict mode accepts besides type/properties/required/additionalProperties/items/anyOf.
_STRICT_KEEP = (
    "title", "description", "enum", "const", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
)  # fmt: skip
_STRICT_REFUSE = (
    "not", "if", "then", "else", "patternProperties", "dependentSchemas", "dependencies",
    "unevaluatedProperties", "propertyNames", "contains", "prefixItems",
)  # fmt: skip


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]
    elif "anyOf" in schema:
        schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    return schema


def _strict(
    schema: Any, root: Mapping[str, Any], seen: tuple[str, ...] = (), depth: int = 0, budget: _Budget | None = None
) -> dict[str, Any]:
    budget = budget or _Budget()
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        raise _NotStrict("not a schema")
    node, seen = _deref(schema, root, seen, budget)
    if not node:
        raise _NotStrict("an unconstrained value")
    node = _merge_all_of(node, root, seen, budget)
    refused = [key for key in _STRICT_REFUSE if key in node]
    if refused:
        raise _NotStrict(f"uses {refused[0]}")
    out = {key: node[key] for key in _STRICT_KEEP if key in node}
    branches = node.get("anyOf", node.get("oneOf"))
    if isinstance(branches, list):
        out["anyOf"] = [_strict(b, root, seen, depth + 1, budget) for b in branches]
    kind = node.get("type")
    if kind is not None:
        out["type"] = kind
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds or "properties" in node:
        extra = node.get("additionalProperties")
        if extra not in (None, False, {}):
            raise _NotStrict("an object with free-form keys")
        props = node.get("properties") or {}
        required = set(node.get("required") or [])
        out["properties"] = {}
        for key, value in props.items():
            converted = _strict(value, root, seen, depth + 1, budget)
            out["properties"][key] = converted if key in required else _nullable(converted)
        out["required"] = list(props)
        out["additionalProperties"] = False
        out.setdefault("type", "object")
    if "array" in kinds:
        if not isinstance(node.get("items"), Mapping):
            raise _NotStrict("an array without an items schema")
        out["items"] = _strict(node["items"], root, seen, depth + 1, budget)
    if "type" not in out and "anyOf" not in out and "enum" not in out and "const" not in out:
        raise _NotStrict("a value without a type")
    return out


def openai_strict_schema(schema: Any) -> dict[str, Any] | None:
    """``schema`` in OpenAI's strict subset, or None when it cannot be expressed there.

    Every object gets ``additionalProperties: false`` and lists all its
    properties as required, the optional ones made nullable; ``$ref`` is
    inlined. Free-form objects, untyped values, keywords strict mode refuses
    (``not``, ``patternProperties``, ...) and a schema that expands past
    :data:`EXPANSION_BUDGET` make it None.

    Example::

        openai_strict_schema({"type": "object", "properties": {"a": {"type": "string"}}})
        # {'type': 'object', 'properties': {'a': {'type': ['string', 'null']}},
        #  'required': ['a'], 'additionalProperties': False}
    """
    return _strict_or_none(schema, "a tool")


def _strict_or_none(schema: Any, what: str) -> dict[str, Any] | None:
    budget = _Budget()
    try:
        root = _object_root(schema, budget)
        return _strict(root, root, budget=budget)
    except _NotStrict as exc:
        log.info("mcp_sync: %s: schema not sent in OpenAI strict mode: it has %s", what, exc)
    except _TooBig:
        log.warning(
            "mcp_sync: %s: its inputSchema expands past %d nodes; sent without OpenAI strict mode",
            what, EXPANSION_BUDGET,
        )
    return None


def _plain_schema(schema: Any, what: str = "a tool") -> dict[str, Any]:
    """The schema for OpenAI (non-strict) and Anthropic: JSON Schema as it is, object at the root.

    A schema whose root expands past :data:`EXPANSION_BUDGET` keeps its references instead:
    its own properties, ``required`` and definitions as they are (the APIs resolve ``$ref``)."""
    try:
        return _object_root(schema, _Budget())
    except _TooBig:
        log.warning(
            "mcp_sync: %s: its inputSchema expands past %d nodes; sent with its $ref kept, without its root allOf",
            what, EXPANSION_BUDGET,
        )
    source = schema if isinstance(schema, Mapping) else {}
    kept: dict[str, Any] = {"type": "object"}
    kept["properties"] = source["properties"] if isinstance(source.get("properties"), Mapping) else {}
    for key in ("required", "$defs", "definitions", "description"):
        if key in source:
            kept[key] = source[key]
    return kept


def _gemini_parameters(schema: Any, what: str) -> dict[str, Any]:
    try:
        return gemini_schema(_object_root(schema, _Budget()), budget=_Budget())
    except _TooBig:
        log.warning(
            "mcp_sync: %s: its inputSchema expands past %d nodes; sent to Gemini without parameters",
            what, EXPANSION_BUDGET,
        )
        return {"type": "object"}


# -- tool lists --------------------------------------------------------------------------------


def _description(tool: Tool) -> str:
    return tool.description or tool.title or ""


def assign_names(tools: Iterable[Tool], *, warn: bool = True) -> list[tuple[str, Tool]]:
    """Each tool with the name an LLM API sees, in listing order; a server's faults degrade (#17.3).

    A name listed twice keeps its first listing (the others are left out, with a
    warning). Names that :func:`llm_name` would map to one name (``a.b`` next to a
    tool named ``llm_name("a.b")``, or a crafted hash collision) are renamed
    deterministically, with a warning: the name that is valid as it is keeps it (else
    the smallest), the others get a further hash. The result depends only on the set of
    names and which listing came first, so :meth:`LLMFormatsMixin.run_tool_call` maps a
    name back the same way. ``warn=False`` leaves the warnings out (for a second pass).

    Example::

        [name for name, _ in assign_names([Tool(name="a.b"), Tool(name=llm_name("a.b"))])]
        # ['a_b_<another hash>', 'a_b_<8 hex>']
    """
    unique: dict[str, Tool] = {}
    for tool in tools:
        if tool.name in unique:
            if warn:
                log.warning("mcp_sync: tool %r is listed twice; the first listing is offered to the model", tool.name)
            continue
        unique[tool.name] = tool
    wanted = {name: llm_name(name) for name in unique}
    claims: dict[str, list[str]] = {}
    for name, llm in wanted.items():
        claims.setdefault(llm, []).append(name)
    assigned: dict[str, str] = {}
    losers: list[str] = []
    for llm, names in claims.items():
        names.sort(key=lambda name: (name != llm, name))  # the name valid as it is wins, else the smallest
        assigned[names[0]] = llm
        losers.extend(names[1:])
    taken = set(claims)  # never take another tool's own name
    for name in sorted(losers):
        attempt, candidate = 1, ""
        while not candidate or candidate in taken:
            hash_len = min(_HASH_LEN + 4 * (attempt // 4), 32)
            candidate = shortened_name(name, f"{name}\0{attempt}", hash_len, force_hash=True)
            attempt += 1
        taken.add(candidate)
        assigned[name] = candidate
        if not warn:
            continue
        log.warning(
            "mcp_sync: tools %r and %r would share the LLM name %r; %r is offered as %r",
            claims[wanted[name]][0], name, wanted[name], name, candidate,
        )
    return [(assigned[name], tool) for name, tool in unique.items()]


@overload
def to_openai_tools(tools: Iterable[Tool], api: Literal["chat"] = ..., strict: bool = ...) -> list[OpenAIChatTool]: ...
@overload
def to_openai_tools(
    tools: Iterable[Tool], api: Literal["responses"], strict: bool = ...
) -> list[OpenAIResponsesTool]: ...
@overload
def to_openai_tools(tools: Iterable[Tool], api: str = ..., strict: bool = ...) -> list[Any]: ...
def to_openai_tools(tools: Iterable[Tool], api: str = "chat", strict: bool = False) -> list[Any]:
    """``tools`` as OpenAI function tools.

    ``api="chat"`` (Chat Completions) gives ``{"type": "function", "function":
    {...}}``; ``api="responses"`` gives the flat Responses API shape.
    ``strict=True`` asks for strict mode where the schema allows it (see
    :func:`openai_strict_schema`); a tool whose schema does not fit is sent
    with ``"strict": false``. Responses API tools always carry ``strict``
    (that API takes a missing one as true). Names are made valid with
    :func:`llm_name` (see :func:`assign_names` for duplicates and collisions).
    With the ``openai`` package installed, type checkers see the SDK's own
    parameter types (``ChatCompletionFunctionToolParam``, ``FunctionToolParam``).

    Example::

        tools = mcp_sync.to_openai_tools(client.tools())
        reply = openai.chat.completions.create(model=..., messages=..., tools=tools)
    """
    if api not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses', not {api!r}")
    out = []
    for name, tool in assign_names(tools):
        function: dict[str, Any] = {"name": name, "description": _description(tool)}
        what = f"tool {tool.name!r}"
        strict_schema = _strict_or_none(tool.input_schema, what) if strict else None
        function["parameters"] = strict_schema if strict_schema is not None else _plain_schema(tool.input_schema, what)
        if strict or api == "responses":  # the Responses API takes a missing "strict" as true (#18.2)
            function["strict"] = strict_schema is not None
        out.append({"type": "function", "function": function} if api == "chat" else {"type": "function", **function})
    return out


def to_anthropic_tools(tools: Iterable[Tool]) -> list[AnthropicTool]:
    """``tools`` as Anthropic Messages API tools: ``[{"name", "description", "input_schema"}]``
    (typed as the ``anthropic`` SDK's ``ToolParam`` when it is installed).

    Example::

        tools = mcp_sync.to_anthropic_tools(client.tools())
        reply = anthropic.messages.create(model=..., max_tokens=1024, messages=..., tools=tools)
    """
    return [
        {
            "name": name,
            "description": _description(tool),
            "input_schema": _plain_schema(tool.input_schema, f"tool {tool.name!r}"),
        }
        for name, tool in assign_names(tools)
    ]


def to_gemini_tools(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """``tools`` as one Gemini tool: ``[{"function_declarations": [{"name", "description", "parameters"}]}]``.

    Schemas are reduced to Gemini's OpenAPI subset (:func:`gemini_schema`); a
    tool without parameters has no ``parameters`` key (Gemini refuses an
    object with no properties).

    Example::

        config = {"tools": mcp_sync.to_gemini_tools(client.tools())}
    """
    declarations = []
    for name, tool in assign_names(tools):
        declaration: dict[str, Any] = {"name": name, "description": _description(tool)}
        parameters = _gemini_parameters(tool.input_schema, f"tool {tool.name!r}")
        if parameters.get("properties"):
            declaration["parameters"] = parameters
        declarations.append(declaration)
    return [{"function_declarations": declarations}]


# -- tool calls -----------------------------------------------------------------------------


def _as_dict(obj: Any) -> Any:
    """A provider SDK object (pydantic) as the plain dict it serialises to."""
    for method in ("model_dump", "to_dict"):
        if hasattr(obj, method) and not isinstance(obj, Mapping):
            return getattr(obj, method)()
    return obj


class _ParsedCall:
    def __init__(self, kind: str, call_id: Any, name: str, arguments: Any) -> None:
        self.kind, self.call_id, self.name, self.arguments = kind, call_id, name, arguments


def _parse_call(call: Any, fmt: str) -> _ParsedCall:
    """The provider's tool call as (kind, id, name, raw arguments); ValueError for a shape it is not."""
    call = _as_dict(call)
    if not isinstance(call, Mapping):
        raise ValueError(f"a {fmt} tool call must be a dict, not {type(call).__name__}")
    if fmt == "openai":
        if call.get("type") == "function_call" or ("call_id" in call and "function" not in call):
            return _ParsedCall("responses", call.get("call_id"), str(call.get("name", "")), call.get("arguments"))
        function = call.get("function")
        if not isinstance(function, Mapping):
            raise ValueError("an OpenAI tool call needs 'function' (Chat Completions) or type 'function_call'")
        return _ParsedCall("chat", call.get("id"), str(function.get("name", "")), function.get("arguments"))
    if fmt == "anthropic":
        return _ParsedCall("anthropic", call.get("id"), str(call.get("name", "")), call.get("input"))
    part = call.get("functionCall", call.get("function_call", call))  # a whole part or the call itself
    part = _as_dict(part)
    if not isinstance(part, Mapping):
        raise ValueError("a Gemini function call must be a dict")
    return _ParsedCall("gemini", part.get("id"), str(part.get("name", "")), part.get("args"))


def _arguments(raw: Any) -> dict[str, Any]:
    """Arguments as a dict: OpenAI sends a JSON string, the others an object. ValueError for
    anything else, or for arguments nested deeper than :data:`_MAX_ARGUMENT_DEPTH` (#17.4)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, (str, bytes)):
        try:
            raw = json.loads(raw)
        except RecursionError:  # the parser recurses: a model's "[[[[..." must not escape as an exception
            raise ValueError(f"the arguments are nested too deeply (over {_MAX_ARGUMENT_DEPTH} levels)") from None
        except ValueError as exc:
            raise ValueError(f"the arguments are not valid JSON ({_short(str(exc))}); send a JSON object") from None
    if not isinstance(raw, Mapping):
        raise ValueError(f"the arguments must be a JSON object, not {type(raw).__name__}")
    if _deeper_than(raw, _MAX_ARGUMENT_DEPTH):  # sending them would recurse (json.dumps) past the stack
        raise ValueError(f"the arguments are nested too deeply (over {_MAX_ARGUMENT_DEPTH} levels)")
    return dict(raw)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests lists and dicts more than ``limit`` deep; iterative, stops at the limit."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Iterable[Any] = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _short(text: str, limit: int = _MAX_NAME_SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _refuses_null(schema: Any, root: Mapping[str, Any], budget: _Budget, depth: int = 0) -> bool:
    """Whether ``schema`` surely does not accept null (False when unsure: the null is then kept)."""
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return False
    node, _ = _deref(schema, root, (), budget)
    kind = node.get("type")
    if isinstance(kind, str):
        return kind != "null"
    if isinstance(kind, list):
        return "null" not in kind
    if isinstance(node.get("enum"), list):
        return None not in node["enum"]
    if "const" in node:
        return node["const"] is not None
    branches = node.get("anyOf", node.get("oneOf"))
    if isinstance(branches, list) and branches:
        return all(_refuses_null(branch, root, budget, depth + 1) for branch in branches)
    return False


def drop_optional_nulls(arguments: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """``arguments`` without the nulls that stand for parameters ``schema`` leaves optional and
    does not let be null, in nested objects too (#18.1). The arguments are not changed: the
    objects on the way to a dropped null are copied.

    OpenAI strict mode makes every optional parameter required and nullable, so a strict
    model sends ``null`` for the ones it does not use; servers refuse those. Iterative and
    bounded (nesting by the argument depth limit, schema work by :data:`EXPANSION_BUDGET`).

    Example::

        schema = {"type": "object", "properties": {"path": {"type": "string"}, "head": {"type": "integer"}},
                  "required": ["path"]}
        drop_optional_nulls({"path": "a", "head": None}, schema)  # {'path': 'a'}
    """
    root = schema if isinstance(schema, Mapping) else {}
    budget = _Budget()
    holder: dict[str, Any] = {"": dict(arguments)}
    # (container, key in it, the schema for container[key], depth): each object is copied before it changes
    stack: list[tuple[Any, Any, Any, int]] = [(holder, "", root, 0)]
    try:
        while stack:
            container, key, node, depth = stack.pop()
            if not isinstance(node, Mapping) or depth > _MAX_DEPTH:
                continue
            node, seen = _deref(node, root, (), budget)
            node = _merge_all_of(node, root, seen, budget)
            value = container[key]
            if isinstance(value, list):
                items = node.get("items")
                if isinstance(items, Mapping) and any(isinstance(v, (dict, list)) for v in value):
                    copy_list = container[key] = list(value)
                    stack.extend((copy_list, i, items, depth + 1) for i, v in enumerate(copy_list)
                                 if isinstance(v, (dict, list)))
                continue
            props = node.get("properties")  # value is a dict: only dicts and lists are ever pushed
            if not isinstance(props, Mapping):
                continue
            listed = node.get("required")
            required: list[Any] = listed if isinstance(listed, list) else []
            copy = container[key] = dict(value)
            for name, item in value.items():
                sub = props.get(name)
                if sub is None:
                    continue
                if item is None:
                    if name not in required and _refuses_null(sub, root, budget):
                        del copy[name]
                elif isinstance(item, (dict, list)):
                    stack.append((copy, name, sub, depth + 1))
    except _TooBig:
        log.info("mcp_sync: a schema too large to look for optional nulls in; arguments left as they are")
        return dict(arguments)
    result: dict[str, Any] = holder[""]
    return result


def _block_text(block: Any) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, (ImageContent, AudioContent)):
        return f"[{block.type}: {block.mime_type}, {len(block.data) * 3 // 4} bytes]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, BlobResourceContents):
            return f"[resource {resource.uri}: {resource.mime_type or 'binary'}, {len(resource.blob) * 3 // 4} bytes]"
        return resource.text
    return json.dumps(getattr(block, "raw", block), default=str)


def result_text(result: CallToolResult) -> str:
    """A tool result as one text for the model: text blocks as they are, other blocks described,
    ``structuredContent`` as JSON when there is no content.

    Example: ``mcp_sync._llm_formats.result_text(client.call_tool("echo", {"text": "hi"}))  # 'hi'``
    """
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, default=str))
    return "\n".join(part for part in parts if part) or _NO_OUTPUT


def _anthropic_blocks(result: CallToolResult) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, ImageContent) and block.mime_type in _ANTHROPIC_IMAGE_TYPES:
            source = {"type": "base64", "media_type": block.mime_type, "data": block.data}
            blocks.append({"type": "image", "source": source})
        elif _block_text(block):  # Anthropic refuses empty text blocks
            blocks.append({"type": "text", "text": _block_text(block)})
    if not blocks:  # structuredContent only, or nothing at all
        blocks.append({"type": "text", "text": result_text(result)})
    return blocks


def _error_message(call: _ParsedCall, text: str) -> dict[str, Any]:
    """An error result the model reads (a mistake of the model's or a failed tool)."""
    return _message(call, CallToolResult(content=[TextContent(text=text)], is_error=True))


def _message(call: _ParsedCall, result: CallToolResult) -> dict[str, Any]:
    if call.kind == "anthropic":
        return {
            "type": "tool_result",
            "tool_use_id": call.call_id,
            "content": _anthropic_blocks(result),
            "is_error": result.is_error,
        }
    text = result_text(result)
    if call.kind == "gemini":
        value: Any = result.structured_content if result.structured_content is not None else text
        response = {"error": text} if result.is_error else {"result": value}
        body: dict[str, Any] = {"name": call.name, "response": response}
        if call.call_id is not None:
            body["id"] = call.call_id
        return {"function_response": body}
    if result.is_error:
        text = "Error: " + text
    if call.kind == "responses":
        return {"type": "function_call_output", "call_id": call.call_id, "output": text}
    return {"role": "tool", "tool_call_id": call.call_id, "content": text}


# -- the methods of Client and ClientGroup ----------------------------------------------------------

class ToolNames:
    """The LLM names one client or group has handed out, and the tool behind each. Thread-safe.

    An LLM name is a pure function of the listing (:func:`assign_names`), so a name handed out
    earlier still maps back after the tools are listed again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: dict[str, str] = {}  # LLM name -> the name call_tool takes
        self._schemas: dict[str, Any] = {}  # the name call_tool takes -> its inputSchema
        self._listed: dict[str, Tool] = {}  # the name call_tool takes -> the Tool as listed (for approve)

    def remember(self, tools: list[Tool]) -> list[Tool]:
        """Note the names ``tools`` are offered under (the export itself warns about faults, once)."""
        assigned = assign_names(tools, warn=False)
        with self._lock:
            self._names.update((name, tool.name) for name, tool in assigned)
            self._schemas.update((tool.name, tool.input_schema) for _, tool in assigned)
            self._listed.update((tool.name, tool) for _, tool in assigned)
        return tools

    def resolve(self, name: str, relist: Callable[[], list[Tool]]) -> tuple[str | None, Any]:
        """The call_tool name and inputSchema behind the LLM name ``name``; listed again once if unknown."""
        with self._lock:
            known = name in self._names
        if not known:
            self.remember(relist())
        with self._lock:
            tool_name = self._names.get(name)
            return tool_name, self._schemas.get(tool_name) if tool_name is not None else None

    def tool(self, name: str) -> Tool:
        """The Tool as listed for the call_tool name ``name`` (a bare one if it was never listed)."""
        with self._lock:
            listed = self._listed.get(name)
        return listed if listed is not None else Tool(name=name, input_schema={"type": "object"})

    def offered(self) -> list[str]:
        with self._lock:
            return list(self._names)


class LLMFormatsMixin:
    """``to_openai_tools``, ``to_anthropic_tools``, ``to_gemini_tools`` and ``run_tool_call``
    for :class:`~mcp_sync.Client` and :class:`~mcp_sync.ClientGroup`, built on their
    public ``tools()`` and ``call_tool()`` (thread-safe like them). Its hooks: the names
    handed out (``_tool_names``) and the tools offered (``_llm_tools``)."""

    if TYPE_CHECKING:
        tools: Callable[..., Iterator[Tool]]
        call_tool: Callable[..., CallToolResult]

    _tool_names: ToolNames

    def _llm_tools(self) -> list[Tool]:
        """The tools offered to a model (ClientGroup: with prefixed names)."""
        return list(self.tools())

    def _tool_to_approve(self, name: str) -> Tool:
        """The :class:`Tool` an ``approve`` callback is shown for the call_tool name ``name``."""
        return self._tool_names.tool(name)

    @overload
    def to_openai_tools(self, api: Literal["chat"] = ..., strict: bool = ...) -> list[OpenAIChatTool]: ...
    @overload
    def to_openai_tools(self, api: Literal["responses"], strict: bool = ...) -> list[OpenAIResponsesTool]: ...
    @overload
    def to_openai_tools(self, api: str = ..., strict: bool = ...) -> list[Any]: ...
    def to_openai_tools(self, api: str = "chat", strict: bool = False) -> list[Any]:
        """This server's tools as OpenAI function tools (see :func:`mcp_sync.to_openai_tools`).

        Example::

            reply = openai.chat.completions.create(model="gpt-4.1", messages=messages,
                                                   tools=client.to_openai_tools())
        """
        return to_openai_tools(self._tool_names.remember(self._llm_tools()), api=api, strict=strict)

    def to_anthropic_tools(self) -> list[AnthropicTool]:
        """This server's tools as Anthropic tools (see :func:`mcp_sync.to_anthropic_tools`).

        Example::

            reply = anthropic.messages.create(model=..., max_tokens=1024, messages=messages,
                                              tools=client.to_anthropic_tools())
        """
        return to_anthropic_tools(self._tool_names.remember(self._llm_tools()))

    def to_gemini_tools(self) -> list[dict[str, Any]]:
        """This server's tools as Gemini function declarations (see :func:`mcp_sync.to_gemini_tools`).

        Example: ``config = {"tools": client.to_gemini_tools()}``
        """
        return to_gemini_tools(self._tool_names.remember(self._llm_tools()))

    # The SDKs' call objects give the SDKs' message types (#18.4); dicts and the rest give Any.
    @overload
    def run_tool_call(
        self,
        call: ChatCompletionMessageToolCallUnion,
        format: Literal["openai"] = ...,
        *,
        validate: bool | None = ...,
        timeout: Timeout = ...,
        progress: ProgressCallback | bool | None = ...,
        cancel: CancellationToken | None = ...,
        meta: Mapping[str, Any] | None = ...,
        headers: Mapping[str, str] | None = ...,
        reset_timeout_on_progress: bool = ...,
        max_total_timeout: float | None = ...,
        approve: Approve | None = ...,
    ) -> OpenAIToolMessage: ...
    @overload
    def run_tool_call(
        self,
        call: ResponseFunctionToolCall,
        format: Literal["openai"] = ...,
        *,
        validate: bool | None = ...,
        timeout: Timeout = ...,
        progress: ProgressCallback | bool | None = ...,
        cancel: CancellationToken | None = ...,
        meta: Mapping[str, Any] | None = ...,
        headers: Mapping[str, str] | None = ...,
        reset_timeout_on_progress: bool = ...,
        max_total_timeout: float | None = ...,
        approve: Approve | None = ...,
    ) -> OpenAIFunctionCallOutput: ...
    @overload
    def run_tool_call(
        self,
        call: ToolUseBlock,
        format: Literal["anthropic"],
        *,
        validate: bool | None = ...,
        timeout: Timeout = ...,
        progress: ProgressCallback | bool | None = ...,
        cancel: CancellationToken | None = ...,
        meta: Mapping[str, Any] | None = ...,
        headers: Mapping[str, str] | None = ...,
        reset_timeout_on_progress: bool = ...,
        max_total_timeout: float | None = ...,
        approve: Approve | None = ...,
    ) -> AnthropicToolResult: ...
    @overload
    def run_tool_call(
        self,
        call: Any,
        format: str = ...,
        *,
        validate: bool | None = ...,
        timeout: Timeout = ...,
        progress: ProgressCallback | bool | None = ...,
        cancel: CancellationToken | None = ...,
        meta: Mapping[str, Any] | None = ...,
        headers: Mapping[str, str] | None = ...,
        reset_timeout_on_progress: bool = ...,
        max_total_timeout: float | None = ...,
        approve: Approve | None = ...,
    ) -> Any: ...
    def run_tool_call(
        self,
        call: Any,
        format: str = "openai",
        *,
        validate: bool | None = None,
        timeout: Timeout = USE_CLIENT_DEFAULT,
        progress: ProgressCallback | bool | None = None,
        cancel: CancellationToken | None = None,
        meta: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        reset_timeout_on_progress: bool = False,
        max_total_timeout: float | None = None,
        approve: Approve | None = None,
    ) -> Any:
        """Run one tool call an LLM asked for and return the provider's tool-result message.

        ``call`` is the provider's tool-call object (a dict, or the provider
        SDK's object): ``format="openai"`` takes a Chat Completions tool call
        (answer ``{"role": "tool", "tool_call_id", "content"}``) or a Responses
        ``function_call`` item (answer ``{"type": "function_call_output",
        "call_id", "output"}``); ``"anthropic"`` a ``tool_use`` block (answer a
        ``tool_result`` block, images included); ``"gemini"`` a function call
        (answer ``{"function_response": {"name", "response"}}``). Bad JSON
        arguments, an unknown tool, a failing tool or an MCP error become an
        error result the model can read (an unknown tool's names the closest
        tools); nothing is raised for the model's mistakes. Nulls sent for
        optional parameters that may not be null (what OpenAI strict mode makes
        models do) are left out (:func:`drop_optional_nulls`). The options go to
        ``call_tool`` (e.g. ``timeout=30``). Type checkers see the SDK's message
        type when ``call`` is the SDK's call object (a dict gives Any).

        ``approve(tool, arguments) -> bool | str``, when given, runs (on the calling
        thread) before the tool does, with the listed :class:`Tool` (a group's: as
        its server names it; ``group.server_of(tool)`` tells which server) and the
        arguments about to be sent. ``True`` runs the tool; ``False`` or a string
        (the reason) refuses it: the model gets an error result saying the call
        was not approved, and why; nothing is raised, nothing is sent. An
        exception from ``approve`` itself propagates.

        Example::

            for call in reply.choices[0].message.tool_calls or []:
                messages.append(client.run_tool_call(call, format="openai"))

            client.run_tool_call(call, format="anthropic",
                                 approve=lambda tool, args: tool.name != "rm" or "deleting is not allowed")
        """
        if format not in _FORMATS:
            raise ValueError(f"format must be one of {_FORMATS}, not {format!r}")
        parsed = _parse_call(call, format)
        try:
            arguments = _arguments(parsed.arguments)
        except ValueError as exc:
            return _error_message(parsed, f"tool {_short(parsed.name)!r}: {exc}")
        try:
            tool_name, schema = self._tool_names.resolve(parsed.name, self._llm_tools)
            if tool_name is None:
                return _error_message(parsed, _unknown_tool(parsed.name, self._tool_names.offered()))
            arguments = drop_optional_nulls(arguments, schema)
            shown = self._tool_to_approve(tool_name) if approve is not None else None
        except (MCPError, ValueError, RecursionError) as exc:  # listing failed: the model reads why and goes on
            return _failed(parsed, exc)
        if approve is not None and shown is not None:  # outside the try: approve's own errors propagate
            refusal = _refusal(approve(shown, arguments))
            if refusal is not None:
                log.info("mcp_sync: tool call %r not approved%s", _short(parsed.name), refusal)
                return _error_message(parsed, f"tool {_short(parsed.name)!r} was not approved{refusal}")
        try:
            result = self.call_tool(
                tool_name, arguments, validate=validate, timeout=timeout, progress=progress, cancel=cancel, meta=meta,
                headers=headers, reset_timeout_on_progress=reset_timeout_on_progress,
                max_total_timeout=max_total_timeout,
            )
        except (MCPError, ValueError, RecursionError) as exc:  # the tool failed: the model reads why and goes on
            return _failed(parsed, exc)
        return _message(parsed, result)


def _failed(call: _ParsedCall, exc: BaseException) -> dict[str, Any]:
    log.info("mcp_sync: tool call %r failed: %s", _short(call.name), exc)
    return _error_message(call, f"tool {_short(call.name)!r} failed: {type(exc).__name__}: {exc}")


def _refusal(answer: Any) -> str | None:
    """None when ``approve`` answered yes, else the text that follows "was not approved"."""
    if isinstance(answer, str):
        return f": {answer}" if answer else ""
    return None if answer else ""


def _unknown_tool(name: str, known: Iterable[str]) -> str:
    """The error for a tool name the model made up, naming the closest few tools (#18.5).

    Names are compared on their first :data:`_MAX_NAME_SHOWN` characters, so the cost is
    bounded by the number of tools whatever the model sent."""
    import difflib

    wanted = name[:_MAX_NAME_SHOWN]
    close = difflib.get_close_matches(wanted, [n[:_MAX_NAME_SHOWN] for n in known], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(n) for n in close)}?" if close else "; list the tools again for their names"
    return f"unknown tool {_short(name)!r}{hint}"
