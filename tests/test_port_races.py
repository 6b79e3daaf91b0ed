"""#32.2: no port is picked by one process (or one socket) and bound later by another.

Picking a free port (bind to 0, read it, close) and handing it to a server that binds it later
leaves a window in which anything else on the machine takes it, a parallel test worker above all,
and the test then talks to a stranger (an ``HTTP 405`` from whatever took the port). Servers under
test bind port 0 themselves and say the port they got (tests/servers/listening.py); a port where
nothing may listen is held by a bound socket for as long as it is used (``conftest.refused_port``).

This lint reads every Python file under tests/, examples/ and bench/ and fails on the shapes of
the race: a helper named like ``free_port``; a ``with socket.socket()`` block that reads its port
and lets it out (returned, or used after the block) without listening on it; a socket whose
port is used after that socket closed, having never listened.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PICKER_NAMES = {"free_port", "unused_port", "find_free_port", "pick_port", "get_free_port", "free_ports"}


def _python_files() -> list[Path]:
    return sorted(path for folder in ("tests", "examples", "bench") for path in (ROOT / folder).rglob("*.py"))


def _is_socket_constructor(node: ast.expr) -> bool:
    """``socket.socket(...)`` or ``socket(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Attribute) and func.attr == "socket") or (
        isinstance(func, ast.Name) and func.id == "socket")


def _method_calls(tree: ast.AST, owner: str, method: str) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == method and isinstance(node.func.value, ast.Name) and node.func.value.id == owner]


def _names_loaded_after(function: ast.AST, names: set[str], line: int) -> bool:
    return any(isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in names
               and node.lineno > line for node in ast.walk(function))


def races_in(source: str, filename: str = "<source>") -> list[str]:
    """The pick-then-bind shapes in ``source``: one line each, ``file:line: what``."""
    tree = ast.parse(source, filename)
    found: list[str] = []
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
            continue
        if not isinstance(function, ast.Module) and function.name in PICKER_NAMES:
            found.append(f"{filename}:{function.lineno}: a port picker {function.name}() (bind 0 in the server)")
        for node in ast.walk(function):
            if isinstance(node, ast.With):
                for item in node.items:
                    if not (_is_socket_constructor(item.context_expr) and isinstance(item.optional_vars, ast.Name)):
                        continue
                    sock = item.optional_vars.id
                    if not _method_calls(node, sock, "getsockname") or _method_calls(node, sock, "listen"):
                        continue
                    escapes = any(isinstance(inner, ast.Return) and inner.value is not None
                                  and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                          and n.func.attr == "getsockname" for n in ast.walk(inner.value))
                                  for inner in ast.walk(node))
                    ports = {target.id for inner in ast.walk(node) if isinstance(inner, ast.Assign)
                             and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                     and n.func.attr == "getsockname" for n in ast.walk(inner.value))
                             for target in inner.targets if isinstance(target, ast.Name)}
                    holds = any(isinstance(inner, (ast.Yield, ast.YieldFrom)) for inner in ast.walk(node))
                    if not holds and (escapes or _names_loaded_after(function, ports, node.end_lineno or node.lineno)):
                        found.append(f"{filename}:{node.lineno}: the port of socket {sock!r} is used after it closed")
            if isinstance(node, ast.Assign) and _is_socket_constructor(node.value) and node is not function:
                for target in node.targets:
                    if not isinstance(target, ast.Name):
                        continue
                    sock = target.id
                    if _method_calls(function, sock, "listen"):
                        continue
                    ports = {name.id for inner in ast.walk(function) if isinstance(inner, ast.Assign)
                             and any(call in _method_calls(inner.value, sock, "getsockname")
                                     for call in ast.walk(inner.value))
                             for name in inner.targets if isinstance(name, ast.Name)}
                    closes = [call.lineno for call in _method_calls(function, sock, "close")]
                    if ports and closes and _names_loaded_after(function, ports, min(closes)):
                        found.append(f"{filename}:{node.lineno}: socket {sock!r} gives its port away and closes")
    return sorted(set(found))


def test_no_file_picks_a_port_for_someone_else_to_bind() -> None:
    found = [race for path in _python_files() for race in races_in(path.read_text(), str(path.relative_to(ROOT)))]
    assert not found, "pick-then-bind ports (a server must bind port 0 itself):\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    # the old conftest.free_port: picked, closed, bound later by a server
    "import socket\ndef free_port():\n    with socket.socket() as s:\n        s.bind(('127.0.0.1', 0))\n"
    "        return s.getsockname()[1]\n",
    # the same without the telltale name
    "import socket\ndef pick():\n    with socket.socket() as s:\n        s.bind(('127.0.0.1', 0))\n"
    "        return int(s.getsockname()[1])\n",
    # the port read in the block, used after it
    "import socket\ndef main():\n    with socket.socket() as s:\n        s.bind(('127.0.0.1', 0))\n"
    "        port = s.getsockname()[1]\n    run(['server', '--port', str(port)])\n",
    # a listener closed before the server binds its port
    "import socket\ndef main():\n    listener = socket.socket()\n    listener.bind(('127.0.0.1', 0))\n"
    "    port = listener.getsockname()[1]\n    listener.close()\n    run(port)\n",
])
def test_the_lint_finds_each_shape_of_the_race(source: str) -> None:
    assert races_in(source)


@pytest.mark.parametrize("source", [
    # a listening socket handed over or served on
    "import socket\ndef main():\n    with socket.socket() as s:\n        s.bind(('127.0.0.1', 0))\n"
    "        s.listen()\n        port = s.getsockname()[1]\n    print(port)\n",
    # a bound socket that holds the port while it is used (connects are refused there)
    "import socket, contextlib\n@contextlib.contextmanager\ndef refused():\n    with socket.socket() as s:\n"
    "        s.bind(('127.0.0.1', 0))\n        yield s.getsockname()[1]\n",
    "import socket\ndef main():\n    with socket.socket() as s:\n        s.bind(('127.0.0.1', 0))\n"
    "        port = s.getsockname()[1]\n        check(port)\n",
])
def test_the_lint_leaves_sockets_that_hold_their_port_alone(source: str) -> None:
    assert races_in(source) == []
