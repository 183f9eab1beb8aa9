import type { ScoredChunk } from '@rag/contracts';

export interface Reranker {
  readonly id: string;
  /** Reorders candidates by relevance to the query; returns at most topN with new scores (higher is better). */
  rerank(query: string, candidates: ScoredChunk[], topN: number): Promise<ScoredChunk[]>;
}
export const RERANKER = Symbol('RERANKER');
