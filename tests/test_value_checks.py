"""What ``mcp_sync._values`` checks before anything is sent or started (#9.9, #9.4): constructor
arguments of the wrong type are a TypeError naming the argument, a valid ``env`` reaches the
server (server-everything's ``get-env`` shows it), an HTTP option the transport does not take is
refused rather than dropped, a tool name or argument key JSON cannot carry is refused before the
call is written; and ``copy_json`` (the result cache's copy) is a deep copy at any depth.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from wirekit import Peer

import mcp_sync
from mcp_sync._values import copy_json, http_options

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: mcp_sync.Client.stdio(["node", "server.js"]), "Client.stdio: command must be a string, not list"),
    (lambda: mcp_sync.Client.stdio("node", ["server.js", 3000]),
     r"Client.stdio: args must be a list of strings, not \['server.js', 3000\]"),
    (lambda: mcp_sync.Client.stdio("node", {"server.js"}), "Client.stdio: args must be a list of strings, not {"),
    (lambda: mcp_sync.Client.stdio("node", [], env=["PORT=3000"]), "Client.stdio: env must be a dict of strings, "
                                                                    "not list"),
    (lambda: mcp_sync.Client.http(b"http://127.0.0.1:1/mcp"), "Client.http: url must be a string, not bytes"),
    (lambda: mcp_sync.Client.sse(None), "Client.sse: url must be a string, not NoneType"),
])
def test_constructor_arguments_of_the_wrong_type(make: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        make()


def test_env_reaches_the_server(everything_js: Path) -> None:
    env = {"MCP_SYNC_TEST_TEAM": "blue", "MCP_SYNC_TEST_EMPTY": ""}
    with mcp_sync.Client.stdio(str(everything_js), ["stdio"], env=env, timeout=30) as client:
        shown = client.call_tool("get-env").text
    assert '"MCP_SYNC_TEST_TEAM": "blue"' in shown and '"MCP_SYNC_TEST_EMPTY": ""' in shown


def test_an_http_option_the_transport_does_not_take_is_refused() -> None:
    """Client.http hands its options to the transport; one this version's transport lacks (an option
    added to the constructor but not to the transport) is a TypeError, never silently dropped."""

    class OlderTransport:  # takes neither session, cert nor proxies
        def __init__(self, url: str, headers: Any = None, *, verify: Any = None, connect_timeout: float = 10.0,
                     max_retries: int = 3) -> None:
            pass

    options = {"session": None, "verify": False, "cert": None, "proxies": {"https": "http://proxy:3128"},
               "connect_timeout": 5, "max_retries": 0}
    with pytest.raises(TypeError, match=r"Client\.http: this version's OlderTransport does not support proxies"):
        http_options(OlderTransport, "Client.http", "http://127.0.0.1:1/mcp", **options)
    # options left at None are the transport's defaults: not passed, so not refused
    assert http_options(OlderTransport, "Client.http", "http://127.0.0.1:1/mcp", **{**options, "proxies": None}) == {
        "verify": False, "connect_timeout": 5.0, "max_retries": 0}


def test_a_call_json_cannot_carry_is_refused_before_it_is_written(tmp_path: Path) -> None:
    peer = Peer(tmp_path)
    with peer.client(timeout=20) as client:
        with pytest.raises(TypeError, match="call_tool: the tool name must be a string, not int"):
            client.call_tool(7)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="call_tool_as_task: the tool name must be a string, not NoneType"):
            client.call_tool_as_task(None, {})  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"call_tool\('echo'\): argument 'range' has a key of type tuple; "
                                            "JSON object keys are strings"):
            client.call_tool("echo", {"range": {(1, 2): "x"}})
        assert client.call_tool("echo", {"text": "still fine"}).text == "still fine"
    assert [request["params"]["arguments"] for request in peer.requests("tools/call")] == [{"text": "still fine"}]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=3),
                                                                                           inner, max_size=3),
    max_leaves=12,
)


def _containers(value: Any) -> list[Any]:
    found, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, (dict, list, tuple)):
            found.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    return found


def _as_json(value: Any) -> Any:
    """``value`` with tuples as lists: what JSON makes of it."""
    if isinstance(value, dict):
        return {key: _as_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_as_json(item) for item in value]
    return value


@given(json_values)
@example(5)
@example({"a": (1, [2.5, None]), "b": {"c": "d"}})
def test_copy_json_is_a_deep_copy_sharing_no_container(value: Any) -> None:
    copied = copy_json(value)
    assert copied == _as_json(value)
    originals = {id(item) for item in _containers(value)}
    assert not any(id(item) in originals for item in _containers(copied))
    if not isinstance(value, (dict, list, tuple)):
        assert copied is value  # a scalar is its own copy


def test_copy_json_copies_any_depth() -> None:
    deep: Any = {"leaf": 1}
    for _ in range(50_000):
        deep = {"n": [deep]}
    copied = copy_json(deep)
    for _ in range(50_000):
        copied, deep = copied["n"][0], deep["n"][0]
    assert copied == {"leaf": 1} and copied is not deep
