// Prints the closing "N passed, N failed" line, summed over vitest JSON reports given as `file:exitCode`.
// A phase that failed without failed tests (typecheck, lint, a server that did not start, a suite that did not
// load) counts as one failure.
const { existsSync, readFileSync } = require('node:fs');
let passed = 0;
let failed = 0;
let skipped = 0;
let anyFailed = false;
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
  }
  if (rc !== 0 && f === 0) f = 1;
  console.log(`  ${file}: ${p} passed, ${f} failed`);
  passed += p;
  failed += f;
  if (rc !== 0 || f > 0) anyFailed = true;
}
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(anyFailed ? 1 : 0);
