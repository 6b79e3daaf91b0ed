"""The client's answers to a server that asks back: elicitation, sampling, roots.

One set of handlers serves both eras: modern servers ask through
``input_required`` results (MRTR), legacy servers through server-to-client
requests. :class:`Handlers` also decides the client capabilities, since
registering a handler is what declares its capability.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

import attrs

from .exceptions import INVALID_PARAMS, METHOD_NOT_FOUND, ServerRequestError

ElicitationHandler = Callable[[dict], dict]
SamplingHandler = Callable[[dict], dict]
Roots = Union[Sequence[Union[str, dict]], Callable[[], Sequence[Union[str, dict]]]]

INPUT_METHODS = ("elicitation/create", "sampling/createMessage", "roots/list")


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
            return dict(self.on_elicitation(params))
        if method == "sampling/createMessage" and self.on_sampling is not None:
            if (params.get("tools") or params.get("toolChoice")) and not self.sampling_tools:
                raise ServerRequestError("tool-enabled sampling was not declared", code=INVALID_PARAMS)
            return dict(self.on_sampling(params))
        if method == "roots/list" and self.on_roots is not None:
            return {"roots": _roots_list(self.on_roots)}
        raise ServerRequestError(f"Method not found: {method}", code=METHOD_NOT_FOUND)
