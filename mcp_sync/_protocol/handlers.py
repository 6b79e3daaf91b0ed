"""The client's answers to a server that asks back: elicitation, sampling, roots.

One set of handlers serves both eras: modern servers ask through
``input_required`` results (MRTR), legacy servers through server-to-client
requests. :class:`Handlers` also decides the client capabilities, since
registering a handler is what declares its capability.
"""

from __future__ import annotations

import inspect
import threading
from typing import Any, Callable, Mapping, Sequence

import attrs

from .._options import Roots
from .._values import check_json
from ..exceptions import INVALID_PARAMS, METHOD_NOT_FOUND, HandlerError, MCPError, ServerRequestError
from ..models import RequestContext

ElicitationHandler = Callable[[dict], dict]
SamplingHandler = Callable[[dict], dict]

INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")
#: The handler of each input method, and how many arguments it takes before the context.
_HANDLER_OF = {"elicitation/create": ("on_elicitation", 1), "sampling/createMessage": ("on_sampling", 1),
               "roots/list": ("on_roots", 0)}




def takes_context(handler: Any, arguments: int) -> bool:
    """Whether ``handler`` takes one more positional parameter than the ``arguments`` it is always
    given: then it gets a :class:`RequestContext` as that parameter. ``*args`` does not count."""
    if not callable(handler):
        return False
    try:
        signature = inspect.signature(handler)
    except (TypeError, ValueError):  # a builtin without a signature: called as before
        return False
    positional = [p for p in signature.parameters.values()
                  if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    return len(positional) > arguments


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


def _roots_list(roots: Roots, arguments: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    items = _run("on_roots", roots, *arguments) if callable(roots) else roots
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
    """Setting an option changes what the client declares: build it again. A handler is looked at
    once, as it is set (does it take a context?); the capabilities' cache key says which are set."""
    if attribute.name in ("on_elicitation", "on_sampling", "on_roots"):
        handlers._takes[attribute.name] = (value, takes_context(value, 0 if attribute.name == "on_roots" else 1))
    elif not attribute.name.startswith("_"):
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
    #: capabilities(era) as built, per era and which handlers are set; emptied when an option is set
    _capability_cache: dict[Any, dict[str, Any]] = attrs.field(factory=dict, init=False, repr=False, eq=False)
    #: each handler as set, and whether it takes a context (read once, as it is set)
    _takes: dict[str, tuple[Any, bool]] = attrs.field(factory=dict, init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        for name, arguments in _HANDLER_OF.values():
            handler = getattr(self, name)
            self._takes[name] = (handler, takes_context(handler, arguments))

    @property
    def declares_url(self) -> bool:
        return self.url_elicitation or bool(getattr(self.on_elicitation, "url", False))

    def capabilities(self, era: str) -> dict[str, Any]:
        """The client capabilities these handlers declare in ``era``. Built once per set of
        handlers present and kept (every modern request carries them): the dict is shared, so
        copy it to change it. A handler's ``url`` attribute is read on each call. Handlers may be
        set from any thread: the key and the dict are made from one reading of them."""
        elicitation, sampling, roots = self.on_elicitation, self.on_sampling, self.on_roots
        url = elicitation is not None and (self.url_elicitation or bool(getattr(elicitation, "url", False)))
        key = (era, elicitation is not None, url, sampling is not None, roots is not None)
        caps = self._capability_cache.get(key)
        if caps is None:
            caps = self._capability_cache[key] = self._build_capabilities(era, *key[1:])
        return caps

    def _build_capabilities(self, era: str, elicitation: bool, url: bool, sampling: bool, roots: bool
                            ) -> dict[str, Any]:
        caps: dict[str, Any] = {}
        if elicitation:
            caps["elicitation"] = {"form": {}}
            if url:
                caps["elicitation"]["url"] = {}
        if sampling:
            caps["sampling"] = {"tools": {}} if self.sampling_tools else {}
        if roots:
            caps["roots"] = {"listChanged": True} if era == "legacy" else {}
        if self.extensions:
            caps["extensions"] = dict(self.extensions)
        if self.host_tasks and era == "legacy":  # LG12: client-hosted tasks for our input handlers
            requests: dict[str, Any] = {}
            if sampling:
                requests["sampling"] = {"createMessage": {}}
            if elicitation:
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

    def _arguments(self, name: str, handler: Any, base: tuple[Any, ...], method: str,
                   context: RequestContext | None) -> tuple[Any, ...]:
        """``base``, and the context when ``handler`` takes one (read as it was set)."""
        known = self._takes.get(name)
        wants = known[1] if known is not None and known[0] is handler else takes_context(handler, len(base))
        if not wants:
            return base
        if context is None:
            context = RequestContext(server="", target="", era="", method=method, request_id=None)
        return (*base, context)

    def answer(self, method: str, params: dict[str, Any], context: RequestContext | None = None) -> dict[str, Any]:
        """Answer one input request; raises ServerRequestError to refuse, HandlerError when a handler fails.
        A handler that takes a context gets ``context``."""
        elicitation, sampling, roots = self.on_elicitation, self.on_sampling, self.on_roots  # read once
        if method == "elicitation/create" and elicitation is not None:
            mode = params.get("mode", "form")  # L1: no mode means form
            if mode == "url" and not (self.url_elicitation or bool(getattr(elicitation, "url", False))):
                raise ServerRequestError("URL elicitation was not declared", code=INVALID_PARAMS)
            arguments = self._arguments("on_elicitation", elicitation, (params,), method, context)
            result = check_elicit_result(_run("on_elicitation", elicitation, *arguments))
            validate_elicitation(params, result)
            return result
        if method == "sampling/createMessage" and sampling is not None:
            if (params.get("tools") or params.get("toolChoice")) and not self.sampling_tools:
                raise ServerRequestError("tool-enabled sampling was not declared", code=INVALID_PARAMS)
            arguments = self._arguments("on_sampling", sampling, (params,), method, context)
            return check_sampling_result(_run("on_sampling", sampling, *arguments))
        if method == "roots/list" and roots is not None:
            return {"roots": _roots_list(roots, self._arguments("on_roots", roots, (), method, context))}
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
