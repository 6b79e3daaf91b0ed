"""Issue #18.3: the agent loops shown in README.md and docs/llm-formats.md run, turn after turn.

The snippets used to leave out the assistant message that carries the tool calls, so the
second request had tool results answering nothing, which the real APIs refuse. Each
snippet is taken from the page as it is and run with the real provider SDK (``openai``,
``anthropic``: the ``test`` extra) against a local stand-in of the API that refuses such
requests as the real one does, with the demo server as the MCP server.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import pytest

from conftest import ROOT

pytestmark = pytest.mark.timeout(120)

DEMO_SERVER = str(ROOT / "examples" / "demo_server.py")
FENCE = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def loop_snippets() -> list[tuple[str, str]]:
    """``(id, code)`` of each python block with a ``run_tool_call`` loop in the two pages' LLM sections."""
    found = []
    for page, heading in ((ROOT / "README.md", "## LLM tool formats"), (ROOT / "docs" / "llm-formats.md", "## ")):
        text = page.read_text(encoding="utf-8")
        if heading != "## ":
            start = text.index(heading)
            text = text[start : text.find("\n## ", start + len(heading))]
        for number, match in enumerate(FENCE.finditer(text)):
            code = match.group(1)
            if "run_tool_call(" in code and "while" in code:
                found.append((f"{page.stem}-{number}", code))
    return found


SNIPPETS = loop_snippets()


class Refused(Exception):
    """What the real API answers with 400 (the message is the real one's, more or less)."""


def _check_chat(messages: list[dict[str, Any]]) -> None:
    waiting: list[str] = []  # tool_call ids of the last assistant message not yet answered
    for message in messages:
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in waiting:
                raise Refused("messages with role 'tool' must be a response to a preceeding message with 'tool_calls'")
            waiting.remove(message["tool_call_id"])
            continue
        if waiting:
            raise Refused("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                          f"each 'tool_call_id'. The following tool_call_ids did not have response messages: {waiting}")
        if message.get("role") == "assistant":
            waiting = [call["id"] for call in message.get("tool_calls") or []]
    if waiting:
        raise Refused(f"tool_call_ids without response messages: {waiting}")


def _check_responses(items: list[dict[str, Any]]) -> None:
    calls = {item.get("call_id") for item in items if item.get("type") == "function_call"}
    for item in items:
        if item.get("type") == "function_call_output" and item.get("call_id") not in calls:
            raise Refused(f"No tool call found for function call output with call_id {item.get('call_id')}.")


def _check_anthropic(messages: list[dict[str, Any]]) -> None:
    previous: dict[str, Any] = {}
    for message in messages:
        content = message.get("content")
        results = [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
        if results:
            asked = previous.get("content") if previous.get("role") == "assistant" else []
            ids = {b.get("id") for b in asked or [] if isinstance(b, dict) and b.get("type") == "tool_use"}
            for block in results:
                if block.get("tool_use_id") not in ids:
                    raise Refused("messages: tool_result block(s) provided when previous message does not have "
                                  f"corresponding tool_use block: {block.get('tool_use_id')}")
        previous = message


def _add_name(tools: list[dict[str, Any]]) -> str:
    names = [t.get("name") or t.get("function", {}).get("name") for t in tools]
    return next(name for name in names if name and name.endswith("add"))


def _answered_42(texts: list[str]) -> bool:
    return any(text.strip() == "42" for text in texts)


class FakeAPI:
    """OpenAI (Chat Completions, Responses) and Anthropic on one local port: the first request
    of a conversation gets a tool call (add 2 + 40), a request that carries its result gets
    "It is 42.", and a request with an orphaned tool result gets 400 as from the real API."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.refusals: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                api.requests.append((self.path, body))
                try:
                    status, reply = 200, api.answer(self.path, body)
                except Refused as exc:
                    api.refusals.append(str(exc))
                    status, reply = 400, {"error": {"type": "invalid_request_error", "message": str(exc)}}
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.endswith("/chat/completions"):
            _check_chat(body["messages"])
            if _answered_42([m.get("content") for m in body["messages"] if m.get("role") == "tool"]):
                message: dict[str, Any] = {"role": "assistant", "content": "It is 42."}
                finish = "stop"
            else:
                call = {"id": "call_1", "type": "function",
                        "function": {"name": _add_name(body["tools"]), "arguments": '{"a": 2, "b": 40}'}}
                message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
            return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}]}
        if path.endswith("/responses"):
            items = body["input"]
            _check_responses(items)
            if _answered_42([i.get("output") for i in items if i.get("type") == "function_call_output"]):
                output: list[dict[str, Any]] = [{"type": "message", "id": "msg_1", "role": "assistant",
                                                 "status": "completed", "content": [
                                                     {"type": "output_text", "text": "It is 42.", "annotations": []}]}]
            else:
                output = [{"type": "function_call", "id": "fc_1", "call_id": "call_1", "status": "completed",
                           "name": _add_name(body["tools"]), "arguments": '{"a": 2, "b": 40}'}]
            return {"id": "resp_1", "object": "response", "created_at": 0, "model": body["model"], "output": output,
                    "status": "completed", "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
        if path.endswith("/messages"):
            _check_anthropic(body["messages"])
            texts = [b.get("content")[0].get("text") if isinstance(b.get("content"), list) else b.get("content")
                     for m in body["messages"] if isinstance(m.get("content"), list)
                     for b in m["content"] if b.get("type") == "tool_result"]
            if _answered_42([t for t in texts if isinstance(t, str)]):
                content: list[dict[str, Any]] = [{"type": "text", "text": "It is 42."}]
                stop = "end_turn"
            else:
                content = [{"type": "text", "text": "Adding."},
                           {"type": "tool_use", "id": "toolu_1", "name": _add_name(body["tools"]),
                            "input": {"a": 2, "b": 40}}]
                stop = "tool_use"
            return {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                    "content": content, "stop_reason": stop, "stop_sequence": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1}}
        raise Refused(f"no such endpoint {path}")


@pytest.fixture
def fake_api() -> Iterator[FakeAPI]:
    api = FakeAPI()
    yield api
    api.close()


def run_snippet(code: str, api: FakeAPI) -> subprocess.CompletedProcess[str]:
    """The snippet as a program: the SDKs imported, ``client`` on the demo server, the SDKs pointed at ``api``."""
    program = (
        "import sys, mcp_sync, openai, anthropic\n"
        f"with mcp_sync.Client.stdio(sys.executable, [{DEMO_SERVER!r}], timeout=30) as client:\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test",
           "OPENAI_BASE_URL": f"{api.url}/v1", "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": api.url}
    return subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=90, env=env,
                          cwd=ROOT)


def _need_sdks() -> None:
    for name in ("openai", "anthropic"):
        try:
            __import__(name)
        except ImportError:
            pytest.skip(f"the {name} package is not installed (it is in the 'test' extra: pip install -e .[test])")


def test_the_pages_have_loops() -> None:
    """Guards the extraction: README's loop and the three on the docs page are found."""
    ids = [snippet_id for snippet_id, _ in SNIPPETS]
    assert sum(i.startswith("README") for i in ids) == 1 and sum(i.startswith("llm-formats") for i in ids) == 3


@pytest.mark.parametrize("code", [code for _, code in SNIPPETS], ids=[snippet_id for snippet_id, _ in SNIPPETS])
def test_documented_loop_runs_two_turns(code: str, fake_api: FakeAPI) -> None:
    _need_sdks()
    done = run_snippet(code, fake_api)
    assert fake_api.refusals == [], fake_api.refusals
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("It is 42."), done.stdout
    assert len(fake_api.requests) == 2  # the tool call, then the answer


BROKEN = '''
tools = client.to_openai_tools()
messages = [{"role": "user", "content": "What is 2 + 40?"}]
for _ in range(2):
    reply = openai.OpenAI().chat.completions.create(model="m", messages=messages, tools=tools)
    for call in reply.choices[0].message.tool_calls or []:
        messages.append(client.run_tool_call(call, format="openai"))
'''


def test_the_fake_refuses_orphaned_tool_results(fake_api: FakeAPI) -> None:
    """The loop as the pages used to show it (no assistant message): refused on its 2nd turn."""
    _need_sdks()
    done = run_snippet(BROKEN, fake_api)
    assert done.returncode != 0 and "BadRequestError" in done.stderr
    assert fake_api.refusals and "preceeding message with 'tool_calls'" in fake_api.refusals[0]
