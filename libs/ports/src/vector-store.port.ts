import type { Chunk, Filters, SearchScope } from '@rag/contracts';

export interface VectorRecord {
  chunk_id: string;
  document_id: string;
  tenant: string;
  version: number;
  acl: string[];
  metadata: Record<string, string | number | boolean | string[]>;
  vector: Float32Array;
  /** The chunk itself, kept beside its vector by stores that can, so answers survive a keyword-index outage. */
  chunk?: Chunk;
}

export interface VectorHit {
  chunk_id: string;
  document_id: string;
  version: number;
  /** Cosine similarity in [-1, 1]. */
  score: number;
}

export interface VectorSearchRequest {
  vector: Float32Array;
  k: number;
  scope: SearchScope;
  filters?: Filters;
}

/** One document's delete of {@link VectorStore.deleteDocuments} and `KeywordIndex.deleteDocuments`. */
export interface DocumentDelete {
  documentId: string;
  /** Keep this version (delete the older ones), or undefined: delete every version. */
  keepVersion?: number;
}

export interface VectorStore {
  /** Upsert by chunk_id (idempotent). All vectors must have the store's dimension. */
  upsert(records: VectorRecord[]): Promise<void>;
  /** Nearest neighbours; tenant, ACL and filters are applied inside the search, not after it. */
  search(req: VectorSearchRequest): Promise<VectorHit[]>;
  /** Deletes the document's vectors whose version is not `keepVersion` (all of them when undefined). */
  deleteDocument(documentId: string, keepVersion?: number): Promise<number>;
  /**
   * Several {@link deleteDocument}s in one request (bulk ingestion: the deletes of a batch), by stores where one
   * request is cheaper than many; returns the rows removed in all. Idempotent like deleteDocument.
   */
  deleteDocuments?(documents: DocumentDelete[]): Promise<number>;
  count(documentId?: string): Promise<number>;
  /** The stored chunks of these ids, by stores that keep them (see VectorRecord.chunk); others leave it out. */
  getChunks?(chunkIds: string[]): Promise<Chunk[]>;
  /** Flush to durable storage. */
  flush(): Promise<void>;
  close(): Promise<void>;
}
export const VECTOR_STORE = Symbol('VECTOR_STORE');
