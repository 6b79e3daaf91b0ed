"""``connect()`` and ``shared()`` (#10.3, #19.5): targets that cannot work fail at once with the
reason, ``shared()`` tells options apart even when they cannot be hashed, and the shared clients
are closed at interpreter exit, each on its own (one that fails to close stops no other).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import textwrap
from typing import Any

import pytest
from helpers import process_gone, wait_until

import mcp_sync

from conftest import PY, ROOT

pytestmark = pytest.mark.timeout(60)
DEMO = [PY, str(ROOT / "examples" / "demo_server.py")]


@pytest.mark.parametrize("target", ["", "   ", []], ids=["empty", "blank", "empty-list"])
def test_an_empty_command_is_refused(target: Any) -> None:
    with pytest.raises(ValueError, match=r"^empty command$"):
        mcp_sync.connect(target)


def test_a_header_value_that_is_not_a_string_is_refused_before_connecting() -> None:
    """Port 9 (discard) is never asked: the header is checked first, and named."""
    with pytest.raises(mcp_sync.ConfigError) as info:
        mcp_sync.connect("http://127.0.0.1:9/mcp", headers={"X-Team": 7})  # type: ignore[dict-item]
    assert info.value.field == "headers"
    assert str(info.value) == "field 'headers': the value of header 'X-Team' must be a string"


@dataclasses.dataclass
class TokenAuth:
    """A ``requests`` auth object as users write them: a dataclass, so equal by value and unhashable."""

    token: str

    def __call__(self, request: Any) -> Any:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request


def test_shared_tells_unhashable_options_apart_by_identity() -> None:
    url = "http://127.0.0.1:9/mcp"  # never connected: shared() makes clients, requests connect them
    auth = TokenAuth("a")
    first = mcp_sync.shared(url, auth=auth)
    same = mcp_sync.shared(url, auth=auth)
    other = mcp_sync.shared(url, auth=TokenAuth("a"))  # equal, but not the same object
    try:
        assert same is first and other is not first
    finally:
        first.close()
        other.close()


EXIT_SCRIPT = textwrap.dedent("""
    import json, sys
    import mcp_sync

    command = json.loads(sys.argv[1])
    failing = mcp_sync.shared(command, timeout=30, name="failing")
    closing = mcp_sync.shared(command, timeout=30, name="closing")
    for client in (failing, closing):
        client.call_tool("echo", {"text": "started"})

    def close():
        raise RuntimeError("this client fails to close")

    failing.close = close
    print(json.dumps([failing.pid, closing.pid]), flush=True)
""")


def test_shared_clients_are_closed_at_exit_each_on_its_own() -> None:
    result = subprocess.run([PY, "-c", EXIT_SCRIPT, json.dumps(DEMO)], capture_output=True, text=True, timeout=60,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    pids = json.loads(result.stdout)
    assert len(pids) == 2 and all(isinstance(pid, int) for pid in pids)
    assert wait_until(lambda: all(process_gone(pid) for pid in pids), 10), "a server was left running"
