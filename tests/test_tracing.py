"""Tracing (#19.6) where the SDK's providers are not the usual pair, or the request never left.

The OpenTelemetry SDK records in memory (the ``otel`` fixture of test_services: its providers are
global, set once per process); a child process shows what only a fresh process can (a metrics SDK
without a tracing one). The peer is the Python SDK server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_services import otel  # noqa: F401 - the fixture: one home for the global SDK providers

import mcp_sync

from conftest import PY, refused_port

pytestmark = pytest.mark.timeout(60)


def _spans(exporter, name: str) -> list:  # type: ignore[no-untyped-def]
    return [span for span in exporter.get_finished_spans() if span.name == name]


def test_without_opentelemetry_importable_a_client_stays_untraced_for_good(
    otel, sdk_http_url: str, monkeypatch: pytest.MonkeyPatch  # noqa: F811
) -> None:
    """If ``opentelemetry`` cannot be imported at a client's first request, its requests take the
    plain path, and keep it even once the package is back; a client made later traces."""
    exporter, _ = otel
    exporter.clear()
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    with mcp_sync.Client.http(sdk_http_url, mode="modern", timeout=30) as untraced:
        assert untraced.call_tool("echo", {"text": "plain"}).text == "plain"
        monkeypatch.undo()
        assert untraced.call_tool("echo", {"text": "still plain"}).text == "still plain"
        assert _spans(exporter, "tools/call echo") == []
        with mcp_sync.Client.http(sdk_http_url, mode="modern", timeout=30) as traced:
            assert traced.call_tool("echo", {"text": "traced"}).text == "traced"
    assert len(_spans(exporter, "tools/call echo")) == 1


def test_a_request_that_never_reached_a_server_is_a_failed_span_without_a_request_id(otel) -> None:  # noqa: F811
    """A call whose connection fails (nothing listens on the port) gets a span all the same:
    status ERROR, ``error.type`` the exception's class, the address and port; no request id (none
    was sent)."""
    from opentelemetry.trace import StatusCode

    exporter, reader = otel
    exporter.clear()
    with refused_port() as port:
        client = mcp_sync.Client.http(f"http://127.0.0.1:{port}/mcp", timeout=10, max_retries=0)  # refused at use
        try:
            with pytest.raises(mcp_sync.ConnectionClosed):
                client.call_tool("echo", {"text": "x"})
        finally:
            client.close()
    [span] = _spans(exporter, "tools/call echo")
    assert span.status.status_code is StatusCode.ERROR
    attributes = dict(span.attributes)
    assert attributes["error.type"] == "mcp_sync.ServerUnreachable"  # a ConnectionClosed, since #29.2
    assert attributes["network.transport"] == "tcp" and attributes["server.port"] == port
    assert attributes["server.address"] == "127.0.0.1" and "jsonrpc.request.id" not in attributes
    points = [point for resource in reader.get_metrics_data().resource_metrics
              for scope in resource.scope_metrics for metric in scope.metrics
              if metric.name == "mcp.client.operation.duration" for point in metric.data.data_points]
    assert any(point.attributes.get("error.type") == "mcp_sync.ServerUnreachable"
               and point.attributes.get("server.port") == port for point in points)


_METRICS_ONLY = """
import json, sys
sys.path.insert(0, sys.argv[1])
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from httpkit import FakeServer
import mcp_sync

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
with FakeServer("modern") as server, mcp_sync.Client.http(server.url, timeout=30) as client:
    assert client.call_tool("echo", {"text": "m"}).text == '{"text": "m"}'
    [call] = server.seen("tools/call")
points = [dict(point.attributes) for resource in reader.get_metrics_data().resource_metrics
          for scope in resource.scope_metrics for metric in scope.metrics
          if metric.name == "mcp.client.operation.duration" for point in metric.data.data_points]
print(json.dumps({"points": points, "meta": call.json["params"].get("_meta") or {}}))
"""


def test_with_only_a_metrics_sdk_durations_are_recorded_and_no_trace_context_is_sent() -> None:
    """A metrics SDK without a tracing one: the request's span does not record, so no
    ``traceparent`` goes into ``_meta``, but its duration is measured."""
    out = subprocess.run([PY, "-c", _METRICS_ONLY, str(Path(__file__).parent)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    [point] = [p for p in seen["points"] if p.get("mcp.method.name") == "tools/call"]
    assert point["gen_ai.tool.name"] == "echo" and point["server.address"] == "127.0.0.1"
    assert "traceparent" not in seen["meta"] and "tracestate" not in seen["meta"]
    assert seen["meta"]["io.modelcontextprotocol/protocolVersion"]  # the request did carry its _meta


def test_an_ipv6_server_is_traced_with_its_address_and_port(otel) -> None:  # noqa: F811
    """A client of an IPv6 literal URL keeps the brackets in its target, so a traced request names
    the server's address and port (the target was ``http://::1:1/mcp`` and every traced request to
    it raised ValueError while parsing the port). Nothing listens: the span records the failure."""
    exporter, _ = otel
    with refused_port("::1") as port:
        client = mcp_sync.Client.http(f"http://[::1]:{port}/mcp", timeout=5)
        try:
            assert f"[::1]:{port}" in repr(client)
            with pytest.raises(mcp_sync.ConnectionClosed):
                client.call_tool("echo", {"text": "x"})
        finally:
            client.close()
    spans = [span for span in exporter.get_finished_spans() if span.attributes.get("server.port") == port]
    assert spans, "no span names the server's port"
    assert spans[-1].attributes.get("server.address") == "::1"


@pytest.mark.parametrize("server", ["sdk", "everything"])
def test_legacy_http_spans_carry_the_mcp_session_id(otel, server: str, request: pytest.FixtureRequest) -> None:  # noqa: F811
    """OpenTelemetry's MCP conventions: ``mcp.session.id`` on the spans of a legacy Streamable HTTP
    session (the server's Mcp-Session-Id), never in the duration measurement (one series per session
    would be unbounded); a modern (stateless) HTTP client's spans have none."""
    exporter, reader = otel
    url = request.getfixturevalue("sdk_http_url" if server == "sdk" else "everything_http_url")
    exporter.clear()
    with mcp_sync.Client.http(url, mode="legacy", timeout=30) as client:
        assert client.call_tool("echo", {"text" if server == "sdk" else "message": "x"}).text
        transport = client.transport
        session_id = transport.session_id
        assert isinstance(session_id, str) and session_id
    (span,) = _spans(exporter, "tools/call echo")
    assert span.attributes["mcp.session.id"] == session_id
    assert all("mcp.session.id" not in point.attributes
               for metric in reader.get_metrics_data().resource_metrics[0].scope_metrics[0].metrics
               for point in metric.data.data_points)
    if server == "sdk":
        exporter.clear()
        with mcp_sync.Client.http(url, mode="modern", timeout=30) as modern:
            modern.call_tool("echo", {"text": "y"})
        (span,) = _spans(exporter, "tools/call echo")
        assert "mcp.session.id" not in span.attributes
