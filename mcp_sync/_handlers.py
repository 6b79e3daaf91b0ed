"""The client's answers to a server that asks back: elicitation, sampling, roots.

One set of handlers serves both eras: modern servers ask through
``input_required`` results (MRTR), legacy servers through server-to-client
requests. :class:`Handlers` also decides the client capabilities, since
registering a handler is what declares its capability.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import attrs

from .exceptions import INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, ServerRequestError

ElicitationHandler = Callable[[dict], dict]
SamplingHandler = Callable[[dict], dict]
Roots = Union[Sequence[Union[str, dict]], Callable[[], Sequence[Union[str, dict]]]]

INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


_DEFAULTABLE = ("string", "integer", "number", "boolean", "array")


def apply_defaults(schema: dict[str, Any], content: dict[str, Any] | None = None) -> dict[str, Any]:
    """The form content with every field's ``default`` filled in where it is missing (SEP-1034).

    ``schema`` is an elicitation ``requestedSchema``: a flat object of string,
    integer, number, boolean and (single or multi select) enum fields. Values
    already in ``content`` win. Use it to pre-fill a form, or to accept with
    the defaults.

    Example::

        def on_elicitation(params):
            content = mcp_sync.apply_defaults(params["requestedSchema"], {"name": "Ada"})
            return {"action": "accept", "content": content}
    """
    filled = dict(content or {})
    properties = schema.get("properties") if isinstance(schema, dict) else None
    for name, field in (properties or {}).items():
        if name in filled or not isinstance(field, dict) or "default" not in field:
            continue
        kind = field.get("type")
        if kind in _DEFAULTABLE or "enum" in field or "oneOf" in field or "anyOf" in field:
            filled[name] = field["default"]
    return filled


def validate_elicitation(params: dict[str, Any], result: dict[str, Any]) -> None:
    """Check an ``accept`` answer's content against ``requestedSchema`` (L3) before it is sent.

    Raises ServerRequestError(-32603) naming the first problem.
    """
    if result.get("action") != "accept" or params.get("mode", "form") != "form":
        return
    schema = params.get("requestedSchema")
    content = result.get("content", {})
    if not isinstance(schema, dict):
        return
    import jsonschema  # imported here: it is heavy and only needed for forms

    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(validator_cls(schema).iter_errors(content))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "content"
        raise ServerRequestError(f"elicitation content does not match requestedSchema at {where}: "
                                 f"{error.message}", code=INTERNAL_ERROR)


def _roots_list(roots: Roots) -> list[dict[str, Any]]:
    items = roots() if callable(roots) else roots
    return [{"uri": item} if isinstance(item, str) else dict(item) for item in items]


@attrs.define
class Handlers:
    """The registered handlers and the capabilities they declare.

    An elicitation handler with an attribute ``url = True`` also declares URL
    mode; ``sampling_tools`` declares ``sampling.tools``.
    """

    on_elicitation: ElicitationHandler | None = None
    on_sampling: SamplingHandler | None = None
    on_roots: Roots | None = None
    sampling_tools: bool = False
    extensions: dict[str, Any] = attrs.field(factory=dict)
    host_tasks: bool = False

    def capabilities(self, era: str) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if self.on_elicitation is not None:
            caps["elicitation"] = {"form": {}}
            if getattr(self.on_elicitation, "url", False):
                caps["elicitation"]["url"] = {}
        if self.on_sampling is not None:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if self.on_roots is not None:
            caps["roots"] = {"listChanged": True} if era == "legacy" else {}
        if self.extensions:
            caps["extensions"] = dict(self.extensions)
        if self.host_tasks and era == "legacy":  # LG12: client-hosted tasks for our input handlers
            requests: dict[str, Any] = {}
            if self.on_sampling is not None:
                requests["sampling"] = {"createMessage": {}}
            if self.on_elicitation is not None:
                requests["elicitation"] = {"create": {}}
            if requests:
                caps["tasks"] = {"list": {}, "cancel": {}, "requests": requests}
        return caps

    def can_answer(self, method: str) -> bool:
        return {
            "elicitation/create": self.on_elicitation,
            "sampling/createMessage": self.on_sampling,
            "roots/list": self.on_roots,
        }.get(method) is not None

    def answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Answer one input request; raises ServerRequestError to refuse."""
        if method == "elicitation/create" and self.on_elicitation is not None:
            mode = params.get("mode", "form")  # L1: no mode means form
            if mode == "url" and not getattr(self.on_elicitation, "url", False):
                raise ServerRequestError("URL elicitation was not declared", code=INVALID_PARAMS)
            result = dict(self.on_elicitation(params))
            validate_elicitation(params, result)
            return result
        if method == "sampling/createMessage" and self.on_sampling is not None:
            if (params.get("tools") or params.get("toolChoice")) and not self.sampling_tools:
                raise ServerRequestError("tool-enabled sampling was not declared", code=INVALID_PARAMS)
            return dict(self.on_sampling(params))
        if method == "roots/list" and self.on_roots is not None:
            return {"roots": _roots_list(self.on_roots)}
        raise ServerRequestError(f"Method not found: {method}", code=METHOD_NOT_FOUND)
