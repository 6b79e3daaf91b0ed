"""The layers of mcp_sync, enforced over the import graph (type-only and function-level imports included).

From the bottom: the ground floor (models, errors, values, threads, options),
the transports (bytes <-> messages), the engine (ids -> futures), the session
layer (``mcp_sync._protocol``: the protocol), the facade (``Client`` and its
public-only mixins), the integrations (connect, config files, groups, the
CLI). Auth stands beside the layers: it imports the ground floor and the HTTP transports'
shared plumbing (``transports._http_common`` and ``_sse_stream``: bounded, abortable exchanges
and bodies), so that an OAuth
exchange is bounded exactly like a request; transports never import auth.

Rules (issue #16):
1. No module imports a higher layer; no import cycles at all.
2. Transports import neither the engine, the session layer, the facade nor auth.
3. The engine never branches on the era and never imports the session layer.
4. The session layer imports no concrete transport and never the facade (so it
   cannot hold a Client; the gc test in test_fork_gc.py checks the runtime half).
5. The integrations use the public API (the facade, public modules, auth) plus
   the ground floor only.
6. Only ``_threads.py`` creates threads; optional transport features are
   declared, never probed with ``getattr`` or code introspection.

Each rule is also run against a graph with one deliberate wrong import, which
it must catch.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mcp_sync"

GROUND = {
    "mcp_sync.exceptions", "mcp_sync.models", "mcp_sync.cancellation", "mcp_sync._ids", "mcp_sync._urls",
    "mcp_sync._threads", "mcp_sync._values", "mcp_sync._sentinels", "mcp_sync._version", "mcp_sync._names",
    "mcp_sync._headers", "mcp_sync._options", "mcp_sync._schema_subset", "mcp_sync.transports.base",
    "mcp_sync._terminal", "mcp_sync._typed", "mcp_sync._glob", "mcp_sync._chat", "mcp_sync._progress",
    "mcp_sync._display", "mcp_sync._media",
}
AUTH = {
    "mcp_sync.auth", "mcp_sync._oauth_flow", "mcp_sync._browser_auth", "mcp_sync._token_store", "mcp_sync._jwt",
    "mcp_sync._peer_guard",
}
FACADE = {
    "mcp_sync._client", "mcp_sync._client_constructors", "mcp_sync._client_lists", "mcp_sync._client_tasks",
    "mcp_sync._llm_formats", "mcp_sync._notebook", "mcp_sync._worker_clients",
}
INTEGRATIONS = {"mcp_sync._connect", "mcp_sync._config", "mcp_sync._group", "mcp_sync._cli", "mcp_sync.__main__",
                "mcp_sync.llm"}
#: Public modules an integration may use like an application does.
PUBLIC = {"mcp_sync", "mcp_sync.exceptions", "mcp_sync.models", "mcp_sync.cancellation", "mcp_sync.auth"}

#: What auth may use of the transports: the bounded exchanges every HTTP request goes through.
HTTP_PLUMBING = {"mcp_sync.transports._http_common", "mcp_sync.transports._sse_stream"}

RANK = {"ground": 0, "auth": 0, "transports": 1, "engine": 2, "session": 3, "facade": 4, "integrations": 5, "root": 6}


def layer_of(module: str) -> str:
    if module == "mcp_sync":
        return "root"
    if module in GROUND:
        return "ground"
    if module in AUTH:
        return "auth"
    if module == "mcp_sync.transports" or module.startswith("mcp_sync.transports."):
        return "transports"
    if module == "mcp_sync._engine":
        return "engine"
    if module.startswith("mcp_sync._protocol") or module == "mcp_sync._schemas":
        return "session"
    if module in FACADE:
        return "facade"
    if module in INTEGRATIONS:
        return "integrations"
    raise AssertionError(f"{module} is in no layer: add it to one in tests/test_layers.py")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every mcp_sync module ``path`` imports, wherever the import stands (TYPE_CHECKING, functions)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("mcp_sync"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("mcp_sync"):
                continue
            for alias in node.names:  # `from . import auth` imports a module
                candidate = f"{target}.{alias.name}"
                found.add(candidate if candidate in ALL_MODULES else target)
    found.discard(name)
    return found


ALL_MODULES = {module_name(p) for p in PACKAGE.rglob("*.py")}
GRAPH = {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}


# -- the rules, as functions of a graph (so that each can be shown a wrong import) -------------


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in graph.items():
        if module == "mcp_sync":
            continue  # the package root re-exports every layer's public names
        for target in targets:
            if target == "mcp_sync" and layer_of(module) == "integrations":
                continue  # an integration may use the public API by its public name
            if RANK[layer_of(target)] > RANK[layer_of(module)] and not (
                layer_of(module) == "auth" and target in HTTP_PLUMBING
            ):
                wrong.append(f"{module} ({layer_of(module)}) imports {target} ({layer_of(target)})")
            beside = layer_of(target) in ("ground", "auth") or target in HTTP_PLUMBING
            if layer_of(module) == "auth" and not beside:
                wrong.append(f"{module} (auth) imports {target}: auth imports the ground floor and the HTTP plumbing")
    return sorted(wrong)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def transport_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items() if layer_of(module) == "transports"
        for target in targets if layer_of(target) in ("engine", "session", "facade", "integrations", "auth")
    )


def engine_violations(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items() if layer_of(module) == "engine"
        for target in targets if layer_of(target) in ("session", "facade", "integrations")
    )


def session_violations(graph: dict[str, set[str]]) -> list[str]:
    concrete = {"mcp_sync.transports.stdio", "mcp_sync.transports.http", "mcp_sync.transports.sse",
                "mcp_sync.transports.inprocess"}
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items() if layer_of(module) == "session"
        for target in targets if target in concrete or layer_of(target) in ("facade", "integrations")
    )


def integration_violations(graph: dict[str, set[str]]) -> list[str]:
    allowed = {"ground", "facade", "integrations", "auth"}
    return sorted(
        f"{module} imports {target}"
        for module, targets in graph.items() if layer_of(module) == "integrations"
        for target in targets if target not in PUBLIC and layer_of(target) not in allowed
    )


RULES = [upward_imports, transport_violations, engine_violations, session_violations, integration_violations]


@pytest.mark.parametrize("rule", RULES, ids=lambda rule: rule.__name__)
def test_layer_rule_holds(rule: object) -> None:
    assert rule(GRAPH) == []  # type: ignore[operator]


def test_no_import_cycles() -> None:
    assert cycles(GRAPH) == []


@pytest.mark.parametrize(
    ("rule", "module", "wrong"),
    [
        (upward_imports, "mcp_sync._engine", "mcp_sync._client"),
        (upward_imports, "mcp_sync._protocol.session", "mcp_sync._group"),
        (upward_imports, "mcp_sync._token_store", "mcp_sync._engine"),
        (upward_imports, "mcp_sync._oauth_flow", "mcp_sync.transports.http"),
        (transport_violations, "mcp_sync.transports.stdio", "mcp_sync._engine"),
        (engine_violations, "mcp_sync._engine", "mcp_sync._protocol.lifecycle"),
        (session_violations, "mcp_sync._protocol.connection", "mcp_sync.transports.stdio"),
        (integration_violations, "mcp_sync._group", "mcp_sync._protocol.session"),
    ],
)
def test_each_rule_catches_a_deliberate_wrong_import(rule: object, module: str, wrong: str) -> None:
    broken = {name: set(targets) for name, targets in GRAPH.items()}
    broken[module].add(wrong)
    assert any(wrong in line for line in rule(broken)), f"{rule} missed {module} -> {wrong}"  # type: ignore[operator]


def test_a_deliberate_cycle_is_caught() -> None:
    broken = {name: set(targets) for name, targets in GRAPH.items()}
    broken["mcp_sync._values"].add("mcp_sync._options")  # _options imports _values
    assert any({"mcp_sync._values", "mcp_sync._options"} <= set(c) for c in cycles(broken))


def test_every_module_has_a_layer() -> None:
    for module in GRAPH:
        layer_of(module)


def _source(module: str) -> str:
    path = PACKAGE.parent / (module.replace(".", "/") + ".py")
    if not path.exists():
        path = PACKAGE.parent / module.replace(".", "/") / "__init__.py"
    return path.read_text(encoding="utf-8")


def test_the_engine_never_branches_on_the_era() -> None:
    source = _source("mcp_sync._engine")
    assert not re.search(r"""["'](modern|legacy)["']""", source)
    assert not re.search(r"\bera\b", source)


THREAD_MAKERS = {"Thread", "Timer", "ThreadPoolExecutor", "start_new_thread", "start_joinable_thread"}


def test_only_threads_module_creates_threads() -> None:
    """Every call that makes a thread (threading.Thread/Timer, an executor, _thread) is in _threads.py."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_threads.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name in THREAD_MAKERS:
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


def test_transport_features_are_declared_not_probed() -> None:
    """Nobody asks a transport with getattr/hasattr what it can do, or reads its code."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"(getattr|hasattr)\([^)]*transport", code) or "co_varnames" in code or "__code__" in code:
                offenders.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert offenders == []


# -- rule 4 at run time: nothing below the facade keeps a Client alive ------------------------------


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_dropped_client_closes_at_once_without_a_garbage_collection(era: str) -> None:
    """The session, its connection, threads and subscriptions refer to no Client, so dropping the
    last reference closes it by reference counting alone (gc disabled): its server exits."""
    import gc
    import sys
    import warnings

    from lifekit import gone, server_pid, wait_for

    import mcp_sync

    from conftest import PY, fault_args

    gc.collect()
    gc.disable()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            client = mcp_sync.Client.stdio(PY, fault_args("--era", era), timeout=20)
            assert client.call_tool("echo", {"text": "x"}).text == "x"
            sub = client.listen(tools_list_changed=True)
            pid = server_pid(client)
            assert sys.getrefcount(client) == 2  # this name and getrefcount's argument: nobody else
            del client
            assert wait_for(lambda: gone(pid), 10), pid
            sub.close()
    finally:
        gc.enable()
