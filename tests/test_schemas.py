"""Tool schema checks (#10 Schemas): outputSchema on results, inputSchema on request.

Against the SDK server (a real peer whose ``add`` declares an outputSchema) on
stdio and HTTP, and tests/servers/schema_server.py for what real servers do not
do: results that break their own schema, a draft-07 schema, a network ``$ref``.
"""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import threading
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._schemas import VALIDATORS, _ValidatorCache, mismatches

from conftest import PY, SDK_SERVER, SERVERS

SCHEMA_SERVER = str(SERVERS / "schema_server.py")
pytestmark = pytest.mark.timeout(30)


def schema_client(*extra: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [SCHEMA_SERVER, *extra], timeout=10, **options)


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "mcp_sync" and r.levelno == logging.WARNING]


def test_warn_is_the_default_and_names_the_path(caplog: pytest.LogCaptureFixture) -> None:
    with schema_client() as client:
        caplog.set_level(logging.WARNING, logger="mcp_sync")
        assert client.call_tool("weather", {"city": "Oslo"}).structured_content == {"temp": 21.5}
        assert warnings_of(caplog) == []
        bad = client.call_tool("weather", {"city": "Oslo", "mode": "bad"})
        assert bad.structured_content == {"temp": "warm"}  # returned anyway
        client.call_tool("weather", {"city": "Oslo", "mode": "none"})
        client.call_tool("weather", {"city": "Oslo", "mode": "error"})  # isError: no structured result required
    found = warnings_of(caplog)
    assert len(found) == 2, found
    assert "'weather'" in found[0] and "$.temp" in found[0] and "'warm' is not of type 'number'" in found[0]
    assert "no structuredContent" in found[1]


def test_strict_raises_protocol_error_with_the_path() -> None:
    with schema_client(validate_output="strict") as client:
        assert client.call_tool("weather", {"city": "Oslo"}).structured_content == {"temp": 21.5}
        with pytest.raises(mcp_sync.ProtocolError, match=r"\$\.temp"):
            client.call_tool("weather", {"city": "Oslo", "mode": "bad"})
        with pytest.raises(mcp_sync.ProtocolError, match="no structuredContent"):
            client.call_tool("weather", {"city": "Oslo", "mode": "none"})
        assert client.call_tool("weather", {"city": "Oslo", "mode": "error"}).is_error
        assert client.call_tool("weather", {"city": "x"}).structured_content  # still serving


def test_false_skips(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    with schema_client(validate_output=False) as client:
        client.call_tool("weather", {"city": "Oslo", "mode": "bad"})
        assert client.call_tool("list_count").structured_content == {"n": 0}  # and no listing for it
    assert warnings_of(caplog) == []
    with pytest.raises(ValueError, match="validate_output"):
        mcp_sync.Client.stdio(PY, [SCHEMA_SERVER], validate_output="loud")


def test_declared_dialect_is_honoured(caplog: pytest.LogCaptureFixture) -> None:
    """Draft-07's tuple ``items`` only means something in draft-07: a mismatch there proves the
    declared ``$schema`` picked the validator (2020-12 would reject the schema itself and skip)."""
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with schema_client() as client:
        client.call_tool("tuple")
    assert any("$[0]" in m and "is not of type 'string'" in m for m in warnings_of(caplog)), warnings_of(caplog)
    assert mismatches({"prefixItems": [{"type": "string"}]}, [1], "x") == [("$[0]", "1 is not of type 'string'")]


@pytest.fixture
def listener() -> Iterator[tuple[str, list[bytes]]]:
    """A TCP listener on 127.0.0.1 that records every connection made to it."""
    seen: list[bytes] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    seen.append(conn.recv(1000))
                except OSError:
                    seen.append(b"")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/schema.json", seen
    stop.set()
    thread.join(2)
    server.close()


def test_network_ref_is_never_fetched(listener: tuple[str, list[bytes]], caplog: pytest.LogCaptureFixture) -> None:
    url, seen = listener
    caplog.set_level(logging.DEBUG, logger="mcp_sync")
    with schema_client("--ref-url", url, validate_output="strict") as client:
        with pytest.raises(mcp_sync.ProtocolError, match=r"'remote'.*cannot be resolved"):
            client.call_tool("remote")  # rejected, never passed as if the $ref allowed anything
    with schema_client("--ref-url", url) as client:
        assert client.call_tool("remote").structured_content == {"x": 1}  # "warn": passed, and logged
    assert seen == []
    assert any("'remote'" in r.getMessage() and "not checked" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)


def test_schema_comes_from_one_listing_and_validators_compile_once() -> None:
    VALIDATORS.clear()
    before = VALIDATORS.compiled
    with schema_client() as client:
        assert client.call_tool("list_count").structured_content == {"n": 0}  # the listing follows the call
        assert client.call_tool("list_count").structured_content == {"n": 1}
        assert client.call_tool("list_count").structured_content == {"n": 1}
    with schema_client() as client:
        list(client.tools())  # already listed: no second listing for the call
        assert client.call_tool("list_count").structured_content == {"n": 1}
        for _ in range(3):
            client.call_tool("weather", {"city": "x"})
    assert VALIDATORS.compiled - before == 2  # list_count's and weather's, once each across both clients


def test_validator_cache_is_bounded() -> None:
    cache = _ValidatorCache(2)
    schemas = [{"type": "integer", "minimum": i} for i in range(3)]
    for schema in schemas:
        cache.get(schema)
    cache.get(schemas[0])  # dropped by then: compiled again
    assert cache.compiled == 4 and len(cache._by_content) == 2 and len(cache._by_identity) == 2


def test_input_checks_on_request() -> None:
    with schema_client() as client:
        with pytest.raises(mcp_sync.InvalidArguments) as caught:
            client.call_tool("weather", {"city": 5}, validate=True)
        assert caught.value.path == "$.city" and isinstance(caught.value, ValueError)
        assert isinstance(caught.value, mcp_sync.MCPError)
        with pytest.raises(mcp_sync.InvalidArguments, match=r"at \$: 'city' is a required property"):
            client.call_tool("weather", {}, validate=True)
        assert client.call_tool("weather", {"city": 5}).structured_content  # off by default: sent as is
    with schema_client(validate_input=True) as client:
        with pytest.raises(mcp_sync.InvalidArguments):
            client.call_tool("weather", {"city": "x", "mode": "sunny"})
        assert client.call_tool("weather", {"city": 5}, validate=False).structured_content


def test_sdk_server_stdio_tool_objects_and_input_check(caplog: pytest.LogCaptureFixture) -> None:
    """The real SDK server: its structured results pass strict checks, a Tool is accepted as the name,
    and invalid arguments never reach it (the SDK would answer an isError result)."""
    caplog.set_level(logging.WARNING, logger="mcp_sync")
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=20, validate_output="strict") as client:
        add = next(tool for tool in client.tools() if tool.name == "add")
        assert add.output_schema is not None
        assert client.call_tool(add, {"a": 2, "b": 3}).structured_content == {"result": 5}
        with pytest.raises(mcp_sync.InvalidArguments, match=r"\$\.a"):
            client.call_tool(add, {"a": "two", "b": 3}, validate=True)
        sent = client.call_tool("add", {"a": "two", "b": 3})  # unchecked: the server's own answer
        assert sent.is_error
    assert warnings_of(caplog) == []


def test_sdk_server_http(sdk_http_url: str) -> None:
    with mcp_sync.Client.http(sdk_http_url, timeout=20, validate_output="strict", validate_input=True) as client:
        assert client.call_tool("add", {"a": 1, "b": 2}).structured_content == {"result": 3}
        with pytest.raises(mcp_sync.InvalidArguments):
            client.call_tool("add", {"a": 1})


def test_checks_do_not_load_jsonschema_until_needed() -> None:
    """Plain schemas are checked by the quick subset check; jsonschema is loaded only to explain a failure."""
    code = (
        "import sys, mcp_sync\n"
        f"c = mcp_sync.Client.stdio({PY!r}, [{SCHEMA_SERVER!r}], validate_output=False)\n"
        "c.call_tool('weather', {'city': 'x'}); a = 'jsonschema' in sys.modules\n"
        "c.call_tool('weather', {'city': 'x'}, validate=True); b = 'jsonschema' in sys.modules\n"
        "try:\n"
        "    c.call_tool('weather', {'city': 5}, validate=True)\n"
        "except mcp_sync.InvalidArguments as exc:\n"
        "    print(exc.path)\n"
        "c.close(); print(a, b, 'jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=20, check=True)
    assert out.stdout.split() == ["$.city", "False", "False", "True"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
schema_keys = st.sampled_from(["type", "$ref", "items", "properties", "required", "$schema", "enum", "anyOf",
                               "minimum", "pattern", "$defs", "additionalProperties", "$id", "$dynamicRef"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=st.dictionaries(schema_keys, json_values, max_size=4), instance=json_values)
def test_any_schema_gives_an_answer_never_an_exception(schema: dict[str, Any], instance: Any) -> None:
    """A broken schema from a server is the server's problem: the check answers (or is skipped),
    never raises out of call_tool, and never goes to the network."""
    found = mismatches(schema, instance, "x")
    assert found is None or all(isinstance(path, str) and path.startswith("$") for path, _ in found)


def test_text_only_results_of_unlisted_tools_cost_no_listing() -> None:
    """No structuredContent and a tool not listed yet: nothing to check without a listing, so none is
    made (request counts of plain calls stay as they were); once listed, the missing result is caught."""
    with schema_client(validate_output="strict") as client:
        client.call_tool("weather", {"city": "x", "mode": "none"})  # unlisted: passes, no listing
        assert client.call_tool("list_count").structured_content == {"n": 0}
        with pytest.raises(mcp_sync.ProtocolError, match="no structuredContent"):
            client.call_tool("weather", {"city": "x", "mode": "none"})


def test_concurrent_first_calls_share_one_listing() -> None:
    """Eight threads calling a fresh client at once: one tools/list between them, every result checked."""
    import concurrent.futures

    with schema_client(validate_output="strict") as client:
        barrier = threading.Barrier(8)

        def call(_: int) -> Any:
            barrier.wait(5)
            return client.call_tool("weather", {"city": "x"}).structured_content

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            assert list(pool.map(call, range(8))) == [{"temp": 21.5}] * 8
        assert client.call_tool("list_count").structured_content == {"n": 1}
