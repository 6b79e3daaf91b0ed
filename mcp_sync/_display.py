"""HTML views of mcp_sync objects for Jupyter (IPython's ``_repr_html_`` / ``_repr_mimebundle_``).

The only place mcp_sync builds HTML. Everything a server sends is untrusted here:

- every string from a server goes through :func:`_text` (control and bidirectional characters
  made visible by :func:`mcp_sync._terminal.escape`, then ``html.escape``); no ``href``, ``style``
  or event attribute is ever built from server text;
- only raster images (:data:`RASTER_IMAGES`) and audio (:data:`AUDIO`) are inlined, as ``data:``
  URLs built from base64 checked by :func:`_base64` (linear) and only when the decoded size is at
  most :data:`MAX_MEDIA_BYTES`; SVG (it can carry script) and other types are shown as text or a note;
- tables stop after :data:`MAX_ROWS` rows, texts after :data:`MAX_TEXT` characters, results after
  :data:`MAX_BLOCKS` blocks, each with a note saying how much was left out.

Every function is linear in the size of its input. Nothing here imports IPython or an HTML library.
"""

from __future__ import annotations

import html
import json
from typing import Any, Iterable

from ._terminal import escape

#: Rows of a table shown before "... N more".
MAX_ROWS = 200
#: Characters of one text shown before "... N more characters".
MAX_TEXT = 20_000
#: Content blocks (or resource contents, or prompt messages) shown of one result.
MAX_BLOCKS = 200
#: The largest image or audio inlined, decoded (5 MB); a larger one is a note with its size.
MAX_MEDIA_BYTES = 5 * 1024 * 1024
#: Image types inlined: raster formats, which cannot carry script. Not SVG.
RASTER_IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
#: Audio types given a player.
AUDIO = frozenset({"audio/wav", "audio/x-wav", "audio/wave", "audio/mpeg", "audio/mp3", "audio/ogg",
                   "audio/webm", "audio/flac", "audio/aac", "audio/mp4"})
#: MIME types that go into the mimebundle beside text/html (what Jupyter shows without HTML).
BUNDLE_IMAGES = frozenset({"image/png", "image/jpeg"})

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_NOT_B64 = str.maketrans("", "", _B64)
_LINE_BREAKS = str.maketrans("", "", "\r\n")

#: The views' CSS. Cells name the class twice: JupyterLab's own rule for output tables
#: (``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td``, right-aligned) weighs two classes,
#: and this style, coming later in the page, wins only at equal weight.
STYLE = (
    "<style>.mcp-sync table{border-collapse:collapse;margin:2px 0}"
    ".mcp-sync.mcp-sync th,.mcp-sync.mcp-sync td"
    "{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}"
    ".mcp-sync .mcp-sync-note{color:#777;font-style:italic}"
    ".mcp-sync .mcp-sync-error{border-left:4px solid #c33;padding-left:6px}"
    ".mcp-sync pre{white-space:pre-wrap;margin:2px 0}</style>"
)


# -- text -----------------------------------------------------------------------------


def _text(value: Any, limit: int = MAX_TEXT, one_line: bool = False) -> str:
    """``value`` (server text) as HTML text: made visible, escaped, truncated with a note."""
    text = value if isinstance(value, str) else str(value)
    more = len(text) - limit
    if more > 0:
        text = text[:limit]
    out = html.escape(escape(text, one_line=one_line), quote=True)
    if more > 0:
        out += f'<span class="mcp-sync-note"> \u2026 {more:,} more characters</span>'
    return out


def _more_note(more: int, what: str) -> str:
    return "<p>" + _note(f"\u2026 {more:,} more {what}") + "</p>"


def _note(text: str) -> str:
    """A note of ours (never server text unless escaped by the caller)."""
    return f'<span class="mcp-sync-note">{text}</span>'


def _pre(value: Any) -> str:
    return f"<pre>{_text(value)}</pre>"


_ENCODER = json.JSONEncoder(indent=2, ensure_ascii=False, default=repr)


def _json(value: Any) -> str:
    """``value`` as indented JSON text (escaped), written only up to :data:`MAX_TEXT` characters
    (the cost follows what is shown, not the value's size); a cycle or a value nested too deep
    for the encoder is a note."""
    parts: list[str] = []
    size = 0
    try:
        for chunk in _ENCODER.iterencode(value):
            parts.append(chunk)
            size += len(chunk)
            if size > MAX_TEXT:
                break
    except (ValueError, TypeError, RecursionError):
        return _note("a value that cannot be shown as JSON (a cycle, or nested too deep)")
    text = "".join(parts)
    if size <= MAX_TEXT:
        return _pre(text)
    cut = _note(f" \u2026 cut at {MAX_TEXT:,} characters")
    return f"<pre>{_text(text[:MAX_TEXT], MAX_TEXT)}{cut}</pre>"


def _details(summary: str, body: str, open_: bool = False) -> str:
    """A collapsible section; ``summary`` is HTML built by the caller."""
    return f"<details{' open' if open_ else ''}><summary>{summary}</summary>{body}</details>"


def wrap(body: str, kind: str) -> str:
    return f'<div class="mcp-sync mcp-sync-{kind}">{STYLE}{body}</div>'


def _size(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} bytes"  # pragma: no cover


# -- media ----------------------------------------------------------------------------


def _base64(data: Any) -> tuple[str, int] | None:
    """``data`` as clean base64 and its decoded size, or None when it is not valid base64.

    Line breaks are dropped; otherwise only the 64 letters and up to two ``=`` at the end
    (the length a multiple of 4). Linear: one ``translate`` and a few slices.
    """
    if not isinstance(data, str):
        return None
    clean = data.translate(_LINE_BREAKS)
    body = clean.rstrip("=")
    padding = len(clean) - len(body)
    if padding > 2 or len(clean) % 4 or body.translate(_NOT_B64):
        return None
    return clean, len(clean) // 4 * 3 - padding


def _mime(value: Any) -> str:
    """A MIME type, lower case, without parameters (``image/PNG; x=1`` -> ``image/png``)."""
    return value.split(";", 1)[0].strip().lower() if isinstance(value, str) else ""


def inline_media(data: Any, mime_type: Any) -> tuple[str, str] | str:
    """``(mime, clean base64)`` when the media may be inlined, else the HTML of a note saying why."""
    mime = _mime(mime_type)
    kind = "image" if mime.startswith("image/") else "audio" if mime.startswith("audio/") else "data"
    if mime not in RASTER_IMAGES and mime not in AUDIO:
        why = " (SVG can carry script)" if mime == "image/svg+xml" else ""
        return _note(f"{kind} of type {_text(mime_type or '?', 200, one_line=True)} not shown{why}")
    checked = _base64(data)
    if checked is None:
        return _note(f"{kind} ({_text(mime, 200, one_line=True)}) not shown: its data is not valid base64")
    clean, size = checked
    if size > MAX_MEDIA_BYTES:
        return _note(f"{kind} ({mime}, {_size(size)}) not shown: larger than {_size(MAX_MEDIA_BYTES)}")
    return mime, clean


def _image(data: Any, mime_type: Any) -> str:
    media = inline_media(data, mime_type)
    if isinstance(media, str):
        if _mime(mime_type) == "image/svg+xml":
            checked = _base64(data)
            if checked is not None and checked[1] <= MAX_MEDIA_BYTES:
                import base64

                source = base64.b64decode(checked[0]).decode("utf-8", "replace")
                return media + _details("SVG source (as text)", _pre(source))
        return media
    mime, clean = media
    if mime not in RASTER_IMAGES:
        return _note(f"{mime} data where an image was expected: not shown")
    return f'<img src="data:{mime};base64,{clean}" style="max-width:100%">'


def _audio(data: Any, mime_type: Any) -> str:
    media = inline_media(data, mime_type)
    if isinstance(media, str):
        return media
    mime, clean = media
    if mime not in AUDIO:
        return _note(f"{mime} data where audio was expected: not shown")
    return f'<audio controls src="data:{mime};base64,{clean}"></audio>'


def bundle_image(blocks: Iterable[Any]) -> tuple[str, str] | None:
    """The one PNG/JPEG image among ``blocks`` (``(mime, base64)``), if exactly one may be inlined."""
    found: list[tuple[str, str]] = []
    for block in blocks:
        mime = getattr(block, "mime_type", None)
        if getattr(block, "type", None) == "image":
            data = getattr(block, "data", None)
        elif hasattr(block, "blob") and _mime(mime) in BUNDLE_IMAGES:  # a resource's image
            data = block.blob
        else:
            continue
        media = inline_media(data, mime)
        if not isinstance(media, str) and media[0] in BUNDLE_IMAGES:
                found.append(media)
                if len(found) > 1:
                    return None
    return found[0] if found else None


# -- content blocks -------------------------------------------------------------------


def _limited(items: list[Any], limit: int, what: str) -> tuple[list[Any], str]:
    """The first ``limit`` items and the note for the rest ("" when none is left out)."""
    more = len(items) - limit
    return (items[:limit], _more_note(more, what)) if more > 0 else (items, "")


def resource_contents(item: Any) -> str:
    head = f"<div><code>{_text(getattr(item, 'uri', ''), 2000, one_line=True)}</code>"
    mime = getattr(item, "mime_type", None)
    if mime:
        head += f" {_note(_text(mime, 200, one_line=True))}"
    head += "</div>"
    if hasattr(item, "text"):
        return head + _pre(item.text)
    blob = getattr(item, "blob", None)
    if _mime(mime).startswith("image/"):
        return head + _image(blob, mime)
    if _mime(mime).startswith("audio/"):
        return head + _audio(blob, mime)
    checked = _base64(blob)
    size = f"{_size(checked[1])} of binary data" if checked else "binary data (not valid base64)"
    return head + _note(size)


def content_block(block: Any) -> str:
    """One content block as HTML."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return _pre(block.text)
    if kind == "image":
        return f"<div>{_image(block.data, block.mime_type)}</div>"
    if kind == "audio":
        return f"<div>{_audio(block.data, block.mime_type)}</div>"
    if kind == "resource_link":
        name = block.title or block.name
        label = f"<b>{_text(name, 500, one_line=True)}</b> " if name else ""
        desc = f"<br>{_text(block.description, 2000)}" if block.description else ""
        mime = f" {_note(_text(block.mime_type, 200, one_line=True))}" if block.mime_type else ""
        return f"<div>\U0001f517 {label}<code>{_text(block.uri, 2000, one_line=True)}</code>{mime}{desc}</div>"
    if kind == "resource" and hasattr(block, "resource"):
        return f"<div>{_note('embedded resource')} {resource_contents(block.resource)}</div>"
    raw = getattr(block, "raw", None)
    return _details(f"{_note('content of type')} {_text(kind, 200, one_line=True)}", _json(raw))


def _blocks(blocks: list[Any]) -> str:
    shown, note = _limited(blocks, MAX_BLOCKS, "content blocks")
    return "".join(content_block(block) for block in shown) + note


# -- schemas and tables ---------------------------------------------------------------


def schema_type(schema: Any) -> str:
    """A short type for a JSON Schema (``string``, ``array of integer``, ``"a" | "b"``, ``int | null``)."""
    if not isinstance(schema, dict):
        return "any"
    if isinstance(schema.get("enum"), list):
        values = schema["enum"][:8]
        more = " | \u2026" if len(schema["enum"]) > 8 else ""
        return " | ".join(json.dumps(v, ensure_ascii=False, default=repr)[:60] for v in values) + more
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind[:8])
    if kind == "array":
        items = schema.get("items")
        inner = items.get("type") if isinstance(items, dict) else None
        return f"array of {inner}" if isinstance(inner, str) else "array"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return " | ".join(
                str(o.get("type", "\u2026")) if isinstance(o, dict) else "?" for o in options[:8]
            )
    return "any"


def _params(schema: Any) -> list[tuple[str, Any, bool]]:
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = schema.get("required")
    required = set(r for r in required if isinstance(r, str)) if isinstance(required, list) else set()
    return [(str(name), spec, name in required) for name, spec in schema["properties"].items()]


_REQUIRED = '<b title="required">*</b>'


def _param_summary(schema: Any) -> str:
    params, _ = _limited(_params(schema), 50, "")
    if not params:
        return _note("none")
    parts = [
        f"<code>{_text(name, 200, one_line=True)}</code>{_REQUIRED if required else ''}: "
        f"<i>{_text(schema_type(spec), 200, one_line=True)}</i>"
        for name, spec, required in params
    ]
    more = len(_params(schema)) - len(params)
    return ", ".join(parts) + (_note(f", \u2026 {more} more") if more > 0 else "")


def _table(cls: str, header: list[str], rows: list[list[str]], total: int, what: str) -> str:
    """A table of ``rows`` (cells are HTML); a note after it when ``total`` is more than shown."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(f'<tr class="{cls}-row">' + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    more = total - len(rows)
    note = _more_note(more, what) if more > 0 else ""
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{note}'


def _desc(value: Any) -> str:
    return _text(value, 2000) if value else ""


def tools_table(tools: list[Any]) -> str:
    """A table of tools: name (title), description, parameters (types, ``*`` required)."""
    shown = tools[:MAX_ROWS]
    rows = [
        [
            f"<code>{_text(t.name, 500, one_line=True)}</code>"
            + (f"<br>{_text(t.title, 500, one_line=True)}" if t.title else ""),
            _desc(t.description),
            _param_summary(t.input_schema),
        ]
        for t in shown
    ]
    return _table("mcp-sync-tools", ["tool", "description", f"parameters ({_REQUIRED} required)"],
                  rows, len(tools), "tools")


def resources_table(resources: list[Any]) -> str:
    shown = resources[:MAX_ROWS]
    rows = [
        [f"<code>{_text(r.uri, 2000, one_line=True)}</code>", _text(r.title or r.name, 500, one_line=True),
         _text(r.mime_type or "", 200, one_line=True), _desc(r.description),
         _size(r.size) if isinstance(r.size, int) and r.size >= 0 else ""]
        for r in shown
    ]
    return _table("mcp-sync-resources", ["uri", "name", "type", "description", "size"], rows, len(resources),
                  "resources")


def templates_table(templates: list[Any]) -> str:
    shown = templates[:MAX_ROWS]
    rows = [
        [f"<code>{_text(t.uri_template, 2000, one_line=True)}</code>", _text(t.title or t.name, 500, one_line=True),
         _text(t.mime_type or "", 200, one_line=True), _desc(t.description)]
        for t in shown
    ]
    return _table("mcp-sync-templates", ["uri template", "name", "type", "description"], rows, len(templates),
                  "templates")


def _prompt_args(prompt: Any) -> str:
    args = prompt.arguments[:50]
    if not args:
        return _note("none")
    out = ", ".join(f"<code>{_text(a.name, 200, one_line=True)}</code>{_REQUIRED if a.required else ''}"
                    for a in args)
    return out + (_note(f", \u2026 {len(prompt.arguments) - 50} more") if len(prompt.arguments) > 50 else "")


def prompts_table(prompts: list[Any]) -> str:
    shown = prompts[:MAX_ROWS]
    rows = [
        [f"<code>{_text(p.name, 500, one_line=True)}</code>"
         + (f"<br>{_text(p.title, 500, one_line=True)}" if p.title else ""),
         _desc(p.description), _prompt_args(p)]
        for p in shown
    ]
    return _table("mcp-sync-prompts", ["prompt", "description", f"arguments ({_REQUIRED} required)"], rows,
                  len(prompts), "prompts")


# -- the objects ----------------------------------------------------------------------


_TABLES = (("input_schema", tools_table), ("uri_template", templates_table), ("arguments", prompts_table),
           ("size", resources_table))


def items_html(items: list[Any], kind: str = "items") -> str:
    """A list of tools, resources, templates or prompts as a table (by the type of the first item)."""
    first = type(items[0]) if items else None
    if first is not None and all(type(item) is first for item in items):  # the models, told by their fields
        for field, table in _TABLES:
            if field in getattr(first, "__slots__", ()) and hasattr(first, "from_wire"):
                return table(items)
    if not items:
        return _note(f"no {kind}")
    shown, note = _limited(items, MAX_ROWS, kind)
    return "<ul>" + "".join(f"<li>{_text(repr(item), 2000)}</li>" for item in shown) + "</ul>" + note


def page_html(page: Any) -> str:
    body = items_html(page.items)
    if page.next_cursor is not None:
        body += f"<p>{_note('more on the next page (next_cursor set)')}</p>"
    return wrap(body, "page")


def tool_html(tool: Any) -> str:
    head = f"<b>\U0001f527 <code>{_text(tool.name, 500, one_line=True)}</code></b>"
    if tool.title:
        head += f" {_text(tool.title, 500, one_line=True)}"
    body = f"<div>{head}</div>"
    if tool.description:
        body += f"<div>{_text(tool.description)}</div>"
    params = _params(tool.input_schema)
    shown = params[:MAX_ROWS]
    rows = [
        [f"<code>{_text(name, 500, one_line=True)}</code>", _text(schema_type(spec), 500, one_line=True),
         _REQUIRED if required else "",
         _desc(spec.get("description")) if isinstance(spec, dict) else "",
         _text(json.dumps(spec["default"], ensure_ascii=False, default=repr), 500, one_line=True)
         if isinstance(spec, dict) and "default" in spec else ""]
        for name, spec, required in shown
    ]
    body += (_table("mcp-sync-params", ["parameter", "type", "required", "description", "default"], rows,
                    len(params), "parameters") if params else f"<div>{_note('no parameters')}</div>")
    if tool.output_schema is not None:
        body += _details("output schema", _json(tool.output_schema))
    if tool.annotations:
        body += _details("annotations", _json(tool.annotations))
    return wrap(body, "tool")


def call_tool_result_html(result: Any) -> str:
    body = ""
    if result.is_error:
        body += f"<div><b>{_note('the tool reported an error (isError)')}</b></div>"
    body += _blocks(result.content)
    if result.structured_content is not None:
        body += _details("structured content", _json(result.structured_content), open_=not result.content)
    if not result.content and result.structured_content is None:
        body += _note("no content")
    return wrap(f'<div class="mcp-sync-error">{body}</div>' if result.is_error else body, "result")


def read_resource_result_html(result: Any) -> str:
    shown, note = _limited(result.contents, MAX_BLOCKS, "contents")
    body = "".join(f"<div>{resource_contents(item)}</div>" for item in shown) + note
    return wrap(body or _note("no contents"), "resource")


def prompt_html(prompt: Any) -> str:
    body = f"<div><b>\U0001f4ac <code>{_text(prompt.name, 500, one_line=True)}</code></b>"
    body += f" {_text(prompt.title, 500, one_line=True)}</div>" if prompt.title else "</div>"
    if prompt.description:
        body += f"<div>{_text(prompt.description)}</div>"
    args = prompt.arguments[:MAX_ROWS]
    rows = [[f"<code>{_text(a.name, 500, one_line=True)}</code>", _REQUIRED if a.required else "",
             _desc(a.description)] for a in args]
    if rows:
        body += _table("mcp-sync-params", ["argument", "required", "description"], rows, len(prompt.arguments),
                       "arguments")
    return wrap(body, "prompt")


def get_prompt_result_html(result: Any) -> str:
    body = f"<div>{_text(result.description)}</div>" if result.description else ""
    shown, note = _limited(result.messages, MAX_BLOCKS, "messages")
    for message in shown:
        role = _text(message.role, 100, one_line=True)
        body += (f'<div class="mcp-sync-message"><b>{role}</b>'
                 f'<div style="margin-left:1em">{content_block(message.content)}</div></div>')
    return wrap(body + note or _note("no messages"), "prompt-result")


def error_html(error: BaseException) -> str:
    name = type(error).__name__
    message = getattr(error, "message", None)
    message = message if isinstance(message, str) else str(error)
    body = f"<div><b>{html.escape(name)}</b>: {_text(message, 2000)}</div>"
    facts = [(key, getattr(error, key, None)) for key in ("method", "code", "status", "request_id")]
    listed = ", ".join(f"{key}={_text(repr(value), 300, one_line=True)}" for key, value in facts if value is not None)
    if listed:
        body += f"<div>{_note(listed)}</div>"
    data = getattr(error, "data", None)
    if data is not None:
        body += _details("data", _json(data))
    return wrap(f'<div class="mcp-sync-error">{body}</div>', "error")


def client_html(name: str, state: str, negotiated: Any, target: str, pid: int | None) -> str:
    """A client: its name and state; once connected what it negotiated and what the server offers."""
    rows = [["client", f"<code>{_text(name, 500, one_line=True)}</code> ({_text(state, 100, one_line=True)})"],
            ["target", _text(target, 2000, one_line=True) + (f" (pid {pid})" if pid is not None else "")]]
    if negotiated is None:
        rows.append(["server", _note("not connected yet (it connects on first use)")])
    else:
        impl = negotiated.server_implementation if isinstance(negotiated.server_implementation, dict) else {}
        server = " ".join(str(impl[k]) for k in ("title", "name", "version") if isinstance(impl.get(k), str))
        rows.append(["server", _text(server, 500, one_line=True) if server else _note("unnamed")])
        rows.append(["protocol", f"{_text(negotiated.era, 20)} {_text(negotiated.protocol_version, 50)}"])
        caps = negotiated.server_capabilities if isinstance(negotiated.server_capabilities, dict) else {}
        offers = ", ".join(_text(key, 100, one_line=True) for key in list(caps)[:50])
        rows.append(["offers", offers or _note("nothing declared")])
        if negotiated.instructions:
            rows.append(["instructions", _details("show", _pre(negotiated.instructions))])
    body = '<table class="mcp-sync-client">' + "".join(
        f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows) + "</table>"
    return wrap(body, "client")


def mimebundle(html_text: str, blocks: Iterable[Any]) -> dict[str, Any]:
    """``text/html`` and, when ``blocks`` hold exactly one PNG or JPEG image that may be inlined,
    that image under its MIME type (what a front end without HTML shows). IPython adds ``text/plain``."""
    bundle: dict[str, Any] = {"text/html": html_text}
    image = bundle_image(blocks)
    if image is not None:
        bundle[image[0]] = image[1]
    return bundle
