import type { Degraded, Filters, RetrievalResult, ScoredChunk, SearchMode, SearchScope } from '@rag/contracts';

/**
 * The four calls of the query path. Embedded, they are direct calls to the services below; distributed,
 * the gateway binds them to gRPC clients of the embedder, retriever, reranker and generator processes.
 */
export interface QueryEmbeddingCall {
  embedQuery(text: string, signal?: AbortSignal): Promise<Float32Array>;
}

export interface RetrieveCall {
  retrieve(req: RetrieveRequest, signal?: AbortSignal): Promise<RetrievalResult>;
}

export interface RerankCall {
  /** `available` is false when no reranker is configured: candidates pass through. */
  readonly available: boolean;
  rerank(query: string, candidates: ScoredChunk[], topN: number, signal?: AbortSignal): Promise<{ results: ScoredChunk[]; degraded: Degraded[] }>;
}

export interface GenerateCall {
  generate(question: string, sources: ScoredChunk[], onDelta?: (text: string) => void, signal?: AbortSignal): Promise<GenerationResult>;
}

export interface RetrieveRequest {
  query: string;
  /** The query embedding; absent when dense search is not wanted or the embedder failed. */
  vector?: Float32Array;
  top_k: number;
  /** Candidates taken from each search before fusion. */
  candidates: number;
  filters?: Filters;
  mode: SearchMode;
  scope: SearchScope;
}

export interface GenerationResult {
  answer: string;
  refused: boolean;
  /** 1-based refs into `sources`, in order of first citation. */
  cited_refs: number[];
  degraded: Degraded[];
  /** Evidence score used by the refusal gate. */
  evidence: number;
}
