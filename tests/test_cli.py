"""The ``mcp-sync`` command line (#10 CLI), run as a real subprocess.

Against examples/demo_server.py and the SDK server (stdio and HTTP), and
server-everything for images and blobs. Ctrl-C is a real SIGINT to the CLI
process while a slow tool runs; tests/servers/wire_tap.py records what the CLI
sent the server, so the test sees the cancellation arrive.
"""

from __future__ import annotations

import configparser
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from clikit import RunningCli, run_cli
from helpers import wait_until

from conftest import PY, ROOT, SDK_SERVER, SERVERS, running_server

pytestmark = pytest.mark.timeout(60)
DEMO = f"{PY} {ROOT / 'examples' / 'demo_server.py'}"
SDK_STDIO = f"{PY} {SDK_SERVER} stdio"
TAP = SERVERS / "wire_tap.py"
cli = run_cli


def test_tools_human_columns_and_json() -> None:
    human = cli("tools", DEMO)
    assert human.returncode == 0, human.stderr
    lines = human.stdout.splitlines()
    assert [line.split("(")[0] for line in lines] == ["echo", "add", "countdown"]
    assert {line.index("Return") if "Return" in line else line.index("Add") if "Add" in line
            else line.index("Count") for line in lines} == {len("countdown(n?)  ")}  # one aligned column
    assert lines[0].startswith("echo(text)") and "add(a?, b?)" in lines[1]
    wire = cli("tools", DEMO, "--json")
    assert [tool["name"] for tool in json.loads(wire.stdout)] == ["echo", "add", "countdown"]


def test_call_text_json_args_and_progress() -> None:
    echo = cli("call", DEMO, "echo", "text=hi there")
    assert (echo.returncode, echo.stdout, echo.stderr) == (0, "hi there\n", "")
    added = cli("call", DEMO, "add", "--json-args", '{"a": 1, "b": 1}', "b=2.5", "--json")
    assert added.returncode == 0 and json.loads(added.stdout)["structuredContent"] == {"sum": 3.5}
    counted = cli("call", DEMO, "countdown", "n=3")
    assert counted.returncode == 0 and counted.stdout == "liftoff\n"
    assert counted.stderr == ""  # piped: no progress bar (#30.3), and stdout stays clean for pipes


def test_resources_prompts_info_read_prompt() -> None:
    assert cli("resources", DEMO).stdout.split() == ["demo://readme", "readme", "-", "text/plain"]
    assert cli("prompts", DEMO).stdout.strip() == "haiku(topic)"
    info = json.loads(cli("info", DEMO, "--json").stdout)
    assert info["server"] == {"name": "demo-server", "version": "1.0"} and info["era"] == "modern"
    assert "protocol      2026-07-28 (modern)" in cli("info", DEMO).stdout
    assert cli("read", DEMO, "demo://readme").stdout == "Hello from demo-server.\n"
    assert cli("prompt", DEMO, "haiku", "topic=rain").stdout == "user: Write a haiku about rain.\n"


def test_exit_codes_and_one_line_errors() -> None:
    unknown = cli("call", DEMO, "nope")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.count("\n") == 1 and unknown.stderr.startswith("mcp-sync: error: ServerError")
    failed = cli("call", SDK_STDIO, "fail")  # an isError result: its text still goes to stdout
    assert failed.returncode == 1 and failed.stdout.strip(), failed
    for usage in (("call", DEMO), ("call", DEMO, "echo", "no-equals-sign"), ("tools",), ("bogus", DEMO),
                  ("tools", "--server", "x"), ("call", DEMO, "add", "--json-args", "[1]")):
        result = cli(*usage)
        assert result.returncode == 2, (usage, result)
        assert "error" in result.stderr and "Traceback" not in result.stderr
    missing = cli("tools", "/nonexistent/server-binary")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1, missing.stderr


def test_config_target(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"demo": {"command": PY, "args": [str(ROOT / "examples" /
                                                                                     "demo_server.py")]}}}))
    result = cli("tools", "--config", str(config), "--server", "demo")
    assert result.returncode == 0 and result.stdout.startswith("echo(text)"), result.stderr
    assert cli("tools", "--config", str(config), "--server", "other").returncode == 2


def test_sdk_server_over_http(sdk_http_url: str) -> None:
    listed = cli("tools", sdk_http_url, "--json")
    assert listed.returncode == 0 and "add" in [tool["name"] for tool in json.loads(listed.stdout)]
    added = cli("call", sdk_http_url, "add", "a=2", "b=3", "--json")
    assert json.loads(added.stdout)["structuredContent"] == {"result": 5}
    assert cli("read", sdk_http_url, "test://static").returncode == 0


def test_images_and_blobs_are_saved(everything_js: Path, tmp_path: Path) -> None:
    target = f"node {everything_js} stdio"
    image = cli("call", target, "get-tiny-image", "--save-dir", str(tmp_path))
    assert image.returncode == 0, image.stderr
    saved = Path(re.search(r"saved to (\S+)\]", image.stdout).group(1))  # type: ignore[union-attr]
    assert saved.parent == tmp_path and saved.read_bytes().startswith(b"\x89PNG")
    blob = cli("read", target, "demo://resource/dynamic/blob/1", "--save-dir", str(tmp_path))
    path = Path(re.search(r"saved to (\S+)\]", blob.stdout).group(1))  # type: ignore[union-attr]
    assert path.exists() and path.stat().st_size > 0


def interrupt_during(args: list[str], started: Callable[[], bool]) -> tuple[int, str, float]:
    """Start the CLI, send SIGINT once ``started()`` (the server has the call: piped, the CLI shows
    no progress to wait for); returns its exit status, its stderr, and how long it took to exit
    after the signal."""
    with RunningCli(*args) as running:
        assert wait_until(started, 30), "the call never reached the server"
        time.sleep(0.3)  # the server is working on it
        running.interrupt()
        sent = time.monotonic()
        status, _, stderr = running.finish(15)
        return status, stderr, time.monotonic() - sent


def cancels_in(log: Path) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 5  # the tap writes as the line passes; allow for a slow machine
    while time.monotonic() < deadline:
        if log.exists():
            messages = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
            found = [m for m in messages if m.get("method") == "notifications/cancelled"]
            if found:
                calls = [m["id"] for m in messages if m.get("method") == "tools/call"]
                assert [m["params"]["requestId"] for m in found] == calls
                return found
        time.sleep(0.05)
    return []


@pytest.mark.parametrize("server,call", [(DEMO, ["countdown", "n=200"]), (SDK_STDIO, ["slow", "seconds=20"])],
                         ids=["demo", "sdk"])
def test_ctrl_c_cancels_on_the_server_and_exits_130(server: str, call: list[str], tmp_path: Path) -> None:
    log = tmp_path / "wire.jsonl"
    target = f"{PY} {TAP} {log} {server}"
    status, stderr, took = interrupt_during(["call", target, *call],
                                            lambda: log.exists() and '"tools/call"' in log.read_text())
    assert status == 130, stderr
    assert took < 10
    assert cancels_in(log), log.read_text() if log.exists() else "no wire log"


def test_ctrl_c_over_http(tmp_path: Path) -> None:
    log = tmp_path / "http.log"  # a line per request: server/discover, tools/list, then the call
    with running_server([PY, SDK_SERVER, "http", "--http-log", str(log)]) as server:
        url = f"http://127.0.0.1:{server.port}/mcp"
        status, stderr, took = interrupt_during(
            ["call", url, "slow", "seconds=20"], lambda: log.exists() and log.read_text().count("POST") >= 3)
        assert status == 130, stderr
        assert took < 10
        # the server is still fine for the next caller
        assert cli("call", url, "echo", "text=after").stdout == "after\n"


def test_console_script_is_declared() -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    scripts = config["options.entry_points"]["console_scripts"].strip().splitlines()
    assert scripts == ["mcp-sync = mcp_sync._cli:entry_point"]
    from mcp_sync._cli import entry_point

    assert callable(entry_point)
    assert sys.modules["mcp_sync._cli"].__file__.startswith(str(ROOT))  # type: ignore[union-attr]


def test_long_descriptions_wrap_under_their_column(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from mcp_sync._cli import table

    monkeypatch.setenv("COLUMNS", "50")
    out = io.StringIO()
    table([("short", "word " * 30), ("a-much-longer-name", "two words")], out)
    lines = out.getvalue().splitlines()
    assert all(len(line) <= 50 for line in lines)
    column = len("a-much-longer-name  ")
    assert lines[0].startswith("short" + " " * (column - 5) + "word")
    assert len(lines) > 3 and all(line.startswith(" " * column + "word") for line in lines[1:-1])
    assert lines[-1] == "a-much-longer-name  two words"
