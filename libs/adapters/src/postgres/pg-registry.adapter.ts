import type { DocumentStatus, Metadata } from '@rag/contracts';
import { AppError, Logger } from '@rag/platform';
import { outboxClaimBudget, type AcceptChange, type DocumentRecord, type ListOptions, type OutboxEntry, type OutboxMessage, type Registry, type StatusUpdate } from '@rag/ports';
import { PgDatabase, pgText, type PgDatabaseOptions } from './pg-database';
import type { PoolClient } from 'pg';

/**
 * The document registry (with its transactional outbox, query traces and feedback) in PostgreSQL, shared by every
 * replica of the gateway, indexer and retriever. Same contract and version discipline as SqliteRegistry (the contract
 * suite in ./contract runs against both): `accept` reserves `version + 1` under the document's row lock
 * (`SELECT … FOR UPDATE`, where SQLite takes BEGIN IMMEDIATE), and every `mark*` applies only to the latest accepted
 * version (`WHERE version = $n`). Outbox claims use `FOR UPDATE SKIP LOCKED`, so relays on several replicas claim
 * disjoint messages without waiting on each other; leases are measured on the database's clock (replicas' clocks may
 * differ). Free text (title, error, comment) has NUL characters replaced (PostgreSQL text cannot hold them).
 */
export interface PgRegistryOptions extends PgDatabaseOptions {
  logger?: Logger;
  /** How long a query's trace id accepts feedback (default 30 days). */
  traceRetentionMs?: number;
  /** Most query traces kept; the oldest go first (default 1,000,000). */
  maxTraces?: number;
}

interface DocumentRow {
  document_id: string;
  tenant: string;
  title: string | null;
  status: DocumentStatus;
  version: number;
  active_version: number;
  content_hash: string | null;
  raw_hash: string | null;
  chunks: number;
  error: string | null;
  mime_type: string | null;
  source_url: string | null;
  acl: string;
  metadata: string;
  created_at: Date;
  updated_at: Date;
  seq: string;
}

const STATUSES: readonly DocumentStatus[] = ['queued', 'processing', 'indexed', 'failed', 'deleted'];
const DEFAULT_TRACE_RETENTION_MS = 30 * 24 * 3600 * 1000;
const DEFAULT_MAX_TRACES = 1_000_000;
const TRACE_PRUNE_EVERY = 500;
const COLS =
  'document_id, tenant, title, status, version, active_version, content_hash, raw_hash, chunks, error, mime_type, source_url, acl, metadata, created_at, updated_at, seq';
/** The database's clock in epoch ms (outbox leases, trace ages: one clock for every replica). */
const NOW_MS = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::bigint';

const toRecord = (r: DocumentRow): DocumentRecord => ({
  document_id: r.document_id,
  tenant: r.tenant,
  title: r.title,
  status: r.status,
  version: r.version,
  active_version: r.active_version,
  content_hash: r.content_hash,
  raw_hash: r.raw_hash,
  chunks: r.chunks,
  error: r.error,
  mime_type: r.mime_type,
  source_url: r.source_url,
  acl: JSON.parse(r.acl) as string[],
  metadata: JSON.parse(r.metadata) as Metadata,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  // bigint arrives as a string from node-postgres; a sequence stays far below 2^53 (one per registry change).
  seq: Number(r.seq),
});

export class PgRegistry implements Registry {
  private closed = false;
  private tracesSincePrune = 0;
  private readonly log: Logger;
  private readonly traceRetentionMs: number;
  private readonly maxTraces: number;

  private constructor(
    private readonly db: PgDatabase,
    opts: PgRegistryOptions,
  ) {
    this.log = opts.logger ?? new Logger('pg-registry');
    this.traceRetentionMs = opts.traceRetentionMs ?? DEFAULT_TRACE_RETENTION_MS;
    this.maxTraces = opts.maxTraces ?? DEFAULT_MAX_TRACES;
  }

  static async open(opts: PgRegistryOptions): Promise<PgRegistry> {
    const r = new PgRegistry(await PgDatabase.open(opts), opts);
    try {
      await r.pruneTraces();
    } catch (e) {
      await r.db.release();
      throw e;
    }
    return r;
  }

  async get(documentId: string): Promise<DocumentRecord | null> {
    this.assertOpen();
    const { rows } = await this.db.query<DocumentRow>(`SELECT ${COLS} FROM documents WHERE document_id = $1`, [documentId]);
    return rows[0] ? toRecord(rows[0]) : null;
  }

  async list(opts: ListOptions): Promise<DocumentRecord[]> {
    this.assertOpen();
    if (opts.after && opts.offset) throw new AppError('invalid_request', 'a list takes a cursor or an offset, not both');
    const where: string[] = [];
    const params: unknown[] = [];
    if (opts.tenant !== undefined) where.push(`tenant = $${params.push(opts.tenant)}`);
    if (opts.status !== undefined) where.push(`status = $${params.push(opts.status)}`);
    // Keyset: a row comparison on the list order, answered by a seek in the (…, updated_at DESC, seq DESC) indexes.
    if (opts.after) where.push(`(updated_at, seq) < ($${params.push(opts.after.updated_at)}::timestamptz, $${params.push(opts.after.seq)}::bigint)`);
    const limit = `$${params.push(Math.max(0, Math.floor(opts.limit)))}`;
    const offset = opts.after ? '' : ` OFFSET $${params.push(Math.max(0, Math.floor(opts.offset ?? 0)))}`;
    const { rows } = await this.db.query<DocumentRow>(
      `SELECT ${COLS} FROM documents ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY updated_at DESC, seq DESC LIMIT ${limit}${offset}`,
      params,
    );
    return rows.map(toRecord);
  }

  async accept(change: AcceptChange, message?: (record: DocumentRecord) => OutboxMessage): Promise<DocumentRecord> {
    this.assertOpen();
    const now = new Date();
    const acl = change.acl === undefined ? null : JSON.stringify(change.acl);
    const metadata = change.metadata === undefined ? null : JSON.stringify(change.metadata);
    const rawHash = change.op === 'upsert' ? (change.raw_hash ?? null) : null;
    const title = pgText(change.title);
    const row = await this.db.transaction(async (c) => {
      // A new document: inserted as version 1 (ON CONFLICT waits for a concurrent insert of the same id to commit).
      const inserted = await c.query<DocumentRow>(
        `INSERT INTO documents (document_id, tenant, title, status, version, active_version, raw_hash, mime_type, source_url, acl, metadata, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 1, 0, $5, $6, $7, $8, $9, $10, $10)
         ON CONFLICT (document_id) DO NOTHING RETURNING ${COLS}`,
        [change.document_id, change.tenant, title, change.op === 'upsert' ? 'queued' : 'deleted', rawHash, change.mime_type ?? null, pgText(change.source_url), acl ?? '[]', metadata ?? '{}', now],
      );
      let out = inserted.rows[0];
      if (!out) {
        const existing = await c.query<{ tenant: string }>('SELECT tenant FROM documents WHERE document_id = $1 FOR UPDATE', [change.document_id]);
        if (existing.rows[0]!.tenant !== change.tenant) throw new AppError('conflict', `document ${change.document_id} belongs to another tenant`);
        out = await this.updateAccepted(c, change, now);
      }
      if (message) {
        // Built from the to-be-committed record (its new version); a throw here rolls the change back too.
        const m = message(toRecord(out));
        const value = JSON.stringify(m.value);
        await c.query('INSERT INTO outbox (topic, key, value, bytes, created_at) VALUES ($1, $2, $3, $4, $5)', [m.topic, m.key, value, Buffer.byteLength(value), now]);
      }
      return out;
    });
    return toRecord(row);
  }

  /**
   * `accept` for many changes in one transaction, with few round trips whatever the batch size: one multi-row INSERT
   * of the new ids (ON CONFLICT DO NOTHING, in id order), one `SELECT … FOR UPDATE` of the existing ones (in id
   * order, so two concurrent batches lock in the same order), an UPDATE only per change of an existing id (or a
   * repeat), and one multi-row outbox INSERT in item order (outbox ids keep per-key order).
   */
  async acceptMany(items: { change: AcceptChange; message?: (record: DocumentRecord) => OutboxMessage }[]): Promise<DocumentRecord[]> {
    this.assertOpen();
    if (items.length === 0) return [];
    const now = new Date();
    const firsts = new Map<string, AcceptChange>();
    for (const { change } of items) if (!firsts.has(change.document_id)) firsts.set(change.document_id, change);
    const fresh = [...firsts.values()].sort((a, b) => (a.document_id < b.document_id ? -1 : a.document_id > b.document_id ? 1 : 0));
    const rows = await this.db.transaction(async (c) => {
      const inserted = await c.query<DocumentRow>(
        `INSERT INTO documents (document_id, tenant, title, status, version, active_version, raw_hash, mime_type, source_url, acl, metadata, created_at, updated_at)
         SELECT u.id, u.tenant, u.title, u.status, 1, 0, u.raw_hash, u.mime, u.url, u.acl, u.metadata, $10, $10
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
              WITH ORDINALITY AS u(id, tenant, title, status, raw_hash, mime, url, acl, metadata, n)
         ORDER BY u.n
         ON CONFLICT (document_id) DO NOTHING RETURNING ${COLS}`,
        [
          fresh.map((ch) => ch.document_id),
          fresh.map((ch) => ch.tenant),
          fresh.map((ch) => pgText(ch.title) ?? null),
          fresh.map((ch) => (ch.op === 'upsert' ? 'queued' : 'deleted')),
          fresh.map((ch) => (ch.op === 'upsert' ? (ch.raw_hash ?? null) : null)),
          fresh.map((ch) => ch.mime_type ?? null),
          fresh.map((ch) => pgText(ch.source_url) ?? null),
          fresh.map((ch) => (ch.acl === undefined ? '[]' : JSON.stringify(ch.acl))),
          fresh.map((ch) => (ch.metadata === undefined ? '{}' : JSON.stringify(ch.metadata))),
          now,
        ],
      );
      const insertedRows = new Map(inserted.rows.map((r) => [r.document_id, r]));
      const existingIds = fresh.map((ch) => ch.document_id).filter((id) => !insertedRows.has(id));
      if (existingIds.length) {
        const locked = await c.query<{ document_id: string; tenant: string }>(
          'SELECT document_id, tenant FROM documents WHERE document_id = ANY($1::text[]) ORDER BY document_id FOR UPDATE',
          [existingIds],
        );
        const tenants = new Map(locked.rows.map((r) => [r.document_id, r.tenant]));
        for (const id of existingIds) {
          if (tenants.get(id) !== firsts.get(id)!.tenant) throw new AppError('conflict', `document ${id} belongs to another tenant`);
        }
      }
      const out: DocumentRow[] = [];
      const firstUsed = new Set<string>();
      for (const { change } of items) {
        const own = insertedRows.get(change.document_id);
        if (own && !firstUsed.has(change.document_id)) {
          firstUsed.add(change.document_id);
          out.push(own);
          continue;
        }
        firstUsed.add(change.document_id);
        if (change.tenant !== firsts.get(change.document_id)!.tenant) throw new AppError('conflict', `document ${change.document_id} belongs to another tenant`);
        out.push(await this.updateAccepted(c, change, now));
      }
      const messages: OutboxMessage[] = [];
      items.forEach((item, i) => {
        // Built from the to-be-committed records (their new versions); a throw here rolls every change back too.
        if (item.message) messages.push(item.message(toRecord(out[i]!)));
      });
      if (messages.length) {
        const values = messages.map((m) => JSON.stringify(m.value));
        await c.query(
          `INSERT INTO outbox (topic, key, value, bytes, created_at)
           SELECT u.topic, u.key, u.value, u.bytes, $5
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) WITH ORDINALITY AS u(topic, key, value, bytes, n) ORDER BY u.n`,
          [messages.map((m) => m.topic), messages.map((m) => m.key), values, values.map((v) => Buffer.byteLength(v)), now],
        );
      }
      return out;
    });
    return rows.map(toRecord);
  }

  async claimOutbox(limit: number, leaseMs: number, maxBytes?: number): Promise<OutboxEntry[]> {
    this.assertOpen();
    // The oldest `limit` claimable rows, locked (another relay skips them), cut before the one whose value would take
    // the running total past the byte budget (the first always stays); the rows cut are unlocked when the statement ends.
    const { rows } = await this.db.query<{ id: number; topic: string; key: string; value: string; attempts: number }>(
      `UPDATE outbox SET claimed_until = ${NOW_MS} + $2, attempts = attempts + 1
       WHERE id IN (
         SELECT id FROM (
           SELECT id, sum(bytes) OVER (ORDER BY id) AS upto, row_number() OVER (ORDER BY id) AS n
           FROM (SELECT id, bytes FROM outbox WHERE claimed_until <= ${NOW_MS} ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED) c
         ) w
         WHERE n = 1 OR upto <= $3)
       RETURNING id, topic, key, value, attempts - 1 AS attempts`,
      [Math.max(1, Math.floor(limit)), Math.floor(leaseMs), outboxClaimBudget(maxBytes)],
    );
    return rows
      .sort((a, b) => a.id - b.id)
      .map((r) => ({ id: r.id, topic: r.topic as OutboxEntry['topic'], key: r.key, value: JSON.parse(r.value) as unknown, attempts: r.attempts }));
  }

  async outboxStats(): Promise<{ messages: number; bytes: number; oldest_created_at: string | null }> {
    this.assertOpen();
    const { rows } = await this.db.query<{ messages: string; bytes: string; oldest: Date | null }>(
      'SELECT count(*) AS messages, COALESCE(sum(bytes), 0) AS bytes, (SELECT created_at FROM outbox ORDER BY id LIMIT 1) AS oldest FROM outbox',
    );
    const r = rows[0]!;
    return { messages: Number(r.messages), bytes: Number(r.bytes), oldest_created_at: r.oldest ? new Date(r.oldest).toISOString() : null };
  }

  async completeOutbox(ids: number[]): Promise<void> {
    this.assertOpen();
    if (ids.length) await this.db.query('DELETE FROM outbox WHERE id = ANY($1::bigint[])', [ids]);
  }

  async releaseOutbox(ids: number[]): Promise<void> {
    this.assertOpen();
    if (ids.length) await this.db.query('UPDATE outbox SET claimed_until = 0 WHERE id = ANY($1::bigint[])', [ids]);
  }

  async markProcessing(documentId: string, version: number): Promise<void> {
    await this.mark('processing', `status = 'processing'`, documentId, version, [], `AND status = 'queued'`);
  }

  async markFailed(documentId: string, version: number, error: string): Promise<void> {
    await this.mark('failed', `status = 'failed', error = $4, raw_hash = NULL`, documentId, version, [pgText(error)]);
  }

  async markIndexed(documentId: string, version: number, contentHash: string, chunks: number): Promise<void> {
    await this.mark('indexed', `status = 'indexed', active_version = $2, content_hash = $4, chunks = $5, error = NULL`, documentId, version, [contentHash, chunks]);
  }

  async getMany(documentIds: string[]): Promise<Map<string, DocumentRecord>> {
    this.assertOpen();
    const out = new Map<string, DocumentRecord>();
    if (documentIds.length === 0) return out;
    const { rows } = await this.db.query<DocumentRow>(`SELECT ${COLS} FROM documents WHERE document_id = ANY($1::text[])`, [documentIds]);
    for (const r of rows) out.set(r.document_id, toRecord(r));
    return out;
  }

  /** `markMany` with every update `indexed`: one UPDATE over an unnest, each row fenced on its version. */
  async markIndexedMany(items: { documentId: string; version: number; contentHash: string; chunks: number }[]): Promise<void> {
    return this.markMany(items.map((i) => ({ status: 'indexed' as const, ...i })));
  }

  /**
   * The status projection's batch as ONE statement over an unnest of the updates (one round trip instead of one per
   * event; a single statement is one transaction). Each column is set as the update's single form sets it; each row
   * fenced on its version (and `processing` on `queued`) as there. The projection passes distinct documents (UPDATE …
   * FROM changes a row once, whichever of two rows of one id it joins first).
   */
  async markMany(updates: StatusUpdate[]): Promise<void> {
    this.assertOpen();
    if (updates.length === 0) return;
    const { rowCount } = await this.db.query(
      `UPDATE documents AS d SET
         status = CASE u.kind WHEN 'processing' THEN 'processing' WHEN 'failed' THEN 'failed' WHEN 'deleted' THEN 'deleted' ELSE 'indexed' END,
         error = CASE u.kind WHEN 'failed' THEN u.error WHEN 'processing' THEN d.error ELSE NULL END,
         raw_hash = CASE u.kind WHEN 'failed' THEN NULL ELSE d.raw_hash END,
         active_version = CASE u.kind WHEN 'indexed' THEN u.version WHEN 'deleted' THEN 0 ELSE d.active_version END,
         content_hash = CASE u.kind WHEN 'indexed' THEN u.hash WHEN 'deleted' THEN NULL ELSE d.content_hash END,
         chunks = CASE u.kind WHEN 'indexed' THEN u.chunks WHEN 'deleted' THEN 0 ELSE d.chunks END,
         updated_at = $7, seq = nextval('documents_seq')
       FROM unnest($1::text[], $2::int[], $3::text[], $4::text[], $5::text[], $6::int[]) AS u(id, version, kind, error, hash, chunks)
       WHERE d.document_id = u.id AND d.version = u.version AND (u.kind <> 'processing' OR d.status = 'queued')`,
      [
        updates.map((u) => u.documentId),
        updates.map((u) => u.version),
        updates.map((u) => u.status),
        updates.map((u) => (u.status === 'failed' ? pgText(u.error) : null)),
        updates.map((u) => (u.status === 'indexed' ? u.contentHash : null)),
        updates.map((u) => (u.status === 'indexed' ? u.chunks : null)),
        new Date(),
      ],
    );
    if ((rowCount ?? 0) < updates.length) this.log.debug('ignored stale or unknown registry updates', { kind: 'many', ignored: updates.length - (rowCount ?? 0) });
  }

  async markUnchanged(documentId: string, version: number): Promise<void> {
    await this.mark('unchanged', `status = 'indexed', error = NULL`, documentId, version, []);
  }

  async markDeleted(documentId: string, version: number): Promise<void> {
    await this.mark('deleted', `status = 'deleted', active_version = 0, chunks = 0, content_hash = NULL, error = NULL`, documentId, version, []);
  }

  async activeVersions(documentIds: string[]): Promise<Map<string, number>> {
    this.assertOpen();
    const out = new Map<string, number>();
    if (documentIds.length === 0) return out;
    const { rows } = await this.db.query<{ document_id: string; active_version: number }>(
      'SELECT document_id, active_version FROM documents WHERE document_id = ANY($1::text[]) AND active_version > 0',
      [documentIds],
    );
    for (const r of rows) out.set(r.document_id, r.active_version);
    return out;
  }

  /**
   * Counted by the server (an index scan, off this process's event loop). Deliberately not the trigger-maintained
   * counts table of the SQLite registry: in PostgreSQL every replica's status update of one tenant would update the
   * same counter row, serialising all writers of the tenant on that row lock (and adding a lock to the id-ordered
   * locking of acceptMany). Kept as a scan; at millions of documents a cached or estimated count is the next step.
   */
  async countByStatus(tenant?: string): Promise<Record<DocumentStatus, number>> {
    this.assertOpen();
    const out = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<DocumentStatus, number>;
    const { rows } =
      tenant === undefined
        ? await this.db.query<{ status: DocumentStatus; n: number }>('SELECT status, COUNT(*)::int AS n FROM documents GROUP BY status')
        : await this.db.query<{ status: DocumentStatus; n: number }>('SELECT status, COUNT(*)::int AS n FROM documents WHERE tenant = $1 GROUP BY status', [tenant]);
    for (const r of rows) out[r.status] = r.n;
    return out;
  }

  async recordQueryTrace(traceId: string, tenant: string): Promise<void> {
    this.assertOpen();
    await this.db.query(`INSERT INTO query_traces (trace_id, tenant, created_at) VALUES ($1, $2, ${NOW_MS}) ON CONFLICT (trace_id, tenant) DO NOTHING`, [
      traceId,
      tenant,
    ]);
    if (++this.tracesSincePrune >= TRACE_PRUNE_EVERY) await this.pruneTraces();
  }

  async recordFeedback(traceId: string, tenant: string, rating: 'up' | 'down', comment?: string): Promise<boolean> {
    this.assertOpen();
    if (rating !== 'up' && rating !== 'down') throw new AppError('invalid_request', `rating must be "up" or "down"`);
    // One statement: stored only when the trace was issued to this tenant within the retention.
    const { rowCount } = await this.db.query(
      `INSERT INTO feedback (trace_id, tenant, rating, comment, created_at)
       SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT 1 FROM query_traces WHERE trace_id = $1 AND tenant = $2 AND created_at >= ${NOW_MS} - $6)`,
      [traceId, tenant, rating, pgText(comment), new Date(), this.traceRetentionMs],
    );
    return (rowCount ?? 0) > 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.release();
  }

  // ---------------------------------------------------------------------------------------------

  private async pruneTraces(): Promise<void> {
    this.tracesSincePrune = 0;
    await this.db.query(`DELETE FROM query_traces WHERE created_at < ${NOW_MS} - $1`, [this.traceRetentionMs]);
    await this.db.query(
      'DELETE FROM query_traces WHERE ctid IN (SELECT ctid FROM query_traces ORDER BY created_at DESC OFFSET $1)',
      [this.maxTraces],
    );
  }

  /** The next version of an existing (locked) document: an upsert queues it, a delete only bumps the version. */
  private async updateAccepted(c: PoolClient, change: AcceptChange, now: Date): Promise<DocumentRow> {
    const acl = change.acl === undefined ? null : JSON.stringify(change.acl);
    const metadata = change.metadata === undefined ? null : JSON.stringify(change.metadata);
    const updated =
      change.op === 'upsert'
        ? await c.query<DocumentRow>(
            `UPDATE documents SET version = version + 1, status = 'queued', error = NULL, raw_hash = $2,
                    title = COALESCE($3, title), mime_type = COALESCE($4, mime_type), source_url = COALESCE($5, source_url),
                    acl = COALESCE($6, acl), metadata = COALESCE($7, metadata), updated_at = $8, seq = nextval('documents_seq')
             WHERE document_id = $1 RETURNING ${COLS}`,
            [change.document_id, change.raw_hash ?? null, pgText(change.title), change.mime_type ?? null, pgText(change.source_url), acl, metadata, now],
          )
        : await c.query<DocumentRow>(
            `UPDATE documents SET version = version + 1, raw_hash = NULL, updated_at = $2, seq = nextval('documents_seq')
             WHERE document_id = $1 RETURNING ${COLS}`,
            [change.document_id, now],
          );
    return updated.rows[0]!;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('PgRegistry is closed');
  }

  private async mark(kind: string, set: string, documentId: string, version: number, extra: unknown[], cond = ''): Promise<void> {
    this.assertOpen();
    const { rowCount } = await this.db.query(
      `UPDATE documents SET ${set}, updated_at = $3, seq = nextval('documents_seq') WHERE document_id = $1 AND version = $2 ${cond}`,
      [documentId, version, new Date(), ...extra],
    );
    if (!rowCount) this.log.debug('ignored a stale or unknown registry update', { kind, document_id: documentId, version });
  }
}

