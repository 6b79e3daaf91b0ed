"""The client's answers to a server that asks back: elicitation, sampling, roots.

One set of handlers serves both eras: modern servers ask through
``input_required`` results (MRTR), legacy servers through server-to-client
requests. :class:`Handlers` also decides the client capabilities, since
registering a handler is what declares its capability.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Mapping, Sequence

import attrs

from .._options import Roots
from .._values import check_json
from ..exceptions import INVALID_PARAMS, METHOD_NOT_FOUND, HandlerError, MCPError, ServerRequestError

ElicitationHandler = Callable[[dict], dict]
SamplingHandler = Callable[[dict], dict]

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
    """Check an ``accept`` answer's content against ``requestedSchema`` before it is sent (L3).

    Raises HandlerError naming the first problem.
    """
    if result.get("action") != "accept" or params.get("mode", "form") != "form":
        return
    schema = params.get("requestedSchema")
    content = result.get("content", {})
    if not isinstance(schema, dict):
        return
    import jsonschema  # imported here: it is heavy and only needed for forms

    try:
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        error = jsonschema.exceptions.best_match(validator_cls(schema).iter_errors(content))
    except (jsonschema.exceptions.SchemaError, jsonschema.exceptions.UnknownType, RecursionError) as exc:
        # the server's schema is broken, not the handler's answer: refuse the request
        raise ServerRequestError(f"requestedSchema is not a usable JSON Schema: {exc}"[:300],
                                 code=INVALID_PARAMS) from None
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "content"
        raise HandlerError(
            f"on_elicitation answered content that does not match requestedSchema at {where}: {error.message}",
            handler="on_elicitation",
        )


_ELICIT_ACTIONS = ("accept", "decline", "cancel")
_ROLES = ("user", "assistant")


def _run(handler_name: str, handler: Callable[..., Any], *args: Any) -> Any:
    """Call a user handler: a refusal (ServerRequestError) passes; any other exception is a HandlerError."""
    try:
        return handler(*args)
    except ServerRequestError:
        raise
    except Exception as exc:
        raise HandlerError(f"{handler_name} raised {type(exc).__name__}: {exc}", handler=handler_name) from exc


def _answer_dict(handler_name: str, result: Any, expected: str) -> dict[str, Any]:
    if not isinstance(result, Mapping):
        raise HandlerError(
            f"{handler_name} returned {type(result).__name__} ({result!r:.60}); it must return a dict ({expected})",
            handler=handler_name,
        )
    answer = dict(result)
    try:
        check_json(answer, f"{handler_name} returned a dict whose value")
    except (TypeError, ValueError) as exc:
        raise HandlerError(str(exc), handler=handler_name) from None
    return answer


def check_elicit_result(result: Any) -> dict[str, Any]:
    """An ElicitResult from ``on_elicitation``, checked: HandlerError naming what is wrong."""
    answer = _answer_dict("on_elicitation", result, 'an ElicitResult: {"action": "accept", "content": {...}}')
    if answer.get("action") not in _ELICIT_ACTIONS:
        raise HandlerError(
            f"on_elicitation returned action {answer.get('action')!r}; it must be one of {list(_ELICIT_ACTIONS)}",
            handler="on_elicitation",
        )
    if "content" in answer and not isinstance(answer["content"], dict):
        raise HandlerError("on_elicitation returned a 'content' that is not a dict", handler="on_elicitation")
    return answer


def check_sampling_result(result: Any) -> dict[str, Any]:
    """A CreateMessageResult from ``on_sampling``, checked: ``role``, ``content`` and ``model``."""
    answer = _answer_dict(
        "on_sampling", result, 'a CreateMessageResult: {"role": "assistant", "content": {...}, "model": ...}'
    )
    problems = []
    if answer.get("role") not in _ROLES:
        problems.append(f"'role' must be one of {list(_ROLES)}, not {answer.get('role')!r:.40}")
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    if not blocks or not all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in blocks):
        problems.append("'content' must be a content block (a dict with a 'type') or a list of them")
    if not isinstance(answer.get("model"), str):
        problems.append("'model' must be a string naming the model that answered")
    if problems:
        raise HandlerError(f"on_sampling returned an invalid result: {'; '.join(problems)}", handler="on_sampling")
    return answer


def is_file_uri(uri: str) -> bool:
    """Whether ``uri`` is a ``file://`` URI (the scheme compared case-insensitively)."""
    return uri[:7].lower() == "file://"


def _roots_list(roots: Roots) -> list[dict[str, Any]]:
    items = _run("on_roots", roots) if callable(roots) else roots
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Sequence):
        raise HandlerError(
            f"on_roots gave {type(items).__name__}; it must be a list of URIs or {{'uri': ...}} dicts",
            handler="on_roots",
        )
    listed: list[dict[str, Any]] = []
    for item in items:
        root = {"uri": item} if isinstance(item, str) else dict(item) if isinstance(item, Mapping) else None
        if root is None or not isinstance(root.get("uri"), str):
            raise HandlerError(f"on_roots gave a root that is not a URI or a {{'uri': ...}} dict: {item!r:.60}",
                               handler="on_roots")
        if not is_file_uri(root["uri"]):  # N1: a root MUST be a file:// URI
            raise HandlerError(f"on_roots gave a root that is not a file:// URI: {root['uri']!r:.60}",
                               handler="on_roots")
        listed.append(root)
    return listed


def _forget_capabilities(handlers: Handlers, attribute: Any, value: Any) -> Any:
    """Setting a handler or an option changes what the client declares: build it again."""
    if not attribute.name.startswith("_"):
        handlers._capability_cache = {}
    return value


@attrs.define(on_setattr=_forget_capabilities)
class Handlers:
    """The registered handlers and the capabilities they declare.

    ``url_elicitation=True`` (or, as before, an elicitation handler with an
    attribute ``url = True``) also declares URL mode; ``sampling_tools``
    declares ``sampling.tools``.

    A handler that raises (anything but ServerRequestError) or answers with an
    invalid result raises HandlerError. Modern servers ask inside a call, so
    that call raises it. Legacy servers ask with requests of their own: the
    server is answered with an internal error, and the call that led to it
    raises the same HandlerError once it ends (see :meth:`attributing_failures`).
    """

    on_elicitation: ElicitationHandler | None = None
    on_sampling: SamplingHandler | None = None
    on_roots: Roots | None = None
    sampling_tools: bool = False
    extensions: dict[str, Any] = attrs.field(factory=dict)
    host_tasks: bool = False
    url_elicitation: bool = False
    _calls: list[list[HandlerError]] = attrs.field(factory=list, init=False, repr=False)
    _calls_lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)
    #: capabilities(era) as built last, per era (and URL elicitation flag); emptied when a field is set
    _capability_cache: dict[Any, dict[str, Any]] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    @property
    def declares_url(self) -> bool:
        return self.url_elicitation or bool(getattr(self.on_elicitation, "url", False))

    def capabilities(self, era: str) -> dict[str, Any]:
        """The client capabilities these handlers declare in ``era``. Built once and kept until a
        handler or option is set (every modern request carries them): the dict is shared, so
        copy it to change it. A handler's ``url`` attribute is read on each call."""
        key = era if self.on_elicitation is None else (era, self.declares_url)
        caps = self._capability_cache.get(key)
        if caps is None:
            caps = self._capability_cache[key] = self._build_capabilities(era)
        return caps

    def _build_capabilities(self, era: str) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if self.on_elicitation is not None:
            caps["elicitation"] = {"form": {}}
            if self.declares_url:
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
        """Answer one input request; raises ServerRequestError to refuse, HandlerError when a handler fails."""
        if method == "elicitation/create" and self.on_elicitation is not None:
            mode = params.get("mode", "form")  # L1: no mode means form
            if mode == "url" and not self.declares_url:
                raise ServerRequestError("URL elicitation was not declared", code=INVALID_PARAMS)
            result = check_elicit_result(_run("on_elicitation", self.on_elicitation, params))
            validate_elicitation(params, result)
            return result
        if method == "sampling/createMessage" and self.on_sampling is not None:
            if (params.get("tools") or params.get("toolChoice")) and not self.sampling_tools:
                raise ServerRequestError("tool-enabled sampling was not declared", code=INVALID_PARAMS)
            return check_sampling_result(_run("on_sampling", self.on_sampling, params))
        if method == "roots/list" and self.on_roots is not None:
            return {"roots": _roots_list(self.on_roots)}
        raise ServerRequestError(f"Method not found: {method}", code=METHOD_NOT_FOUND)

    def failed(self, error: HandlerError) -> None:
        """A handler failed on a legacy server's request: blame the call in flight, if there is just one.

        A legacy request does not say which call it belongs to; with several calls
        in flight the failure cannot be attributed, and each call ends as the
        server answers it (the failure is logged).
        """
        with self._calls_lock:
            if len(self._calls) == 1:
                self._calls[0].append(error)

    def attributing_failures(self) -> _Attribution | None:
        """A context manager to put around a call: if a handler failed while it was the only call
        in flight, it raises that HandlerError. None when there is nothing to attribute (a client
        with no handler: the call pays for nothing)."""
        if self.on_elicitation is None and self.on_sampling is None and self.on_roots is None:
            return None
        return _Attribution(self)


class _Attribution:
    """One call's place in :attr:`Handlers._calls` while it is in flight (see ``attributing_failures``)."""

    __slots__ = ("_failures", "_handlers")

    def __init__(self, handlers: Handlers) -> None:
        self._handlers = handlers
        self._failures: list[HandlerError] = []

    def __enter__(self) -> None:
        with self._handlers._calls_lock:
            self._handlers._calls.append(self._failures)

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        calls = self._handlers._calls
        with self._handlers._calls_lock:
            # by identity: every call's list starts empty, and equal lists must not be confused
            for index, each in enumerate(calls):  # pragma: no branch - __enter__ added it: always found
                if each is self._failures:
                    del calls[index]
                    break
        if self._failures and (error is None or isinstance(error, MCPError)):
            raise self._failures[0]  # the server's answer, if any, stays as __context__
