"""MCP messages (prompt messages, sampling messages) as the chat messages LLM APIs take (#20.4, #20.3).

Plain dicts, no provider SDK. Each message is ``(role, content)`` with ``content`` one MCP content
block or a list of them, as wire dicts. Consecutive messages of one role are merged (Anthropic and
Gemini want roles to alternate). In each provider's shape:

- text: OpenAI a string (or ``{"type": "text"}`` parts), Anthropic ``{"type": "text"}``, Gemini ``{"text"}``;
- images: OpenAI ``image_url`` with a data URL, Anthropic a base64 ``image`` block (JPEG, PNG, GIF,
  WebP), Gemini ``inline_data``; audio: OpenAI ``input_audio`` (wav, mp3), Gemini ``inline_data``;
- an embedded resource: its text (OpenAI and Gemini: a text part, Anthropic: a text ``document``
  titled with its URI); a blob: an image as above, a PDF as OpenAI ``file`` / Anthropic
  ``document`` / Gemini ``inline_data``; a resource link: a line naming its URI;
- sampling's ``tool_use`` / ``tool_result`` blocks: OpenAI ``tool_calls`` and ``role: tool``
  messages, Anthropic ``tool_use`` / ``tool_result`` blocks, Gemini ``function_call`` /
  ``function_response`` parts.

What a provider cannot take in a message of that role (an image in an assistant message for
OpenAI and Anthropic) becomes a short text saying what it was. Linear in the messages' size.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

FORMATS = ("openai", "anthropic", "gemini")
_ANTHROPIC_IMAGES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_OPENAI_AUDIO = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
_PDF = "application/pdf"


def chat_messages(messages: Iterable[tuple[str, Any]], format: str) -> list[dict[str, Any]]:
    """``(role, content)`` pairs (MCP wire content: a block or a list of blocks) as ``format``'s messages.

    Example::

        chat_messages([("user", {"type": "text", "text": "hi"})], "anthropic")
        # [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    """
    if format not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
    merged: list[tuple[str, list[dict[str, Any]]]] = []
    for role, content in messages:
        blocks = [block for block in (content if isinstance(content, list) else [content]) if isinstance(block, dict)]
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, list(blocks)))
    out: list[dict[str, Any]] = []
    if format == "gemini":  # a function_response names its function: the tool_use blocks' names, by id
        names = {_str(block.get("id")): _str(block.get("name"))
                 for _, blocks in merged for block in blocks if block.get("type") == "tool_use"}
        for role, blocks in merged:
            out.extend(_gemini(role, blocks, names))
        return out
    convert = _openai if format == "openai" else _anthropic
    for role, blocks in merged:
        out.extend(convert(role, blocks))
    return out


# -- what every provider shares -------------------------------------------------------------------


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _resource(block: dict[str, Any]) -> dict[str, Any]:
    resource = block.get("resource")
    return resource if isinstance(resource, dict) else {}


def described(block: dict[str, Any]) -> str:
    """A block no provider part fits, in words (what it was, never its bytes)."""
    kind = block.get("type")
    if kind in ("image", "audio"):
        size = len(_str(block.get("data"))) * 3 // 4
        return f"[{kind}: {_str(block.get('mimeType')) or 'unknown type'}, {size} bytes]"
    if kind == "resource_link":
        name = _str(block.get("name"))
        return f"[resource link: {_str(block.get('uri'))}" + (f" ({name})" if name else "") + "]"
    if kind == "resource":
        resource = _resource(block)
        if isinstance(resource.get("text"), str):
            return f"[resource {_str(resource.get('uri'))}]\n{resource['text']}"
        size = len(_str(resource.get("blob"))) * 3 // 4
        return f"[resource {_str(resource.get('uri'))}: {_str(resource.get('mimeType')) or 'binary'}, {size} bytes]"
    if kind == "text":
        return _str(block.get("text"))
    if kind == "tool_result":
        return tool_result_text(block)
    return json.dumps(block, default=str)


def tool_result_text(block: dict[str, Any]) -> str:
    """A sampling ``tool_result`` block's content as one text."""
    content = block.get("content")
    parts = [described(item) for item in (content if isinstance(content, list) else []) if isinstance(item, dict)]
    if not parts and block.get("structuredContent") is not None:
        parts.append(json.dumps(block["structuredContent"], default=str))
    return "\n".join(part for part in parts if part)


def _blob(block: dict[str, Any]) -> tuple[str, str] | None:
    """(mime type, base64 data) of an image, audio or blob resource block, else None."""
    if block.get("type") in ("image", "audio") and isinstance(block.get("data"), str):
        return _str(block.get("mimeType")), block["data"]
    if block.get("type") == "resource":
        resource = _resource(block)
        if isinstance(resource.get("blob"), str):
            return _str(resource.get("mimeType")), resource["blob"]
    return None


# -- OpenAI Chat Completions ----------------------------------------------------------------------


def _openai(role: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "tool_use":
            arguments = json.dumps(block.get("input") if isinstance(block.get("input"), dict) else {})
            calls.append({"id": _str(block.get("id")), "type": "function",
                          "function": {"name": _str(block.get("name")), "arguments": arguments}})
        elif kind == "tool_result":
            out.append({"role": "tool", "tool_call_id": _str(block.get("toolUseId")),
                        "content": tool_result_text(block) or "(no output)"})
        elif role == "user" and _blob(block) is not None:
            parts.append(_openai_media(block))
        else:
            parts.append({"type": "text", "text": described(block)})
    if role == "assistant":
        text = "\n".join(part.get("text", "") for part in parts)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = calls
        return [message, *out] if (text or calls) else out
    if not parts:
        return out
    if all(part["type"] == "text" for part in parts):
        return [*out, {"role": role, "content": "\n".join(part["text"] for part in parts)}]
    return [*out, {"role": role, "content": parts}]


def _openai_media(block: dict[str, Any]) -> dict[str, Any]:
    mime, data = _blob(block) or ("", "")
    if mime.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}}
    if mime in _OPENAI_AUDIO:
        return {"type": "input_audio", "input_audio": {"data": data, "format": _OPENAI_AUDIO[mime]}}
    if mime == _PDF:
        name = _str(_resource(block).get("uri")).rsplit("/", 1)[-1] or "document.pdf"
        return {"type": "file", "file": {"filename": name, "file_data": f"data:{mime};base64,{data}"}}
    return {"type": "text", "text": described(block)}


# -- Anthropic Messages ---------------------------------------------------------------------------


def _anthropic(role: str, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        blob = _blob(block)
        if kind == "tool_use":
            content.append({"type": "tool_use", "id": _str(block.get("id")), "name": _str(block.get("name")),
                            "input": block.get("input") if isinstance(block.get("input"), dict) else {}})
        elif kind == "tool_result":
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": _str(block.get("toolUseId")),
                                      "content": _anthropic_result_content(block)}
            if block.get("isError") is True:
                result["is_error"] = True
            content.append(result)
        elif role == "user" and blob is not None and blob[0] in _ANTHROPIC_IMAGES:
            content.append({"type": "image", "source": {"type": "base64", "media_type": blob[0], "data": blob[1]}})
        elif role == "user" and blob is not None and blob[0] == _PDF:
            content.append({"type": "document", "source": {"type": "base64", "media_type": _PDF, "data": blob[1]}})
        elif role == "user" and kind == "resource" and isinstance(_resource(block).get("text"), str):
            resource = _resource(block)
            source = {"type": "text", "media_type": "text/plain", "data": resource["text"]}
            document: dict[str, Any] = {"type": "document", "source": source}
            if _str(resource.get("uri")):
                document["title"] = resource["uri"]
            content.append(document)
        else:
            text = described(block)
            if text:  # Anthropic refuses empty text blocks
                content.append({"type": "text", "text": text})
    return [{"role": role, "content": content}] if content else []


def _anthropic_result_content(block: dict[str, Any]) -> list[dict[str, Any]]:
    items = block.get("content")
    content: list[dict[str, Any]] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        blob = _blob(item)
        if blob is not None and item.get("type") == "image" and blob[0] in _ANTHROPIC_IMAGES:
            content.append({"type": "image", "source": {"type": "base64", "media_type": blob[0], "data": blob[1]}})
        elif described(item):
            content.append({"type": "text", "text": described(item)})
    if not content:
        content.append({"type": "text", "text": tool_result_text(block) or "(no output)"})
    return content


# -- Gemini ---------------------------------------------------------------------------------------


def _gemini(role: str, blocks: list[dict[str, Any]], names: dict[str, str]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        blob = _blob(block)
        if kind == "tool_use":
            call: dict[str, Any] = {"name": _str(block.get("name")),
                                    "args": block.get("input") if isinstance(block.get("input"), dict) else {}}
            if _str(block.get("id")):
                call["id"] = block["id"]
            parts.append({"function_call": call})
        elif kind == "tool_result":
            text = tool_result_text(block)
            response = {"error": text} if block.get("isError") is True else {"result": text}
            body: dict[str, Any] = {"name": names.get(_str(block.get("toolUseId")), _str(block.get("toolUseId"))),
                                    "response": response}
            if _str(block.get("toolUseId")):
                body["id"] = block["toolUseId"]
            parts.append({"function_response": body})
        elif blob is not None and blob[0]:
            parts.append({"inline_data": {"mime_type": blob[0], "data": blob[1]}})
        else:
            parts.append({"text": described(block)})
    return [{"role": "model" if role == "assistant" else "user", "parts": parts}] if parts else []
