import type { ScoredChunk } from '@rag/contracts';
import type { Reranker } from '@rag/ports';
import { AppError, Logger } from '@rag/platform';
import { failure, OnnxWorkerHost } from '../onnx-embedder/worker-onnx-embedder';
import { pairPassages, rankByLogits, rerankCount, type CrossEncoderRerankerOptions } from './cross-encoder.adapter';

/**
 * The cross-encoder (CrossEncoderReranker) in the process's ONNX worker thread (OnnxWorkerHost), beside the embedding
 * models: in-process its runs held the event loop for the whole rerank (≈ 100 candidates a question), and ONNX
 * Runtime's Node binding cannot serve a second thread, so the reranker shares the embedders' one. Same scores and order
 * (the worker computes the logits with CrossEncoderReranker; the ranking is the same function); a rerank goes before
 * waiting passage runs, like a query's embedding.
 */
export class WorkerCrossEncoderReranker implements Reranker {
  private closed = false;

  private constructor(
    private readonly host: OnnxWorkerHost,
    private readonly key: string,
    readonly id: string,
    readonly maxLength: number,
    private readonly settings: { score: 'sigmoid' | 'logit'; includeTitle: boolean },
  ) {}

  /** Loads the model in the worker; fails as CrossEncoderReranker.create does (same codes and messages). */
  static async create(options: CrossEncoderRerankerOptions): Promise<WorkerCrossEncoderReranker> {
    const { logger, ...rest } = options;
    const host = OnnxWorkerHost.shared();
    const info = await host.loadReranker(rest);
    (logger ?? new Logger('cross-encoder')).info('cross-encoder runs in the ONNX worker thread', { reranker: info.id });
    return new WorkerCrossEncoderReranker(host, info.key, info.id, info.maxLength, { score: options.score ?? 'sigmoid', includeTitle: options.includeTitle ?? false });
  }

  async rerank(query: string, candidates: ScoredChunk[], topN: number): Promise<ScoredChunk[]> {
    if (this.closed) throw new AppError('unavailable', `${this.id} is closed`);
    const n = rerankCount(topN, candidates.length);
    if (n === 0) return [];
    const r = await this.host.run({ op: 'logits', key: this.key, query, passages: pairPassages(candidates, this.settings.includeTitle) });
    if (!r.ok || !('logits' in r)) throw failure(r, 'logits');
    return rankByLogits(candidates, r.logits, n, this.settings.score);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.host.release(this.key);
  }
}
