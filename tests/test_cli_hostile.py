"""Issues #17.7, #18.13, #18.14 and #18.15: the ``mcp-sync`` command line against a hostile server.

The server (written below, stdlib only, legacy era) puts terminal control sequences (OSC 52
clipboard writes, "clear screen", C1 CSI, a bidi override) in everything it sends: its name,
version and instructions, tool names and descriptions, resource URIs, prompt names, error
messages, its stderr, and results. Nothing of it may reach a terminal raw; results are written
as sent only when piped (or with ``--raw``). Also: a closed stdout ends the command quietly,
a lone surrogate in a result is printed with a replacement character, ``key=value`` follows the
tool's schema, and ``tools --config FILE`` lists every server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import PY, ROOT

pytestmark = pytest.mark.timeout(120)
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
DEMO = f"{PY} {ROOT / 'examples' / 'demo_server.py'}"
EVIL = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\u202e\x7f"
RAW_BITS = ("\x1b", "\x07", "\x9b", "\u202e", "\x7f")

SERVER = r'''
import json, sys
EVIL = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\u202e\x7f"
MANY = "--many" in sys.argv
SCHEMA = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
TOOLS = [
    {"name": "echo", "description": "echoes" + EVIL, "inputSchema": SCHEMA},
    {"name": "count", "description": "n", "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"name": "fail", "inputSchema": {"type": "object"}},
    {"name": "surrogate", "inputSchema": {"type": "object"}},
    {"name": "evil_text", "inputSchema": {"type": "object"}},
    {"name": "evil" + EVIL, "inputSchema": {"type": "object"}},
] + [{"name": f"filler_{i}", "description": "x" * 40, "inputSchema": {"type": "object"}}
     for i in range(3000 if MANY else 0)]
sys.stderr.write("starting" + EVIL + "\n")
sys.stderr.flush()

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    message = json.loads(line)
    method, ident, params = message.get("method"), message.get("id"), message.get("params") or {}
    if ident is None:
        continue
    result = None
    error = None
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion", "2025-11-25"),
                  "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                  "serverInfo": {"name": "evil" + EVIL, "version": "6.6" + EVIL}, "instructions": "obey" + EVIL}
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "resources/list":
        result = {"resources": [{"uri": "evil://r" + EVIL, "name": "res" + EVIL}]}
    elif method == "prompts/list":
        result = {"prompts": [{"name": "p" + EVIL, "description": "d" + EVIL}]}
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            if not isinstance(args.get("message"), str):
                error = {"code": -32602, "message": "message must be a string"}
            else:
                result = {"content": [{"type": "text", "text": "got " + json.dumps(args["message"])}]}
        elif name == "count":
            result = {"content": [{"type": "text", "text": "n=" + json.dumps(args.get("n"))}]}
        elif name == "fail":
            error = {"code": -32000, "message": "boom" + EVIL}
        elif name == "surrogate":
            result = {"content": [{"type": "text", "text": "a\ud800b"}]}
        elif name == "evil_text":
            result = {"content": [{"type": "text", "text": "before" + EVIL + "after\n" + "line\n" * 200000}]}
        else:
            error = {"code": -32602, "message": "Unknown tool: " + str(name)}
    else:
        error = {"code": -32601, "message": "Method not found"}
    send({"jsonrpc": "2.0", "id": ident, **({"error": error} if error else {"result": result})})
'''


@pytest.fixture(scope="module")
def evil(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("evil") / "evil_server.py"
    path.write_text(SERVER)
    return f"{PY} {path}"


def cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "mcp_sync", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=ENV, errors="surrogateescape")


def assert_inert(text: str) -> None:
    found = [bit for bit in RAW_BITS if bit in text]
    assert not found, (found, text[:500])


# -- escaping (#17.7) ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["tools"], ["info"], ["resources"], ["prompts"]])
def test_listings_and_identity_are_escaped(evil: str, command: list[str]) -> None:
    result = cli(*command, evil, "-v")
    assert result.returncode == 0, result.stderr
    assert_inert(result.stdout)
    assert_inert(result.stderr)  # the server's stderr line, logged
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b31m\\u202e\\x7f" in result.stdout, result.stdout
    if command == ["info"]:
        assert "evil" in result.stdout and "6.6" in result.stdout and "obey" in result.stdout
    if command == ["tools"]:
        assert "starting\\x1b]52" in result.stderr, result.stderr


def test_json_output_stays_json_and_inert(evil: str) -> None:
    result = cli("tools", evil, "--json")
    assert result.returncode == 0
    assert_inert(result.stdout)
    tools = json.loads(result.stdout)
    assert tools[0]["description"] == "echoes" + EVIL  # the same JSON to a parser


def test_error_messages_are_escaped(evil: str) -> None:
    result = cli("call", evil, "fail")
    assert result.returncode == 1 and result.stdout == ""
    assert_inert(result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("mcp-sync: error:")]
    assert len(errors) == 1 and "boom\\x1b]52" in errors[0], result.stderr  # one line


def test_results_are_raw_when_piped_and_escaped_on_a_terminal(evil: str) -> None:
    piped = cli("call", evil, "evil_text")
    assert piped.returncode == 0 and piped.stdout.startswith("before" + EVIL + "after\n")  # as sent
    if sys.platform == "win32":
        return
    import pty

    main, child = pty.openpty()  # stdout is a terminal here
    process = subprocess.Popen([PY, "-m", "mcp_sync", "call", evil, "evil_text"], stdout=child,
                               stderr=subprocess.PIPE, cwd=ROOT, env=ENV)
    os.close(child)
    seen = bytearray()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(seen) < 200:
        try:
            chunk = os.read(main, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    process.kill()
    process.wait(10)
    os.close(main)
    head = seen.decode("utf-8", "replace")
    assert head.startswith("before\\x1b]52;c;ZXZpbA==\\x07"), head[:200]
    assert_inert(head.split("after")[0])


# -- a closed pipe, an unencodable result (#18.13) -----------------------------------------------


@pytest.mark.parametrize(("command", "server_flags", "rest"), [("tools", " --many", []), ("call", "", ["evil_text"])])
def test_a_closed_stdout_ends_the_command_quietly(evil: str, command: str, server_flags: str, rest: list[str]) -> None:
    """``mcp-sync tools ... | head -1``: was "mcp-sync: error: BrokenPipeError" and exit 1."""
    words = [command, evil + server_flags, *rest]  # more than a pipe's buffer of output either way
    process = subprocess.Popen([PY, "-m", "mcp_sync", *words], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               cwd=ROOT, env=ENV)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # what head -1 does
    status = process.wait(60)
    stderr = process.stderr.read().decode()
    assert first and status == 141, (status, stderr)
    assert "Error" not in stderr and "Exception" not in stderr and "Traceback" not in stderr, stderr


def test_a_lone_surrogate_prints_a_replacement_character(evil: str) -> None:
    """Was: exit 2 ("bad usage") and nothing printed."""
    result = subprocess.run([PY, "-m", "mcp_sync", "call", evil, "surrogate"], capture_output=True, cwd=ROOT,
                            env=ENV, timeout=60)
    assert (result.returncode, result.stdout.decode()) == (0, "a\ufffdb\n"), result.stderr


# -- key=value follows the schema (#18.14) --------------------------------------------------------


def test_values_of_string_properties_stay_strings(evil: str) -> None:
    """Was: ``echo message=123`` sent the number 123 and the server refused it."""
    for value, sent in (("123", '"123"'), ("true", '"true"'), ('{"a": 1}', '"{\\"a\\": 1}"'), ("hi", '"hi"')):
        result = cli("call", evil, "echo", f"message={value}")
        assert (result.returncode, result.stdout) == (0, f"got {sent}\n"), (value, result.stderr)
    counted = cli("call", evil, "count", "n=3")  # not a string property: JSON as before
    assert counted.stdout == "n=3\n"


def test_arguments_are_checked_against_the_schema_before_sending(evil: str) -> None:
    bad = cli("call", evil, "count", "n=three")
    assert bad.returncode == 2 and bad.stdout == ""
    assert "InvalidArguments" in bad.stderr and "$.n" in bad.stderr and "integer" in bad.stderr, bad.stderr
    missing = cli("call", evil, "echo")
    assert missing.returncode == 2 and "message" in missing.stderr, missing.stderr


def test_a_mistyped_tool_gets_a_suggestion(evil: str) -> None:
    result = cli("call", evil, "ecoh", "message=x")
    assert result.returncode == 1 and "did you mean 'echo'?" in result.stderr, result.stderr
    nothing_close = cli("call", evil, "zzzzzz")
    assert nothing_close.returncode == 1 and "did you mean" not in nothing_close.stderr


def test_parse_value_and_pairs_follow_the_schema() -> None:
    from mcp_sync._cli import did_you_mean, parse_pairs, parse_value

    assert parse_value("123") == 123 and parse_value("123", {"type": "string"}) == "123"
    assert parse_value("null", {"type": ["string", "null"]}) == "null"
    assert parse_value("1", {"enum": ["1", "2"]}) == "1" and parse_value("1", {"enum": [1, 2]}) == 1
    assert parse_value("7", {"anyOf": [{"type": "string"}, {"type": "integer"}]}) == "7"
    assert parse_value("[" * 100_000) == "[" * 100_000  # not a RecursionError
    schema = {"type": "object", "properties": {"s": {"type": "string"}, "n": {"type": "number"}}}
    assert parse_pairs(["s=1.5", "n=1.5", "x=[1]"], schema) == {"s": "1.5", "n": 1.5, "x": [1]}
    assert parse_pairs(['t="q"'], raw=True) == {"t": '"q"'}
    started = time.thread_time()
    assert did_you_mean("ecoh", ["echo", "x" * 1_000_000, *[f"t{i}" for i in range(10_000)]]) == \
        " (did you mean 'echo'?)"
    assert time.thread_time() - started < 10


def test_prompt_arguments_are_passed_as_typed() -> None:
    result = cli("prompt", DEMO, "haiku", 'topic="rain"')
    assert result.stdout == 'user: Write a haiku about "rain".\n', result


# -- tools --config without --server (#18.15) -----------------------------------------------------


def test_tools_of_every_server_of_a_config(evil: str, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {"demo": {"command": PY, "args": [str(ROOT / "examples" / "demo_server.py")]},
               "evil": {"command": evil.split()[0], "args": evil.split()[1:]},
               "broken": {"command": "/no/such/server-binary"}}
    config.write_text(json.dumps({"mcpServers": servers}))
    result = cli("tools", "--config", str(config))
    assert result.returncode == 1, result  # one server failed: said on stderr, the others listed
    assert_inert(result.stdout)
    lines = result.stdout.splitlines()
    assert lines[0] == "[demo]" and lines[1].startswith("echo(text)") and "[evil]" in lines
    assert lines[lines.index("[evil]") + 1].startswith("echo(message)")
    assert "server broken" in result.stderr and "[broken]" not in result.stdout
    listed = json.loads(cli("tools", "--config", str(config), "--json").stdout)
    assert list(listed) == ["demo", "evil"] and listed["demo"][0]["name"] == "echo"
    del servers["broken"]
    config.write_text(json.dumps({"mcpServers": servers}))
    assert cli("tools", "--config", str(config)).returncode == 0
    one = cli("tools", "--config", str(config), "--server", "demo")  # one server: as before
    assert one.returncode == 0 and one.stdout.startswith("echo(text)")


def test_wrapping_is_linear_and_bounded() -> None:
    from mcp_sync._cli import wrap_words

    assert wrap_words("a bb ccccc", 4) == ["a bb", "cccc", "c"]
    for text in ("a" * 4_000_000, "a-" * 2_000_000, " x" * 2_000_000):
        started = time.thread_time()
        lines = wrap_words(text, 60)
        assert time.thread_time() - started < 10.0  # ~0.3 s; textwrap.wrap: quadratic
        assert all(len(line) <= 60 for line in lines)
