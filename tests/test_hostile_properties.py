"""The property of #17 for the entry points that show or convert server and model data:
generated adversarial inputs of up to 1 MB return (or fail with an mcp_sync error) within a
bound stated in the test, and what reaches a terminal carries no control character.

Covered here: the CLI's table of tools (names and descriptions from a server), `parse_pairs`
and `did_you_mean` (the user's words against a server's schema and names), the LLM formats'
export of server tools, and `run_tool_call` on model tool calls. Schemas, config files, URI
templates and auth headers have theirs in test_schema_bounds.py, test_config_hostile.py,
test_group_hardening.py and test_auth_challenge.py.
"""

from __future__ import annotations

import io
import json
import time
from typing import Any, Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

import mcp_sync
from mcp_sync._cli import did_you_mean, parse_pairs, table
from mcp_sync._llm_formats import LLMFormatsMixin, ToolNames
from mcp_sync._terminal import escape

#: Seconds one call may take on a loaded two-core machine; the linear code takes well under a
#: second per MB when idle, and a quadratic step on these sizes would take minutes.
BOUND = 15.0
#: What an attacker repeats: control sequences, bidi overrides, surrogates, JSON and glob syntax.
PIECES = ["\x1b]52;c;", "\x1b[2J", "\x07", "\u202e", "\ud800", "{", "[", "\"", "\\", " ", "a", "*", "-", "\n"]


def hostile_text(min_size: int = 0) -> st.SearchStrategy[str]:
    """A text built from a few pieces repeated up to ~1 MB (the sizes hypothesis draws vary)."""
    return st.builds(
        lambda parts, times: "".join(parts) * times,
        st.lists(st.sampled_from(PIECES), min_size=1, max_size=6),
        st.integers(min_value=max(1, min_size), max_value=170_000),
    )


def _timed(function: Any, *args: Any) -> Any:
    started = time.thread_time()
    result = function(*args)
    assert time.thread_time() - started < BOUND
    return result


@settings(max_examples=15, deadline=None)
@given(name=hostile_text(), description=hostile_text())
def test_the_tool_table_is_linear_and_inert(name: str, description: str) -> None:
    out = io.StringIO()
    _timed(table, [(escape(name, one_line=True), escape(description))], out)
    shown = out.getvalue()
    assert not any(ch in shown for ch in "\x1b\x07\u202e\ud800")


@settings(max_examples=15, deadline=None)
@given(word=hostile_text(), names=st.lists(hostile_text(), min_size=1, max_size=3))
def test_suggestions_for_a_mistyped_name_are_bounded(word: str, names: list[str]) -> None:
    assert isinstance(_timed(did_you_mean, word[:200], names), str)


@settings(max_examples=15, deadline=None)
@given(value=hostile_text())
def test_key_value_words_are_parsed_in_linear_time(value: str) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "number"}}}
    try:
        parsed = _timed(parse_pairs, [f"x={value}", f"y={value}"], schema)
    except (ValueError, mcp_sync.MCPError):
        return  # refused, in time: also fine
    assert parsed["x"] == value


class _Fake(LLMFormatsMixin):
    def __init__(self, tools: list[mcp_sync.Tool]) -> None:
        self._tools = tools
        self._tool_names = ToolNames()

    def tools(self, **options: Any) -> Iterator[mcp_sync.Tool]:
        return iter(self._tools)

    def call_tool(self, name: str, arguments: Any = None, **options: Any) -> mcp_sync.CallToolResult:
        return mcp_sync.CallToolResult(content=[mcp_sync.TextContent(text=json.dumps(arguments)[:100])])


@settings(max_examples=10, deadline=None)
@given(name=hostile_text(), description=hostile_text(), key=hostile_text())
def test_exporting_hostile_tools_is_bounded(name: str, description: str, key: str) -> None:
    schema = {"type": "object", "properties": {key[:100_000]: {"type": "string", "description": description}}}
    fake = _Fake([mcp_sync.Tool(name=name, description=description, input_schema=schema),
                  mcp_sync.Tool(name=name, input_schema={"type": "object"})])  # listed twice, too
    for export in (fake.to_openai_tools, fake.to_anthropic_tools, fake.to_gemini_tools):
        exported = _timed(export)
        assert len(exported) >= 1


@settings(max_examples=15, deadline=None)
@given(arguments=hostile_text(), fmt=st.sampled_from(["openai", "anthropic", "gemini"]))
def test_a_hostile_model_call_becomes_a_message_in_time(arguments: str, fmt: str) -> None:
    fake = _Fake([mcp_sync.Tool(name="echo", input_schema={"type": "object"})])
    fake.to_openai_tools()
    deep = "[" * (len(arguments) % 200_000) + arguments
    calls = {
        "openai": {"id": "1", "type": "function", "function": {"name": "echo", "arguments": deep}},
        "anthropic": {"type": "tool_use", "id": "1", "name": "echo", "input": {"x": arguments}},
        "gemini": {"name": "echo", "args": {"x": arguments}},
    }
    message = _timed(lambda: fake.run_tool_call(calls[fmt], format=fmt))
    assert isinstance(message, dict)
