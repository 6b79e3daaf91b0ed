"""Which client requirement of the specification each test names (issue #21).

Run:  python tests/checklist_coverage.py [--missing]

The checklist (``shared/spec/client-checklist.md``, found beside the clone as
``../shared/spec/client-checklist.md`` relative to the repository root) gives
every client MUST and SHOULD a stable ID (J1, H6, R3, LG4, ...). A test names
an ID in its function name (``test_j1_...``), its docstring, a comment inside
it or in the comment block right above it, or in the section comment
(``# -- title (IDs) ---``) of the part of the file it sits in. When the checklist is not there,
the IDs come from ``tests/checklist_ids.txt``, a committed copy of the list.

Some requirements belong to the application, not to a client library (asking a
human, showing which server asks). ``APPLICATION`` below says why for each;
such an ID still has a test of the part the library does, and the docs say in
plain words what the library leaves to the application.

Prints one line per ID: the ID, ``tested`` / ``application`` / ``MISSING``,
and the tests that name it. With ``--missing``, exits 1 when an ID has neither
a test nor a reason.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
#: Where the checklist is looked for: the shared folder of this machine, then beside the clone
#: (CI copies shared/ there); else the committed copy of its IDs.
CHECKLISTS = (Path("/work/shared/spec/client-checklist.md"), ROOT.parent / "shared" / "spec" / "client-checklist.md")
CHECKLIST = next((path for path in CHECKLISTS if path.is_file()), CHECKLISTS[-1])
ID_COPY = TESTS / "checklist_ids.txt"

_ITEM = re.compile(r"^- (LG\d{1,2}|[A-Z]\d{1,2}) ", re.MULTILINE)
_IN_TEXT = re.compile(r"(?<![A-Za-z0-9_.+-])(LG|[A-Z])(\d{1,2})(?:[-\u2013](?:\1)?(\d{1,2}))?(?![A-Za-z0-9_])")
_IN_NAME = re.compile(r"^(lg|[a-z])(\d{1,2})$")

# Requirements that are the application's, or that a library cannot meet alone:
# why, and which part the library does (that part has a test naming the ID).
APPLICATION: dict[str, str] = {
    "L2": "Showing the user which server asks, and offering decline and cancel, is the application's "
          "user interface. The library hands the handler the request (and the client's name) and sends "
          "back whatever action the handler returns, decline and cancel included.",
    "M2": "Respecting maxTokens is the job of whoever runs the model, the application's sampling handler. "
          "The library passes maxTokens to the handler unchanged.",
    "O3": "Trusting annotations is a decision of the application. The library only returns them as data "
          "and never changes its own behaviour because of them.",
    "O5": "Human confirmation, showing inputs and audit logs are the application's. The library gives "
          "per-call timeouts and ClientGroup qualifies tool names by the configured server key, never by "
          "the server's self-reported name.",
    "E6": "A library cannot stop an application from branching on serverInfo; the library itself never "
          "does, and returns it as data.",
    "T7": "The application decides how long a server process lives. The library ties the process to the "
          "Client object (closed by close(), the with block, or when the last reference goes), never to "
          "the thread that started it.",
    "T8": "Credentials for a stdio server come from its environment, which the application passes (env=); "
          "the library applies no HTTP authorization to stdio.",
    "V7": "The library renders no icons. It returns them as data; showing them safely (schemes, "
          "redirects, formats) is the application's.",
}


@dataclass
class Coverage:
    ids: list[str]
    source: Path
    tests: dict[str, list[str]] = field(default_factory=dict)
    xfail: set[str] = field(default_factory=set)  # tests marked xfail: a known gap, reported

    def status(self, item: str) -> str:
        names = self.tests.get(item)
        if names and all(name in self.xfail for name in names):
            return "xfail"  # named, and the test shows the library falls short (see its reason)
        if names:
            return "tested"
        if APPLICATION.get(item, "").strip():
            return "application"
        return "MISSING"

    def missing(self) -> list[str]:
        return [item for item in self.ids if self.status(item) == "MISSING"]


def checklist_ids(checklist: Path = CHECKLIST, copy: Path = ID_COPY) -> tuple[list[str], Path]:
    """The IDs of the checklist, in its order, and where they came from."""
    if checklist.is_file():
        return _ITEM.findall(checklist.read_text(encoding="utf-8")), checklist
    lines = copy.read_text(encoding="utf-8").splitlines()
    return [line.split()[0] for line in lines if line.strip() and not line.startswith("#")], copy


def ids_in_text(text: str) -> set[str]:
    """IDs written in a docstring or comment; "R1-R8" names R1 to R8."""
    found: set[str] = set()
    for prefix, first, last in _IN_TEXT.findall(text):
        low = int(first)
        high = int(last) if last else low
        if high < low or high - low > 20:
            high = low
        found.update(f"{prefix}{n}" for n in range(low, high + 1))
    return found


def ids_in_name(name: str) -> set[str]:
    found = set()
    for token in name.split("_"):
        match = _IN_NAME.match(token)
        if match:
            found.add(match.group(1).upper() + match.group(2))
    return found


def _comment_lines(source: str) -> dict[int, str]:
    """Line number -> the comment on it (real comments only, never text inside strings)."""
    found: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string
    return found


def _comments(lines: list[str], comments: dict[int, str], start: int, end: int) -> str:
    """Comments on lines start..end (1-based, inclusive) and in the comment block just above."""
    above = start - 1
    while above >= 1 and lines[above - 1].strip().startswith(("#", "@")):
        above -= 1
    return "\n".join(comments[n] for n in range(above + 1, end + 1) if n in comments)


def _is_xfail(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return isinstance(target, ast.Attribute) and target.attr == "xfail"


def xfail_tests(path: Path) -> set[str]:
    """The test functions (qualified names) of ``path`` marked ``pytest.mark.xfail``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        members = node.body if isinstance(node, ast.ClassDef) else [node]
        prefix = f"{node.name}." if isinstance(node, ast.ClassDef) else ""
        for member in members:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                _is_xfail(d) for d in member.decorator_list
            ):
                found.add(f"{prefix}{member.name}")
    return found


def tests_in_file(path: Path) -> dict[str, set[str]]:
    """Test function (qualified name) -> the IDs it names."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    comments = _comment_lines(source)
    found: dict[str, set[str]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name.startswith("test"):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                named = ids_in_name(child.name)
                named |= ids_in_text(ast.get_docstring(child) or "")
                named |= ids_in_text(_comments(lines, comments, first, child.end_lineno or child.lineno))
                found[f"{prefix}{child.name}"] = named

    visit(ast.parse(source, filename=str(path)), "")
    for name, line in _starts(source).items():
        found[name] |= ids_in_text(_section(lines, line))
    return found


def _starts(source: str) -> dict[str, int]:
    """Top-level test functions and classes' tests -> their first line."""
    starts: dict[str, int] = {}
    for node in ast.parse(source).body:
        members = [(node, "")] if not isinstance(node, ast.ClassDef) else [(m, f"{node.name}.") for m in node.body]
        for member, prefix in members:
            if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)) and member.name.startswith("test"):
                starts[f"{prefix}{member.name}"] = member.lineno
    return starts


def _section(lines: list[str], line: int) -> str:
    """The nearest section comment (``# -- title ---``) at column 0 above ``line``."""
    for text in reversed(lines[: line - 1]):
        if text.startswith("# --"):  # column 0: a comment, not text inside a string
            return text
    return ""


def coverage(tests_dir: Path = TESTS, checklist: Path = CHECKLIST, copy: Path = ID_COPY) -> Coverage:
    ids, source = checklist_ids(checklist, copy)
    result = Coverage(ids, source, {item: [] for item in ids})
    known = set(ids)
    for path in sorted(tests_dir.rglob("test_*.py")):
        rel = path.relative_to(tests_dir.parent).as_posix()
        result.xfail.update(f"{rel}::{test}" for test in xfail_tests(path))
        for test, named in tests_in_file(path).items():
            for item in sorted(named & known):
                result.tests[item].append(f"{rel}::{test}")
    return result


def main(argv: list[str], tests_dir: Path = TESTS) -> int:
    result = coverage(tests_dir)
    print(f"# {len(result.ids)} IDs from {result.source}")
    for item in result.ids:
        status = result.status(item)
        names = result.tests[item]
        shown = [f"{name} (xfail)" if name in result.xfail else name for name in names]
        detail = ", ".join(shown) if names else APPLICATION.get(item, "")
        print(f"{item:5} {status:11} {detail}")
        if names and item in APPLICATION:
            print(f"{'':5} {'':11} (application's part: {APPLICATION[item]})")
    missing = result.missing()
    tested = sum(1 for item in result.ids if result.tests[item])
    xfail = [item for item in result.ids if result.status(item) == "xfail"]
    print(f"# named by a test {tested} (only by xfail tests: {len(xfail)}{': ' + ' '.join(xfail) if xfail else ''}), "
          f"application-only {len(result.ids) - tested - len(missing)}, missing {len(missing)}"
          + (f": {' '.join(missing)}" if missing else ""))
    return 1 if missing and "--missing" in argv else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
