"""``mcp-sync`` on the servers of a config file, and on servers whose tool listing fails (#10 CLI,
#18.15), run as a real subprocess.

``--config FILE`` without ``--server`` uses the one server the file has, or names the ones to
choose from; ``tools --config FILE`` reports a server whose listing fails and lists the others;
``call`` on a server whose listing fails still calls the tool (unchecked).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from clikit import fault_command, run_cli

from conftest import PY, ROOT

pytestmark = pytest.mark.timeout(60)
DEMO_ENTRY = {"command": PY, "args": [str(ROOT / "examples" / "demo_server.py")]}


def _config(folder: Path, servers: dict[str, object]) -> str:
    path = folder / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return str(path)


def _entry(command: str) -> dict[str, object]:
    words = shlex.split(command)
    return {"command": words[0], "args": words[1:]}


def test_the_one_server_of_a_config_needs_no_server_option(tmp_path: Path) -> None:
    result = run_cli("read", "--config", _config(tmp_path, {"demo": DEMO_ENTRY}), "demo://readme")
    assert (result.returncode, result.stdout) == (0, "Hello from demo-server.\n"), result.stderr


@pytest.mark.parametrize(("servers", "named"), [({"b": DEMO_ENTRY, "a": DEMO_ENTRY}, "a, b"), ({}, "(none)")],
                         ids=["two", "none"])
def test_a_config_without_one_server_says_which_to_choose(tmp_path: Path, servers: dict[str, object],
                                                          named: str) -> None:
    config = _config(tmp_path, servers)
    result = run_cli("call", "--config", config, "echo", "text=x")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"mcp-sync: error: {config}: choose one with --server NAME: {named}\n"


def test_tools_of_a_config_report_a_server_whose_listing_fails(tmp_path: Path) -> None:
    broken = fault_command(tmp_path, {"tools/list": [{"error": {"code": -32603, "message": "listing broke"}}]})
    config = _config(tmp_path, {"broken": _entry(broken), "demo": DEMO_ENTRY})
    result = run_cli("tools", "--config", config)
    assert result.returncode == 1
    assert "mcp-sync: error: server broken: ServerError: [-32603] listing broke (tools/list)\n" in result.stderr
    assert result.stdout.startswith("[demo]\n") and "[broken]" not in result.stdout  # the others, no blank line first


def test_a_call_goes_out_when_the_listing_fails(tmp_path: Path) -> None:
    """The listing is only there to read key=value by the schema and check the arguments."""
    log = tmp_path / "received.jsonl"
    server = fault_command(tmp_path, {"tools/list": [{"error": {"code": -32603, "message": "listing broke"}}]},
                           "--log", str(log))
    result = run_cli("call", server, "echo", "text=hi")
    assert (result.returncode, result.stdout) == (0, "hi\n"), result.stderr
    methods = [json.loads(line).get("method") for line in log.read_text().splitlines()]
    assert methods.index("tools/list") < methods.index("tools/call")
