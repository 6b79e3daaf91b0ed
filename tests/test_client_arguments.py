"""The facade checks its arguments before anything is sent (mcp_sync/_client.py): each wrong
argument is a TypeError or ValueError naming the method and the parameter, raised before the
client connects (no server process is started). And what a right argument becomes on the
wire: a ResourceTemplate ref, a (name, value) pair, a context. The options a client was made
with read back as given."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from wirekit import Peer

import mcp_sync

from conftest import PY, SERVERS

pytestmark = pytest.mark.timeout(60)

HOSTILE = str(SERVERS / "hostile_stdio.py")
PROMPT_REF = {"type": "ref/prompt", "name": "greet"}

CONSTRUCTOR_ERRORS: list[tuple[dict, type, str]] = [
    ({"max_pages": 0}, ValueError, "max_pages and input_required_max_rounds must be at least 1"),
    ({"input_required_max_rounds": 0}, ValueError, "max_pages and input_required_max_rounds must be at least 1"),
    ({"log_level": "loud"}, ValueError, "log_level must be one of ['debug', 'info', 'notice'"),
    ({"name": ""}, TypeError, "name must be a non-empty str, not ''"),
]


@pytest.mark.parametrize(("options", "error", "text"), CONSTRUCTOR_ERRORS)
def test_wrong_client_options_are_refused_when_the_client_is_made(options: dict, error: type, text: str) -> None:
    with pytest.raises(error) as info:
        mcp_sync.Client.stdio(PY, [HOSTILE], **options)
    assert text in str(info.value)


CALL_ERRORS: list[tuple[Callable[[mcp_sync.Client], Any], type, str]] = [
    (lambda c: c.read_resource(5), TypeError, "read_resource: uri must be a string, not int"),
    (lambda c: c.get_prompt(5), TypeError, "get_prompt: the prompt name must be a string, not int"),
    (lambda c: c.get_prompt("greet", ["Ada"]), TypeError,
     "get_prompt('greet'): arguments must be a dict of names to strings, not list"),
    (lambda c: c.complete(5, ("name", "A")), TypeError,
     "complete: ref must be a Prompt, a ResourceTemplate or a dict, not int"),
    (lambda c: c.complete(PROMPT_REF, "name=A"), TypeError,
     "complete: argument must be a (name, value) pair or a dict, not 'name=A'"),
    (lambda c: c.complete(PROMPT_REF, ("name", "A"), ["x"]), TypeError,
     "complete: context must be a dict of names to values, not list"),
    (lambda c: c.request(5), TypeError, "request: method must be a string, not int"),
    (lambda c: c.request("tools/list", [1]), TypeError, "request('tools/list'): params must be a dict, not list"),
    (lambda c: c.notify("notifications/x", "y"), TypeError,
     "notify('notifications/x'): params must be a dict, not str"),
    (lambda c: c.set_log_level("loud"), ValueError, "level must be one of ['debug'"),
    (lambda c: c.set_log_level(10), ValueError, "level must be one of ['debug'"),
    (lambda c: c.listen(resource_uris="file:///a"), TypeError, "listen: resource_uris must be a list of URI strings"),
    (lambda c: c.listen(resource_uris=["file:///a", 7]), TypeError, "listen: resource_uris must be a list of URI"),
    (lambda c: c.set_roots(42), TypeError, "set_roots: roots must be a list of URIs or a callable, not int"),
    (lambda c: c.set_roots("file:///a"), TypeError, "set_roots: roots must be a list of URIs or a callable, not str"),
]


@pytest.mark.parametrize(("call", "error", "text"), CALL_ERRORS, ids=[text for _, _, text in CALL_ERRORS])
def test_wrong_arguments_are_refused_before_connecting(
    call: Callable[[mcp_sync.Client], Any], error: type, text: str
) -> None:
    """Each wrong argument names the method and the parameter; no server was started."""
    client = mcp_sync.Client.stdio(PY, [HOSTILE], mode="legacy")
    try:
        with pytest.raises(error) as info:
            call(client)
        assert text in str(info.value)
        assert client.pid is None and client.state.name == "NEW"
    finally:
        client.close()


def test_a_resource_template_ref_and_a_context_go_out_as_the_wire_wants(tmp_path: Path) -> None:
    """complete() with a listed ResourceTemplate sends a ref/resource with its URI template, a
    (name, value) pair as an argument object and the context as ``{"arguments": ...}``."""
    template = {"uriTemplate": "test://items/{id}", "name": "item"}
    peer = Peer(tmp_path, {"resources/templates/list": [{"result": {"resourceTemplates": [template]}}]})
    with peer.client(mode="legacy", stderr=lambda line: None) as client:
        (listed,) = client.resource_templates()
        assert client.complete(listed, ("id", "a"), {"kind": "letters"}).values == ["alpha"]
    (request,) = peer.requests("completion/complete")
    assert request["params"] == {
        "ref": {"type": "ref/resource", "uri": "test://items/{id}"},
        "argument": {"name": "id", "value": "a"},
        "context": {"arguments": {"kind": "letters"}},
    }


def test_the_clients_options_read_back_as_given() -> None:
    """The bounds and the cache switch a client was made with, without connecting."""
    client = mcp_sync.Client.stdio(PY, [HOSTILE], timeout=12, max_pages=3, max_message_bytes=4096,
                                   input_required_max_rounds=2, cache=False)
    try:
        assert (client.timeout, client.max_pages, client.max_message_bytes) == (12, 3, 4096)
        assert client.input_required_max_rounds == 2 and client.cache_enabled is False
        client.clear_cache()  # nothing to clear: no error either
        assert client.pid is None
    finally:
        client.close()
    with mcp_sync.Client.stdio(PY, [HOSTILE]) as default:
        assert default.cache_enabled is True and default.max_pages >= 1


def test_on_notification_may_be_replaced_while_connected(tmp_path: Path) -> None:
    """The callback read back is the one given; a replacement gets the notifications that
    arrive after it was set (here a legacy tools/list_changed, with the cache off)."""
    first: list[str] = []
    second: list[str] = []
    arrived = threading.Event()

    def replacement(method: str, params: dict) -> None:
        second.append(method)
        arrived.set()

    peer = Peer(tmp_path)
    with peer.client(mode="legacy", cache=False, on_notification=lambda m, p: first.append(m)) as client:
        assert client.on_notification is not None and client.on_notification is not replacement
        client.on_notification = replacement
        assert client.on_notification is replacement
        assert client.call_tool("notify_changed", {"kind": "tools"}).text == "0 listens"
        assert arrived.wait(10)
    assert second == ["notifications/tools/list_changed"] and first == []
