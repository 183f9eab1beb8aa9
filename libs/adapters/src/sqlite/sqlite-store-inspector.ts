import * as fs from 'node:fs';
import * as os from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { AppConfig } from '@rag/platform';
import type { EmbeddingSpace, StoreCounts, StoreFileReport, StoreInspection, StoreInspector, StoreName } from '@rag/ports';
import { modelFolderName } from '../embedded-hnsw/embedded-hnsw.adapter';
import { API_KEYS_DB_FILE } from '../sqlite-api-keys/sqlite-api-key-store.adapter';
import { RESTORE_ADVICE, StoreCorruptError, isCorruptionCode, observedCorruption, oneLine } from './store-error';

/** Tables (and the columns in them) a store's file must hold once it holds any table at all. */
interface ExpectedSchema {
  /** What the file is, for messages ("the document registry"). */
  what: string;
  tables: Record<string, string[]>;
  /** Tables created on demand: checked only when present. */
  optional?: Record<string, string[]>;
}

/**
 * The schema each embedded store creates (see the adapters' CREATE TABLE statements). Columns listed here must exist;
 * extra columns and tables are fine (a newer version may add some). sqlite-store-inspector.spec.ts opens every adapter
 * on a fresh folder and checks its file against this list, so the list cannot drift from the adapters unnoticed.
 */
export const EXPECTED_SCHEMAS: Record<StoreName, ExpectedSchema> = {
  registry: {
    what: 'document registry',
    tables: {
      documents: ['document_id', 'tenant', 'title', 'status', 'version', 'active_version', 'content_hash', 'raw_hash', 'chunks', 'error',
        'mime_type', 'source_url', 'acl', 'metadata', 'created_at', 'updated_at', 'seq'],
      feedback: ['id', 'trace_id', 'rating', 'comment', 'created_at'],
    },
    optional: {
      source_events: ['event_id', 'document_id', 'state', 'received_at', 'prev'],
      source_documents: ['document_id', 'kind', 'tenant', 'scope', 'source_version', 'changed_at', 'deleted', 'updated_at'],
      // The trigger-maintained counts the inspector reads instead of scanning `documents`; created when the adapter
      // opens a registry, so a file made by an older version has neither.
      document_counts: ['tenant', 'status', 'n'],
      document_chunk_totals: ['id', 'active_chunks'],
    },
  },
  keyword: {
    what: 'keyword index',
    tables: {
      chunks: ['id', 'chunk_id', 'document_id', 'tenant', 'version', 'kind', 'acl', 'metadata', 'len', 'body'],
      terms: ['id', 'term', 'df'],
      stats: ['id', 'docs', 'total_len'],
    },
    // Format 3 packs the postings into blocks, format 4 adds the packed block directories (`dirs`); a format-1/2 file
    // (one row per posting) or a format-3 one is migrated on open.
    optional: {
      blocks: ['term_id', 'block', 'max_tf', 'min_len', 'n', 'data'],
      dirs: ['term_id', 'seg', 'data'],
      postings: ['term_id', 'chunk', 'tf', 'len'],
    },
  },
  vectors: {
    what: 'vector store',
    tables: {
      meta: ['key', 'value'],
      records: ['label', 'chunk_id', 'document_id', 'tenant', 'version', 'acl', 'metadata', 'vector'],
    },
    optional: {
      // The trigger-maintained record count the inspector reads instead of counting `records`; created when the
      // adapter opens the store, so a file made by an older version lacks it.
      record_count: ['id', 'n'],
    },
  },
  bus: {
    what: 'embedded bus log',
    tables: {
      bus_offsets: ['grp', 'topic', 'partition', 'committed'],
      bus_heads: ['topic', 'partition', 'head'],
    },
    // The log table changed name (bus_messages → bus_log, migrated on open): either may be there.
    optional: {
      bus_log: ['topic', 'partition', 'offset', 'key', 'headers', 'ts'],
      bus_messages: ['topic', 'partition', 'offset', 'key', 'value', 'headers', 'ts'],
    },
  },
  api_keys: {
    what: 'API key store',
    tables: {
      api_keys: ['id', 'digest', 'name', 'tenant', 'scopes', 'groups', 'unrestricted', 'rate_rps', 'rate_burst', 'created_at', 'last_used_at', 'revoked_at'],
    },
  },
  embedding_cache: {
    what: 'embedding cache',
    tables: { embedding_cache: ['model_id', 'key', 'dim', 'vector', 'created_at'] },
  },
};

export interface StoreFileTarget {
  store: StoreName;
  file: string;
}

/**
 * The embedded store files of a configuration (stores served by Kafka/Milvus/OpenSearch have none). With the shared
 * state in PostgreSQL (RAG_DATABASE_URL or RAG_DATABASE_URL_FILE; the factory's `databaseUrl` decides, see
 * `createStoreInspector` in factory/shared-state.factory.ts) the registry and the API keys live there, so
 * `registry.db` and `api-keys.db` are not the platform's and are not inspected: a leftover or absent `registry.db`
 * there would otherwise count as the registry — an absent one as a lost registry beside an embedded index that holds
 * chunks, refusing the start. The registry's counts are then unknown (null) and the cross-store count rules are
 * skipped; checking PostgreSQL's registry against the embedded indexes is not built (the inspector reads files only).
 */
export function embeddedStoreFiles(config: AppConfig, space: EmbeddingSpace | null, sharedState: 'sqlite' | 'postgres'): StoreFileTarget[] {
  const dir = config.dataDir;
  const inSqlite = sharedState === 'sqlite';
  const out: StoreFileTarget[] = inSqlite ? [{ store: 'registry', file: join(dir, 'registry.db') }] : [];
  if (config.RAG_KEYWORD_INDEX === 'embedded') out.push({ store: 'keyword', file: join(dir, 'keyword.db') });
  if (config.RAG_VECTOR_STORE === 'embedded' && space) {
    out.push({ store: 'vectors', file: join(dir, 'vectors', modelFolderName(space.modelId, space.dim), 'vectors.db') });
  }
  if (config.RAG_BUS === 'embedded') out.push({ store: 'bus', file: join(dir, 'bus.db') });
  if (inSqlite) out.push({ store: 'api_keys', file: join(dir, API_KEYS_DB_FILE) });
  out.push({ store: 'embedding_cache', file: join(dir, 'embedding-cache.db') });
  return out;
}

/*
 * Read-ahead before the structure check. quick_check and integrity_check visit the pages in b-tree order, which on a
 * large file written over time is scattered: from a cold page cache the reads are random and slow. At 1M chunks
 * (keyword.db 5.5 GB, vectors.db 2.3 GB) the start-up check took 180 s cold and 12 s warm on this machine, whose disk
 * reads the same files sequentially at 1.3 GB/s — so each large file is first read once in file order (it then lies in
 * the page cache, where the check and the adapters opening it next find it). Only while the files fit in half the
 * memory available (the host's, or the container's limit when lower): beyond that the cache could not hold them and
 * the read would only add to the check.
 */
const READ_AHEAD_MIN_BYTES = 64 * 2 ** 20;
const READ_AHEAD_CHUNK = 8 * 2 ** 20;

function readAheadBudget(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  const available = limit > 0 ? Math.min(os.freemem(), Math.max(0, limit - process.memoryUsage.rss())) : os.freemem();
  return Math.floor(available / 2);
}

/** Reads a file once from start to end (into the OS page cache); errors are left to the check that follows. */
function readSequentially(file: string): void {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, 'r');
    const buf = Buffer.allocUnsafe(READ_AHEAD_CHUNK);
    while (fs.readSync(fd, buf, 0, buf.length, null) > 0) {
      /* the pages are what is wanted */
    }
  } catch {
    /* unreadable: the check that follows reports it */
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

function describe(file: string, e: unknown): string {
  if (e instanceof StoreCorruptError) return e.message;
  const code = (e as { code?: unknown } | null)?.code;
  const message = e instanceof Error ? e.message : String(e);
  if (isCorruptionCode(code)) return StoreCorruptError.fromSqlite(file, code, message).message;
  return `cannot read ${file} (${oneLine(typeof code === 'string' ? `${code}: ${message}` : message)})`;
}

/** Missing tables/columns of `db` against `schema`; [] when it matches or holds no table at all (a new, empty file). */
export function schemaProblems(db: Database.Database, schema: ExpectedSchema): string[] {
  const present = new Set(
    db
      .prepare<[], { name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all()
      .map((r) => r.name),
  );
  if (present.size === 0) return [];
  const problems: string[] = [];
  const check = (table: string, columns: string[], required: boolean) => {
    if (!present.has(table)) {
      if (required) problems.push(`no table ${table}`);
      return;
    }
    const have = new Set(db.prepare<[], { name: string }>(`SELECT name FROM pragma_table_info('${table.replace(/'/g, "''")}')`).all().map((r) => r.name));
    const missing = columns.filter((c) => !have.has(c));
    if (missing.length > 0) problems.push(`table ${table} lacks column${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`);
  };
  for (const [t, cols] of Object.entries(schema.tables)) check(t, cols, true);
  for (const [t, cols] of Object.entries(schema.optional ?? {})) check(t, cols, false);
  return problems;
}

type CountKey = 'registry' | 'keyword' | 'vectors';

/**
 * The registry's documents (n), the chunks of their active versions (c) and the documents queued or processing (p).
 * The registry adapter keeps these in trigger-maintained tables, exact in every committed state (document_counts per
 * tenant and status, document_chunk_totals: see SqliteRegistry.ensureStatusCounts and ensureChunkTotals), so with
 * `counters` they are a few rows to read (0.03 ms at 290k documents). Without them — a registry made by an older
 * version, inspected at start-up before the adapter opened it and created them — or without the totals row, the
 * documents are scanned (90–135 ms at 290k documents).
 */
function registryCounts(db: Database.Database, counters: boolean): { n: number; c: number; p: number } {
  if (counters) {
    const r = db
      .prepare<[], { n: number; c: number | null; p: number }>(
        "SELECT (SELECT COALESCE(SUM(n), 0) FROM document_counts) AS n, (SELECT active_chunks FROM document_chunk_totals WHERE id = 1) AS c, (SELECT COALESCE(SUM(n), 0) FROM document_counts WHERE status IN ('queued', 'processing')) AS p",
      )
      .get()!;
    if (r.c !== null) return { n: r.n, c: r.c, p: r.p };
  }
  return db
    .prepare<[], { n: number; c: number; p: number }>(
      "SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN active_version > 0 THEN chunks ELSE 0 END), 0) AS c, COALESCE(SUM(CASE WHEN status IN ('queued', 'processing') THEN 1 ELSE 0 END), 0) AS p FROM documents",
    )
    .get()!;
}

/**
 * The vector store's records. The adapter keeps their number in a trigger-maintained one-row table, exact in every
 * committed state (record_count: see EmbeddedHnswVectorStore.ensureRecordCount), so with `counter` it is one row to
 * read (counts() 0.2 ms at 1.08M records, the connection's open included). Without it — a store made by an older
 * version, inspected at start-up before the adapter opened it and created the table — or without its row, the records
 * are counted (counts() 16 ms there, growing with the corpus).
 */
function vectorRecordCount(db: Database.Database, counter: boolean): number {
  if (counter) {
    const r = db.prepare<[], { n: number }>('SELECT n FROM record_count WHERE id = 1').get();
    if (r) return r.n;
  }
  return db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM records').get()!.n;
}

/**
 * StoreInspector over the embedded SQLite files, through its own short-lived connections (never the adapters'), so it
 * runs before the adapters open anything (start-up) and beside them (readiness). Read-only in effect: it runs only
 * pragmas and SELECTs (SQLite may replay a crashed process's WAL on open, as the adapters would).
 */
export class SqliteStoreInspector implements StoreInspector {
  /** Files that existed at some inspection: one that disappears later is a problem. */
  private readonly seen = new Set<string>();
  /** Files that held data at some inspection: truncation to 0 bytes later is a problem. */
  private readonly wasNonEmpty = new Set<string>();

  /** readAheadMinBytes: files from this size on are read ahead of the structure check (default READ_AHEAD_MIN_BYTES). */
  constructor(
    readonly targets: StoreFileTarget[],
    private readonly opts: { readAheadMinBytes?: number } = {},
  ) {}

  async inspect(mode: 'quick' | 'full' | 'none'): Promise<StoreInspection> {
    const started = Date.now();
    const files: StoreFileReport[] = [];
    const counts: StoreCounts = { registryDocuments: null, registryIndexedChunks: null, registryPendingDocuments: null, keywordChunks: null, vectorRecords: null, files: {} };
    const readAhead = { budget: readAheadBudget() }; // spent by inspectFile, which reads ahead only for a structure check
    for (const t of this.targets) {
      const report = this.inspectFile(t, mode, counts, readAhead);
      if (report.exists) this.seen.add(t.file);
      files.push(report);
    }
    return { files, counts, ms: Date.now() - started };
  }

  async ping(): Promise<StoreFileReport[]> {
    const out: StoreFileReport[] = [];
    const runtime = new Map(observedCorruption(this.targets.map((t) => t.file)).map((e) => [e.file, e.message]));
    for (const t of this.targets) {
      const r: StoreFileReport = { store: t.store, file: t.file, exists: false, bytes: 0, ok: true };
      try {
        const st = fs.statSync(t.file);
        r.exists = true;
        r.bytes = st.size;
        this.seen.add(t.file);
        const head = Buffer.alloc(SQLITE_HEADER.length);
        const fd = fs.openSync(t.file, 'r');
        let n: number;
        try {
          n = fs.readSync(fd, head, 0, head.length, 0);
        } finally {
          fs.closeSync(fd);
        }
        if (n > 0 && !head.subarray(0, n).equals(SQLITE_HEADER.subarray(0, n))) {
          r.ok = false;
          r.problem = `${t.file} is no longer a SQLite database (overwritten while the service ran): ${RESTORE_ADVICE}`;
        } else if (st.size === 0 && this.wasNonEmpty.has(t.file)) {
          // An opened store always has a header; an empty file now means it was truncated under the running service.
          r.ok = false;
          r.problem = `${t.file} was truncated to 0 bytes while the service ran: ${RESTORE_ADVICE}`;
        }
        if (st.size > 0) this.wasNonEmpty.add(t.file);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
          if (this.seen.has(t.file)) {
            r.ok = false;
            r.problem = `${t.file} was removed while the service ran: ${RESTORE_ADVICE}`;
          }
        } else {
          r.ok = false;
          r.problem = describe(t.file, e);
        }
      }
      const seenCorrupt = runtime.get(t.file);
      if (seenCorrupt && r.ok) {
        r.ok = false;
        r.problem = seenCorrupt;
      }
      out.push(r);
    }
    return out;
  }

  async counts(): Promise<StoreCounts> {
    const counts: StoreCounts = { registryDocuments: null, registryIndexedChunks: null, registryPendingDocuments: null, keywordChunks: null, vectorRecords: null, files: {} };
    for (const t of this.targets) {
      if (t.store !== 'registry' && t.store !== 'keyword' && t.store !== 'vectors') continue;
      if (!fs.existsSync(t.file)) {
        this.count(t.store, null, counts, t.file);
        continue;
      }
      let db: Database.Database | undefined;
      try {
        db = new Database(t.file, { fileMustExist: true });
        this.count(t.store, db, counts, t.file);
      } catch {
        /* unreadable now: the count stays null; ping and the runtime corruption record tell why */
      } finally {
        db?.close();
      }
    }
    return counts;
  }

  private inspectFile(t: StoreFileTarget, mode: 'quick' | 'full' | 'none', counts: StoreCounts, readAhead: { budget: number }): StoreFileReport {
    const report: StoreFileReport = { store: t.store, file: t.file, exists: false, bytes: 0, ok: true };
    let st: fs.Stats;
    try {
      st = fs.statSync(t.file);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return { ...report, exists: true, ok: false, problem: describe(t.file, e) };
      if (t.store === 'registry' || t.store === 'keyword' || t.store === 'vectors') this.count(t.store, null, counts, t.file);
      return report;
    }
    report.exists = true;
    report.bytes = st.size;
    if (!st.isFile()) return { ...report, ok: false, problem: `cannot open ${t.file} (it is not a regular file)` };
    if (st.size > 0) this.wasNonEmpty.add(t.file);
    let db: Database.Database | undefined;
    try {
      if (mode !== 'none' && st.size >= (this.opts.readAheadMinBytes ?? READ_AHEAD_MIN_BYTES) && st.size <= readAhead.budget) {
        readAhead.budget -= st.size;
        readSequentially(t.file);
      }
      db = new Database(t.file, { fileMustExist: true });
      const pragma = mode === 'full' ? 'integrity_check(20)' : mode === 'quick' ? 'quick_check(20)' : null;
      // Without a structure check, reading the schema still tells a database from another file.
      const rows = pragma ? (db.pragma(pragma) as Record<string, string>[]).map((r) => String(Object.values(r)[0])) : ['ok'];
      if (rows.length !== 1 || rows[0] !== 'ok') {
        const shown = rows.slice(0, 3).join('; ') + (rows.length > 3 ? `; … ${rows.length - 3} more` : '');
        return { ...report, ok: false, problem: new StoreCorruptError(t.file, 'SQLITE_CORRUPT', `is corrupt (${mode === 'full' ? 'integrity_check' : 'quick_check'}: ${oneLine(shown)})`).message };
      }
      const schema = EXPECTED_SCHEMAS[t.store];
      const missing = schemaProblems(db, schema);
      if (missing.length > 0) {
        return { ...report, ok: false, problem: new StoreCorruptError(t.file, 'SCHEMA', `does not hold the schema of the ${schema.what} (${missing.join('; ')})`).message };
      }
      if (t.store === 'registry' || t.store === 'keyword' || t.store === 'vectors') this.count(t.store, db, counts, t.file);
    } catch (e) {
      return { ...report, ok: false, problem: describe(t.file, e) };
    } finally {
      db?.close();
    }
    return report;
  }

  /** Fills the counts of one store; a store without its tables yet (a new or 0-byte file) counts 0. Throws on a read error. */
  private count(store: CountKey, db: Database.Database | null, counts: StoreCounts, file: string): void {
    counts.files[store] = file;
    const has = (table: string) => db !== null && db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(table) !== undefined;
    if (store === 'registry') {
      const r = has('documents') ? registryCounts(db!, has('document_counts') && has('document_chunk_totals')) : { n: 0, c: 0, p: 0 };
      counts.registryDocuments = r.n;
      counts.registryIndexedChunks = r.c;
      counts.registryPendingDocuments = r.p;
    } else if (store === 'keyword') {
      counts.keywordChunks = has('stats') ? (db!.prepare<[], { docs: number }>('SELECT docs FROM stats WHERE id = 1').get()?.docs ?? 0) : 0;
    } else {
      counts.vectorRecords = has('records') ? vectorRecordCount(db!, has('record_count')) : 0;
    }
  }
}
