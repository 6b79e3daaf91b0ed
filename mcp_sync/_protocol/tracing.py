"""Tracing (#19.6): one OpenTelemetry client span per request, when ``opentelemetry-api`` is installed.

Follows OpenTelemetry's semantic conventions for MCP (gen-ai/mcp, status
Development): span name ``{mcp.method.name} {target}`` (the tool or prompt
name when there is one), kind CLIENT; attributes ``mcp.method.name``,
``mcp.protocol.version``, ``jsonrpc.request.id``, ``mcp.resource.uri``,
``gen_ai.tool.name`` and ``gen_ai.operation.name`` (``execute_tool``) for
``tools/call``, ``gen_ai.prompt.name``, ``network.transport`` (``pipe`` for
stdio, ``tcp`` for HTTP), ``network.protocol.name``, ``server.address``,
``server.port``. A request that fails sets the span's status to ERROR and
``error.type`` (the JSON-RPC error code for a server's error, also in
``rpc.response.status_code``; else the exception's class; ``tool_error`` for a
tool result with ``isError``). W3C trace context (``traceparent``,
``tracestate``) goes in the request's ``params._meta``; a caller's own
``meta=`` entries win. Each request's duration is recorded in the histogram
``mcp.client.operation.duration`` (seconds).

Nothing of OpenTelemetry is imported until the first request of a client with
tracing on (``tracing=False`` turns it off); if it is not installed, tracing
stays off for good. Thread-safe: one :class:`Tracing` per client, its state set
once under a lock.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable
from urllib.parse import urlsplit

import attrs

from .._options import CallOptions
from ..exceptions import ServerError

_NAME_FIELDS = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_INSTRUMENTATION = "mcp_sync"


class Tracing:
    """The OpenTelemetry hooks of one client (loaded on first use; None when unavailable)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loaded = False
        self._otel: Any = None  # (trace module, propagate module, tracer, histogram) once loaded

    def _load(self) -> Any:
        if self._loaded:
            return self._otel
        with self._lock:
            if not self._loaded:
                try:
                    from opentelemetry import metrics, propagate, trace

                    from .._version import __version__

                    tracer = trace.get_tracer(_INSTRUMENTATION, __version__)
                    histogram = metrics.get_meter(_INSTRUMENTATION, __version__).create_histogram(
                        "mcp.client.operation.duration", unit="s",
                        description="The duration of the MCP request as observed on the client",
                    )
                    self._otel = (trace, propagate, tracer, histogram, _configured_check(trace, metrics))
                except ImportError:
                    self._otel = None
                self._loaded = True
        return self._otel

    def active(self) -> bool:
        """Whether requests go through :meth:`request`: OpenTelemetry is installed and an SDK is
        set up. Checked on every request, so it is cheap; an SDK set up later is seen at once."""
        otel = self._otel if self._loaded else self._load()
        return otel is not None and otel[4]()

    def request(
        self,
        method: str,
        params: dict[str, Any] | None,
        options: CallOptions,
        *,
        protocol_version: str | None,
        target: str,
        send: Callable[[CallOptions], dict[str, Any]],
    ) -> dict[str, Any]:
        """``send(options)`` inside a client span, and timed. Only once :meth:`active` said yes
        (the session asks it first: with the API alone, a request costs nothing)."""
        trace, propagate, tracer, histogram, _ = self._otel  # loaded, and an SDK is set up: active() said so
        attributes = _attributes(method, params, protocol_version, target)
        name_key = _NAME_FIELDS.get(method)
        name = f"{method} {attributes[name_key]}" if name_key in attributes else method
        started = time.monotonic()
        error_type: str | None = None
        with tracer.start_as_current_span(
            name, kind=trace.SpanKind.CLIENT, attributes=attributes, record_exception=True,
            set_status_on_exception=False,
        ) as span:
            ids: list[Any] = []
            context: dict[str, Any] = {}
            if span.get_span_context().is_valid:  # sampled out too: the server sees that decision (flags 00)
                carrier: dict[str, str] = {}
                propagate.inject(carrier)
                context = {key: carrier[key] for key in ("traceparent", "tracestate") if key in carrier}
            if span.is_recording() or context:
                chained = options.on_request_id

                def on_request_id(request_id: Any) -> None:
                    ids.append(request_id)
                    if chained is not None:
                        chained(request_id)

                options = attrs.evolve(options, on_request_id=on_request_id,
                                       meta={**context, **(options.meta or {})} if context else options.meta)
            try:
                result = send(options)
            except BaseException as exc:
                error_type = _error_type(exc)
                span.set_attribute("error.type", error_type)
                if isinstance(exc, ServerError):
                    span.set_attribute("rpc.response.status_code", str(exc.code))
                span.set_status(trace.Status(trace.StatusCode.ERROR, str(exc)[:200]))
                raise
            else:
                if method == "tools/call" and result.get("isError") is True:
                    error_type = "tool_error"
                    span.set_attribute("error.type", error_type)
                    span.set_status(trace.Status(trace.StatusCode.ERROR, "the tool result is an error"))
                return result
            finally:
                if ids:
                    span.set_attribute("jsonrpc.request.id", str(ids[-1]))
                measured = {key: value for key, value in attributes.items() if key != "mcp.resource.uri"}
                if error_type is not None:
                    measured["error.type"] = error_type
                histogram.record(time.monotonic() - started, measured)


def _configured_check(trace: Any, metrics: Any) -> Callable[[], bool]:
    """A cheap "is an SDK set up?" for every request. The API keeps its global providers in module
    variables that stay None until one is set; its public getters also look the environment up on
    every call (about 10 µs a request). So the variables are read directly, unless a provider is
    named in the environment (the getters load it) or this API version keeps them elsewhere: then
    the public getters are asked each time."""
    import os
    import sys

    internal = sys.modules.get("opentelemetry.metrics._internal")
    if (
        internal is not None
        and "_TRACER_PROVIDER" in vars(trace)
        and "_METER_PROVIDER" in vars(internal)
        and not {"OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER"} & os.environ.keys()
    ):
        return lambda: trace._TRACER_PROVIDER is not None or internal._METER_PROVIDER is not None
    return lambda: _configured(trace, metrics)


def _configured(trace: Any, metrics: Any) -> bool:
    """Whether an OpenTelemetry SDK is set up. Until one is, the API hands out proxy providers that
    record nothing (their spans are not recording, their instruments drop values); checked per
    request, so an SDK set up after the first request is used from then on."""
    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        return True
    return type(metrics.get_meter_provider()).__name__ != "_ProxyMeterProvider"  # the API's own proxy class


def _attributes(method: str, params: dict[str, Any] | None, protocol_version: str | None, target: str
                ) -> dict[str, Any]:
    attributes: dict[str, Any] = {"mcp.method.name": method}
    if protocol_version:
        attributes["mcp.protocol.version"] = protocol_version
    params = params or {}
    name_key = _NAME_FIELDS.get(method)
    if name_key is not None and isinstance(params.get("name"), str):
        attributes[name_key] = params["name"]
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    if method == "resources/read" and isinstance(params.get("uri"), str):
        attributes["mcp.resource.uri"] = params["uri"]
    if target.startswith(("http://", "https://")):
        parts = urlsplit(target)
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        if parts.hostname:
            attributes["server.address"] = parts.hostname
        port = parts.port or (443 if parts.scheme == "https" else 80)
        attributes["server.port"] = port
    else:
        attributes["network.transport"] = "pipe"
    return attributes


def _error_type(exc: BaseException) -> str:
    if isinstance(exc, ServerError):
        return str(exc.code)  # the JSON-RPC error code, as the conventions ask
    cls = type(exc)
    module = "mcp_sync" if cls.__module__.startswith("mcp_sync") else cls.__module__
    return f"{module}.{cls.__qualname__}"
