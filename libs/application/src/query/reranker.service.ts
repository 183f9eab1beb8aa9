import type { Degraded, ScoredChunk } from '@rag/contracts';
import { Logger } from '@rag/platform';
import type { Reranker } from '@rag/ports';
import type { RerankCall } from './query-path';

/** Orders candidates with the configured reranker; without one (or when it fails) they pass through, degraded. */
export class RerankerService implements RerankCall {
  private readonly log = new Logger('reranker');
  constructor(private readonly reranker: Reranker | null) {}

  get available(): boolean {
    return this.reranker !== null;
  }

  async rerank(query: string, candidates: ScoredChunk[], topN: number): Promise<{ results: ScoredChunk[]; degraded: Degraded[] }> {
    if (!this.reranker) return { results: candidates.slice(0, topN), degraded: ['reranker'] };
    if (candidates.length === 0) return { results: [], degraded: [] };
    try {
      return { results: await this.reranker.rerank(query, candidates, topN), degraded: [] };
    } catch (e) {
      this.log.warn('reranker failed; keeping the fused order', { error: String(e) });
      return { results: candidates.slice(0, topN), degraded: ['reranker'] };
    }
  }
}
