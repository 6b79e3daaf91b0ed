"""What each ``mcp-sync`` command prints (#10 CLI), run as a real subprocess.

``--json`` gives the wire shapes of every command; the text output shows every kind of content
block a tool can return (resource links, embedded text and blob resources, blocks of a kind
this client does not know, a result with only ``structuredContent``); files land in a fresh
temporary folder without ``--save-dir``; an empty listing prints nothing. On a terminal a
result is escaped and progress is a bar on stderr (tests/test_progress_bars.py).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from clikit import fault_command, run_cli, run_cli_on_a_terminal

from conftest import PY, ROOT

pytestmark = pytest.mark.timeout(60)
DEMO = f"{PY} {ROOT / 'examples' / 'demo_server.py'}"


@pytest.mark.parametrize(("words", "wire"), [
    (["resources"], [{"uri": "demo://readme", "name": "readme", "mimeType": "text/plain"}]),
    (["prompts"], [{"name": "haiku", "arguments": [{"name": "topic", "required": True}]}]),
    (["read", "demo://readme"], {"contents": [{"uri": "demo://readme", "mimeType": "text/plain",
                                               "text": "Hello from demo-server."}]}),
    (["prompt", "haiku", "topic=rain"], {"messages": [{"role": "user", "content": {
        "type": "text", "text": "Write a haiku about rain."}}]}),
], ids=["resources", "prompts", "read", "prompt"])
def test_json_is_the_wire_shape(words: list[str], wire: object) -> None:
    """``--json`` prints what the server sent (``resultType`` and ``_meta`` aside), for scripts."""
    result = run_cli(words[0], DEMO, *words[1:], "--json")
    assert result.returncode == 0, result.stderr
    printed = json.loads(result.stdout)
    if isinstance(printed, dict):
        printed = {key: value for key, value in printed.items() if key not in ("resultType", "_meta")}
    assert printed == wire


def test_resource_links_and_embedded_resources(everything_js: Path, tmp_path: Path) -> None:
    """server-everything's links are listed by URI and name; an embedded blob is saved to a file."""
    target = f"node {everything_js} stdio"
    links = run_cli("call", target, "get-resource-links", "count=2")
    assert links.returncode == 0, links.stderr
    assert links.stdout.splitlines()[1:] == ["[resource link demo://resource/dynamic/blob/1 Blob Resource 1]",
                                             "[resource link demo://resource/dynamic/text/2 Text Resource 2]"]
    embedded = run_cli("call", target, "get-resource-reference", "resourceType=Blob", "resourceId=2",
                       "--save-dir", str(tmp_path))
    assert embedded.returncode == 0, embedded.stderr
    line = next(line for line in embedded.stdout.splitlines() if "saved to" in line)
    assert re.match(r"\[demo://resource/dynamic/blob/2 \(text/plain, \d+ bytes\) saved to ", line), line
    saved = Path(re.search(r"saved to (\S+)\]", line).group(1))  # type: ignore[union-attr]
    assert saved.parent == tmp_path and saved.read_bytes()  # the blob, decoded


def test_files_go_to_a_new_temporary_folder_without_save_dir(everything_js: Path) -> None:
    result = run_cli("call", f"node {everything_js} stdio", "get-tiny-image")
    assert result.returncode == 0, result.stderr
    saved = Path(re.search(r"\[image image/png \(.*\) saved to (\S+)\]", result.stdout).group(1))  # type: ignore[union-attr]
    try:
        assert saved.parent.name.startswith("mcp-sync-") and saved.parent.parent == Path(tempfile.gettempdir())
        assert saved.read_bytes().startswith(b"\x89PNG")
    finally:
        shutil.rmtree(saved.parent)


def test_blocks_of_any_kind_and_a_structured_only_result(tmp_path: Path) -> None:
    """A link without a name, a block of a kind not known here (printed as its JSON), and a result
    whose only payload is ``structuredContent`` (printed as JSON rather than nothing)."""
    blocks = [{"type": "resource_link", "uri": "test://a"}, {"type": "hologram", "frames": 3}]
    server = fault_command(tmp_path, {
        "tools/call echo": [{"result": {"content": blocks}}],
        "tools/call counter": [{"result": {"content": [], "structuredContent": {"count": 7}}}],
    })
    shown = run_cli("call", server, "echo", "text=x")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("[resource link test://a]\n")
    assert json.loads(shown.stdout.split("\n", 1)[1]) == {"type": "hologram", "frames": 3}
    structured = run_cli("call", server, "counter")
    assert structured.returncode == 0, structured.stderr
    assert json.loads(structured.stdout) == {"count": 7}


def test_an_empty_listing_prints_nothing(tmp_path: Path) -> None:
    server = fault_command(tmp_path, {"prompts/list": [{"result": {"prompts": []}}]})
    result = run_cli("prompts", server)
    assert (result.returncode, result.stdout) == (0, ""), result.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_on_a_terminal_results_are_escaped_and_progress_is_shown(tmp_path: Path) -> None:
    server = fault_command(tmp_path)

    def on_terminal(*args: str) -> str:  # what the command wrote, but the server's own stderr line
        status, shown = run_cli_on_a_terminal(*args)
        assert status == 0, shown
        return "".join(line for line in shown.splitlines(keepends=True) if not line.startswith("[fault_server]"))

    shown = on_terminal("call", server, "echo", "text=\x1b]52;c;eA==\x07\x1b[2Jcleared")
    # inert: no escape sequence of the server's reaches the terminal (a call without progress
    # leaves no bar behind: at most the erasing of it comes first)
    result = "\\x1b]52;c;eA==\\x07\\x1b[2Jcleared\r\n"
    assert shown.endswith("\r" + result) or shown == result, shown
    assert "\x1b]" not in shown and "\x07" not in shown
    shown = on_terminal("call", server, "slow", "seconds=0.25")
    # the progress bar (tests/test_progress_bars.py: its forms), then the result on a line of its own
    assert shown.startswith("\r") and shown.endswith("\r\nslept 0.25\r\n"), shown
