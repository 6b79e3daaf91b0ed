"""#31.3: tools as a model sees them (ToolTransform, ToolFilter) and #31.7: lists that refresh
themselves (list_ttl, on_list_changed).

Against real servers: the Python SDK server in both eras (its ``add`` and ``weather`` carry
fastmcp tags in ``_meta._fastmcp.tags``; ``add_tool`` announces tools/list_changed), server-everything
(legacy, stdio), and the fault server (a request counter) for the time-to-live. Every LLM format,
``run_tool_call``, the LangChain and OpenAI Agents adapters, a group, a config file's ``"tools"``
section and the CLI's listing are driven through the one set of rules.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import attrs
import pytest

import mcp_sync
from mcp_sync._protocol.cache import ResultCache
from mcp_sync._tool_transform import ToolRules

from conftest import PY, SDK_SERVER, fault_args

pytestmark = pytest.mark.timeout(120)

TRANSFORMS = {
    "add": mcp_sync.ToolTransform(name="plus_ten", description="Add ten to a", fill={"b": 10}),
    "echo": mcp_sync.ToolTransform(hide=["text"]),  # required, no default: calls are refused
    "weather": {"description": "Weather in Oslo", "fill": {"city": "Oslo"}},  # a config-style dict
}
SHOWN_FILTER = mcp_sync.ToolFilter(exclude=["ask_*", "slow", "wait_echo", "count_up"])


@pytest.fixture(scope="module", params=["legacy", "modern"])
def shaped(request: pytest.FixtureRequest) -> Iterator[mcp_sync.Client]:
    """The SDK server in one era, its tools transformed and filtered."""
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=request.param, timeout=30,
                               tool_transforms=TRANSFORMS, tool_filter=SHOWN_FILTER) as client:
        assert client.era == request.param
        yield client


def _schema(client: mcp_sync.Client, name: str) -> dict[str, Any]:
    return next(t for t in client.tools() if t.name == name).input_schema


# -- what a listing shows ----------------------------------------------------------------------------


def test_listing_is_renamed_redescribed_and_filtered(shaped: mcp_sync.Client) -> None:
    tools = {tool.name: tool for tool in shaped.tools()}
    assert set(tools) == {"plus_ten", "echo", "weather", "whoami", "fail", "add_tool"}
    plus = tools["plus_ten"]
    assert plus.description == "Add ten to a" and plus.raw["name"] == "plus_ten"
    assert list(plus.input_schema["properties"]) == ["a"] and plus.input_schema["required"] == ["a"]
    assert "text" not in tools["echo"].input_schema["properties"] and "required" not in tools["echo"].input_schema
    assert tools["weather"].description == "Weather in Oslo" and tools["weather"].input_schema["properties"] == {}
    page = shaped.list_tools()  # one page: the same view
    assert {tool.name for tool in page.items} == set(tools)


def test_a_call_is_mapped_back_and_prefilled_values_cannot_be_overridden(shaped: mcp_sync.Client) -> None:
    assert shaped.call_tool("plus_ten", {"a": 5}).data == 15
    assert shaped.call_tool("plus_ten", {"a": 5, "b": 1000}).data == 15  # the model's b is replaced
    assert shaped.call_tool("weather", {"city": "Paris"}).data["city"] == "Oslo"


def test_the_original_name_and_filtered_tools_are_not_found(shaped: mcp_sync.Client) -> None:
    with pytest.raises(mcp_sync.ToolNotFound, match="offered as 'plus_ten'"):
        shaped.call_tool("add", {"a": 1, "b": 2})
    with pytest.raises(mcp_sync.ToolNotFound, match="tool_filter"):
        shaped.call_tool("slow", {"seconds": 0})


def test_a_transformed_call_is_checked_against_the_original_schema(shaped: mcp_sync.Client) -> None:
    """The hidden required ``text`` of echo is dropped from a call, so the original schema refuses
    it before anything is sent; a wrong type for a shown argument too."""
    with pytest.raises(mcp_sync.InvalidArguments, match="'text' is a required property"):
        shaped.call_tool("echo", {"text": "sneaked in"})
    with pytest.raises(mcp_sync.InvalidArguments, match=r"\$\.a"):
        shaped.call_tool("plus_ten", {"a": "five"})


# -- every LLM format and run_tool_call -------------------------------------------------------------


def test_every_llm_format_shows_the_transformed_tools(shaped: mcp_sync.Client) -> None:
    chat = {t["function"]["name"]: t["function"] for t in shaped.to_openai_tools()}
    responses = {t["name"]: t for t in shaped.to_openai_tools(api="responses", strict=True)}
    anthropic = {t["name"]: t for t in shaped.to_anthropic_tools()}
    gemini = {d["name"]: d for d in shaped.to_gemini_tools()[0]["function_declarations"]}
    for shown in (chat, responses, anthropic, gemini):
        assert "add" not in shown and "slow" not in shown and "plus_ten" in shown
        assert shown["plus_ten"]["description"] == "Add ten to a"
    assert list(chat["plus_ten"]["parameters"]["properties"]) == ["a"]
    assert responses["plus_ten"]["parameters"]["required"] == ["a"] and responses["plus_ten"]["strict"]
    assert list(anthropic["plus_ten"]["input_schema"]["properties"]) == ["a"]
    assert list(gemini["plus_ten"]["parameters"]["properties"]) == ["a"]
    assert "parameters" not in gemini["weather"]  # its one argument is pre-filled


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
def test_run_tool_call_maps_each_format_back(shaped: mcp_sync.Client, fmt: str) -> None:
    args = {"a": 1, "b": 99}
    call = {
        "openai": {"id": "c1", "type": "function", "function": {"name": "plus_ten", "arguments": json.dumps(args)}},
        "anthropic": {"type": "tool_use", "id": "c1", "name": "plus_ten", "input": args},
        "gemini": {"name": "plus_ten", "args": args},
    }[fmt]
    message = shaped.run_tool_call(call, format=fmt)
    text = json.dumps(message)
    assert "11" in text and "Error" not in text and "is_error\": true" not in text
    original = dict(call, name="add") if fmt != "openai" else {**call, "function": {"name": "add", "arguments": "{}"}}
    refused = json.dumps(shaped.run_tool_call(original, format=fmt))
    assert "unknown tool 'add'" in refused  # the original name is not offered to the model


def test_run_tool_call_refuses_a_hidden_required_argument_readably(shaped: mcp_sync.Client) -> None:
    call = {"id": "c2", "function": {"name": "echo", "arguments": '{"text": "x"}'}}
    message = shaped.run_tool_call(call)
    assert message["content"].startswith("Error: tool 'echo' failed: InvalidArguments")


# -- the framework adapters ----------------------------------------------------------------------


def test_langchain_and_openai_agents_tools_follow_the_rules(shaped: mcp_sync.Client) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("agents")
    lc = {tool.name: tool for tool in mcp_sync.llm.to_langchain_tools(shaped)}
    assert "add" not in lc and lc["plus_ten"].description == "Add ten to a"
    assert list(lc["plus_ten"].args) == ["a"]
    assert lc["plus_ten"].invoke({"a": 2}) == "12"
    oa = {tool.name: tool for tool in mcp_sync.llm.to_openai_agents_tools(shaped)}
    assert "add" not in oa and list(oa["plus_ten"].params_json_schema["properties"]) == ["a"]
    assert asyncio.run(oa["plus_ten"].on_invoke_tool(None, '{"a": 3, "b": 0}')) == "13"


# -- tags, groups, config files, the CLI ---------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_filter_by_fastmcp_tags(mode: str) -> None:
    only_math = mcp_sync.ToolFilter(tags=["math"], exclude_tags=["outside"])
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, timeout=30, tool_filter=only_math) as client:
        assert [tool.name for tool in client.tools()] == ["add"]
        assert client.call_tool("add", {"a": 1, "b": 2}).data == 3
        with pytest.raises(mcp_sync.ToolNotFound, match="tags"):
            client.call_tool("weather", {"city": "x"})
        with pytest.raises(mcp_sync.ToolNotFound, match="tags"):
            client.call_tool("echo", {"text": "x"})


def test_server_everything_renamed_and_prefilled(everything_js: Path) -> None:
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], timeout=30, stderr="log", tool_transforms={
        "get-sum": mcp_sync.ToolTransform(name="sum_with_two", fill={"b": 2}),
    }, tool_filter={"include": ["get-sum", "echo"]}) as client:
        tools = {tool.name: tool for tool in client.tools()}
        assert set(tools) == {"sum_with_two", "echo"}
        assert list(tools["sum_with_two"].input_schema["properties"]) == ["a"]
        assert client.call_tool("sum_with_two", {"a": 40}).text == "The sum of 40 and 2 is 42."
        assert client.call_tool("sum_with_two", {"a": 40, "b": 0}).text == "The sum of 40 and 2 is 42."
        reply = client.run_tool_call({"type": "tool_use", "id": "t", "name": "sum_with_two", "input": {"a": 1}},
                                     format="anthropic")
        assert reply["content"][0]["text"] == "The sum of 1 and 2 is 3." and not reply["is_error"]


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"sdk": {
        "command": PY, "args": [SDK_SERVER, "stdio"],
        "tools": {"include": ["add", "echo", "weather"], "exclude_tags": ["outside"],
                  "transform": {"add": {"name": "plus_ten", "description": "Add ten", "fill": {"b": 10}}}},
    }}}))
    return path


def test_config_file_tools_section_through_a_group_both_prefixes(tmp_path: Path) -> None:
    with mcp_sync.ClientGroup(_config(tmp_path), timeout=30) as group:
        assert sorted(tool.name for tool in group.tools()) == ["echo", "plus_ten"]
        assert sorted(tool.name for tool in group.tools(prefix=True)) == ["sdk__echo", "sdk__plus_ten"]
        assert group.call_tool("sdk__plus_ten", {"a": 1}).data == 11
        assert group.call_tool("plus_ten", {"a": 2, "b": 5}).data == 12
        with pytest.raises(mcp_sync.ToolNotFound):
            group.call_tool("add", {"a": 1, "b": 1})
        message = group.run_tool_call({"id": "g", "function": {"name": "sdk__plus_ten", "arguments": '{"a": 5}'}})
        assert message["content"] == "15"


def test_group_per_server_options_and_modern_era() -> None:
    servers = {"sdk": {"command": PY, "args": [SDK_SERVER, "stdio"]}}
    options = {"sdk": {"mode": "modern", "tool_transforms": {"add": mcp_sync.ToolTransform(name="sum")}}}
    with mcp_sync.ClientGroup(servers, timeout=30, options=options, include={"sdk": ["sum", "echo"]}) as group:
        assert sorted(tool.name for tool in group.tools()) == ["echo", "sum"]  # the group's own include: shown names
        assert group.call_tool("sum", {"a": 2, "b": 3}).data == 5


def test_config_tools_section_is_checked(tmp_path: Path) -> None:
    bad = [
        ({"transform": {"add": {"rename": "x"}}}, "unknown key"),
        ({"transform": {"add": {"fill": {"b": float("nan")}}}}, "fill"),
        ({"tags": "math"}, "'tags' must be a list"),
        ({"transform": ["add"]}, "'transform' must map"),
    ]
    for section, message in bad:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({"mcpServers": {"s": {"command": "x", "tools": section}}}))
        with pytest.raises(mcp_sync.ConfigError, match=message):
            mcp_sync.load_config(path)


def test_cli_listing_shows_the_config_transforms(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import mcp_sync._cli as cli

    path = _config(tmp_path)
    assert cli.main(["tools", "--config", str(path), "--server", "sdk", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(tool["name"] for tool in listed) == ["echo", "plus_ten"]
    assert next(t for t in listed if t["name"] == "plus_ten")["inputSchema"]["required"] == ["a"]
    assert cli.main(["tools", "--config", str(path)]) == 0  # every server, as a table
    table = capsys.readouterr().out
    assert "plus_ten(a" in table and "Add ten" in table and "weather" not in table


# -- the rules themselves --------------------------------------------------------------------------


def test_specs_are_immutable_checked_and_compare_by_value() -> None:
    spec = mcp_sync.ToolTransform(name="x", hide="y", fill={"z": [1]})
    assert spec.hide == ("y",) and spec == mcp_sync.ToolTransform(name="x", hide=["y"], fill={"z": [1]})
    with pytest.raises(TypeError):
        spec.fill["z"] = 2  # type: ignore[index]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        spec.name = "other"  # type: ignore[misc]
    with pytest.raises(ValueError):
        mcp_sync.ToolTransform(fill={"a": float("inf")})
    with pytest.raises(TypeError):
        mcp_sync.ToolTransform(name="")
    with pytest.raises(TypeError):
        mcp_sync.ToolFilter(include=[1])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="both renamed"):
        ToolRules({"a": {"name": "c"}, "b": {"name": "c"}}, None)
    assert hash(mcp_sync.ToolFilter(tags=["t"])) == hash(mcp_sync.ToolFilter(tags=("t",)))


def test_a_hidden_required_argument_gets_its_schema_default() -> None:
    tool = mcp_sync.Tool(name="t", input_schema={
        "type": "object", "properties": {"mode": {"type": "string", "default": "fast"}, "q": {"type": "string"}},
        "required": ["mode", "q"]})
    rules = ToolRules({"t": mcp_sync.ToolTransform(hide=["mode"])}, None)
    assert list(rules.view(tool).input_schema["properties"]) == ["q"]  # type: ignore[union-attr]
    assert rules.to_server("t", {"q": "x", "mode": "slow"}, lambda name: tool) == ("t", {"q": "x", "mode": "fast"},
                                                                                  True)


def test_odd_server_schemas_and_tags_do_not_break_a_view() -> None:
    """What a server sends is not trusted: unhashable entries in required, a non-dict schema
    property, tags that are not strings or not a list."""
    rules = ToolRules({"t": mcp_sync.ToolTransform(hide=["a"], fill={"b": 1})}, mcp_sync.ToolFilter(tags=["x"]))
    odd = mcp_sync.Tool(name="t", meta={"_fastmcp": {"tags": [{"x": 1}, "x", 3]}},
                        input_schema={"properties": {"a": 5, "b": {}}, "required": [{"a": 1}, ["b"], "a", "b"]})
    shown = rules.view(odd)
    assert shown is not None and shown.input_schema == {"properties": {}, "required": [{"a": 1}, ["b"]]}
    assert rules.view(mcp_sync.Tool(name="t", meta={"_fastmcp": {"tags": "x"}})) is None
    assert rules.view(mcp_sync.Tool(name="t", meta={"_fastmcp": ["x"]})) is None
    assert rules.to_server("t", {"a": 1}, lambda name: odd) == ("t", {"b": 1}, True)


def test_views_are_linear_in_what_the_server_lists() -> None:
    """Views of tools of 100 properties each, with a filter of several stars and a transform
    hiding 50 names: CPU time grows about linearly (4x the input: well under 16x)."""
    def run(count: int) -> float:
        tools = [mcp_sync.Tool(name=f"tool_{i}_" + "a" * 50, meta={"_fastmcp": {"tags": ["x"] * 50}},
                               input_schema={"type": "object", "properties": {f"p{j}": {} for j in range(100)},
                                             "required": [f"p{j}" for j in range(50, 100)]}) for i in range(count)]
        transforms = {tool.name: mcp_sync.ToolTransform(hide=[f"p{j}" for j in range(50)]) for tool in tools}
        rules = ToolRules(transforms, mcp_sync.ToolFilter(include=["*_*_*a*a*a*a"], tags=["x"]))
        start = time.thread_time()
        shown = list(rules.views(tools))
        assert len(shown) == count and len(shown[0].input_schema["properties"]) == 50
        return time.thread_time() - start

    small, large = run(100), run(400)
    assert large < max(small, 0.01) * 16


# -- #31.7: lists that refresh themselves -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "modern"])
def test_on_list_changed_gets_the_new_list_off_the_reader_thread(mode: str) -> None:
    """The SDK server's add_tool announces tools/list_changed (modern: on a listen stream); the
    callback gets the new list as tools() shows it (transforms applied), on the dispatch thread,
    and may call the client from there."""
    seen: list[tuple[str, list[str], str, Any]] = []
    done = threading.Event()
    holder: list[mcp_sync.Client] = []

    def changed(kind: str, items: list[Any]) -> None:
        answer = holder[0].call_tool("plus_ten", {"a": 1}).data  # the client, from the callback
        seen.append((kind, [tool.name for tool in items], threading.current_thread().name, answer))
        done.set()

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=mode, timeout=30, on_list_changed=changed,
                               tool_transforms={"add": {"name": "plus_ten", "fill": {"b": 10}}}) as client:
        holder.append(client)
        sub = client.listen(tools_list_changed=True) if mode == "modern" else None
        assert "fresh_tool" not in [tool.name for tool in client.tools()]
        client.call_tool("add_tool", {"name": "fresh_tool"})
        assert done.wait(20), "on_list_changed was not called"
        kind, names, thread, answer = seen[0]
        assert kind == "tools" and "fresh_tool" in names and "plus_ten" in names and "add" not in names
        assert answer == 11
        assert "reader" not in thread.lower() and thread != threading.main_thread().name
        if sub is not None:
            sub.close()


def test_on_list_changed_that_raises_is_logged_and_the_client_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    done = threading.Event()

    def broken(kind: str, items: list[Any]) -> None:
        done.set()
        raise RuntimeError("callback bug")

    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode="legacy", timeout=30, on_list_changed=broken) as client:
        client.call_tool("add_tool", {"name": "another"})
        assert done.wait(20)
        assert client.call_tool("add", {"a": 1, "b": 1}).data == 2
    assert any("on_list_changed" in record.getMessage() for record in caplog.records)


def _counting(client: mcp_sync.Client, method: str) -> list[int]:
    """Count the wire requests of ``method`` the client sends (below the cache)."""
    session = client._session
    sent = [0]
    original = session.send

    def send(m: str, *args: Any, **kwargs: Any) -> Any:
        if m == method:
            sent[0] += 1
        return original(m, *args, **kwargs)

    session.send = send  # type: ignore[method-assign]
    return sent


def test_list_ttl_keeps_a_list_without_ttlms_then_fetches_again() -> None:
    """Legacy fault server: prompts are not announced (no listChanged) and carry no ttlMs, so
    without list_ttl every prompts() goes to the server; with it, one fetch per TTL (fake clock)."""
    with mcp_sync.Client.stdio(PY, fault_args("--era", "legacy"), timeout=30) as plain:
        sent = _counting(plain, "prompts/list")
        list(plain.prompts()), list(plain.prompts())
        assert sent[0] == 2
    with mcp_sync.Client.stdio(PY, fault_args("--era", "legacy"), timeout=30, list_ttl=5) as client:
        cache = client._session.cache
        assert cache is not None
        now = [1000.0]
        cache._clock = lambda: now[0]
        sent = _counting(client, "prompts/list")
        first = [prompt.name for prompt in client.prompts()]
        now[0] += 4.9
        assert [prompt.name for prompt in client.prompts()] == first and sent[0] == 1
        now[0] += 0.1  # the TTL has passed: the next call fetches again
        client.list_prompts()
        assert sent[0] == 2


def test_list_ttl_on_the_real_clock_and_a_servers_ttlms_wins() -> None:
    with mcp_sync.Client.stdio(PY, fault_args("--era", "legacy"), timeout=30, list_ttl=0.5) as client:
        sent = _counting(client, "resources/list")
        client.list_resources()
        fetched = time.monotonic()
        client.list_resources()
        assert sent[0] == 1 or time.monotonic() - fetched >= 0.5
        time.sleep(max(0.0, fetched + 0.7 - time.monotonic()))
        client.list_resources()
        assert sent[0] >= 2
    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern", "--ttl-ms", "0"), timeout=30, list_ttl=60) as client:
        sent = _counting(client, "prompts/list")
        client.list_prompts(), client.list_prompts()
        assert sent[0] == 2  # ttlMs 0 means "do not reuse": the caller's TTL does not override it


def test_list_ttl_unit_and_arguments() -> None:
    now = [0.0]
    cache = ResultCache(clock=lambda: now[0], list_ttl=2)
    gen = cache.generation
    assert cache.put("tools/list", None, None, {"tools": []}, generation=gen)
    assert not cache.put("prompts/list", None, None, {"prompts": [], "ttlMs": 0}, generation=gen)
    assert not cache.put("resources/read", {"uri": "x"}, None, {"contents": []}, generation=gen)
    now[0] = 1.9
    assert cache.get("tools/list", None, None) == {"tools": []}
    now[0] = 2.0
    assert cache.get("tools/list", None, None) is None
    with pytest.raises(ValueError, match="cache=True"):
        mcp_sync.Client.stdio(PY, ["x"], list_ttl=5, cache=False)
    with pytest.raises(ValueError, match="list_ttl"):
        mcp_sync.Client.stdio(PY, ["x"], list_ttl=0)
    with pytest.raises(TypeError, match="on_list_changed"):
        mcp_sync.Client.stdio(PY, ["x"], on_list_changed="yes")  # type: ignore[arg-type]


def test_a_groups_include_replaces_its_entrys_and_both_excludes_apply() -> None:
    entry = {"command": PY, "args": [SDK_SERVER, "stdio"], "tools": {"include": ["add"], "exclude": ["echo"]}}
    with mcp_sync.ClientGroup({"sdk": entry}, timeout=30, include={"sdk": ["echo", "whoami", "fail"]},
                              exclude={"sdk": ["fail"]}) as group:
        assert sorted(tool.name for tool in group.tools()) == ["whoami"]
    with mcp_sync.ClientGroup({"sdk": entry}, timeout=30) as group:
        assert [tool.name for tool in group.tools()] == ["add"]


def test_call_tool_as_task_maps_the_shown_name_back() -> None:
    """The fault server (modern) runs task_job as a task; shown as "job" with its plan pre-filled."""
    transforms = {"task_job": mcp_sync.ToolTransform(name="job", fill={"plan": "ok"})}
    with mcp_sync.Client.stdio(PY, fault_args("--era", "modern"), timeout=30, tool_transforms=transforms) as client:
        task = client.call_tool_as_task("job", {"plan": "forever"})
        assert "polls" in task.wait(timeout=10).text  # "ok" was sent: "forever" would never finish
        with pytest.raises(mcp_sync.ToolNotFound, match="offered as 'job'"):
            client.call_tool_as_task("task_job", {"plan": "ok"})
