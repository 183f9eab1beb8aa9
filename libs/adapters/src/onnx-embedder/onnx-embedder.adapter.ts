import type { EmbedInputType, Embedder } from '@rag/ports';
import { AppError, Logger } from '@rag/platform';
import {
  type LoadedModel,
  type LoadedTokenizer,
  type ModelFolder,
  SerialQueue,
  encodeBatch,
  l2normalize,
  longestFirstRuns,
  locateModelFolder,
  maskValues,
  poolHidden,
  specialTokenCount,
  toFloat32,
  truncateToTokens,
  withLocalModels,
} from './transformers-runtime';

export interface OnnxEmbedderOptions {
  /** Folder holding one sub-folder per model, as laid out by `npm run models:fetch` (e.g. `./.models`). */
  modelsDir: string;
  /** Model folder name, e.g. `all-minilm-l6-v2`, `bge-small-zh-v1.5`, `e5-small-v2-q` (case-insensitive). */
  name: string;
  /** Texts per ONNX run (default 8: on a 2-core CPU batch 8 embedded as fast as or faster than 32). */
  batchSize?: number;
  /** ONNX Runtime intra-op threads (default: ONNX Runtime's choice, all cores). */
  threads?: number;
  /** Overrides for folders without a `rag-model.json` (or to change its settings). */
  pooling?: 'mean' | 'cls';
  queryPrefix?: string;
  passagePrefix?: string;
  maxLength?: number;
  logger?: Logger;
}

/** Model id and dimension of a located folder: the manifest's, else the folder name and the config's width. */
const spaceOf = (folder: ModelFolder): { modelId: string; dim: number } => ({
  modelId: `onnx:${folder.manifest?.name ?? folder.folderName}`,
  dim: folder.manifest?.dim ?? folder.config.hidden_size ?? 0,
});

const FETCH_HINT = 'Run `npm run models:fetch -- <name>` (or `node scripts/models/fetch.js <name> --dir <modelsDir>`) first.';

/**
 * Embeds with an ONNX sentence-embedding model through transformers.js, fully offline: the model is
 * read from `<modelsDir>/<name>/` (remote loading off). Pooling, normalisation and the query/passage
 * prefixes (e5's `query: `/`passage: `, bge's retrieval instruction) come from the folder's
 * `rag-model.json`. Inputs are batched (longest texts together, to pad little), truncated to the
 * model's maximum length, and returned L2-normalised in input order.
 */
export class OnnxEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  readonly batchSize: number;
  readonly maxLength: number;
  private readonly pooling: 'mean' | 'cls';
  private readonly normalize: boolean;
  private readonly queryPrefix: string;
  private readonly passagePrefix: string;
  private readonly specialTokens: number;
  private readonly queue = new SerialQueue();
  private closed = false;

  private constructor(
    readonly name: string,
    private readonly tokenizer: LoadedTokenizer,
    private readonly model: LoadedModel,
    settings: { dim: number; pooling: 'mean' | 'cls'; normalize: boolean; queryPrefix: string; passagePrefix: string; maxLength: number; batchSize: number },
  ) {
    this.modelId = `onnx:${name}`;
    this.dim = settings.dim;
    this.pooling = settings.pooling;
    this.normalize = settings.normalize;
    this.queryPrefix = settings.queryPrefix;
    this.passagePrefix = settings.passagePrefix;
    this.maxLength = settings.maxLength;
    this.batchSize = settings.batchSize;
    this.specialTokens = specialTokenCount(tokenizer, false);
  }

  /**
   * The model id and dimension `create` would give, read from the folder's manifest and config without loading
   * the model (for processes that only store or search its vectors).
   */
  static space(modelsDir: string, name: string): { modelId: string; dim: number } {
    return spaceOf(locateModelFolder(modelsDir, name, 'Embedding model', FETCH_HINT));
  }

  /**
   * Loads the model. Fails with `unavailable` and the fetch command when the folder is missing or incomplete,
   * and when the model's output dimension disagrees with its manifest.
   */
  static async create(options: OnnxEmbedderOptions): Promise<OnnxEmbedder> {
    const log = options.logger ?? new Logger('onnx-embedder');
    const folder: ModelFolder = locateModelFolder(options.modelsDir, options.name, 'Embedding model', FETCH_HINT);
    const m = folder.manifest;
    if (m && m.kind !== 'embedding') {
      throw new AppError('invalid_request', `${folder.path} holds a ${m.kind} model, not an embedding model`);
    }
    const pooling = options.pooling ?? m?.pooling;
    if (!pooling) {
      throw new AppError(
        'invalid_request',
        `${folder.path} has no rag-model.json saying how to pool; pass pooling ('mean' or 'cls') or fetch it with \`npm run models:fetch\``,
      );
    }
    const batchSize = options.batchSize ?? 8;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new AppError('invalid_request', `batchSize must be a positive integer, got ${batchSize}`);
    const dtype = folder.dtype;
    const started = Date.now();
    const { tokenizer, model } = await withLocalModels(folder.modelsDir, async (t) => {
      const tok = await t.AutoTokenizer.from_pretrained(folder.folderName, { local_files_only: true });
      const mdl = await t.AutoModel.from_pretrained(folder.folderName, {
        local_files_only: true,
        device: 'cpu',
        dtype,
        ...(options.threads ? { session_options: { intraOpNumThreads: options.threads, interOpNumThreads: 1 } } : {}),
      });
      return { tokenizer: tok, model: mdl };
    });
    const tokMax = typeof tokenizer.model_max_length === 'number' ? tokenizer.model_max_length : Infinity;
    const maxLength = Math.min(options.maxLength ?? m?.maxLength ?? 512, tokMax, folder.config.max_position_embeddings ?? Infinity);
    const name = m?.name ?? folder.folderName;
    const embedder = new OnnxEmbedder(name, tokenizer, model, {
      dim: spaceOf(folder).dim,
      pooling,
      normalize: m?.normalize ?? true,
      queryPrefix: options.queryPrefix ?? m?.queryPrefix ?? '',
      passagePrefix: options.passagePrefix ?? m?.passagePrefix ?? '',
      maxLength,
      batchSize,
    });
    // One tiny run checks the graph loads and its width matches what the manifest promised.
    const [probe] = await embedder.runBatch(['probe']);
    if (probe.length !== embedder.dim) {
      await embedder.close();
      throw new AppError('unavailable', `${folder.path}: model outputs ${probe.length} dimensions, manifest says ${embedder.dim}`);
    }
    log.info('embedding model loaded', { model: embedder.modelId, dim: embedder.dim, pooling, dtype, maxLength, batchSize, ms: Date.now() - started });
    return embedder;
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (this.closed) throw new AppError('unavailable', `${this.modelId} is closed`);
    if (texts.length === 0) return [];
    const prefix = inputType === 'query' ? this.queryPrefix : this.passagePrefix;
    const inputs = texts.map((t) => prefix + t);
    const out = new Array<Float32Array>(texts.length);
    for (const idx of longestFirstRuns(inputs, this.batchSize)) {
      const vectors = await this.queue.run(() => this.runBatch(idx.map((i) => inputs[i])));
      idx.forEach((i, k) => (out[i] = vectors[k]));
    }
    return out;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.run(() => this.model.dispose());
  }

  private async runBatch(batch: string[]): Promise<Float32Array[]> {
    const budget = this.maxLength - this.specialTokens;
    const fitted = batch.map((t) => (t.length > budget ? truncateToTokens(this.tokenizer, t, budget) : t));
    const enc = encodeBatch(this.tokenizer, fitted, { maxLength: this.maxLength });
    const output = (await this.model(enc)) as Record<string, { dims: number[]; data: unknown } | undefined>;
    const hidden = output.last_hidden_state ?? output.token_embeddings;
    if (!hidden) throw new AppError('internal', `${this.modelId}: the model gave no last_hidden_state (outputs: ${Object.keys(output).join(', ')})`);
    const vectors = poolHidden(toFloat32(hidden, this.modelId), hidden.dims, maskValues(enc.attention_mask), this.pooling);
    return this.normalize ? vectors.map(l2normalize) : vectors;
  }
}
