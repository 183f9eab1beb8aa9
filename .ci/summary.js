// Prints the closing "N passed, N failed" line from vitest's JSON report; a step that failed before the tests
// ran (typecheck, lint) counts as one failure.
const { existsSync, readFileSync } = require('node:fs');
const [file, rcArg] = process.argv.slice(2);
const rc = Number(rcArg);
let passed = 0;
let failed = 0;
let skipped = 0;
if (existsSync(file)) {
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed = r.numPassedTests;
  failed = r.numFailedTests;
  skipped = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // A suite that failed to load has no failed tests but must fail the run.
  failed += (r.testResults ?? []).filter((s) => s.status === 'failed' && s.assertionResults.every((a) => a.status !== 'failed')).length;
}
if (rc !== 0 && failed === 0) failed = 1;
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(rc !== 0 || failed > 0 ? 1 : 0);
