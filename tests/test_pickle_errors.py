"""Every MCPError pickles with its attributes (issue #18.18), so an MCP error raised in a
multiprocessing or concurrent.futures worker reaches the parent as itself, not as a TypeError
from unpickling it."""

from __future__ import annotations

import concurrent.futures
import importlib
import inspect
import pickle
import pkgutil
import threading
from typing import Any

import pytest

import mcp_sync
from mcp_sync.exceptions import HandlerError, MCPError, ServerError, ToolError

pytestmark = pytest.mark.timeout(120)


def _all_subclasses() -> list[type[MCPError]]:
    """MCPError and every subclass, in every module of the package (not only exceptions.py)."""
    for info in pkgutil.walk_packages(mcp_sync.__path__, "mcp_sync."):
        if info.name != "mcp_sync.__main__":  # the `python -m mcp_sync` entry: no classes of its own
            importlib.import_module(info.name)
    found: list[type[MCPError]] = []
    todo: list[type[MCPError]] = [MCPError]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    ours = [cls for cls in found if cls.__module__.split(".")[0] == "mcp_sync"]  # not other tests' own
    return sorted(ours, key=lambda c: f"{c.__module__}.{c.__qualname__}")


#: A distinct value for each constructor parameter name, so a lost or swapped attribute shows.
SAMPLES: dict[str, Any] = {
    "message": "boom",
    "code": -32000,
    "data": {"detail": [1, "two"]},
    "method": "tools/call",
    "request_id": 42,
    "reason": "user pressed stop",
    "exit_code": 3,
    "stderr_tail": "Traceback ...",
    "unread_input": 52,
    "input_requests": {"a": {"method": "elicitation/create"}},
    "request_state": "opaque-state",
    "result": {"content": [], "isError": True},
    "step": "token",
    "url": "https://example.com/token",
    "scope": "repo:write",
    "error_description": "needs more",
    "handler": "on_sampling",
    "name": "search",
    "servers": ["a", "b"],
    "file": "mcp.json",
    "server": "github",
    "field": "command",
    "path": "$.a",
    "errors": ["$.a: 'one' is not of type 'number'"],
    "cause": ValueError("the cause"),
    "status": 503,
    "retry_after": 2.5,
    "may_have_run": False,
}


def _make(cls: type[MCPError]) -> MCPError:
    kwargs: dict[str, Any] = {}
    positional: list[Any] = []
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        assert param.name in SAMPLES, f"add a sample value for {cls.__qualname__}({param.name}=...)"
        if param.kind == param.KEYWORD_ONLY:
            kwargs[param.name] = SAMPLES[param.name]
        else:
            positional.append(SAMPLES[param.name])
    return cls(*positional, **kwargs)


def _same(a: BaseException, b: BaseException) -> None:
    assert type(b) is type(a)
    assert b.args == a.args
    assert str(b) == str(a)
    assert set(vars(b)) == set(vars(a))
    for key, value in vars(a).items():
        if isinstance(value, BaseException):
            assert type(vars(b)[key]) is type(value) and vars(b)[key].args == value.args
        else:
            assert vars(b)[key] == value, key


SUBCLASSES = _all_subclasses()


def test_the_walk_finds_the_subclasses_outside_exceptions_py() -> None:
    names = {cls.__name__ for cls in SUBCLASSES}
    assert {"ServerError", "ResourceNotFound", "HandlerError", "AmbiguousToolError", "ToolNotFound"} <= names
    assert {"ConfigError", "InvalidArguments"} <= names
    assert len(SUBCLASSES) >= 20


@pytest.mark.parametrize("cls", SUBCLASSES, ids=lambda c: c.__qualname__)
def test_every_mcp_error_round_trips_through_pickle(cls: type[MCPError]) -> None:
    error = _make(cls)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        _same(error, pickle.loads(pickle.dumps(error, protocol)))


def test_the_cause_goes_along_and_an_unpicklable_one_is_dropped() -> None:
    error = HandlerError("handler failed", handler="on_elicitation", method="tools/call")
    error.__cause__ = KeyError("field")
    back = pickle.loads(pickle.dumps(error))
    assert isinstance(back.__cause__, KeyError) and back.__cause__.args == ("field",)

    class Local(Exception):  # defined in a function: pickle cannot find it by name
        pass

    error.__cause__ = Local("x")
    back = pickle.loads(pickle.dumps(error))
    assert back.__cause__ is None and back.handler == "on_elicitation"


def test_an_unpicklable_attribute_degrades_to_none_with_a_note() -> None:
    """A result holding a lock (or anything pickle refuses) does not make the error unpicklable."""
    error = ToolError("tool failed", result={"lock": threading.Lock()}, method="tools/call", request_id=7)
    back = pickle.loads(pickle.dumps(error))
    assert (back.message, back.method, back.request_id, back.result) == ("tool failed", "tools/call", 7, None)
    assert any("result" in note for note in back.__notes__)
    assert error.result is not None  # the original is untouched


def test_a_real_tool_result_pickles() -> None:
    result = mcp_sync.CallToolResult.from_wire({"content": [{"type": "text", "text": "no"}], "isError": True})
    back = pickle.loads(pickle.dumps(ToolError("tool failed", result=result)))
    assert back.result.text == "no"


def _raise_in_worker(kind: str) -> None:  # module level: a process pool pickles it by name
    if kind == "server":
        raise ServerError(-32602, "unknown tool", {"name": "nope"}, method="tools/call", request_id=5)
    if kind == "group":
        from mcp_sync._group import AmbiguousToolError

        raise AmbiguousToolError("search is on a and b", name="search", servers=["a", "b"])
    raise HandlerError("the handler raised", handler="on_roots", method="roots/list")


def test_errors_cross_a_process_pool() -> None:
    """The reported case: a worker's MCP error arrives in the parent as itself."""
    with concurrent.futures.ProcessPoolExecutor(max_workers=1) as pool:
        with pytest.raises(ServerError) as server:
            pool.submit(_raise_in_worker, "server").result(timeout=60)
        with pytest.raises(mcp_sync.AmbiguousToolError) as group:
            pool.submit(_raise_in_worker, "group").result(timeout=60)
        with pytest.raises(HandlerError) as handler:
            pool.submit(_raise_in_worker, "handler").result(timeout=60)
    assert (server.value.code, server.value.data, server.value.method, server.value.request_id) == (
        -32602,
        {"name": "nope"},
        "tools/call",
        5,
    )
    assert (group.value.name, group.value.servers) == ("search", ["a", "b"])
    assert (handler.value.handler, handler.value.method) == ("on_roots", "roots/list")
