"""Sampling through an LLM is bounded by default (#28.5): what a server's ``sampling/createMessage``
may make ``mcp_sync.llm.openai_sampling`` / ``anthropic_sampling`` / ``gemini_sampling`` spend.

The issue's cases: a ``maxTokens`` of 1e9 reached the provider, 5,000 stop sequences and a
temperature of 1e308 reached Anthropic, and one tool call made 60 paid calls. Now ``maxTokens``
is clamped (``max_tokens_limit``), stop sequences, temperature and the input's size are bounded
(a request beyond is refused), and at most ``max_requests`` requests in any ``per_seconds``
reach the provider. Each bound is a keyword, checked when the handler is made; each refusal is a
ServerRequestError, which a legacy server gets as a JSON-RPC error (end to end below, through an
in-process SDK server) and which makes a modern server's call raise InputRequiredError.

The provider is a recording stand-in for the SDK client (``FakeOpenAI`` / ``FakeAnthropic`` /
``FakeGemini``), or
the real SDKs against helpers.FakeProvider (a loopback fake of the HTTP API).
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from types import SimpleNamespace
from typing import Annotated, Any, Callable

import pytest
from helpers import FakeProvider, anthropic_message, chat_completion, gemini_response
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.mcpserver.resolve import Sample
from mcp_types import CreateMessageResult, SamplingMessage, TextContent

import mcp_sync
import mcp_sync.llm
from mcp_sync.exceptions import INVALID_PARAMS

pytestmark = pytest.mark.timeout(120)

ASK = [{"role": "user", "content": {"type": "text", "text": "What is 6 x 7?"}}]


class FakeOpenAI:
    """Records each ``chat.completions.create`` and answers "ok"."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self._create))

    def _create(self, **request: Any) -> dict[str, Any]:
        with self._lock:
            self.calls.append(request)
        return chat_completion({"content": "ok"}, "stop")


class FakeAnthropic:
    """Records each ``messages.create`` and answers "ok"."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.messages = SimpleNamespace(create=self._create)

    def _create(self, **request: Any) -> dict[str, Any]:
        with self._lock:
            self.calls.append(request)
        return anthropic_message([{"type": "text", "text": "ok"}], "end_turn")


class FakeGemini:
    """Records each ``models.generate_content`` (its model, contents and config) and answers "ok"."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self.models = SimpleNamespace(generate_content=self._generate)

    def _generate(self, *, model: str, contents: Any, config: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.calls.append({"model": model, "contents": contents, **config})
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finish_reason": "STOP"}]}


Fake = Any  # FakeOpenAI, FakeAnthropic or FakeGemini


def make(provider: str, **options: Any) -> tuple[Fake, Callable[[dict], dict]]:
    """A recording fake of ``provider`` and a sampling handler using it with ``options``."""
    if provider == "openai":
        openai_fake = FakeOpenAI()
        return openai_fake, mcp_sync.llm.openai_sampling(openai_fake, model="gpt-4.1", **options)
    if provider == "gemini":
        gemini_fake = FakeGemini()
        return gemini_fake, mcp_sync.llm.gemini_sampling(gemini_fake, model="gemini-2.5-flash", **options)
    anthropic_fake = FakeAnthropic()
    return anthropic_fake, mcp_sync.llm.anthropic_sampling(anthropic_fake, model="claude-big", **options)


def sent(provider: str, call: dict[str, Any]) -> tuple[Any, Any, Any]:
    """(max tokens, stop sequences, temperature) of one provider call, None where absent."""
    if provider == "openai":
        return call["max_completion_tokens"], call.get("stop"), call.get("temperature")
    if provider == "gemini":
        return call["max_output_tokens"], call.get("stop_sequences"), call.get("temperature")
    return call["max_tokens"], call.get("stop_sequences"), (call.get("extra_body") or {}).get("temperature")


PROVIDERS = pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
STOPS_TAKEN = {"openai": 4, "gemini": 5}  # what each API takes at most (Anthropic: no limit)
TEMPERATURES = {"openai": (0.0, 2.0), "anthropic": (0.0, 1.0), "gemini": (0.0, 2.0)}


def refused(handler: Callable[[dict], dict], params: dict[str, Any], code: int = INVALID_PARAMS) -> str:
    with pytest.raises(mcp_sync.ServerRequestError) as caught:
        handler(params)
    assert caught.value.code == code
    assert caught.value.message.startswith("sampling refused: ")
    return caught.value.message


# -- the cases, with the defaults ------------------------------------------------------------


@PROVIDERS
def test_a_max_tokens_of_1e9_is_clamped_to_the_default_ceiling(provider: str) -> None:
    fake, handler = make(provider)
    handler({"messages": ASK, "maxTokens": 10**9})
    handler({"messages": ASK, "maxTokens": 1e9})  # a float that is a whole number, as JSON may carry it
    handler({"messages": ASK, "maxTokens": 10**5000})
    handler({"messages": ASK, "maxTokens": 77})  # below the ceiling: as asked
    handler({"messages": ASK})  # none: the default
    assert [sent(provider, call)[0] for call in fake.calls] == [4096, 4096, 4096, 77, 1024]


def test_the_real_sdks_send_the_clamped_max_tokens() -> None:
    import anthropic
    import openai
    from google import genai

    with FakeProvider([chat_completion({"content": "42"}, "stop"),
                       anthropic_message([{"type": "text", "text": "42"}], "end_turn"),
                       gemini_response([{"text": "42"}], "STOP")]) as fake:
        mcp_sync.llm.openai_sampling(openai.OpenAI(base_url=f"{fake.url}/v1", api_key="sk-test"),
                                     model="gpt-4.1")({"messages": ASK, "maxTokens": 10**9})
        mcp_sync.llm.anthropic_sampling(anthropic.Anthropic(base_url=fake.url, api_key="sk-ant-test"),
                                        model="claude-big")({"messages": ASK, "maxTokens": 10**9})
        gemini = genai.Client(api_key="gm-test", http_options={"base_url": fake.url, "api_version": "v1beta"})
        mcp_sync.llm.gemini_sampling(gemini, model="gemini-2.5-flash")(
            {"messages": ASK, "maxTokens": 10**9, "stopSequences": [f"S{i}" for i in range(16)]})
    (_, _, openai_body), (_, _, anthropic_body), (gemini_path, _, gemini_body) = fake.requests
    assert openai_body["max_completion_tokens"] == 4096 and anthropic_body["max_tokens"] == 4096
    assert gemini_path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert gemini_body["generationConfig"]["maxOutputTokens"] == 4096
    assert gemini_body["generationConfig"]["stopSequences"] == ["S0", "S1", "S2", "S3", "S4"]  # the API takes 5


@PROVIDERS
def test_5000_stop_sequences_are_refused_and_nothing_is_sent(provider: str) -> None:
    fake, handler = make(provider)
    message = refused(handler, {"messages": ASK, "maxTokens": 10, "stopSequences": ["END"] * 5000})
    assert "5000 stop sequences" in message and "max_stop_sequences" in message
    refused(handler, {"messages": ASK, "stopSequences": ["x" * 257]})  # one too long
    assert fake.calls == []
    handler({"messages": ASK, "stopSequences": [f"S{i}" for i in range(16)]})  # the most taken
    stops = sent(provider, fake.calls[0])[1]
    assert stops == [f"S{i}" for i in range(STOPS_TAKEN.get(provider, 16))]  # OpenAI's API takes 4, Gemini's 5


@PROVIDERS
@pytest.mark.parametrize("temperature", [1e308, -1e308, -0.1, 10**400, float("nan"), float("inf"), True, "0.5",
                                         [0.5]])
def test_a_temperature_out_of_range_is_refused_and_nothing_is_sent(provider: str, temperature: Any) -> None:
    fake, handler = make(provider)
    message = refused(handler, {"messages": ASK, "temperature": temperature})
    assert "temperature" in message and len(message) < 200
    assert fake.calls == []


def test_each_provider_takes_its_own_temperature_range() -> None:
    openai_fake, openai_handler = make("openai")
    anthropic_fake, anthropic_handler = make("anthropic")
    gemini_fake, gemini_handler = make("gemini")
    for temperature in (0, 0.7, 1):
        openai_handler({"messages": ASK, "temperature": temperature})
        anthropic_handler({"messages": ASK, "temperature": temperature})
        gemini_handler({"messages": ASK, "temperature": temperature})
    openai_handler({"messages": ASK, "temperature": 2})
    gemini_handler({"messages": ASK, "temperature": 2})
    assert "0..1 (temperature_range)" in refused(anthropic_handler, {"messages": ASK, "temperature": 1.5})
    assert "0..2 (temperature_range)" in refused(openai_handler, {"messages": ASK, "temperature": 2.5})
    assert "0..2 (temperature_range)" in refused(gemini_handler, {"messages": ASK, "temperature": 2.5})
    assert [sent("openai", call)[2] for call in openai_fake.calls] == [0, 0.7, 1, 2]
    assert [sent("anthropic", call)[2] for call in anthropic_fake.calls] == [0, 0.7, 1]
    assert [sent("gemini", call)[2] for call in gemini_fake.calls] == [0, 0.7, 1, 2]
    openai_handler({"messages": ASK, "temperature": None})  # none: none sent
    assert "temperature" not in openai_fake.calls[-1]


@PROVIDERS
def test_a_request_too_big_is_refused_in_time_linear_in_the_bound(provider: str) -> None:
    fake, handler = make(provider)
    big = {"messages": [{"role": "user", "content": {"type": "text", "text": "x" * 200_001}}]}
    assert "max_input_chars" in refused(handler, big)
    refused(handler, {"messages": ASK, "systemPrompt": "s" * 200_001})
    refused(handler, {"messages": ASK, "tools": [{"name": "t", "inputSchema": {"type": "object",
                                                                              "description": "d" * 200_001}}]})
    deep: Any = "x"
    for _ in range(300_000):  # nested deeper than any recursion could go
        deep = [deep]
    many = {"messages": [{"role": "user", "content": {"type": "text", "text": "x"}}] * 1_000_000}
    started = time.thread_time()
    refused(handler, {"messages": [{"role": "user", "content": deep}]})
    refused(handler, many)
    assert time.thread_time() - started < 5
    assert fake.calls == []
    handler({"messages": [{"role": "user", "content": {"type": "text", "text": "x" * 150_000}}]})  # within it
    assert len(fake.calls) == 1


@PROVIDERS
def test_the_budget_stops_paid_calls_at_the_limit(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(mcp_sync.llm, "time", SimpleNamespace(monotonic=lambda: clock[0]), raising=False)
    fake, handler = make(provider)
    outcomes = []
    for _ in range(60):  # the issue: one tool call asking 60 times
        try:
            handler({"messages": ASK})
            outcomes.append("ok")
        except mcp_sync.ServerRequestError as error:
            assert error.code == -1 and "at most 10 sampling requests in 60 seconds (max_requests" in error.message
            outcomes.append("refused")
    assert outcomes == ["ok"] * 10 + ["refused"] * 50
    assert len(fake.calls) == 10
    clock[0] += 59.9
    refused(handler, {"messages": ASK}, code=-1)  # the window still holds the ten
    clock[0] += 0.1
    handler({"messages": ASK})  # a minute after the first: one more
    assert len(fake.calls) == 11


@PROVIDERS
def test_the_budget_holds_for_requests_side_by_side(provider: str) -> None:
    fake, handler = make(provider)
    results: list[str] = []
    barrier = threading.Barrier(40)

    def ask() -> None:
        barrier.wait()
        try:
            handler({"messages": ASK})
            results.append("ok")
        except mcp_sync.ServerRequestError:
            results.append("refused")

    threads = [threading.Thread(target=ask) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == ["ok"] * 10 + ["refused"] * 30 and len(fake.calls) == 10


@PROVIDERS
def test_refused_requests_cost_nothing_from_the_budget(provider: str) -> None:
    fake, handler = make(provider, max_requests=3)
    for _ in range(20):
        refused(handler, {"messages": ASK, "temperature": 1e308})
    for _ in range(3):
        handler({"messages": ASK})
    refused(handler, {"messages": ASK}, code=-1)
    assert len(fake.calls) == 3


# -- each bound is adjustable, and checked when the handler is made --------------------------------------


@PROVIDERS
def test_each_bound_is_adjustable(provider: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fake, handler = make(provider, max_tokens_limit=100, max_stop_sequences=2, max_stop_sequence_chars=3,
                         max_input_chars=1000, temperature_range=(0.2, 0.5), max_requests=30, per_seconds=3600)
    handler({"messages": ASK, "maxTokens": 500, "stopSequences": ["a", "abc"], "temperature": 0.5})
    assert sent(provider, fake.calls[0]) == (100, ["a", "abc"], 0.5)
    refused(handler, {"messages": ASK, "stopSequences": ["a", "b", "c"]})
    refused(handler, {"messages": ASK, "stopSequences": ["abcd"]})
    refused(handler, {"messages": ASK, "temperature": 0.1})
    refused(handler, {"messages": ASK, "systemPrompt": "s" * 1000})
    for _ in range(29):
        handler({"messages": ASK})
    refused(handler, {"messages": ASK}, code=-1)
    assert "30 sampling requests in 3600 seconds" in refused(handler, {"messages": ASK}, code=-1)

    lifted, unbounded = make(provider, max_tokens_limit=None, max_stop_sequences=5000, max_input_chars=10**7,
                             temperature_range=(0, 1e308))
    unbounded({"messages": ASK, "maxTokens": 10**9, "stopSequences": ["END"] * 5000, "temperature": 1e308})
    assert sent(provider, lifted.calls[0])[0] == 10**9 and sent(provider, lifted.calls[0])[2] == 1e308
    refused(make(provider, max_stop_sequences=0)[1], {"messages": ASK, "stopSequences": ["END"]})


@PROVIDERS
@pytest.mark.parametrize("options,error", [
    ({"max_tokens_limit": 0}, ValueError),
    ({"max_tokens_limit": 4096.0}, TypeError),
    ({"max_tokens_limit": True}, TypeError),
    ({"max_stop_sequences": -1}, ValueError),
    ({"max_stop_sequences": "16"}, TypeError),
    ({"max_stop_sequence_chars": 0}, ValueError),
    ({"max_stop_sequence_chars": None}, TypeError),
    ({"max_input_chars": 0}, ValueError),
    ({"max_input_chars": 1.5}, TypeError),
    ({"max_requests": 0}, ValueError),
    ({"max_requests": None}, TypeError),
    ({"per_seconds": 0}, ValueError),
    ({"per_seconds": -1.0}, ValueError),
    ({"per_seconds": float("inf")}, TypeError),
    ({"per_seconds": "60"}, TypeError),
    ({"temperature_range": (1.0, 0.5)}, ValueError),
    ({"temperature_range": (-0.5, 1.0)}, ValueError),
    ({"temperature_range": (0, 10**400)}, ValueError),
    ({"temperature_range": (0.0, float("nan"))}, TypeError),
    ({"temperature_range": 1.0}, TypeError),
    ({"temperature_range": (0.0, 1.0, 2.0)}, TypeError),
    ({"temperature_range": ("0", "1")}, TypeError),
])
def test_bad_options_are_refused_when_the_handler_is_made(provider: str, options: dict[str, Any],
                                                          error: type[Exception]) -> None:
    name = next(iter(options))
    with pytest.raises(error, match=f"^{name} must "):
        make(provider, **options)


# -- properties ------------------------------------------------------------------------------------------


NUMBERS = st.one_of(st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.floats(), st.text(max_size=3),
                    st.just(10**5000))
TEXTS = st.builds(lambda n, c: c * n, st.integers(0, 30_000), st.sampled_from("xé\U0001f600"))
MESSAGES = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]),
                                           "content": st.builds(lambda t: {"type": "text", "text": t}, TEXTS)}),
                    max_size=6)
PARAMS = st.fixed_dictionaries({"messages": MESSAGES}, optional={
    "maxTokens": NUMBERS,
    "temperature": NUMBERS,
    "stopSequences": st.one_of(st.none(), st.integers(),
                               st.lists(st.one_of(st.text(max_size=40), st.integers(), TEXTS), max_size=40)),
    "systemPrompt": st.one_of(st.none(), TEXTS),
})
BOUNDS = st.fixed_dictionaries({
    "max_tokens_limit": st.one_of(st.none(), st.integers(1, 10**6)),
    "max_stop_sequences": st.integers(0, 30),
    "max_stop_sequence_chars": st.integers(1, 100),
    "max_input_chars": st.integers(1, 100_000),
    "temperature_range": st.tuples(st.floats(0, 3), st.floats(0, 3)).map(lambda pair: tuple(sorted(pair))),
})


def _strings(value: Any) -> int:
    """The total length of the strings in ``value`` (an independent, smaller measure than the handler's)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_strings(k) + _strings(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_strings(item) for item in value)
    return 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(provider=st.sampled_from(["openai", "anthropic", "gemini"]), bounds=BOUNDS, params=PARAMS)
def test_sampling_defaults_bound_cost(provider: str, bounds: dict[str, Any], params: dict[str, Any]) -> None:
    """For any request, what reaches the provider is within the bounds, or the request is refused
    (a ServerRequestError, nothing sent); with the defaults and with any other bounds."""
    for options in ({}, bounds):
        fake, handler = make(provider, **options)
        limit = options.get("max_tokens_limit", 4096)
        low, high = options.get("temperature_range", TEMPERATURES[provider])
        try:
            handler(params)
        except mcp_sync.ServerRequestError as error:
            assert error.code == INVALID_PARAMS and error.message.startswith("sampling refused: ")
            assert fake.calls == []
            continue
        (call,) = fake.calls
        max_tokens, stops, temperature = sent(provider, call)
        assert isinstance(max_tokens, int) and max_tokens >= 1 and (limit is None or max_tokens <= limit)
        assert len(stops or []) <= min(options.get("max_stop_sequences", 16), STOPS_TAKEN.get(provider, 10**9))
        assert all(isinstance(s, str) and len(s) <= options.get("max_stop_sequence_chars", 256) for s in stops or [])
        assert temperature is None or (type(temperature) is float and low <= temperature <= high)
        assert _strings([params["messages"], params.get("systemPrompt")]) <= options.get("max_input_chars", 200_000)


@settings(max_examples=100, deadline=None)
@given(max_requests=st.integers(1, 8), per_seconds=st.floats(0.5, 100),
       gaps=st.lists(st.floats(0, 50), min_size=1, max_size=60))
def test_no_window_holds_more_paid_calls_than_the_budget(max_requests: int, per_seconds: float,
                                                         gaps: list[float]) -> None:
    """Requests at any times: in every window of ``per_seconds`` at most ``max_requests`` reach the
    provider, and a request is refused only when the window before it is full."""
    clock = [0.0]
    real = getattr(mcp_sync.llm, "time", time)
    mcp_sync.llm.time = SimpleNamespace(monotonic=lambda: clock[0])  # type: ignore[assignment]
    try:
        fake, handler = make("openai", max_requests=max_requests, per_seconds=per_seconds)
        paid: list[float] = []
        for gap in gaps:
            clock[0] += gap
            recent = [t for t in paid if clock[0] - t < per_seconds]
            try:
                handler({"messages": ASK})
                paid.append(clock[0])
                assert len(recent) < max_requests
            except mcp_sync.ServerRequestError as error:
                assert error.code == -1 and len(recent) == max_requests
        assert len(fake.calls) == len(paid)
    finally:
        mcp_sync.llm.time = real  # type: ignore[assignment]


# -- end to end: a server's sampling requests, refused, reach it as errors -----------------------------------


@pytest.fixture(scope="module")
def burner() -> Any:
    """An SDK server (in-process) whose ``burn`` tool asks for ``times`` samples with the given
    ``maxTokens`` and ``stopSequences`` (legacy: sampling/createMessage requests of its own) and
    returns each outcome: ``ok`` or the error the client answered."""
    server = MCPServer("burner")

    @server.tool()
    async def burn(ctx: Context, times: int, max_tokens: int, stops: int) -> str:
        outcomes = []
        for _ in range(times):
            try:
                with warnings.catch_warnings():  # sampling is deprecated in the SDK's newest era
                    warnings.simplefilter("ignore")
                    await ctx.session.create_message(
                        [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
                        max_tokens=max_tokens, stop_sequences=["END"] * stops or None)
                outcomes.append("ok")
            except Exception as exc:
                outcomes.append(f"error: {exc}")
        return json.dumps(outcomes)

    return server


@PROVIDERS
def test_a_legacy_server_gets_each_refusal_as_an_error(burner: Any, provider: str) -> None:
    fake, handler = make(provider)
    with mcp_sync.Client.inprocess(burner, mode="legacy", timeout=30, on_sampling=handler) as client:
        outcomes = json.loads(client.call_tool("burn", {"times": 60, "max_tokens": 10**9, "stops": 0}).text)
        assert outcomes[:10] == ["ok"] * 10 and len(outcomes) == 60
        assert all(o.startswith("error: sampling refused: ") and "max_requests" in o for o in outcomes[10:])
        assert len(fake.calls) == 10 and all(sent(provider, call)[0] == 4096 for call in fake.calls)
    fake, handler = make(provider)
    with mcp_sync.Client.inprocess(burner, mode="legacy", timeout=30, on_sampling=handler) as client:
        (outcome,) = json.loads(client.call_tool("burn", {"times": 1, "max_tokens": 10, "stops": 5000}).text)
        assert outcome.startswith("error: sampling refused: 5000 stop sequences")
        assert client.call_tool("burn", {"times": 1, "max_tokens": 10, "stops": 1}).text == '["ok"]'  # still serves
    assert len(fake.calls) == 1


def _sample(stops: int) -> Sample:
    """A modern server's sampling request (an ``input_required`` round): ``maxTokens`` 1e9, ``stops`` stops."""
    return Sample([SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
                  max_tokens=10**9, stop_sequences=["END"] * stops or None)


@pytest.mark.parametrize("provider,model", [("anthropic", "claude-mini"), ("gemini", "gemini-2.5-flash")])
def test_a_modern_servers_call_raises_the_refusal(provider: str, model: str) -> None:
    server = MCPServer("asker")

    @server.tool()
    def ask(stops: int, answer: Annotated[CreateMessageResult, Resolve(_sample)]) -> str:
        return answer.model

    fake, handler = make(provider)
    with mcp_sync.Client.inprocess(server, mode="modern", timeout=30, on_sampling=handler) as client:
        assert client.call_tool("ask", {"stops": 1}).text == model
        assert sent(provider, fake.calls[0])[:2] == (4096, ["END"])
        with pytest.raises(mcp_sync.InputRequiredError, match="refused: sampling refused: 5000 stop sequences"):
            client.call_tool("ask", {"stops": 5000})
    assert len(fake.calls) == 1
