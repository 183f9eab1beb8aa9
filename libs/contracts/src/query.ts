import type { Degraded } from './api';

/** A chunk found by retrieval, with the context the generator needs. */
export interface ScoredChunk {
  chunk_id: string;
  document_id: string;
  title: string;
  text: string;
  score: number;
  /** Parent chunk text when parent-child chunking is on; otherwise the chunk text itself. */
  parent_text?: string;
  source_url?: string;
  heading_path: string[];
}

export interface RetrievalResult {
  results: ScoredChunk[];
  degraded: Degraded[];
  timings_ms: Record<string, number>;
}
