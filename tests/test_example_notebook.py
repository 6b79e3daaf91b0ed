"""examples/notebook.ipynb runs in a real kernel and looks right in a real browser (#30.5, #30.6).

The notebook is executed top to bottom in an IPython kernel (``nbclient`` + ``ipykernel``, this
venv's python, this checkout's mcp_sync) against server-everything over stdio, the server the
notebook names, with one tool added to its list whose description is hostile HTML
(tests/servers/add_tool_proxy.py; the notebook takes the command from MCP_SYNC_NOTEBOOK_SERVER).
Its outputs are checked: HTML displays, the tools table, the image, the escaped description.

Then the executed notebook is converted to HTML (``nbconvert``) and loaded in headless Chromium,
offline (every host name resolves to nothing; the page's own CDN scripts fail fast). A script
appended to the page records, once it has loaded, what the browser made of it: the tools table's
rows and their cells' alignment, each data: image's decoded width, whether the hostile description
ran. ``--dump-dom``
returns that. Skipped, saying why, where no Chromium is installed (.ci/run installs Debian's).

Regenerate the docs' screenshot (docs/img/notebook.png) with
``python tests/test_example_notebook.py docs/img/notebook.png``.
"""

from __future__ import annotations

import copy
import html
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Iterator

import pytest

import mcp_sync

from conftest import EVERYTHING_JS, ROOT, SERVERS, _install_everything

NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
#: a tool whose description would run script, and set a flag, if a display put it in the page raw
HOSTILE_TEXT = ('<script>window.mcpSyncPwned = "script"</script>'
                '<img src=x onerror="window.mcpSyncPwned = &quot;onerror&quot;"> & done')
HOSTILE_TOOL = {"name": "hostile-description", "description": HOSTILE_TEXT,
                "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
CELL_TIMEOUT = 60  # seconds for any one cell (the long-running call takes 2)


def _server_command() -> str:
    """server-everything on stdio (installed by the tests), with the hostile tool added."""
    js = EVERYTHING_JS if EVERYTHING_JS.exists() else _install_everything()
    return shlex.join([sys.executable, str(SERVERS / "add_tool_proxy.py"), json.dumps(HOSTILE_TOOL),
                       "node", str(js), "stdio"])


def _execute(notebook: Any, where: Path, server: str | None, timeout: int = CELL_TIMEOUT) -> Any:
    """A copy of ``notebook`` run top to bottom in a fresh kernel, its server ``server`` (a command
    line; None: the notebook's own, npx), errors kept as outputs."""
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (the test extra has it)")
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the test extra has it)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (the test extra has it)")
    notebook = copy.deepcopy(notebook)
    # first, a cell saying which python and which mcp_sync the kernel runs (removed again below)
    notebook.cells.insert(0, nbformat.v4.new_code_cell(
        "import json, sys, mcp_sync\nprint(json.dumps([sys.executable, mcp_sync.__file__]))"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    if server is not None:
        env["MCP_SYNC_NOTEBOOK_SERVER"] = server
    client = nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(where)}})
    client.execute(env=env)
    where_run = json.loads("".join(out.get("text", "") for out in notebook.cells.pop(0).outputs))
    assert where_run == [sys.executable, str(ROOT / "mcp_sync" / "__init__.py")], where_run
    return notebook


@pytest.fixture(scope="module")
def executed() -> Iterator[Any]:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the test extra has it)")
    with tempfile.TemporaryDirectory(prefix="mcp-sync-notebook-") as where:
        yield _execute(nbformat.read(str(NOTEBOOK), as_version=4), Path(where), _server_command())


@pytest.fixture(scope="module")
def tool_names() -> list[str]:
    """The tools the notebook's server offers (server-everything's and the hostile one), asked directly."""
    with mcp_sync.connect(shlex.split(_server_command())) as client:
        return [tool.name for tool in client.tools()]


def _code_cells(notebook: Any) -> list[Any]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _cell(notebook: Any, needle: str) -> Any:
    """The one code cell whose source contains ``needle``."""
    found = [cell for cell in _code_cells(notebook) if needle in cell.source]
    assert len(found) == 1, (needle, [cell.source for cell in found])
    return found[0]


def _displays(cell: Any) -> list[dict[str, Any]]:
    """The mime bundles a cell displayed (execute_result and display_data outputs)."""
    return [out["data"] for out in cell.outputs if out.get("output_type") in ("execute_result", "display_data")]


def _html(cell: Any) -> str:
    return "\n".join(bundle["text/html"] for bundle in _displays(cell) if "text/html" in bundle)


def test_the_committed_notebook_has_no_outputs() -> None:
    """What is committed is the recipe; outputs (a run's env, paths, base64) are not."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the test extra has it)")
    notebook = nbformat.read(str(NOTEBOOK), as_version=4)
    nbformat.validate(notebook)
    for cell in _code_cells(notebook):
        assert cell.outputs == [] and cell.execution_count is None, cell.source


def test_every_cell_runs_and_each_result_is_shown_as_html(executed: Any) -> None:
    """No cell fails or writes a traceback; every cell that ends with a value shows it as HTML."""
    for cell in _code_cells(executed):
        assert not [out for out in cell.outputs if out.get("output_type") == "error"], cell.source
        last = cell.source.strip().splitlines()[-1]
        if last != "client.close()":
            assert "text/html" in _displays(cell)[-1], (cell.source, cell.outputs)
    assert "mcp-servers/everything" in _html(_cell(executed, "mcp_sync.connect("))


def test_the_tools_table_has_a_row_per_tool(executed: Any, tool_names: list[str]) -> None:
    shown = _html(_cell(executed, "tools().show()"))
    tables = re.findall(r'<table class="mcp-sync-tools"[^>]*>(.*?)</table>', shown, re.S)
    assert len(tables) == 1, shown[:2000]
    body = tables[0].split("<tbody>", 1)[-1]
    assert HOSTILE_TOOL["name"] in tool_names and len(tool_names) > 10, tool_names
    for name in tool_names:
        assert f">{name}<" in body, name
    assert body.count("<tr") == len(tool_names)  # one row per tool, no more


def test_a_hostile_description_arrives_escaped(executed: Any) -> None:
    """The description's tags are text in every HTML output, never markup: no <script>, no
    <img onerror> from the server anywhere; the escaped text is in the table."""
    shown = _html(_cell(executed, "tools().show()"))
    assert html.escape(HOSTILE_TEXT, quote=False)[:40] in shown.replace("&#x27;", "'").replace("&quot;", '"')
    for cell in _code_cells(executed):
        for bundle in _displays(cell):
            for mime in ("text/html", "text/markdown"):
                text = bundle.get(mime, "")
                assert "<script>window.mcpSyncPwned" not in text, (cell.source, mime)
                assert "onerror=" not in text.replace("onerror=&quot;", ""), (cell.source, mime)


def test_the_image_is_shown_inline(executed: Any) -> None:
    cell = _cell(executed, "get-tiny-image")
    bundles = _displays(cell)
    pngs = [bundle["image/png"] for bundle in bundles if "image/png" in bundle]
    pngs += re.findall(r'<img[^>]* src="data:image/png;base64,([A-Za-z0-9+/=]+)"', _html(cell))
    assert pngs, cell.outputs
    import base64

    assert all(base64.b64decode(png).startswith(b"\x89PNG\r\n\x1a\n") for png in pngs)


def test_the_progress_call_shows_a_bar_and_its_result(executed: Any) -> None:
    """The long call's cell shows a bar (tqdm's widget, or the text bar on stderr) and the result."""
    cell = _cell(executed, "progress=True")
    assert "Long running operation completed" in _html(cell)
    widgets = [bundle for bundle in _displays(cell) if "application/vnd.jupyter.widget-view+json" in bundle]
    stderr = "".join(out.get("text", "") for out in cell.outputs if out.get("name") == "stderr")
    assert widgets or "10/10" in stderr or "100%" in stderr, cell.outputs
    # tqdm without ipywidgets falls back to its text bar; its "IProgress not found" warning is noise
    assert "IProgress not found" not in stderr, stderr


def test_the_resource_is_shown(executed: Any) -> None:
    shown = _html(_cell(executed, "read_resource("))
    assert "Everything Server" in shown


# -- in a browser ----------------------------------------------------------------------------------

#: records what the browser made of the page once it has loaded, for --dump-dom to return
PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.filter.call(document.images, function (img) {
    return img.src.indexOf("data:image/") === 0; });
  document.body.setAttribute("data-mcp-sync-check", JSON.stringify({
    rows: document.querySelectorAll("table.mcp-sync-tools tr").length,
    align: Array.prototype.map.call(document.querySelectorAll("table.mcp-sync-tools td"), function (td) {
      return getComputedStyle(td).textAlign; }).filter(function (a, i, all) { return all.indexOf(a) === i; }),
    images: images.map(function (img) { return img.naturalWidth; }),
    pwned: window.mcpSyncPwned === undefined ? null : String(window.mcpSyncPwned)
  }));
});
</script>"""

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "--virtual-time-budget=5000"]
BROWSER_TIMEOUT = 90  # seconds for one Chromium run


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def to_html(notebook: Any) -> str:
    """The page ``jupyter nbconvert --to html`` makes, a progress bar's redraws (``\\r``) folded as a
    live notebook shows them."""
    nbconvert = pytest.importorskip("nbconvert", reason="nbconvert is not installed (the test extra has it)")
    from traitlets.config import Config

    exporter = nbconvert.HTMLExporter(config=Config({"CoalesceStreamsPreprocessor": {"enabled": True}}))
    body, _ = exporter.from_notebook_node(notebook)
    return str(body)


def run_chromium(binary: str, page: Path, *args: str) -> str:
    """Chromium's stdout for ``page`` (a fresh profile; the whole process group killed at the end)."""
    with tempfile.TemporaryDirectory(prefix="mcp-sync-chromium-") as profile:
        proc = subprocess.Popen([binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=BROWSER_TIMEOUT)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its renderer and GPU helpers too
            except ProcessLookupError:
                pass
            proc.wait(10)
        assert proc.returncode == 0 or out, f"chromium exited {proc.returncode}"
        return out


def test_the_html_page_shows_the_table_and_the_image_in_chromium(executed: Any, tool_names: list[str],
                                                                 tmp_path: Path) -> None:
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium here (Debian: apt-get install chromium; .ci/run installs it)")
    page = tmp_path / "notebook.html"
    page.write_text(to_html(executed).replace("</body>", PROBE + "</body>"), encoding="utf-8")
    dom = run_chromium(binary, page, "--dump-dom")
    found = re.search(r'data-mcp-sync-check="([^"]*)"', dom)
    assert found, dom[:2000]
    check = json.loads(html.unescape(found.group(1)))
    assert check["rows"] == 1 + len(tool_names), check  # a header row, then a row per tool
    assert check["images"] and all(width > 0 for width in check["images"]), check  # decoded, not just present
    assert check["pwned"] is None, check
    # the notebook's own CSS (JupyterLab's, which nbconvert's page carries) right-aligns table cells
    # unless a display's style outweighs it: the table must read as the docs show it
    assert check["align"] == ["left"], check
    shot = tmp_path / "notebook.png"
    run_chromium(binary, page, f"--screenshot={shot}", "--window-size=1100,1400")
    assert shot.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def main(argv: list[str]) -> int:
    """``python tests/test_example_notebook.py OUT.png [HEIGHT]``: run the notebook as a reader
    would, screenshot its HTML page (1100 pixels wide, HEIGHT high: 1400)."""
    import nbformat

    binary = chromium()
    if len(argv) not in (1, 2) or binary is None:
        print("usage: python tests/test_example_notebook.py OUT.png [HEIGHT]   (needs chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="mcp-sync-notebook-") as where:
        # the notebook as a reader runs it: its own server (npx; the first run downloads it)
        notebook = _execute(nbformat.read(str(NOTEBOOK), as_version=4), Path(where), None, timeout=300)
        page = Path(where) / "notebook.html"
        page.write_text(to_html(notebook), encoding="utf-8")
        height = int(argv[1]) if len(argv) == 2 else 1400
        run_chromium(binary, page, f"--screenshot={Path(argv[0]).resolve()}", f"--window-size=1100,{height}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
