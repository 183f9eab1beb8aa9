import type { ScoredChunk } from '@rag/contracts';
import type { Reranker } from '@rag/ports';
import { AppError, Logger } from '@rag/platform';
import {
  type LoadedTokenizer,
  SerialQueue,
  encodeBatch,
  locateModelFolder,
  longestFirstRuns,
  specialTokenCount,
  toFloat32,
  truncatePair,
  transformers,
  withLocalModels,
} from '../onnx-embedder/transformers-runtime';

type TransformersModule = Awaited<ReturnType<typeof transformers>>;
type LoadedClassifier = Awaited<ReturnType<TransformersModule['AutoModelForSequenceClassification']['from_pretrained']>>;

export interface CrossEncoderRerankerOptions {
  /** Folder holding one sub-folder per model (e.g. `./.models`). */
  modelsDir: string;
  /** Model folder, e.g. `ms-marco-MiniLM-L-6-v2` (case-insensitive): transformers.js layout, `onnx/model.onnx`. */
  name: string;
  /** (query, passage) pairs per ONNX run (default 16). */
  batchSize?: number;
  /** Token limit of one pair (default: the manifest's, else the tokenizer's, at most 512). */
  maxLength?: number;
  /** ONNX Runtime intra-op threads (default: ONNX Runtime's choice). */
  threads?: number;
  /**
   * What `score` holds: `sigmoid` (default) maps the logit to (0, 1), a scale a relevance threshold and a
   * UI can use; `logit` keeps the raw model output. The order is the same either way.
   */
  score?: 'sigmoid' | 'logit';
  /** Score `title + "\n" + text` instead of the text alone (default false). */
  includeTitle?: boolean;
  logger?: Logger;
}

const FETCH_HINT =
  'No reachable package registry ships a cross-encoder: with access to the Hugging Face hub run ' +
  '`npm run models:fetch -- ms-marco-MiniLM-L-6-v2`, or copy a transformers.js model folder ' +
  '(config.json, tokenizer.json, tokenizer_config.json, onnx/model.onnx) there.';

/**
 * Reranks with a cross-encoder (e.g. ms-marco-MiniLM-L-6-v2, bge-reranker) run by transformers.js
 * from a local folder: each (query, passage) pair is encoded together, the model's logit is the
 * relevance (for two-label heads, logit[1] − logit[0]), candidates are sorted by it (stable for ties)
 * and the best `topN` come back with the new score.
 */
export class CrossEncoderReranker implements Reranker {
  readonly id: string;
  readonly maxLength: number;
  private readonly pairSpecialTokens: number;
  private readonly queue = new SerialQueue();

  private constructor(
    readonly name: string,
    private readonly tokenizer: LoadedTokenizer,
    private readonly model: LoadedClassifier,
    private readonly settings: { batchSize: number; maxLength: number; score: 'sigmoid' | 'logit'; includeTitle: boolean },
  ) {
    this.id = `cross-encoder:${name}`;
    this.maxLength = settings.maxLength;
    this.pairSpecialTokens = specialTokenCount(tokenizer, true);
  }

  static async create(options: CrossEncoderRerankerOptions): Promise<CrossEncoderReranker> {
    const log = options.logger ?? new Logger('cross-encoder');
    const folder = locateModelFolder(options.modelsDir, options.name, 'Cross-encoder model', FETCH_HINT);
    if (folder.manifest && folder.manifest.kind !== 'cross-encoder') {
      throw new AppError('invalid_request', `${folder.path} holds an ${folder.manifest.kind} model, not a cross-encoder`);
    }
    const batchSize = options.batchSize ?? 16;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new AppError('invalid_request', `batchSize must be a positive integer, got ${batchSize}`);
    const started = Date.now();
    const { tokenizer, model } = await withLocalModels(folder.modelsDir, async (t) => ({
      tokenizer: await t.AutoTokenizer.from_pretrained(folder.folderName, { local_files_only: true }),
      model: await t.AutoModelForSequenceClassification.from_pretrained(folder.folderName, {
        local_files_only: true,
        device: 'cpu',
        dtype: folder.dtype,
        ...(options.threads ? { session_options: { intraOpNumThreads: options.threads, interOpNumThreads: 1 } } : {}),
      }),
    }));
    const tokMax = typeof tokenizer.model_max_length === 'number' ? tokenizer.model_max_length : Infinity;
    const maxLength = Math.min(options.maxLength ?? folder.manifest?.maxLength ?? 512, tokMax, folder.config.max_position_embeddings ?? Infinity);
    const reranker = new CrossEncoderReranker(folder.manifest?.name ?? folder.folderName, tokenizer, model, {
      batchSize,
      maxLength,
      score: options.score ?? 'sigmoid',
      includeTitle: options.includeTitle ?? false,
    });
    await reranker.logits('probe', ['probe']); // fails now, not on the first query, when the graph has no logits
    log.info('cross-encoder loaded', { reranker: reranker.id, dtype: folder.dtype, maxLength, batchSize, ms: Date.now() - started });
    return reranker;
  }

  async rerank(query: string, candidates: ScoredChunk[], topN: number): Promise<ScoredChunk[]> {
    const n = rerankCount(topN, candidates.length);
    if (n === 0) return [];
    return rankByLogits(candidates, await this.logits(query, pairPassages(candidates, this.settings.includeTitle)), n, this.settings.score);
  }

  /** Pairs per ONNX run. */
  get batchSize(): number {
    return this.settings.batchSize;
  }

  /** Raw relevance logits of (query, passage) pairs, in passage order. */
  async logits(query: string, passages: string[]): Promise<number[]> {
    const out = new Array<number>(passages.length);
    // Longest passages together, so batches pad little.
    for (const idx of longestFirstRuns(passages, this.settings.batchSize)) {
      const scores = await this.queue.run(() => this.runBatch(query, idx.map((i) => passages[i])));
      idx.forEach((i, k) => (out[i] = scores[k]));
    }
    return out;
  }

  async close(): Promise<void> {
    await this.queue.run(() => this.model.dispose());
  }

  private async runBatch(query: string, passages: string[]): Promise<number[]> {
    const budget = this.maxLength - this.pairSpecialTokens;
    const pairs = passages.map((p) => (query.length + p.length > budget ? truncatePair(this.tokenizer, query, p, budget) : [query, p]));
    const enc = encodeBatch(
      this.tokenizer,
      pairs.map(([q]) => q),
      { textPair: pairs.map(([, p]) => p), maxLength: this.maxLength },
    );
    const output = (await this.model(enc)) as { logits?: { dims: number[]; data: unknown } };
    if (!output.logits) throw new AppError('internal', `${this.id}: the model gave no logits output`);
    const data = toFloat32(output.logits, this.id);
    const [rows, labels] = output.logits.dims;
    if (rows !== passages.length || !(labels === 1 || labels === 2)) {
      throw new AppError('internal', `${this.id}: logits of shape [${output.logits.dims.join(', ')}] for ${passages.length} pairs; expected [n, 1] or [n, 2]`);
    }
    return Array.from({ length: rows }, (_, r) => (labels === 1 ? data[r] : data[r * 2 + 1] - data[r * 2]));
  }
}

/** How many candidates a rerank returns: topN, within 0 and the candidates. */
export function rerankCount(topN: number, candidates: number): number {
  return Math.max(0, Math.min(Math.floor(topN), candidates));
}

/** The passage each candidate is scored as: its text, or `title + "\n" + text` with `includeTitle`. */
export function pairPassages(candidates: ScoredChunk[], includeTitle: boolean): string[] {
  return candidates.map((c) => (includeTitle && c.title && !c.text.startsWith(c.title) ? `${c.title}\n${c.text}` : c.text));
}

/** The best `n` candidates by logit (stable for ties), each with the new score. */
export function rankByLogits(candidates: ScoredChunk[], logits: number[], n: number, score: 'sigmoid' | 'logit'): ScoredChunk[] {
  return candidates
    .map((c, i) => ({ c, i, logit: logits[i]! }))
    .sort((a, b) => b.logit - a.logit || a.i - b.i)
    .slice(0, n)
    .map(({ c, logit }) => ({ ...c, score: score === 'sigmoid' ? sigmoid(logit) : logit }));
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}
