import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { HierarchicalNSW } from 'hnswlib-node';
import { Logger } from '@rag/platform';
import type { VectorHit, VectorRecord, VectorSearchRequest, VectorStore } from '@rag/ports';
import { createTableOnce, openSqlite } from '../sqlite/open-sqlite';
import { documentRuns, WRITE_RUN_ITEMS, yieldToLoop } from '../sqlite/write-runs';
import { LiveEntries, type EntryFields } from './live-entries';

/**
 * Embedded, persistent vector store for the one-process mode.
 *
 * - SQLite (better-sqlite3, WAL) is the source of truth and the write-ahead log: one row per chunk with its security
 *   fields, metadata and the float32 vector as a BLOB, committed before `upsert`/`deleteDocument` return. The row's
 *   `label` (an AUTOINCREMENT rowid, never reused) is the hnswlib label, so a label always names the same vector.
 * - The hnswlib graph (cosine space) is derived data, checkpointed to `index.hnsw` (plus `index.meta.json`) only when
 *   the graph changes (adds + deletes) since the last checkpoint reach max(`checkpointOps`, `checkpointFraction` ×
 *   records), checked on `flush()` and periodically, and on `close()`. A checkpoint rewrites the whole graph (hnswlib
 *   has no incremental save), so this rule keeps the bytes written per upserted record bounded by a constant
 *   (≤ graph bytes per record / fraction) instead of growing with the corpus, as a rewrite on every flush did.
 *   Checkpoints made on flush or by the timer are written on the libuv pool while searches go on (graph changes
 *   wait for the file; see `checkpointing`); only the ones made on open and close are written synchronously.
 * - On open the last checkpoint is loaded and CAUGHT UP with SQLite: labels in SQLite missing from the graph are
 *   added, labels in the graph that SQLite no longer holds are marked deleted. The work is bounded by the ops since
 *   the last checkpoint. The graph is rebuilt from all blobs only when the checkpoint is missing, unreadable or
 *   foreign. A checkpoint writes a temporary file, fsyncs it and renames it over the old one, then does the same for
 *   the meta; before that, SQLite's WAL is checkpointed (synced) so the graph never holds a label SQLite could lose.
 *   A crash at any point (mid-checkpoint included) therefore leaves either checkpoint, and the catch-up makes every
 *   committed vector searchable.
 * - The in-memory label → fields table (LiveEntries: column arrays, interned document ids and ACL/metadata sets, no
 *   object per label) holds exactly the rows of SQLite. Search picks the cheapest exact way to apply tenant, ACL and
 *   metadata filters (hnswlib-node's filter is a JS callback per visited candidate, which alone cost ~30 % of the
 *   library's queries/s on bigann10k):
 *   1. the scope reads every label and there are no filters (one tenant, unrestricted or all-public): no filter;
 *   2. no filters, and the per-tenant/principal counts guarantee that a fraction s of the labels is readable with
 *      2·k/s ≤ ef: an unfiltered search for 2·k/s neighbours (the same ef, so the same graph work), filtered
 *      afterwards; if fewer than k permitted labels come back (and they were not all labels), it falls through to 3;
 *   3. otherwise the filter goes inside the graph traversal (a callback that is one typed-array lookup once a label's
 *      ACL/metadata set was judged), so a restrictive filter still yields its k best matching hits (hnswlib keeps
 *      exploring until it has `ef` allowed candidates).
 *   Metadata filters (and scopes whose counts only give a loose bound) first estimate their share of the labels from
 *   a sample of 64 (SELECTIVITY_SAMPLE): when 2·k / share ≤ ef they take path 2 with that share, otherwise 3 — so a
 *   selective filter pays no wasted search, and a broad one no callback.
 * - Each model/dimension gets its own folder `dir/<sanitised modelId>-<dim>/`, so vectors of two models
 *   never mix, and the stored model id/dim are checked on open.
 *
 * One instance per folder: two live instances on the same folder (even in one process) are not supported.
 */
export interface EmbeddedHnswVectorStoreOptions {
  /** Parent data folder (e.g. `${RAG_DATA_DIR}/vectors`). */
  dir: string;
  /** Embedding model id; its vectors live in their own sub-folder. */
  modelId: string;
  /** Vector dimension; every upserted and query vector must have it. */
  dim: number;
  /** HNSW graph degree (default 16). Only used when an index is built. */
  m?: number;
  /** HNSW construction beam width (default 200). Only used when an index is built. */
  efConstruction?: number;
  /** HNSW search beam width (default 100; raised to k for larger k). */
  ef?: number;
  /** Initial capacity of a new index (default 1024); it doubles whenever full. */
  initialCapacity?: number;
  /**
   * A checkpoint of the graph is due once this many graph changes (adds + deletes) accumulated since the last one, or
   * `checkpointFraction` × records if that is larger (default 10 000). Bounds the catch-up work of an open after a crash.
   */
  checkpointOps?: number;
  /** See `checkpointOps` (default 0.1: a checkpoint rewrites the graph at most once per 10 % of it changing). */
  checkpointFraction?: number;
  /** Check every this many ms whether a checkpoint is due and write it (default 60 000; 0 = only on flush/close). */
  persistIntervalMs?: number;
  /** SQLite `synchronous` (default FULL: a returned upsert survives power loss). */
  synchronous?: 'FULL' | 'NORMAL';
  /**
   * SQLite page cache of vectors.db in KiB (default 2048, SQLite's own default; better-sqlite3 builds with 16 MiB).
   * The store reads SQLite only for point lookups on upsert/delete and sequential scans on a rebuild, which a large
   * cache barely helps, while it is resident memory beside every graph (16 MiB was 1.6 KiB per vector at 10k vectors).
   */
  sqliteCacheKiB?: number;
  /** Seed for the HNSW level generator (default 100), for reproducible graphs. */
  randomSeed?: number;
  logger?: Logger;
}

interface RecordRow {
  label: number;
  chunk_id: string;
  document_id: string;
  tenant: string;
  version: number;
  acl: string;
  metadata: string;
}

interface IndexMeta {
  format: number;
  model_id: string;
  dim: number;
  /** SQLite generation and record count the checkpoint reflects (informational: the catch-up compares labels). */
  generation: number;
  count: number;
  /** Highest label in the graph when it was written (format 2). */
  max_label?: number;
  saved_at: string;
}

type IndexOp = { kind: 'remove'; label: number } | { kind: 'add'; label: number; vector: Float32Array; entry: EntryFields };

const INDEX_FILE = 'index.hnsw';
const META_FILE = 'index.meta.json';
const DB_FILE = 'vectors.db';
/**
 * Oversampling factor of search path 2: an unfiltered search asks for this many times k / (readable fraction), so the
 * expected number of permitted hits is twice k (fewer than k falls back to the filtered search).
 */
const OVERSAMPLE = 2;
/**
 * Labels sampled to estimate a filter's share of the index for path 2 (a few typed-array reads each; the verdict of an
 * ACL/metadata set is memoised per search). With a true share of 0.5 the estimate's standard error is ≈ 0.06, which
 * the factor 2 of OVERSAMPLE absorbs; a short result falls back to path 3.
 */
const SELECTIVITY_SAMPLE = 64;
/** Format 2: checkpoints that are caught up on open. Format 1 (graph rewritten on every flush) loads the same way. */
const META_FORMAT = 2;
const READABLE_META_FORMATS = new Set([1, 2]);
const NEW_STORE = 'new store';

/** Folder name for a model: readable, filesystem-safe, and unambiguous (a hash is added when characters were replaced). */
export function modelFolderName(modelId: string, dim: number): string {
  let safe = modelId.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^\.+/, '_');
  if (safe !== modelId || safe.length === 0 || safe.length > 100) {
    safe = `${safe.slice(0, 100)}-${createHash('sha256').update(modelId).digest('hex').slice(0, 8)}`;
  }
  return `${safe}-${dim}`;
}

function toBlob(v: Float32Array): Buffer {
  return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
}

function fromBlob(b: Buffer): Float32Array {
  // Copy: a Buffer's byteOffset need not be 4-byte aligned.
  const out = new Float32Array(b.byteLength / 4);
  new Uint8Array(out.buffer).set(b);
  return out;
}

/** Copies a vector into `out` (hnswlib-node takes a JS array; reusing one saves an allocation per call). */
function fillArray(v: Float32Array, out: number[]): number[] {
  for (let i = 0; i < v.length; i++) out[i] = v[i]!;
  return out;
}

/** fsync a file or folder by path (a folder's fsync makes a rename in it durable). */
/** fsyncPath on the libuv pool (for the checkpoint written while the event loop keeps serving). */
async function fsyncPathAsync(p: string, isDir = false): Promise<void> {
  let fh: fs.promises.FileHandle;
  try {
    fh = await fs.promises.open(p, 'r');
  } catch (e) {
    if (isDir) return;
    throw e;
  }
  try {
    await fh.sync();
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (!(isDir && (code === 'EISDIR' || code === 'EINVAL' || code === 'EPERM' || code === 'EBADF'))) throw e;
  } finally {
    await fh.close();
  }
}

function fsyncPath(p: string, isDir = false): void {
  let fd: number;
  try {
    fd = fs.openSync(p, 'r');
  } catch (e) {
    if (isDir) return; // platforms that cannot open a folder (Windows) have no folder fsync either
    throw e;
  }
  try {
    fs.fsyncSync(fd);
  } catch (e) {
    const code = (e as { code?: string }).code;
    if (!(isDir && (code === 'EISDIR' || code === 'EINVAL' || code === 'EPERM' || code === 'EBADF'))) throw e;
  } finally {
    fs.closeSync(fd);
  }
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class EmbeddedHnswVectorStore implements VectorStore {
  readonly storeDir: string;
  private readonly dim: number;
  private readonly modelId: string;
  private readonly m: number;
  private readonly efConstruction: number;
  private readonly ef: number;
  private readonly initialCapacity: number;
  private readonly randomSeed: number;
  private readonly checkpointOps: number;
  private readonly checkpointFraction: number;
  private readonly synchronous: 'FULL' | 'NORMAL';
  private readonly log: Logger;
  private readonly db: Database.Database;
  private index!: HierarchicalNSW;
  /** label → fields used by the search filter and the hits; exactly the rows of SQLite. */
  private readonly live = new LiveEntries();
  /** The ef last set on the graph (setEf is only called when it changes); -1 after the graph was replaced. */
  private efSet = -1;
  /** Scratch arrays for hnswlib-node, which takes vectors as JS arrays (the query and the point being added). */
  private readonly queryBuf: number[];
  private readonly pointBuf: number[];
  /** Labels present in the graph but marked deleted (their slots are reused by later inserts). */
  private deletedInIndex = 0;
  private generation = 0;
  /** Graph changes (adds + deletes) since the last checkpoint: what an open after a crash must replay. */
  private opsSinceCheckpoint = 0;
  /** Set after a rebuild: the graph differs from the checkpoint in unknown ways, so the next check writes one. */
  private checkpointRequired = false;
  /**
   * The checkpoint being written, if any. It is written on the libuv pool (hnswlib-node's async writeIndex), so
   * searches keep being answered meanwhile — a checkpoint of 1M vectors is ≈ 1.7 GB, seconds of writing that used to
   * stall every request on the event loop. The graph must not change while it is serialised: upserts and deletes
   * commit to SQLite at once (durable, and what an open after a crash catches up from) and wait for this promise
   * before they touch the graph, in the order they committed. Searches only read the graph, as the writer does.
   */
  private checkpointing: Promise<void> | null = null;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;

  private readonly stmt: {
    byChunk: Database.Statement<[string], { label: number; document_id: string; tenant: string; version: number; acl: string; metadata: string; vector: Buffer }>;
    insert: Database.Statement<[string, string, string, number, string, string, Buffer]>;
    deleteLabel: Database.Statement<[number]>;
    docLabels: Database.Statement<[string], { label: number }>;
    docLabelsExcept: Database.Statement<[string, number], { label: number }>;
    countAll: Database.Statement<[], { n: number }>;
    countDoc: Database.Statement<[string], { n: number }>;
    setGeneration: Database.Statement<[string]>;
    vectorOf: Database.Statement<[number], { vector: Buffer }>;
  };

  /** Async factory (the constructor is synchronous; this is the form DI factories usually want). */
  static async open(opts: EmbeddedHnswVectorStoreOptions): Promise<EmbeddedHnswVectorStore> {
    return new EmbeddedHnswVectorStore(opts);
  }

  constructor(opts: EmbeddedHnswVectorStoreOptions) {
    if (!Number.isInteger(opts.dim) || opts.dim <= 0) throw new Error(`EmbeddedHnswVectorStore: dim must be a positive integer, got ${opts.dim}`);
    if (!opts.modelId) throw new Error('EmbeddedHnswVectorStore: modelId is required');
    this.dim = opts.dim;
    this.modelId = opts.modelId;
    this.m = opts.m ?? 16;
    this.efConstruction = opts.efConstruction ?? 200;
    this.ef = opts.ef ?? 100;
    this.initialCapacity = Math.max(16, opts.initialCapacity ?? 1024);
    this.randomSeed = opts.randomSeed ?? 100;
    this.checkpointOps = opts.checkpointOps ?? 10_000;
    this.checkpointFraction = opts.checkpointFraction ?? 0.1;
    if (!Number.isInteger(this.checkpointOps) || this.checkpointOps < 1) {
      throw new Error(`EmbeddedHnswVectorStore: checkpointOps must be a positive integer, got ${this.checkpointOps}`);
    }
    if (!Number.isFinite(this.checkpointFraction) || this.checkpointFraction < 0) {
      throw new Error(`EmbeddedHnswVectorStore: checkpointFraction must be a finite number >= 0, got ${this.checkpointFraction}`);
    }
    this.synchronous = opts.synchronous ?? 'FULL';
    this.queryBuf = new Array<number>(this.dim).fill(0);
    this.pointBuf = new Array<number>(this.dim).fill(0);
    this.log = opts.logger ?? new Logger('embedded-hnsw');
    this.storeDir = path.join(opts.dir, modelFolderName(opts.modelId, opts.dim));
    fs.mkdirSync(this.storeDir, { recursive: true });

    const cacheKiB = opts.sqliteCacheKiB ?? 2048;
    if (!Number.isInteger(cacheKiB) || cacheKiB < 0) throw new Error(`EmbeddedHnswVectorStore: sqliteCacheKiB must be an integer >= 0, got ${cacheKiB}`);
    this.db = openSqlite(path.join(this.storeDir, DB_FILE), this.synchronous);
    try {
      this.db.pragma(`cache_size = -${cacheKiB}`);
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS records (
          label       INTEGER PRIMARY KEY AUTOINCREMENT,
          chunk_id    TEXT NOT NULL UNIQUE,
          document_id TEXT NOT NULL,
          tenant      TEXT NOT NULL,
          version     INTEGER NOT NULL,
          acl         TEXT NOT NULL,
          metadata    TEXT NOT NULL,
          vector      BLOB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS records_document ON records (document_id, version);
      `);
      this.checkIdentity();
      this.ensureRecordCount();
      this.stmt = {
        byChunk: this.db.prepare('SELECT label, document_id, tenant, version, acl, metadata, vector FROM records WHERE chunk_id = ?'),
        insert: this.db.prepare(
          'INSERT INTO records (chunk_id, document_id, tenant, version, acl, metadata, vector) VALUES (?, ?, ?, ?, ?, ?, ?)',
        ),
        deleteLabel: this.db.prepare('DELETE FROM records WHERE label = ?'),
        docLabels: this.db.prepare('SELECT label FROM records WHERE document_id = ?'),
        docLabelsExcept: this.db.prepare('SELECT label FROM records WHERE document_id = ? AND version <> ?'),
        // Read from the trigger-maintained counter (see ensureRecordCount): one row, not a scan of the records.
        countAll: this.db.prepare('SELECT n FROM record_count WHERE id = 1'),
        countDoc: this.db.prepare('SELECT COUNT(*) AS n FROM records WHERE document_id = ?'),
        setGeneration: this.db.prepare("INSERT INTO meta (key, value) VALUES ('generation', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value"),
        vectorOf: this.db.prepare('SELECT vector FROM records WHERE label = ?'),
      };
      const gen = this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'generation'").get();
      this.generation = gen ? Number(gen.value) : 0;
      this.loadLive();
      this.openIndex();
    } catch (e) {
      this.db.close();
      throw e;
    }
    const every = opts.persistIntervalMs ?? 60_000;
    if (every > 0) {
      this.timer = setInterval(() => {
        if (this.closed) return;
        this.checkpointInBackground().catch((e: unknown) => this.log.error('periodic hnsw checkpoint failed', { dir: this.storeDir, error: e }));
      }, every);
      this.timer.unref();
    }
  }

  /**
   * Validates every record first (a bad one rejects the whole call, nothing written), then writes runs of whole
   * documents, one SQLite transaction and graph update each, yielding to the event loop between runs (documentRuns).
   */
  async upsert(records: VectorRecord[]): Promise<void> {
    this.assertOpen();
    for (const r of records) this.validate(r);
    const runs = documentRuns(records, WRITE_RUN_ITEMS);
    for (let i = 0; i < runs.length; i++) {
      if (i > 0) {
        await yieldToLoop();
        this.assertOpen();
      }
      await this.upsertRun(runs[i]!);
    }
  }

  private async upsertRun(records: VectorRecord[]): Promise<void> {
    const ops: IndexOp[] = [];
    this.db.transaction(() => {
      for (const r of records) {
        const blob = toBlob(r.vector);
        const acl = JSON.stringify(r.acl);
        const metadata = JSON.stringify(r.metadata);
        const old = this.stmt.byChunk.get(r.chunk_id);
        if (
          old &&
          old.document_id === r.document_id &&
          old.tenant === r.tenant &&
          old.version === r.version &&
          old.acl === acl &&
          old.metadata === metadata &&
          old.vector.equals(blob)
        ) {
          continue; // idempotent replay: nothing changes, no label churn
        }
        if (old) {
          this.stmt.deleteLabel.run(old.label);
          ops.push({ kind: 'remove', label: old.label });
        }
        const info = this.stmt.insert.run(r.chunk_id, r.document_id, r.tenant, r.version, acl, metadata, blob);
        const label = Number(info.lastInsertRowid);
        ops.push({
          kind: 'add',
          label,
          vector: r.vector,
          entry: { chunk_id: r.chunk_id, document_id: r.document_id, tenant: r.tenant, version: r.version, acl, metadata },
        });
      }
      if (ops.length > 0) this.bumpGeneration();
    })();
    if (this.checkpointing && ops.length > 0) await this.checkpointing.catch(() => undefined);
    this.applyOps(ops);
  }

  async search(req: VectorSearchRequest): Promise<VectorHit[]> {
    this.assertOpen();
    if (req.vector.length !== this.dim) {
      throw new Error(`EmbeddedHnswVectorStore(${this.modelId}): query vector has dimension ${req.vector.length}, expected ${this.dim}`);
    }
    const k = Math.min(Math.floor(req.k), this.live.size);
    if (!(k > 0)) return [];
    const { scope, filters } = req;
    const ef = Math.max(this.ef, k);
    if (this.efSet !== ef) {
      this.index.setEf(ef);
      this.efSet = ef;
    }
    const query = fillArray(req.vector, this.queryBuf);
    const live = this.live.size;
    let searched = false;
    if (filters === undefined || Object.keys(filters).length === 0) {
      const readable = this.live.readableAtLeast(scope);
      if (readable === 0) return [];
      if (readable === live) {
        // Path 1: the scope reads every label (the graph holds exactly the live labels).
        const hits = this.toHits(this.index.searchKnn(query, k), k, undefined);
        if (hits.length === k) return hits;
        searched = true;
      } else {
        // Path 2: oversample without a callback, filter the few results.
        const want = Math.min(live, Math.ceil((k * OVERSAMPLE * live) / readable));
        if (want <= ef) {
          const permitted = this.live.permits(scope);
          const res = this.index.searchKnn(query, want);
          const hits = this.toHits(res, k, permitted);
          if (hits.length === k || res.neighbors.length === live) return hits;
          searched = true;
        }
      }
    }
    const permitted = this.live.permits(scope, filters);
    if (!searched && k * OVERSAMPLE <= ef) {
      // Path 2 for what the counts cannot bound (metadata filters, overlapping principals): the share a sample of the
      // labels passes estimates the selectivity; when 2·k / share fits in ef, the same oversampled search without a
      // callback, else (or when it comes back short) the filter inside the traversal.
      const share = this.live.sampleShare(permitted, SELECTIVITY_SAMPLE);
      const want = share > 0 ? Math.min(live, Math.ceil((k * OVERSAMPLE) / share)) : Infinity;
      if (want <= ef) {
        const res = this.index.searchKnn(query, want);
        const hits = this.toHits(res, k, permitted);
        if (hits.length === k || res.neighbors.length === live) return hits;
      }
    }
    // Path 3: the filter inside the traversal.
    return this.toHits(this.index.searchKnn(query, k, permitted), k, undefined);
  }

  /** What is held in memory beside the graph (counts and typed-array bytes), for diagnostics and the ann bench. */
  memoryStats(): ReturnType<LiveEntries['stats']> & { graph_capacity: number; graph_elements: number } {
    return { ...this.live.stats(), graph_capacity: this.index.getMaxElements(), graph_elements: this.index.getCurrentCount() };
  }

  /** The first k results that are live (and permitted, when a predicate is given), in the order hnswlib returned. */
  private toHits(res: { neighbors: number[]; distances: number[] }, k: number, permitted: ((label: number) => boolean) | undefined): VectorHit[] {
    const hits: VectorHit[] = [];
    for (let i = 0; i < res.neighbors.length && hits.length < k; i++) {
      const label = res.neighbors[i]!;
      if (permitted && !permitted(label)) continue;
      const e = this.live.hit(label);
      if (!e) continue;
      hits.push({ chunk_id: e.chunk_id, document_id: e.document_id, version: e.version, score: 1 - res.distances[i]! });
    }
    return hits;
  }

  async deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    this.assertOpen();
    const labels = this.db.transaction(() => {
      const rows = keepVersion === undefined ? this.stmt.docLabels.all(documentId) : this.stmt.docLabelsExcept.all(documentId, keepVersion);
      for (const r of rows) this.stmt.deleteLabel.run(r.label);
      if (rows.length > 0) this.bumpGeneration();
      return rows.map((r) => r.label);
    })();
    if (this.checkpointing && labels.length > 0) await this.checkpointing.catch(() => undefined);
    this.applyOps(labels.map((label) => ({ kind: 'remove', label })));
    return labels.length;
  }

  async count(documentId?: string): Promise<number> {
    this.assertOpen();
    return documentId === undefined ? this.stmt.countAll.get()!.n : this.stmt.countDoc.get(documentId)!.n;
  }

  /**
   * Every upsert and delete is already committed to SQLite (durable as `synchronous` says) when it returns, and an
   * open after a crash replays it into the graph, so flushing only writes a graph checkpoint when one is due.
   */
  async flush(): Promise<void> {
    this.assertOpen();
    await this.checkpointInBackground();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    if (this.timer) clearInterval(this.timer);
    if (this.checkpointing) await this.checkpointing.catch(() => undefined); // then the sync one below if still due
    if (this.closed) return;
    try {
      if (this.opsSinceCheckpoint > 0 || this.checkpointRequired) this.persistIndex();
    } finally {
      this.closed = true;
      this.db.close();
    }
  }

  // ---------------------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new Error(`EmbeddedHnswVectorStore(${this.storeDir}) is closed`);
  }

  private validate(r: VectorRecord): void {
    if (!r.chunk_id) throw new Error('EmbeddedHnswVectorStore: record without chunk_id');
    if (!(r.vector instanceof Float32Array)) throw new Error(`EmbeddedHnswVectorStore: vector of ${r.chunk_id} must be a Float32Array`);
    if (r.vector.length !== this.dim) {
      throw new Error(
        `EmbeddedHnswVectorStore(${this.modelId}): vector of ${r.chunk_id} has dimension ${r.vector.length}, expected ${this.dim}`,
      );
    }
    for (let i = 0; i < r.vector.length; i++) {
      if (!Number.isFinite(r.vector[i]!)) throw new Error(`EmbeddedHnswVectorStore: vector of ${r.chunk_id} has a non-finite value at ${i}`);
    }
  }

  /** The folder name already encodes model and dim; the stored values catch a hash collision or a hand-copied folder. */
  private checkIdentity(): void {
    const get = this.db.prepare<[string], { value: string }>('SELECT value FROM meta WHERE key = ?');
    const model = get.get('model_id')?.value;
    const dim = get.get('dim')?.value;
    if (model === undefined) {
      const put = this.db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)');
      this.db.transaction(() => {
        put.run('model_id', this.modelId);
        put.run('dim', String(this.dim));
      })();
      return;
    }
    if (model !== this.modelId || Number(dim) !== this.dim) {
      throw new Error(`EmbeddedHnswVectorStore: ${this.storeDir} holds vectors of ${model} (dim ${dim}), not ${this.modelId} (dim ${this.dim})`);
    }
  }

  /**
   * The number of records, kept by triggers in the same transaction as every write of `records`, so `count()` and the
   * store inspector (at start-up and on every readiness refresh, every 30 s) read one row instead of counting the
   * records: `SELECT COUNT(*) FROM records` walks a whole index of the table — 14 ms on a warm connection, 16–27 ms
   * on the inspector's fresh one, at 1.08M records (a 1M-chunk data folder), on the event loop, growing with the
   * corpus; the counter is 0.003 ms to read there (0.2 ms with the inspector's connection opened around it).
   *
   * The triggers see every statement of this adapter that writes `records`: the plain INSERT of `upsertRun` (AFTER
   * INSERT) and the DELETE by label of `upsertRun` (a changed chunk is deleted, then inserted under a new label) and of
   * `deleteDocument` (AFTER DELETE). Nothing here updates a record in place or uses REPLACE (whose implicit delete
   * fires DELETE triggers only under recursive_triggers) or an upsert clause, and the rebuild and catch-up only read
   * `records`; rows written by hand through another connection are counted too. Each trigger costs ≈ 2 µs per record
   * written or deleted: 10–30 % of the SQLite side of an upsert, ≈ 0.3 % of a whole one (20k records of dim 384: the
   * graph insert dominates; the A/B difference was within the run-to-run noise). A store made before this table
   * existed is counted once, in one IMMEDIATE transaction with creating it (a second process opening the same file
   * waits for the lock and then finds the table), so the counter starts exact (at 1.08M records 35 ms with the file
   * in the OS cache, 0.66 s cold, once; the open reads every record into memory anyway).
   */
  private ensureRecordCount(): void {
    createTableOnce(
      this.db,
      'record_count',
      `
      CREATE TABLE record_count (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n  INTEGER NOT NULL
      );
      INSERT INTO record_count (id, n) SELECT 1, COUNT(*) FROM records;
      CREATE TRIGGER record_count_insert AFTER INSERT ON records BEGIN
        UPDATE record_count SET n = n + 1 WHERE id = 1;
      END;
      CREATE TRIGGER record_count_delete AFTER DELETE ON records BEGIN
        UPDATE record_count SET n = n - 1 WHERE id = 1;
      END;
    `,
    );
  }

  private bumpGeneration(): void {
    this.generation += 1;
    this.stmt.setGeneration.run(String(this.generation));
  }

  private loadLive(): void {
    this.live.clear();
    const rows = this.db.prepare<[], RecordRow>('SELECT label, chunk_id, document_id, tenant, version, acl, metadata FROM records');
    for (const r of rows.iterate()) {
      this.live.add(r.label, r);
    }
  }

  private openIndex(): void {
    for (const f of [INDEX_FILE, META_FILE]) fs.rmSync(path.join(this.storeDir, `${f}.tmp`), { force: true }); // a crashed checkpoint's
    const started = Date.now();
    const loaded = this.tryLoadIndex();
    if (loaded === NEW_STORE) {
      this.index = this.newIndex(this.initialCapacity);
      this.efSet = this.ef;
      this.deletedInIndex = 0;
      return;
    }
    const reason = typeof loaded === 'string' ? loaded : this.catchUp(loaded);
    if (reason === null) {
      if (this.opsSinceCheckpoint > 0) {
        this.log.info('caught up hnsw index with sqlite', { dir: this.storeDir, ops: this.opsSinceCheckpoint, records: this.live.size, ms: Date.now() - started });
      }
      this.checkpointIfDue();
      return;
    }
    this.rebuildIndex();
    this.log.info('rebuilt hnsw index from sqlite', { dir: this.storeDir, reason, records: this.live.size, ms: Date.now() - started });
    this.persistIndex();
  }

  /** Loads the last checkpoint of this store's graph; returns why it could not (or NEW_STORE). */
  private tryLoadIndex(): HierarchicalNSW | string {
    const indexPath = path.join(this.storeDir, INDEX_FILE);
    const metaPath = path.join(this.storeDir, META_FILE);
    if (!fs.existsSync(indexPath)) return this.live.size === 0 && this.generation === 0 ? NEW_STORE : 'index file missing';
    let meta: IndexMeta;
    try {
      meta = JSON.parse(fs.readFileSync(metaPath, 'utf8')) as IndexMeta;
    } catch {
      return 'index meta missing or unreadable';
    }
    if (!READABLE_META_FORMATS.has(meta.format) || meta.model_id !== this.modelId || meta.dim !== this.dim) return 'index meta is for another format/model';
    const index = new HierarchicalNSW('cosine', this.dim);
    try {
      index.readIndexSync(indexPath, true);
    } catch (e) {
      return `index file unreadable: ${errorMessage(e)}`;
    }
    return index;
  }

  /**
   * Brings a loaded checkpoint up to SQLite (the write-ahead log): graph labels SQLite no longer holds are marked
   * deleted, SQLite labels the graph lacks are added. Correct for any complete checkpoint of this store, however old,
   * because labels are never reused: a label present in both holds the same vector. Returns null, or why the
   * checkpoint cannot be used (then the caller rebuilds).
   */
  private catchUp(index: HierarchicalNSW): string | null {
    const ids = index.getIdsList();
    const issued = this.db.prepare<[], { seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'records'").get()?.seq ?? 0;
    let maxLabel = 0;
    for (const id of ids) if (id > maxLabel) maxLabel = id;
    // A graph label SQLite never issued means SQLite lost commits the graph saw; those labels would be issued again
    // for other vectors, so this checkpoint must not be used.
    if (maxLabel > issued) return `index holds label ${maxLabel} but sqlite issued labels up to ${issued} only`;
    const inGraph = new Set(ids);
    let liveInGraph = 0;
    let ops = 0;
    for (const id of ids) {
      if (this.live.has(id)) {
        liveInGraph += 1;
        continue;
      }
      try {
        index.markDelete(id);
        ops += 1;
      } catch {
        // already marked deleted when the checkpoint was written
      }
    }
    this.index = index;
    this.index.setEf(this.ef);
    this.efSet = this.ef;
    this.deletedInIndex = index.getCurrentCount() - liveInGraph;
    const missing: number[] = [];
    for (const label of this.live.labels()) if (!inGraph.has(label)) missing.push(label);
    missing.sort((a, b) => a - b);
    try {
      for (const label of missing) {
        const row = this.stmt.vectorOf.get(label);
        if (!row) throw new Error(`record ${label} vanished during the catch-up`);
        this.addToGraph(label, fromBlob(row.vector));
        ops += 1;
      }
    } catch (e) {
      return `catch-up failed: ${errorMessage(e)}`;
    }
    this.opsSinceCheckpoint = ops;
    return null;
  }

  private newIndex(capacity: number): HierarchicalNSW {
    const index = new HierarchicalNSW('cosine', this.dim);
    index.initIndex({ maxElements: capacity, m: this.m, efConstruction: this.efConstruction, randomSeed: this.randomSeed, allowReplaceDeleted: true });
    index.setEf(this.ef);
    return index;
  }

  private rebuildIndex(): void {
    const n = this.live.size;
    this.index = this.newIndex(Math.max(this.initialCapacity, Math.ceil(n * 1.25)));
    this.efSet = this.ef;
    this.deletedInIndex = 0;
    const rows = this.db.prepare<[], { label: number; vector: Buffer }>('SELECT label, vector FROM records ORDER BY label');
    for (const r of rows.iterate()) this.index.addPoint(fillArray(fromBlob(r.vector), this.pointBuf), r.label);
    this.checkpointRequired = true;
  }

  /** Adds a point, reusing a deleted slot when there is one and growing the graph (doubling) when it is full. */
  private addToGraph(label: number, vector: Float32Array): void {
    if (this.deletedInIndex === 0 && this.index.getCurrentCount() >= this.index.getMaxElements()) {
      const next = Math.max(this.initialCapacity, this.index.getMaxElements() * 2);
      this.index.resizeIndex(next);
      this.log.debug('grew hnsw index', { dir: this.storeDir, capacity: next });
    }
    const reuse = this.deletedInIndex > 0;
    this.index.addPoint(fillArray(vector, this.pointBuf), label, reuse);
    if (reuse) this.deletedInIndex -= 1;
  }

  /** Applies committed SQLite changes to the graph and the label map. */
  private applyOps(ops: IndexOp[]): void {
    if (ops.length === 0) return;
    try {
      for (const op of ops) {
        if (op.kind === 'remove') {
          if (this.live.delete(op.label)) {
            this.index.markDelete(op.label);
            this.deletedInIndex += 1;
            this.opsSinceCheckpoint += 1;
          }
        } else {
          this.addToGraph(op.label, op.vector);
          this.live.add(op.label, op.entry);
          this.opsSinceCheckpoint += 1;
        }
      }
    } catch (e) {
      // SQLite already holds the truth: rebuild the derived graph rather than serve a divergent one.
      this.log.error('hnsw update failed; rebuilding the index from sqlite', { dir: this.storeDir, error: e });
      this.loadLive();
      this.rebuildIndex();
    }
  }

  /** Graph changes after which a checkpoint is due: max(checkpointOps, checkpointFraction × records). */
  private checkpointThreshold(): number {
    return Math.max(this.checkpointOps, Math.ceil(this.checkpointFraction * this.live.size));
  }

  private checkpointDue(): boolean {
    return this.checkpointRequired || (this.opsSinceCheckpoint > 0 && this.opsSinceCheckpoint >= this.checkpointThreshold());
  }

  /** On open: written synchronously (nothing is served yet). */
  private checkpointIfDue(): void {
    if (this.checkpointDue()) this.persistIndex();
  }

  /** On flush and the timer: joins the checkpoint being written, or starts one if due; resolves once it is on disk. */
  private checkpointInBackground(): Promise<void> {
    if (this.checkpointing) return this.checkpointing;
    if (!this.checkpointDue()) return Promise.resolve();
    const run = this.persistIndexAsync().finally(() => {
      if (this.checkpointing === run) this.checkpointing = null;
    });
    this.checkpointing = run;
    return run;
  }

  /**
   * Writes a checkpoint: the graph to a temporary file, fsync, rename over `index.hnsw`; then the meta the same way.
   * A crash leaves the old or the new graph file complete (the temporary one is removed on open) and either is caught
   * up on open, so the meta need not be removed first. With `synchronous` NORMAL the SQLite WAL is checkpointed (which
   * syncs it) first, so the graph never holds a label a power loss could take from SQLite.
   */
  private persistIndex(): void {
    if (this.synchronous === 'NORMAL') this.db.pragma('wal_checkpoint(FULL)');
    const indexPath = path.join(this.storeDir, INDEX_FILE);
    const tmpIndex = `${indexPath}.tmp`;
    this.index.writeIndexSync(tmpIndex);
    fsyncPath(tmpIndex);
    fs.renameSync(tmpIndex, indexPath);
    fsyncPath(this.storeDir, true);
    const metaPath = path.join(this.storeDir, META_FILE);
    const tmpMeta = `${metaPath}.tmp`;
    fs.writeFileSync(tmpMeta, JSON.stringify(this.checkpointMeta()));
    fsyncPath(tmpMeta);
    fs.renameSync(tmpMeta, metaPath);
    fsyncPath(this.storeDir, true);
    this.opsSinceCheckpoint = 0;
    this.checkpointRequired = false;
  }

  /**
   * The same checkpoint with the files written and synced on the libuv pool. The graph stays unchanged meanwhile
   * (see `checkpointing`), so the meta taken before writing describes the file written.
   */
  private async persistIndexAsync(): Promise<void> {
    if (this.synchronous === 'NORMAL') this.db.pragma('wal_checkpoint(FULL)');
    const indexPath = path.join(this.storeDir, INDEX_FILE);
    const tmpIndex = `${indexPath}.tmp`;
    const meta = this.checkpointMeta();
    const started = Date.now();
    await this.index.writeIndex(tmpIndex);
    await fsyncPathAsync(tmpIndex);
    await fs.promises.rename(tmpIndex, indexPath);
    await fsyncPathAsync(this.storeDir, true);
    const metaPath = path.join(this.storeDir, META_FILE);
    const tmpMeta = `${metaPath}.tmp`;
    await fs.promises.writeFile(tmpMeta, JSON.stringify(meta));
    await fsyncPathAsync(tmpMeta);
    await fs.promises.rename(tmpMeta, metaPath);
    await fsyncPathAsync(this.storeDir, true);
    this.opsSinceCheckpoint = 0; // no graph change could happen while writing
    this.checkpointRequired = false;
    this.log.debug('hnsw checkpoint written', { dir: this.storeDir, records: meta.count, ms: Date.now() - started });
  }

  private checkpointMeta(): IndexMeta {
    return {
      format: META_FORMAT,
      model_id: this.modelId,
      dim: this.dim,
      generation: this.generation,
      count: this.live.size,
      max_label: this.live.maxLabel(),
      saved_at: new Date().toISOString(),
    };
  }
}
