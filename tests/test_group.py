"""Issue #10.4 (ClientGroup): many real servers as one; routing, prefixed names, partial failure,
concurrent connect with a bound, per-server options, thread safety, close()."""

from __future__ import annotations

import logging
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._group import _Names, template_fits

from conftest import FAULT_SERVER, PY, ROOT

pytestmark = pytest.mark.timeout(90)

DEMO_SERVER = str(ROOT / "examples" / "demo_server.py")
STRICTEST_LLM_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}\Z")


@pytest.fixture(scope="module")
def group(everything_js: Path, sdk_http_url: str) -> Iterator[mcp_sync.ClientGroup]:
    """demo_server (stdio, modern) + server-everything (stdio, legacy) + the SDK server (HTTP)."""
    servers = {
        "demo": {"command": DEMO_SERVER},
        "everything": {"command": str(everything_js), "args": ["stdio"]},
        "sdk": {"url": sdk_http_url, "type": "streamable-http"},
    }
    with mcp_sync.ClientGroup(servers, timeout=30) as group:
        yield group


def test_tools_across_servers_and_server_of(group: mcp_sync.ClientGroup) -> None:
    assert group.errors == {} and sorted(group.clients) == ["demo", "everything", "sdk"]
    by_server: dict[str, list[str]] = {}
    for tool in group.tools():
        by_server.setdefault(group.server_of(tool), []).append(tool.name)
    assert by_server["demo"] == ["echo", "add", "countdown"]
    assert "get-tiny-image" in by_server["everything"] and "fail" in by_server["sdk"]
    assert group.server_of("countdown") == "demo" and group.server_of("demo__echo") == "demo"


def test_a_group_listing_shows_every_server_as_one_table(group: mcp_sync.ClientGroup) -> None:
    """#30.1: ``group.tools(prefix=True).show()`` is every server's tools, one table in Jupyter;
    prompts, resources and templates are Listings too."""
    listing = group.tools(prefix=True)
    assert isinstance(listing, mcp_sync.Listing)
    page = listing.show()
    names = [tool.name for tool in page.items]
    assert "demo__echo" in names and "everything__get-tiny-image" in names and "sdk__fail" in names
    html = page._repr_html_()
    assert '<table class="mcp-sync-tools">' in html and html.count('<tr class="mcp-sync-tools-row">') == len(names)
    assert all(isinstance(x, mcp_sync.Listing)
               for x in (group.prompts(), group.resources(), group.resource_templates()))


def test_tools_are_listed_lazily(group: mcp_sync.ClientGroup) -> None:
    """Taking the first tool asks only the first server."""
    calls: list[str] = []
    originals = {name: client.tools for name, client in group.clients.items()}
    try:
        for name, client in group.clients.items():
            def spy(_name: str = name, **kwargs: Any) -> Iterator[mcp_sync.Tool]:
                calls.append(_name)
                return originals[_name](**kwargs)
            client.tools = spy  # type: ignore[method-assign]
        first = next(group.tools())
    finally:
        for client in group.clients.values():
            del client.tools  # type: ignore[method-assign]
    assert first.name == "echo" and calls == ["demo"]


def test_routing_and_ambiguity(group: mcp_sync.ClientGroup) -> None:
    with pytest.raises(mcp_sync.AmbiguousToolError) as info:
        group.call_tool("echo", {"text": "x"})
    assert info.value.servers == ["demo", "everything", "sdk"] and isinstance(info.value, ValueError)
    with pytest.raises(mcp_sync.AmbiguousToolError):
        group.find_tool("add")
    assert group.call_tool("echo", {"text": "d"}, server="demo").text == "d"
    assert group.call_tool("echo", {"message": "e"}, server="everything").text.endswith("e")
    assert group.call_tool("countdown", {"n": 1}).text == "liftoff"  # one server has it
    assert group.find_tool("get-sum")[0] == "everything"
    server, tool = group.find_tool("echo", server="sdk")
    assert server == "sdk" and "text" in tool.input_schema["properties"]
    with pytest.raises(mcp_sync.ToolNotFound) as missing:
        group.call_tool("no-such-tool")
    assert isinstance(missing.value, KeyError) and str(missing.value).startswith("no connected server")
    with pytest.raises(mcp_sync.ToolNotFound, match="no server named"):
        group.call_tool("echo", {}, server="nope")


def test_prefixed_names_are_valid_and_map_back(group: mcp_sync.ClientGroup) -> None:
    names = [tool.name for tool in group.tools(prefix=True)]
    assert len(names) == len(set(names)) and all(STRICTEST_LLM_NAME.match(n) for n in names)
    assert {"demo__echo", "everything__echo", "sdk__echo"} <= set(names)
    assert group.call_tool("sdk__echo", {"text": "via prefix"}).text == "via prefix"
    assert group.call_tool("demo__add", {"a": 2, "b": 2}).text == "4"
    tool = next(t for t in group.tools(prefix=True) if t.name == "everything__get-sum")
    assert group.server_of(tool) == "everything" and "sum" in group.call_tool(tool, {"a": 1, "b": 1}).text.lower()


def test_odd_and_long_names_get_short_stable_names(group: mcp_sync.ClientGroup, sdk_http_url: str) -> None:
    """A tool added at runtime with a name no LLM API takes still gets a valid prefixed name,
    and call_tool maps it back, even in a fresh group that never listed it (computed the same)."""
    odd = "files/read.v2:" + "x" * 80
    assert group.call_tool("add_tool", {"name": odd}, server="sdk").text == f"added {odd}"
    prefixed = next(t.name for t in group.tools(prefix=True) if group.server_of(t) == "sdk" and "files" in t.name)
    assert STRICTEST_LLM_NAME.match(prefixed) and prefixed.startswith("sdk__files_read_v2_")
    assert group.call_tool(prefixed, {"text": "hi"}).text == f"{odd}: hi"
    with mcp_sync.ClientGroup({"sdk": {"url": sdk_http_url}}) as again:
        assert again.call_tool(prefixed, {"text": "fresh"}).text == f"{odd}: fresh"


def test_resources_and_prompts_route_like_tools(group: mcp_sync.ClientGroup) -> None:
    uris = {r.uri: group.server_of(r) for r in group.resources()}
    assert uris["demo://readme"] == "demo" and uris["test://static"] == "sdk"
    assert group.read_resource("demo://readme").text == "Hello from demo-server."
    assert group.read_resource("test://static").text == "static content"
    assert group.read_resource("test://items/7").text == "item 7"  # from a template: asked in turn
    templates = {t.uri_template: group.server_of(t) for t in group.resource_templates()}
    assert templates["test://items/{id}"] == "sdk" and "everything" in templates.values()
    asked: list[str] = []
    for server, client in group.clients.items():  # which servers a templated read goes to, in order
        real = client.read_resource

        def read(uri: str, *, _server: str = server, _real: Any = real, **options: Any) -> Any:
            asked.append(_server)
            return _real(uri, **options)

        client.read_resource = read  # type: ignore[method-assign]
    try:
        assert group.read_resource("test://items/8").text == "item 8"
    finally:
        for client in group.clients.values():
            del client.read_resource  # type: ignore[attr-defined]
    assert asked == ["sdk"]  # the server whose template fits is asked first, and only it
    with pytest.raises(mcp_sync.ResourceNotFound):
        group.read_resource("nowhere://at/all")
    prompts = {p.name: group.server_of(p) for p in group.prompts()}
    assert prompts["haiku"] == "demo" and prompts["greet"] == "sdk"
    assert "sea" in group.get_prompt("haiku", {"topic": "sea"}).messages[0].content.text
    assert "Ada" in group.get_prompt("sdk__greet", {"name": "Ada"}).messages[0].content.text


@pytest.mark.parametrize(
    ("template", "uri", "fits"),
    [
        ("test://items/{id}", "test://items/7", True),
        ("test://items/{id}", "test://items/7/more", False),
        ("test://items/{id}", "test://other/7", False),
        ("file:///{+path}", "file:///a/b/c.txt", True),
        ("demo://r/{a}/{b}{?q}", "demo://r/x/y?q=1", True),
        ("exact://x", "exact://x", True),
        ("a.b://{x}", "aXb://1", False),  # literal text is literal, dots included
    ],
)
def test_template_fits(template: str, uri: str, fits: bool) -> None:
    assert template_fits(template, uri) is fits


def test_concurrent_calls_from_many_threads(group: mcp_sync.ClientGroup) -> None:
    """Routing and the name maps under load: 8 threads calling by prefixed names while others list."""
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            for j in range(5):
                text = f"{i}-{j}"
                assert group.call_tool(["demo__echo", "sdk__echo"][j % 2], {"text": text}).text == text
                assert len(list(group.tools(prefix=j % 2 == 0))) > 10
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors and not any(t.is_alive() for t in threads)


def test_partial_failure_is_reported_and_logged(caplog: pytest.LogCaptureFixture, no_leaks: None) -> None:
    servers = {
        "good": {"command": DEMO_SERVER},
        "dies": {"command": PY, "args": ["-c", "import sys; sys.exit(3)"]},
        "missing": {"command": "/no/such/server-binary"},
        "bad": {"url": "https://x", "type": "carrier-pigeon"},
    }
    with caplog.at_level(logging.WARNING, logger="mcp_sync"):
        with mcp_sync.ClientGroup(servers, timeout=10, probe_timeout=2) as group:
            assert list(group.clients) == ["good"] and list(group.errors) == ["dies", "missing", "bad"]  # config order
            assert isinstance(group.errors["dies"], mcp_sync.ConnectionClosed)
            assert group.call_tool("echo", {"text": "still"}).text == "still"
            with pytest.raises(mcp_sync.ToolNotFound, match="failed to connect"):
                group.call_tool("echo", {}, server="dies")
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "'dies' failed to connect" in logged and "'missing' failed to connect" in logged


def test_strict_closes_the_others_and_raises(no_leaks: None) -> None:
    good = mcp_sync.Client.stdio(PY, [DEMO_SERVER])
    group = mcp_sync.ClientGroup({"good": good, "dies": {"command": PY, "args": ["-c", "pass"]}}, strict=True,
                                 timeout=10, probe_timeout=2)
    with pytest.raises(mcp_sync.ConnectionClosed):
        group.connect()
    assert good.state is mcp_sync.ClientState.CLOSED
    with pytest.raises(mcp_sync.ClientStateError):
        next(group.tools())


def test_connect_is_concurrent_and_bounded(no_leaks: None) -> None:
    """Four servers that each take >= 1 s to answer connect in about the time of one; a server that
    never answers costs its client's timeout, not more."""
    slow = {f"slow{i}": {"command": PY, "args": [FAULT_SERVER, "--behaviour", "slow-all", "--delay", "1.0"]}
            for i in range(4)}
    mute = {"mute": {"command": PY, "args": ["-c", "import time; time.sleep(60)"]}}
    start = time.monotonic()
    with mcp_sync.ClientGroup({**slow, **mute}, timeout=3, probe_timeout=1.5, mode="legacy") as group:
        elapsed = time.monotonic() - start
        assert sorted(group.clients) == sorted(slow) and list(group.errors) == ["mute"]
        assert isinstance(group.errors["mute"], mcp_sync.RequestTimeout)
    assert elapsed < 4 * 1.0 + 1.5, elapsed  # sequential would be >= 4 s for the slow ones + 3 s for mute


def test_per_server_options_and_common_options(sdk_http_url: str, no_leaks: None) -> None:
    asked: list[dict] = []

    def on_elicitation(params: dict) -> dict:
        asked.append(params)
        return {"action": "accept", "content": {"name": "Grace"}}

    servers = {"demo": {"command": DEMO_SERVER}, "sdk": {"url": sdk_http_url}}
    options = {"demo": {"timeout": 5}, "sdk": {"on_elicitation": on_elicitation}}
    with mcp_sync.ClientGroup(servers, options=options, timeout=20) as group:
        assert group.clients["demo"].timeout == 5 and group.clients["sdk"].timeout == 20
        assert group.call_tool("ask_name", {}).text == "Hello, Grace" and asked
    with pytest.raises(ValueError, match="not in the group"):
        mcp_sync.ClientGroup(servers, options={"typo": {"timeout": 1}})


def test_clients_given_directly_and_close_closes_all(no_leaks: None) -> None:
    a, b = mcp_sync.Client.stdio(PY, [DEMO_SERVER]), mcp_sync.Client.stdio(PY, [DEMO_SERVER])
    group = mcp_sync.ClientGroup({"a": a, "b": b})
    assert group.call_tool("a__echo", {"text": "lazy connect"}).text == "lazy connect"
    group.close()
    group.close()  # idempotent
    assert a.state is b.state is mcp_sync.ClientState.CLOSED
    assert "closed" in repr(group)


# -- prefixed names: the property behind "valid, short, stable, never two alike" ---------------------

SERVER_NAMES = st.text(min_size=1, max_size=40)
TOOL_NAMES = st.one_of(st.text(min_size=1, max_size=100), st.from_regex(r"[a-z_]{1,70}", fullmatch=True),
                       st.sampled_from(["b__c", "c", "a__b", "b", "x" * 64]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(SERVER_NAMES, st.sampled_from(["a", "a__b", "a_b", "a.b"])), TOOL_NAMES),
                max_size=30))
def test_prefixed_names_property(pairs: list[tuple[str, str]]) -> None:
    names = _Names()
    given_names = {pair: names.prefixed(*pair) for pair in pairs}
    for pair, name in given_names.items():
        assert STRICTEST_LLM_NAME.match(name) and (name[0].isalpha() or name[0] == "_"), name
        assert names.prefixed(*pair) == name  # stable
        assert names.to_key[name] == pair  # maps back
    assert len(set(given_names.values())) == len(given_names)  # never two alike
    readable = [f"{s}__{t}" for s, t in given_names]
    for (server, tool), name in given_names.items():  # readable names stay as they are unless two read alike
        wanted = f"{server}__{tool}"
        if re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_-]{0,63}", wanted) and readable.count(wanted) == 1:
            assert name == wanted


def test_exports_and_light_import() -> None:
    """The names of api.md's "Many servers" and "LLM tool formats" sections are exported, and the new
    modules add no heavy import to `import mcp_sync`."""
    import subprocess

    names = {"ClientGroup", "AmbiguousToolError", "ToolNotFound", "ConfigError", "load_config", "to_openai_tools",
             "to_anthropic_tools", "to_gemini_tools"}
    assert names <= set(mcp_sync.__all__)
    for method in ("to_openai_tools", "to_anthropic_tools", "to_gemini_tools", "run_tool_call"):
        assert callable(getattr(mcp_sync.Client, method)) and callable(getattr(mcp_sync.ClientGroup, method))

    code = "import sys, mcp_sync; print(sorted(m for m in ('requests', 'jsonschema', 'attrs') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30)
    assert "requests" not in out.stdout and "jsonschema" not in out.stdout


def test_public_methods_are_documented_with_examples() -> None:
    import inspect

    for cls in (mcp_sync.ClientGroup,):
        for name, fn in inspect.getmembers(cls, predicate=inspect.isfunction):
            doc = inspect.getdoc(fn) or ""
            assert name.startswith("_") or "xample" in doc or "::" in doc, f"{cls.__name__}.{name}"
