"""Misspelt options: each line below must be a mypy error (tests/test_typed_api.py checks them)."""

from __future__ import annotations

import mcp_sync

client = mcp_sync.Client.stdio("python", ["server.py"], timout=5)  # E: timout
client.tools(timout=5)  # E: timout
client.list_prompts(cahce="use")  # E: cahce
client.call_tool("echo", {}, timeout="5")  # E: timeout
client.read_resource("file:///a", timeot=1)  # E: timeot
client.discover(chache="use")  # E: chache
client.ping(timeout_s=1)  # E: timeout_s
mcp_sync.Client.http("https://x/mcp", verfy=False)  # E: verfy
client.get_prompt("p", {"n": "v"}, progres=None)  # E: progres
client.complete({"type": "ref/prompt", "name": "p"}, ("a", "b"), metta={})  # E: metta
client.request("x", None, reset_timeout_on_progres=True)  # E: reset_timeout_on_progres
mcp_sync.connect("python server.py", timout=5)  # E: timout
group = mcp_sync.ClientGroup({"a": {"command": "x"}}, timout=5)  # E: timout
group.tools(prefx=True)  # E: prefx
group.call_tool("echo", {}, servr="a")  # E: servr
group.read_resource("file:///a", cahce="use")  # E: cahce
group.get_prompt("p", None, timeout="5")  # E: timeout
client.run_tool_call({}, format="openai", timout=5)  # E: timout
mcp_sync.load_config("mcp.json", input={})  # E: input
mcp_sync.to_openai_tools(client.tools(), stict=True)  # E: stict
mcp_sync.FileTokenStore(pth="tokens.json")  # E: pth
mcp_sync.browser_authorize("https://a/authorize", timout=5)  # E: timout
mcp_sync.InvalidArguments("bad", paths="$")  # E: paths
