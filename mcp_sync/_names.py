"""What a stdio server is called: :func:`name_from_command` names it after what it
runs, not the interpreter that runs it (its client's reprs, thread and logger names)."""

from __future__ import annotations

import os
from typing import Sequence

# -- names -------------------------------------------------------------------------------

#: Commands that run something else: the name comes from what they run.
_RUNNERS = frozenset({
    "python", "python3", "py", "pypy", "pypy3", "node", "nodejs", "deno", "bun", "npx", "pnpx", "bunx",
    "uvx", "uv", "pipx", "ruby", "java", "php", "perl", "bash", "sh", "zsh", "env", "npm", "pnpm", "yarn",
    "docker", "podman", "poetry", "pdm", "hatch", "conda",
})
_SUBCOMMANDS = frozenset({"run", "exec", "x", "dlx", "tool", "start"})
_GENERIC_STEMS = frozenset({"index", "main", "__main__", "server", "cli", "app", "run", "start"})
_BUILD_DIRS = frozenset({"dist", "build", "lib", "src", "bin", "out", "build-output", "esm", "cjs"})


def _is_runner(base: str) -> bool:
    stem = base[:-4] if base.lower().endswith(".exe") else base
    return stem in _RUNNERS or stem.rstrip("0123456789.") in _RUNNERS


def _name_of_path(path: str) -> str:
    """``demo_server.py`` -> ``demo_server``; ``.../server-everything/dist/index.js`` -> ``server-everything``;
    ``@scope/pkg@1.2`` -> ``pkg``."""
    if path.startswith("@") or ("/" not in path and "@" in path):
        body = path[1:] if path.startswith("@") else path
        return body.split("@", 1)[0].rsplit("/", 1)[-1]
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if not parts:
        return ""
    stem = parts[-1].split("==")[0]
    stem = stem.rsplit(".", 1)[0] if "." in stem[1:] and not stem.startswith(".") else stem
    if stem in _GENERIC_STEMS:
        for parent in reversed(parts[:-1]):
            if parent not in _BUILD_DIRS and not parent.startswith("."):
                return parent
    return stem


def name_from_command(command: str, args: Sequence[str]) -> str:
    """A stdio server's name: the script or package a runner (python, node, npx, uvx, ...) runs,
    else the command's own name.

    Example: ``name_from_command("npx", ["-y", "@modelcontextprotocol/server-everything"])``
    is ``"server-everything"``; ``("python", ["demo_server.py"])`` is ``"demo_server"``.
    """
    base = os.path.basename(command.replace("\\", "/")) or command
    if not _is_runner(base):
        return _name_of_path(base) or "server"
    args = list(args)
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-m" and i + 1 < len(args):  # python -m package.module
            return args[i + 1]
        if arg in ("-c", "-e") or arg == "--":  # inline code: nothing better than the runner
            break
        if arg.startswith("-") or arg in _SUBCOMMANDS:
            i += 1
            continue
        name = _name_of_path(arg)
        if name:
            return name
        i += 1
    return _name_of_path(base) or "server"
