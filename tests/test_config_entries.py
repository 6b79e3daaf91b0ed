"""``load_config``: each mistake in a server entry is a ConfigError naming the server and the field
(and showing the value as the file wrote it); ``${workspaceFolder}`` and a relative ``envFile``
follow the config file's folder (#10.3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import mcp_sync


@pytest.mark.parametrize(("entry", "field", "message"), [
    ({"url": "https://a/mcp", "type": "stdio"}, "type", "a stdio server has a 'command', not a 'url'"),
    ({"url": "https://a/mcp\r\nHost: b"}, "url", "'https://a/mcp\\r\\nHost: b' holds a CR, LF or NUL character"),
    ({"url": 8080}, "url", "must be an http(s) URL, not 8080"),
    ({"url": ["https://a/mcp"]}, "url", "must be an http(s) URL, not a list"),
    ({"command": ""}, "command", "must be a non-empty string"),
    ({"command": ["npx", "server"]}, "command", "must be a non-empty string"),
    ({"command": "npx", "cwd": 7}, "cwd", "must be a string (a folder)"),
], ids=["url-of-stdio", "url-line-break", "url-number", "url-list", "command-empty", "command-list", "cwd-number"])
def test_a_bad_field_is_named(entry: dict[str, Any], field: str, message: str) -> None:
    with pytest.raises(mcp_sync.ConfigError) as info:
        mcp_sync.load_config({"mcpServers": {"srv": entry}})
    assert (info.value.server, info.value.field) == ("srv", field)
    assert str(info.value) == f"server 'srv' field {field!r}: {message}"


def test_an_entry_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"ok": {"command": "x"}, "bad": "npx server"}}))
    with pytest.raises(mcp_sync.ConfigError) as info:
        mcp_sync.load_config(path)
    assert (info.value.file, info.value.server, info.value.field) == (str(path), "bad", None)
    assert str(info.value) == f"{path}: server 'bad': an entry must be an object"


def test_workspace_folder_needs_a_file() -> None:
    """A dict has no folder for ``${workspaceFolder}`` to stand for."""
    with pytest.raises(mcp_sync.ConfigError, match=r"\$\{workspaceFolder\} needs the config's path") as info:
        mcp_sync.load_config({"servers": {"srv": {"command": "node", "args": ["${workspaceFolder}/server.js"]}}})
    assert (info.value.server, info.value.field) == ("srv", "args[0]")


def test_a_relative_env_file_is_read_from_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """VS Code's ``"envFile": ".env"`` in ``.vscode/mcp.json`` is the workspace's ``.env``, wherever
    the process runs; ``env`` wins over it."""
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".env").write_text("TOKEN=from-file\nREGION=eu\n")
    config = tmp_path / ".vscode" / "mcp.json"
    config.write_text(json.dumps({"servers": {"srv": {"command": "node", "envFile": ".env",
                                                      "env": {"REGION": "us"}}}}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert mcp_sync.load_config(config)["srv"]["env"] == {"TOKEN": "from-file", "REGION": "us"}
