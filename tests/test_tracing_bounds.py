"""Tracing records bounded sizes (#28.6): whatever the caller or the server sends, a span and a
measurement hold at most a fixed size (the bounds are mcp_sync._protocol.tracing's constants).

The issue's cases go through a real client and the in-process HTTP fake server (tests/httpkit.py),
recorded by the ``otel`` fixture of test_services (an in-memory exporter and metric reader). The
property drives :class:`Tracing` itself, the piece every request goes through, with generated
names, URIs, addresses and errors of any size (huge ones, non-ASCII, control characters, lone
surrogates).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any, Callable, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_services import otel  # noqa: F401 - the fixture: one home for the global SDK providers

import mcp_sync
from mcp_sync._options import DEFAULT, CallOptions
from mcp_sync._protocol import tracing
from mcp_sync._protocol.tracing import Tracing
from mcp_sync.exceptions import ServerError

from httpkit import FakeServer, Reply, json_reply

pytestmark = pytest.mark.timeout(120)

# The bounds the module's docstring and the Services page state, in characters (code points).
#: Names: mcp.method.name, the tool or prompt name, error.type, server.address, ...
MAX_NAME_LENGTH = 256
#: Any other string attribute (mcp.resource.uri).
MAX_ATTRIBUTE_LENGTH = 1024
#: The status description and exception.message.
MAX_MESSAGE_LENGTH = 1024
#: exception.stacktrace.
MAX_STACKTRACE_LENGTH = 8192
#: The span name: ``{method} {name}``, each part a bounded name.
MAX_SPAN_NAME = 2 * MAX_NAME_LENGTH + 1
#: Every string attribute but the stack trace is within this (names are shorter still).
MAX_STRING = max(MAX_NAME_LENGTH, MAX_ATTRIBUTE_LENGTH, MAX_MESSAGE_LENGTH)
#: One failed span, serialized as the SDK's JSON (its resource included): a constant, whatever the
#: input; the bounds above add up to about 12 KB of text.
MAX_SPAN_JSON = 32_000

_NAMES = ("mcp.method.name", "gen_ai.tool.name", "gen_ai.prompt.name", "error.type", "rpc.response.status_code",
          "server.address", "mcp.protocol.version", "jsonrpc.request.id", "exception.type")


def _limit(key: str) -> int:
    if key in _NAMES:
        return MAX_NAME_LENGTH
    return MAX_STACKTRACE_LENGTH if key == "exception.stacktrace" else MAX_STRING


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _points(reader: Any = None) -> Iterator[dict[str, Any]]:
    """The attributes of every point of the duration histogram ``reader`` (default: the ``otel``
    fixture's) has recorded so far."""
    if reader is None:
        from test_services import _OTEL  # set by the otel fixture

        _, reader = _OTEL
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == "mcp.client.operation.duration":
                    for point in metric.data.data_points:
                        yield dict(point.attributes)


def _check_strings(where: str, attributes: Any) -> None:
    for key, value in dict(attributes or {}).items():
        if isinstance(value, str):
            assert len(value) <= _limit(key), f"{where} {key}: {len(value)} characters"
            assert _utf8(value), f"{where} {key}: not valid Unicode"


def _check_span(span: Any) -> None:
    """Every string of a finished span within its bound, and encodable as UTF-8."""
    assert len(span.name) <= MAX_SPAN_NAME and _utf8(span.name), f"span name: {len(span.name)} characters"
    _check_strings("span", span.attributes)
    for event in span.events:
        assert len(event.name) <= MAX_NAME_LENGTH
        _check_strings(f"event {event.name}", event.attributes)
    description = span.status.description or ""
    assert len(description) <= MAX_MESSAGE_LENGTH and _utf8(description)


def _check_points() -> None:
    points = list(_points())
    assert points
    for attributes in points:
        _check_strings("histogram point", attributes)


@contextlib.contextmanager
def _recording() -> Iterator[tuple[Any, Any]]:
    """(span exporter, metric reader) of SDK providers of this example's own, which a
    :class:`Tracing` made inside records to: the ``otel`` fixture's are global, and hold on to
    every point ever recorded (on the old code, megabytes of them: each example checked them all
    again, and failed for an earlier one)."""
    from unittest import mock

    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    with mock.patch.object(trace, "get_tracer", tracer_provider.get_tracer), \
            mock.patch.object(metrics, "get_meter", meter_provider.get_meter):
        yield exporter, reader
    tracer_provider.shutdown()
    meter_provider.shutdown()


def _answering(method: str, answer: Callable[[Any], dict[str, Any]]) -> Callable[[Any], Reply | None]:
    return lambda request: json_reply(answer(request)) if request.rpc_method == method else None


# -- the cases, through a client ----------------------------------------------------------


def test_a_200_kb_tool_name_makes_a_bounded_span_name_and_attributes(otel) -> None:  # noqa: F811
    """A 200 KB tool name made a 200 KB span name, and as large a ``gen_ai.tool.name`` on the span
    and on every histogram point: now the name is cut to MAX_NAME_LENGTH, marked with ``…``."""
    exporter, _ = otel
    exporter.clear()
    name = "t" * 200_000
    # the legacy era: a modern request also names its tool in a header, which this server's HTTP
    # parser refuses past 64 KB
    with FakeServer("legacy") as server, mcp_sync.Client.http(server.url, mode="legacy", timeout=30) as client:
        assert client.call_tool(name, {"a": 1}).text == '{"a": 1}'
        [sent] = server.seen("tools/call")
        assert sent.json["params"]["name"] == name  # the server still gets the whole name
    [span] = [s for s in exporter.get_finished_spans() if s.name.startswith("tools/call t")]
    assert span.name == "tools/call " + "t" * (MAX_NAME_LENGTH - 1) + "\u2026"
    assert span.attributes["gen_ai.tool.name"] == "t" * (MAX_NAME_LENGTH - 1) + "\u2026"
    _check_span(span)
    _check_points()
    assert len(span.to_json()) <= MAX_SPAN_JSON


def test_a_2_mb_server_error_message_makes_a_bounded_span(otel) -> None:  # noqa: F811
    """A 2 MB error message from the server made a 4 MB span (the message in the status, in the
    exception event's message and again in its stack trace): now the status description and
    ``exception.message`` are at most MAX_MESSAGE_LENGTH, the stack trace MAX_STACKTRACE_LENGTH,
    the whole span a constant size. The exception raised to the caller still has it all."""
    exporter, _ = otel
    exporter.clear()
    message = "boom " * 400_000  # 2 MB
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, timeout=30) as client:
        server.override = _answering("tools/call", lambda request: {
            "jsonrpc": "2.0", "id": request.json["id"], "error": {"code": -32000, "message": message}})
        with pytest.raises(mcp_sync.ServerError) as caught:
            client.call_tool("echo", {})
    assert caught.value.message == message
    [span] = [s for s in exporter.get_finished_spans() if s.name == "tools/call echo"]
    _check_span(span)
    assert span.status.description.startswith("[-32000] boom boom")
    assert span.status.description.endswith("\u2026")
    [event] = [e for e in span.events if e.name == "exception"]
    assert event.attributes["exception.type"] == "mcp_sync.exceptions.ServerError"
    assert event.attributes["exception.message"] == span.status.description
    stacktrace = event.attributes["exception.stacktrace"]
    assert stacktrace.endswith(f"mcp_sync.exceptions.ServerError: {span.status.description}\n")
    assert "tracing.py" in stacktrace  # the frames are there, the message once and bounded
    assert span.attributes["error.type"] == "-32000"
    _check_points()
    assert len(span.to_json()) <= MAX_SPAN_JSON


def test_a_lone_surrogate_in_a_server_message_is_recorded_as_valid_text(otel) -> None:  # noqa: F811
    """JSON may escape a lone surrogate (``\\ud800``): Python keeps it in the message, and a span
    holding it cannot be encoded as UTF-8 (an OTLP exporter would fail on the whole batch). The
    span records U+FFFD in its place."""
    exporter, _ = otel
    exporter.clear()
    with FakeServer("modern") as server, mcp_sync.Client.http(server.url, timeout=30) as client:
        body = json.dumps({"code": -32000, "message": "bad \ud800 half"})  # ensure_ascii: \\ud800 escaped
        server.override = lambda request: Reply(200, {"Content-Type": "application/json"}, (
            f'{{"jsonrpc": "2.0", "id": {json.dumps(request.json["id"])}, "error": {body}}}').encode()
        ) if request.rpc_method == "tools/call" else None
        with pytest.raises(mcp_sync.ServerError) as caught:
            client.call_tool("echo", {})
    assert "\ud800" in caught.value.message
    [span] = [s for s in exporter.get_finished_spans() if s.name == "tools/call echo"]
    _check_span(span)
    assert span.status.description == "[-32000] bad \ufffd half (tools/call)"


# -- the property: every string of every span and point is bounded ---------------------------------

_SPECIAL = st.sampled_from(["\ud83d", "\ude00", "\ud83d\ude00", "\x00", "\n", "\x1b[2J", "\u2026", "\u202e", "é"])
_PIECES = st.characters(exclude_categories=()) | _SPECIAL  # any code point, lone surrogates too


@st.composite
def _texts(draw: Any, pieces: Any = _PIECES) -> str:
    """Text of any size, up to megabytes: a generated piece, repeated (hypothesis itself draws
    short strings only)."""
    piece = "".join(draw(st.lists(pieces, min_size=1, max_size=12)))
    times = draw(st.sampled_from([1, 1, 2, 30, 200, 1500, 20_000, 200_000]))
    return piece * times


_HOST_CHARACTERS = st.characters(categories=["L", "N"]) | st.sampled_from("-.")


@st.composite
def _targets(draw: Any) -> str:
    if draw(st.booleans()):
        return "stdio:server"
    host = draw(_texts(_HOST_CHARACTERS))
    target = f"{draw(st.sampled_from(['http', 'https']))}://{host}:8080/mcp"
    try:
        tracing.urlsplit(target).port  # noqa: B018 - what the client itself would refuse to make
    except ValueError:
        return "http://127.0.0.1:8080/mcp"
    return target


def _exception(kind: str, text: str, code: int) -> BaseException:
    if kind == "server":
        return ServerError(code, text, method="tools/call")
    if kind == "class":  # a caller's callback raised an exception whose class has any name
        cls = type("Raised", (Exception,), {})
        cls.__qualname__ = text
        return cls("x")
    return RuntimeError(text)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(
    method=st.sampled_from(["tools/call", "prompts/get", "resources/read"]) | _texts(),
    name=_texts(),
    uri=_texts(),
    target=_targets(),
    version=st.none() | _texts(),
    request_id=st.integers() | _texts(),
    outcome=st.sampled_from(["ok", "tool_error", "server", "class", "other"]),
    message=_texts(),
    code=st.integers(min_value=-(10**300), max_value=10**300),
)
def test_every_string_a_span_or_point_records_is_bounded(
    otel, method: str, name: str, uri: str, target: str, version: str | None,  # noqa: F811
    request_id: Any, outcome: str, message: str, code: int,
) -> None:
    """Whatever the names, URI, address, protocol version, request id, error message, error code
    or exception class: the span's name, each string attribute, each event attribute and the status
    description are within their bounds and valid Unicode, and so is each histogram point's; a
    value that fits (and is valid text) is recorded as it is."""
    params = {"name": name, "uri": uri, "arguments": {}}

    def send(options: CallOptions) -> dict[str, Any]:
        if options.on_request_id is not None:
            options.on_request_id(request_id)
        if outcome in ("server", "class", "other"):
            raise _exception(outcome, message, code)
        return {"content": [], "isError": outcome == "tool_error"}

    with _recording() as (exporter, reader):
        hooks = Tracing()
        assert hooks.active()  # the otel fixture set the global providers up
        try:
            hooks.request(method, params, DEFAULT, protocol_version=version, target=target, send=send)
        except Exception as exc:
            assert outcome in ("server", "class", "other"), exc
        [span] = exporter.get_finished_spans()
        points = list(_points(reader))
    assert len(points) == 1
    _check_strings("histogram point", points[0])
    _check_span(span)
    attributes = dict(span.attributes)
    if len(method) <= MAX_NAME_LENGTH and _utf8(method):
        assert attributes["mcp.method.name"] == method
    if method == "tools/call" and len(name) <= MAX_NAME_LENGTH and _utf8(name):
        assert span.name == f"tools/call {name}" and attributes["gen_ai.tool.name"] == name
    if method == "resources/read" and len(uri) <= MAX_ATTRIBUTE_LENGTH and _utf8(uri):
        assert attributes["mcp.resource.uri"] == uri
    if outcome in ("server", "class", "other"):
        [event] = [e for e in span.events if e.name == "exception"]
        assert event.attributes["exception.message"] == span.status.description


@settings(max_examples=400, deadline=None)
@given(text=_texts(), limit=st.integers(min_value=2, max_value=3000))
def test_bounded_text_is_a_valid_prefix_or_suffix_within_the_limit(text: str, limit: int) -> None:
    """``bounded`` keeps the start, ``bounded_tail`` the end, each at most ``limit`` characters with
    the ``…`` marker, never half a surrogate pair, always encodable as UTF-8; a valid text that fits
    is returned as it is."""
    bounded, bounded_tail = tracing.bounded, tracing.bounded_tail
    for cut, keep in ((bounded, str.startswith), (bounded_tail, str.endswith)):
        result = cut(text, limit)
        assert len(result) <= limit and _utf8(result)
        if len(text) <= limit and _utf8(text):
            assert result == text
        elif _utf8(text):  # valid text: what is kept is the input's own start or end
            kept = result[:-1] if cut is bounded else result[1:]
            assert len(text) > limit and keep(text, kept) and len(kept) >= limit - 2


def test_the_stated_bounds_are_the_modules() -> None:
    """The numbers this file checks (and the docs state) are the module's constants."""
    assert (tracing.MAX_NAME_LENGTH, tracing.MAX_ATTRIBUTE_LENGTH, tracing.MAX_MESSAGE_LENGTH,
            tracing.MAX_STACKTRACE_LENGTH) == (MAX_NAME_LENGTH, MAX_ATTRIBUTE_LENGTH, MAX_MESSAGE_LENGTH,
                                               MAX_STACKTRACE_LENGTH)
