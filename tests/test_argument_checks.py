"""A caller's bad arguments are refused with an error naming them, before anything is sent.

Each check runs in the facade (or the option freezing it calls), so a client that is never
connected refuses them: the SDK server is not even started, the client stays ``NEW``.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

import mcp_sync

from conftest import PY, SDK_SERVER

TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT = "00f067aa0ba902b7"


@pytest.fixture
def idle() -> Iterator[mcp_sync.Client]:
    """A client of the SDK server that no test may start."""
    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30)
    yield client
    assert client.state is mcp_sync.ClientState.NEW, "a refused argument reached the server"
    client.close()


CALLS: dict[str, tuple[Callable[[mcp_sync.Client], Any], type[Exception], str]] = {
    # _meta: key names (a valid prefix, then a name with a letter or digit at each end) and W3C trace context
    "meta key name": (lambda c: c.call_tool("echo", {}, meta={"example.com/-x-": 1}), ValueError,
                      "meta key '.*-x-': its name must begin and end"),
    "traceparent not a string": (lambda c: c.call_tool("echo", {}, meta={"traceparent": 7}), ValueError,
                                 "meta key 'traceparent': it must be a string"),
    "traceparent version ff": (lambda c: c.call_tool("echo", {}, meta={"traceparent": f"ff-{TRACE}-{PARENT}-01"}),
                               ValueError, "its version is invalid"),
    "traceparent 00 with a fifth part": (
        lambda c: c.call_tool("echo", {}, meta={"traceparent": f"00-{TRACE}-{PARENT}-01-extra"}),
        ValueError, "its version is invalid"),
    "traceparent zero trace id": (
        lambda c: c.call_tool("echo", {}, meta={"traceparent": f"00-{'0' * 32}-{PARENT}-01"}),
        ValueError, "must not be all zeros"),
    "traceparent zero parent id": (
        lambda c: c.call_tool("echo", {}, meta={"traceparent": f"00-{TRACE}-{'0' * 16}-01"}),
        ValueError, "must not be all zeros"),
    "meta not a dict": (lambda c: c.call_tool("echo", {}, meta=[("a", 1)]), TypeError,  # type: ignore[arg-type]
                        "call_tool: meta must be a dict, not list"),
    # input_required answers given by hand
    "input_responses not a dict": (lambda c: c.call_tool("echo", {}, input_responses=["x"]),  # type: ignore[arg-type]
                                   TypeError, "input_responses must be a dict, not list"),
    "input_responses not JSON": (lambda c: c.call_tool("echo", {}, input_responses={"k": {1, 2}}), TypeError,
                                 "input_responses"),
    "request_state not a string": (lambda c: c.call_tool("echo", {}, request_state=b"s"),  # type: ignore[arg-type]
                                   TypeError, "request_state must be the string the server sent, not bytes"),
    # per-request headers
    "headers not a dict": (lambda c: c.call_tool("echo", {}, headers=[("X-A", "1")]),  # type: ignore[arg-type]
                           TypeError, "headers must be a dict of names to values, not list"),
    "header name with a space": (lambda c: c.call_tool("echo", {}, headers={"X Team": "a"}), ValueError,
                                 "header 'X Team' is not an HTTP token"),
    "header value with a newline": (lambda c: c.list_tools(headers={"X-Team": "a\r\nX-Admin: 1"}), ValueError,
                                    "header 'X-Team' has a value holding a CR, LF or NUL character"),
    "empty header name": (lambda c: c.read_resource("test://static", headers={"": "a"}), ValueError,
                          "header '' is not an HTTP token"),
    # the lists, one page at a time: a cursor is the string the server sent
    "cursor not a string": (lambda c: c.list_tools(cursor=2), TypeError,  # type: ignore[arg-type]
                            "tools/list: cursor must be the string the server sent, not int"),
    "resources cursor": (lambda c: c.list_resources(cursor=b"c"), TypeError,  # type: ignore[arg-type]
                         "resources/list: cursor must be the string"),
    # tasks
    "ttl zero": (lambda c: c.call_tool_as_task("echo", {}, ttl=0), ValueError,
                 "ttl must be a positive number of milliseconds"),
    "ttl a bool": (lambda c: c.call_tool_as_task("echo", {}, ttl=True), ValueError, "ttl must be a positive"),
    "ttl a float": (lambda c: c.call_tool_as_task("echo", {}, ttl=1.5), ValueError,  # type: ignore[arg-type]
                    "ttl must be a positive"),
    "task not a Task or id": (lambda c: c.get_task(42), TypeError,  # type: ignore[arg-type]
                              "task must be a Task or a task id string, not int"),
    "update_task answers not a dict": (lambda c: c.update_task("t1", [{"action": "accept"}]),  # type: ignore[arg-type]
                                       TypeError, "update_task: input_responses must be a dict, not list"),
    "update_task answers not JSON": (lambda c: c.update_task("t1", {"k": float("nan")}), ValueError,
                                     "update_task: input_responses"),
    "cancel_task of a number": (lambda c: c.cancel_task(3.0), TypeError,  # type: ignore[arg-type]
                                "task must be a Task or a task id string, not float"),
}


@pytest.mark.parametrize("case", list(CALLS))
def test_a_bad_argument_is_refused_before_anything_is_sent(case: str, idle: mcp_sync.Client) -> None:
    call, error, message = CALLS[case]
    with pytest.raises(error, match=message):
        call(idle)


def test_a_task_not_bound_to_a_client_cannot_be_waited_for() -> None:
    """A Task made by hand (not by a client) has no session to poll: ValueError, not an AttributeError."""
    task = mcp_sync.Task(task_id="t1", status="working", era="modern")
    with pytest.raises(ValueError, match="not bound to a client"):
        task.wait(timeout=1)
    assert task.status == "working"


def test_a_stdio_cwd_must_be_a_path() -> None:
    with pytest.raises(TypeError, match=r"Client\.stdio: cwd must be a path or None, not int"):
        mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], cwd=3)  # type: ignore[arg-type]
