import type { Block, Metadata } from '@rag/contracts';

export type SourceKind = 'confluence' | 'notion';

/** The current state of a page at the source, fetched by the loader. */
export type SourceFetchResult =
  | {
      status: 'found';
      title: string;
      blocks: Block[];
      source_url?: string;
      /** Who may read it (from the source's restrictions/sharing where its API exposes them), or `['*']`. */
      acl: string[];
      metadata: Metadata;
      /** The source's own version of what was fetched (Confluence version number, Notion last_edited_time). */
      source_version: string;
      /** When that version was made, epoch ms. */
      changed_at: number;
    }
  /** Deleted, trashed, archived or no longer visible to the integration: the document must go from every store. */
  | { status: 'gone'; reason: string };

/** One page as listed by the reconciler. */
export interface SourceListing {
  document_id: string;
  /** The page id at the source (what `fetch` takes). */
  ref: string;
  /** Space key (Confluence) or workspace (Notion): pruning only touches documents of listed scopes. */
  scope: string;
  title?: string;
  source_version: string;
  changed_at: number;
}

/**
 * A SaaS content source. Implementations page through the source's REST API, back off on 429 honouring
 * `Retry-After`, and validate every response. Transport failures throw (the bus retries); a page that is gone is a value.
 */
export interface SourceConnector {
  readonly kind: SourceKind;
  /** The document id of a source page id. */
  documentId(ref: string): string;
  fetch(ref: string): Promise<SourceFetchResult>;
  /**
   * Who may read the page now (the same ACL `fetch` would report), without fetching its content; null when the page
   * is gone. Used where a change is admitted, so the registry records the ACL the connector computes.
   */
  acl(ref: string): Promise<string[] | null>;
  /** The configured scopes (spaces / workspace) this connector lists. */
  scopes(): Promise<string[]>;
  /** Every current page of one scope; throws if the listing cannot be completed (nothing is pruned then). */
  list(scope: string): AsyncIterable<SourceListing>;
}
export const SOURCE_CONNECTORS = Symbol('SOURCE_CONNECTORS');

/** A source change as admitted by the registry. */
export interface SourceChange {
  event_id: string;
  document_id: string;
  kind: SourceKind;
  tenant: string;
  op: 'upsert' | 'delete';
  /** Source time of the change, epoch ms (orders changes per document). */
  changed_at: number;
  scope?: string;
  source_version?: string;
}

export interface SourceDocumentState {
  document_id: string;
  kind: SourceKind;
  tenant: string;
  scope: string | null;
  source_version: string | null;
  changed_at: number;
  deleted: boolean;
  updated_at: string;
}

export type AdmitOutcome =
  /** Recorded as pending; call `complete` once the change is queued, `abandon` if queuing failed. */
  | { outcome: 'admitted' }
  /** This event id was already processed: nothing to do. */
  | { outcome: 'duplicate' }
  /** Older than the latest admitted change of the document (or an update after a delete): recorded, ignored. */
  | { outcome: 'stale'; reason: string };

/**
 * Durable per-document source state beside the registry: the event ids seen (dedupe survives restarts), the
 * latest admitted source time per document and a delete tombstone, so changes are admitted in source order.
 */
export interface SourceStateStore {
  /** Atomically: dedupe by event id, apply the ordering rules, record the event (pending) and the document state. */
  admit(change: SourceChange): Promise<AdmitOutcome>;
  complete(eventId: string): Promise<void>;
  /** Forgets a pending event whose change could not be queued, so a redelivery is processed again. */
  abandon(eventId: string): Promise<void>;
  get(documentId: string): Promise<SourceDocumentState | null>;
  /** Documents of a kind that are not deleted (optionally of one scope and tenant). */
  listLive(kind: SourceKind, opts?: { scope?: string; tenant?: string }): Promise<SourceDocumentState[]>;
  /** Drops processed event ids older than the given age (the replay window is far shorter). */
  pruneEvents(olderThanMs: number): Promise<number>;
  close(): Promise<void>;
}
export const SOURCE_STATE = Symbol('SOURCE_STATE');
