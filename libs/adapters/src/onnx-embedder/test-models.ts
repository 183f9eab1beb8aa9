/**
 * For specs only: makes sure real models are in the workspace's `.models/` (git-ignored, reused across
 * runs) by running the fetch script, which skips models already present and verified.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';

export const REPO_ROOT = resolve(__dirname, '../../../..');
export const TEST_MODELS_DIR = process.env.RAG_TEST_MODELS_DIR ?? resolve(REPO_ROOT, '.models');

export function ensureTestModels(names: string[], dir: string = TEST_MODELS_DIR): void {
  const script = resolve(REPO_ROOT, 'scripts/models/fetch.js');
  const r = spawnSync(process.execPath, [script, ...names, '--dir', dir], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 15 * 60_000,
  });
  if (r.status !== 0) {
    throw new Error(`node scripts/models/fetch.js ${names.join(' ')} --dir ${dir} failed (status ${r.status}, ${r.error?.message ?? 'see stderr'})`);
  }
}

export function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / (Math.sqrt(na) * Math.sqrt(nb));
}

export function norm(v: Float32Array): number {
  let s = 0;
  for (const x of v) s += x * x;
  return Math.sqrt(s);
}
