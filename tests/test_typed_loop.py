"""Issue #18.4: a typed agent loop type-checks, and runs.

examples/typed_agent_loop.py must pass ``mypy --strict`` with the provider SDKs installed
(before the fix it had six errors: ``list[dict[str, Any]]`` fits none of the SDKs'
parameter types), and each of its loops must work against a local stand-in of the API.
The mypy check is in tests/test_typed_api.py, one mypy run with the user script's (#32).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from test_doc_loops import FakeAPI

from conftest import ROOT

EXAMPLE = ROOT / "examples" / "typed_agent_loop.py"


def _need(*modules: str) -> None:
    for name in modules:
        if importlib.util.find_spec(name) is None:
            pytest.skip(f"{name} is not installed (it is in the 'test' extra: pip install -e .[test])")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("provider", ["openai", "responses", "anthropic"])
def test_typed_loop_runs(provider: str) -> None:
    _need("openai", "anthropic")
    api = FakeAPI()
    try:
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-test",
               "OPENAI_BASE_URL": f"{api.url}/v1", "ANTHROPIC_API_KEY": "sk-ant-test", "ANTHROPIC_BASE_URL": api.url}
        done = subprocess.run([sys.executable, str(EXAMPLE), provider, "What is 2 + 40?"], capture_output=True,
                              text=True, timeout=90, env=env, cwd=ROOT)
    finally:
        api.close()
    assert api.refusals == [], api.refusals
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is 42."
