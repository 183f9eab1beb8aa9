import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import type { DocumentStatus, Metadata } from '@rag/contracts';
import { AppError, Logger } from '@rag/platform';
import { outboxClaimBudget, type AcceptChange, type DocumentRecord, type ListOptions, type OutboxEntry, type OutboxMessage, type Registry, type StatusUpdate } from '@rag/ports';
import { createTableOnce, openSqlite } from '../sqlite/open-sqlite';

/**
 * Document registry in one SQLite file (`dir/registry.db`, WAL).
 *
 * Version discipline: `accept()` reserves `version = previous + 1` (1 for a new document) in a transaction, so
 * every change (upsert or delete) gets a strictly newer version. Every `mark*` call names the version it is
 * about and only applies when that version is still the latest accepted one (`WHERE version = ?`): a late
 * or replayed event about an older version can never resurrect or overwrite newer state.
 *
 * Field rules:
 * - upsert: status `queued`, error cleared; `raw_hash` is the submitted one (null when not given); title,
 *   mime type, source url, acl and metadata take the given values and keep the previous ones when omitted
 *   (a webhook re-fetch need not repeat them).
 * - delete: version increments, status stays until `markDeleted`; `raw_hash` is cleared so re-submitting the
 *   same bytes after a delete is not taken for a duplicate. A delete of an unknown document creates a record
 *   in status `deleted` (nothing was ever visible).
 * - `markFailed` clears `raw_hash` too (a retry of the same bytes must not be skipped as a duplicate); the
 *   active version, if any, stays visible.
 * - `markDeleted`: status `deleted`, active_version 0, chunks 0, content_hash null (so re-uploading the same
 *   content after a delete is indexed again rather than skipped as unchanged).
 * - A document id belongs to one tenant: accepting a change for it from another tenant is a `conflict` (callers
 *   qualify ids by tenant, libs/domain documents/document-id.ts, so this only guards against a caller's bug).
 *
 * Transactional outbox: `accept(change, message)` stores the change and the bus message built from it in one
 * transaction (table `outbox`); a relay claims messages (`claimOutbox`, a lease so a relay that died does not strand
 * them), publishes them and deletes them (`completeOutbox`). A crash between commit and publish therefore delays a
 * message instead of losing it.
 *
 * Query traces: `recordQueryTrace` remembers which tenant a query answer's trace id was issued to (table
 * `query_traces`, primary key (trace_id, tenant), kept `traceRetentionMs` and at most `maxTraces` rows); feedback is
 * stored only for a trace issued to the caller's tenant.
 */
export interface SqliteRegistryOptions {
  /** Data folder; the registry is `dir/registry.db`. */
  dir: string;
  /** SQLite `synchronous` (default FULL: an accepted change survives power loss). */
  synchronous?: 'FULL' | 'NORMAL';
  logger?: Logger;
  /** How long a query's trace id accepts feedback (default 30 days). */
  traceRetentionMs?: number;
  /** Most query traces kept; the oldest go first (default 1,000,000). */
  maxTraces?: number;
}

interface OutboxRow {
  id: number;
  topic: string;
  key: string;
  value: string;
  attempts: number;
}

const DEFAULT_TRACE_RETENTION_MS = 30 * 24 * 3600 * 1000;
const DEFAULT_MAX_TRACES = 1_000_000;
/** Query traces are pruned every this many recorded traces (and when the registry opens). */
const TRACE_PRUNE_EVERY = 500;

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
  created_at: string;
  updated_at: string;
  seq: number;
}

const STATUSES: readonly DocumentStatus[] = ['queued', 'processing', 'indexed', 'failed', 'deleted'];
const DB_FILE = 'registry.db';
/** Next value of the monotonic change counter (tie-break for equal `updated_at`). */
const NEXT_SEQ = '(SELECT COALESCE(MAX(seq), 0) + 1 FROM documents)';

function toRecord(r: DocumentRow): DocumentRecord {
  return {
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
    created_at: r.created_at,
    updated_at: r.updated_at,
    seq: r.seq,
  };
}

export class SqliteRegistry implements Registry {
  readonly file: string;
  private readonly db: Database.Database;
  private readonly log: Logger;
  private closed = false;
  private readonly listCache = new Map<string, Database.Statement<Record<string, string | number>, DocumentRow>>();
  private readonly traceRetentionMs: number;
  private readonly maxTraces: number;
  private tracesSincePrune = 0;
  private readonly stmt: {
    get: Database.Statement<[string], DocumentRow>;
    insert: Database.Statement<Record<string, string | number | null>>;
    acceptUpsert: Database.Statement<Record<string, string | number | null>>;
    acceptDelete: Database.Statement<Record<string, string | number | null>>;
    processing: Database.Statement<Record<string, string | number>>;
    failed: Database.Statement<Record<string, string | number>>;
    indexed: Database.Statement<Record<string, string | number>>;
    unchanged: Database.Statement<Record<string, string | number>>;
    deleted: Database.Statement<Record<string, string | number>>;
    active: Database.Statement<[string], { document_id: string; active_version: number }>;
    countAll: Database.Statement<[], { status: DocumentStatus; n: number }>;
    countTenant: Database.Statement<[string], { status: DocumentStatus; n: number }>;
    feedback: Database.Statement<[string, string, string, string | null, string]>;
    outboxInsert: Database.Statement<[string, string, string, number, string]>;
    outboxAny: Database.Statement<[number], { id: number }>;
    outboxStats: Database.Statement<[], { messages: number; bytes: number; oldest: string | null }>;
    outboxClaimable: Database.Statement<[number, number, number], OutboxRow>;
    outboxClaim: Database.Statement<[number, string]>;
    outboxComplete: Database.Statement<[string]>;
    outboxRelease: Database.Statement<[string]>;
    traceInsert: Database.Statement<[string, string, number]>;
    traceFind: Database.Statement<[string, string, number], { found: number }>;
    tracePruneAge: Database.Statement<[number]>;
    tracePruneCount: Database.Statement<[number]>;
  };

  static async open(opts: SqliteRegistryOptions): Promise<SqliteRegistry> {
    return new SqliteRegistry(opts);
  }

  constructor(opts: SqliteRegistryOptions) {
    this.log = opts.logger ?? new Logger('sqlite-registry');
    this.traceRetentionMs = opts.traceRetentionMs ?? DEFAULT_TRACE_RETENTION_MS;
    this.maxTraces = opts.maxTraces ?? DEFAULT_MAX_TRACES;
    fs.mkdirSync(opts.dir, { recursive: true });
    this.file = path.join(opts.dir, DB_FILE);
    this.db = openSqlite(this.file, opts.synchronous);
    try {
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS documents (
          document_id    TEXT PRIMARY KEY,
          tenant         TEXT NOT NULL,
          title          TEXT,
          status         TEXT NOT NULL CHECK (status IN ('queued', 'processing', 'indexed', 'failed', 'deleted')),
          version        INTEGER NOT NULL,
          active_version INTEGER NOT NULL DEFAULT 0,
          content_hash   TEXT,
          raw_hash       TEXT,
          chunks         INTEGER NOT NULL DEFAULT 0,
          error          TEXT,
          mime_type      TEXT,
          source_url     TEXT,
          acl            TEXT NOT NULL DEFAULT '[]',
          metadata       TEXT NOT NULL DEFAULT '{}',
          created_at     TEXT NOT NULL,
          updated_at     TEXT NOT NULL,
          seq            INTEGER NOT NULL
        );
        CREATE INDEX IF NOT EXISTS documents_updated ON documents (updated_at, seq);
        CREATE INDEX IF NOT EXISTS documents_tenant_updated ON documents (tenant, updated_at, seq);
        -- Lists filtered by status read this index in order (no sort of every document with that status: a list of
        -- 1,000 failed among 1M documents took 2.7 ms through a temporary B-tree on (tenant, status), 0.17 ms here).
        -- It replaces the (tenant, status) index, whose only other use, counting, now reads document_counts.
        DROP INDEX IF EXISTS documents_status;
        CREATE INDEX IF NOT EXISTS documents_tenant_status_updated ON documents (tenant, status, updated_at, seq);
        CREATE UNIQUE INDEX IF NOT EXISTS documents_seq ON documents (seq);
        -- activeVersions (every /v1/retrieve and /v1/query fences its candidates with it) reads only document_id and
        -- active_version: with this covering index each id is one descent of a narrow index instead of the primary-key
        -- index plus a read of the wide row (acl, metadata, title, hashes). At 290k documents, 150 random ids: 0.64 ms
        -- -> 0.28 ms per call (≈ 2 % of a request's CPU at 1M chunks, on the event loop). The price is one more index
        -- entry per document (≈ 7 MB at 290k), written on insert and when active_version changes (markIndexed,
        -- markDeleted: ≈ 40 -> 46 µs per random-id update at 290k). A registry made before it gets it on open (one
        -- CREATE INDEX: 0.2–0.3 s at 290k documents; a second process racing to it waits for the write lock and then
        -- finds it). sqlite-registry.adapter.spec.ts checks that the query plan uses it.
        CREATE INDEX IF NOT EXISTS documents_active ON documents (document_id, active_version);
        CREATE TABLE IF NOT EXISTS feedback (
          id         INTEGER PRIMARY KEY,
          trace_id   TEXT NOT NULL,
          rating     TEXT NOT NULL CHECK (rating IN ('up', 'down')),
          comment    TEXT,
          created_at TEXT NOT NULL,
          tenant     TEXT
        );
        CREATE INDEX IF NOT EXISTS feedback_trace ON feedback (trace_id);
        CREATE TABLE IF NOT EXISTS outbox (
          id            INTEGER PRIMARY KEY AUTOINCREMENT,
          topic         TEXT NOT NULL,
          key           TEXT NOT NULL,
          value         TEXT NOT NULL,
          created_at    TEXT NOT NULL,
          claimed_until INTEGER NOT NULL DEFAULT 0,
          attempts      INTEGER NOT NULL DEFAULT 0,
          bytes         INTEGER NOT NULL DEFAULT 0
        );
        CREATE TABLE IF NOT EXISTS query_traces (
          trace_id   TEXT NOT NULL,
          tenant     TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          PRIMARY KEY (trace_id, tenant)
        );
        CREATE INDEX IF NOT EXISTS query_traces_created ON query_traces (created_at);
      `);
      this.addColumnIfMissing('feedback', 'tenant', 'TEXT');
      // The size of each outbox value, so a relay claims by bytes (claimOutbox's maxBytes) without reading the values it
      // leaves; a registry from before gets the column and its pending messages measured once (the outbox holds only
      // what is not yet published).
      if (this.addColumnIfMissing('outbox', 'bytes', 'INTEGER NOT NULL DEFAULT 0')) {
        this.db.exec('UPDATE outbox SET bytes = length(CAST(value AS BLOB))');
      }
      // The claim reads (id, claimed_until, bytes) from this index in id order and stops at its limit. From the table
      // it had to walk each row's overflow pages: those columns are stored after the value, an upload of megabytes.
      this.db.exec('CREATE INDEX IF NOT EXISTS outbox_claim ON outbox (id, claimed_until, bytes)');
      this.ensureStatusCounts();
      this.ensureChunkTotals();
      const touch = `updated_at = @now, seq = ${NEXT_SEQ}`;
      const latest = 'WHERE document_id = @id AND version = @version';
      this.stmt = {
        get: this.db.prepare('SELECT * FROM documents WHERE document_id = ?'),
        insert: this.db.prepare(`
          INSERT INTO documents (document_id, tenant, title, status, version, active_version, raw_hash, mime_type, source_url,
                                 acl, metadata, created_at, updated_at, seq)
          VALUES (@id, @tenant, @title, @status, 1, 0, @raw_hash, @mime_type, @source_url, @acl, @metadata, @now, @now, ${NEXT_SEQ})`),
        acceptUpsert: this.db.prepare(`
          UPDATE documents SET version = version + 1, status = 'queued', error = NULL, raw_hash = @raw_hash,
                 title = COALESCE(@title, title), mime_type = COALESCE(@mime_type, mime_type),
                 source_url = COALESCE(@source_url, source_url), acl = COALESCE(@acl, acl),
                 metadata = COALESCE(@metadata, metadata), ${touch}
          WHERE document_id = @id`),
        acceptDelete: this.db.prepare(`UPDATE documents SET version = version + 1, raw_hash = NULL, ${touch} WHERE document_id = @id`),
        processing: this.db.prepare(`UPDATE documents SET status = 'processing', ${touch} ${latest} AND status = 'queued'`),
        failed: this.db.prepare(`UPDATE documents SET status = 'failed', error = @error, raw_hash = NULL, ${touch} ${latest}`),
        indexed: this.db.prepare(
          `UPDATE documents SET status = 'indexed', active_version = @version, content_hash = @content_hash, chunks = @chunks,
                  error = NULL, ${touch} ${latest}`,
        ),
        unchanged: this.db.prepare(`UPDATE documents SET status = 'indexed', error = NULL, ${touch} ${latest}`),
        deleted: this.db.prepare(
          `UPDATE documents SET status = 'deleted', active_version = 0, chunks = 0, content_hash = NULL, error = NULL, ${touch} ${latest}`,
        ),
        // Answered from the covering index documents_active alone (see the schema above).
        active: this.db.prepare(
          'SELECT document_id, active_version FROM documents WHERE document_id IN (SELECT value FROM json_each(?)) AND active_version > 0',
        ),
        // Read from the trigger-maintained counts (see ensureStatusCounts): a few rows, not a scan of the documents.
        countAll: this.db.prepare('SELECT status, SUM(n) AS n FROM document_counts GROUP BY status'),
        countTenant: this.db.prepare('SELECT status, n FROM document_counts WHERE tenant = ?'),
        feedback: this.db.prepare('INSERT INTO feedback (trace_id, tenant, rating, comment, created_at) VALUES (?, ?, ?, ?, ?)'),
        outboxInsert: this.db.prepare('INSERT INTO outbox (topic, key, value, bytes, created_at) VALUES (?, ?, ?, ?, ?)'),
        outboxAny: this.db.prepare('SELECT id FROM outbox WHERE claimed_until <= ? LIMIT 1'),
        // Count and bytes from the covering index outbox_claim; the oldest by id (ids grow with acceptance): one row read.
        outboxStats: this.db.prepare(
          'SELECT COUNT(*) AS messages, COALESCE(SUM(bytes), 0) AS bytes, (SELECT created_at FROM outbox ORDER BY id LIMIT 1) AS oldest FROM outbox',
        ),
        // The oldest `limit` claimable messages, cut before the one whose value would take the running total of bytes
        // past the budget (the first always stays); the sizes are summed over the narrow (id, bytes) rows, and only the
        // values claimed are read.
        outboxClaimable: this.db.prepare(`
          SELECT o.id, o.topic, o.key, o.value, o.attempts
          FROM (SELECT id, SUM(bytes) OVER (ORDER BY id) AS upto, ROW_NUMBER() OVER (ORDER BY id) AS n
                FROM (SELECT id, bytes FROM outbox WHERE claimed_until <= ? ORDER BY id LIMIT ?)) w
          CROSS JOIN outbox o ON o.id = w.id -- CROSS: w is the outer loop (SQLite keeps the order), each row one lookup
          WHERE w.n = 1 OR w.upto <= ?
          ORDER BY o.id`),
        outboxClaim: this.db.prepare('UPDATE outbox SET claimed_until = ?, attempts = attempts + 1 WHERE id IN (SELECT value FROM json_each(?))'),
        outboxComplete: this.db.prepare('DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?))'),
        outboxRelease: this.db.prepare('UPDATE outbox SET claimed_until = 0 WHERE id IN (SELECT value FROM json_each(?))'),
        traceInsert: this.db.prepare('INSERT INTO query_traces (trace_id, tenant, created_at) VALUES (?, ?, ?) ON CONFLICT (trace_id, tenant) DO NOTHING'),
        traceFind: this.db.prepare('SELECT 1 AS found FROM query_traces WHERE trace_id = ? AND tenant = ? AND created_at >= ?'),
        tracePruneAge: this.db.prepare('DELETE FROM query_traces WHERE created_at < ?'),
        tracePruneCount: this.db.prepare(
          'DELETE FROM query_traces WHERE rowid IN (SELECT rowid FROM query_traces ORDER BY created_at DESC, rowid DESC LIMIT -1 OFFSET ?)',
        ),
      };
      this.pruneTraces();
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  async get(documentId: string): Promise<DocumentRecord | null> {
    this.assertOpen();
    const row = this.stmt.get.get(documentId);
    return row ? toRecord(row) : null;
  }

  async list(opts: ListOptions): Promise<DocumentRecord[]> {
    this.assertOpen();
    if (opts.after && opts.offset) throw new AppError('invalid_request', 'a list takes a cursor or an offset, not both');
    const where: string[] = [];
    const params: Record<string, string | number> = { limit: Math.max(0, Math.floor(opts.limit)) };
    if (opts.tenant !== undefined) {
      where.push('tenant = @tenant');
      params.tenant = opts.tenant;
    }
    if (opts.status !== undefined) {
      where.push('status = @status');
      params.status = opts.status;
    }
    // Keyset: a row-value comparison on the list order, which SQLite answers with a seek in the (…, updated_at, seq)
    // indexes — the same cost at any depth (an OFFSET walks every earlier row).
    if (opts.after) {
      where.push('(updated_at, seq) < (@afterAt, @afterSeq)');
      params.afterAt = opts.after.updated_at;
      params.afterSeq = opts.after.seq;
    }
    const offset = opts.after ? '' : ' OFFSET @offset';
    if (!opts.after) params.offset = Math.max(0, Math.floor(opts.offset ?? 0));
    const sql = `SELECT * FROM documents ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY updated_at DESC, seq DESC LIMIT @limit${offset}`;
    let stmt = this.listCache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare<Record<string, string | number>, DocumentRow>(sql);
      this.listCache.set(sql, stmt);
    }
    return stmt.all(params).map(toRecord);
  }

  async accept(change: AcceptChange, message?: (record: DocumentRecord) => OutboxMessage): Promise<DocumentRecord> {
    this.assertOpen();
    const now = new Date().toISOString();
    // IMMEDIATE: the read-then-write below must hold the write lock from the start. A deferred transaction that
    // read first fails at once with SQLITE_BUSY ("database is locked", busy_timeout does not apply) when another
    // process (the indexer, the status projector) committed in between, as seen under a 500-document batch ingest.
    const row = this.db.transaction((): DocumentRow => this.acceptRow(change, message, now)).immediate();
    return toRecord(row);
  }

  /** The changes of `accept` in one IMMEDIATE transaction, in order (one fsync for the batch). */
  async acceptMany(items: { change: AcceptChange; message?: (record: DocumentRecord) => OutboxMessage }[]): Promise<DocumentRecord[]> {
    this.assertOpen();
    if (items.length === 0) return [];
    const now = new Date().toISOString();
    const rows = this.db.transaction((): DocumentRow[] => items.map((i) => this.acceptRow(i.change, i.message, now))).immediate();
    return rows.map(toRecord);
  }

  /** One accepted change inside the caller's transaction: the new row (and its outbox message). */
  private acceptRow(change: AcceptChange, message: ((record: DocumentRecord) => OutboxMessage) | undefined, now: string): DocumentRow {
    const existing = this.stmt.get.get(change.document_id);
    if (existing && existing.tenant !== change.tenant) {
      throw new AppError('conflict', `document ${change.document_id} belongs to another tenant`);
    }
    const fields = {
      id: change.document_id,
      now,
      title: change.title ?? null,
      mime_type: change.mime_type ?? null,
      source_url: change.source_url ?? null,
      acl: change.acl === undefined ? null : JSON.stringify(change.acl),
      metadata: change.metadata === undefined ? null : JSON.stringify(change.metadata),
      raw_hash: change.op === 'upsert' ? (change.raw_hash ?? null) : null,
    };
    if (!existing) {
      this.stmt.insert.run({
        ...fields,
        tenant: change.tenant,
        status: change.op === 'upsert' ? 'queued' : 'deleted',
        acl: fields.acl ?? '[]',
        metadata: fields.metadata ?? '{}',
      });
    } else if (change.op === 'upsert') {
      this.stmt.acceptUpsert.run(fields);
    } else {
      this.stmt.acceptDelete.run({ id: change.document_id, now });
    }
    const row = this.stmt.get.get(change.document_id)!;
    if (message) {
      // Built from the committed-to-be record (its new version); a throw here rolls the change back too.
      const m = message(toRecord(row));
      const value = JSON.stringify(m.value);
      this.stmt.outboxInsert.run(m.topic, m.key, value, Buffer.byteLength(value), now);
    }
    return row;
  }

  async claimOutbox(limit: number, leaseMs: number, maxBytes?: number): Promise<OutboxEntry[]> {
    this.assertOpen();
    const now = Date.now();
    // Nothing to claim (the relay's last claim of a round, and most rounds of an idle gateway): one read, without taking
    // the write lock that the claim below needs.
    if (this.stmt.outboxAny.get(now) === undefined) return [];
    const claim = this.db.transaction((): OutboxRow[] => {
      const rows = this.stmt.outboxClaimable.all(now, Math.max(1, Math.floor(limit)), outboxClaimBudget(maxBytes));
      if (rows.length) this.stmt.outboxClaim.run(now + Math.max(0, leaseMs), JSON.stringify(rows.map((r) => r.id)));
      return rows;
    });
    return claim.immediate().map((r) => ({
      id: r.id,
      topic: r.topic as OutboxEntry['topic'],
      key: r.key,
      value: JSON.parse(r.value) as unknown,
      attempts: r.attempts,
    }));
  }

  async outboxStats(): Promise<{ messages: number; bytes: number; oldest_created_at: string | null }> {
    this.assertOpen();
    const r = this.stmt.outboxStats.get()!;
    return { messages: r.messages, bytes: r.bytes, oldest_created_at: r.oldest };
  }

  async completeOutbox(ids: number[]): Promise<void> {
    this.assertOpen();
    if (ids.length) this.stmt.outboxComplete.run(JSON.stringify(ids));
  }

  async releaseOutbox(ids: number[]): Promise<void> {
    this.assertOpen();
    if (ids.length) this.stmt.outboxRelease.run(JSON.stringify(ids));
  }

  async markProcessing(documentId: string, version: number): Promise<void> {
    this.mark('processing', { id: documentId, version });
  }

  async markFailed(documentId: string, version: number, error: string): Promise<void> {
    this.mark('failed', { id: documentId, version, error });
  }

  async markIndexed(documentId: string, version: number, contentHash: string, chunks: number): Promise<void> {
    this.mark('indexed', { id: documentId, version, content_hash: contentHash, chunks });
  }

  async getMany(documentIds: string[]): Promise<Map<string, DocumentRecord>> {
    this.assertOpen();
    const out = new Map<string, DocumentRecord>();
    for (const id of new Set(documentIds)) {
      const row = this.stmt.get.get(id);
      if (row) out.set(id, toRecord(row));
    }
    return out;
  }

  /** The updates of `markIndexed` in one (IMMEDIATE) transaction: one fsync for the batch instead of one per document. */
  async markIndexedMany(items: { documentId: string; version: number; contentHash: string; chunks: number }[]): Promise<void> {
    return this.markMany(items.map((i) => ({ status: 'indexed' as const, ...i })));
  }

  /** The status projection's batch in one IMMEDIATE transaction (one commit instead of one per event). */
  async markMany(updates: StatusUpdate[]): Promise<void> {
    this.assertOpen();
    if (updates.length === 0) return;
    this.db
      .transaction(() => {
        for (const u of updates) {
          const key = { id: u.documentId, version: u.version };
          if (u.status === 'failed') this.mark('failed', { ...key, error: u.error });
          else if (u.status === 'indexed') this.mark('indexed', { ...key, content_hash: u.contentHash, chunks: u.chunks });
          else this.mark(u.status, key);
        }
      })
      .immediate();
  }

  async markUnchanged(documentId: string, version: number): Promise<void> {
    this.mark('unchanged', { id: documentId, version });
  }

  async markDeleted(documentId: string, version: number): Promise<void> {
    this.mark('deleted', { id: documentId, version });
  }

  async activeVersions(documentIds: string[]): Promise<Map<string, number>> {
    this.assertOpen();
    const out = new Map<string, number>();
    if (documentIds.length === 0) return out;
    for (const r of this.stmt.active.all(JSON.stringify(documentIds))) out.set(r.document_id, r.active_version);
    return out;
  }

  async countByStatus(tenant?: string): Promise<Record<DocumentStatus, number>> {
    this.assertOpen();
    const out = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<DocumentStatus, number>;
    const rows = tenant === undefined ? this.stmt.countAll.all() : this.stmt.countTenant.all(tenant);
    for (const r of rows) out[r.status] = r.n;
    return out;
  }

  async recordQueryTrace(traceId: string, tenant: string): Promise<void> {
    this.assertOpen();
    this.stmt.traceInsert.run(traceId, tenant, Date.now());
    if (++this.tracesSincePrune >= TRACE_PRUNE_EVERY) this.pruneTraces();
  }

  async recordFeedback(traceId: string, tenant: string, rating: 'up' | 'down', comment?: string): Promise<boolean> {
    this.assertOpen();
    if (rating !== 'up' && rating !== 'down') throw new AppError('invalid_request', `rating must be "up" or "down"`);
    const record = this.db.transaction((): boolean => {
      if (!this.stmt.traceFind.get(traceId, tenant, Date.now() - this.traceRetentionMs)) return false;
      this.stmt.feedback.run(traceId, tenant, rating, comment ?? null, new Date().toISOString());
      return true;
    });
    return record.immediate();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.listCache.clear();
    this.db.close();
  }

  // ---------------------------------------------------------------------------------------------

  private pruneTraces(): void {
    this.tracesSincePrune = 0;
    this.stmt.tracePruneAge.run(Date.now() - this.traceRetentionMs);
    this.stmt.tracePruneCount.run(this.maxTraces);
  }

  /**
   * Documents per (tenant, status), kept by triggers in the same transaction as every insert, status change and
   * delete of a document, so `countByStatus` reads a handful of rows instead of counting the documents: the old
   * `COUNT(*) … GROUP BY status` walked the (tenant, status) index — ≈ 47 ms per tenant and ≈ 150 ms for all tenants
   * at 1M documents, on the event loop, for every document list, readiness probe, metrics scrape and gate-calibration
   * check. A registry made before this table existed is counted once, in one IMMEDIATE transaction with creating it
   * (a second process opening the same file waits for the lock and then finds the table), so the counts start exact.
   */
  private ensureStatusCounts(): void {
    createTableOnce(
      this.db,
      'document_counts',
      `
      CREATE TABLE document_counts (
        tenant TEXT NOT NULL,
        status TEXT NOT NULL,
        n      INTEGER NOT NULL,
        PRIMARY KEY (tenant, status)
      ) WITHOUT ROWID;
      INSERT INTO document_counts (tenant, status, n) SELECT tenant, status, COUNT(*) FROM documents GROUP BY tenant, status;
      CREATE TRIGGER document_counts_insert AFTER INSERT ON documents BEGIN
        INSERT INTO document_counts (tenant, status, n) VALUES (NEW.tenant, NEW.status, 1)
          ON CONFLICT (tenant, status) DO UPDATE SET n = n + 1;
      END;
      CREATE TRIGGER document_counts_delete AFTER DELETE ON documents BEGIN
        UPDATE document_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status;
      END;
      CREATE TRIGGER document_counts_update AFTER UPDATE OF tenant, status ON documents
        WHEN OLD.tenant IS NOT NEW.tenant OR OLD.status IS NOT NEW.status BEGIN
        UPDATE document_counts SET n = n - 1 WHERE tenant = OLD.tenant AND status = OLD.status;
        INSERT INTO document_counts (tenant, status, n) VALUES (NEW.tenant, NEW.status, 1)
          ON CONFLICT (tenant, status) DO UPDATE SET n = n + 1;
      END;
    `,
    );
  }

  /**
   * The chunks of the active versions of all documents (SUM(chunks) over documents with active_version > 0), kept by
   * triggers in the same transaction as every write of a document, like document_counts (see ensureStatusCounts). The
   * store inspector reads it with document_counts for the registry's side of the start-up and readiness consistency
   * check (every 30 s): its `COUNT(*), SUM(CASE … chunks …), SUM(CASE … status …) FROM documents` scanned the whole
   * table — 90–135 ms at 290k documents (a 1M-chunk data folder), on the event loop. With this one-row table and
   * document_counts those figures are a few rows (0.03 ms there).
   *
   * The triggers see every statement of this adapter that writes `documents`: the plain INSERT of `accept` (AFTER
   * INSERT) and the UPDATEs of `accept` and the `mark*` calls (AFTER UPDATE OF active_version, chunks, which only
   * `markIndexed` and `markDeleted` set; its WHEN clause skips updates that leave the document's active chunks as
   * they were). Nothing here deletes a document or uses REPLACE (whose implicit delete fires DELETE triggers only under
   * recursive_triggers); the AFTER DELETE trigger keeps the total exact should a delete ever be added. A registry made
   * before this table existed is summed once, in one IMMEDIATE transaction with creating it (a second process opening
   * the same file waits for the lock and then finds the table), so the total starts exact (≈ 85 ms, once, at 290k).
   */
  private ensureChunkTotals(): void {
    const active = (row: 'NEW' | 'OLD') => `(CASE WHEN ${row}.active_version > 0 THEN ${row}.chunks ELSE 0 END)`;
    createTableOnce(
      this.db,
      'document_chunk_totals',
      `
      CREATE TABLE document_chunk_totals (
        id            INTEGER PRIMARY KEY CHECK (id = 1),
        active_chunks INTEGER NOT NULL
      );
      INSERT INTO document_chunk_totals (id, active_chunks)
        SELECT 1, COALESCE(SUM(chunks), 0) FROM documents WHERE active_version > 0;
      CREATE TRIGGER document_chunk_totals_insert AFTER INSERT ON documents WHEN ${active('NEW')} <> 0 BEGIN
        UPDATE document_chunk_totals SET active_chunks = active_chunks + ${active('NEW')} WHERE id = 1;
      END;
      CREATE TRIGGER document_chunk_totals_delete AFTER DELETE ON documents WHEN ${active('OLD')} <> 0 BEGIN
        UPDATE document_chunk_totals SET active_chunks = active_chunks - ${active('OLD')} WHERE id = 1;
      END;
      CREATE TRIGGER document_chunk_totals_update AFTER UPDATE OF active_version, chunks ON documents
        WHEN ${active('OLD')} IS NOT ${active('NEW')} BEGIN
        UPDATE document_chunk_totals SET active_chunks = active_chunks - ${active('OLD')} + ${active('NEW')} WHERE id = 1;
      END;
    `,
    );
  }

  /**
   * Schema upgrade of a registry created by an older version (several processes may race to it): true when this call
   * added the column (false: it was there, or another process added it first).
   */
  private addColumnIfMissing(table: string, column: string, type: string): boolean {
    const has = () => (this.db.pragma(`table_info(${table})`) as { name: string }[]).some((c) => c.name === column);
    if (has()) return false;
    try {
      this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
      return true;
    } catch (e) {
      if (!has()) throw e;
      return false;
    }
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`SqliteRegistry(${this.file}) is closed`);
  }

  private mark(
    kind: 'processing' | 'failed' | 'indexed' | 'unchanged' | 'deleted',
    params: { id: string; version: number } & Record<string, string | number>,
  ): void {
    this.assertOpen();
    const info = this.stmt[kind].run({ ...params, now: new Date().toISOString() });
    if (info.changes === 0) {
      this.log.debug('ignored a stale or unknown registry update', { kind, document_id: params.id, version: params.version });
    }
  }
}
