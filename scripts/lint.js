#!/usr/bin/env node
// ESLint with Nx's module-boundary rule: the rule needs Nx's project graph, so compute it first (no daemon, no cloud).
const { spawnSync } = require('node:child_process');
const { join } = require('node:path');
const bin = (name) => join(__dirname, '..', 'node_modules', '.bin', name);
const env = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_SKIP_NX_CACHE: 'true' };
const run = (cmd, args, quiet) => spawnSync(cmd, args, { stdio: quiet ? 'ignore' : 'inherit', env, shell: false });
const graph = run(bin('nx'), ['show', 'projects'], true);
if (graph.status !== 0) {
  console.error('lint: `nx show projects` failed; the module-boundary rule needs the Nx project graph');
  process.exit(1);
}
const r = run(bin('eslint'), ['--max-warnings=0', 'apps', 'libs', 'test', ...process.argv.slice(2)]);
process.exit(r.status ?? 1);
