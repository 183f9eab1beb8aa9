#!/usr/bin/env node
// Transpiles apps/ and libs/ to CommonJS under dist/ with SWC (decorator metadata on, @rag/* aliases rewritten).
// Type checking is `npm run typecheck` (tsc); this step only emits, so `npm start` is ready in seconds.
const { spawnSync } = require('node:child_process');
const { rmSync, existsSync } = require('node:fs');
const { join, resolve, sep } = require('node:path');

const root = join(__dirname, '..');
const swc = join(root, 'node_modules', '.bin', 'swc');
if (!existsSync(swc)) {
  console.error('build: @swc/cli is not installed; run `npm ci` first.');
  process.exit(1);
}
// RAG_DIST_DIR builds elsewhere (e.g. <repo>/tmp/<name>-dist, so a test run does not rewrite the dist/ others run
// from); it must stay inside the repository so the output resolves node_modules.
const out = process.env.RAG_DIST_DIR ? resolve(process.env.RAG_DIST_DIR) : join(root, 'dist');
if (out === root || !out.startsWith(root + sep)) {
  console.error(`build: RAG_DIST_DIR must be a folder inside ${root}`);
  process.exit(1);
}
rmSync(out, { recursive: true, force: true });
const started = Date.now();
const r = spawnSync(
  swc,
  // apps/console is the browser app: Vite bundles it below, not SWC.
  ['apps', 'libs', '-d', out, '--config-file', '.swcrc', '--ignore', '**/*.spec.ts', '--ignore', 'apps/console/**', '--copy-files', '--quiet'],
  { cwd: root, stdio: 'inherit' },
);
if (r.status !== 0) process.exit(r.status ?? 1);
// The web console (Preact + Vite): static files in <out>/console, served by the gateway at `/`.
const vite = join(root, 'node_modules', '.bin', 'vite');
const v = spawnSync(vite, ['build', '--config', 'apps/console/vite.config.ts', '--outDir', join(out, 'console'), '--emptyOutDir', '--logLevel', 'warn'], {
  cwd: root,
  stdio: 'inherit',
});
if (v.status !== 0) process.exit(v.status ?? 1);
console.log(`build: ${out === join(root, 'dist') ? 'dist/' : out} ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
