"""Issue #30.1-2: rich display in Jupyter (``_repr_html_`` / ``_repr_mimebundle_``), and what a
server sends treated as untrusted there.

Real results come from the Python SDK server (both eras), server-everything (its image tool) and,
for what no real server sends on demand (a ``<script>`` description, an SVG, a 6 MB image, 10,000
tools), the scripted fault server. Each check reads the HTML with the standard ``html.parser``:
a table's rows, an ``<img>``'s ``src``, the text a reader sees.

The rules: every server text escaped (a hypothesis test: a server text adds no tag or attribute
to the HTML), only raster images and audio inlined (SVG as escaped text), data URLs only from
validated base64, media bounded at 5 MB, tables at 200 rows, texts at 20,000 characters, all in
linear time; the plain ``repr`` unchanged.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wirekit import Peer

import mcp_sync
from mcp_sync import _display

from conftest import PY, SDK_SERVER

pytestmark = pytest.mark.timeout(120)

PIXEL_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
SVG = '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'


class Parsed(HTMLParser):
    """The tags (with attributes) and the text of an HTML string, in order."""

    def __init__(self, html_text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, tuple[tuple[str, str | None], ...]]] = []
        self.chunks: list[str] = []
        self.in_style = False
        self.feed(html_text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(attrs)))
        self.in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self.in_style = False

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, tuple(attrs)))

    def handle_data(self, data: str) -> None:
        if not self.in_style:  # the text a reader sees, not our CSS
            self.chunks.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)

    def count(self, tag: str, **attrs: str) -> int:
        return sum(1 for t, a in self.tags if t == tag and all((k, v) in a for k, v in attrs.items()))

    def attr(self, tag: str, name: str) -> list[str | None]:
        return [dict(a).get(name) for t, a in self.tags if t == tag]


def rows(html_text: str, table: str) -> int:
    return Parsed(html_text).count("tr", **{"class": f"{table}-row"})


# -- real servers -----------------------------------------------------------------------


@pytest.fixture(scope="module", params=["modern", "legacy"])
def sdk(request: pytest.FixtureRequest) -> Iterator[mcp_sync.Client]:
    with mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], mode=request.param, timeout=30) as client:
        yield client


def test_a_page_of_tools_is_a_table_with_types_and_required_marks(sdk: mcp_sync.Client) -> None:
    page = sdk.list_tools()
    html_text = page._repr_html_()
    parsed = Parsed(html_text)
    assert parsed.count("table", **{"class": "mcp-sync-tools"}) == 1
    assert rows(html_text, "mcp-sync-tools") == len(page.items) >= 8
    add = next(t for t in page.items if t.name == "add")
    assert add.description and add.description in parsed.text
    assert "a*: integer" in parsed.text and "b*: integer" in parsed.text  # H-tools: parameters, types, required
    assert parsed.count("b", title="required") >= 2


def test_tools_stays_lazy_and_show_displays_every_tool(sdk: mcp_sync.Client) -> None:
    every = sdk.tools()
    assert isinstance(every, mcp_sync.Listing) and not hasattr(every, "_repr_html_")  # displaying fetches nothing
    assert repr(every).startswith("<mcp_sync.Listing of tools")
    first = next(every)
    rest = every.show()
    assert isinstance(rest, mcp_sync.Page) and rest.next_cursor is None
    names = [t.name for t in sdk.tools()]
    assert [first.name] + [t.name for t in rest.items] == names
    assert rows(sdk.tools().show()._repr_html_(), "mcp-sync-tools") == len(names)
    for kind, table in (("resources", "mcp-sync-resources"), ("prompts", "mcp-sync-prompts"),
                        ("resource_templates", "mcp-sync-templates")):
        shown = getattr(sdk, kind)().show()
        assert rows(shown._repr_html_(), table) == len(shown.items) >= 1, kind


def test_one_tool_shows_its_parameters_and_output_schema(sdk: mcp_sync.Client) -> None:
    weather = next(t for t in sdk.tools() if t.name == "weather")
    parsed = Parsed(weather._repr_html_())
    assert rows(weather._repr_html_(), "mcp-sync-params") == 1
    assert "city" in parsed.text and "string" in parsed.text
    assert parsed.count("details") == 1 and "output schema" in parsed.text and '"temp"' in parsed.text


def test_a_tool_result_shows_text_structured_content_and_errors(sdk: mcp_sync.Client) -> None:
    result = sdk.call_tool("add", {"a": 1, "b": 2})
    bundle = result._repr_mimebundle_()
    assert list(bundle) == ["text/html"]  # no image: IPython adds text/plain from the repr
    parsed = Parsed(bundle["text/html"])
    assert parsed.count("pre") == 2 and parsed.count("details") == 1  # the text, the JSON view
    assert "structured content" in parsed.text and '"result": 3' in parsed.text
    failed = sdk.call_tool("fail", {})
    assert failed.is_error
    parsed = Parsed(failed._repr_html_())
    assert parsed.count("div", **{"class": "mcp-sync-error"}) == 1 and "isError" in parsed.text


def test_resources_prompts_and_the_prompt_transcript(sdk: mcp_sync.Client) -> None:
    parsed = Parsed(sdk.read_resource("test://static")._repr_html_())
    assert "test://static" in parsed.text and "static content" in parsed.text
    prompt = next(p for p in sdk.prompts() if p.name == "review")
    assert rows(prompt._repr_html_(), "mcp-sync-params") == 1
    transcript = sdk.get_prompt("review", {"code": "x = 1 < 2"})._repr_html_()
    parsed = Parsed(transcript)
    assert parsed.count("div", **{"class": "mcp-sync-message"}) == 5
    assert parsed.attr("img", "src") == [f"data:image/png;base64,{PIXEL_PNG}"]
    assert "x = 1 < 2" in parsed.text and "&lt;" in transcript  # the code, escaped
    assert "file:///review/spec.pdf" in parsed.text and "15 bytes of binary data" in parsed.text
    assert [c for c in parsed.chunks if c in ("user", "assistant")] == ["user"] * 4 + ["assistant"]


def test_the_client_shows_the_server_and_never_connects_to_do_it() -> None:
    client = mcp_sync.Client.stdio(PY, [SDK_SERVER, "stdio"], timeout=30)
    try:
        before = Parsed(client._repr_html_()).text
        assert "not connected yet" in before and client.pid is None  # displaying did not start the server
        assert "stdio: " in before and "sdk_server.py" in before  # the transport and its target
        client.list_tools()
        parsed = Parsed(client._repr_html_())
        assert "sdk-test-server 1.0.0" in parsed.text and client.era in parsed.text
        assert client.protocol_version in parsed.text and "tools" in parsed.text and "prompts" in parsed.text
    finally:
        client.close()


def test_an_error_from_the_server_has_a_short_view(sdk: mcp_sync.Client) -> None:
    with pytest.raises(mcp_sync.MCPError) as caught:
        sdk.read_resource("test://no-such-thing")
    parsed = Parsed(caught.value._repr_html_())
    assert type(caught.value).__name__ in parsed.text and caught.value.message[:40] in parsed.text
    assert parsed.count("div", **{"class": "mcp-sync-error"}) == 1


def test_server_everything_image_is_inline_and_in_the_bundle(everything_js: Path) -> None:
    with mcp_sync.Client.stdio("node", [str(everything_js), "stdio"], timeout=30) as client:
        result = client.call_tool("get-tiny-image", {})
        image = next(b for b in result.content if isinstance(b, mcp_sync.ImageContent))
        bundle = result._repr_mimebundle_()
        assert bundle["image/png"] == image.data  # a front end without HTML shows the PNG
        assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
        assert Parsed(bundle["text/html"]).attr("img", "src") == [f"data:image/png;base64,{image.data}"]
        assert image._repr_mimebundle_()["image/png"] == image.data
        formatted = _ipython_format(result)  # what a notebook cell's output would carry
        assert formatted["text/plain"] == repr(result) and formatted["image/png"] == image.data
        assert formatted["text/html"] == bundle["text/html"]
        links = Parsed(client.call_tool("get-resource-links", {"count": 2})._repr_html_())
        assert links.count("a") == 0 and links.text.count("demo://resource/") >= 2  # URIs as text, no href
        structured = client.call_tool("get-structured-content", {"location": "New York"})
        assert "structured content" in Parsed(structured._repr_html_()).text
        ref = client.call_tool("get-resource-reference", {"resourceType": "Text", "resourceId": 1})
        assert "embedded resource" in Parsed(ref._repr_html_()).text


def _ipython_format(obj: Any) -> dict[str, Any]:
    """IPython's own display formatter on ``obj`` (IPython comes with ipykernel, a test dependency)."""
    formatters = pytest.importorskip("IPython.core.formatters")
    data, _ = formatters.DisplayFormatter().format(obj)
    return dict(data)


def test_ipython_shows_each_object_as_html_with_its_plain_repr(sdk: mcp_sync.Client) -> None:
    objects = [sdk, sdk.list_tools(), sdk.tools().show(), next(sdk.tools()), sdk.call_tool("add", {"a": 1, "b": 2}),
               sdk.read_resource("test://static"), next(sdk.prompts()), sdk.get_prompt("greet", {"name": "Ada"}),
               mcp_sync.ServerError(-32602, "nope <b>", method="tools/call")]
    for obj in objects:
        formatted = _ipython_format(obj)
        plain = repr(obj) if not isinstance(obj, BaseException) else f"mcp_sync.exceptions.{obj!r}"  # IPython's
        assert formatted["text/plain"] == plain, type(obj)
        assert formatted["text/html"].startswith('<div class="mcp-sync '), type(obj)
    formatted = _ipython_format(sdk.tools())  # the lazy iterator: plain text only, nothing fetched
    assert list(formatted) == ["text/plain"]


# -- a hostile server -------------------------------------------------------------------


def _answer(*content: dict, **extra: Any) -> list[dict]:
    return [{"result": {"content": list(content), "isError": False, **extra}}]


def _tool(name: str, description: str = "") -> dict:
    return {"name": name, "description": description,
            "inputSchema": {"type": "object", "properties": {name: {"type": "string", "description": description}},
                            "required": [name]}}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[mcp_sync.Client]:
    big = base64.b64encode(b"\x89PNG" + bytes(6 * 1024 * 1024)).decode()
    wav = base64.b64encode(b"RIFF" + bytes(40)).decode()
    tools = [_tool(HOSTILE, HOSTILE)] + [_tool(f"t{i}") for i in range(9_999)]
    script = {
        "tools/list": [{"result": {"tools": tools}}],
        "tools/call svg": _answer({"type": "image", "data": base64.b64encode(SVG.encode()).decode(),
                                   "mimeType": "image/svg+xml"}),
        "tools/call big": _answer({"type": "image", "data": big, "mimeType": "image/png"}),
        "tools/call bad64": _answer({"type": "image", "data": 'AAAA" onerror="alert(1)', "mimeType": "image/png"}),
        "tools/call mime": _answer({"type": "image", "data": PIXEL_PNG, "mimeType": 'image/png" onload="alert(1)'}),
        "tools/call wav": _answer({"type": "audio", "data": wav, "mimeType": "audio/wav"}),
        "tools/call long": _answer({"type": "text", "text": "y" * 50_000}),
        "tools/call many": _answer(*[{"type": "text", "text": HOSTILE}] * 300, structuredContent={HOSTILE: HOSTILE}),
        "tools/call link": _answer({"type": "resource_link", "uri": "javascript:alert(1)", "name": HOSTILE}),
        "resources/read test://png": [{"result": {"contents": [{"uri": "test://png", "mimeType": "image/png",
                                                                "blob": PIXEL_PNG}]}}],
        "tools/call deep": _answer(structuredContent={"rows": [{"cell": "<td>" * 10} for _ in range(200_000)]}),
        "tools/call two": _answer({"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"},
                                  {"type": "image", "data": PIXEL_PNG, "mimeType": "image/png"}),
    }
    peer = Peer(tmp_path_factory.mktemp("hostile"), script, "--era", "legacy")
    with peer.client(timeout=30) as client:
        yield client


def test_a_hostile_description_arrives_escaped_and_a_huge_list_is_cut(hostile: mcp_sync.Client) -> None:
    page = hostile.list_tools()
    assert len(page.items) == 10_000
    html_text = page._repr_html_()
    parsed = Parsed(html_text)
    assert parsed.count("script") == 0 and parsed.count("img") == 0
    assert HOSTILE in parsed.text and "&lt;script&gt;" in html_text
    assert rows(html_text, "mcp-sync-tools") == 200 and "\u2026 9,800 more tools" in parsed.text
    tool = page.items[0]
    tool_view = Parsed(tool._repr_html_())
    assert tool_view.count("script") == 0 and tool_view.count("img") == 0 and HOSTILE in tool_view.text


def test_svg_from_a_server_is_shown_as_text_never_inlined(hostile: mcp_sync.Client) -> None:
    result = hostile.call_tool("svg", {})
    parsed = Parsed(result._repr_html_())
    assert parsed.count("img") == 0 and parsed.count("svg") == 0 and parsed.count("script") == 0
    assert "SVG can carry script" in parsed.text and SVG in parsed.text  # its source, as escaped text
    assert list(result._repr_mimebundle_()) == ["text/html"]


def test_media_over_5_mb_is_a_note_with_its_size(hostile: mcp_sync.Client) -> None:
    result = hostile.call_tool("big", {})
    html_text = result._repr_html_()
    assert len(html_text) < 5_000 and Parsed(html_text).count("img") == 0
    assert "6.0 MB" in Parsed(html_text).text and "larger than 5.0 MB" in Parsed(html_text).text
    assert "image/png" not in result._repr_mimebundle_()


@pytest.mark.parametrize("tool", ["bad64", "mime"])
def test_a_data_url_is_built_only_from_checked_base64_and_a_known_type(hostile: mcp_sync.Client, tool: str) -> None:
    parsed = Parsed(hostile.call_tool(tool, {})._repr_html_())
    assert parsed.count("img") == 0 and all(not dict(a).get("onerror") and not dict(a).get("onload")
                                            for _, a in parsed.tags)
    assert ("not valid base64" if tool == "bad64" else "not shown") in parsed.text


def test_audio_gets_a_player_and_two_images_stay_in_the_html(hostile: mcp_sync.Client) -> None:
    parsed = Parsed(hostile.call_tool("wav", {})._repr_html_())
    assert parsed.count("audio", controls=None) == 1 and parsed.attr("audio", "src")[0].startswith("data:audio/wav;")
    two = hostile.call_tool("two", {})
    assert Parsed(two._repr_html_()).count("img") == 2 and "image/png" not in two._repr_mimebundle_()


def test_long_texts_and_many_blocks_are_cut_with_a_note(hostile: mcp_sync.Client) -> None:
    parsed = Parsed(hostile.call_tool("long", {})._repr_html_())
    assert parsed.text.count("y") == 20_000 and "\u2026 30,000 more characters" in parsed.text
    many = Parsed(hostile.call_tool("many", {})._repr_html_())
    assert many.count("pre") == 201 and "\u2026 100 more content blocks" in many.text  # 200 texts + the JSON
    assert many.count("script") == 0 and many.count("img") == 0


def test_an_image_resource_is_inline_and_in_the_bundle(hostile: mcp_sync.Client) -> None:
    read = hostile.read_resource("test://png")
    bundle = read._repr_mimebundle_()
    assert bundle["image/png"] == PIXEL_PNG and Parsed(bundle["text/html"]).count("img") == 1
    assert read.contents[0]._repr_mimebundle_()["image/png"] == PIXEL_PNG


def test_a_huge_json_view_is_cut_and_costs_what_is_shown(hostile: mcp_sync.Client) -> None:
    result = hostile.call_tool("deep", {})  # about 12 MB of structured content
    started = time.thread_time()
    html_text = result._repr_html_()
    elapsed = time.thread_time() - started
    parsed = Parsed(html_text)
    assert len(html_text) < 200_000 and "cut at 20,000 characters" in parsed.text and parsed.count("td") == 0
    assert elapsed < 0.5, elapsed  # stops writing JSON after 20,000 characters
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert "cannot be shown as JSON" in Parsed(mcp_sync.CallToolResult(structured_content=cyclic)._repr_html_()).text


def test_a_link_never_becomes_a_href(hostile: mcp_sync.Client) -> None:
    parsed = Parsed(hostile.call_tool("link", {})._repr_html_())
    assert parsed.count("a") == 0 and parsed.count("script") == 0
    assert "javascript:alert(1)" in parsed.text and HOSTILE in parsed.text


# -- escaping: any server text ----------------------------------------------------------


def _views(s: str) -> list[str]:
    """Every view of objects built from wire dicts holding ``s`` where a server puts text."""
    tool = mcp_sync.Tool.from_wire({
        "name": s, "title": s, "description": s,
        "inputSchema": {"type": "object", "properties": {s: {"type": s, "description": s, "default": s}},
                        "required": [s]},
        "outputSchema": {"type": "object", "properties": {s: {"type": "string"}}}, "annotations": {"title": s},
    })
    result = mcp_sync.CallToolResult.from_wire({"content": [
        {"type": "text", "text": s},
        {"type": "resource_link", "uri": s, "name": s, "description": s, "mimeType": s},
        {"type": "resource", "resource": {"uri": s, "mimeType": s, "text": s}},
        {"type": "image", "data": s, "mimeType": s},
        {"type": "audio", "data": PIXEL_PNG, "mimeType": "x" + s},  # never a real type: the same view
        {"type": s, "x": s},
    ], "structuredContent": {s: s}, "isError": True})
    prompt = mcp_sync.Prompt.from_wire({"name": s, "title": s, "description": s,
                                        "arguments": [{"name": s, "description": s, "required": True}]})
    got = mcp_sync.GetPromptResult.from_wire({"description": s, "messages": [
        {"role": s, "content": {"type": "text", "text": s}}]})
    resource = mcp_sync.Resource.from_wire({"uri": s, "name": s, "title": s, "description": s, "mimeType": s})
    template = mcp_sync.ResourceTemplate.from_wire({"uriTemplate": s, "name": s, "mimeType": s})
    read = mcp_sync.ReadResourceResult.from_wire({"contents": [{"uri": s, "mimeType": s, "blob": s},
                                                               {"uri": s, "text": s}]})
    error = mcp_sync.ServerError(-32000, s, data={s: s}, method=s)
    extra = [got.messages[0]._repr_html_(), read.contents[0]._repr_html_(), read.contents[1]._repr_html_(),
             result.content[-1]._repr_html_()]
    return [*extra, tool._repr_html_(), mcp_sync.Page(items=[tool])._repr_html_(), result._repr_html_(),
            prompt._repr_html_(), mcp_sync.Page(items=[prompt])._repr_html_(), got._repr_html_(),
            resource._repr_html_(), template._repr_html_(), read._repr_html_(), error._repr_html_()]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=st.text(min_size=1, max_size=120) | st.sampled_from([HOSTILE, SVG, "</pre><script>", '"><b x="', "'onload='"]))
def test_a_server_text_adds_no_tag_and_no_attribute(s: str) -> None:
    """Compared with the same objects holding a plain word, the HTML has the same tags with the
    same attributes (ours: only an attribute value may differ, and never holds a ``<``)."""
    for view, plain in zip(_views(s), _views("word")):
        got, want = Parsed(view).tags, Parsed(plain).tags
        assert [(t, [k for k, _ in a]) for t, a in got] == [(t, [k for k, _ in a]) for t, a in want]
        assert all("<" not in (v or "") for _, a in got for _, v in a)
        # every "<" in the HTML opens one of our tags: the parser saw exactly that many
        assert view.count("<") == len(got) + sum(1 for _ in _end_tags(view))


def _end_tags(html_text: str) -> Iterator[str]:
    class Ends(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.ends: list[str] = []

        def handle_endtag(self, tag: str) -> None:
            self.ends.append(tag)

    parser = Ends()
    parser.feed(html_text)
    parser.close()
    return iter(parser.ends)


def test_control_and_bidi_characters_are_made_visible() -> None:
    tool = mcp_sync.Tool.from_wire({"name": "t", "description": "a\x1b[2Jb\u202ec\ud800"})
    parsed = Parsed(tool._repr_html_())
    assert "a\\x1b[2Jb\\u202ec\\ud800" in parsed.text


# -- bounds, linear time, the plain repr, a light import --------------------------------


def test_the_media_cap_is_exact() -> None:
    at_cap = base64.b64encode(bytes(_display.MAX_MEDIA_BYTES)).decode()
    over = base64.b64encode(bytes(_display.MAX_MEDIA_BYTES + 1)).decode()
    assert Parsed(mcp_sync.ImageContent(data=at_cap, mime_type="image/png")._repr_html_()).count("img") == 1
    assert Parsed(mcp_sync.ImageContent(data=over, mime_type="image/png")._repr_html_()).count("img") == 0


@pytest.mark.parametrize(("data", "ok"), [
    ("", True), ("QQ==", True), ("QUI=", True), ("QUJD", True), ("QUJD\nREVG", True), ("QQ", False),
    ("Q===", False), ("QQ=A", False), ("QU D", False), ("QUJD\"", False), ("QUJD<>==", False),
])
def test_base64_is_checked_strictly(data: str, ok: bool) -> None:
    checked = _display._base64(data)
    assert (checked is not None) is ok
    if checked is not None:
        assert checked[1] == len(base64.b64decode(checked[0]))


def test_rendering_is_linear_in_cpu_time() -> None:
    """A page of n tools and a text of n characters: 4n costs at most about 4x (plus slack)."""
    def cost(n: int) -> float:
        page = mcp_sync.Page(items=[mcp_sync.Tool.from_wire(_tool(f"t{i}", "<d>" * 3)) for i in range(n)])
        text = mcp_sync.CallToolResult.from_wire({"content": [{"type": "text", "text": "<&" * (n * 50)}],
                                                   "structuredContent": {"k": ["<"] * n}})
        blob = base64.b64encode(bytes(n * 300)).decode()
        image = mcp_sync.ImageContent(data=blob, mime_type="image/png")
        started = time.thread_time()
        for _ in range(3):
            page._repr_html_(), text._repr_html_(), image._repr_mimebundle_()
        return time.thread_time() - started

    small, large = cost(5_000), cost(20_000)
    assert large < 8 * small + 0.2, (small, large)
    assert cost(10_000) < 2.0  # 10,000 tools (200 shown), 1 MB of text, 3 MB of base64: well under a second


def test_the_plain_repr_is_unchanged() -> None:
    assert repr(mcp_sync.Tool(name="a", description="<d>")) == "Tool(name='a', title=None, description='<d>')"
    assert repr(mcp_sync.CallToolResult.from_wire({"content": [{"type": "text", "text": "hi"}]})) == (
        "CallToolResult(content=[TextContent(text='hi', annotations=None, type='text')], "
        "structured_content=None, is_error=False)")
    assert repr(mcp_sync.Page(items=[])) == "Page(items=[], next_cursor=None, ttl_ms=None, cache_scope=None)"
    assert repr(mcp_sync.ImageContent(data=PIXEL_PNG, mime_type="image/png")) == (
        "ImageContent(mime_type='image/png', annotations=None, type='image')")
    assert repr(mcp_sync.ServerError(1, "x")) == "ServerError('x')"


def test_import_mcp_sync_builds_no_html() -> None:
    # only what ``import mcp_sync`` loads: under coverage the interpreter starts with coverage's own
    # modules (html among them) already imported
    code = ("import sys; before = set(sys.modules); import mcp_sync; "
            "print(json.dumps(sorted(m for m in set(sys.modules) - before "
            "if m in ('mcp_sync._display', 'html', 'html.parser') or m.split('.')[0] in ('IPython', 'tqdm'))))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True, check=True,
                         timeout=60)
    assert json.loads(out.stdout) == []


def test_an_http_client_shows_its_transport_and_server(sdk_http_url: str) -> None:
    with mcp_sync.Client.http(sdk_http_url, timeout=30) as client:
        assert "Streamable HTTP: http://127.0.0.1:" in Parsed(client._repr_html_()).text
        client.list_tools()
        parsed = Parsed(client._repr_html_())
        assert "sdk-test-server 1.0.0" in parsed.text and "modern" in parsed.text and client.pid is None
