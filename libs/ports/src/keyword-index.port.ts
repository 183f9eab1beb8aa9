import type { Chunk, Filters, SearchScope } from '@rag/contracts';
import type { DocumentDelete } from './vector-store.port';

export interface KeywordHit {
  chunk_id: string;
  document_id: string;
  version: number;
  /** BM25 score (higher is better). */
  score: number;
}

export interface KeywordSearchRequest {
  query: string;
  k: number;
  scope: SearchScope;
  filters?: Filters;
}

export interface KeywordIndex {
  /** Upsert chunks by chunk_id (idempotent). Children are searchable; parents are stored for expansion only. */
  upsert(chunks: Chunk[]): Promise<void>;
  /** BM25 search over child chunks; tenant, ACL and filters are applied inside the query. */
  search(req: KeywordSearchRequest): Promise<KeywordHit[]>;
  /** Fetch stored chunks (children or parents) by id; unknown ids are skipped. */
  getChunks(chunkIds: string[]): Promise<Chunk[]>;
  /** Deletes the document's chunks whose version is not `keepVersion` (all of them when undefined). */
  deleteDocument(documentId: string, keepVersion?: number): Promise<number>;
  /** Several {@link deleteDocument}s in one request (bulk ingestion), where the engine can; rows removed in all. */
  deleteDocuments?(documents: DocumentDelete[]): Promise<number>;
  count(documentId?: string): Promise<number>;
  /**
   * Loads what the first searches after a start would otherwise read cold (the embedded index's term caches, from the
   * terms searched before the last stop), for at most `maxMs`; where the engine has nothing to warm, absent. The
   * process that searches (the retriever) awaits it before it serves.
   */
  warmUp?(maxMs: number): Promise<unknown>;
  close(): Promise<void>;
}
export const KEYWORD_INDEX = Symbol('KEYWORD_INDEX');
