import type { Degraded, Filters, RagV1, RetrievalResult, ScoredChunk, SearchMode, SearchScope } from '@rag/contracts';

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

/**
 * Retrieve's input as the use case takes it. On the wire (rag.proto RetrieveRequest) filters travel as JSON
 * (`filters_json`: typed values proto3 has no type for), the vector as a float list and "unrestricted" as a flag,
 * so the gRPC edge converts and validates (libs/services grpc-mapping); everything else is the same fields.
 */
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

/**
 * The outcome of Generate: the final GenerateChunk of rag.proto (answer, refused, cited_refs — 1-based refs into
 * `sources` in order of first citation —, evidence — the refusal gate's score —, statements — the verified claims) with `degraded` narrowed to the known
 * parts. One definition: a field renamed in the .proto breaks every use here at compile time.
 */
export type GenerationResult = Pick<RagV1.GenerateChunk, 'answer' | 'refused' | 'cited_refs' | 'evidence' | 'statements'> & { degraded: Degraded[] };
