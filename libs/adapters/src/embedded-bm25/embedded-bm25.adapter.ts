import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import type { Chunk } from '@rag/contracts';
import { tokenize } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { KeywordHit, KeywordIndex, KeywordSearchRequest } from '@rag/ports';
import { scopeAndFiltersSql } from './sql-filters';
import { openSqlite } from '../sqlite/open-sqlite';

/**
 * Embedded, persistent BM25 keyword index in one SQLite file (`dir/keyword.db`).
 *
 * Why our own postings table rather than FTS5:
 * - FTS5's `bm25()` hard-codes k1 = 1.2, b = 0.75; the platform wants Lucene-style BM25 with configurable
 *   k1/b (defaults 0.9 / 0.4, the figures the eval README quotes for Cranfield) so embedded and
 *   OpenSearch rankings agree.
 * - Chinese needs `Intl.Segmenter` word segmentation (via `tokenize()` in `@rag/domain`), the same tokens the
 *   OpenSearch adapter indexes; FTS5 would need a custom tokenizer (not possible from better-sqlite3) or a
 *   pre-segmented shadow column plus our own stemming rules anyway.
 * - With a plain postings table the scoring, the tenant/ACL scope and the metadata filters are one SQL
 *   statement: filters are applied before ORDER BY/LIMIT, so a filter that excludes the best BM25 hits still
 *   yields k matching results.
 *
 * Schema: `chunks` (every chunk, children and parents; the full Chunk JSON is kept for `getChunks`), `terms`
 * (term → id, document frequency over searchable children), `postings` (term, chunk, tf, chunk length;
 * WITHOUT ROWID, clustered by term so a query term's postings are one range scan) and `stats` (child count,
 * total length → avgdl). Statistics are global across tenants, as in a shared Lucene index.
 *
 * Scoring (Lucene ≥ 8 BM25Similarity): Σ_q idf(q) · tf / (tf + k1 · (1 − b + b · dl / avgdl)),
 * idf = ln(1 + (N − df + 0.5) / (df + 0.5)); a query term repeated in the query counts once per occurrence
 * (as Lucene's BooleanQuery of term clauses does).
 *
 * Indexed text: title, heading path and chunk text, tokenized together into one field with equal weight (the
 * chunk's title and headings are often the most specific words about it; a separate lower-weight field would
 * need a second length normalisation, and equal weight matches the OpenSearch adapter's single `content` field).
 *
 * Latency (`npx vitest bench --run libs/adapters/src/embedded-bm25`: 3,232 Cranfield chunks, the 113 Cranfield
 * queries, k = 50, ~1,500 candidate chunks per query, shared 2-vCPU Xeon): ≈ 3–4 ms per query with tenant scope
 * only, ≈ 4.5 ms with an ACL, ≈ 7–8.5 ms with range + string[] or `in` filters. Scoring (the GROUP BY over
 * postings) dominates the unfiltered case; JSON filter evaluation per candidate roughly doubles it.
 */
export interface EmbeddedBm25KeywordIndexOptions {
  /** Data folder; the index is `dir/keyword.db`. */
  dir: string;
  /** BM25 term-frequency saturation (default 0.9). */
  k1?: number;
  /** BM25 length normalisation (default 0.4). */
  b?: number;
  /** SQLite `synchronous` (default FULL: a returned upsert survives power loss). */
  synchronous?: 'FULL' | 'NORMAL';
  logger?: Logger;
}

interface ChunkRow {
  id: number;
  kind: string;
  len: number;
  body: string;
}

const DB_FILE = 'keyword.db';

/** The text a child chunk is indexed under. */
export function indexedText(chunk: Pick<Chunk, 'title' | 'heading_path' | 'text'>): string {
  return [chunk.title, ...chunk.heading_path, chunk.text].filter((s) => s.length > 0).join('\n');
}

export class EmbeddedBm25KeywordIndex implements KeywordIndex {
  readonly file: string;
  private readonly k1: number;
  private readonly b: number;
  private readonly log: Logger;
  private readonly db: Database.Database;
  private closed = false;
  private readonly searchCache = new Map<string, Database.Statement>();

  private readonly stmt: {
    byChunkId: Database.Statement<[string], ChunkRow>;
    insertChunk: Database.Statement<[string, string, string, number, string, string, string, number, string]>;
    deleteChunk: Database.Statement<[number]>;
    upsertTerm: Database.Statement<[string], { id: number }>;
    insertPosting: Database.Statement<[number, number, number, number]>;
    decrementDf: Database.Statement<[number]>;
    deleteDeadTerms: Database.Statement<[number]>;
    deletePostings: Database.Statement<[number]>;
    addStats: Database.Statement<[number, number]>;
    stats: Database.Statement<[], { docs: number; total_len: number }>;
    termDf: Database.Statement<[string], { term: string; id: number; df: number }>;
    docRows: Database.Statement<[string], ChunkRow>;
    docRowsExcept: Database.Statement<[string, number], ChunkRow>;
    getMany: Database.Statement<[string], { chunk_id: string; body: string }>;
    countAll: Database.Statement<[], { n: number }>;
    countDoc: Database.Statement<[string], { n: number }>;
  };

  static async open(opts: EmbeddedBm25KeywordIndexOptions): Promise<EmbeddedBm25KeywordIndex> {
    return new EmbeddedBm25KeywordIndex(opts);
  }

  constructor(opts: EmbeddedBm25KeywordIndexOptions) {
    this.k1 = opts.k1 ?? 0.9;
    this.b = opts.b ?? 0.4;
    if (!(this.k1 >= 0) || !(this.b >= 0 && this.b <= 1)) throw new Error(`EmbeddedBm25KeywordIndex: need k1 >= 0 and 0 <= b <= 1 (got ${this.k1}, ${this.b})`);
    this.log = opts.logger ?? new Logger('embedded-bm25');
    fs.mkdirSync(opts.dir, { recursive: true });
    this.file = path.join(opts.dir, DB_FILE);
    this.db = openSqlite(this.file, opts.synchronous);
    try {
      this.db.exec(`
        CREATE TABLE IF NOT EXISTS chunks (
          id          INTEGER PRIMARY KEY,
          chunk_id    TEXT NOT NULL UNIQUE,
          document_id TEXT NOT NULL,
          tenant      TEXT NOT NULL,
          version     INTEGER NOT NULL,
          kind        TEXT NOT NULL,
          acl         TEXT NOT NULL,
          metadata    TEXT NOT NULL,
          len         INTEGER NOT NULL,
          body        TEXT NOT NULL
        );
        CREATE INDEX IF NOT EXISTS chunks_document ON chunks (document_id, version);
        CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, df INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS postings (
          term_id INTEGER NOT NULL,
          chunk   INTEGER NOT NULL,
          tf      INTEGER NOT NULL,
          len     INTEGER NOT NULL,
          PRIMARY KEY (term_id, chunk)
        ) WITHOUT ROWID;
        CREATE INDEX IF NOT EXISTS postings_chunk ON postings (chunk);
        CREATE TABLE IF NOT EXISTS stats (id INTEGER PRIMARY KEY CHECK (id = 1), docs INTEGER NOT NULL, total_len INTEGER NOT NULL);
        INSERT OR IGNORE INTO stats (id, docs, total_len) VALUES (1, 0, 0);
      `);
      const cols = 'id, kind, len, body';
      this.stmt = {
        byChunkId: this.db.prepare(`SELECT ${cols} FROM chunks WHERE chunk_id = ?`),
        insertChunk: this.db.prepare(
          'INSERT INTO chunks (chunk_id, document_id, tenant, version, kind, acl, metadata, len, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ),
        deleteChunk: this.db.prepare('DELETE FROM chunks WHERE id = ?'),
        upsertTerm: this.db.prepare('INSERT INTO terms (term, df) VALUES (?, 1) ON CONFLICT (term) DO UPDATE SET df = df + 1 RETURNING id'),
        insertPosting: this.db.prepare('INSERT INTO postings (term_id, chunk, tf, len) VALUES (?, ?, ?, ?)'),
        decrementDf: this.db.prepare('UPDATE terms SET df = df - 1 WHERE id IN (SELECT term_id FROM postings WHERE chunk = ?)'),
        deleteDeadTerms: this.db.prepare('DELETE FROM terms WHERE df <= 0 AND id IN (SELECT term_id FROM postings WHERE chunk = ?)'),
        deletePostings: this.db.prepare('DELETE FROM postings WHERE chunk = ?'),
        addStats: this.db.prepare('UPDATE stats SET docs = docs + ?, total_len = total_len + ? WHERE id = 1'),
        stats: this.db.prepare('SELECT docs, total_len FROM stats WHERE id = 1'),
        termDf: this.db.prepare('SELECT term, id, df FROM terms WHERE term IN (SELECT value FROM json_each(?))'),
        docRows: this.db.prepare(`SELECT ${cols} FROM chunks WHERE document_id = ?`),
        docRowsExcept: this.db.prepare(`SELECT ${cols} FROM chunks WHERE document_id = ? AND version <> ?`),
        getMany: this.db.prepare('SELECT chunk_id, body FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(?))'),
        countAll: this.db.prepare('SELECT COUNT(*) AS n FROM chunks'),
        countDoc: this.db.prepare('SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?'),
      };
    } catch (e) {
      this.db.close();
      throw e;
    }
  }

  async upsert(chunks: Chunk[]): Promise<void> {
    this.assertOpen();
    if (chunks.length === 0) return;
    this.db.transaction(() => {
      for (const chunk of chunks) this.upsertOne(chunk);
    })();
  }

  async search(req: KeywordSearchRequest): Promise<KeywordHit[]> {
    this.assertOpen();
    const limit = Math.floor(req.k);
    if (!(limit > 0)) return [];
    const tokens = tokenize(req.query);
    if (tokens.length === 0) return [];
    const qtf = new Map<string, number>();
    for (const t of tokens) qtf.set(t, (qtf.get(t) ?? 0) + 1);

    const stats = this.stmt.stats.get()!;
    if (stats.docs === 0) return [];
    const known = this.stmt.termDf.all(JSON.stringify([...qtf.keys()]));
    if (known.length === 0) return [];
    const n = stats.docs;
    // [term id, query weight = idf × occurrences in the query]
    const weights = known.map((t) => [t.id, Math.log(1 + (n - t.df + 0.5) / (t.df + 0.5)) * (qtf.get(t.term) ?? 1)] as const);
    const avgdl = stats.total_len > 0 ? stats.total_len / n : 1;

    const where = scopeAndFiltersSql('c', req.scope, req.filters);
    const sql = `
      WITH q AS (
        SELECT json_extract(value, '$[0]') AS term_id, json_extract(value, '$[1]') AS w FROM json_each(@qterms)
      ),
      -- "* 1.0" keeps the arithmetic in floating point: better-sqlite3 binds integral JS numbers as INTEGER.
      s AS (
        SELECT p.chunk AS chunk,
               SUM(q.w * p.tf / (p.tf + @k1 * (1.0 - @b + @b * p.len * 1.0 / @avgdl))) AS score
        FROM q JOIN postings p ON p.term_id = q.term_id
        GROUP BY p.chunk
      )
      SELECT c.chunk_id, c.document_id, c.version, s.score
      FROM s JOIN chunks c ON c.id = s.chunk
      WHERE ${where.sql}
      ORDER BY s.score DESC, c.chunk_id
      LIMIT @limit`;
    let stmt = this.searchCache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.searchCache.size >= 256) this.searchCache.clear();
      this.searchCache.set(sql, stmt);
    }
    const rows = stmt.all({ ...where.params, qterms: JSON.stringify(weights), k1: this.k1, b: this.b, avgdl, limit }) as Array<
      { chunk_id: string; document_id: string; version: number; score: number }
    >;
    return rows.map((r) => ({ chunk_id: r.chunk_id, document_id: r.document_id, version: r.version, score: r.score }));
  }

  async getChunks(chunkIds: string[]): Promise<Chunk[]> {
    this.assertOpen();
    if (chunkIds.length === 0) return [];
    const found = new Map<string, Chunk>();
    for (const r of this.stmt.getMany.all(JSON.stringify(chunkIds))) found.set(r.chunk_id, JSON.parse(r.body) as Chunk);
    const out: Chunk[] = [];
    const seen = new Set<string>();
    for (const id of chunkIds) {
      const c = found.get(id);
      if (c && !seen.has(id)) {
        out.push(c);
        seen.add(id);
      }
    }
    return out;
  }

  async deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    this.assertOpen();
    return this.db.transaction(() => {
      const rows = keepVersion === undefined ? this.stmt.docRows.all(documentId) : this.stmt.docRowsExcept.all(documentId, keepVersion);
      for (const r of rows) this.removeRow(r);
      return rows.length;
    })();
  }

  /** Stored chunks (children and parents), of one document or all. */
  async count(documentId?: string): Promise<number> {
    this.assertOpen();
    return documentId === undefined ? this.stmt.countAll.get()!.n : this.stmt.countDoc.get(documentId)!.n;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.searchCache.clear();
    this.db.close();
  }

  // ---------------------------------------------------------------------------------------------

  private assertOpen(): void {
    if (this.closed) throw new Error(`EmbeddedBm25KeywordIndex(${this.file}) is closed`);
  }

  private upsertOne(chunk: Chunk): void {
    if (!chunk.chunk_id) throw new Error('EmbeddedBm25KeywordIndex: chunk without chunk_id');
    const body = JSON.stringify(chunk);
    const old = this.stmt.byChunkId.get(chunk.chunk_id);
    if (old) {
      if (old.body === body) return; // idempotent replay
      this.removeRow(old);
    }
    const searchable = chunk.kind === 'child';
    const tokens = searchable ? tokenize(indexedText(chunk)) : [];
    const info = this.stmt.insertChunk.run(
      chunk.chunk_id,
      chunk.document_id,
      chunk.tenant,
      chunk.version,
      chunk.kind,
      JSON.stringify(chunk.acl),
      JSON.stringify(chunk.metadata),
      tokens.length,
      body,
    );
    if (!searchable) return;
    const id = Number(info.lastInsertRowid);
    const tf = new Map<string, number>();
    for (const t of tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
    for (const [term, f] of tf) {
      const termId = this.stmt.upsertTerm.get(term)!.id;
      this.stmt.insertPosting.run(termId, id, f, tokens.length);
    }
    this.stmt.addStats.run(1, tokens.length);
  }

  private removeRow(row: ChunkRow): void {
    if (row.kind === 'child') {
      this.stmt.decrementDf.run(row.id);
      this.stmt.deleteDeadTerms.run(row.id);
      this.stmt.deletePostings.run(row.id);
      this.stmt.addStats.run(-1, -row.len);
    }
    this.stmt.deleteChunk.run(row.id);
  }
}
