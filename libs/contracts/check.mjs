#!/usr/bin/env node
// `npm run contracts:check` (part of `npm test`): the committed generated code and the wire contract stay honest.
// 1. Regenerates src/generated from src/proto into a temp folder (same buf.gen.yaml) and fails on any difference:
//    nothing generated is committed that this check does not regenerate and compare.
// 2. buf lint.
// 3. buf breaking against main (a branch's `main`, else `origin/main`; on main itself or a checkout with neither — a
//    detached CI checkout — against origin/main or HEAD~1, else skipped with a message): a renamed, renumbered or
//    retyped field fails here.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const buf = join(here, '..', '..', 'node_modules', '.bin', 'buf');
const run = (cmd, args) => spawnSync(cmd, args, { cwd: here, encoding: 'utf8' });
const fail = (msg) => {
  console.error(`contracts:check: ${msg}`);
  process.exit(1);
};

// 1. generated code == what buf generates now
const out = mkdtempSync(join(tmpdir(), 'rag-contracts-'));
try {
  const gen = run(buf, ['generate', '--output', out]);
  if (gen.status !== 0) fail(`buf generate failed:\n${gen.stderr}${gen.stdout}`);
  const committed = join(here, 'src', 'generated');
  const fresh = join(out, 'src', 'generated');
  const list = (d) => (existsSync(d) ? readdirSync(d, { recursive: true }).map(String).sort() : []);
  const a = list(committed);
  const b = list(fresh);
  if (a.join('\n') !== b.join('\n')) fail(`src/generated holds [${a.join(', ')}] but buf generates [${b.join(', ')}]: run \`npm run contracts:gen\``);
  for (const f of a) {
    if (!readFileSync(join(committed, f)).equals(readFileSync(join(fresh, f)))) fail(`src/generated/${f} differs from what buf generates: run \`npm run contracts:gen\` (never edit it by hand)`);
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

// 2. lint
const lint = run(buf, ['lint']);
if (lint.status !== 0) fail(`buf lint:\n${lint.stdout}${lint.stderr}`);

// 3. breaking against main
const git = (...args) => run('git', args);
const gitDir = git('rev-parse', '--path-format=absolute', '--git-common-dir').stdout?.trim();
if (!gitDir) {
  console.log('contracts:check: not a git checkout: buf breaking skipped');
  process.exit(0);
}
const subdir = git('rev-parse', '--show-prefix').stdout.trim().replace(/\/$/, '');
const commit = (ref) => {
  const r = git('rev-parse', '--verify', '--quiet', `${ref}^{commit}`);
  return r.status === 0 ? r.stdout.trim() : undefined;
};
// On main itself (HEAD is main: comparing with it would only see uncommitted edits) the upstream, else the parent.
const onMain = commit('HEAD') !== undefined && commit('HEAD') === commit('main');
const against = (onMain ? ['origin/main', 'HEAD~1'] : ['main', 'origin/main', 'HEAD~1']).find((ref) => commit(ref) !== undefined && commit(ref) !== commit('HEAD'));
if (!against) {
  console.log('contracts:check: no main, origin/main or HEAD~1 to compare with: buf breaking skipped');
  process.exit(0);
}
if (git('cat-file', '-e', `${against}:${subdir}/buf.yaml`).status !== 0) {
  console.log(`contracts:check: ${against} has no ${subdir}/buf.yaml: buf breaking skipped`);
  process.exit(0);
}
const breaking = run(buf, ['breaking', '--against', `${gitDir}#ref=${against},subdir=${subdir}`]);
if (breaking.status !== 0) fail(`buf breaking against ${against}:\n${breaking.stdout}${breaking.stderr}`);
console.log(`contracts:check: generated code up to date, buf lint clean, no breaking change against ${against}`);
