"""Typed, immutable views of MCP results (attrs classes).

Every model is built from the wire dict by its ``from_wire`` constructor and
keeps that dict as ``.raw``, so a field this version does not model is never
lost. Unknown content block types become :class:`ContentBlock` with ``.type``
and ``.raw``, never dropped. Models are frozen, hence safe to share between
threads.

What a server sends is checked as it is read: a field the spec requires (a
tool's ``name``, a resource's ``uri``...) that is missing or of the wrong type
raises :class:`~mcp_sync.ProtocolError` naming it; an optional field of the
wrong type reads as absent (``None`` or empty; it stays in ``.raw``); ``ttlMs``
is clamped to one day.

Example::

    result = client.call_tool("add", {"a": 1, "b": 2})
    result.text                 # "3"  (the text blocks, joined)
    result.structured_content   # {"result": 3}
"""

from __future__ import annotations

from typing import Any, Generic, Iterator, TypeVar, Union

import attrs

from .exceptions import ProtocolError

_META = "_meta"

#: The longest ``ttlMs`` taken from a server (one day): a longer one is clamped to it,
#: so a result is never cached for ever and a huge number never overflows a clock.
MAX_TTL_MS = 24 * 3600 * 1000


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _opt_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _opt_list(value: Any) -> list[Any] | None:
    return value if isinstance(value, list) else None


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _opt_int(value: Any) -> int | None:
    """An integer field; a bool (an int to Python, not to JSON) or any other type gives None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _required_str(raw: dict[str, Any], key: str, what: str) -> str:
    """A field the spec requires to be a string; anything else is a ProtocolError naming it."""
    value = raw.get(key)
    if not isinstance(value, str):
        got = "nothing" if key not in raw else type(value).__name__
        raise ProtocolError(f"{what}: {key!r} must be a string, got {got}")
    return value


def ttl_ms(value: Any) -> int | None:
    """A server's ``ttlMs``: a non-negative integer clamped to :data:`MAX_TTL_MS`, else None."""
    ttl = _opt_int(value)
    if ttl is None or ttl < 0:
        return None
    return min(ttl, MAX_TTL_MS)


def _join_text(blocks: list[Any]) -> str:
    return "".join(block.text for block in blocks if isinstance(block, TextContent))


# -- content blocks ------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class ContentBlock:
    """A content block of a type this version does not model; see ``.raw``.

    Example::

        for block in result.content:
            if isinstance(block, mcp_sync.ContentBlock):   # a block type this version does not know
                print(block.type, block.raw)
    """

    type: str
    raw: dict[str, Any] = attrs.field(repr=False)

    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.content_block(self), "content")


@attrs.frozen(kw_only=True)
class TextContent:
    """``{"type": "text", "text": ...}``.

    Example::

        texts = [b.text for b in result.content if isinstance(b, mcp_sync.TextContent)]
    """

    text: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    type: str = "text"


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.content_block(self), "content")


@attrs.frozen(kw_only=True)
class ImageContent:
    """An image: base64 ``data`` and ``mime_type``.

    Example::

        for block in client.call_tool("screenshot", {}).content:
            if isinstance(block, mcp_sync.ImageContent):
                save(base64.b64decode(block.data), block.mime_type)   # e.g. "image/png"
    """

    data: str = attrs.field(repr=False)
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    type: str = "image"


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.content_block(self), "content")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from . import _display

        return _display.mimebundle(self._repr_html_(), [self])


@attrs.frozen(kw_only=True)
class AudioContent:
    """Audio: base64 ``data`` and ``mime_type``.

    Example::

        for block in client.call_tool("speak", {"text": "hi"}).content:
            if isinstance(block, mcp_sync.AudioContent):
                save(base64.b64decode(block.data), block.mime_type)   # e.g. "audio/wav"
    """

    data: str = attrs.field(repr=False)
    mime_type: str
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    type: str = "audio"


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.content_block(self), "content")


@attrs.frozen(kw_only=True)
class ResourceLink:
    """A link to a resource the client may read with ``read_resource(link.uri)``.

    Example::

        for block in result.content:
            if isinstance(block, mcp_sync.ResourceLink):
                print(block.name, client.read_resource(block.uri).text)
    """

    uri: str
    name: str | None = None
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    type: str = "resource_link"


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.content_block(self), "content")


@attrs.frozen(kw_only=True)
class TextResourceContents:
    """Text contents of a resource.

    Example::

        for item in client.read_resource("file:///notes.txt").contents:
            if isinstance(item, mcp_sync.TextResourceContents):
                print(item.uri, item.mime_type, item.text)
    """

    uri: str
    text: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.resource_contents(self), "content")


@attrs.frozen(kw_only=True)
class BlobResourceContents:
    """Binary contents of a resource: base64 ``blob``.

    Example::

        for item in client.read_resource("file:///logo.png").contents:
            if isinstance(item, mcp_sync.BlobResourceContents):
                save(base64.b64decode(item.blob), item.mime_type)
    """

    uri: str
    blob: str = attrs.field(repr=False)
    mime_type: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.resource_contents(self), "content")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from . import _display

        return _display.mimebundle(self._repr_html_(), [self])


ResourceContents = Union[TextResourceContents, BlobResourceContents]


@attrs.frozen(kw_only=True)
class EmbeddedResource:
    """A resource's contents embedded in a result.

    Example::

        for block in result.content:
            if isinstance(block, mcp_sync.EmbeddedResource):
                print(block.resource.uri, block.text)   # .text is None for a blob
    """

    resource: ResourceContents
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)
    type: str = "resource"

    @property
    def text(self) -> str | None:
        return self.resource.text if isinstance(self.resource, TextResourceContents) else None


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.content_block(self), "content")


Content = Union[TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource, ContentBlock]


def _wire(block: Any) -> dict[str, Any]:
    """A content block as its wire dict: ``.raw`` when it came from the wire, else built from its fields."""
    raw = getattr(block, "raw", None)
    if raw:
        return dict(raw)
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, (ImageContent, AudioContent)):
        return {"type": block.type, "data": block.data, "mimeType": block.mime_type}
    if isinstance(block, ResourceLink):
        return {"type": "resource_link", "uri": block.uri, "name": block.name}
    if isinstance(block, EmbeddedResource):
        item = block.resource
        body: dict[str, Any] = {"uri": item.uri, "mimeType": item.mime_type}
        body.update({"text": item.text} if isinstance(item, TextResourceContents) else {"blob": item.blob})
        return {"type": "resource", "resource": body}
    return {"type": getattr(block, "type", "unknown")}


def resource_contents_from_wire(raw: dict[str, Any]) -> ResourceContents:
    uri = raw["uri"] if isinstance(raw.get("uri"), str) else ""
    mime_type, meta = _opt_str(raw.get("mimeType")), _opt_dict(raw.get(_META))
    if isinstance(raw.get("blob"), str):
        return BlobResourceContents(uri=uri, blob=raw["blob"], mime_type=mime_type, meta=meta, raw=raw)
    text = raw["text"] if isinstance(raw.get("text"), str) else ""
    return TextResourceContents(uri=uri, text=text, mime_type=mime_type, meta=meta, raw=raw)


def content_from_wire(raw: Any) -> Content:
    """One content block from its wire dict; unknown or malformed types stay generic."""
    if not isinstance(raw, dict):
        return ContentBlock(type="invalid", raw={"value": raw})
    kind, meta, annotations = raw.get("type"), raw.get(_META), raw.get("annotations")
    meta = meta if isinstance(meta, dict) else None  # _opt_dict, inline: every block of every result
    annotations = annotations if isinstance(annotations, dict) else None
    if kind == "text":
        text = raw.get("text")
        if isinstance(text, str):
            return TextContent(text=text, annotations=annotations, meta=meta, raw=raw)
    if kind in ("image", "audio") and isinstance(raw.get("data"), str):
        cls = ImageContent if kind == "image" else AudioContent
        mime_type = _opt_str(raw.get("mimeType")) or ""
        return cls(data=raw["data"], mime_type=mime_type, annotations=annotations, meta=meta, raw=raw)
    if kind == "resource_link" and isinstance(raw.get("uri"), str):
        return ResourceLink(
            uri=raw["uri"],
            name=_opt_str(raw.get("name")),
            title=_opt_str(raw.get("title")),
            description=_opt_str(raw.get("description")),
            mime_type=_opt_str(raw.get("mimeType")),
            meta=meta,
            raw=raw,
        )
    if kind == "resource" and isinstance(raw.get("resource"), dict):
        return EmbeddedResource(
            resource=resource_contents_from_wire(raw["resource"]), annotations=annotations, meta=meta, raw=raw
        )
    return ContentBlock(type=kind if isinstance(kind, str) else "unknown", raw=raw)


# -- listed entities -----------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Tool:
    """A tool the server offers (``tools/list``).

    Example::

        for tool in client.tools():
            print(tool.name, tool.description, tool.input_schema.get("properties"))
    """

    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = attrs.field(factory=dict, repr=False)
    output_schema: dict[str, Any] | None = attrs.field(default=None, repr=False)
    annotations: dict[str, Any] | None = attrs.field(default=None, repr=False)
    icons: list[dict[str, Any]] | None = attrs.field(default=None, repr=False)
    execution: dict[str, Any] | None = attrs.field(default=None, repr=False)
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Tool:
        return cls(
            name=_required_str(raw, "name", "tool"),
            title=_opt_str(raw.get("title")),
            description=_opt_str(raw.get("description")),
            input_schema=_dict(raw.get("inputSchema")),
            output_schema=_opt_dict(raw.get("outputSchema")),
            annotations=_opt_dict(raw.get("annotations")),
            icons=_opt_list(raw.get("icons")),
            execution=_opt_dict(raw.get("execution")),
            meta=_opt_dict(raw.get(_META)),
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.tool_html(self)


@attrs.frozen(kw_only=True)
class Resource:
    """A resource the server offers (``resources/list``).

    Example::

        for resource in client.resources():
            print(resource.uri, resource.name, resource.mime_type)
    """

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: dict[str, Any] | None = attrs.field(default=None, repr=False)
    icons: list[dict[str, Any]] | None = attrs.field(default=None, repr=False)
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Resource:
        return cls(
            uri=_required_str(raw, "uri", "resource"),
            name=_required_str(raw, "name", "resource"),
            title=_opt_str(raw.get("title")),
            description=_opt_str(raw.get("description")),
            mime_type=_opt_str(raw.get("mimeType")),
            size=_opt_int(raw.get("size")),
            annotations=_opt_dict(raw.get("annotations")),
            icons=_opt_list(raw.get("icons")),
            meta=_opt_dict(raw.get(_META)),
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.resources_table([self]), "resource")


@attrs.frozen(kw_only=True)
class ResourceTemplate:
    """A URI template for resources (``resources/templates/list``).

    Example::

        for template in client.resource_templates():
            print(template.uri_template, template.name)   # e.g. "file:///{path}"
    """

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = attrs.field(default=None, repr=False)
    icons: list[dict[str, Any]] | None = attrs.field(default=None, repr=False)
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> ResourceTemplate:
        return cls(
            uri_template=_required_str(raw, "uriTemplate", "resource template"),
            name=_required_str(raw, "name", "resource template"),
            title=_opt_str(raw.get("title")),
            description=_opt_str(raw.get("description")),
            mime_type=_opt_str(raw.get("mimeType")),
            annotations=_opt_dict(raw.get("annotations")),
            icons=_opt_list(raw.get("icons")),
            meta=_opt_dict(raw.get(_META)),
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.wrap(_display.templates_table([self]), "template")


@attrs.frozen(kw_only=True)
class PromptArgument:
    """One argument a prompt takes.

    Example::

        for prompt in client.prompts():
            required = [arg.name for arg in prompt.arguments if arg.required]
    """

    name: str
    description: str | None = None
    required: bool = False


@attrs.frozen(kw_only=True)
class Prompt:
    """A prompt template the server offers (``prompts/list``).

    Example::

        for prompt in client.prompts():
            print(prompt.name, prompt.description, [arg.name for arg in prompt.arguments])
    """

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] = attrs.field(factory=list)
    icons: list[dict[str, Any]] | None = attrs.field(default=None, repr=False)
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Prompt:
        name = _required_str(raw, "name", "prompt")
        arguments = [  # optional: a value that is not a list is taken as none (it stays in .raw)
            PromptArgument(
                name=_required_str(arg, "name", f"prompt {name!r}: argument"),
                description=_opt_str(arg.get("description")),
                required=arg.get("required") is True,
            )
            for arg in _opt_list(raw.get("arguments")) or []
            if isinstance(arg, dict)
        ]
        return cls(
            name=name,
            title=_opt_str(raw.get("title")),
            description=_opt_str(raw.get("description")),
            arguments=arguments,
            icons=_opt_list(raw.get("icons")),
            meta=_opt_dict(raw.get(_META)),
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.prompt_html(self)


T = TypeVar("T")


@attrs.frozen(kw_only=True)
class Page(Generic[T]):
    """One page of a list: ``items``, ``next_cursor`` (None at the end), cache hints.

    In Jupyter a page displays as a table (tools: name, description, parameters with
    their types and ``*`` for required ones; likewise resources, templates, prompts).

    Example::

        page = client.list_tools()
        names = [tool.name for tool in page.items]      # a Page also iterates over its items
        if page.next_cursor is not None:
            page = client.list_tools(cursor=page.next_cursor)
    """

    items: list[T]
    next_cursor: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)


    def _repr_html_(self) -> str:
        from . import _display

        return _display.page_html(self)


class Listing(Iterator[T]):
    """A lazy iterator over every item of a list (``client.tools()``, ``resources()``,
    ``resource_templates()``, ``prompts()``): pages are fetched as you iterate.

    :meth:`show` fetches what is left and returns it as one :class:`Page`, which displays as a
    table in Jupyter (the iterator itself displays nothing, so showing it fetches nothing).

    Example::

        for tool in client.tools():          # lazily, page by page
            print(tool.name)
        client.tools().show()                # in a notebook: every tool, as a table
    """

    __slots__ = ("_items", "_kind")

    def __init__(self, items: Iterator[T], kind: str = "items") -> None:
        self._items = items
        self._kind = kind

    def __iter__(self) -> Listing[T]:
        return self

    def __next__(self) -> T:
        return next(self._items)

    def show(self) -> Page[T]:
        """Every item not yet iterated over, fetched now, as one :class:`Page` (``next_cursor``
        None). In Jupyter the page displays as a table (the first 200 rows, then a note).

        Example: ``client.tools().show()`` (the last line of a cell: a table of every tool)
        """
        return Page(items=list(self._items))

    def close(self) -> None:
        """Stop fetching: a page not yet fetched never will be.

        Example: ``tools = client.tools(); first = next(tools); tools.close()``
        """
        close = getattr(self._items, "close", None)
        if close is not None:
            close()

    def __repr__(self) -> str:
        return f"<mcp_sync.Listing of {self._kind} (lazy; .show() fetches and displays them all)>"


# -- operation results ---------------------------------------------------------------


@attrs.frozen(kw_only=True)
class CallToolResult:
    """The result of ``call_tool``: ``content`` blocks, ``structured_content``, ``is_error``.

    Example::

        result = client.call_tool("add", {"a": 1, "b": 2})
        if not result.is_error:
            print(result.text, result.structured_content)   # "3" {"result": 3}
    """

    content: list[Content] = attrs.field(factory=list)
    structured_content: Any = None
    is_error: bool = False
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text content blocks, joined."""
        return _join_text(self.content)

    @property
    def data(self) -> Any:
        """The structured content as the tool meant it: a lone ``{"result": x}`` (what SDK servers
        send for a tool whose return type is not an object) is ``x``; ``None`` when there is none.

        Example::

            client.call_tool("add", {"a": 1, "b": 2}).data        # 3 (structuredContent {"result": 3})
            client.call_tool("weather", {"city": "Oslo"}).data    # {"city": "Oslo", "temp": 3.5}
        """
        value = self.structured_content
        if isinstance(value, dict) and len(value) == 1 and "result" in value:
            return value["result"]
        return value

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> CallToolResult:
        content, meta = raw.get("content"), raw.get(_META)
        return cls(
            content=list(map(content_from_wire, content)) if isinstance(content, list) else [],
            structured_content=raw.get("structuredContent"),
            is_error=raw.get("isError") is True,
            meta=meta if isinstance(meta, dict) else None,
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.call_tool_result_html(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from . import _display

        return _display.mimebundle(self._repr_html_(), self.content)


@attrs.frozen(kw_only=True)
class ReadResourceResult:
    """The result of ``read_resource``: ``contents`` (text or blob).

    Example::

        result = client.read_resource("file:///notes.txt")
        print(result.text)   # the text contents joined; result.contents has each item
    """

    contents: list[ResourceContents] = attrs.field(factory=list)
    ttl_ms: int | None = None
    cache_scope: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def text(self) -> str:
        """The text contents, joined."""
        return "".join(c.text for c in self.contents if isinstance(c, TextResourceContents))

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> ReadResourceResult:
        contents = raw.get("contents")
        return cls(
            contents=[resource_contents_from_wire(c) for c in contents if isinstance(c, dict)]
            if isinstance(contents, list)
            else [],
            ttl_ms=ttl_ms(raw.get("ttlMs")),
            cache_scope=_opt_str(raw.get("cacheScope")),
            meta=_opt_dict(raw.get(_META)),
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.read_resource_result_html(self)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        from . import _display

        return _display.mimebundle(self._repr_html_(), self.contents)


@attrs.frozen(kw_only=True)
class PromptMessage:
    """One message of a prompt: ``role`` and one ``content`` block.

    Example::

        for message in client.get_prompt("greet", {"name": "Ada"}).messages:
            print(message.role, message.text)   # .text is None unless .content is TextContent
    """

    role: str
    content: Content

    @property
    def text(self) -> str | None:
        return self.content.text if isinstance(self.content, TextContent) else None

    def _repr_html_(self) -> str:
        from . import _display

        return _display.get_prompt_result_html(GetPromptResult(messages=[self]))


@attrs.frozen(kw_only=True)
class GetPromptResult:
    """The result of ``get_prompt``: ``description`` and ``messages``.

    Example::

        prompt = client.get_prompt("greet", {"name": "Ada"})
        chat = [{"role": m.role, "content": m.text} for m in prompt.messages]
    """

    messages: list[PromptMessage] = attrs.field(factory=list)
    description: str | None = None
    meta: dict[str, Any] | None = attrs.field(default=None, repr=False)
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    def to_messages(self, format: str = "openai") -> list[dict[str, Any]]:
        """The prompt's messages as chat messages for ``format`` ``"openai"`` (Chat Completions),
        ``"anthropic"`` (Messages) or ``"gemini"`` (``contents``): plain dicts, images and embedded
        resources in each provider's shape (an image as a data URL / base64 ``image`` block /
        ``inline_data``; an embedded text resource as text, for Anthropic a ``document``),
        consecutive messages of one role merged.

        Example::

            messages = client.get_prompt("greet", {"name": "Ada"}).to_messages(format="anthropic")
            reply = anthropic.Anthropic().messages.create(model=..., max_tokens=1024, messages=messages)
        """
        from ._chat import chat_messages

        return chat_messages(((m.role, _wire(m.content)) for m in self.messages), format)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> GetPromptResult:
        messages = raw.get("messages")
        return cls(
            messages=[
                PromptMessage(
                    role=_required_str(m, "role", "prompt message"), content=content_from_wire(m.get("content"))
                )
                for m in messages
                if isinstance(m, dict)
            ]
            if isinstance(messages, list)
            else [],
            description=_opt_str(raw.get("description")),
            meta=_opt_dict(raw.get(_META)),
            raw=raw,
        )


    def _repr_html_(self) -> str:
        from . import _display

        return _display.get_prompt_result_html(self)


@attrs.frozen(kw_only=True)
class Completion:
    """The result of ``complete``: suggested ``values``, ``total``, ``has_more``.

    Example::

        completion = client.complete({"type": "ref/prompt", "name": "greet"}, ("name", "Al"))
        print(completion.values, completion.total, completion.has_more)
    """

    values: list[str] = attrs.field(factory=list)
    total: int | None = None
    has_more: bool = False
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> Completion:
        completion = _dict(raw.get("completion"))
        values = completion.get("values")
        return cls(
            values=[v for v in values if isinstance(v, str)] if isinstance(values, list) else [],
            total=_opt_int(completion.get("total")),
            has_more=completion.get("hasMore") is True,
            raw=raw,
        )


@attrs.frozen(kw_only=True)
class DiscoverResult:
    """What ``server/discover`` told about a modern server.

    Example::

        info = client.discover()   # modern servers only
        print(info.supported_versions, info.server_info, sorted(info.capabilities))
    """

    supported_versions: list[str] = attrs.field(factory=list)
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    ttl_ms: int | None = None
    cache_scope: str | None = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> DiscoverResult:
        versions = raw.get("supportedVersions")
        info = _dict(raw.get(_META)).get("io.modelcontextprotocol/serverInfo")
        return cls(
            supported_versions=[v for v in versions if isinstance(v, str)] if isinstance(versions, list) else [],
            capabilities=_dict(raw.get("capabilities")),
            server_info=info if isinstance(info, dict) else None,
            instructions=_opt_str(raw.get("instructions")),
            ttl_ms=ttl_ms(raw.get("ttlMs")),
            cache_scope=_opt_str(raw.get("cacheScope")),
            raw=raw,
        )


@attrs.frozen(kw_only=True)
class InitializeResult:
    """What a legacy server answered to ``initialize``.

    Example::

        if client.era == "legacy":   # client.server_info is the raw initialize answer
            init = mcp_sync.InitializeResult.from_wire(client.server_info)
            print(init.protocol_version, init.server_info, init.instructions)
    """

    protocol_version: str
    capabilities: dict[str, Any] = attrs.field(factory=dict)
    server_info: dict[str, Any] | None = None
    instructions: str | None = None
    raw: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @classmethod
    def from_wire(cls, raw: dict[str, Any]) -> InitializeResult:
        info = raw.get("serverInfo")
        return cls(
            protocol_version=_opt_str(raw.get("protocolVersion")) or "",  # the handshake refuses ""
            capabilities=_dict(raw.get("capabilities")),
            server_info=info if isinstance(info, dict) else None,
            instructions=_opt_str(raw.get("instructions")),
            raw=raw,
        )
