"""Issue #10 (config files): load_config on real files in each host's shape, variable expansion,
JSONC, errors that name the file/server/field, remote options passed through, connect("server.py")."""

from __future__ import annotations

import json
import shutil
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._config import strip_jsonc
from mcp_sync._connect import _client_for, script_command

from conftest import PY, ROOT, SDK_SERVER
from httpkit import FakeServer

pytestmark = pytest.mark.timeout(60)

CONFIGS = Path(__file__).parent / "data" / "configs"
DEMO_SERVER = str(ROOT / "examples" / "demo_server.py")


def host_file(tmp_path: Path, relative: str, **places: str) -> Path:
    """Copy a host's config (and its folder) into tmp_path, pointing its commands at local servers.

    Only the @PLACEHOLDER@ paths change; the file keeps the host's shape."""
    source = CONFIGS / relative
    top = Path(relative).parts[0]
    src_dir = CONFIGS / top if (CONFIGS / top).is_dir() else source.parent
    dest_root = tmp_path / top if (CONFIGS / top).is_dir() else tmp_path
    if (CONFIGS / top).is_dir():
        shutil.copytree(src_dir, dest_root)
    dest = tmp_path / relative
    dest.parent.mkdir(parents=True, exist_ok=True)
    text = source.read_text()
    values = {"PYTHON": PY, "DEMO_SERVER": DEMO_SERVER, "SDK_SERVER": SDK_SERVER, **places}
    for key, value in values.items():
        text = text.replace(f"@{key}@", value.replace("\\", "\\\\"))
    assert "@" not in text.replace("@modelcontextprotocol", ""), "a placeholder was left"
    dest.write_text(text)
    return dest


def env_of(group: mcp_sync.ClientGroup, server: str) -> dict[str, str]:
    return json.loads(group.call_tool("get-env", {}, server=server).text)


# -- each host's file loads and connects unchanged (#10.1) ------------------------------------------


def test_claude_desktop_config(tmp_path: Path, everything_js: Path, no_leaks: None) -> None:
    path = host_file(tmp_path, "claude_desktop_config.json", EVERYTHING_JS=str(everything_js))
    servers = mcp_sync.load_config(path)
    assert sorted(servers) == ["demo", "everything"]
    with mcp_sync.ClientGroup(servers, timeout=30) as group:
        assert group.errors == {}
        assert group.call_tool("add", {"a": 2, "b": 3}).structured_content == {"sum": 5}
        assert env_of(group, "everything")["DEMO_GREETING"] == "from claude desktop"


def test_cursor_config_env_and_remote_headers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              no_leaks: None) -> None:
    monkeypatch.setenv("MCP_SYNC_TEST_API_KEY", "k-123")
    with FakeServer("legacy") as fake:
        path = host_file(tmp_path, "cursor/.cursor/mcp.json", FAKE_HTTP_URL=fake.url)
        servers = mcp_sync.load_config(path)
        assert servers["sdk"]["env"] == {"API_KEY": "k-123", "HOME_DIR": str(Path.home())}
        # a path works too; the SDK server can take > 10 s to start on a loaded machine: its probe waits longer
        with mcp_sync.ClientGroup(path, timeout=30, options={"sdk": {"probe_timeout": 60}}) as group:
            assert group.errors == {}
            assert group.call_tool("echo", {"a": 1}, server="remote").text
            assert group.call_tool("echo", {"text": "hi"}, server="sdk").text == "hi"
        posts = fake.seen(http_method="POST")
        assert posts and all(r.headers.get("authorization") == "Bearer k-123" for r in posts)


def test_claude_code_mcp_json(tmp_path: Path, everything_js: Path, sdk_http_url: str,
                              monkeypatch: pytest.MonkeyPatch, no_leaks: None) -> None:
    monkeypatch.delenv("MCP_SYNC_TEST_SDK_URL", raising=False)
    monkeypatch.delenv("MCP_SYNC_TEST_TEAM", raising=False)
    monkeypatch.setenv("MCP_SYNC_TEST_GREETING", "hello from .mcp.json")
    path = host_file(tmp_path, "claude_code/.mcp.json", EVERYTHING_JS=str(everything_js), SDK_HTTP_URL=sdk_http_url)
    servers = mcp_sync.load_config(path)
    assert servers["sdk-http"]["url"] == sdk_http_url and servers["sdk-http"]["headers"] == {"X-Team": "platform"}
    with mcp_sync.ClientGroup(servers, timeout=30) as group:
        assert group.errors == {}
        assert group.call_tool("add", {"a": 1, "b": 2}, server="sdk-http").text == "3"
        assert group.call_tool("countdown", {"n": 1}).text == "liftoff"
        assert env_of(group, "everything")["DEMO_GREETING"] == "hello from .mcp.json"


def test_vscode_mcp_json_with_comments_inputs_and_workspace(tmp_path: Path, everything_js: Path,
                                                             sdk_http_url: str, no_leaks: None) -> None:
    path = host_file(tmp_path, "vscode/.vscode/mcp.json", EVERYTHING_JS=str(everything_js), SDK_HTTP_URL=sdk_http_url)
    shutil.copy(DEMO_SERVER, tmp_path / "vscode" / "demo_server.py")  # ${workspaceFolder}/demo_server.py
    with pytest.raises(mcp_sync.ConfigError, match=r"demo-token.*Token for the demo servers") as info:
        mcp_sync.load_config(path)
    assert (info.value.server, info.value.field) == ("everything", "env.DEMO_TOKEN")
    servers = mcp_sync.load_config(path, inputs={"demo-token": "s3cret"})
    assert servers["demo"]["args"] == [str(tmp_path / "vscode" / "demo_server.py")]
    assert servers["everything"]["env"]["DOCS"] == "https://example.com/docs//a,b"  # not a comment, not a comma
    assert servers["everything"]["env"]["FROM_ENV_FILE"] == "yes, quoted"  # envFile, under "env"
    with mcp_sync.ClientGroup(servers, timeout=30) as group:
        assert group.errors == {}
        assert group.call_tool("echo", {"text": "ws"}, server="demo").text == "ws"
        assert group.call_tool("add", {"a": 4, "b": 5}, server="sdk-http").text == "9"
        child_env = env_of(group, "everything")
        assert child_env["DEMO_TOKEN"] == "s3cret" and child_env["FROM_ENV_FILE"] == "yes, quoted"


def test_vscode_settings_json_with_sse(tmp_path: Path, everything_sse_url: str, no_leaks: None) -> None:
    path = host_file(tmp_path, "vscode_settings/settings.json", EVERYTHING_SSE_URL=everything_sse_url)
    with mcp_sync.ClientGroup(mcp_sync.load_config(path), timeout=30) as group:
        assert group.errors == {}
        engine = group.clients["legacy-sse"]._engine
        assert engine is not None and type(engine.transport).__name__ == "SseTransport"
        assert "sum" in group.call_tool("get-sum", {"a": 1, "b": 2}).text.lower()


def test_disabled_entries_are_skipped_without_expanding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MCP_SYNC_TEST_SURELY_UNSET_TOKEN", raising=False)
    servers = mcp_sync.load_config(host_file(tmp_path, "cline_mcp_settings.json"))
    assert list(servers) == ["demo"]
    enabled = {"mcpServers": {"x": {"command": "a", "env": {"T": "${MCP_SYNC_TEST_SURELY_UNSET_TOKEN}"}}}}
    with pytest.raises(mcp_sync.ConfigError, match="MCP_SYNC_TEST_SURELY_UNSET_TOKEN"):
        mcp_sync.load_config(enabled)


# -- variables (#10.1: a missing one is an error naming it, never "") --------------------------------

NAMES = st.sampled_from(["MCP_SYNC_A", "MCP_SYNC_B", "MCP_SYNC_C"])
LITERAL = st.text(alphabet=string.ascii_letters + string.digits + " /:.-_{}", max_size=8).filter(
    lambda s: "${" not in s and not s.endswith("$"))
DEFAULT = LITERAL.filter(lambda s: "}" not in s)  # as in a shell, a default ends at the first }
FRAGMENT = st.one_of(LITERAL.map(lambda s: ("lit", s)), NAMES.map(lambda n: ("var", n)),
                     NAMES.map(lambda n: ("env", n)), st.tuples(NAMES, DEFAULT).map(lambda t: ("default", t)))


@settings(max_examples=200, deadline=None)
@given(fragments=st.lists(FRAGMENT, max_size=6), values=st.dictionaries(NAMES, LITERAL))
def test_expansion_property(fragments: list[tuple[str, Any]], values: dict[str, str]) -> None:
    """Any mix of text, ${VAR}, ${env:VAR} and ${VAR:-default} expands to exactly the pieces, and a
    reference to an unset variable without a default is a ConfigError naming that variable."""
    import os

    written, expected, missing = "", "", None
    for kind, item in fragments:
        if kind == "lit":
            written, expected = written + item, expected + item
        elif kind == "default":
            name, default = item
            written += f"${{{name}:-{default}}}"
            expected += values.get(name) or default
        else:
            written += f"${{{item}}}" if kind == "var" else f"${{env:{item}}}"
            if item in values:
                expected += values[item]
            elif missing is None:
                missing = item
    saved = {name: os.environ.pop(name, None) for name in ("MCP_SYNC_A", "MCP_SYNC_B", "MCP_SYNC_C")}
    os.environ.update(values)
    try:
        config = {"mcpServers": {"s": {"command": "cmd", "args": [written]}}}
        if missing is None:
            assert mcp_sync.load_config(config)["s"]["args"] == [expected]
        else:
            with pytest.raises(mcp_sync.ConfigError) as info:
                mcp_sync.load_config(config)
            assert missing in str(info.value) and info.value.field == "args[0]" and info.value.server == "s"
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value


def test_default_applies_to_unset_and_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_SYNC_EMPTY", "")
    monkeypatch.delenv("MCP_SYNC_UNSET", raising=False)
    entry = {"command": "c", "args": ["${MCP_SYNC_EMPTY:-d1}", "${MCP_SYNC_UNSET:-d2}", "${MCP_SYNC_EMPTY}"]}
    assert mcp_sync.load_config({"servers": {"s": entry}})["s"]["args"] == ["d1", "d2", ""]


# -- JSONC ------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab/*,"\\ \n}]', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet="ab/,*", max_size=3), inner,
                                                                 max_size=3),
    max_leaves=12,
)


def _jsonc(value: Any) -> str:
    """``value`` written as VS Code might: comments everywhere, trailing commas."""
    if isinstance(value, dict):
        items = [f"// key\n{json.dumps(k)} /* c */: {_jsonc(v)}," for k, v in value.items()]
        return "{ " + " ".join(items) + " /* end */ }"
    if isinstance(value, list):
        return "[" + "".join(f"{_jsonc(v)} , // item\n" for v in value) + "]"
    return json.dumps(value)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_strip_jsonc_property(value: Any) -> None:
    assert json.loads(strip_jsonc(_jsonc(value))) == value
    assert json.loads(strip_jsonc(json.dumps(value))) == value  # plain JSON is left alone


# -- errors name the file, server and field ---------------------------------------------------------


def test_config_errors(tmp_path: Path) -> None:
    assert issubclass(mcp_sync.ConfigError, mcp_sync.MCPError) and issubclass(mcp_sync.ConfigError, ValueError)
    bad = tmp_path / "mcp.json"
    bad.write_text('{"tools": {}}')
    with pytest.raises(mcp_sync.ConfigError, match="mcpServers") as info:
        mcp_sync.load_config(bad)
    assert info.value.file == str(bad) and str(bad) in str(info.value)
    bad.write_text("{not json")
    with pytest.raises(mcp_sync.ConfigError, match="not valid JSON"):
        mcp_sync.load_config(bad)
    with pytest.raises(mcp_sync.ConfigError, match="cannot read"):
        mcp_sync.load_config(tmp_path / "missing.json")
    cases = [
        ({"name": "x"}, "command"),
        ({"url": "https://a", "type": "websocket"}, "type"),
        ({"url": "ftp://a"}, "url"),
        ({"command": "c", "args": "not a list"}, "args"),
        ({"command": "c", "env": {"A": 1}}, "env"),
        ({"type": "http", "command": "c"}, "url"),
        ({"url": "https://a", "headers": {"A": 1}}, "headers"),
        ({"command": "c", "envFile": str(tmp_path / "missing.env")}, "envFile"),
    ]
    for entry, field in cases:
        with pytest.raises(mcp_sync.ConfigError) as info:
            mcp_sync.load_config({"mcpServers": {"srv": entry}})
        assert (info.value.server, info.value.field) == ("srv", field), entry


# -- remote entries pass their options through (#10.3) --------------------------------------------------


@pytest.mark.parametrize(("spelling", "factory"), [
    ("http", "http"), ("streamable-http", "http"), ("streamable_http", "http"), ("streamableHttp", "http"),
    ("sse", "sse"), (None, "http"),
])
def test_remote_entry_options_reach_the_constructor(spelling: str | None, factory: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def spy(kind: str) -> Any:
        def record(url: str, **kwargs: Any) -> str:
            seen.update(kind=kind, url=url, **kwargs)
            return "client"
        return record

    monkeypatch.setattr(mcp_sync.Client, "http", spy("http"))
    monkeypatch.setattr(mcp_sync.Client, "sse", spy("sse"))
    entry: dict[str, Any] = {"url": "https://mcp.example.com/mcp", "headers": {"X-A": "1"}, "verify": "/ca.pem",
                             "cert": "/c.pem", "proxies": {"https": "http://proxy:3128"}, "connect_timeout": 3,
                             "max_retries": 0, "description": "ignored"}
    if spelling is not None:
        entry["transport" if spelling == "streamable_http" else "type"] = spelling
    loaded = mcp_sync.load_config({"mcpServers": {"r": entry}})["r"]
    assert _client_for(loaded, timeout=5, headers={"X-B": "2"}) == "client"
    assert seen == {"kind": factory, "url": "https://mcp.example.com/mcp", "headers": {"X-A": "1", "X-B": "2"},
                    "verify": "/ca.pem", "cert": "/c.pem", "proxies": {"https": "http://proxy:3128"},
                    "connect_timeout": 3, "max_retries": 0, "timeout": 5}


# -- connect("server.py") / connect("server.js") (#10.2) ---------------------------------------------


def test_connect_runs_scripts_with_the_right_interpreter(everything_js: Path, tmp_path: Path,
                                                         no_leaks: None) -> None:
    with mcp_sync.connect(DEMO_SERVER) as client:  # not executable, no shebang needed
        assert client.call_tool("echo", {"text": "py"}).text == "py"
    with mcp_sync.connect(f"{everything_js} stdio") as client:
        assert "5" in client.call_tool("get-sum", {"a": 2, "b": 3}).text
    (tmp_path / "server.py").write_text(Path(DEMO_SERVER).read_text())
    with mcp_sync.connect({"command": "server.py", "cwd": str(tmp_path)}) as client:  # relative to cwd
        assert client.call_tool("add", {"a": 1, "b": 1}).text == "2"
    command, args = script_command("not-there.py", ["a"])
    assert (command, args) == ("not-there.py", ["a"])  # a missing file is left to PATH as before


def test_connect_takes_a_whole_config_with_one_server(tmp_path: Path, no_leaks: None) -> None:
    """The issue's first try: connect({"mcpServers": ...}) and connect("mcp.json") (was: run as a command)."""
    config = {"mcpServers": {"demo": {"command": PY, "args": [DEMO_SERVER]}}}
    with mcp_sync.connect(config) as client:
        assert client.call_tool("echo", {"text": "dict"}).text == "dict"
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(config))
    with mcp_sync.connect(str(path)) as client:
        assert client.call_tool("echo", {"text": "file"}).text == "file"
    two = {"servers": {"a": {"command": "x"}, "b": {"url": "http://127.0.0.1:1/mcp"}}}
    with pytest.raises(ValueError, match="ClientGroup"):
        mcp_sync.connect(two)
    with mcp_sync.ClientGroup(config) as group:  # a group takes the whole dict too
        assert list(group.clients) == ["demo"]


def test_npx_shorthand_runs_the_package_with_npx(everything_js: Path, tmp_path: Path, no_leaks: None) -> None:
    """``connect("npx:<package> args")`` runs ``npx -y <package> args``: here server-everything, found
    by npx in the local install (cwd), its registry a refused port, so nothing is fetched."""
    from conftest import NPM_PREFIX, refused_port

    with refused_port() as port:
        env = {"npm_config_registry": f"http://127.0.0.1:{port}/", "npm_config_fetch_retries": "0",
               "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_update_notifier": "false"}
        with mcp_sync.connect("npx:@modelcontextprotocol/server-everything stdio", cwd=str(NPM_PREFIX), env=env,
                              stderr=lambda line: None, timeout=60) as client:
            assert client.transport.target.startswith("npx -y @modelcontextprotocol/server-everything stdio")
            assert "get-sum" in [tool.name for tool in client.tools()]
            assert client.call_tool("get-sum", {"a": 2, "b": 3}).text == "The sum of 2 and 3 is 5."
        with mcp_sync.connect(["npx:@modelcontextprotocol/server-everything", "stdio"], cwd=str(NPM_PREFIX),
                              env=env, stderr=lambda line: None, timeout=60) as client:
            assert client.server_implementation is not None


def test_uvx_shorthand_and_bad_shorthands() -> None:
    from mcp_sync._connect import package_command

    client = _client_for("uvx:mcp-server-fetch --ignore-robots-txt")  # not started: the command it would run
    assert client.transport.target.startswith("uvx mcp-server-fetch --ignore-robots-txt")
    client.close()
    assert package_command(["NPX:pkg"]) == ["npx", "-y", "pkg"]
    assert package_command(["npx", "pkg"]) == ["npx", "pkg"]  # the plain runner: as it is
    for bad in ("npx:", "uvx:", "npx:-y"):
        with pytest.raises(ValueError, match="name the package"):
            _client_for(bad)
