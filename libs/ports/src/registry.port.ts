import type { DocumentStatus, Metadata } from '@rag/contracts';

export interface DocumentRecord {
  document_id: string;
  tenant: string;
  title: string | null;
  status: DocumentStatus;
  /** Latest accepted version (upsert or delete). */
  version: number;
  /** Version whose chunks queries may see; 0 when none. */
  active_version: number;
  content_hash: string | null;
  /** sha256 of the raw submitted bytes of the latest accepted upsert (cheap duplicate check at the edge). */
  raw_hash: string | null;
  chunks: number;
  error: string | null;
  mime_type: string | null;
  source_url: string | null;
  acl: string[];
  metadata: Metadata;
  created_at: string;
  updated_at: string;
}

export interface AcceptChange {
  document_id: string;
  tenant: string;
  op: 'upsert' | 'delete';
  title?: string;
  raw_hash?: string;
  mime_type?: string;
  source_url?: string;
  acl?: string[];
  metadata?: Metadata;
}

export interface Registry {
  get(documentId: string): Promise<DocumentRecord | null>;
  list(opts: { tenant?: string; status?: DocumentStatus; limit: number; offset: number }): Promise<DocumentRecord[]>;
  /** Reserves the next version for a change and marks the document queued; returns the new record. */
  accept(change: AcceptChange): Promise<DocumentRecord>;
  /** Marks progress of a version; ignored when `version` is older than the latest accepted one. */
  markProcessing(documentId: string, version: number): Promise<void>;
  markFailed(documentId: string, version: number, error: string): Promise<void>;
  /** The version became visible to queries. */
  markIndexed(documentId: string, version: number, contentHash: string, chunks: number): Promise<void>;
  /** The version had the same content as the active one: the active version stays. */
  markUnchanged(documentId: string, version: number): Promise<void>;
  markDeleted(documentId: string, version: number): Promise<void>;
  /** Active versions of documents, for the query-time version fence. */
  activeVersions(documentIds: string[]): Promise<Map<string, number>>;
  countByStatus(tenant?: string): Promise<Record<DocumentStatus, number>>;
  recordFeedback(traceId: string, rating: 'up' | 'down', comment?: string): Promise<void>;
  close(): Promise<void>;
}
export const REGISTRY = Symbol('REGISTRY');
