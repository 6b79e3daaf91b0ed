"""#31.1: handlers that can change on a live client, and no assignment silently ignored.

Against the Python SDK server (tests/servers/sdk_server.py) in both eras: a handler set after the
client was made answers the server's next request (modern: the next request declares the new
capability in its ``_meta``, E3/E4; legacy: a capability declared at ``initialize`` may change its
handler, an undeclared one is refused with CapabilityError saying how to declare it, LG1); roots
set through ``client.roots`` reach the server (``roots/list``, LG10: a legacy server is told with
``notifications/roots/list_changed``); a misspelt attribute raises AttributeError; a pickled client
carries the handlers set since it was made.
"""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path
from typing import Any

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER, SERVERS

TAP = str(SERVERS / "wire_tap.py")


def sdk(mode: str, **options: Any) -> mcp_sync.Client:
    return mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, stderr="log", **options)


def answer(name: str) -> Any:
    return lambda params: {"action": "accept", "content": {"name": name}}


def sampled(text: str) -> Any:
    return lambda params: {"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"}


def test_modern_a_handler_set_after_construction_answers_and_is_declared(tmp_path: Path) -> None:
    """E3: each modern request declares the client's capabilities; a handler set on the live client
    is in the next one (today's main: the assignment was ignored and ``ask_name`` failed)."""
    wire = tmp_path / "wire.jsonl"
    with mcp_sync.Client.stdio(PY, [TAP, str(wire), PY, SDK_SERVER, "stdio"], mode="modern", stderr="log") as client:
        assert client.call_tool("echo", {"text": "before"}).text == "before"
        client.on_elicitation = answer("Ada")
        assert client.on_elicitation is not None
        assert client.call_tool("ask_name", {}).text == "Hello, Ada"
        client.on_elicitation = answer("Bo")  # replaced: the new one answers
        assert client.call_tool("ask_name", {}).text == "Hello, Bo"
        client.on_elicitation = None  # removed: no longer declared, and the server says so
        with pytest.raises(mcp_sync.ServerError, match="did not declare the form elicitation capability"):
            client.call_tool("ask_name", {})
    sent = [json.loads(line) for line in wire.read_text().splitlines()]
    calls = [m for m in sent if m.get("method") == "tools/call"]
    declared = [m["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] for m in calls]
    assert "elicitation" not in declared[0]  # echo, before
    assert "elicitation" in declared[1]  # the first ask_name: the handler set just before
    assert "elicitation" not in declared[-1]  # after it was removed


def test_modern_sampling_set_later_answers_the_server() -> None:
    with sdk("modern") as client:
        client.on_sampling = sampled("forty-two")
        assert "forty-two" in client.call_tool("ask_llm", {"question": "?"}).text


def test_legacy_a_declared_handler_may_be_replaced() -> None:
    """LG1: capabilities are session-wide; a handler declared at initialize may be swapped."""
    with sdk("legacy", on_elicitation=answer("Ada")) as client:
        assert client.era == "legacy"
        assert client.call_tool("ask_name", {}).text == "Hello, Ada"
        client.on_elicitation = answer("Cy")
        assert client.call_tool("ask_name", {}).text == "Hello, Cy"


def test_legacy_an_undeclared_capability_is_refused_with_what_to_do() -> None:
    """LG1: "Only use capabilities that were successfully negotiated": a handler whose capability was
    not declared at initialize is refused loudly, naming the way to declare it; after close() it may
    be set, and the next connect declares it."""
    client = sdk("legacy")
    with client:
        assert client.call_tool("echo", {"text": "x"}).text == "x"
        with pytest.raises(mcp_sync.CapabilityError, match=r"on_sampling= when the client is made.*close\(\)"):
            client.on_sampling = sampled("no")
        assert client.on_sampling is None  # refused: nothing was set
        with pytest.raises(mcp_sync.CapabilityError, match="on_elicitation"):
            client.on_elicitation = answer("no")
        with pytest.raises(mcp_sync.CapabilityError, match="roots"):
            client.roots = ["file:///tmp"]
    client.on_elicitation = answer("Dee")  # closed: accepted, declared at the next initialize
    with client:
        assert client.call_tool("ask_name", {}).text == "Hello, Dee"


def test_set_before_connecting_is_declared_at_initialize() -> None:
    client = sdk("legacy")
    client.on_elicitation = answer("Eve")
    with client:
        assert client.call_tool("ask_name", {}).text == "Hello, Eve"


@pytest.mark.parametrize("mode", ["modern", "legacy"])
def test_roots_is_readable_and_settable(tmp_path: Path, mode: str) -> None:
    """``client.roots`` reads what ``set_roots`` set and sets it the same way: on legacy the server
    is told (LG10, on the wire), on modern the next request carries the roots capability."""
    wire = tmp_path / "wire.jsonl"
    with mcp_sync.Client.stdio(PY, [TAP, str(wire), PY, SDK_SERVER, "stdio"], mode=mode, stderr="log",
                               on_roots=["file:///a"]) as client:
        assert client.roots == ["file:///a"]
        client.roots = ["file:///b"]
        assert client.roots == ["file:///b"] and client.on_roots == ["file:///b"]
        client.set_roots(["file:///c"])
        assert client.roots == ["file:///c"]
        with pytest.raises(ValueError, match="file://"):
            client.roots = ["http://example.com"]
        with pytest.raises(TypeError, match="roots"):
            client.roots = 42  # type: ignore[assignment]
        assert client.roots == ["file:///c"]
        client.call_tool("echo", {"text": "sync"})  # the notifications were written before it
    sent = [json.loads(line) for line in wire.read_text().splitlines()]
    changed = [m for m in sent if m.get("method") == "notifications/roots/list_changed"]
    assert len(changed) == (2 if mode == "legacy" else 0)


def test_a_wrong_handler_is_refused_when_set() -> None:
    client = sdk("auto")
    with pytest.raises(TypeError, match="on_sampling must be a callable"):
        client.on_sampling = "not callable"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="on_progress must be a callable"):
        client.on_progress = 3  # type: ignore[assignment]
    client.close()


def test_unknown_attributes_are_refused() -> None:
    """No assignment is silently ignored: a misspelt handler raises, naming what can be set."""
    client = sdk("auto")
    with pytest.raises(AttributeError, match=r"'on_samplng' to set.*'on_sampling'"):
        client.on_samplng = sampled("x")  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        client.era = "legacy"  # type: ignore[misc]  # read-only
    assert not hasattr(client, "on_samplng")
    client.close()


def test_every_constructor_handler_is_a_settable_property() -> None:
    """Every ``on_*`` constructor option reads back and may be set (none is a silent trap)."""
    import inspect

    options = [n for n in inspect.signature(mcp_sync.Client.__init__).parameters if n.startswith("on_")]
    assert {"on_elicitation", "on_sampling", "on_roots", "on_notification", "on_progress",
            "on_connection_lost", "on_reconnected"} <= set(options)
    client = sdk("auto")
    for option in options:
        prop = getattr(mcp_sync.Client, option)
        assert isinstance(prop, property) and prop.fset is not None, option
        value: Any = ["file:///x"] if option == "on_roots" else (lambda *args: None)
        setattr(client, option, value)
        assert getattr(client, option) is value, option
    client.close()


def test_on_reconnected_set_later_is_called() -> None:
    calls: list[Any] = []
    done = threading.Event()
    with sdk("auto") as client:
        client.call_tool("echo", {"text": "x"})
        client.on_reconnected = lambda c: (calls.append(c), done.set())
        client.reconnect()
        assert done.wait(10)
    assert calls == [client]


def test_a_pickled_client_has_the_handlers_set_since() -> None:
    client = sdk("auto", on_roots=["file:///a"])
    client.roots = ["file:///b"]
    copy = pickle.loads(pickle.dumps(client))
    try:
        assert copy.roots == ["file:///b"]
    finally:
        copy.close()
        client.close()


def test_a_bound_view_shares_the_handlers(sdk_http_url: str) -> None:
    with mcp_sync.Client.http(sdk_http_url, mode="modern") as client:
        view = client.bind(headers={"X-User": "ann"})
        client.on_elicitation = answer("Fay")
        assert view.on_elicitation is client.on_elicitation
        assert view.call_tool("ask_name", {}).text == "Hello, Fay"
        with pytest.raises(AttributeError, match="set it on the client"):
            view.on_progress = print  # type: ignore[assignment]
