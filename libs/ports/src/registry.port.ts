import type { DocumentStatus, Metadata, Topic } from '@rag/contracts';
import type { ListCursor } from '@rag/domain';

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
  /**
   * The record's place in the registry's change order: unique, and larger on every change (the tie-break of list
   * order after `updated_at`). Stores set it; with `updated_at` it is a keyset cursor ({@link ListCursor}).
   */
  seq?: number;
}

/**
 * `after` of {@link Registry.list}: the page starts strictly after the record with this `updated_at` and `seq` in
 * list order (most recently updated first). Unlike an offset, reading the page costs the same at any depth (an index
 * seek, not a walk over every earlier row), and a document that changes while a client pages moves to the front
 * instead of shifting every later page by one. The type and its page-token codec live in the domain.
 */
export type { ListCursor } from '@rag/domain';

/** Options of {@link Registry.list}: `after` (keyset) or `offset` (default 0), not both. */
export interface ListOptions {
  tenant?: string;
  status?: DocumentStatus;
  limit: number;
  offset?: number;
  after?: ListCursor;
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

/** A bus message written in the same transaction as a registry change (transactional outbox). */
export interface OutboxMessage {
  topic: Topic;
  key: string;
  value: unknown;
}

/** An outbox message not yet known to be published. */
export interface OutboxEntry extends OutboxMessage {
  id: number;
  /** Times it was claimed before (a relay claimed it and did not complete it). */
  attempts: number;
}

/** One status update of the projection, the arguments of the matching `mark*` call. */
export type StatusUpdate =
  | { status: 'processing'; documentId: string; version: number }
  | { status: 'failed'; documentId: string; version: number; error: string }
  | { status: 'indexed'; documentId: string; version: number; contentHash: string; chunks: number }
  | { status: 'unchanged'; documentId: string; version: number }
  | { status: 'deleted'; documentId: string; version: number };

/** `claimOutbox`'s byte budget as a number for SQL: no budget (absent, 0, negative or not finite) claims by count alone. */
export function outboxClaimBudget(maxBytes?: number): number {
  return maxBytes !== undefined && Number.isFinite(maxBytes) && maxBytes > 0 ? Math.floor(maxBytes) : Number.MAX_SAFE_INTEGER;
}

export interface Registry {
  get(documentId: string): Promise<DocumentRecord | null>;
  /** Documents, most recently updated first (`updated_at` DESC, `seq` DESC). */
  list(opts: ListOptions): Promise<DocumentRecord[]>;
  /**
   * Reserves the next version for a change and marks the document queued; returns the new record. With `message`,
   * the message it builds from the new record is stored in the outbox in the same transaction: the change and its
   * event are committed together or not at all (a relay publishes the outbox: {@link claimOutbox}).
   */
  accept(change: AcceptChange, message?: (record: DocumentRecord) => OutboxMessage): Promise<DocumentRecord>;
  /**
   * Batch form of {@link accept} (bulk ingestion): every change, applied in the order given (an id may repeat: each
   * occurrence gets the next version), with its outbox message, in ONE transaction — all or nothing. Returns the new
   * records in the order of `items`. A throw (another tenant's id, a message that cannot be built) rolls back all.
   */
  acceptMany?(items: { change: AcceptChange; message?: (record: DocumentRecord) => OutboxMessage }[]): Promise<DocumentRecord[]>;
  /**
   * Claims up to `limit` outbox messages, oldest first, that no relay holds (or whose claim is older than `leaseMs`):
   * at-least-once delivery, so a relay that died holding a claim does not strand its messages. With `maxBytes`, the
   * claim stops before the message that would take the claimed values (their stored JSON, in UTF-8 bytes) past it — the
   * first claimable message is always taken, however large — so a relay holds a bounded amount of upload content at once
   * (a backlog of 25 MB uploads after a bus outage must not be claimed a hundred at a time).
   */
  claimOutbox(limit: number, leaseMs: number, maxBytes?: number): Promise<OutboxEntry[]>;
  /** Removes published messages from the outbox. */
  completeOutbox(ids: number[]): Promise<void>;
  /** Gives claimed messages back (their publish failed): the next claim takes them again. */
  releaseOutbox(ids: number[]): Promise<void>;
  /** Marks progress of a version; ignored when `version` is older than the latest accepted one. */
  markProcessing(documentId: string, version: number): Promise<void>;
  markFailed(documentId: string, version: number, error: string): Promise<void>;
  /** The version became visible to queries. */
  markIndexed(documentId: string, version: number, contentHash: string, chunks: number): Promise<void>;
  /** The version had the same content as the active one: the active version stays. */
  markUnchanged(documentId: string, version: number): Promise<void>;
  markDeleted(documentId: string, version: number): Promise<void>;
  /** Batch forms (bulk ingestion): the records of these ids (unknown ids absent), in one round trip. */
  getMany?(documentIds: string[]): Promise<Map<string, DocumentRecord>>;
  /** `markIndexed` for several documents in one transaction (each update still fenced on its version). */
  markIndexedMany?(items: { documentId: string; version: number; contentHash: string; chunks: number }[]): Promise<void>;
  /**
   * Several status updates (the status projection's batch: distinct documents) in ONE transaction, each applied and
   * fenced exactly as its single form (`markProcessing`, `markFailed`, …) would be. Without it the projection calls the
   * single forms one after another.
   */
  markMany?(updates: StatusUpdate[]): Promise<void>;
  /** Active versions of documents, for the query-time version fence. */
  activeVersions(documentIds: string[]): Promise<Map<string, number>>;
  countByStatus(tenant?: string): Promise<Record<DocumentStatus, number>>;
  /**
   * What waits in the outbox (claimed or not): messages, bytes of their values, and when the oldest was accepted (ISO
   * 8601, null when empty). Read for the metrics on each scrape; the outbox holds only what is not yet published.
   */
  outboxStats?(): Promise<{ messages: number; bytes: number; oldest_created_at: string | null }>;
  /** Remembers that a query/retrieve answer with this trace id was issued to `tenant` (bounded, with retention). */
  recordQueryTrace(traceId: string, tenant: string): Promise<void>;
  /**
   * Stores feedback on a trace issued to `tenant`; false (nothing stored) when no such trace was issued to it,
   * whether the trace is unknown or another tenant's (one answer for both: no existence oracle).
   */
  recordFeedback(traceId: string, tenant: string, rating: 'up' | 'down', comment?: string): Promise<boolean>;
  close(): Promise<void>;
}
export const REGISTRY = Symbol('REGISTRY');
