#!/usr/bin/env node
// Transpiles apps/ and libs/ to CommonJS under dist/ with SWC (decorator metadata on, @rag/* aliases rewritten).
// Type checking is `npm run typecheck` (tsc); this step only emits, so `npm start` is ready in seconds.
const { spawnSync } = require('node:child_process');
const { rmSync, existsSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const swc = join(root, 'node_modules', '.bin', 'swc');
if (!existsSync(swc)) {
  console.error('build: @swc/cli is not installed; run `npm ci` first.');
  process.exit(1);
}
rmSync(join(root, 'dist'), { recursive: true, force: true });
const started = Date.now();
const r = spawnSync(
  swc,
  ['apps', 'libs', '-d', 'dist', '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '--copy-files', '--quiet'],
  { cwd: root, stdio: 'inherit' },
);
if (r.status !== 0) process.exit(r.status ?? 1);
console.log(`build: dist/ ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
