// Prints the closing "N passed, N failed" line, summed over vitest JSON reports given as `file:exitCode`.
// A phase that failed without failed tests (typecheck, lint, a server that did not start, a suite that did not
// load) counts as one failure.
const { existsSync, readFileSync } = require('node:fs');
let passed = 0;
let failed = 0;
let skipped = 0;
let anyFailed = false;
const failures = [];

// The names of the failed tests and the head of each message, so that the tail of a CI log (often all that is
// kept) says what failed, not only how many.
function failedTests(report) {
  const out = [];
  for (const file of report.testResults ?? []) {
    const failedCases = (file.assertionResults ?? []).filter((a) => a.status === 'failed');
    for (const a of failedCases) {
      const message = (a.failureMessages ?? []).join(' ').split('\n').slice(0, 6).join(' | ').slice(0, 600);
      out.push(`  FAILED ${file.name.replace(process.cwd() + '/', '')} > ${a.fullName}\n    ${message}`);
    }
    if (file.status === 'failed' && failedCases.length === 0) {
      out.push(`  FAILED ${file.name.replace(process.cwd() + '/', '')} (did not load)\n    ${String(file.message ?? '').slice(0, 600)}`);
    }
  }
  return out;
}
for (const arg of process.argv.slice(2)) {
  const i = arg.lastIndexOf(':');
  const file = arg.slice(0, i);
  const rc = Number(arg.slice(i + 1));
  let p = 0;
  let f = 0;
  if (existsSync(file)) {
    const r = JSON.parse(readFileSync(file, 'utf8'));
    p = r.numPassedTests;
    f = r.numFailedTests;
    skipped += (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
    f += (r.testResults ?? []).filter((s) => s.status === 'failed' && s.assertionResults.every((a) => a.status !== 'failed')).length;
    failures.push(...failedTests(r));
  }
  if (rc !== 0 && f === 0) f = 1;
  console.log(`  ${file}: ${p} passed, ${f} failed`);
  passed += p;
  failed += f;
  if (rc !== 0 || f > 0) anyFailed = true;
}
for (const line of failures) console.log(line);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(anyFailed ? 1 : 0);
