import * as fs from 'node:fs';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import type { Chunk } from '@rag/contracts';
import { keywordText, tokenize } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { KeywordHit, KeywordIndex, KeywordSearchRequest } from '@rag/ports';
import { scopeAndFiltersSql } from './sql-filters';
import { openSqlite } from '../sqlite/open-sqlite';
import { documentRuns, WRITE_RUN_ITEMS, yieldToLoop } from '../sqlite/write-runs';

/**
 * Embedded, persistent BM25 keyword index in one SQLite file (`dir/keyword.db`).
 *
 * Why our own postings table rather than FTS5 (issue 13 item 2 asked to compare; measured in
 * `npm run bench -- keyword-scale`, figures in scripts/bench/README.md):
 * - FTS5's `bm25()` hard-codes k1 = 1.2, b = 0.75 and a different idf (ln((N − df + 0.5)/(df + 0.5)), clamped);
 *   the platform uses Lucene-style BM25 with configurable k1/b (defaults 0.9 / 0.4, the figures the eval README
 *   quotes for Cranfield) so embedded and OpenSearch rankings agree, and the contract tests assert those scores.
 *   better-sqlite3 cannot register an FTS5 auxiliary (ranking) function, so FTS5 could not score our way.
 * - FTS5's `ORDER BY rank LIMIT k` is not sublinear either: it scores every row that matches the OR of the query
 *   terms and sorts them (no WAND / MaxScore), so its cost also grows with the postings of the query terms; with
 *   tenant/ACL/metadata filters joined on the chunk table the filters run on every match as well.
 * - Chinese needs `Intl.Segmenter` word segmentation (via `tokenize()` in `@rag/domain`), the same tokens the
 *   OpenSearch adapter indexes.
 *
 * Schema: `chunks` (every chunk, children and parents; the full Chunk JSON is kept for `getChunks`), `terms`
 * (term → id, document frequency over searchable children, and `max_tf` / `min_len`: the largest term frequency and
 * the shortest chunk among the term's postings, an upper bound of the term's BM25 contribution — kept monotone on
 * delete, so it stays a valid, if looser, bound), `postings` (term, chunk, tf, chunk length; WITHOUT ROWID,
 * clustered by term so a query term's postings are one range scan and (term, chunk) is a point lookup) and
 * `stats` (child count, total length → avgdl). Statistics are global across tenants, as in a shared Lucene index.
 * File format version 2 (`PRAGMA user_version`); a version-1 file (no bounds) is migrated on open in one
 * transaction (the bounds computed from its postings, one pass).
 *
 * Scoring (Lucene ≥ 8 BM25Similarity): Σ_q idf(q) · tf / (tf + k1 · (1 − b + b · dl / avgdl)),
 * idf = ln(1 + (N − df + 0.5) / (df + 0.5)); a query term repeated in the query counts once per occurrence
 * (as Lucene's BooleanQuery of term clauses does).
 *
 * Query evaluation: term-at-a-time MaxScore with exact results (`search`):
 * 1. Query terms are processed by weight, rarest first; each has an upper bound UB(t) = w(t) · max_tf /
 *    (max_tf + k1 · (1 − b + b · min_len / avgdl)); R(i) = the sum of the bounds of the terms not yet processed.
 * 2. While a chunk that none of the processed terms matched could still reach the top k, a term's whole posting
 *    list is read and every chunk in it accumulated ("or" mode).
 * 3. As soon as k chunks that pass the tenant/ACL/metadata filter (evaluated in SQL, lazily, best candidates
 *    first, each chunk once) score above R(i), no unseen chunk can enter the top k: the remaining (frequent,
 *    long-list) terms only update the surviving candidates, by point lookups when that reads fewer rows than the
 *    list ("and" mode), and candidates that cannot reach the k-th score any more are dropped after each term.
 * 4. The top k passing candidates are ordered by score, then chunk_id (as before).
 * Filters are applied inside the search, so a filter that excludes the best BM25 hits still yields k matching
 * results (pruning then starts later or not at all: the cost falls back to the exhaustive evaluation).
 * Per-chunk sums are accumulated in one canonical term order (weight, then term), so equal statistics give
 * bit-identical scores. `searchExhaustive` keeps the previous single-statement SQL evaluation (GROUP BY over all
 * postings of the query terms) as the reference the pruned search is tested and benchmarked against.
 *
 * Indexed text: title, heading path and chunk text, tokenized together into one field with equal weight (the
 * chunk's title and headings are often the most specific words about it; a separate lower-weight field would
 * need a second length normalisation, and equal weight matches the OpenSearch adapter's single `content` field).
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

/** What one search did (for tests and the keyword-scale bench). */
export interface KeywordSearchStats {
  /** Query terms known to the index. */
  terms: number;
  /** Terms whose whole posting list was read and accumulated ("or" mode). */
  fullScans: number;
  /** Posting rows read in total (full lists, candidate-only scans and point lookups). */
  postingsRead: number;
  /** Posting rows of the known query terms in the index: what the exhaustive evaluation reads. */
  postingsTotal: number;
  /** Chunks whose filter was evaluated. */
  filterChecks: number;
}

interface QueryTerm {
  id: number;
  term: string;
  df: number;
  /** idf × occurrences in the query. */
  w: number;
  /** Upper bound of the term's contribution to any chunk's score. */
  ub: number;
}

const DB_FILE = 'keyword.db';
/** File format: 1 = terms without bounds (before issue 13), 2 = terms with max_tf / min_len. */
const FORMAT_VERSION = 2;
/** Slack on upper bounds so float rounding in the sums can never prune a chunk that belongs in the top k. */
const BOUND_SLACK = 1 + 1e-9;
/** Candidates per SQL statement when evaluating filters or probing postings (json_each argument). */
const BATCH = 4096;

/** The text a child chunk is indexed under. */
export function indexedText(chunk: Pick<Chunk, 'title' | 'heading_path' | 'text' | 'context'>): string {
  return keywordText(chunk); // title, headings, the contextual-retrieval context when present, text
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
    upsertTerm: Database.Statement<[string, number, number, number], { id: number }>;
    insertPosting: Database.Statement<[number, number, number, number]>;
    decrementDf: Database.Statement<[number]>;
    deleteDeadTerms: Database.Statement<[number]>;
    deletePostings: Database.Statement<[number]>;
    addStats: Database.Statement<[number, number]>;
    stats: Database.Statement<[], { docs: number; total_len: number }>;
    termDf: Database.Statement<[string], { term: string; id: number; df: number; max_tf: number; min_len: number }>;
    postingList: Database.Statement<[number], [number, number, number]>;
    postingProbe: Database.Statement<[number, string], [number, number, number]>;
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
      this.migrateTerms();
      const cols = 'id, kind, len, body';
      this.stmt = {
        byChunkId: this.db.prepare(`SELECT ${cols} FROM chunks WHERE chunk_id = ?`),
        insertChunk: this.db.prepare(
          'INSERT INTO chunks (chunk_id, document_id, tenant, version, kind, acl, metadata, len, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ),
        deleteChunk: this.db.prepare('DELETE FROM chunks WHERE id = ?'),
        upsertTerm: this.db.prepare(
          'INSERT INTO terms (term, df, max_tf, min_len) VALUES (?, ?, ?, ?) ON CONFLICT (term) DO UPDATE SET df = df + excluded.df, ' +
            'max_tf = MAX(max_tf, excluded.max_tf), min_len = MIN(min_len, excluded.min_len) RETURNING id',
        ),
        insertPosting: this.db.prepare('INSERT INTO postings (term_id, chunk, tf, len) VALUES (?, ?, ?, ?)'),
        decrementDf: this.db.prepare('UPDATE terms SET df = df - 1 WHERE id IN (SELECT term_id FROM postings WHERE chunk = ?)'),
        deleteDeadTerms: this.db.prepare('DELETE FROM terms WHERE df <= 0 AND id IN (SELECT term_id FROM postings WHERE chunk = ?)'),
        deletePostings: this.db.prepare('DELETE FROM postings WHERE chunk = ?'),
        addStats: this.db.prepare('UPDATE stats SET docs = docs + ?, total_len = total_len + ? WHERE id = 1'),
        stats: this.db.prepare('SELECT docs, total_len FROM stats WHERE id = 1'),
        termDf: this.db.prepare('SELECT term, id, df, max_tf, min_len FROM terms WHERE term IN (SELECT value FROM json_each(?))'),
        postingList: this.db.prepare<[number], [number, number, number]>('SELECT chunk, tf, len FROM postings WHERE term_id = ?').raw(true),
        postingProbe: this.db
          .prepare<[number, string], [number, number, number]>(
            'SELECT chunk, tf, len FROM postings WHERE term_id = ? AND chunk IN (SELECT value FROM json_each(?))',
          )
          .raw(true),
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

  /** One transaction per run of whole documents, yielding to the event loop between runs (see documentRuns). */
  async upsert(chunks: Chunk[]): Promise<void> {
    this.assertOpen();
    if (chunks.length === 0) return;
    const runs = documentRuns(chunks, WRITE_RUN_ITEMS);
    for (let i = 0; i < runs.length; i++) {
      if (i > 0) {
        await yieldToLoop();
        this.assertOpen();
      }
      this.db.transaction(() => this.upsertRun(runs[i]!))();
    }
  }

  async search(req: KeywordSearchRequest): Promise<KeywordHit[]> {
    return this.searchWithStats(req).hits;
  }

  /** `search`, with what the pruned evaluation did. Synchronous: one consistent read of the file. */
  searchWithStats(req: KeywordSearchRequest): { hits: KeywordHit[]; stats: KeywordSearchStats } {
    this.assertOpen();
    const stats: KeywordSearchStats = { terms: 0, fullScans: 0, postingsRead: 0, postingsTotal: 0, filterChecks: 0 };
    const limit = Math.floor(req.k);
    if (!(limit > 0)) return { hits: [], stats };
    const terms = this.queryTerms(req.query);
    if (!terms) return { hits: [], stats };
    stats.terms = terms.list.length;
    const hits = this.db.transaction(() => this.maxScore(terms.list, terms.avgdl, limit, req, stats))();
    return { hits, stats };
  }

  /**
   * The previous evaluation, kept as the reference of `search`: one SQL statement that scores every posting of the
   * query terms (GROUP BY chunk), filters the scored chunks and sorts them. Same ranking, cost linear in the postings.
   */
  searchExhaustive(req: KeywordSearchRequest): KeywordHit[] {
    this.assertOpen();
    const limit = Math.floor(req.k);
    if (!(limit > 0)) return [];
    const terms = this.queryTerms(req.query);
    if (!terms) return [];
    const weights = terms.list.map((t) => [t.id, t.w] as const);
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
    const rows = this.cached(sql).all({ ...where.params, qterms: JSON.stringify(weights), k1: this.k1, b: this.b, avgdl: terms.avgdl, limit }) as Array<
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

  /** Query terms known to the index, with weights and bounds, in processing order (weight desc, then term). */
  private queryTerms(query: string): { list: QueryTerm[]; avgdl: number } | null {
    const tokens = tokenize(query);
    if (tokens.length === 0) return null;
    const qtf = new Map<string, number>();
    for (const t of tokens) qtf.set(t, (qtf.get(t) ?? 0) + 1);
    const st = this.stmt.stats.get()!;
    if (st.docs === 0) return null;
    const known = this.stmt.termDf.all(JSON.stringify([...qtf.keys()]));
    if (known.length === 0) return null;
    const n = st.docs;
    const avgdl = st.total_len > 0 ? st.total_len / n : 1;
    const list = known.map((t): QueryTerm => {
      const w = Math.log(1 + (n - t.df + 0.5) / (t.df + 0.5)) * (qtf.get(t.term) ?? 1);
      // tf / (tf + k1·(1 − b + b·dl/avgdl)) grows with tf and shrinks with dl: the bound takes the largest tf and the
      // shortest chunk of the list (a file migrated from version 1 without postings for a term has 0 / 0: bound w).
      const ub = t.max_tf > 0 ? (w * t.max_tf) / (t.max_tf + this.k1 * (1 - this.b + (this.b * t.min_len) / avgdl)) : w;
      return { id: t.id, term: t.term, df: t.df, w, ub: Math.max(ub, 0) };
    });
    list.sort((a, b) => b.w - a.w || (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));
    return { list, avgdl };
  }

  private maxScore(terms: QueryTerm[], avgdl: number, k: number, req: KeywordSearchRequest, stats: KeywordSearchStats): KeywordHit[] {
    const where = scopeAndFiltersSql('c', req.scope, req.filters);
    const filterStmt = this.cached(
      `SELECT c.id, c.chunk_id, c.document_id, c.version FROM chunks c WHERE c.id IN (SELECT value FROM json_each(@ids)) AND ${where.sql}`,
    );
    /** chunk rowid → score so far (the candidates). */
    const acc = new Map<number, number>();
    /** chunk rowid → its row when it passes the filter, null when it does not (evaluated once per chunk). */
    const passed = new Map<number, { chunk_id: string; document_id: string; version: number } | null>();
    const evaluate = (ids: number[]): void => {
      for (let i = 0; i < ids.length; i += BATCH) {
        const batch = ids.slice(i, i + BATCH);
        for (const id of batch) passed.set(id, null);
        stats.filterChecks += batch.length;
        const rows = filterStmt.all({ ...where.params, ids: JSON.stringify(batch) }) as Array<{ id: number; chunk_id: string; document_id: string; version: number }>;
        for (const r of rows) passed.set(r.id, { chunk_id: r.chunk_id, document_id: r.document_id, version: r.version });
      }
    };
    /**
     * At least the `limit` best candidates scoring above `above` (all of them when fewer), best first: one typed-array
     * sort finds the cut, only the candidates above it are sorted with their ids.
     */
    const top = (above: number, limit: number): { ids: number[]; all: boolean } => {
      const scores: number[] = [];
      for (const s of acc.values()) if (s > above) scores.push(s);
      let all = true;
      let cut = -Infinity;
      if (scores.length > limit) {
        const sorted = Float64Array.from(scores).sort();
        cut = sorted[sorted.length - limit]!;
        all = false;
      }
      const pairs: Array<[number, number]> = [];
      for (const [id, s] of acc) if (s > above && s >= cut) pairs.push([id, s]);
      pairs.sort((x, y) => y[1] - x[1]);
      return { ids: pairs.map((p) => p[0]), all };
    };
    /**
     * The k-th best score among candidates that pass the filter and score above `above`, or -Infinity when fewer
     * than k do. Filters are evaluated best candidates first and only as far as needed; failing candidates are
     * dropped (they can never be returned).
     */
    const kthPassing = (above: number): number => {
      let count = 0;
      for (const s of acc.values()) if (s > above) count++;
      if (count < k) return -Infinity;
      for (let limit = Math.max(4 * k, 256); ; limit *= 4) {
        const { ids, all } = top(above, limit);
        evaluate(ids.filter((id) => !passed.has(id)));
        let found = 0;
        for (const id of ids) {
          if (passed.get(id) === null) {
            acc.delete(id);
            continue;
          }
          if (++found === k) return acc.get(id)!;
        }
        if (all) return -Infinity;
      }
    };

    const K0 = this.k1 * (1 - this.b);
    const K1 = (this.k1 * this.b) / avgdl;
    // remaining[i] = Σ bounds of terms i.. (with slack), remaining[m] = 0.
    const remaining = new Array<number>(terms.length + 1).fill(0);
    for (let i = terms.length - 1; i >= 0; i--) remaining[i] = remaining[i + 1]! + terms[i]!.ub * BOUND_SLACK;
    let orMode = true;
    for (let i = 0; i < terms.length; i++) {
      const t = terms[i]!;
      stats.postingsTotal += t.df;
      const add = (rows: Array<[number, number, number]>, onlyKnown: boolean): void => {
        stats.postingsRead += rows.length;
        for (const [chunk, tf, len] of rows) {
          const prev = acc.get(chunk);
          if (prev === undefined && onlyKnown) continue;
          acc.set(chunk, (prev ?? 0) + (t.w * tf) / (tf + K0 + K1 * len));
        }
      };
      if (orMode) {
        stats.fullScans++;
        add(this.stmt.postingList.all(t.id), false);
      } else if (acc.size === 0) {
        continue;
      } else if (t.df <= 2 * acc.size) {
        add(this.stmt.postingList.all(t.id), true); // reading the list is cheaper than probing for each candidate
      } else {
        const ids = [...acc.keys()];
        for (let j = 0; j < ids.length; j += BATCH) add(this.stmt.postingProbe.all(t.id, JSON.stringify(ids.slice(j, j + BATCH))), true);
      }
      const rest = remaining[i + 1]!;
      if (i + 1 === terms.length) break;
      // A chunk none of terms 0..i matched scores at most `rest`: once k passing chunks score above it, stop adding.
      const theta = kthPassing(orMode ? rest : -Infinity);
      if (theta > rest) orMode = false;
      if (!orMode && theta > -Infinity) for (const [id, s] of acc) if (s + rest < theta) acc.delete(id);
    }

    // The top k passing candidates, ties by chunk_id: evaluate filters best first until k pass, then take every
    // passing candidate that ties with the k-th.
    const out: KeywordHit[] = [];
    for (let limit = Math.max(4 * k, 256); ; limit *= 4) {
      const { ids, all } = top(-Infinity, limit);
      evaluate(ids.filter((id) => !passed.has(id)));
      out.length = 0;
      let kth = -Infinity;
      let complete = false;
      for (const id of ids) {
        const score = acc.get(id)!;
        if (out.length >= k && score < kth) {
          complete = true;
          break;
        }
        const row = passed.get(id);
        if (!row) continue;
        out.push({ chunk_id: row.chunk_id, document_id: row.document_id, version: row.version, score });
        if (out.length === k) kth = score;
      }
      // Every candidate not in `ids` scores below the cut, hence below the k-th: done.
      if (out.length >= k) complete = true;
      if (complete || all) break;
    }
    out.sort((x, y) => y.score - x.score || (x.chunk_id < y.chunk_id ? -1 : x.chunk_id > y.chunk_id ? 1 : 0));
    return out.slice(0, k);
  }

  private cached(sql: string): Database.Statement {
    let stmt = this.searchCache.get(sql);
    if (!stmt) {
      stmt = this.db.prepare(sql);
      if (this.searchCache.size >= 256) this.searchCache.clear();
      this.searchCache.set(sql, stmt);
    }
    return stmt;
  }

  /** Creates `terms` (format 2), or migrates a format-1 file: adds the bounds and computes them from the postings. */
  private migrateTerms(): void {
    const cols = (this.db.prepare("SELECT name FROM pragma_table_info('terms')").all() as Array<{ name: string }>).map((r) => r.name);
    if (cols.length === 0) {
      this.db.exec('CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, df INTEGER NOT NULL, max_tf INTEGER NOT NULL, min_len INTEGER NOT NULL)');
    } else if (!cols.includes('max_tf') || !cols.includes('min_len')) {
      const started = Date.now();
      this.db.transaction(() => {
        if (!cols.includes('max_tf')) this.db.exec('ALTER TABLE terms ADD COLUMN max_tf INTEGER NOT NULL DEFAULT 0');
        if (!cols.includes('min_len')) this.db.exec('ALTER TABLE terms ADD COLUMN min_len INTEGER NOT NULL DEFAULT 0');
        // One pass over the postings (clustered by term), joined to terms by id.
        this.db.exec(`
          UPDATE terms SET max_tf = b.max_tf, min_len = b.min_len
          FROM (SELECT term_id, MAX(tf) AS max_tf, MIN(len) AS min_len FROM postings GROUP BY term_id) AS b
          WHERE b.term_id = terms.id`);
      })();
      this.log.info(`migrated ${this.file} to keyword index format ${FORMAT_VERSION} (term score bounds) in ${Date.now() - started} ms`);
    }
    this.db.pragma(`user_version = ${FORMAT_VERSION}`);
  }

  /**
   * One run's writes, in its transaction. The same end state as writing the chunks one by one (a later occurrence of a
   * chunk id wins, an unchanged body is a no-op), with each term's row updated once per run instead of once per
   * posting: the run's postings are counted first (df, max tf, min length per term) and applied in one upsert per
   * distinct term. Measured (tmp/prof/bm25-write.js, 250-chunk runs of dev-set passages, 30k chunks): 960/1156/1469
   * → 695/900/1054 µs per chunk at 10k/20k/30k; the postings and their (term, chunk) order are unchanged.
   */
  private upsertRun(chunks: Chunk[]): void {
    const last = new Map<string, Chunk>();
    for (const chunk of chunks) {
      if (!chunk.chunk_id) throw new Error('EmbeddedBm25KeywordIndex: chunk without chunk_id');
      last.delete(chunk.chunk_id); // keep the order of the last occurrences
      last.set(chunk.chunk_id, chunk);
    }
    const rows: { chunk: Chunk; body: string; tokens: string[] }[] = [];
    for (const chunk of last.values()) {
      const body = JSON.stringify(chunk);
      const old = this.stmt.byChunkId.get(chunk.chunk_id);
      if (old) {
        if (old.body === body) continue; // idempotent replay
        this.removeRow(old);
      }
      rows.push({ chunk, body, tokens: chunk.kind === 'child' ? tokenize(indexedText(chunk)) : [] });
    }
    if (rows.length === 0) return;
    // Per chunk its term frequencies; per term of the run its df increment and bounds.
    const tfs: Map<string, number>[] = [];
    const terms = new Map<string, { df: number; maxTf: number; minLen: number; id: number }>();
    for (const r of rows) {
      const tf = new Map<string, number>();
      if (r.chunk.kind === 'child') for (const t of r.tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      tfs.push(tf);
      for (const [term, f] of tf) {
        const a = terms.get(term);
        if (a) {
          a.df++;
          if (f > a.maxTf) a.maxTf = f;
          if (r.tokens.length < a.minLen) a.minLen = r.tokens.length;
        } else terms.set(term, { df: 1, maxTf: f, minLen: r.tokens.length, id: 0 });
      }
    }
    for (const [term, a] of terms) a.id = this.stmt.upsertTerm.get(term, a.df, a.maxTf, a.minLen)!.id;
    let docs = 0;
    let totalLen = 0;
    rows.forEach((r, i) => {
      const { chunk, tokens } = r;
      const info = this.stmt.insertChunk.run(
        chunk.chunk_id,
        chunk.document_id,
        chunk.tenant,
        chunk.version,
        chunk.kind,
        JSON.stringify(chunk.acl),
        JSON.stringify(chunk.metadata),
        tokens.length,
        r.body,
      );
      if (chunk.kind !== 'child') return;
      const id = Number(info.lastInsertRowid);
      for (const [term, f] of tfs[i]!) this.stmt.insertPosting.run(terms.get(term)!.id, id, f, tokens.length);
      docs++;
      totalLen += tokens.length;
    });
    if (docs) this.stmt.addStats.run(docs, totalLen);
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
