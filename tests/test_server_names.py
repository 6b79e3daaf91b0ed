"""A stdio server's default name (#9.15): arguments that name nothing (an empty string, a bare
``/``, a lone ``@``) are passed over for the next one; with none left, the runner's own name."""

from __future__ import annotations

import pytest

import mcp_sync
from mcp_sync._names import name_from_command


@pytest.mark.parametrize(("command", "args", "name"), [
    ("node", ["", "weather.js"], "weather"),
    ("python3", ["/", "tools/notes_server.py"], "notes_server"),
    ("python", ["/"], "python"),
    ("npx", ["@"], "npx"),
    ("/usr/bin/node", [""], "node"),
])
def test_arguments_that_name_nothing_are_passed_over(command: str, args: list[str], name: str) -> None:
    assert name_from_command(command, args) == name
    assert mcp_sync.Client.stdio(command, args).name == name  # what the client is called
