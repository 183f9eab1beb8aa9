/**
 * Shared plumbing for the adapters that run ONNX models through transformers.js from a local folder
 * (the layout written by `scripts/models/fetch.js`): remote loading off, one loading lock for the
 * library's global `env`, manifest parsing, pooling and truncation helpers.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AppError } from '@rag/platform';

type TransformersModule = typeof import('@huggingface/transformers');
export type LoadedTokenizer = Awaited<ReturnType<TransformersModule['AutoTokenizer']['from_pretrained']>>;
export type LoadedModel = Awaited<ReturnType<TransformersModule['AutoModel']['from_pretrained']>>;

/** The part of a transformers.js Tensor the adapters read. */
export interface TensorView {
  readonly dims: readonly number[];
  readonly data: unknown;
}

/** What a tokenizer call with `return_tensor` (the default) gives back. */
export interface EncodedBatch {
  input_ids: TensorView;
  attention_mask: TensorView;
  token_type_ids?: TensorView;
}

export const MANIFEST_FILE = 'rag-model.json';

export const ModelManifestSchema = z.object({
  name: z.string().min(1),
  kind: z.enum(['embedding', 'cross-encoder']).default('embedding'),
  dim: z.number().int().positive().optional(),
  pooling: z.enum(['mean', 'cls']).optional(),
  normalize: z.boolean().default(true),
  queryPrefix: z.string().default(''),
  passagePrefix: z.string().default(''),
  maxLength: z.number().int().positive().optional(),
  dtype: z.enum(['fp32', 'fp16', 'q8', 'int8', 'uint8', 'q4', 'q4f16', 'bnb4']).default('fp32'),
  onnxFile: z.string().optional(),
});
export type ModelManifest = z.infer<typeof ModelManifestSchema>;

const ConfigSchema = z.object({
  model_type: z.string(),
  hidden_size: z.number().int().positive().optional(),
  max_position_embeddings: z.number().int().positive().optional(),
});

export interface ModelFolder {
  /** Absolute path of the models directory (what `env.localModelPath` is set to). */
  modelsDir: string;
  /** The folder's name inside `modelsDir` (what `from_pretrained` is given). */
  folderName: string;
  path: string;
  /** Parsed `rag-model.json`, or undefined when the folder has none (e.g. a copy from the Hugging Face hub). */
  manifest?: ModelManifest;
  config: z.infer<typeof ConfigSchema>;
  /** The ONNX variant to load: the manifest's, else fp32 when `onnx/model.onnx` exists, else q8 when only the quantized file does. */
  dtype: ModelManifest['dtype'];
}

/** The folder of `name` in `modelsDir` holding a config.json (as given, then lower-cased), if any. */
export function findModelFolderName(modelsDir: string, name: string): string | undefined {
  const dir = resolve(modelsDir);
  return [...new Set([name, name.toLowerCase()])].find((c) => existsSync(join(dir, c, 'config.json')));
}

/**
 * Finds `<modelsDir>/<name>` (as given, then lower-cased: config says `all-MiniLM-L6-v2`, the fetch
 * script writes `all-minilm-l6-v2`) and reads its manifest and config. Throws a clear `unavailable`
 * error naming the fetch command when the folder or its ONNX file is missing.
 */
export function locateModelFolder(modelsDir: string, name: string, what: string, fetchHint: string): ModelFolder {
  const dir = resolve(modelsDir);
  const folderName = findModelFolderName(dir, name);
  if (!folderName) {
    throw new AppError(
      'unavailable',
      `${what} "${name}" is not installed: ${join(dir, name.toLowerCase())} does not exist or has no config.json. ${fetchHint}`,
      { modelsDir: dir, name },
    );
  }
  const path = join(dir, folderName);
  let manifest: ModelManifest | undefined;
  const manifestPath = join(path, MANIFEST_FILE);
  if (existsSync(manifestPath)) {
    const parsed = ModelManifestSchema.safeParse(JSON.parse(readFileSync(manifestPath, 'utf8')));
    if (!parsed.success) {
      throw new AppError('unavailable', `${manifestPath} is not a valid model manifest: ${parsed.error.message}`);
    }
    manifest = parsed.data;
  }
  const config = ConfigSchema.safeParse(JSON.parse(readFileSync(join(path, 'config.json'), 'utf8')));
  if (!config.success) {
    throw new AppError('unavailable', `${join(path, 'config.json')} has no model_type: ${config.error.message}`);
  }
  const dtype =
    manifest?.dtype ??
    (!existsSync(join(path, onnxFileFor('fp32'))) && existsSync(join(path, onnxFileFor('q8'))) ? 'q8' : 'fp32');
  for (const file of ['tokenizer.json', 'tokenizer_config.json', onnxFileFor(dtype)]) {
    if (!existsSync(join(path, file))) {
      throw new AppError('unavailable', `${what} "${name}" in ${path} is incomplete: ${file} is missing. ${fetchHint}`);
    }
  }
  return { modelsDir: dir, folderName, path, manifest, config: config.data, dtype };
}

/** The file transformers.js opens for a dtype (its own naming: model.onnx, model_quantized.onnx, model_fp16.onnx…). */
export function onnxFileFor(dtype: ModelManifest['dtype']): string {
  const suffix: Record<ModelManifest['dtype'], string> = {
    fp32: '',
    fp16: '_fp16',
    q8: '_quantized',
    int8: '_int8',
    uint8: '_uint8',
    q4: '_q4',
    q4f16: '_q4f16',
    bnb4: '_bnb4',
  };
  return `onnx/model${suffix[dtype]}.onnx`;
}

let transformersPromise: Promise<TransformersModule> | undefined;
let loadChain: Promise<unknown> = Promise.resolve();

/** Imports transformers.js once, lazily (ONNX Runtime is not loaded by adapters that never use it). */
export function transformers(): Promise<TransformersModule> {
  transformersPromise ??= import('@huggingface/transformers').then((t) => {
    t.env.allowRemoteModels = false;
    t.env.allowLocalModels = true;
    return t;
  });
  return transformersPromise;
}

/**
 * Runs `fn` with transformers.js pointed at `modelsDir` (remote loading off). `env` is global to the
 * library, so loads are serialised: two adapters with different model directories never race.
 */
export function withLocalModels<T>(modelsDir: string, fn: (t: TransformersModule) => Promise<T>): Promise<T> {
  const run = loadChain.then(async () => {
    const t = await transformers();
    t.env.allowRemoteModels = false;
    t.env.localModelPath = modelsDir.endsWith('/') ? modelsDir : `${modelsDir}/`;
    return fn(t);
  });
  loadChain = run.catch(() => undefined);
  return run;
}

/**
 * The runs a batch of texts is cut into: indices, longest text first, `batchSize` per run, so each run pads to a similar
 * length (OnnxEmbedder, CrossEncoderReranker, and the worker's embedder, which must cut the same runs to give the same
 * vectors). Results go back to input order by these indices.
 */
export function longestFirstRuns(texts: string[], batchSize: number): number[][] {
  const order = texts.map((_, i) => i).sort((a, b) => texts[b]!.length - texts[a]!.length);
  const runs: number[][] = [];
  for (let start = 0; start < order.length; start += batchSize) runs.push(order.slice(start, start + batchSize));
  return runs;
}

/** Serialises work on one ONNX session: batches run one after another, so a query waits for at most one batch. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.tail.then(fn, fn);
    this.tail = next.catch(() => undefined);
    return next;
  }
}

/** Calls a transformers.js tokenizer (its call signature is untyped) and returns the typed tensors. */
export function encodeBatch(
  tokenizer: LoadedTokenizer,
  texts: string[],
  options: { textPair?: string[]; maxLength: number },
): EncodedBatch {
  const call = tokenizer as unknown as (
    text: string[],
    opts: { text_pair?: string[]; padding: boolean; truncation: boolean; max_length: number },
  ) => EncodedBatch;
  return call(texts, {
    ...(options.textPair ? { text_pair: options.textPair } : {}),
    padding: true,
    truncation: true,
    max_length: options.maxLength,
  });
}

/** Number of tokens a single text (or pair) gets from the tokenizer's special-token template. */
export function specialTokenCount(tokenizer: LoadedTokenizer, pair: boolean): number {
  return pair ? tokenizer.encode('', { text_pair: '' }).length : tokenizer.encode('').length;
}

/**
 * Shortens `text` so that it fits `budget` tokens (special tokens excluded). transformers.js truncates by
 * cutting the end of the id list, which drops the closing [SEP]; trimming the text first keeps the
 * template intact for the few inputs that are too long.
 */
export function truncateToTokens(tokenizer: LoadedTokenizer, text: string, budget: number): string {
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  if (ids.length <= budget) return text;
  return tokenizer.decode(ids.slice(0, Math.max(0, budget)), { skip_special_tokens: true });
}

/** Pair version of `truncateToTokens` with the "longest first" strategy: the longer side loses tokens first. */
export function truncatePair(tokenizer: LoadedTokenizer, a: string, b: string, budget: number): [string, string] {
  const ia = tokenizer.encode(a, { add_special_tokens: false });
  const ib = tokenizer.encode(b, { add_special_tokens: false });
  if (ia.length + ib.length <= budget) return [a, b];
  let la = ia.length;
  let lb = ib.length;
  while (la + lb > budget) {
    if (lb >= la) lb--;
    else la--;
  }
  const cut = (ids: number[], n: number, original: string) =>
    n === ids.length ? original : tokenizer.decode(ids.slice(0, n), { skip_special_tokens: true });
  return [cut(ia, la, a), cut(ib, lb, b)];
}

export function toFloat32(t: TensorView, what: string): Float32Array {
  if (t.data instanceof Float32Array) return t.data;
  throw new AppError('internal', `${what}: expected float32 output, got ${Object.prototype.toString.call(t.data)}`);
}

/** Attention mask values as numbers (transformers.js gives int64 as BigInt64Array). */
export function maskValues(t: TensorView): ArrayLike<number> {
  const d = t.data;
  if (d instanceof BigInt64Array) return Array.from(d, (v) => Number(v));
  if (ArrayBuffer.isView(d)) return d as unknown as ArrayLike<number>;
  if (Array.isArray(d)) return d as number[];
  throw new AppError('internal', 'attention_mask has an unexpected data type');
}

/** Pools a [batch, tokens, dim] hidden-state tensor into one vector per row (mean over the mask, or [CLS]). */
export function poolHidden(
  hidden: Float32Array,
  dims: readonly number[],
  mask: ArrayLike<number>,
  mode: 'mean' | 'cls',
): Float32Array[] {
  const [batch, tokens, dim] = dims;
  const out: Float32Array[] = [];
  for (let b = 0; b < batch; b++) {
    const v = new Float32Array(dim);
    const rowBase = b * tokens * dim;
    if (mode === 'cls') {
      v.set(hidden.subarray(rowBase, rowBase + dim));
    } else {
      let count = 0;
      for (let t = 0; t < tokens; t++) {
        if (!mask[b * tokens + t]) continue;
        count++;
        const off = rowBase + t * dim;
        for (let d = 0; d < dim; d++) v[d] += hidden[off + d];
      }
      if (count > 0) for (let d = 0; d < dim; d++) v[d] /= count;
    }
    out.push(v);
  }
  return out;
}

/** L2-normalises in place; a zero vector stays zero. */
export function l2normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}
