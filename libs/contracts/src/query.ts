import type { Degraded } from './api';
import type * as RagV1 from './generated/rag';

/**
 * A chunk found by retrieval, with the context the generator needs: the wire message (rag.proto ScoredChunk) with
 * explicit presence for the two optional texts. proto3 scalars have implicit presence ('' on the wire = absent), and
 * declaring them `optional` in the .proto would break the published FILE-level contract (buf breaking), so the
 * presence is restored on the edge (grpc-mapping fromWireChunk/toWireChunk).
 */
export type ScoredChunk = Omit<RagV1.ScoredChunk, 'parent_text' | 'source_url' | 'context'> & {
  /** Parent chunk text when parent-child chunking is on; otherwise the chunk text itself. */
  parent_text?: string;
  source_url?: string;
  /** The LLM-written context of the chunk (contextual retrieval), when it has one. */
  context?: string;
};

/** Retrieve's answer: the wire RetrieveResponse with chunks as above and `degraded` narrowed to the known parts. */
export type RetrievalResult = Omit<RagV1.RetrieveResponse, 'results' | 'degraded'> & {
  results: ScoredChunk[];
  degraded: Degraded[];
};
