import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { orderChange } from '@rag/domain';
import type { AdmitOutcome, SourceChange, SourceDocumentState, SourceKind, SourceStateStore } from '@rag/ports';
import { openSqlite } from '../sqlite/open-sqlite';

/**
 * Source sync state in the registry's SQLite file (`dir/registry.db`, own tables, WAL, shared by the processes that
 * accept source changes):
 * - `source_events(event_id PK, document_id, state pending|done|ignored, received_at)`: durable dedupe. A `done` or
 *   `ignored` event is a duplicate forever (until pruned, far beyond the replay window); a `pending` one (its
 *   admission crashed before the change was queued) is admitted again on redelivery.
 * - `source_documents(document_id PK, kind, tenant, scope, source_version, changed_at, deleted)`: the latest admitted
 *   source time per document and a delete tombstone, so changes are admitted in source order (see `orderChange`).
 * `admit` runs in one IMMEDIATE transaction, so concurrent admissions (several gateway processes) serialize.
 */
export class SqliteSourceStateStore implements SourceStateStore {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly admitTx: (c: SourceChange) => AdmitOutcome;
  private readonly abandonTx: (eventId: string) => void;

  constructor(opts: { dir: string; synchronous?: 'FULL' | 'NORMAL' }) {
    fs.mkdirSync(opts.dir, { recursive: true });
    this.file = path.join(opts.dir, 'registry.db');
    this.db = openSqlite(this.file, opts.synchronous);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS source_events (
        event_id    TEXT PRIMARY KEY,
        document_id TEXT NOT NULL,
        state       TEXT NOT NULL CHECK (state IN ('pending', 'done', 'ignored')),
        received_at INTEGER NOT NULL,
        prev        TEXT
      );
      CREATE INDEX IF NOT EXISTS source_events_received ON source_events (received_at);
      CREATE TABLE IF NOT EXISTS source_documents (
        document_id    TEXT PRIMARY KEY,
        kind           TEXT NOT NULL,
        tenant         TEXT NOT NULL,
        scope          TEXT,
        source_version TEXT,
        changed_at     INTEGER NOT NULL,
        deleted        INTEGER NOT NULL,
        updated_at     TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS source_documents_kind ON source_documents (kind, deleted, scope);
    `);
    const getEvent = this.db.prepare<[string], { state: string; prev: string | null }>('SELECT state, prev FROM source_events WHERE event_id = ?');
    const getDoc = this.db.prepare<[string], { changed_at: number; deleted: number }>('SELECT changed_at, deleted FROM source_documents WHERE document_id = ?');
    const putEvent = this.db.prepare('INSERT OR REPLACE INTO source_events (event_id, document_id, state, received_at, prev) VALUES (?, ?, ?, ?, ?)');
    const getRow = this.db.prepare<[string], Row>('SELECT * FROM source_documents WHERE document_id = ?');
    const putDoc = this.db.prepare(`
      INSERT INTO source_documents (document_id, kind, tenant, scope, source_version, changed_at, deleted, updated_at)
      VALUES (@document_id, @kind, @tenant, @scope, @source_version, @changed_at, @deleted, @now)
      ON CONFLICT (document_id) DO UPDATE SET tenant = excluded.tenant, scope = COALESCE(excluded.scope, scope),
        source_version = CASE WHEN excluded.deleted = 1 THEN source_version ELSE COALESCE(excluded.source_version, source_version) END,
        changed_at = excluded.changed_at, deleted = excluded.deleted, updated_at = excluded.updated_at`);
    const tx = this.db.transaction((c: SourceChange): AdmitOutcome => {
      const seen = getEvent.get(c.event_id);
      if (seen && seen.state !== 'pending') return { outcome: 'duplicate' };
      const doc = getDoc.get(c.document_id);
      const order = orderChange(doc ? { changed_at: doc.changed_at, deleted: doc.deleted === 1 } : null, c);
      if (!order.admit) {
        putEvent.run(c.event_id, c.document_id, 'ignored', Date.now(), null);
        return { outcome: 'stale', reason: order.reason };
      }
      // A pending event being re-admitted keeps the state from before its first admission (what abandon restores).
      const prevRow = getRow.get(c.document_id);
      const prev = seen ? seen.prev : prevRow ? JSON.stringify(prevRow) : null;
      putEvent.run(c.event_id, c.document_id, 'pending', Date.now(), prev);
      putDoc.run({
        document_id: c.document_id,
        kind: c.kind,
        tenant: c.tenant,
        scope: c.scope ?? null,
        source_version: c.source_version ?? null,
        changed_at: c.changed_at,
        deleted: c.op === 'delete' ? 1 : 0,
        now: new Date().toISOString(),
      });
      return { outcome: 'admitted' };
    });
    this.admitTx = (c) => tx.immediate(c);
    const abandon = this.db.transaction((eventId: string) => {
      const ev = this.db
        .prepare<[string], { document_id: string; prev: string | null }>(`SELECT document_id, prev FROM source_events WHERE event_id = ? AND state = 'pending'`)
        .get(eventId);
      if (!ev) return;
      this.db.prepare('DELETE FROM source_events WHERE event_id = ?').run(eventId);
      if (ev.prev === null) this.db.prepare('DELETE FROM source_documents WHERE document_id = ?').run(ev.document_id);
      else
        this.db
          .prepare(
            `INSERT OR REPLACE INTO source_documents (document_id, kind, tenant, scope, source_version, changed_at, deleted, updated_at)
             VALUES (@document_id, @kind, @tenant, @scope, @source_version, @changed_at, @deleted, @updated_at)`,
          )
          .run(JSON.parse(ev.prev) as Row);
    });
    this.abandonTx = (id) => abandon.immediate(id);
  }

  async admit(change: SourceChange): Promise<AdmitOutcome> {
    return this.admitTx(change);
  }

  async complete(eventId: string): Promise<void> {
    this.db.prepare(`UPDATE source_events SET state = 'done' WHERE event_id = ?`).run(eventId);
  }

  /** Forgets a pending event and puts the document's state back as it was before it was admitted. */
  async abandon(eventId: string): Promise<void> {
    this.abandonTx(eventId);
  }

  async get(documentId: string): Promise<SourceDocumentState | null> {
    const r = this.db.prepare<[string], Row>('SELECT * FROM source_documents WHERE document_id = ?').get(documentId);
    return r ? toState(r) : null;
  }

  async listLive(kind: SourceKind, opts: { scope?: string; tenant?: string } = {}): Promise<SourceDocumentState[]> {
    const where = ['kind = @kind', 'deleted = 0'];
    if (opts.scope !== undefined) where.push('scope = @scope');
    if (opts.tenant !== undefined) where.push('tenant = @tenant');
    return this.db
      .prepare<Record<string, string>, Row>(`SELECT * FROM source_documents WHERE ${where.join(' AND ')} ORDER BY document_id`)
      .all({ kind, ...(opts.scope !== undefined ? { scope: opts.scope } : {}), ...(opts.tenant !== undefined ? { tenant: opts.tenant } : {}) })
      .map(toState);
  }

  async pruneEvents(olderThanMs: number): Promise<number> {
    return this.db.prepare(`DELETE FROM source_events WHERE received_at < ? AND state <> 'pending'`).run(Date.now() - olderThanMs).changes;
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

interface Row {
  document_id: string;
  kind: SourceKind;
  tenant: string;
  scope: string | null;
  source_version: string | null;
  changed_at: number;
  deleted: number;
  updated_at: string;
}

function toState(r: Row): SourceDocumentState {
  return { ...r, deleted: r.deleted === 1 };
}
