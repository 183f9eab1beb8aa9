import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { AppError } from '@rag/platform';
import { API_KEYS_DB_FILE } from '../sqlite-api-keys';
import { PgDatabase, pgText, type PgDatabaseOptions } from './pg-database';

/**
 * Copies the shared state of an existing embedded/single-host installation (RAG_DATA_DIR/registry.db and
 * api-keys.db) into PostgreSQL, for a move to the distributed mode (`rag db copy-sqlite`).
 *
 * - One PostgreSQL transaction: the copy is complete or nothing is written.
 * - Refuses a target that already holds documents, API keys or source state (no merge of two histories: versions,
 *   outbox ids and event ids would collide); the target schema is created/migrated first.
 * - Everything that carries meaning is kept: document versions, active versions, hashes, statuses, `seq` order,
 *   pending outbox messages (their claims released), query traces, feedback, webhook event ids and source state,
 *   API key digests, revocations and the "a key has existed" marker. Sequences continue after the copied ids.
 * - The SQLite files are opened read-only; stop the platform that uses them first (a change written during the copy
 *   would be missing).
 */
export interface SqliteImportReport {
  documents: number;
  outbox: number;
  query_traces: number;
  feedback: number;
  source_events: number;
  source_documents: number;
  api_keys: number;
}

const BATCH = 500;

export async function importSqliteIntoPostgres(opts: PgDatabaseOptions & { dataDir: string }): Promise<SqliteImportReport> {
  const registryFile = join(opts.dataDir, 'registry.db');
  const keysFile = join(opts.dataDir, API_KEYS_DB_FILE);
  if (!existsSync(registryFile) && !existsSync(keysFile)) {
    throw new AppError('invalid_request', `no registry.db or ${API_KEYS_DB_FILE} in ${opts.dataDir}: nothing to copy`);
  }
  const open = (f: string) => (existsSync(f) ? new Database(f, { readonly: true, fileMustExist: true }) : null);
  const reg = open(registryFile);
  const keys = open(keysFile);
  const db = await PgDatabase.open(opts);
  const report: SqliteImportReport = { documents: 0, outbox: 0, query_traces: 0, feedback: 0, source_events: 0, source_documents: 0, api_keys: 0 };
  try {
    const has = (d: Database.Database | null, table: string) =>
      !!d && d.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
    const rows = (d: Database.Database | null, table: string, sql: string): Record<string, unknown>[] =>
      has(d, table) ? (d!.prepare(sql).all() as Record<string, unknown>[]) : [];

    await db.transaction(async (c) => {
      // Serialize with any other import (and check emptiness inside the same transaction).
      await c.query('SELECT pg_advisory_xact_lock(7261, 3)');
      const { rows: busy } = await c.query<{ n: number }>(
        `SELECT (SELECT COUNT(*) FROM documents) + (SELECT COUNT(*) FROM api_keys) + (SELECT COUNT(*) FROM source_documents)
              + (SELECT COUNT(*) FROM source_events) AS n`,
      );
      if (busy[0]!.n > 0) {
        throw new AppError('conflict', 'the PostgreSQL database already holds documents, API keys or source state: copy into an empty one');
      }
      const insert = async (table: string, cols: string[], data: unknown[][]) => {
        for (let i = 0; i < data.length; i += BATCH) {
          const part = data.slice(i, i + BATCH);
          const values = part.map((_, r) => `(${cols.map((__, k) => `$${r * cols.length + k + 1}`).join(', ')})`).join(', ');
          await c.query(`INSERT INTO ${table} (${cols.join(', ')}) VALUES ${values}`, part.flat());
        }
      };

      const docs = rows(reg, 'documents', 'SELECT * FROM documents ORDER BY seq');
      await insert(
        'documents',
        ['document_id', 'tenant', 'title', 'status', 'version', 'active_version', 'content_hash', 'raw_hash', 'chunks', 'error', 'mime_type', 'source_url', 'acl', 'metadata', 'created_at', 'updated_at', 'seq'],
        docs.map((d) => [d.document_id, d.tenant, pgText(d.title as string | null), d.status, d.version, d.active_version, d.content_hash, d.raw_hash, d.chunks, pgText(d.error as string | null), d.mime_type, pgText(d.source_url as string | null), d.acl, d.metadata, d.created_at, d.updated_at, d.seq]),
      );
      report.documents = docs.length;

      const outbox = rows(reg, 'outbox', 'SELECT * FROM outbox ORDER BY id');
      // Claims are released: the relays of the new deployment publish what the old one had not.
      await insert(
        'outbox',
        ['id', 'topic', 'key', 'value', 'bytes', 'created_at', 'claimed_until', 'attempts'],
        outbox.map((o) => [o.id, o.topic, o.key, o.value, Buffer.byteLength(String(o.value)), o.created_at, 0, o.attempts]),
      );
      report.outbox = outbox.length;

      const traces = rows(reg, 'query_traces', 'SELECT trace_id, tenant, created_at FROM query_traces');
      await insert('query_traces', ['trace_id', 'tenant', 'created_at'], traces.map((t) => [t.trace_id, t.tenant, t.created_at]));
      report.query_traces = traces.length;

      // Feedback from before tenants were recorded has none: it is kept under '' (no tenant can read or match it).
      const feedback = rows(reg, 'feedback', 'SELECT * FROM feedback ORDER BY id');
      await insert('feedback', ['id', 'trace_id', 'tenant', 'rating', 'comment', 'created_at'], feedback.map((f) => [f.id, f.trace_id, f.tenant ?? '', f.rating, pgText(f.comment as string | null), f.created_at]));
      report.feedback = feedback.length;

      const events = rows(reg, 'source_events', 'SELECT * FROM source_events');
      // `prev` (the state a pending admission would restore) is SQLite's row JSON; normalized to the PostgreSQL shape.
      await insert('source_events', ['event_id', 'document_id', 'state', 'received_at', 'prev'], events.map((e) => [e.event_id, e.document_id, e.state, e.received_at, normalizePrev(e.prev as string | null)]));
      report.source_events = events.length;

      const sources = rows(reg, 'source_documents', 'SELECT * FROM source_documents');
      await insert(
        'source_documents',
        ['document_id', 'kind', 'tenant', 'scope', 'source_version', 'changed_at', 'deleted', 'updated_at'],
        sources.map((s) => [s.document_id, s.kind, s.tenant, s.scope, s.source_version, s.changed_at, s.deleted === 1, s.updated_at]),
      );
      report.source_documents = sources.length;

      const apiKeys = rows(keys, 'api_keys', 'SELECT * FROM api_keys');
      await insert(
        'api_keys',
        ['id', 'digest', 'name', 'tenant', 'scopes', 'groups', 'unrestricted', 'rate_rps', 'rate_burst', 'created_at', 'last_used_at', 'revoked_at'],
        apiKeys.map((k) => [k.id, k.digest, pgText(k.name as string | null), k.tenant, k.scopes, k.groups, k.unrestricted === 1, k.rate_rps, k.rate_burst, k.created_at, k.last_used_at, k.revoked_at]),
      );
      report.api_keys = apiKeys.length;
      const marker = has(keys, 'api_key_store_meta')
        ? (keys!.prepare("SELECT value FROM api_key_store_meta WHERE name = 'first_key_at'").get() as { value: string } | undefined)
        : apiKeys.length
          ? { value: String(apiKeys[0]!.created_at) }
          : undefined;
      if (marker) await c.query(`INSERT INTO api_key_store_meta (name, value) VALUES ('first_key_at', $1) ON CONFLICT (name) DO NOTHING`, [marker.value]);

      // Sequences continue after the copied ids / change counter.
      for (const [seq, table, col] of [[`'documents_seq'`, 'documents', 'seq'], [`pg_get_serial_sequence('outbox', 'id')`, 'outbox', 'id'], [`pg_get_serial_sequence('feedback', 'id')`, 'feedback', 'id']]) {
        await c.query(`SELECT setval(${seq}, GREATEST(m, 1), m > 0) FROM (SELECT COALESCE(MAX(${col}), 0) AS m FROM ${table}) x`);
      }
    });
    return report;
  } finally {
    reg?.close();
    keys?.close();
    await db.release();
  }
}

function normalizePrev(prev: string | null): string | null {
  if (prev === null) return null;
  const p = JSON.parse(prev) as Record<string, unknown>;
  return JSON.stringify({ ...p, deleted: p.deleted === 1 || p.deleted === true });
}
