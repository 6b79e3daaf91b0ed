"""LLMs and agent frameworks around MCP clients: sampling through a provider, tools for frameworks (#20.3, #20.5).

``import mcp_sync.llm`` imports no provider SDK or framework: each function imports what it needs
when called (and says which package to install if it is missing).

- :func:`openai_sampling` / :func:`anthropic_sampling` / :func:`gemini_sampling`: an
  ``on_sampling`` handler answering a server's ``sampling/createMessage`` with the provider's model;
- :func:`to_langchain_tools`: LangChain ``StructuredTool`` objects calling a client or group;
- :func:`to_openai_agents_tools`: OpenAI Agents SDK ``FunctionTool`` objects, the same.

Example::

    import anthropic, mcp_sync, mcp_sync.llm

    on_sampling = mcp_sync.llm.anthropic_sampling(anthropic.Anthropic(), model="claude-sonnet-4-5")
    with mcp_sync.Client.stdio("python", ["server.py"], on_sampling=on_sampling) as client:
        client.call_tool("summarize", {"url": "https://example.com"})
"""

from __future__ import annotations

import collections
import contextvars
import functools
import json
import logging
import math
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence, Union

from ._chat import chat_messages
from ._llm_formats import (
    assign_names,
    drop_optional_nulls,
    result_text,
    to_anthropic_tools,
    to_gemini_tools,
    to_openai_tools,
)
from ._threads import run_blocking
from .exceptions import INVALID_PARAMS, MCPError, ServerRequestError
from .models import CallToolResult, Tool

if TYPE_CHECKING:
    from ._client import Client
    from ._group import ClientGroup

    ClientOrGroup = Union[Client, ClientGroup]
else:
    ClientOrGroup = Any

__all__ = ["anthropic_sampling", "gemini_sampling", "openai_sampling", "to_langchain_tools", "to_openai_agents_tools"]

log = logging.getLogger("mcp_sync")

SamplingHandler = Callable[[dict], dict]
_MAX_HINTS = 20  # model hints looked at, each compared on its first _MAX_HINT_CHARS characters
_MAX_HINT_CHARS = 200
_OPENAI_STOPS = 4  # Chat Completions takes at most 4 stop sequences
_GEMINI_STOPS = 5  # generateContent takes at most 5
_DEFAULT_MAX_TOKENS = 1024  # sent when a request has no usable maxTokens (then capped by the ceiling)

# What a server's sampling request may cost by default (#28.5); each is a keyword of the samplers.
MAX_TOKENS_LIMIT = 4096  # the server's maxTokens is clamped to it
MAX_STOP_SEQUENCES = 16  # more is refused
MAX_STOP_SEQUENCE_CHARS = 256  # a longer stop sequence is refused
MAX_INPUT_CHARS = 200_000  # messages, systemPrompt and tools, measured as they arrive; more is refused
MAX_REQUESTS = 10  # provider calls per sampler ...
PER_SECONDS = 60.0  # ... in any window of this many seconds; more is refused
OPENAI_TEMPERATURES = (0.0, 2.0)  # the providers' ranges; a temperature outside is refused
ANTHROPIC_TEMPERATURES = (0.0, 1.0)
GEMINI_TEMPERATURES = (0.0, 2.0)
_LARGEST_FLOAT = 1.7976931348623157e308
BUDGET_REFUSED = -1  # the code of a budget refusal: the client declines, as a user would


def _need(module: str, package: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{what} needs the {package!r} package: pip install {package}") from exc


def _as_dict(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)  # JSON mode: enums (Gemini's finish reasons) as their strings
    return dump(mode="json") if callable(dump) and not isinstance(obj, Mapping) else obj


# -- sampling -------------------------------------------------------------------------------------


def choose_model(params: Mapping[str, Any], model: str, models: Sequence[str] = ()) -> str:
    """The model for a sampling request: the first of ``model``, ``*models`` that the request's first
    matching ``modelPreferences.hints`` name is a substring of (the spec's reading), else ``model``.

    Example: ``choose_model({"modelPreferences": {"hints": [{"name": "mini"}]}}, "gpt-4.1", ["gpt-4.1-mini"])``
    gives ``"gpt-4.1-mini"``.
    """
    preferences = params.get("modelPreferences")
    hints = preferences.get("hints") if isinstance(preferences, Mapping) else None
    candidates = [model, *models]
    for hint in (hints if isinstance(hints, list) else [])[:_MAX_HINTS]:
        name = hint.get("name") if isinstance(hint, Mapping) else None
        if not isinstance(name, str) or not name:
            continue
        name = name[:_MAX_HINT_CHARS]
        for candidate in candidates:
            if name in candidate:
                return candidate
    return model


def _sampling_messages(params: Mapping[str, Any], fmt: str, wire_names: Mapping[str, str]) -> list[dict[str, Any]]:
    """The request's messages in ``fmt``'s shapes, each earlier ``tool_use`` under the name its tool
    is offered by (``wire_names``: a name no LLM API takes is offered shortened)."""
    messages = params.get("messages")
    pairs = [(str(m.get("role")), _offered_names(m.get("content"), wire_names))
             for m in (messages if isinstance(messages, list) else [])
             if isinstance(m, Mapping) and m.get("role") in ("user", "assistant")]
    return chat_messages(pairs, fmt)


def _offered_names(content: Any, wire_names: Mapping[str, str]) -> Any:
    def renamed(block: Any) -> Any:
        name = block.get("name") if isinstance(block, Mapping) and block.get("type") == "tool_use" else None
        return {**block, "name": wire_names[name]} if isinstance(name, str) and name in wire_names else block

    return [renamed(block) for block in content] if isinstance(content, list) else renamed(content)


def _sampling_tools(params: Mapping[str, Any]) -> tuple[list[Tool], dict[str, str]]:
    """The request's tools as :class:`Tool` objects, and the provider-valid names back to theirs."""
    listed = params.get("tools")
    tools = [Tool.from_wire(t) for t in (listed if isinstance(listed, list) else []) if isinstance(t, dict)]
    return tools, {name: tool.name for name, tool in assign_names(tools, warn=False)}


def _tool_mode(params: Mapping[str, Any]) -> str | None:
    choice = params.get("toolChoice")
    mode = choice.get("mode") if isinstance(choice, Mapping) else None
    return mode if mode in ("auto", "required", "none") else None


def _result(model: str, blocks: list[dict[str, Any]], stop: str | None, with_tools: bool) -> dict[str, Any]:
    """A CreateMessageResult: without tools one content block (the texts joined), as servers expect."""
    if not with_tools:
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        content: Any = {"type": "text", "text": text}
    else:
        content = blocks or [{"type": "text", "text": ""}]
    result: dict[str, Any] = {"role": "assistant", "content": content, "model": model}
    if stop is not None:
        result["stopReason"] = stop
    return result


def _whole(name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {type(value).__name__}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, not {value}")
    return value


def _real(value: Any) -> bool:
    """Whether ``value`` is a finite int or float (a bool is not)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return isinstance(value, int) or math.isfinite(value)


def _shown(value: float) -> str:
    """A number for a refusal's message: short whatever the server sent (an int of 4,000 digits)."""
    return f"{value:.6g}" if isinstance(value, float) or abs(value) < 10**15 else "a very large number"


def _refuse(message: str, code: int = INVALID_PARAMS) -> ServerRequestError:
    log.info("mcp_sync: %s", message)
    return ServerRequestError(message, code=code)


def _input_chars(params: Mapping[str, Any], limit: int) -> int:
    """The size of a request's ``messages``, ``systemPrompt`` and ``tools``: each string's length
    plus one for every value. Counting stops just past ``limit``, so it takes time linear in
    ``min(size, limit)`` however big or deep the request (a cycle, which JSON cannot hold, too)."""
    total = 0
    stack: list[Any] = [iter([params.get("messages"), params.get("systemPrompt"), params.get("tools")])]
    while stack:
        value = next(stack[-1], stack)  # the stack itself marks the end of an iterator
        if value is stack:
            stack.pop()
            continue
        total += 1 + (len(value) if isinstance(value, str) else 0)
        if total > limit:
            break
        if isinstance(value, Mapping):
            stack.append(item for pair in value.items() for item in pair)
        elif isinstance(value, (list, tuple)):
            stack.append(iter(value))
    return total


class _SamplingBounds:
    """What a sampler lets through to its provider, and how often (#28.5): checked before any
    provider call. A refusal raises ServerRequestError, which the client sends the server as a
    JSON-RPC error (a legacy server's request), or which makes the call raise InputRequiredError
    (a modern server's ``input_required`` round). The options are checked once, here.

    Example: ``_SamplingBounds(max_tokens_limit=4096, max_stop_sequences=16, max_stop_sequence_chars=256,
    max_input_chars=200_000, temperature_range=(0.0, 1.0), max_requests=10, per_seconds=60.0)``.
    """

    def __init__(self, *, max_tokens_limit: int | None, max_stop_sequences: int, max_stop_sequence_chars: int,
                 max_input_chars: int, temperature_range: tuple[float, float], max_requests: int,
                 per_seconds: float) -> None:
        self.max_tokens_limit = None if max_tokens_limit is None else _whole("max_tokens_limit", max_tokens_limit, 1)
        self.max_stop_sequences = _whole("max_stop_sequences", max_stop_sequences, 0)
        self.max_stop_sequence_chars = _whole("max_stop_sequence_chars", max_stop_sequence_chars, 1)
        self.max_input_chars = _whole("max_input_chars", max_input_chars, 1)
        self.max_requests = _whole("max_requests", max_requests, 1)
        if not _real(per_seconds):
            raise TypeError(f"per_seconds must be a finite number of seconds, not {per_seconds!r:.40}")
        if per_seconds <= 0:
            raise ValueError(f"per_seconds must be more than 0, not {per_seconds}")
        self.per_seconds = float(per_seconds)
        if (not isinstance(temperature_range, (tuple, list)) or len(temperature_range) != 2
                or not all(_real(t) for t in temperature_range)):
            raise TypeError(f"temperature_range must be a (lowest, highest) pair of numbers, "
                            f"not {temperature_range!r:.60}")
        low, high = temperature_range
        if not 0 <= low <= high or max(low, high) > _LARGEST_FLOAT:
            raise ValueError(f"temperature_range must have 0 <= lowest <= highest (floats), "
                             f"not {temperature_range!r:.60}")
        self.temperature_range = (float(low), float(high))
        self._starts: collections.deque[float] = collections.deque()  # the budget's provider calls, oldest first
        self._lock = threading.Lock()

    def check(self, params: Mapping[str, Any]) -> tuple[int, list[str], float | None]:
        """The request's max tokens (clamped), stop sequences and temperature; refuses what is out of bounds."""
        size = _input_chars(params, self.max_input_chars)
        if size > self.max_input_chars:
            raise _refuse(f"sampling refused: the request's messages, system prompt and tools exceed "
                          f"{self.max_input_chars} characters (max_input_chars={self.max_input_chars})")
        return self._max_tokens(params), self._stops(params), self._temperature(params)

    def _max_tokens(self, params: Mapping[str, Any]) -> int:
        wanted: Any = params.get("maxTokens")
        if not (_real(wanted) and wanted > 0 and (isinstance(wanted, int) or wanted.is_integer())):
            wanted = _DEFAULT_MAX_TOKENS
        limit = self.max_tokens_limit
        return int(wanted) if limit is None else int(min(wanted, limit))

    def _stops(self, params: Mapping[str, Any]) -> list[str]:
        stops = params.get("stopSequences")
        if not isinstance(stops, list):
            return []
        if len(stops) > self.max_stop_sequences:
            raise _refuse(f"sampling refused: {len(stops)} stop sequences, more than the "
                          f"{self.max_stop_sequences} this client accepts (max_stop_sequences)")
        kept = [stop for stop in stops if isinstance(stop, str)]
        if any(len(stop) > self.max_stop_sequence_chars for stop in kept):
            raise _refuse(f"sampling refused: a stop sequence is longer than {self.max_stop_sequence_chars} "
                          f"characters (max_stop_sequence_chars)")
        return kept

    def _temperature(self, params: Mapping[str, Any]) -> float | None:
        temperature = params.get("temperature")
        if temperature is None:
            return None
        low, high = self.temperature_range
        if not _real(temperature):
            raise _refuse(f"sampling refused: temperature must be a number, not {type(temperature).__name__}")
        if not low <= temperature <= high:
            raise _refuse(f"sampling refused: temperature {_shown(temperature)} is outside "
                          f"{low:g}..{high:g} (temperature_range)")
        return float(temperature)

    def spend(self) -> None:
        """Take one provider call from the budget, or refuse: at most ``max_requests`` in any
        ``per_seconds`` seconds. Refused requests cost nothing and are not counted."""
        now = time.monotonic()
        with self._lock:
            while self._starts and now - self._starts[0] >= self.per_seconds:
                self._starts.popleft()
            if len(self._starts) >= self.max_requests:
                raise _refuse(f"sampling refused: this client answers at most {self.max_requests} sampling "
                              f"requests in {self.per_seconds:g} seconds (max_requests, per_seconds); "
                              f"try again later", BUDGET_REFUSED)
            self._starts.append(now)


class _Ask:
    """One sampling request as each provider's handler takes it (#20.3): checked against the bounds
    (a refusal raises here, before anything is built), the model chosen from the hints, the system
    prompt (None when empty), the messages in ``fmt``'s shapes, the tools offered and their mode.

    Example: ``ask = _Ask(params, bounds, "gemini", "gemini-2.5-pro", ["gemini-2.5-flash"])``, then
    ``ask.result(model, [ask.tool_use("c1", "get_weather", {"city": "Oslo"})], "toolUse")``.
    """

    def __init__(self, params: Mapping[str, Any], bounds: _SamplingBounds, fmt: str, model: str,
                 models: Sequence[str]) -> None:
        self.max_tokens, self.stops, self.temperature = bounds.check(params)
        self.model = choose_model(params, model, models)
        system = params.get("systemPrompt")
        self.system: str | None = system if isinstance(system, str) and system else None
        self.tools, self._names = _sampling_tools(params)
        self.messages = _sampling_messages(params, fmt, {name: wire for wire, name in self._names.items()})
        self.mode = _tool_mode(params)

    def tool_use(self, call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
        """A model's tool call as a ``tool_use`` block: the tool's name as the server offered it."""
        name = str(name or "")
        return {"type": "tool_use", "id": str(call_id or ""), "name": self._names.get(name, name),
                "input": arguments if isinstance(arguments, dict) else {}}

    def result(self, answered_by: Any, blocks: list[dict[str, Any]], stop: str | None) -> dict[str, Any]:
        """The CreateMessageResult: the model the provider names, else the one asked."""
        return _result(str(answered_by or self.model), blocks, stop, bool(self.tools))


def openai_sampling(
    openai_client: Any,
    model: str,
    *,
    models: Sequence[str] = (),
    max_tokens_limit: int | None = MAX_TOKENS_LIMIT,
    max_stop_sequences: int = MAX_STOP_SEQUENCES,
    max_stop_sequence_chars: int = MAX_STOP_SEQUENCE_CHARS,
    max_input_chars: int = MAX_INPUT_CHARS,
    temperature_range: tuple[float, float] = OPENAI_TEMPERATURES,
    max_requests: int = MAX_REQUESTS,
    per_seconds: float = PER_SECONDS,
    timeout: float | None = 120.0,
) -> SamplingHandler:
    """An ``on_sampling`` handler answering with OpenAI Chat Completions.

    ``openai_client`` is an ``openai.OpenAI()`` (or a compatible client: Azure,
    a local server). Each request maps to one ``chat.completions.create``: the
    messages (text, images, audio, tool use and results) in OpenAI's shapes, the
    ``systemPrompt`` as a system message, ``maxTokens`` as
    ``max_completion_tokens``, ``stopSequences`` (the first 4: the API takes no
    more), ``temperature`` (``temperature_range`` 0..2), and with
    ``sampling_tools=True`` the request's tools and ``toolChoice``.
    ``modelPreferences.hints`` pick among ``model`` and ``models`` (a hint is a
    substring of a name), else ``model``. The answer comes back as a
    CreateMessageResult (tool calls as ``tool_use`` blocks, ``stopReason``
    ``endTurn``/``maxTokens``/``toolUse``). ``timeout`` bounds each API request.
    Runs on the client's handler threads.

    What a server may spend is bounded, each bound a keyword (#28.5): ``maxTokens``
    is clamped to ``max_tokens_limit`` (4096; ``None`` lifts it; 1024 when the
    request has none); a request is refused when it has more than
    ``max_stop_sequences`` (16) stop sequences or one longer than
    ``max_stop_sequence_chars`` (256), a ``temperature`` outside
    ``temperature_range`` (the provider's), or ``messages``, ``systemPrompt`` and
    ``tools`` over ``max_input_chars`` (200,000 characters, base64 data
    included); and at most ``max_requests`` (10) requests reach the provider in
    any ``per_seconds`` (60) seconds, counted per handler (a request names no
    call, so the budget is a window: a tool call that asks 60 times gets 10
    answers, then refusals). A refusal answers the server with a JSON-RPC error
    (code -32602, or -1 for the budget); in a modern server's ``input_required``
    round the call raises InputRequiredError naming it. Checks take time linear
    in the request at most. The options are checked here: a wrong type raises
    TypeError, a value out of range ValueError.

    Example::

        on_sampling = mcp_sync.llm.openai_sampling(openai.OpenAI(), model="gpt-4.1-mini",
                                                   max_tokens_limit=1000, max_requests=5)
        client = mcp_sync.Client.stdio("python", ["server.py"], on_sampling=on_sampling)
    """
    bounds = _SamplingBounds(max_tokens_limit=max_tokens_limit, max_stop_sequences=max_stop_sequences,
                             max_stop_sequence_chars=max_stop_sequence_chars, max_input_chars=max_input_chars,
                             temperature_range=temperature_range, max_requests=max_requests,
                             per_seconds=per_seconds)

    def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
        ask = _Ask(params, bounds, "openai", model, models)
        system = [{"role": "system", "content": ask.system}] if ask.system else []
        request: dict[str, Any] = {"model": ask.model, "messages": system + ask.messages,
                                   "max_completion_tokens": ask.max_tokens}
        if ask.stops:
            request["stop"] = ask.stops[:_OPENAI_STOPS]
        if ask.temperature is not None:
            request["temperature"] = ask.temperature
        if ask.tools:
            request["tools"] = to_openai_tools(ask.tools)
            if ask.mode is not None:
                request["tool_choice"] = ask.mode
        bounds.spend()
        response = _as_dict(openai_client.chat.completions.create(**request, timeout=timeout))
        choice = (response.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        blocks: list[dict[str, Any]] = []
        if isinstance(message.get("content"), str) and message["content"]:
            blocks.append({"type": "text", "text": message["content"]})
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except ValueError:
                arguments = {}
            blocks.append(ask.tool_use(call.get("id"), function.get("name"), arguments))
        finish = choice.get("finish_reason")
        stop = {"stop": "endTurn", "length": "maxTokens", "tool_calls": "toolUse"}.get(finish, finish)
        return ask.result(response.get("model"), blocks, stop)

    return on_sampling


def anthropic_sampling(
    anthropic_client: Any,
    model: str,
    *,
    models: Sequence[str] = (),
    max_tokens_limit: int | None = MAX_TOKENS_LIMIT,
    max_stop_sequences: int = MAX_STOP_SEQUENCES,
    max_stop_sequence_chars: int = MAX_STOP_SEQUENCE_CHARS,
    max_input_chars: int = MAX_INPUT_CHARS,
    temperature_range: tuple[float, float] = ANTHROPIC_TEMPERATURES,
    max_requests: int = MAX_REQUESTS,
    per_seconds: float = PER_SECONDS,
    timeout: float | None = 120.0,
) -> SamplingHandler:
    """An ``on_sampling`` handler answering with the Anthropic Messages API.

    ``anthropic_client`` is an ``anthropic.Anthropic()``. Each request maps to
    one ``messages.create``: the messages (text, images, documents, tool use and
    results) in Anthropic's shapes, ``systemPrompt`` as ``system``,
    ``maxTokens`` as ``max_tokens``, ``stopSequences``, ``temperature``
    (``temperature_range`` 0..1), and with ``sampling_tools=True`` the request's
    tools and ``toolChoice`` (``required`` is Anthropic's ``any``).
    ``modelPreferences.hints`` pick among ``model`` and ``models``. The answer
    comes back as a CreateMessageResult (``stopReason`` ``endTurn``,
    ``stopSequence``, ``maxTokens`` or ``toolUse``). ``timeout`` bounds each API
    request. Runs on the client's handler threads.

    What a server may spend is bounded by the same keywords, defaults and
    refusals as :func:`openai_sampling` (there in full), with
    ``temperature_range`` Anthropic's 0..1.

    Example::

        on_sampling = mcp_sync.llm.anthropic_sampling(anthropic.Anthropic(), model="claude-sonnet-4-5",
                                                      max_tokens_limit=1000, max_requests=5)
        client = mcp_sync.Client.stdio("python", ["server.py"], on_sampling=on_sampling)
    """
    bounds = _SamplingBounds(max_tokens_limit=max_tokens_limit, max_stop_sequences=max_stop_sequences,
                             max_stop_sequence_chars=max_stop_sequence_chars, max_input_chars=max_input_chars,
                             temperature_range=temperature_range, max_requests=max_requests,
                             per_seconds=per_seconds)

    def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
        ask = _Ask(params, bounds, "anthropic", model, models)
        request: dict[str, Any] = {"model": ask.model, "max_tokens": ask.max_tokens, "messages": ask.messages}
        if ask.system:
            request["system"] = ask.system
        if ask.stops:
            request["stop_sequences"] = ask.stops
        if ask.temperature is not None:  # in the body: recent SDKs have no parameter
            request["extra_body"] = {"temperature": ask.temperature}
        if ask.tools:
            request["tools"] = to_anthropic_tools(ask.tools)
            if ask.mode is not None:
                request["tool_choice"] = {"type": {"required": "any"}.get(ask.mode, ask.mode)}
        bounds.spend()
        response = _as_dict(anthropic_client.messages.create(**request, timeout=timeout))
        blocks: list[dict[str, Any]] = []
        for block in response.get("content") or []:
            if block.get("type") == "text":
                blocks.append({"type": "text", "text": str(block.get("text", ""))})
            elif block.get("type") == "tool_use":
                blocks.append(ask.tool_use(block.get("id"), block.get("name"), block.get("input")))
        reason = response.get("stop_reason")
        stop = {"end_turn": "endTurn", "max_tokens": "maxTokens", "stop_sequence": "stopSequence",
                "tool_use": "toolUse"}.get(reason, reason)
        return ask.result(response.get("model"), blocks, stop)

    return on_sampling


def gemini_sampling(
    genai_client: Any,
    model: str,
    *,
    models: Sequence[str] = (),
    max_tokens_limit: int | None = MAX_TOKENS_LIMIT,
    max_stop_sequences: int = MAX_STOP_SEQUENCES,
    max_stop_sequence_chars: int = MAX_STOP_SEQUENCE_CHARS,
    max_input_chars: int = MAX_INPUT_CHARS,
    temperature_range: tuple[float, float] = GEMINI_TEMPERATURES,
    max_requests: int = MAX_REQUESTS,
    per_seconds: float = PER_SECONDS,
    timeout: float | None = 120.0,
) -> SamplingHandler:
    """An ``on_sampling`` handler answering with Google's Gemini API (the ``google-genai`` SDK).

    ``genai_client`` is a ``google.genai.Client()`` (the Gemini API or Vertex AI).
    Each request maps to one ``models.generate_content``: the messages (text,
    images, audio, documents, tool use and results) as Gemini contents, the
    ``systemPrompt`` as ``system_instruction``, ``maxTokens`` as
    ``max_output_tokens``, ``stopSequences`` (the first 5: the API takes no
    more), ``temperature`` (``temperature_range`` 0..2), and with
    ``sampling_tools=True`` the request's tools as function declarations and
    ``toolChoice`` (``auto``, ``required`` as ``ANY``, ``none``).
    ``modelPreferences.hints`` pick among ``model`` and ``models``. The answer
    comes back as a CreateMessageResult (function calls as ``tool_use`` blocks,
    ``stopReason`` ``endTurn``, ``maxTokens`` or ``toolUse``; Gemini says no
    more when a stop sequence ended the answer, so that is ``endTurn`` too).
    ``timeout`` bounds each API request (seconds above 0, or None; a wrong
    value raises ValueError here). Runs on the client's handler threads.

    What a server may spend is bounded by the same keywords, defaults and
    refusals as :func:`openai_sampling` (there in full), with
    ``temperature_range`` Gemini's 0..2.

    Example::

        from google import genai

        on_sampling = mcp_sync.llm.gemini_sampling(genai.Client(), model="gemini-2.5-flash",
                                                   max_tokens_limit=1000, max_requests=5)
        client = mcp_sync.Client.stdio("python", ["server.py"], on_sampling=on_sampling)
    """
    bounds = _SamplingBounds(max_tokens_limit=max_tokens_limit, max_stop_sequences=max_stop_sequences,
                             max_stop_sequence_chars=max_stop_sequence_chars, max_input_chars=max_input_chars,
                             temperature_range=temperature_range, max_requests=max_requests,
                             per_seconds=per_seconds)

    if timeout is not None and not (_real(timeout) and timeout > 0):
        raise ValueError(f"timeout must be a finite number of seconds above 0, or None, not {timeout!r:.40}")
    # the SDK's per-request timeout is in milliseconds
    http_options = None if timeout is None else {"timeout": max(1, math.ceil(timeout * 1000))}

    def on_sampling(params: dict[str, Any]) -> dict[str, Any]:
        ask = _Ask(params, bounds, "gemini", model, models)
        config: dict[str, Any] = {"max_output_tokens": ask.max_tokens}
        if ask.system:
            config["system_instruction"] = ask.system
        if ask.stops:
            config["stop_sequences"] = ask.stops[:_GEMINI_STOPS]
        if ask.temperature is not None:
            config["temperature"] = ask.temperature
        if ask.tools:
            config["tools"] = to_gemini_tools(ask.tools)
            if ask.mode is not None:
                modes = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
                config["tool_config"] = {"function_calling_config": {"mode": modes[ask.mode]}}
        if http_options is not None:
            config["http_options"] = http_options
        bounds.spend()
        response = _as_dict(genai_client.models.generate_content(model=ask.model, contents=ask.messages,
                                                                config=config))
        candidate = (response.get("candidates") or [{}])[0] or {}
        blocks: list[dict[str, Any]] = []
        for part in (candidate.get("content") or {}).get("parts") or []:
            call = part.get("function_call")
            if isinstance(call, Mapping):  # Gemini may give no id: one is made, for the tool_result to name
                blocks.append(ask.tool_use(call.get("id") or f"call_{uuid.uuid4().hex[:24]}", call.get("name"),
                                           call.get("args")))
            elif isinstance(part.get("text"), str) and part["text"] and not part.get("thought"):
                blocks.append({"type": "text", "text": part["text"]})
        reason: Any = candidate.get("finish_reason")
        if reason is None:
            reason = (response.get("prompt_feedback") or {}).get("block_reason")  # the prompt was blocked
        stop = {"STOP": "endTurn", "MAX_TOKENS": "maxTokens"}.get(reason, reason)
        if stop == "endTurn" and any(block["type"] == "tool_use" for block in blocks):
            stop = "toolUse"  # Gemini finishes a function call with STOP
        return ask.result(response.get("model_version"), blocks, stop)

    return on_sampling


# -- framework tools ------------------------------------------------------------------------------


def _named_tools(source: ClientOrGroup) -> list[tuple[str, Tool, str]]:
    """(name valid for every LLM API, Tool, the name call_tool takes) for each tool of a client or group."""
    from ._group import ClientGroup

    tools = list(source.tools(prefix=True)) if isinstance(source, ClientGroup) else list(source.tools())
    return [(name, tool, tool.name) for name, tool in assign_names(tools)]


def _call(source: ClientOrGroup, name: str, schema: Any, arguments: Mapping[str, Any]) -> CallToolResult:
    return source.call_tool(name, drop_optional_nulls(dict(arguments), schema))


def _text_or_error(source: ClientOrGroup, name: str, schema: Any, arguments: Mapping[str, Any]) -> str:
    """The tool's result as text for a model; a failure (isError or an MCP error) as ``Error: ...``."""
    try:
        result = _call(source, name, schema, arguments)
    except (MCPError, ValueError) as exc:
        return f"Error: tool {name!r} failed: {type(exc).__name__}: {exc}"
    return ("Error: " if result.is_error else "") + result_text(result)


def to_langchain_tools(source: ClientOrGroup) -> list[Any]:
    """The tools of a :class:`~mcp_sync.Client` or :class:`~mcp_sync.ClientGroup` (prefixed names)
    as LangChain ``StructuredTool`` objects (needs ``langchain-core``).

    Each tool's ``args_schema`` is the MCP ``inputSchema``; invoking it (``invoke``, or
    ``ainvoke`` from an event loop: the call runs on the loop's executor) calls the tool on
    the client, thread-safe. The content is the result's text; the artifact the
    :class:`~mcp_sync.CallToolResult`. A tool that reports ``isError`` or fails raises
    ``ToolException``, which the tool turns into the error text for the model (a
    ``ToolMessage`` with ``status="error"``); one that reported ``isError`` keeps its
    ``CallToolResult`` as the artifact too (a call that failed without a result has none).
    Names are valid for every LLM API (long or odd ones shortened with a hash).

    Example::

        tools = mcp_sync.llm.to_langchain_tools(client)
        agent = create_agent(model, tools)            # or llm.bind_tools(tools)
        tools[0].invoke({"text": "hi"})
    """
    tools_module = _need("langchain_core.tools", "langchain-core", "to_langchain_tools")
    structured, tool_exception = _langchain_tool_class(), tools_module.ToolException
    made = []
    for llm_name, tool, name in _named_tools(source):
        schema = tool.input_schema

        def run(_name: str = name, _schema: Any = schema, **arguments: Any) -> tuple[str, CallToolResult]:
            try:
                result = _call(source, _name, _schema, arguments)
            except (MCPError, ValueError) as exc:
                raise tool_exception(f"tool {_name!r} failed: {type(exc).__name__}: {exc}") from exc
            if result.is_error:
                failed = tool_exception(result_text(result))
                failed.mcp_result = result  # the artifact of the error ToolMessage (see _langchain_tool_class)
                raise failed
            return result_text(result), result

        async def arun(_name: str = name, _schema: Any = schema, **arguments: Any) -> tuple[str, CallToolResult]:
            result: tuple[str, CallToolResult] = await run_blocking(_call_sync, run, _name, _schema, arguments)
            return result

        made.append(structured(
            name=llm_name, description=tool.description or tool.title or llm_name, args_schema=dict(schema),
            func=run, coroutine=arun, response_format="content_and_artifact", handle_tool_error=_tool_error_text,
        ))
    return made


#: the isError results of the tool run under way (set by _langchain_tool_class's run and arun)
_FAILED_RESULTS: contextvars.ContextVar[list[CallToolResult] | None] = contextvars.ContextVar(
    "mcp_sync_failed_results", default=None)


def _tool_error_text(exc: BaseException) -> str:
    """LangChain's ``handle_tool_error``: the error text for the model (as ``True`` gives), keeping
    an ``isError`` result for the ToolMessage's artifact."""
    result = getattr(exc, "mcp_result", None)
    failed = _FAILED_RESULTS.get()
    if failed is not None and isinstance(result, CallToolResult):
        failed.append(result)
    return str(exc.args[0]) if exc.args else "Tool execution error"


@functools.cache
def _langchain_tool_class() -> Any:
    """``StructuredTool`` whose error ``ToolMessage`` carries the ``CallToolResult`` of an ``isError``
    call as its artifact (LangChain's own run leaves the artifact of a ``ToolException`` empty)."""
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import StructuredTool

    def with_artifact(output: Any, failed: list[CallToolResult]) -> Any:
        if failed and isinstance(output, ToolMessage) and output.artifact is None:
            output.artifact = failed[-1]
        return output

    class MCPStructuredTool(StructuredTool):  # type: ignore[misc]
        """A LangChain tool calling an MCP tool (see :func:`to_langchain_tools`)."""

        def run(self, *args: Any, **kwargs: Any) -> Any:
            failed: list[CallToolResult] = []
            token = _FAILED_RESULTS.set(failed)
            try:
                return with_artifact(super().run(*args, **kwargs), failed)
            finally:
                _FAILED_RESULTS.reset(token)

        async def arun(self, *args: Any, **kwargs: Any) -> Any:
            failed: list[CallToolResult] = []
            token = _FAILED_RESULTS.set(failed)
            try:
                return with_artifact(await super().arun(*args, **kwargs), failed)
            finally:
                _FAILED_RESULTS.reset(token)

    return MCPStructuredTool


def _call_sync(run: Callable[..., Any], name: str, schema: Any, arguments: Mapping[str, Any]) -> Any:
    return run(name, schema, **arguments)


def to_openai_agents_tools(source: ClientOrGroup) -> list[Any]:
    """The tools of a :class:`~mcp_sync.Client` or :class:`~mcp_sync.ClientGroup` (prefixed names)
    as OpenAI Agents SDK ``FunctionTool`` objects (needs ``openai-agents``).

    The agent runs tools from its event loop: each call runs on the loop's executor,
    so the loop is never blocked. The model gets the result's text; a failing tool
    (``isError``, an MCP error, arguments that are not JSON) gives ``Error: ...``
    text, never an exception that would end the run. Schemas are sent as they are
    (``strict_json_schema=False``).

    Example::

        agent = agents.Agent(name="helper", tools=mcp_sync.llm.to_openai_agents_tools(group))
        print(agents.Runner.run_sync(agent, "What is 2 + 40?").final_output)
    """
    agents = _need("agents", "openai-agents", "to_openai_agents_tools")
    made = []
    for llm_name, tool, name in _named_tools(source):
        schema = tool.input_schema

        async def invoke(context: Any, arguments_json: str, _name: str = name, _schema: Any = schema) -> str:
            try:
                arguments = json.loads(arguments_json or "{}")
            except ValueError as exc:
                return f"Error: the arguments are not valid JSON ({exc})"
            if not isinstance(arguments, dict):
                return "Error: the arguments must be a JSON object"
            text: str = await run_blocking(_text_or_error, source, _name, _schema, arguments)
            return text

        made.append(agents.FunctionTool(
            name=llm_name, description=tool.description or tool.title or llm_name,
            params_json_schema=dict(schema), on_invoke_tool=invoke, strict_json_schema=False,
        ))
    return made

