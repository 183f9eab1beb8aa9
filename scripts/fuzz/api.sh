#!/usr/bin/env bash
# Bounded property-based fuzzing of the HTTP API with Schemathesis, driven by the OpenAPI document the gateway serves
# (GET /docs/openapi.json): every operation gets generated valid and invalid requests (examples, coverage and fuzzing
# phases, fixed seed) and the only check is `not_a_server_error` — a 5xx is a bug, whatever the input.
#
#   scripts/fuzz/api.sh [out.json]      (default .ci/out/fuzz.json)
#
# It builds into tmp/fuzz-dist (the same build `npm start` runs, but not into dist/, which other processes may be
# running from), starts the embedded platform (`rag start`) on a free loopback port with RAG_EMBEDDER=hashing, a
# temporary RAG_DATA_DIR and one API key made with `rag keys create`, runs Schemathesis from a project-local venv
# (.local/venv-schemathesis, created on first use with pip), stops the server (by its PID) and writes a vitest-style
# JSON summary ({numPassedTests, numFailedTests}, one test per operation) that .ci/summary.js adds up.
# Bounds: FUZZ_MAX_EXAMPLES (default 100) per operation, FUZZ_TIME_LIMIT_S (default 300) for the whole run;
# FUZZ_SEED (fixed default) and FUZZ_CHECKS (default not_a_server_error; e.g. `all` while working on the schema).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
out="$(realpath -m "${1:-.ci/out/fuzz.json}")"
mkdir -p "$(dirname "$out")"
SCHEMATHESIS_VERSION=4.32.5 # needs CPython >= 3.11 (4.3.x ran, but its hypothesis-jsonschema breaks with today's hypothesis)
venv=.local/venv-schemathesis
seed="${FUZZ_SEED:-20240611}"
max_examples="${FUZZ_MAX_EXAMPLES:-100}"
time_limit="${FUZZ_TIME_LIMIT_S:-300}"
checks="${FUZZ_CHECKS:-not_a_server_error}"

fail() {
  echo "fuzz: $*" >&2
  printf '{"numPassedTests":0,"numFailedTests":1,"numPendingTests":0,"numTodoTests":0,"testResults":[]}\n' >"$out"
  exit 1
}

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || fail "schemathesis $SCHEMATHESIS_VERSION needs python3 >= 3.11 (found $(python3 --version 2>&1))"
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  echo "== fuzz: installing schemathesis $SCHEMATHESIS_VERSION into $venv"
  python3 -m venv "$venv" || fail "python3 -m venv failed (python3 $(python3 --version 2>&1))"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" || fail "pip install schemathesis failed"
fi

dist="$root/tmp/fuzz-dist"
RAG_DIST_DIR="$dist" node scripts/build.js || fail "build failed"
rag() { node "$dist/apps/cli/src/main.js" "$@"; }

data="$(mktemp -d "${TMPDIR:-/tmp}/rag-fuzz-XXXXXX")"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
export RAG_DATA_DIR="$data" RAG_HOST=127.0.0.1 RAG_PORT="$port" RAG_EMBEDDER=hashing RAG_LOG_LEVEL=warn
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$data"
}
trap cleanup EXIT

# A key with every scope and a limit high enough that the fuzzer measures the API, not the rate limiter.
key="$(rag keys create --tenant fuzz --scopes admin,ingest,query --unrestricted --name fuzz --rps 1000000 --burst 1000000 2>/dev/null |
  node -e 'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>process.stdout.write(JSON.parse(s).key))')" || fail "rag keys create failed"

log="$(dirname "$out")/fuzz-server.log"
# node itself in the background (not the `rag` function, whose subshell would be $!: killing it left the server running)
node "$dist/apps/cli/src/main.js" start >"$log" 2>&1 &
server_pid=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 300); do
  curl -fsS "$base/readyz" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { tail -n 30 "$log" >&2; fail "the server exited during start-up"; }
  sleep 0.2
done
curl -fsS "$base/readyz" >/dev/null 2>&1 || { tail -n 30 "$log" >&2; fail "the server was not ready within 60 s"; }

junit="$(dirname "$out")/fuzz.junit.xml"
rm -f "$junit"
echo "== fuzz: schemathesis against $base/docs/openapi.json (seed $seed, $max_examples examples per operation, at most $time_limit s)"
timeout --signal=INT --kill-after=15 "$time_limit" "$venv/bin/schemathesis" run "$base/docs/openapi.json" \
  --checks "$checks" \
  --header "Authorization: Bearer $key" \
  --phases examples,coverage,fuzzing \
  --max-examples "$max_examples" \
  --seed "$seed" \
  --workers 1 \
  --request-timeout 30 \
  --suppress-health-check all \
  --no-color \
  --report junit --report-junit-path "$junit"
rc=$?
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "fuzz: schemathesis ran past ${time_limit} s"; fi
kill -0 "$server_pid" 2>/dev/null || { tail -n 30 "$log" >&2; echo "fuzz: the server died during the run"; rc=1; }

# One test per operation: failed when Schemathesis recorded a failure or an error for it.
node - "$junit" "$out" "$rc" <<'JS'
const { existsSync, readFileSync, writeFileSync } = require('node:fs');
const [junit, out, rc] = process.argv.slice(2);
const cases = existsSync(junit) ? [...readFileSync(junit, 'utf8').matchAll(/<testcase\b([^>]*?)(\/>|>([\s\S]*?)<\/testcase>)/g)] : [];
const assertionResults = cases.map((m) => {
  const name = (/\bname="([^"]*)"/.exec(m[1]) ?? [])[1] ?? '?';
  const body = m[3] ?? '';
  const status = /<(failure|error)\b/.test(body) ? 'failed' : /<skipped\b/.test(body) ? 'pending' : 'passed';
  return { title: name, fullName: `fuzz ${name}`, status };
});
const count = (s) => assertionResults.filter((a) => a.status === s).length;
let failed = count('failed');
// No report, or Schemathesis failed without naming an operation (could not load the schema, ran out of time, the
// server died): one failure.
if (failed === 0 && (Number(rc) !== 0 || assertionResults.length === 0)) failed = 1;
const report = {
  numPassedTests: count('passed'),
  numFailedTests: failed,
  numPendingTests: count('pending'),
  numTodoTests: 0,
  testResults: [{ name: 'schemathesis', status: count('failed') ? 'failed' : 'passed', assertionResults }],
};
writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
console.log(`fuzz: ${report.numPassedTests} operations passed, ${failed} failed${report.numPendingTests ? `, ${report.numPendingTests} skipped` : ''} (${out})`);
process.exit(failed ? 1 : 0);
JS
