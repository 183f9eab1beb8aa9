import { createHash } from 'node:crypto';
import Database from 'better-sqlite3';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { AppError } from '@rag/platform';
import { openSqlite } from '../sqlite/open-sqlite';

export interface CachedEmbedderOptions {
  /** In-memory LRU capacity in vectors (default 10 000; 0 disables the memory tier). */
  maxEntries?: number;
  /** Optional SQLite file that keeps vectors across restarts (created with its folder if missing). */
  sqlitePath?: string;
}

export interface EmbeddingCacheStats {
  /** Inputs answered without the inner embedder (memory, disk, a duplicate in the same call, or a call in flight). */
  hits: number;
  /** Texts the inner embedder was asked for. */
  misses: number;
  memoryHits: number;
  diskHits: number;
  /** Vectors currently in the memory tier. */
  memoryEntries: number;
}

type Db = Database.Database;
type Statement = Database.Statement<unknown[]>;

const LOOKUP_CHUNK = 500;

/**
 * Wraps an Embedder with a cache keyed by `modelId` + sha256(inputType + text): a bounded in-memory LRU
 * in front of an optional SQLite table. Only misses go to the inner embedder (one call per `embed`,
 * duplicates folded, concurrent calls for the same text share one computation); results come back in
 * input order. Vectors of different models never mix because the model id is part of the key.
 */
export class CachedEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  private readonly maxEntries: number;
  private readonly memory = new Map<string, Float32Array>();
  private readonly inflight = new Map<string, Promise<Float32Array>>();
  private readonly db?: Db;
  private readonly insert?: Statement;
  private readonly lookups = new Map<number, Statement>();
  private readonly counters = { hits: 0, misses: 0, memoryHits: 0, diskHits: 0 };

  constructor(
    private readonly inner: Embedder,
    options: CachedEmbedderOptions = {},
  ) {
    this.modelId = inner.modelId;
    this.dim = inner.dim;
    this.maxEntries = Math.max(0, Math.floor(options.maxEntries ?? 10_000));
    if (options.sqlitePath) {
      try {
        this.db = openSqlite(options.sqlitePath, 'NORMAL');
        this.db.exec(`CREATE TABLE IF NOT EXISTS embedding_cache (
          model_id TEXT NOT NULL,
          key TEXT NOT NULL,
          dim INTEGER NOT NULL,
          vector BLOB NOT NULL,
          created_at INTEGER NOT NULL,
          PRIMARY KEY (model_id, key)
        ) WITHOUT ROWID`);
        this.insert = this.db.prepare<unknown[]>('INSERT OR REPLACE INTO embedding_cache (model_id, key, dim, vector, created_at) VALUES (?, ?, ?, ?, ?)');
      } catch (e) {
        throw new AppError('unavailable', `embedding cache: cannot open SQLite file ${options.sqlitePath}: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }

  /** The cache key of one input (exposed for tests and tooling). */
  static keyOf(text: string, inputType: EmbedInputType): string {
    return createHash('sha256').update(`${inputType}:${text}`).digest('hex');
  }

  stats(): EmbeddingCacheStats {
    return { ...this.counters, memoryEntries: this.memory.size };
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    const out = new Array<Float32Array>(texts.length);
    const keys = texts.map((t) => CachedEmbedder.keyOf(t, inputType));
    const waiting: Array<Promise<void>> = [];
    // Unique keys still to find, with every position that wants them.
    const missing = new Map<string, { text: string; positions: number[] }>();

    keys.forEach((key, i) => {
      const pending = missing.get(key);
      if (pending) {
        pending.positions.push(i);
        this.counters.hits++;
        return;
      }
      const mem = this.fromMemory(key);
      if (mem) {
        out[i] = mem;
        this.counters.hits++;
        this.counters.memoryHits++;
        return;
      }
      const flying = this.inflight.get(this.memKey(key));
      if (flying) {
        this.counters.hits++;
        waiting.push(flying.then((v) => void (out[i] = v.slice())));
        return;
      }
      missing.set(key, { text: texts[i], positions: [i] });
    });

    if (missing.size > 0 && this.db) {
      for (const [key, vector] of this.fromDisk([...missing.keys()])) {
        const entry = missing.get(key);
        if (!entry) continue;
        this.remember(key, vector);
        entry.positions.forEach((p) => (out[p] = vector.slice()));
        this.counters.hits += 1;
        this.counters.diskHits += 1;
        missing.delete(key);
      }
    }

    if (missing.size > 0) {
      const entries = [...missing.entries()];
      const computed = this.inner.embed(
        entries.map(([, e]) => e.text),
        inputType,
      );
      this.counters.misses += entries.length;
      entries.forEach(([key], n) => {
        const p = computed.then((vs) => this.checked(vs, entries.length)[n]);
        p.catch(() => undefined); // observed below; avoid an unhandled rejection for other waiters
        this.inflight.set(this.memKey(key), p);
      });
      try {
        const vectors = this.checked(await computed, entries.length);
        this.store(entries.map(([key], n) => [key, vectors[n]]));
        entries.forEach(([, e], n) => e.positions.forEach((p) => (out[p] = vectors[n].slice())));
      } finally {
        for (const [key] of entries) this.inflight.delete(this.memKey(key));
      }
    }
    await Promise.all(waiting);
    return out;
  }

  async close(): Promise<void> {
    this.db?.close();
    await this.inner.close?.();
  }

  private memKey(key: string): string {
    return `${this.modelId}\u0000${key}`;
  }

  private fromMemory(key: string): Float32Array | undefined {
    const k = this.memKey(key);
    const v = this.memory.get(k);
    if (!v) return undefined;
    // Refresh recency: Map iteration order is insertion order, so the first key is the least recent.
    this.memory.delete(k);
    this.memory.set(k, v);
    return v.slice();
  }

  private remember(key: string, vector: Float32Array): void {
    if (this.maxEntries === 0) return;
    const k = this.memKey(key);
    this.memory.delete(k);
    this.memory.set(k, vector.slice());
    while (this.memory.size > this.maxEntries) {
      const oldest = this.memory.keys().next().value;
      if (oldest === undefined) break;
      this.memory.delete(oldest);
    }
  }

  private fromDisk(keys: string[]): Map<string, Float32Array> {
    const found = new Map<string, Float32Array>();
    if (!this.db) return found;
    for (let i = 0; i < keys.length; i += LOOKUP_CHUNK) {
      const chunk = keys.slice(i, i + LOOKUP_CHUNK);
      let stmt = this.lookups.get(chunk.length);
      if (!stmt) {
        stmt = this.db.prepare<unknown[]>(
          `SELECT key, dim, vector FROM embedding_cache WHERE model_id = ? AND key IN (${chunk.map(() => '?').join(',')})`,
        );
        this.lookups.set(chunk.length, stmt);
      }
      for (const row of stmt.all(this.modelId, ...chunk) as Array<{ key: string; dim: number; vector: Buffer }>) {
        if (row.dim !== this.dim || row.vector.byteLength !== this.dim * 4) continue; // stale width: recompute
        const copy = new Uint8Array(row.vector.byteLength);
        copy.set(row.vector);
        found.set(row.key, new Float32Array(copy.buffer));
      }
    }
    return found;
  }

  private store(items: Array<[string, Float32Array]>): void {
    for (const [key, v] of items) this.remember(key, v);
    if (!this.db || !this.insert) return;
    const insert = this.insert;
    const now = Date.now();
    this.db.transaction(() => {
      for (const [key, v] of items) insert.run(this.modelId, key, this.dim, Buffer.from(v.buffer, v.byteOffset, v.byteLength), now);
    })();
  }

  private checked(vectors: Float32Array[], expected: number): Float32Array[] {
    if (vectors.length !== expected) {
      throw new AppError('internal', `${this.modelId} returned ${vectors.length} vectors for ${expected} texts`);
    }
    for (const v of vectors) {
      if (v.length !== this.dim) throw new AppError('internal', `${this.modelId} returned a ${v.length}-dimensional vector, expected ${this.dim}`);
    }
    return vectors;
  }
}
