"""The official MCP conformance suite's client scenarios, on both suite lines.

Runs ``tests/conformance/run.sh`` (it installs Node 22, when the machine's node
is older, and the pinned suite versions from npm into ``.cache/`` by itself)
with ``tests/conformance/client.py`` as the client. The scenarios expected to
pass are the lists in ``LINES`` below: edit them there.
Covered: every non-auth client scenario of 0.1.16, and of 0.2.0-alpha.12 the
non-auth scenarios its 2026-07-28 requirements list, plus
json-schema-2020-12-preservation. The auth scenarios (mcp_sync.OAuth) run as
lines of their own, two at a time with a shorter client timeout (the mock
authorization servers answer at once): every auth scenario of both suites,
0.1.16's extensions included (client-credentials-jwt and
cross-app-access-complete-flow need the ``jwt`` extra, which the test extra
installs): all 26 client scenarios of 0.1.16.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(os.environ.get("MCP_SYNC_CONFORMANCE_SCRIPT", ROOT / "tests" / "conformance" / "run.sh"))
CLIENT = f"{sys.executable} {ROOT / 'tests' / 'conformance' / 'client.py'}"

AUTH_2025_11_25 = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
]
AUTH_ENV = {"CONF_TIMEOUT_MS": "15000", "CONF_JOBS": "2"}

LINES = {
    "0.1.16": ({}, ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]),
    "0.2.0-alpha.12@2026-07-28": (
        {"CONF_VERSION": "0.2.0-alpha.12", "CONF_SPEC_VERSION": "2026-07-28"},
        [
            "tools_call",
            "request-metadata",
            "sep-2322-client-request-state",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "json-schema-ref-no-deref",
            "json-schema-2020-12-preservation",
        ],
    ),
    "0.2.0-alpha.12@2025-11-25": (
        {"CONF_VERSION": "0.2.0-alpha.12", "CONF_SPEC_VERSION": "2025-11-25"},
        ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"],
    ),
    "0.1.16 auth": (
        AUTH_ENV,
        [
            *AUTH_2025_11_25,
            "auth/2025-03-26-oauth-metadata-backcompat",
            "auth/2025-03-26-oauth-endpoint-fallback",
            "auth/resource-mismatch",
            "auth/offline-access-scope",
            "auth/offline-access-not-supported",
            "auth/client-credentials-basic",
            "auth/client-credentials-jwt",  # private_key_jwt (the jwt extra)
            "auth/cross-app-access-complete-flow",  # RFC 8693 ID-JAG exchange, then the jwt-bearer grant
        ],
    ),
    "0.2.0-alpha.12@2026-07-28 auth": (  # the 25 auth scenarios of requirements/2026-07-28.yaml
        {"CONF_VERSION": "0.2.0-alpha.12", "CONF_SPEC_VERSION": "2026-07-28", **AUTH_ENV},
        [
            *AUTH_2025_11_25,
            "auth/resource-mismatch",
            "auth/offline-access-scope",
            "auth/offline-access-not-supported",
            "auth/authorization-server-migration",
            "auth/iss-supported",
            "auth/iss-not-advertised",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
        ],
    ),
    "0.2.0-alpha.12@2025-11-25 auth": (
        {"CONF_VERSION": "0.2.0-alpha.12", "CONF_SPEC_VERSION": "2025-11-25", **AUTH_ENV},
        AUTH_2025_11_25,
    ),
}


def run_suite(env: dict[str, str], scenarios: list[str]) -> tuple[dict[str, str], str]:
    """Run the scenarios; return ``{scenario: "PASS" | "FAIL"}`` and the runner's output."""
    run = subprocess.run(
        ["bash", str(SCRIPT), CLIENT, *scenarios], capture_output=True, text=True, env=env, timeout=850, cwd=ROOT
    )
    verdicts = {name: status for status, name in re.findall(r"^(PASS|FAIL) (\S+)", run.stdout, re.M)}
    return verdicts, run.stdout + run.stderr[-3000:]


#: Scenarios whose checks are timing windows a loaded 2-core machine can miss (sse-retry wants the
#: reconnect 450-700 ms after the close). Only these may pass on a rerun; each such pass is
#: reported (a warning in the run's summary), never silent.
TIMING_WINDOWS = frozenset({"sse-retry"})


def judge(first: dict[str, str], again: dict[str, str]) -> tuple[list[str], list[str]]:
    """Decide a line from its first run and the rerun of what failed: ``(failures, flaky)``.

    A first-run failure fails the test (#22.5), unless the scenario is a timing window that
    passed when run again alone: that is listed in ``flaky`` and reported. A scenario that
    failed and passed alone is still a failure when it is not a timing window (the rerun only
    tells the message whether it is flaky or failing steadily)."""
    failures, flaky = [], []
    for name in sorted(n for n, status in first.items() if status != "PASS"):
        if name in TIMING_WINDOWS and again.get(name) == "PASS":
            flaky.append(name)
        elif again.get(name) == "PASS":
            failures.append(f"{name} (failed on the first run, passed alone: flaky)")
        else:
            failures.append(f"{name} (failed twice)")
    return failures, flaky


def test_judge_counts_first_run_failures() -> None:
    """#22.5: a rerun pass hides nothing, except a declared timing window, which is reported."""
    assert judge({"a": "PASS", "sse-retry": "PASS"}, {}) == ([], [])
    assert judge({"a": "FAIL"}, {"a": "PASS"}) == (["a (failed on the first run, passed alone: flaky)"], [])
    assert judge({"a": "FAIL"}, {"a": "FAIL"}) == (["a (failed twice)"], [])
    assert judge({"sse-retry": "FAIL"}, {"sse-retry": "PASS"}) == ([], ["sse-retry"])
    assert judge({"sse-retry": "FAIL"}, {}) == (["sse-retry (failed twice)"], [])


@pytest.mark.timeout(900)
@pytest.mark.parametrize("line", list(LINES))
def test_conformance_scenarios(line: str) -> None:
    """Every listed scenario passes on the first run. What fails is run once more, alone, to
    tell a flake from a steady failure; either way it fails the test (see :func:`judge`),
    except a timing-window scenario (TIMING_WINDOWS) that passes alone: that is reported as a
    warning in the run's summary. The output of both runs is in the failure message."""
    env_extra, scenarios = LINES[line]
    # the client imports this checkout's mcp_sync, installed or not
    pythonpath = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": pythonpath, **env_extra}
    verdicts, output = run_suite(env, scenarios)
    assert set(verdicts) == set(scenarios), f"missing verdicts:\n{output}"
    failed = sorted(name for name, status in verdicts.items() if status != "PASS")
    again, output_again = run_suite(env, failed) if failed else ({}, "")
    failures, flaky = judge(verdicts, again)
    if flaky:
        warnings.warn(f"conformance {line}: {flaky} failed on the first run and passed alone (timing window):\n"
                      f"{output[-2000:]}", stacklevel=1)
    assert not failures, f"{line}: {failures}\nfirst run:\n{output}\nsecond run:\n{output_again}"
