import { orderChange } from '@rag/domain';
import type { AdmitOutcome, SourceChange, SourceDocumentState, SourceKind, SourceStateStore } from '@rag/ports';
import { PgDatabase, type PgDatabaseOptions } from './pg-database';

/**
 * Source sync state and webhook de-duplication in PostgreSQL (tables `source_events`, `source_documents`; same rules as
 * SqliteSourceStateStore, one contract suite for both). `admit` and `abandon` run in one transaction holding an
 * advisory transaction lock on the document id: SQLite serializes every admission with BEGIN IMMEDIATE; here the
 * admissions of one document serialize (an event id always names one document, so a redelivered event does too) and
 * different documents proceed in parallel across gateway replicas.
 */
interface Row {
  document_id: string;
  kind: SourceKind;
  tenant: string;
  scope: string | null;
  source_version: string | null;
  changed_at: number;
  deleted: boolean;
  updated_at: Date;
}

const toState = (r: Row): SourceDocumentState => ({ ...r, updated_at: r.updated_at.toISOString() });
const COLS = 'document_id, kind, tenant, scope, source_version, changed_at, deleted, updated_at';
/** Advisory lock class of source admissions (7261 = "rag", 2 = source state); the id is hashtext(document_id). */
const LOCK_CLASS = 72612;

export class PgSourceStateStore implements SourceStateStore {
  private closed = false;

  private constructor(private readonly db: PgDatabase) {}

  static async open(opts: PgDatabaseOptions): Promise<PgSourceStateStore> {
    return new PgSourceStateStore(await PgDatabase.open(opts));
  }

  async admit(c: SourceChange): Promise<AdmitOutcome> {
    this.assertOpen();
    return this.db.transaction(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, c.document_id]);
      const seen = (await q.query<{ state: string; prev: string | null }>('SELECT state, prev FROM source_events WHERE event_id = $1', [c.event_id])).rows[0];
      if (seen && seen.state !== 'pending') return { outcome: 'duplicate' } as const;
      const doc = (await q.query<Row>(`SELECT ${COLS} FROM source_documents WHERE document_id = $1`, [c.document_id])).rows[0];
      const order = orderChange(doc ? { changed_at: doc.changed_at, deleted: doc.deleted } : null, c);
      const putEvent = (state: string, prev: string | null) =>
        q.query(
          `INSERT INTO source_events (event_id, document_id, state, received_at, prev) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (event_id) DO UPDATE SET document_id = excluded.document_id, state = excluded.state, received_at = excluded.received_at, prev = excluded.prev`,
          [c.event_id, c.document_id, state, Date.now(), prev],
        );
      if (!order.admit) {
        await putEvent('ignored', null);
        return { outcome: 'stale', reason: order.reason } as const;
      }
      // A pending event being re-admitted keeps the state from before its first admission (what abandon restores).
      const prev = seen ? seen.prev : doc ? JSON.stringify(toState(doc)) : null;
      await putEvent('pending', prev);
      await q.query(
        `INSERT INTO source_documents (document_id, kind, tenant, scope, source_version, changed_at, deleted, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (document_id) DO UPDATE SET tenant = excluded.tenant, scope = COALESCE(excluded.scope, source_documents.scope),
           source_version = CASE WHEN excluded.deleted THEN source_documents.source_version ELSE COALESCE(excluded.source_version, source_documents.source_version) END,
           changed_at = excluded.changed_at, deleted = excluded.deleted, updated_at = excluded.updated_at`,
        [c.document_id, c.kind, c.tenant, c.scope ?? null, c.source_version ?? null, c.changed_at, c.op === 'delete', new Date()],
      );
      return { outcome: 'admitted' } as const;
    });
  }

  async complete(eventId: string): Promise<void> {
    this.assertOpen();
    await this.db.query(`UPDATE source_events SET state = 'done' WHERE event_id = $1`, [eventId]);
  }

  /** Forgets a pending event and puts the document's state back as it was before it was admitted. */
  async abandon(eventId: string): Promise<void> {
    this.assertOpen();
    const doc = (await this.db.query<{ document_id: string }>('SELECT document_id FROM source_events WHERE event_id = $1', [eventId])).rows[0];
    if (!doc) return;
    await this.db.transaction(async (q) => {
      await q.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_CLASS, doc.document_id]);
      const ev = (
        await q.query<{ document_id: string; prev: string | null }>(`SELECT document_id, prev FROM source_events WHERE event_id = $1 AND state = 'pending'`, [eventId])
      ).rows[0];
      if (!ev) return;
      await q.query('DELETE FROM source_events WHERE event_id = $1', [eventId]);
      if (ev.prev === null) {
        await q.query('DELETE FROM source_documents WHERE document_id = $1', [ev.document_id]);
        return;
      }
      const p = JSON.parse(ev.prev) as SourceDocumentState;
      await q.query(
        `INSERT INTO source_documents (document_id, kind, tenant, scope, source_version, changed_at, deleted, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (document_id) DO UPDATE SET kind = excluded.kind, tenant = excluded.tenant, scope = excluded.scope,
           source_version = excluded.source_version, changed_at = excluded.changed_at, deleted = excluded.deleted, updated_at = excluded.updated_at`,
        [p.document_id, p.kind, p.tenant, p.scope, p.source_version, p.changed_at, p.deleted, p.updated_at],
      );
    });
  }

  async get(documentId: string): Promise<SourceDocumentState | null> {
    this.assertOpen();
    const r = (await this.db.query<Row>(`SELECT ${COLS} FROM source_documents WHERE document_id = $1`, [documentId])).rows[0];
    return r ? toState(r) : null;
  }

  async listLive(kind: SourceKind, opts: { scope?: string; tenant?: string } = {}): Promise<SourceDocumentState[]> {
    this.assertOpen();
    const params: unknown[] = [kind];
    const where = ['kind = $1', 'NOT deleted'];
    if (opts.scope !== undefined) where.push(`scope = $${params.push(opts.scope)}`);
    if (opts.tenant !== undefined) where.push(`tenant = $${params.push(opts.tenant)}`);
    // COLLATE "C": the same byte order as SQLite's, whatever the database's collation.
    const { rows } = await this.db.query<Row>(`SELECT ${COLS} FROM source_documents WHERE ${where.join(' AND ')} ORDER BY document_id COLLATE "C"`, params);
    return rows.map(toState);
  }

  async pruneEvents(olderThanMs: number): Promise<number> {
    this.assertOpen();
    const { rowCount } = await this.db.query(`DELETE FROM source_events WHERE received_at < $1 AND state <> 'pending'`, [Date.now() - olderThanMs]);
    return rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.release();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('PgSourceStateStore is closed');
  }
}
