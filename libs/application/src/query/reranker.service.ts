import type { Degraded, ScoredChunk } from '@rag/contracts';
import { inStage, Logger, setSpanAttributes } from '@rag/platform';
import type { Reranker } from '@rag/ports';
import type { RerankCall } from './query-path';

/** Orders candidates with the configured reranker; without one (or when it fails) they pass through, degraded. */
export class RerankerService implements RerankCall {
  private readonly log = new Logger('reranker');
  constructor(private readonly reranker: Reranker | null) {}

  get available(): boolean {
    return this.reranker !== null;
  }

  rerank(query: string, candidates: ScoredChunk[], topN: number): Promise<{ results: ScoredChunk[]; degraded: Degraded[] }> {
    const attributes = { 'rag.candidates': candidates.length, 'rag.top_n': topN, 'rag.reranker.model': this.reranker?.id ?? 'none' };
    return inStage('rerank', attributes, async () => {
      if (!this.reranker) {
        setSpanAttributes({ 'rag.degraded': 'reranker' });
        return { results: candidates.slice(0, topN), degraded: ['reranker'] };
      }
      if (candidates.length === 0) return { results: [], degraded: [] };
      try {
        return { results: await this.reranker.rerank(query, candidates, topN), degraded: [] };
      } catch (e) {
        this.log.warn('reranker failed; keeping the fused order', { error: String(e) });
        setSpanAttributes({ 'rag.degraded': 'reranker' });
        return { results: candidates.slice(0, topN), degraded: ['reranker'] };
      }
    });
  }
}
