"""``ClientGroup`` routing (#10.4, #20): which server a name, a URI or an item goes to, on real servers.

Items are routed by what names them when the group no longer knows the object itself (a copy,
or one forgotten once more than ``_MAX_ORIGINS`` were handed out); a server without a kind of
thing is passed over quietly; ``server=`` goes straight to that server; a listing that outlives
its server's removal leaves nothing behind; a Tool object starts a task on its server; include
patterns may be one string.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import attrs
import pytest

import mcp_sync
from mcp_sync import _group

from conftest import PY, ROOT, SDK_SERVER, SERVERS, fault_args

pytestmark = pytest.mark.timeout(60)
DEMO = {"command": PY, "args": [str(ROOT / "examples" / "demo_server.py")]}
SDK = {"command": PY, "args": [SDK_SERVER, "stdio"]}


@pytest.fixture
def tools_only(tmp_path: Path) -> dict[str, object]:
    """A legacy server with the tools capability only (tests/servers/file_tools_server.py)."""
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps([{"name": "lookup", "inputSchema": {"type": "object"}}]))
    return {"command": PY, "args": [str(SERVERS / "file_tools_server.py"), str(tools)]}


def test_copies_of_resources_and_templates_are_routed_by_uri(no_leaks: None) -> None:
    with mcp_sync.ClientGroup({"demo": DEMO, "sdk": SDK}, timeout=30) as group:
        resource = next(r for r in group.resources() if r.uri == "demo://readme")
        template = next(t for t in group.resource_templates() if t.uri_template == "test://items/{id}")
        copy, template_copy = attrs.evolve(resource), attrs.evolve(template)  # equal, not the same objects
        assert copy is not resource and group.server_of(copy) == "demo"
        assert template_copy is not template and group.server_of(template_copy) == "sdk"


def test_server_given_goes_straight_to_it(no_leaks: None) -> None:
    """find_tool/read_resource with ``server=`` on a group that never listed anything."""
    with mcp_sync.ClientGroup({"demo": DEMO, "sdk": SDK}, timeout=30) as group:
        server, tool = group.find_tool("echo", server="demo")  # listed on demand, from that server only
        assert server == "demo" and tool.input_schema["required"] == ["text"]
        with pytest.raises(mcp_sync.ToolNotFound, match="server 'demo' has no tool named 'weather'"):
            group.find_tool("weather", server="demo")  # the sdk server has one; demo was asked
        assert group.read_resource("demo://readme", server="demo").text == "Hello from demo-server."
        with pytest.raises(mcp_sync.ResourceNotFound):
            group.read_resource("test://static", server="demo")  # the sdk server's, asked of demo


def test_a_server_without_a_kind_of_thing_is_passed_over_quietly(tools_only: dict[str, object],
                                                                  caplog: pytest.LogCaptureFixture,
                                                                  no_leaks: None) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_sync"), \
            mcp_sync.ClientGroup({"tools": tools_only, "demo": DEMO}, timeout=30) as group:
        assert [(group.server_of(p), p.name) for p in group.prompts()] == [("demo", "haiku")]
        assert [r.uri for r in group.resources()] == ["demo://readme"]
    assert "failed" not in caplog.text  # not a failure: that server has no prompts or resources


def test_a_uri_no_server_can_have(tools_only: dict[str, object], no_leaks: None) -> None:
    with mcp_sync.ClientGroup({"tools": tools_only, "broken": {"command": "/no/such/server-binary"}},
                              timeout=30) as group:
        with pytest.raises(mcp_sync.ToolNotFound, match="no connected server has the resource 'demo://readme'"):
            group.read_resource("demo://readme")


def test_items_handed_out_are_remembered_within_a_bound(monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    monkeypatch.setattr(_group, "_MAX_ORIGINS", 4)
    with mcp_sync.ClientGroup({"demo": DEMO}, timeout=30) as group:
        tools = list(group.tools(prefix=True))  # three tools, each as listed and as prefixed: six items
        assert len(group._origins) == 4  # the oldest forgotten
        assert [group.server_of(tool) for tool in tools] == ["demo"] * 3  # the forgotten ones by name


def test_a_listing_that_outlives_its_server_leaves_nothing_behind(no_leaks: None) -> None:
    """A server removed while its tools are being listed: its listing is not kept, so its tools
    are not routed to it afterwards (twice the same server: ``countdown`` is the other one's)."""
    with mcp_sync.ClientGroup({"first": DEMO, "second": DEMO}, timeout=30) as group:
        listing = group.tools()
        assert next(listing).name == "echo"
        group.remove("first")
        assert [tool.name for tool in listing] == ["add", "countdown", "echo", "add", "countdown"]
        assert group.server_of("countdown") == "second"
        assert group.call_tool("countdown", {"n": 1}).text == "liftoff"


def test_a_listed_tool_starts_a_task_on_its_server(tmp_path: Path, no_leaks: None) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"tools/list": [{"result": {"resultType": "complete", "tools": [
        {"name": "task_job", "inputSchema": {"type": "object"}}]}}]}))
    jobs = {"command": PY, "args": fault_args("--era", "modern", "--script", str(script))}
    with mcp_sync.ClientGroup({"demo": DEMO, "jobs": jobs}, timeout=30) as group:
        tool = next(t for t in group.tools() if t.name == "task_job")
        task = group.call_tool_as_task(tool, {"plan": "ok"})
        assert json.loads(task.wait(timeout=10).text)["polls"] == 3


def test_include_may_be_one_pattern(no_leaks: None) -> None:
    with mcp_sync.ClientGroup({"demo": DEMO}, include={"demo": "[ac]*"}, timeout=30) as group:
        assert [tool.name for tool in group.tools()] == ["add", "countdown"]
        with pytest.raises(mcp_sync.ToolNotFound, match="no connected server has a tool named 'echo'"):
            group.call_tool("echo", {"text": "x"})
        with pytest.raises(mcp_sync.ToolNotFound, match="tool 'echo' of server 'demo' is left out by the group"):
            group.call_tool("echo", {"text": "x"}, server="demo")
