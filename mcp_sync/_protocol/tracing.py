"""Tracing (#19.6): one OpenTelemetry client span per request, when ``opentelemetry-api`` is installed.

Follows OpenTelemetry's semantic conventions for MCP (gen-ai/mcp, status
Development): span name ``{mcp.method.name} {target}`` (the tool or prompt
name when there is one), kind CLIENT; attributes ``mcp.method.name``,
``mcp.protocol.version``, ``jsonrpc.request.id``, ``mcp.resource.uri``,
``gen_ai.tool.name`` and ``gen_ai.operation.name`` (``execute_tool``) for
``tools/call``, ``gen_ai.prompt.name``, ``network.transport`` (``pipe`` for
stdio, ``tcp`` for HTTP), ``network.protocol.name``, ``server.address``,
``server.port``, and ``mcp.session.id`` on legacy Streamable HTTP (the
``Mcp-Session-Id``; modern HTTP and stdio have no session id). A request that fails sets the span's status to ERROR and
``error.type`` (the JSON-RPC error code for a server's error, also in
``rpc.response.status_code``; else the exception's class; ``tool_error`` for a
tool result with ``isError``). W3C trace context (``traceparent``,
``tracestate``) goes in the request's ``params._meta``; a caller's own
``meta=`` entries win. Each request's duration is recorded in the histogram
``mcp.client.operation.duration`` (seconds).

Bounded sizes (#28.6): a span or measurement records at most a fixed size, whatever the caller
or the server sent (a 200 KB tool name made a 200 KB span name, a 2 MB error message a 4 MB span,
message and stack trace). In characters (code points):

* names, :data:`MAX_NAME_LENGTH` (256): ``mcp.method.name``, ``gen_ai.tool.name``,
  ``gen_ai.prompt.name``, ``error.type``, ``rpc.response.status_code``, ``server.address``,
  ``mcp.protocol.version``, ``jsonrpc.request.id``, ``mcp.session.id``, ``exception.type``; the span name is
  ``{method} {name}`` of these, so at most 513;
* any other string attribute, :data:`MAX_ATTRIBUTE_LENGTH` (1024): ``mcp.resource.uri``;
* the status description and ``exception.message``, :data:`MAX_MESSAGE_LENGTH` (1024);
* ``exception.stacktrace``, :data:`MAX_STACKTRACE_LENGTH` (8192), its end kept (the innermost
  frames, then the exception line with the bounded message; a chained cause is left out).

A cut value ends with ``…`` (U+2026; a stack trace starts with it), counted in the bound. Bounded
text is valid Unicode: a cut never splits a surrogate pair, and a lone surrogate (a server's JSON
may carry ``\\ud800``) becomes U+FFFD, so an exporter can always encode it as UTF-8. The work is
linear in the input (only the kept part is copied and looked at). A measurement's attributes are
the span's (but the URI), so bounded the same; how many distinct values a histogram keeps is the
SDK's cardinality limit.

Nothing of OpenTelemetry is imported until the first request of a client with
tracing on (``tracing=False`` turns it off); if it is not installed, tracing
stays off for good. Thread-safe: one :class:`Tracing` per client, its state set
once under a lock.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Any, Callable
from urllib.parse import urlsplit

import attrs

from .._options import CallOptions
from ..exceptions import ServerError

_NAME_FIELDS = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}
_INSTRUMENTATION = "mcp_sync"

#: Names (method, tool or prompt name, error.type, server.address, protocol version, request
#: id): MCP asks tool names of 1 to 128 characters and a DNS name has at most 253, so 256 cuts
#: no real name, and keeps a hostile one from making every span and histogram point as large.
MAX_NAME_LENGTH = 256
#: Any other string attribute (``mcp.resource.uri``): enough to tell one URI from another in a
#: trace viewer, not the 2 MB ``data:`` URI itself.
MAX_ATTRIBUTE_LENGTH = 1024
#: The status description and ``exception.message``: a server's error message is its text and
#: can be any size; the first kilobyte says what went wrong (ServerError keeps it all).
MAX_MESSAGE_LENGTH = 1024
#: ``exception.stacktrace``: the library's frames of a failed request fit several times over;
#: the tail is kept (the innermost frames, then the exception line with its bounded message).
MAX_STACKTRACE_LENGTH = 8192
_CUT = "\u2026"  # "…": marks a value that was cut


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
        session_id: Callable[[], str | None] = lambda: None,
    ) -> dict[str, Any]:
        """``send(options)`` inside a client span, and timed. Only once :meth:`active` said yes
        (the session asks it first: with the API alone, a request costs nothing). ``session_id``
        gives the transport's session id after the request (``mcp.session.id``; on the span only,
        not in the measurement: one value per session would multiply its series)."""
        trace, propagate, tracer, histogram, _ = self._otel  # loaded, and an SDK is set up: active() said so
        attributes = _attributes(method, params, protocol_version, target)
        name_key = _NAME_FIELDS.get(method)
        name = attributes["mcp.method.name"]  # bounded, as is the target's name: the span name is too
        if name_key in attributes:
            name = f"{name} {attributes[name_key]}"
        started = time.monotonic()
        error_type: str | None = None
        with tracer.start_as_current_span(  # exceptions recorded below, bounded (the SDK's record all)
            name, kind=trace.SpanKind.CLIENT, attributes=attributes, record_exception=False,
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
                    span.set_attribute("rpc.response.status_code", bounded(str(exc.code), MAX_NAME_LENGTH))
                message = bounded(_message(exc), MAX_MESSAGE_LENGTH)
                if isinstance(exc, Exception) and span.is_recording():  # as the SDK's record_exception=True did
                    span.add_event("exception", _exception_attributes(exc, message))
                span.set_status(trace.Status(trace.StatusCode.ERROR, message))
                raise
            else:
                if method == "tools/call" and result.get("isError") is True:
                    error_type = "tool_error"
                    span.set_attribute("error.type", error_type)
                    span.set_status(trace.Status(trace.StatusCode.ERROR, "the tool result is an error"))
                return result
            finally:
                if ids:
                    span.set_attribute("jsonrpc.request.id", bounded(str(ids[-1]), MAX_NAME_LENGTH))
                current_session = session_id()
                if current_session is not None:
                    span.set_attribute("mcp.session.id", bounded(current_session, MAX_NAME_LENGTH))
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
    """The span's attributes (also the measurement's, but the URI), every string bounded: the
    method, the tool or prompt name and the URI are the caller's (or a server's list's), the
    protocol version the server's, the address the caller's URL."""
    attributes: dict[str, Any] = {"mcp.method.name": bounded(method, MAX_NAME_LENGTH)}
    if protocol_version:
        attributes["mcp.protocol.version"] = bounded(protocol_version, MAX_NAME_LENGTH)
    params = params or {}
    name_key = _NAME_FIELDS.get(method)
    if name_key is not None and isinstance(params.get("name"), str):
        attributes[name_key] = bounded(params["name"], MAX_NAME_LENGTH)
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    if method == "resources/read" and isinstance(params.get("uri"), str):
        attributes["mcp.resource.uri"] = bounded(params["uri"], MAX_ATTRIBUTE_LENGTH)
    if target.startswith(("http://", "https://")):
        parts = urlsplit(target)
        attributes["network.transport"] = "tcp"
        attributes["network.protocol.name"] = "http"
        if parts.hostname:
            attributes["server.address"] = bounded(parts.hostname, MAX_NAME_LENGTH)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        attributes["server.port"] = port
    else:
        attributes["network.transport"] = "pipe"
    return attributes


def _error_type(exc: BaseException) -> str:
    """``error.type``, bounded: a server's error code (any size of integer the JSON allows), or
    the class of an exception a caller's callback may have raised (any name)."""
    if isinstance(exc, ServerError):
        return bounded(str(exc.code), MAX_NAME_LENGTH)  # the JSON-RPC error code, as the conventions ask
    cls = type(exc)
    module = "mcp_sync" if cls.__module__.startswith("mcp_sync") else cls.__module__
    return bounded(f"{module}.{cls.__qualname__}", MAX_NAME_LENGTH)


def _message(exc: BaseException) -> str:
    """``str(exc)``, or a stand-in when that fails: a caller's callback may raise anything, and the
    span must still end with the request's own exception, not this one."""
    try:
        return str(exc)
    except Exception:  # any failure of a foreign __str__
        return f"<{type(exc).__qualname__}: str() failed>"


def _exception_attributes(exc: BaseException, message: str) -> dict[str, str]:
    """The ``exception`` event of the conventions, as the SDK's ``record_exception`` writes it but
    bounded: the SDK's puts ``str(exc)`` in the message and again in the stack trace (a 2 MB error
    message made a 4 MB span). Here the message is ``message`` (already bounded), the stack trace
    the exception's own frames and that message, its tail kept; a chained cause is left out (its
    message is as unbounded). Formatting the frames does not look at the message at all."""
    cls = type(exc)
    module = cls.__module__
    kind = bounded(f"{module}.{cls.__qualname__}" if module and module != "builtins" else cls.__qualname__,
                   MAX_NAME_LENGTH)
    try:
        frames = "".join(traceback.format_tb(exc.__traceback__))
    except Exception:  # a source line that cannot be read must not hide the request's error
        frames = ""
    stacktrace = f"Traceback (most recent call last):\n{frames}{kind}: {message}\n"
    return {
        "exception.type": kind,
        "exception.message": message,
        "exception.stacktrace": bounded_tail(stacktrace, MAX_STACKTRACE_LENGTH),
        "exception.escaped": "False",  # what the SDK's record_exception=True wrote
    }


def bounded(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and ``…``, ``limit`` in all;
    valid Unicode either way (see :func:`_valid`). Linear in ``limit``, not in ``len(text)``:
    only the kept prefix is copied and looked at."""
    if len(text) <= limit:
        return _valid(text)
    head = text[: limit - len(_CUT)]
    if head and "\ud800" <= head[-1] <= "\udbff":  # the first half of a pair whose second was cut off
        head = head[:-1]
    return _valid(head) + _CUT


def bounded_tail(text: str, limit: int) -> str:
    """As :func:`bounded`, keeping the end instead (``…`` first): the end of a stack trace is what
    says where the error was raised, and what it was."""
    if len(text) <= limit:
        return _valid(text)
    tail = text[len(text) - (limit - len(_CUT)):]
    if tail and "\udc00" <= tail[0] <= "\udfff":  # the second half of a pair whose first was cut off
        tail = tail[1:]
    return _CUT + _valid(tail)


def _valid(text: str) -> str:
    """``text`` as valid Unicode, which an exporter can encode as UTF-8: a surrogate pair left as
    two code points is joined, a lone surrogate becomes U+FFFD (one exporter's encode error would
    lose the whole batch). Never longer than ``text``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text
