"""A typed API (issue 9.18): every public method spells out its options, so a misspelt one is a
TypeError at once and a mypy error; a user's script passes ``mypy --strict``."""

from __future__ import annotations

import importlib.util
import inspect
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from wirekit import DISCOVER, FakeTransport

import mcp_sync
from mcp_sync._sentinels import USE_CLIENT_DEFAULT

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parent.parent
TYPECHECK = ROOT / "tests" / "typecheck"


def public_callables() -> list[Any]:
    """Every public function, constructor and method reachable from ``mcp_sync.__all__``
    (the layers too: connect, load_config, ClientGroup, the LLM formats, OAuth, exceptions)."""
    found: list[Any] = []
    for name in mcp_sync.__all__:
        obj = getattr(mcp_sync, name)
        if inspect.isclass(obj):
            found += [
                member for attr, member in inspect.getmembers(obj)
                if (attr == "__init__" or not attr.startswith("_")) and (inspect.isfunction(member)
                                                                          or inspect.ismethod(member))
                and getattr(member, "__module__", "").startswith("mcp_sync")
            ]
        elif inspect.isfunction(obj):
            found.append(obj)
    return found


def test_no_public_method_takes_arbitrary_keywords() -> None:
    """#9.18, now for every public name: ``run_tool_call(**call_options)``, ``connect(target,
    **options)`` and ClientGroup's ``**kwargs`` took any misspelling (ClientGroup's only at
    connect time, as that server's failure)."""
    callables = public_callables()
    qualnames = {fn.__qualname__ for fn in callables}
    assert {"connect", "load_config", "to_openai_tools", "ClientGroup.__init__", "ClientGroup.call_tool",
            "LLMFormatsMixin.run_tool_call", "FileTokenStore.__init__", "InvalidArguments.__init__"} <= qualnames
    loose = [
        f"{fn.__qualname__}(**{p.name})"
        for fn in callables
        for p in inspect.signature(fn).parameters.values()
        if p.kind is inspect.Parameter.VAR_KEYWORD
    ]
    # to_thread(fn, *args, **kwargs) hands them to fn, as asyncio.to_thread does: it takes none itself
    assert loose == ["to_thread(**kwargs)"]


def keywords(fn: Any, *leave_out: str) -> set[str]:
    return set(inspect.signature(fn).parameters) - {"self", "cls", *leave_out}


def test_connect_and_client_group_take_the_constructors_options() -> None:
    """connect() and ClientGroup take exactly the options of Client.stdio and Client.http (and
    Client.sse, the same as http's), so a new constructor option cannot be missed there."""
    constructors = keywords(mcp_sync.Client.stdio, "command", "args") | keywords(mcp_sync.Client.http, "url")
    assert keywords(mcp_sync.Client.sse, "url") == keywords(mcp_sync.Client.http, "url")
    assert keywords(mcp_sync.connect, "target") == constructors
    assert keywords(mcp_sync.ClientGroup.__init__, "servers", "strict", "options", "include", "exclude") == constructors


def test_group_and_run_tool_call_take_the_client_call_options() -> None:
    """ClientGroup's calls take the options of the Client method they forward to; run_tool_call
    those of call_tool that make sense for a model's call (an error result, never a raise)."""
    for name, own in (("call_tool", {"server"}), ("get_prompt", {"server"}), ("read_resource", {"server"}),
                      ("tools", {"prefix"}), ("prompts", {"prefix"}), ("resources", set())):
        assert keywords(getattr(mcp_sync.ClientGroup, name)) - own == keywords(getattr(mcp_sync.Client, name)), name
    run = keywords(mcp_sync.Client.run_tool_call, "call", "format", "approve")  # approve: #20.1
    assert run == keywords(mcp_sync.Client.call_tool, "name", "arguments") - {
        "raise_on_error", "input_responses", "request_state", "output_type"}


def test_misspelt_option_of_a_layer_is_an_immediate_type_error(tmp_path: Path) -> None:
    """Nothing is started: the TypeError comes from the call itself, per-server options included."""
    servers = {"a": {"command": "no-such-command-mcp-sync"}}
    with pytest.raises(TypeError, match="timout"):
        mcp_sync.connect("no-such-command-mcp-sync", timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timout"):
        mcp_sync.ClientGroup(servers, timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timout"):
        mcp_sync.ClientGroup(servers, options={"a": {"timout": 5}})
    group = mcp_sync.ClientGroup(servers, timeout=5, options={"a": {"probe_timeout": 1}})
    with pytest.raises(TypeError, match="timout"):
        group.tools(timout=5)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="cache must be one of"):
        group.prompts(cache="sometimes")  # checked at the call, not when iterated
    with pytest.raises(TypeError, match="timout"):
        group.call_tool("echo", {}, timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timout"):
        group.run_tool_call({"id": "1", "function": {"name": "echo"}}, timout=5)  # type: ignore[call-arg]
    assert not group.clients and not group.errors  # nothing was started
    group.close()


def test_request_methods_share_the_per_call_options() -> None:
    """timeout, cancel, meta and the progress deadline options on every request method."""
    wanted = {"timeout", "cancel", "meta", "reset_timeout_on_progress", "max_total_timeout"}
    for name in ("call_tool", "read_resource", "get_prompt", "complete", "request", "tools", "list_tools",
                 "resources", "list_resources", "resource_templates", "list_resource_templates", "prompts",
                 "list_prompts"):
        parameters = inspect.signature(getattr(mcp_sync.Client, name)).parameters
        assert wanted <= set(parameters), name
        assert parameters["timeout"].default is USE_CLIENT_DEFAULT, name


def test_misspelt_option_is_an_immediate_type_error() -> None:
    """``tools(timout=5)`` used to return a lazy iterator that failed only when iterated, and
    ``read_resource(uri, timout=5)`` first started the server. Nothing starts now."""
    client = mcp_sync.Client.stdio("no-such-command-mcp-sync")
    with pytest.raises(TypeError, match="timout"):
        client.tools(timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="timout"):
        client.read_resource("file:///a", timout=5)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="chache"):
        client.discover(chache="use")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="cache must be one of"):
        client.prompts(cache="sometimes")
    assert client.state is mcp_sync.ClientState.NEW  # nothing was started
    client.close()


def test_url_elicitation_is_a_typed_option() -> None:
    """``url_elicitation=True`` declares URL mode; the older ``handler.url = True`` still works."""

    def handler(params: dict) -> dict:
        return {"action": "cancel"}

    for options in ({"url_elicitation": True}, {}):
        transport = FakeTransport(lambda m, p: DISCOVER)
        if not options:
            handler.url = True  # type: ignore[attr-defined]
        with mcp_sync.Client(transport, mode="modern", on_elicitation=handler, **options) as client:
            capabilities = client.meta()["io.modelcontextprotocol/clientCapabilities"]
            assert capabilities["elicitation"] == {"form": {}, "url": {}}


def test_progress_deadline_options_reach_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """reset_timeout_on_progress / max_total_timeout are handed to Engine.request when set
    (and only then, so an engine without them still serves every other call)."""
    seen: list[dict[str, Any]] = []
    transport = FakeTransport(lambda m, p: DISCOVER if m == "server/discover" else {"content": []})
    with mcp_sync.Client(transport, mode="modern") as client:
        engine = client._engine
        assert engine is not None
        real = engine.request

        def spy(method: str, params: Any = None, **options: Any) -> Any:
            seen.append(dict(options))
            return real(method, params, **options)

        monkeypatch.setattr(engine, "request", spy)
        client.call_tool("t", {}, reset_timeout_on_progress=True, max_total_timeout=30)
        client.call_tool("t", {})
        with pytest.raises(ValueError, match="max_total_timeout must be a positive number"):
            client.call_tool("t", {}, max_total_timeout=-1)
    assert seen[0]["reset_timeout_on_progress"] is True and seen[0]["max_total_timeout"] == 30.0
    assert seen[1]["reset_timeout_on_progress"] is False and seen[1]["max_total_timeout"] is None


def test_http_options_are_forwarded_or_refused() -> None:
    client = mcp_sync.Client.http("http://127.0.0.1:9/mcp", connect_timeout=3, max_retries=0)
    transport = client._transport_factory()
    try:
        assert transport.connect_timeout == 3 and transport.max_retries == 0  # type: ignore[attr-defined]
    finally:
        transport.close()
    with pytest.raises(ValueError, match="max_retries"):
        mcp_sync.Client.http("http://127.0.0.1:9/mcp", max_retries=-1)
    with pytest.raises(ValueError, match="connect_timeout"):
        mcp_sync.Client.sse("http://127.0.0.1:9/sse", connect_timeout=0)


@pytest.mark.timeout(400)
def test_user_script_passes_mypy_strict_and_misspellings_fail() -> None:
    """tests/typecheck/user_script.py touches every name of mcp_sync.__all__ and must pass
    ``mypy --strict``; each line of misspelled.py marked ``# E: word`` must be an error naming it.
    examples/typed_agent_loop.py (#18.4) must pass too, with the provider SDKs installed: one mypy
    run for all three files, as loading mcp_sync's and the SDKs' types is most of its time (#32)."""
    script = (TYPECHECK / "user_script.py").read_text()
    missing = [name for name in mcp_sync.__all__ if not re.search(rf"mcp_sync\.{re.escape(name)}\b", script)]
    assert not missing, f"user_script.py does not use {missing}"
    typed_loop = ROOT / "examples" / "typed_agent_loop.py"
    sdks = all(importlib.util.find_spec(name) is not None for name in ("openai", "anthropic"))
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
         str(TYPECHECK / "user_script.py"), str(TYPECHECK / "misspelled.py"), *([str(typed_loop)] * sdks)],
        capture_output=True, text=True, timeout=380, cwd=ROOT,
    ).stdout
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert not [line for line in errors if "user_script.py" in line], out
    assert not [line for line in errors if "typed_agent_loop.py" in line], out
    expected = {
        number: match.group(1)
        for number, line in enumerate((TYPECHECK / "misspelled.py").read_text().splitlines(), start=1)
        if (match := re.search(r"# E: (\w+)", line))
    }
    got: dict[int, str] = {}
    for line in errors:  # every error of a line (an overloaded call may report two)
        if "misspelled.py" in line:
            number = int(line.split(":")[1])
            got[number] = got.get(number, "") + line
    assert set(got) == set(expected), out
    for number, word in expected.items():
        assert word in got[number], got[number]
    if not sdks:
        pytest.skip("openai or anthropic is not installed (they are in the 'test' extra): "
                    "examples/typed_agent_loop.py went unchecked")
