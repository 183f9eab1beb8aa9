import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import type { Chunk } from '@rag/contracts';
import { byScoreThenChunkId, keywordText, tokenize } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { KeywordHit, KeywordIndex, KeywordSearchRequest } from '@rag/ports';
import { scopeAndFiltersSql } from './sql-filters';
import { ClusterKeys } from './cluster-order';
import { TermCache } from './term-cache';
import { openSqlite } from '../sqlite/open-sqlite';
import { documentRuns, WRITE_RUN_ITEMS, yieldToLoop } from '../sqlite/write-runs';

/**
 * Embedded, persistent BM25 keyword index in one SQLite file (`dir/keyword.db`).
 *
 * Why our own posting blocks rather than FTS5 (issue 13 item 2 asked to compare; measured in
 * `npm run bench -- keyword-scale`, figures in scripts/bench/README.md):
 * - FTS5's `bm25()` hard-codes k1 = 1.2, b = 0.75 and a different idf (ln((N − df + 0.5)/(df + 0.5)), clamped);
 *   the platform uses Lucene-style BM25 with configurable k1/b (defaults 0.9 / 0.4, the figures the eval README
 *   quotes for Cranfield) so embedded and OpenSearch rankings agree, and the contract tests assert those scores.
 *   better-sqlite3 cannot register an FTS5 auxiliary (ranking) function, so FTS5 could not score our way.
 * - FTS5's `ORDER BY rank LIMIT k` is not sublinear: it scores every row that matches the OR of the query terms and
 *   sorts them (no WAND / MaxScore / block-max), so its cost grows with the postings of the query terms; with
 *   tenant/ACL/metadata filters joined on the chunk table the filters run on every match as well.
 * - Chinese needs `Intl.Segmenter` word segmentation (via `tokenize()` in `@rag/domain`), the same tokens the
 *   OpenSearch adapter indexes.
 *
 * Schema (file format 4, `PRAGMA user_version`):
 * - `chunks`: every chunk, children and parents (the full Chunk JSON for `getChunks`, tenant/ACL/metadata for the
 *   filters, `len` in tokens, and `terms`: the term ids of a child's postings, packed, so a delete finds its postings
 *   without an index over them). The rowid `id` is the chunk's number in the posting blocks.
 * - `terms`: term → id and document frequency over searchable children.
 * - Postings are packed per (term, block of 2^bits consecutive chunk ids): every posting of the term among chunks
 *   [block·2^bits, (block+1)·2^bits), as 32-bit words (tf·2^bits + offset, chunk length), with the block's exact
 *   `max_tf` and `min_len` (its BM25 upper bound) and the same two bounds for each of its 16 sub-blocks (64 chunk ids
 *   each at the default size; 16-bit pairs).
 * - `dirs` (format 4): each term's block directory, 8 blocks to a row (≤ 608 B), clustered by (term, segment): per
 *   block its number, max tf, and either its sub-block bounds or — for a small block (≤ 8 postings, whose postings
 *   are no larger than the bounds; 87 % of the blocks at 1M chunks) — its postings themselves. A search reads a
 *   term's directory as ⌈blocks/8⌉ rows: at 1M chunks a frequent term has ≈ 1,000 blocks, and walking one row per
 *   block in format 3 (each carrying up to ≈ 1 KB of posting blob inline) was 39 % of a search (scripts/bench/README.md,
 *   keyword-scale).
 * - `blocks`: a large block's postings (`data`), bounds (`max_tf`, `min_len`, `n`, `sub`), WITHOUT ROWID, clustered by
 *   (term, block): one block is a point lookup, a term's blocks one range scan. A small block has no row here.
 *   A block write rewrites its `dirs` row, and its `blocks` row when large.
 * - `chunks_visibility`: an index over (id, tenant, document_id, version, chunk_id, acl), so a search's filter check
 *   reads neither the chunk rows nor their JSON (see ensureVisibilityIndex; added without a format change).
 * - `stats`: child count and total length (→ avgdl); `meta`: the block size, and `clustered_upto` (the ids the last
 *   recluster ordered; see recluster). Statistics are global across tenants, as in a shared Lucene index.
 * Chunk ids: a new chunk gets the next rowid (ingestion order); a recluster renumbers every chunk so that children
 * about the same things are neighbours (the bounds of a 64-id sub-block then come from related chunks and prune far
 * more), without a format change.
 * Older files are migrated on open, in one transaction: format 1/2 kept one row per posting (`postings`), format 2
 * also per-term bounds; the postings are packed into blocks (one pass in (term, chunk) order) and the table dropped.
 * Format 3 kept every block, small ones too, as a `blocks` row (the directory was a range scan over them); `dirs` is
 * built from them in one pass and the small blocks' rows deleted (≈ 30 s at 1M chunks). A file of a newer format is
 * refused rather than misread (format 3 code would not see format 4's small blocks).
 *
 * Scoring (Lucene ≥ 8 BM25Similarity): Σ_q idf(q) · tf / (tf + k1 · (1 − b + b · dl / avgdl)),
 * idf = ln(1 + (N − df + 0.5) / (df + 0.5)); a query term repeated in the query counts once per occurrence
 * (as Lucene's BooleanQuery of term clauses does).
 *
 * Query evaluation: block-max, block at a time, exact (`search`). Why this and not the term-at-a-time MaxScore of
 * the previous release: that read whole posting lists until the top k was safe, one SQLite row per posting, and at
 * 300k chunks an English question still read 34 % of its terms' postings (six full lists, 77 % of the server's main
 * thread under retrieve load, P50 14× its 10k value; scripts/bench/README.md). Per-term bounds are loose (one short
 * chunk with a high tf anywhere sets them); per-range bounds are tight, and ranges of consecutive chunk ids line up
 * across terms, so a range can be skipped without reading any of its postings. The unit is the sub-block (64 chunk
 * ids): on long questions a 1,024-id block nearly always holds some chunk with each rare term, so its summed bound
 * stays above the threshold (the block-only version visited 98.6 % of the blocks at 100k chunks); 64 ids are small
 * enough for the bound to tell co-occurrence apart, and storing their bounds inside the block row keeps the row
 * count (and write cost) of 1,024-id blocks — separate 64-id blocks (bits 6) were slower: P50 51 ms against 15 ms at
 * 100k chunks, measured with an earlier version of this loop.
 * 1. Each query term's block directory (sub-block bounds; no posting data except of small blocks) is read and every
 *    sub-block's upper bound UB = Σ_q w(q) · max_tf / (max_tf + k1 · (1 − b + b · min_len / avgdl)) summed over the
 *    terms present.
 * 2. Sub-blocks are visited by descending UB. A visited sub-block's postings (every query term present in it; each
 *    (term, block) blob fetched once per search, the sub-block's range found by binary search) are scored exactly
 *    (all of a chunk's postings are in its block).
 * 3. Chunks that could enter the top k are checked against the tenant/ACL/metadata filter (in SQL, best first, in
 *    batches collected across sub-blocks), and passing ones kept in the top k (score desc, then chunk_id).
 * 4. As soon as the next sub-block's UB is below the k-th passing score, no chunk in it or after it can enter: done.
 * The cost is the directories (≤ corpus/2^(bits+3) `dirs` rows per term: still linear in the corpus, but ≈ 40 bytes
 * of bounds per 1,024 chunk ids) plus the visited sub-blocks, not the postings. A filter
 * that excludes most chunks keeps the k-th passing score low, so more blocks are visited (falling back to reading
 * everything, the exhaustive cost, when almost nothing passes). Per-chunk sums are accumulated in one canonical term
 * order (weight, then term), so equal statistics give bit-identical scores. `searchExhaustive` scores every posting
 * of the query terms (no skipping) — the reference the block-max search is tested and benchmarked against.
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
  /**
   * log2 of the chunk ids per posting block, for a new file (default 10: 1,024; an existing file keeps its own).
   * Smaller blocks give tighter bounds but longer directories (tests use small blocks on small corpora).
   */
  blockBits?: number;
  /**
   * SQLite page size of a new `keyword.db` (default 1024; an existing file keeps its own — `VACUUM` with the platform
   * stopped converts one). A write rewrites every page holding a directory row, block or term count it changes, and a
   * run of chunks changes a few thousand of them scattered over the file: with 1 KiB pages each takes a quarter of
   * what it does with SQLite's 4 KiB in the write-ahead log (the checkpoint's scattered writes still cost an OS
   * page). Measured on a 104k-chunk index (runs of 80 chunks, 256 MiB checkpoints): 138 KiB written per chunk with
   * 4 KiB pages, 91.5 with 2 KiB, 63.9 with 1 KiB, with searches about as fast (Cranfield
   * questions, ms per search: 5.3–11.5 against 6.5–10.6 without the term cache, 2.6–8.9 against 2.2–8.3 with it;
   * scripts/bench/README.md, keyword-writes).
   */
  pageSize?: 512 | 1024 | 2048 | 4096 | 8192 | 16384 | 32768 | 65536;
  /**
   * Bytes of the file SQLite reads through a memory map instead of read() calls (default 2 GiB; 0: off). A search
   * walks thousands of directory rows in pages the OS already caches: mapped, each page is a pointer instead of a
   * system call and a copy into SQLite's own small page cache (measured in scripts/bench/README.md, keyword-scale).
   * The mapped pages are the OS page cache itself (shared, clean, reclaimable), which a process's RSS counts once
   * touched. SQLite clamps the size to its compile-time maximum.
   */
  mmapBytes?: number;
  /**
   * Most (query term, sub-block) bound slots a search allocates (default 2^24: 128 MB of float64); a query that would
   * need more — a pasted page of a few hundred distinct terms over a million chunks — is evaluated exhaustively instead:
   * same results, memory bounded by its postings.
   */
  maxBoundSlots?: number;
  /**
   * Bytes of decoded posting data kept between searches (default 512 MiB; 0: off): the query terms' block directories
   * and the frequent terms' large blocks, least recently used dropped first (TermCache). Exact: a write to a term
   * evicts it, and another connection's commit makes the terms it wrote re-read from the first block it changed
   * (the file's change log, `term_changes`; validateTermCache). A budget, not a reservation: it fills only with the
   * terms searched. Sizing: a frequent term's blocks take ≈ 4 MB per million chunks; the load bench's 113 Cranfield
   * questions need ≈ 360 MB at ≈ 1M chunks, and a budget below a rotation's working set thrashes (least recently used
   * is the worst policy for a cycle): 256 MiB gave P50 ≈ 30 ms where a budget that holds it gives ≈ 18 ms
   * (scripts/bench/README.md, keyword-scale).
   */
  termCacheBytes?: number;
  /**
   * Chunks per write transaction of an upsert (whole documents; default WRITE_RUN_ITEMS, 32): between runs the upsert
   * yields to the event loop, so that a large batch does not hold a thread that serves requests. A connection on a
   * thread of its own (the keyword writer) sets it large: each (term, block) an upsert touches is then rewritten once
   * per upsert instead of once per run.
   */
  writeRunItems?: number;
  /**
   * MiB of write-ahead log after which a commit on this connection copies the log into `keyword.db` (SQLite's
   * `wal_autocheckpoint`; default 256 MiB on the keyword writer, SQLite's 4 MiB elsewhere). A keyword write rewrites the
   * directory and block pages of every term it touches — thousands of scattered pages per run — and a checkpoint
   * writes each page the log holds once, however many commits rewrote it since the last one: with SQLite's default
   * every commit of a large index was followed by a checkpoint of all its pages. Measured on a 104k-chunk index
   * (runs of 80 chunks, /proc write_bytes per chunk with the final checkpoint): 4 MiB 1,130 KiB, 64 MiB 332 KiB,
   * 256 MiB 172 KiB (scripts/bench/README.md, keyword-writes). The log is truncated back to 64 MiB after
   * a checkpoint that empties it; after a crash the next open replays what it holds.
   */
  walCheckpointMiB?: number;
  /**
   * Check candidates past the first full top k against the filter only at the end when the first k all passed (default
   * true; false: each as it comes, as before — same results either way, see blockMax step 3).
   */
  trustFilter?: boolean;
  /**
   * Follow other connections' commits every this many ms between searches as well (0, the default: only at each
   * search). The change log keeps the last CHANGE_LOG_SECONDS of commits (at least CHANGE_LOG_MIN_ROWS of them); a
   * connection that searches less often than that (questions minutes apart during an ingestion) would otherwise find
   * the log moved past it and clear its term cache. Following marks stale terms only (reads no term data): one
   * `PRAGMA data_version` when nothing was committed. The platform's search connections use FOLLOW_CHANGES_MS.
   */
  followChangesMs?: number;
  /**
   * Keep a journal of the terms this connection's searches loaded into the term cache (takeLoadedTerms; default false):
   * a keyword worker hands it to its host, which keeps the list of hot terms across restarts (warmTerms).
   */
  journalLoads?: boolean;
  /** Called after each search with this connection's term-cache counts so far (the factory publishes them: TermCacheMetrics). */
  onTermCacheStats?: (counts: { hits: number; misses: number; refreshes: number; bytes: number }) => void;
  logger?: Logger;
}

/** When the keyword writer reclusters (EmbeddedBm25KeywordIndex.reclusterDue). */
export interface ReclusterPolicy {
  /** Recluster once the ids written since the last one reach this share of the ids it ordered (0: never). */
  ratio: number;
  /** … and at least this many (a small index is fast in any order). */
  minIds: number;
}

/** What a recluster did. */
export interface ReclusterResult {
  children: number;
  /** Children grouped by topic (the others, with no mid-frequency term, go last in their previous order). */
  keyed: number;
  parents: number;
  terms: number;
  postings: number;
  ms: number;
}

interface ChunkRow {
  id: number;
  kind: string;
  len: number;
  body: string;
  terms: Buffer | null;
}

/** What one search did (for tests and the keyword-scale bench). */
export interface KeywordSearchStats {
  /** Query terms known to the index. */
  terms: number;
  /** Terms every block of which was read (their whole posting list). */
  fullScans: number;
  /** Postings decoded in total. */
  postingsRead: number;
  /** Postings of the known query terms in the index: what the exhaustive evaluation reads. */
  postingsTotal: number;
  /** Sub-blocks (ranges of 2^(bits−4) chunk ids) that hold a posting of a query term. */
  blocksTotal: number;
  /** Sub-blocks whose postings were read and scored. */
  blocksVisited: number;
  /** Chunks whose filter was evaluated. */
  filterChecks: number;
  /** Posting blocks read from the file (point lookups and the rows of range scans); the term cache's hits read none. */
  blocksFetched: number;
  /** The query needed more bound slots than maxBoundSlots and was evaluated exhaustively. */
  exhaustive?: boolean;
  /**
   * Every candidate of the first full top k passed the filter, so the rest were scored on trust and checked together
   * at the end (see EmbeddedBm25KeywordIndex.blockMax, step 3).
   */
  filterTrusted?: boolean;
  /** A candidate checked at the end failed the filter where it mattered: the search ran again, checking each candidate as it came. */
  filterRetried?: boolean;
}

interface QueryTerm {
  id: number;
  term: string;
  df: number;
  /** idf × occurrences in the query. */
  w: number;
}

interface Hit extends KeywordHit {
  id: number;
}

const DB_FILE = 'keyword.db';
/**
 * File format: 1 = postings rows, no bounds; 2 = postings rows + per-term bounds; 3 = packed posting blocks;
 * 4 = format 3 plus `dirs`, each term's block directory packed 2^DIR_SEG_BITS blocks to a row.
 */
const FORMAT_VERSION = 4;
/**
 * log2 of the blocks per `dirs` row (8: at most 8 × 76 B = 608 B, inside SQLite's ≈ 1 KB local payload of a WITHOUT
 * ROWID row on 4 KB pages; 16 blocks to a row spilled onto overflow pages, which left `dirs` pages half empty).
 */
const DIR_SEG_BITS = 3;
/** Flag in a directory entry's third word: the payload is the block's postings (a small block), not its sub-block bounds. */
const SMALL_FLAG = 0x80000000;
/** Each term's block directory, 2^DIR_SEG_BITS blocks to a row (format 4; see readDirSegment for the row's words). */
const dirsTable = (name: string): string =>
  `CREATE TABLE IF NOT EXISTS ${name} (term_id INTEGER NOT NULL, seg INTEGER NOT NULL, data BLOB NOT NULL, PRIMARY KEY (term_id, seg)) WITHOUT ROWID`;
/** Every chunk, children and parents (see the schema above); `id` is the chunk's number in the posting blocks. */
const chunksTable = (name: string): string => `CREATE TABLE IF NOT EXISTS ${name} (
  id          INTEGER PRIMARY KEY,
  chunk_id    TEXT NOT NULL UNIQUE,
  document_id TEXT NOT NULL,
  tenant      TEXT NOT NULL,
  version     INTEGER NOT NULL,
  kind        TEXT NOT NULL,
  acl         TEXT NOT NULL,
  metadata    TEXT NOT NULL,
  len         INTEGER NOT NULL,
  body        TEXT NOT NULL,
  terms       BLOB
)`;
/** The chunk columns a recluster copies, besides `id`. */
const CHUNK_COLUMNS = 'chunk_id, document_id, tenant, version, kind, acl, metadata, len, body, terms';
const CHUNKS_DOCUMENT_INDEX = 'CREATE INDEX IF NOT EXISTS chunks_document ON chunks (document_id, version)';
/** A large block's postings (format 3's bounds columns kept; format 4 writes `sub` NULL, its bounds are in `dirs`). */
const blocksTable = (name: string): string => `CREATE TABLE IF NOT EXISTS ${name} (
  term_id INTEGER NOT NULL,
  block   INTEGER NOT NULL,
  max_tf  INTEGER NOT NULL,
  min_len INTEGER NOT NULL,
  n       INTEGER NOT NULL,
  sub     BLOB,
  data    BLOB NOT NULL,
  PRIMARY KEY (term_id, block)
) WITHOUT ROWID`;
const DEFAULT_BLOCK_BITS = 10;
const DEFAULT_MMAP_BYTES = 2 ** 31;
/** See EmbeddedBm25KeywordIndexOptions.pageSize. */
const DEFAULT_PAGE_SIZE = 1024;
/** Default of termCacheBytes. */
const DEFAULT_TERM_CACHE_BYTES = 512 * 2 ** 20;
/** What a cached directory entry costs besides its words (a 5-element array and two typed-array views), for the budget. */
const DIR_ENTRY_OVERHEAD = 240;
/** Slack on upper bounds so float rounding in the sums can never prune a chunk that belongs in the top k. */
const BOUND_SLACK = 1 + 1e-9;
/**
 * log2 of the sub-blocks per block that carry their own bounds (16: 64 chunk ids each at the default block size).
 * Finer ranges bound far tighter — at 1M chunks (20 Cranfield questions, k = 50, the final k-th score) the chunk ids in
 * ranges whose summed per-term maxima reach it are 9,853 × 64 with 64-id ranges, 1,959 × 64 with 16-id ranges, 348 × 64
 * with 8-id ranges — but 64 sub-blocks of 16 ids were no faster (P50 33 vs 35–38 ms, mean 41 vs 39–40 ms at 1M;
 * 5.1 ms both at 100k): the postings read fell from 23 % to 6.7 %, yet the directories grew (5.2 ms a search) and a
 * visited range still needs the frequent terms' whole block blobs (≈ 4,500 rows a search) to complete its candidates'
 * scores. Kept at 16 until the blobs can be read in parts (scripts/bench/README.md, keyword-scale).
 */
const SUB_BLOCK_BITS = 4;
/** Blocks with at most max(this, half the sub-blocks) postings keep their postings in the directory instead of bounds. */
const SMALL_BLOCK_MIN = 8;
/** Buckets of the visiting order (sub-blocks by descending bound; a counting sort, linear in the sub-blocks). */
const ORDER_BUCKETS = 4096;
/**
 * About how many bytes of new rows a recluster writes per transaction (see recluster). Committed steps keep the WAL
 * frames a page read must look through down to those since the last checkpoint (walCheckpointMiB); smaller steps
 * only mean more commits, each of which clears the searches' term caches.
 */
const RECLUSTER_STEP_BYTES = 32 * 2 ** 20;

/** Terms in fewer children than this do not group chunks in a recluster (fewer than half a 64-id sub-block). */
const CLUSTER_MIN_DF = 30;
/** Nor do terms in more than this share of the children (they are in every group). */
const CLUSTER_MAX_DF_SHARE = 0.05;
/** Largest filter batch bound as `?` parameters (filterFor); larger ones are passed as JSON. */
const FILTER_PARAMS = 4096;
/** Trusted searches (blockMax step 3) per look at how many ran again (noteTrust). */
const TRUST_WINDOW = 32;
/** Share of them that may run again before the connection stops trusting for a while. */
const TRUST_MAX_RETRIED = 0.25;
/** Searches that check each candidate after too many reruns, before trusting again. */
const TRUST_PAUSE = 256;
/** Largest search buffer (float64 slots: 16 MB) a connection keeps for its next search (ScratchBuffer). */
const SCRATCH_KEEP_SLOTS = 2 ** 21;

/**
 * A zeroed float64 buffer a connection reuses from one search to the next: a connection runs one search at a time
 * (each is synchronous), and a fresh ≈ 5 MB array per search at 1M chunks cost its page faults and garbage collection
 * every time. Requests above SCRATCH_KEEP_SLOTS get an array for the search that is not kept, so one long pasted
 * query does not pin its memory for the connection's life.
 */
class ScratchBuffer {
  private kept = new Float64Array(0);

  /** A buffer of at least `n` slots, zeroed over [0, n) (a new one grows geometrically up to the cap). */
  take(n: number): Float64Array {
    if (n > SCRATCH_KEEP_SLOTS) return new Float64Array(n);
    if (this.kept.length < n) return (this.kept = new Float64Array(Math.min(SCRATCH_KEEP_SLOTS, Math.max(n, 2 * this.kept.length))));
    this.kept.fill(0, 0, n);
    return this.kept;
  }
}
/** Default of maxBoundSlots: above this many (term, sub-block) bound slots a search evaluates exhaustively instead. */
const MAX_BOUND_SLOTS = 2 ** 24;
const HALF_MAX = 0xffff;
/** Blocks of one term fetched one by one in a search before the rest of the term is read in one range scan. */
const POINT_LOOKUPS = 8;
/** Most (term, full) pairs a connection's load journal holds before its oldest half goes (journalLoads). */
const LOAD_JOURNAL_MAX = 1 << 17;
/** Terms warmed per read transaction (warmTerms): short snapshots, so the writer's checkpoints are not held back. */
const WARM_TERMS_PER_TXN = 32;
/** Share of the term-cache budget warmTerms fills at most (the rest stays for what the next searches bring). */
const WARM_CACHE_SHARE = 0.75;
/**
 * What the change log (`term_changes`) keeps: the commits of the last CHANGE_LOG_SECONDS, and at least the last
 * CHANGE_LOG_MIN_ROWS whatever their age; a search connection that fell further behind clears its term cache instead
 * of following the log. By time, not by count: one document delete is one commit, and deleting a source commits
 * hundreds a second (a smoke test's 300 deletes overran a 256-commit log between two follows a second apart). Each
 * row is 8 bytes per term its commit wrote (against the ≥ 600 bytes of the `dirs` row and the block that commit
 * rewrote per term), so a minute of a bulk ingestion is a few MB; written once and deleted once, whatever it keeps.
 */
const CHANGE_LOG_SECONDS = 60;
const CHANGE_LOG_MIN_ROWS = 256;
/** (term, block) pairs a search follows from the log at most; past that, clearing the cache is cheaper. */
const CHANGE_LOG_MAX_PAIRS = 2 ** 20;
/** followChangesMs of the platform's search connections (the main thread's and each keyword worker's). */
export const FOLLOW_CHANGES_MS = 1000;
/** The covering index of the search's filter checks (see ensureVisibilityIndex). */
const VISIBILITY_INDEX = 'chunks_visibility';
/** Candidates per SQL statement when evaluating filters (json_each argument). */
const BATCH = 4096;
/** Postings per statement when packing a format-1/2 file's postings into blocks. */
const MIGRATION_PAGE = 100_000;

/** The text a child chunk is indexed under. */
export function indexedText(chunk: Pick<Chunk, 'title' | 'heading_path' | 'text' | 'context'>): string {
  return keywordText(chunk); // title, headings, the contextual-retrieval context when present, text
}

/**
 * A block's postings as 32-bit words, two per posting: tf·2^bits + offset (the chunk's id within the block), and the
 * chunk's length. Sorted by offset. Stored in the platform's byte order (little-endian on every platform Node runs on
 * here; the constructor refuses a big-endian host rather than misread a file).
 */
function decodeWords(buf: Buffer): Uint32Array {
  if ((buf.byteOffset & 3) === 0) return new Uint32Array(buf.buffer, buf.byteOffset, buf.byteLength >>> 2);
  return new Uint32Array(Uint8Array.from(buf).buffer);
}

function encodeWords(words: Uint32Array): Buffer {
  return Buffer.from(words.buffer, words.byteOffset, words.byteLength);
}

function encodeTermIds(ids: number[]): Buffer {
  return encodeWords(Uint32Array.from(ids));
}

/** One block in a term's directory: block number, max tf, whether the payload is postings (a small block), payload. */
/**
 * A block's directory entry. `bounds`: a large block's payload seen as the 16-bit (max tf, min length) pairs per
 * sub-block, made when a directory row is decoded (a search read every entry's pairs, and making the view per entry
 * per search was ≈ 3 % of a search at 1M chunks).
 */
type DirEntry = [block: number, maxTf: number, small: boolean, payload: Uint32Array, bounds?: Uint16Array];

/**
 * A `dirs` row: its blocks' directory entries in block order, as 32-bit words — block, max tf, payload length in words
 * (| SMALL_FLAG when the payload is the block's postings), payload (the sub-block bounds' 16-bit pairs, or the postings).
 */
function readDirSegment(buf: Buffer, into: DirEntry[]): DirEntry[] {
  const w = decodeWords(buf);
  for (let j = 0; j < w.length; ) {
    const n = w[j + 2]! & ~SMALL_FLAG;
    const small = (w[j + 2]! & SMALL_FLAG) !== 0;
    const payload = w.subarray(j + 3, j + 3 + n);
    into.push([w[j]!, w[j + 1]!, small, payload, small ? undefined : new Uint16Array(payload.buffer, payload.byteOffset, payload.length * 2)]);
    j += 3 + n;
  }
  return into;
}

function writeDirSegment(entries: readonly DirEntry[]): Buffer {
  let size = 0;
  for (const e of entries) size += 3 + e[3].length;
  const out = new Uint32Array(size);
  let j = 0;
  for (const [block, maxTf, small, payload] of entries) {
    out[j] = block;
    out[j + 1] = maxTf;
    out[j + 2] = (payload.length | (small ? SMALL_FLAG : 0)) >>> 0;
    out.set(payload, j + 3);
    j += 3 + payload.length;
  }
  return encodeWords(out);
}

/** A block's directory entry: the postings of a small block (no sub-block bounds), else its sub-block bounds. */
function dirEntry(block: number, maxTf: number, sub: Buffer | null, words: Uint32Array): DirEntry {
  return sub ? [block, maxTf, false, decodeWords(sub)] : [block, maxTf, true, words];
}

/**
 * A term's large blocks as the search's visiting loop reads them (what a range scan of the term returns, what point
 * lookups add, and what the term cache keeps): their posting words one block after another in one array, and per
 * (block, sub-block) the index of its first posting word, so that a visited sub-block's postings are one range of one
 * array. Per visit that is two cache misses (the offsets, the first word), where an array per block with offsets
 * relative to it was four (the array slot, the typed array, its buffer, the offsets) and a binary search in the block
 * more (its probes were ≈ a quarter of the loop's time at 1M chunks). The offsets are computed when a block is added
 * (one pass over its words, beside decoding them). Point lookups append to the arrays in place (doubling): the only
 * mutation of a cached structure, by the one connection (one thread) that owns the cache.
 */
interface PackedBlocks {
  /** Blocks the offsets can describe (the term's largest block number + 1). */
  nb: number;
  /** The fetched large blocks' posting words, one block after another; `used` of them in use. */
  data: Uint32Array;
  used: number;
  /**
   * starts[b·(subCount + 1) + q]: the index in `data` of block b's sub-block q's first posting word; [… + subCount]:
   * the block's end. All 0 for a block not fetched (a fetched block has postings, so its end is above 0).
   */
  starts: Uint32Array;
  /** Every large block of the term is here (a range scan read them); else only those point lookups fetched. */
  complete: boolean;
  /**
   * Every large block below this one is here (`nb` for a complete pack, 0 for one of point lookups): after another
   * connection changed the term from some block on (refreshTerm), a range scan reads only the blocks from here.
   */
  have: number;
  /** Words in `data` of blocks dropped since (another connection rewrote them): the pack is dropped past half. */
  dead: number;
  bytes: number;
}

function newPacked(nb: number, words: number, subCount: number, complete: boolean): PackedBlocks {
  const starts = new Uint32Array(nb * (subCount + 1));
  const data = new Uint32Array(words);
  return { nb, data, used: 0, starts, complete, have: complete ? nb : 0, dead: 0, bytes: starts.byteLength + data.byteLength };
}

/**
 * Makes room for `words` more words in `pk.data`: at least an eighth more than it has (amortised appends) — not twice
 * as much, which doubled a large term's pack (megabytes at 1M chunks) on the first block a search looked up after
 * another connection's commit, and pushed other terms out of the cache.
 */
function reserve(pk: PackedBlocks, words: number): void {
  if (pk.used + words <= pk.data.length) return;
  const next = new Uint32Array(Math.max(pk.used + words, pk.data.length + (pk.data.length >>> 3)));
  next.set(pk.data.subarray(0, pk.used));
  pk.bytes += next.byteLength - pk.data.byteLength;
  pk.data = next;
}

/** Appends block `block`'s words (offset-sorted postings; `mask` the offset bits) and computes its sub-block offsets. */
function addBlock(pk: PackedBlocks, block: number, words: Uint32Array, mask: number, subShift: number, subCount: number): void {
  reserve(pk, words.length);
  const begin = pk.used;
  pk.data.set(words, begin);
  pk.used += words.length;
  const starts = pk.starts;
  const at = block * (subCount + 1);
  let q = 0;
  for (let j = 0; j < words.length; j += 2) {
    const sub = (words[j]! & mask) >>> subShift;
    while (q <= sub) starts[at + q++] = begin + j;
  }
  while (q <= subCount) starts[at + q++] = begin + words.length;
}

/** Whether `pk` holds block `block`'s words (a fetched block's end offset is above 0, an absent one's 0). */
function holds(pk: PackedBlocks | undefined, block: number, subCount: number): pk is PackedBlocks {
  return pk !== undefined && block < pk.nb && pk.starts[block * (subCount + 1) + subCount] !== 0;
}

/** A range scan's blocks (every large block of the term), packed. */
function packBlocks(scanned: Array<[number, Uint32Array]>, mask: number, subShift: number, subCount: number): PackedBlocks {
  let nb = 0;
  let words = 0;
  for (const [block, w] of scanned) {
    if (block + 1 > nb) nb = block + 1;
    words += w.length;
  }
  const pk = newPacked(nb, words, subCount, true);
  for (const [block, w] of scanned) addBlock(pk, block, w, mask, subShift, subCount);
  return pk;
}

export class EmbeddedBm25KeywordIndex implements KeywordIndex {
  readonly file: string;
  private readonly k1: number;
  private readonly b: number;
  private readonly maxBoundSlots: number;
  private readonly trustFilter: boolean;
  /**
   * Trusted searches (blockMax step 3) since the last look, and how many of them ran again; while `paused` > 0
   * searches check each candidate (see TRUST_WINDOW).
   */
  private trusted = { runs: 0, retried: 0, paused: 0 };
  private readonly writeRunItems: number;
  private readonly log: Logger;
  private readonly db: Database.Database;
  private closed = false;
  private readonly searchCache = new Map<string, Database.Statement>();
  /** A search's bound slots (terms × sub-blocks) and per-sub-block bounds, reused from one search to the next. */
  private readonly slotBuffer = new ScratchBuffer();
  private readonly boundBuffer = new ScratchBuffer();
  /** Decoded directories and large blocks of recent query terms (see TermCache), valid for `cacheVersion`. */
  private readonly termCache: TermCache<DirEntry[], PackedBlocks>;
  private readonly onTermCacheStats: EmbeddedBm25KeywordIndexOptions['onTermCacheStats'];
  /** `PRAGMA data_version` when the term cache was last known valid (another connection's commit changes it). */
  private cacheVersion = -1;
  /** The last `term_changes` row the term cache has followed (validateTermCache). */
  private changeSeq = 0;
  /**
   * Cached terms another connection changed since they were cached: term id → the first block it changed. The
   * directory from that block's `dirs` row on, and the large blocks from that block on, are re-read at the term's next
   * use (refreshTerm); what lies below is unchanged (a write rewrites only the blocks it touches).
   */
  private readonly staleTerms = new Map<number, number>();
  /** Cached terms refreshed that way (termCacheStats). */
  private termRefreshes = 0;
  /**
   * With journalLoads: (term id, 1 when a search read all its large blocks else 0) per term loaded into the term cache
   * since the last takeLoadedTerms; bounded (the oldest half goes past LOAD_JOURNAL_MAX pairs).
   */
  private readonly loadJournal: number[] | undefined;
  /** This connection's write transaction: term id → the first block it rewrote (logged at commit: logChanges). */
  private readonly changed = new Map<number, number>();
  /**
   * The change log's rows this connection wrote, one mark a second at most (seq, Date.now()): where a prune may cut
   * (logChanges). In memory: after a restart, rows written before it go at the first prune a minute later.
   */
  private readonly logMarks: Array<[seq: number, at: number]> = [];
  /** followChangesMs's timer (unref'd: it never keeps a process alive). */
  private followTimer: NodeJS.Timeout | undefined;
  /** log2 of the chunk ids per block, and derived masks. */
  private bits = DEFAULT_BLOCK_BITS;
  private blockSize = 1 << DEFAULT_BLOCK_BITS;
  /** Largest tf a posting word holds (32 − bits bits); larger counts are stored as this (BM25 saturates long before). */
  private maxTf = 2 ** (32 - DEFAULT_BLOCK_BITS) - 1;
  /** log2 of the chunk ids per sub-block (SUB_BLOCKS sub-blocks per block, or one chunk id each in tiny blocks). */
  private subShift = DEFAULT_BLOCK_BITS - SUB_BLOCK_BITS;
  /** Blocks with at most this many postings are small: postings in the directory, no `blocks` row. */
  private smallBlock = Math.max(SMALL_BLOCK_MIN, 1 << (SUB_BLOCK_BITS - 1));

  private readonly stmt: {
    byChunkId: Database.Statement<[string], ChunkRow>;
    insertChunk: Database.Statement<[string, string, string, number, string, string, string, number, string, Buffer | null]>;
    deleteChunk: Database.Statement<[number]>;
    upsertTerm: Database.Statement<[string, number], { id: number }>;
    addDf: Database.Statement<[number, number]>;
    deleteDeadTerms: Database.Statement<[string]>;
    getBlock: Database.Statement<[number, number], Buffer>;
    putBlock: Database.Statement<[number, number, number, number, number, Buffer | null, Buffer]>;
    deleteBlock: Database.Statement<[number, number]>;
    getDirSeg: Database.Statement<[number, number], Buffer>;
    putDirSeg: Database.Statement<[number, number, Buffer]>;
    deleteDirSeg: Database.Statement<[number, number]>;
    addStats: Database.Statement<[number, number]>;
    stats: Database.Statement<[], { docs: number; total_len: number }>;
    termDf: Database.Statement<[string], { term: string; id: number; df: number }>;
    directory: Database.Statement<[number], Buffer>;
    termBlocks: Database.Statement<[number], [number, Buffer]>;
    directoryFrom: Database.Statement<[number, number], Buffer>;
    termBlocksFrom: Database.Statement<[number, number], [number, Buffer]>;
    logChange: Database.Statement<[Buffer | null]>;
    pruneChanges: Database.Statement<[number]>;
    lastChange: Database.Statement<[], number>;
    changesSince: Database.Statement<[number], [number, Buffer | null]>;
    dataVersion: Database.Statement<[], number>;
    docRows: Database.Statement<[string], ChunkRow>;
    docRowsExcept: Database.Statement<[string, number], ChunkRow>;
    getMany: Database.Statement<[string], { chunk_id: string; body: string }>;
    countAll: Database.Statement<[], { n: number }>;
    countDoc: Database.Statement<[string], { n: number }>;
    maxId: Database.Statement<[], number>;
    clusteredUpto: Database.Statement<[], string>;
  };

  static async open(opts: EmbeddedBm25KeywordIndexOptions): Promise<EmbeddedBm25KeywordIndex> {
    return new EmbeddedBm25KeywordIndex(opts);
  }

  constructor(opts: EmbeddedBm25KeywordIndexOptions) {
    this.k1 = opts.k1 ?? 0.9;
    this.b = opts.b ?? 0.4;
    if (!(this.k1 >= 0) || !(this.b >= 0 && this.b <= 1)) throw new Error(`EmbeddedBm25KeywordIndex: need k1 >= 0 and 0 <= b <= 1 (got ${this.k1}, ${this.b})`);
    const wantBits = opts.blockBits ?? DEFAULT_BLOCK_BITS;
    if (!Number.isInteger(wantBits) || wantBits < 0 || wantBits > 16) throw new Error(`EmbeddedBm25KeywordIndex: blockBits must be an integer in 0..16 (got ${wantBits})`);
    this.writeRunItems = opts.writeRunItems ?? WRITE_RUN_ITEMS;
    if (!(Number.isInteger(this.writeRunItems) && this.writeRunItems >= 1)) throw new Error(`EmbeddedBm25KeywordIndex: writeRunItems must be an integer >= 1 (got ${opts.writeRunItems})`);
    this.maxBoundSlots = opts.maxBoundSlots ?? MAX_BOUND_SLOTS;
    this.trustFilter = opts.trustFilter ?? true;
    if (!(this.maxBoundSlots >= 0)) throw new Error(`EmbeddedBm25KeywordIndex: maxBoundSlots must be >= 0 (got ${opts.maxBoundSlots})`);
    const cacheBytes = opts.termCacheBytes ?? DEFAULT_TERM_CACHE_BYTES;
    if (!Number.isSafeInteger(cacheBytes) || cacheBytes < 0) throw new Error(`EmbeddedBm25KeywordIndex: termCacheBytes must be a non-negative integer (got ${opts.termCacheBytes})`);
    this.termCache = new TermCache(cacheBytes);
    this.onTermCacheStats = opts.onTermCacheStats;
    this.loadJournal = opts.journalLoads ? [] : undefined;
    const follow = opts.followChangesMs ?? 0;
    if (!(Number.isSafeInteger(follow) && follow >= 0)) throw new Error(`EmbeddedBm25KeywordIndex: followChangesMs must be a non-negative integer (got ${opts.followChangesMs})`);
    const mmap = opts.mmapBytes ?? DEFAULT_MMAP_BYTES;
    if (!Number.isSafeInteger(mmap) || mmap < 0) throw new Error(`EmbeddedBm25KeywordIndex: mmapBytes must be a non-negative integer (got ${mmap})`);
    if (os.endianness() !== 'LE') throw new Error('EmbeddedBm25KeywordIndex: the packed posting blocks are little-endian; this host is big-endian');
    this.log = opts.logger ?? new Logger('embedded-bm25');
    fs.mkdirSync(opts.dir, { recursive: true });
    this.file = path.join(opts.dir, DB_FILE);
    this.db = openSqlite(this.file, opts.synchronous, opts.pageSize ?? DEFAULT_PAGE_SIZE);
    try {
      this.db.pragma(`mmap_size = ${mmap}`);
      // A recluster writes the whole index into the WAL; once checkpointed, the file is cut back to this when the WAL
      // restarts instead of keeping its largest size on disk.
      this.db.pragma(`journal_size_limit = ${64 * 2 ** 20}`);
      if (opts.walCheckpointMiB !== undefined) {
        if (!(Number.isInteger(opts.walCheckpointMiB) && opts.walCheckpointMiB >= 1)) throw new Error(`EmbeddedBm25KeywordIndex: walCheckpointMiB must be an integer >= 1 (got ${opts.walCheckpointMiB})`);
        const pageSize = this.db.pragma('page_size', { simple: true }) as number;
        this.db.pragma(`wal_autocheckpoint = ${Math.max(1, Math.floor((opts.walCheckpointMiB * 2 ** 20) / pageSize))}`);
      }
      this.db.exec(`
        ${chunksTable('chunks')};
        ${CHUNKS_DOCUMENT_INDEX};
        CREATE TABLE IF NOT EXISTS terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE, df INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS stats (id INTEGER PRIMARY KEY CHECK (id = 1), docs INTEGER NOT NULL, total_len INTEGER NOT NULL);
        INSERT OR IGNORE INTO stats (id, docs, total_len) VALUES (1, 0, 0);
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE IF NOT EXISTS term_changes (seq INTEGER PRIMARY KEY, terms BLOB);
      `);
      this.migrate(wantBits);
      this.ensureVisibilityIndex();
      const cols = 'id, kind, len, body, terms';
      this.stmt = {
        byChunkId: this.db.prepare(`SELECT ${cols} FROM chunks WHERE chunk_id = ?`),
        insertChunk: this.db.prepare(
          'INSERT INTO chunks (chunk_id, document_id, tenant, version, kind, acl, metadata, len, body, terms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        ),
        deleteChunk: this.db.prepare('DELETE FROM chunks WHERE id = ?'),
        upsertTerm: this.db.prepare('INSERT INTO terms (term, df) VALUES (?, ?) ON CONFLICT (term) DO UPDATE SET df = df + excluded.df RETURNING id'),
        addDf: this.db.prepare('UPDATE terms SET df = df + ? WHERE id = ?'),
        deleteDeadTerms: this.db.prepare('DELETE FROM terms WHERE df <= 0 AND id IN (SELECT value FROM json_each(?))'),
        getBlock: this.db.prepare<[number, number], Buffer>('SELECT data FROM blocks WHERE term_id = ? AND block = ?').pluck(true),
        putBlock: this.db.prepare(
          'INSERT INTO blocks (term_id, block, max_tf, min_len, n, sub, data) VALUES (?, ?, ?, ?, ?, ?, ?) ' +
            'ON CONFLICT (term_id, block) DO UPDATE SET max_tf = excluded.max_tf, min_len = excluded.min_len, n = excluded.n, sub = excluded.sub, data = excluded.data',
        ),
        deleteBlock: this.db.prepare('DELETE FROM blocks WHERE term_id = ? AND block = ?'),
        getDirSeg: this.db.prepare<[number, number], Buffer>('SELECT data FROM dirs WHERE term_id = ? AND seg = ?').pluck(true),
        putDirSeg: this.db.prepare('INSERT INTO dirs (term_id, seg, data) VALUES (?, ?, ?) ON CONFLICT (term_id, seg) DO UPDATE SET data = excluded.data'),
        deleteDirSeg: this.db.prepare('DELETE FROM dirs WHERE term_id = ? AND seg = ?'),
        addStats: this.db.prepare('UPDATE stats SET docs = docs + ?, total_len = total_len + ? WHERE id = 1'),
        stats: this.db.prepare('SELECT docs, total_len FROM stats WHERE id = 1'),
        termDf: this.db.prepare('SELECT term, id, df FROM terms WHERE term IN (SELECT value FROM json_each(?))'),
        // A term's directory: its `dirs` rows (8 blocks' bounds each, or the postings of small blocks; see readDirSegment).
        directory: this.db.prepare<[number], Buffer>('SELECT data FROM dirs WHERE term_id = ?').pluck(true),
        termBlocks: this.db.prepare<[number], [number, Buffer]>('SELECT block, data FROM blocks WHERE term_id = ? ORDER BY block').raw(true),
        directoryFrom: this.db.prepare<[number, number], Buffer>('SELECT data FROM dirs WHERE term_id = ? AND seg >= ? ORDER BY seg').pluck(true),
        termBlocksFrom: this.db.prepare<[number, number], [number, Buffer]>('SELECT block, data FROM blocks WHERE term_id = ? AND block >= ? ORDER BY block').raw(true),
        logChange: this.db.prepare<[Buffer | null]>('INSERT INTO term_changes (terms) VALUES (?)'),
        pruneChanges: this.db.prepare('DELETE FROM term_changes WHERE seq <= ?'),
        lastChange: this.db.prepare<[], number>('SELECT COALESCE(MAX(seq), 0) FROM term_changes').pluck(true),
        changesSince: this.db.prepare<[number], [number, Buffer | null]>('SELECT seq, terms FROM term_changes WHERE seq > ? ORDER BY seq').raw(true),
        dataVersion: this.db.prepare<[], number>('PRAGMA data_version').pluck(true),
        docRows: this.db.prepare(`SELECT ${cols} FROM chunks WHERE document_id = ?`),
        docRowsExcept: this.db.prepare(`SELECT ${cols} FROM chunks WHERE document_id = ? AND version <> ?`),
        getMany: this.db.prepare('SELECT chunk_id, body FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(?))'),
        countAll: this.db.prepare('SELECT COUNT(*) AS n FROM chunks'),
        countDoc: this.db.prepare('SELECT COUNT(*) AS n FROM chunks WHERE document_id = ?'),
        maxId: this.db.prepare<[], number>('SELECT COALESCE(MAX(id), 0) FROM chunks').pluck(true),
        clusteredUpto: this.db.prepare<[], string>("SELECT value FROM meta WHERE key = 'clustered_upto'").pluck(true),
      };
    } catch (e) {
      this.db.close();
      throw e;
    }
    if (follow > 0 && cacheBytes > 0) {
      this.followTimer = setInterval(() => this.followChanges(), follow);
      this.followTimer.unref();
    }
  }

  /** One transaction per run of whole documents, yielding to the event loop between runs (see documentRuns). */
  async upsert(chunks: Chunk[]): Promise<void> {
    this.assertOpen();
    if (chunks.length === 0) return;
    const runs = documentRuns(chunks, this.writeRunItems);
    for (let i = 0; i < runs.length; i++) {
      if (i > 0) {
        await yieldToLoop();
        this.assertOpen();
      }
      this.write(() => this.upsertRun(runs[i]!));
    }
  }

  async search(req: KeywordSearchRequest): Promise<KeywordHit[]> {
    return this.searchWithStats(req).hits;
  }

  /** `search`, with what the block-max evaluation did. Synchronous: one consistent read of the file. */
  searchWithStats(req: KeywordSearchRequest): { hits: KeywordHit[]; stats: KeywordSearchStats } {
    this.assertOpen();
    const stats: KeywordSearchStats = { terms: 0, fullScans: 0, postingsRead: 0, postingsTotal: 0, blocksTotal: 0, blocksVisited: 0, filterChecks: 0, blocksFetched: 0 };
    const limit = Math.floor(req.k);
    if (!(limit > 0)) return { hits: [], stats };
    const hits = this.db.transaction(() => {
      const terms = this.queryTerms(req.query);
      if (!terms) return [];
      // Inside the read transaction, after its first read: the version of the snapshot this search reads.
      this.validateTermCache();
      stats.terms = terms.list.length;
      const hits = this.blockMax(terms.list, terms.avgdl, limit, req, stats, this.trustFilter && this.trusted.paused === 0);
      this.noteTrust(stats);
      return hits;
    })();
    this.onTermCacheStats?.(this.termCacheStats());
    return { hits, stats };
  }

  /**
   * The reference of `search`: every posting of the query terms scored (no block skipped), every scored chunk
   * filtered, sorted. Same ranking and scores, cost linear in the postings.
   */
  searchExhaustive(req: KeywordSearchRequest): KeywordHit[] {
    this.assertOpen();
    const limit = Math.floor(req.k);
    if (!(limit > 0)) return [];
    return this.db.transaction(() => {
      const terms = this.queryTerms(req.query);
      return terms ? this.exhaustive(terms.list, terms.avgdl, limit, req) : [];
    })();
  }

  /**
   * What the term cache holds and served (hits and misses count query terms; `refreshes`: hits on a term another
   * connection had changed, whose changed tail was re-read).
   */
  termCacheStats(): { bytes: number; maxBytes: number; hits: number; misses: number; refreshes: number } {
    return { bytes: this.termCache.size, maxBytes: this.termCache.maxBytes, hits: this.termCache.hits, misses: this.termCache.misses, refreshes: this.termRefreshes };
  }

  /**
   * Keeps the term cache exact when another connection committed since the last search (`PRAGMA data_version` moved;
   * this connection's own writes evict per term as they go): the commits' rows of the change log name the terms they
   * wrote and the first block of each, and those cached terms are marked stale from there (refreshTerm re-reads that
   * tail at their next use) — the rest of the cache stays. Until 2026-12-07 any such commit cleared the whole cache,
   * so under continuous ingestion every search read its terms' directories and frequent blocks afresh: at 1M chunks
   * with a commit before every search, 59 ms a search against 11 ms now and 9 ms with no writes
   * (scripts/bench/README.md, keyword-churn). The whole cache is cleared when the log cannot be followed: a search
   * connection behind by more than the log keeps (CHANGE_LOG_SECONDS), a commit that rewrote everything (a
   * recluster's swap logs a row without terms), or more than CHANGE_LOG_MAX_PAIRS to follow.
   */
  private validateTermCache(): void {
    const v = this.stmt.dataVersion.get()!;
    if (v === this.cacheVersion) return;
    const first = this.cacheVersion === -1;
    this.cacheVersion = v;
    if (first || this.termCache.size === 0) {
      this.clearTermCache();
      return;
    }
    const rows = this.stmt.changesSince.all(this.changeSeq);
    if (rows.length === 0) return; // commits that wrote no postings (a recluster's steps, chunk rows only)
    let pairs = 0;
    for (const [, terms] of rows) pairs += terms ? terms.byteLength >>> 3 : Infinity;
    if (rows[0]![0] !== this.changeSeq + 1 || !(pairs <= CHANGE_LOG_MAX_PAIRS)) {
      this.clearTermCache();
      return;
    }
    for (const [, terms] of rows) {
      const w = decodeWords(terms!);
      for (let j = 0; j < w.length; j += 2) {
        const term = w[j]!;
        if (!this.termCache.peek(term)) continue;
        const from = this.staleTerms.get(term);
        if (from === undefined || w[j + 1]! < from) this.staleTerms.set(term, w[j + 1]!);
      }
    }
    this.changeSeq = rows[rows.length - 1]![0];
  }

  /**
   * Follows other connections' commits now (what a search does first): marks the cached terms they wrote stale, or
   * clears the cache when the log cannot be followed. Nothing when the cache is empty or the connection closed; a
   * failure (the file busy or closing) is left to the next search, which validates anyway.
   */
  followChanges(): void {
    if (this.closed || this.termCache.size === 0) return;
    try {
      this.db.transaction(() => this.validateTermCache())();
    } catch {
      // the next search validates in its own transaction
    }
  }

  private journal(termId: number, full: 0 | 1): void {
    const j = this.loadJournal;
    if (!j) return;
    if (j.length >= LOAD_JOURNAL_MAX) j.splice(0, LOAD_JOURNAL_MAX >>> 1);
    j.push(termId, full);
  }

  /**
   * With journalLoads: the terms this connection's searches loaded into the term cache since the last call, as flat
   * (term id, full) pairs — full = 1 when a search read all the term's large blocks (a range scan), 0 when only its
   * directory (and perhaps a few looked-up blocks). What warmTerms takes after a restart.
   */
  takeLoadedTerms(): number[] {
    const j = this.loadJournal;
    if (!j || j.length === 0) return [];
    return j.splice(0);
  }

  /**
   * Loads terms into the term cache before any search asks for them — after a restart, the terms searched before it
   * (flat (term id, full) pairs as takeLoadedTerms gives them, most recently loaded last, taken from the end): each
   * term's directory, and for `full` terms all their large blocks, exactly as a search would have cached them. A
   * million-chunk index's first searches otherwise read ≈ 1,100 terms at ≈ 4 ms each per connection
   * (scripts/bench/README.md, keyword-churn). Stops at `deadline` (a Date.now() time) or once the cache holds
   * WARM_CACHE_SHARE of its budget; terms already cached, or no longer in the index, are skipped. Runs in read
   * transactions of WARM_TERMS_PER_TXN terms, each following the change log first, so the cache stays exact under
   * writes as it does for searches. Returns the terms loaded and the cache's size after.
   */
  warmTerms(pairs: ArrayLike<number>, deadline = Number.POSITIVE_INFINITY): { terms: number; bytes: number } {
    this.assertOpen();
    let loaded = 0;
    const limit = this.termCache.maxBytes * WARM_CACHE_SHARE;
    const subCount = this.blockSize >>> this.subShift;
    let i = pairs.length - 2;
    const more = () => i >= 0 && this.termCache.size < limit && Date.now() < deadline;
    while (more()) {
      this.db.transaction(() => {
        this.validateTermCache();
        for (let n = 0; n < WARM_TERMS_PER_TXN && more(); n++, i -= 2) {
          const id = pairs[i]!;
          if (!Number.isSafeInteger(id) || id < 0) continue;
          const cached = this.termCache.peek(id);
          if (cached && this.staleTerms.has(id)) continue; // its next search refreshes it
          let entries = cached?.dir;
          if (!entries) {
            const read = this.readDirectory(id);
            if (read.entries.length === 0) continue; // a term no longer in the index
            this.staleTerms.delete(id);
            this.termCache.putDir(id, read.entries, read.bytes);
            entries = read.entries;
            loaded++;
          }
          // directory only (its blocks are looked up one by one when a search needs them), or no large block, or held
          if (pairs[i + 1] !== 1 || cached?.blocks?.complete || entries.every((e) => e[2])) continue;
          const pk = packBlocks(this.scanBlocks(id), this.blockSize - 1, this.subShift, subCount);
          this.termCache.putBlocks(id, pk, pk.bytes);
        }
      })();
    }
    return { terms: loaded, bytes: this.termCache.size };
  }

  /** A term's directory read whole from its `dirs` rows, and what it takes in the term cache. */
  private readDirectory(termId: number): { entries: DirEntry[]; bytes: number } {
    const entries: DirEntry[] = [];
    let bytes = 0;
    for (const seg of this.stmt.directory.all(termId)) {
      readDirSegment(seg, entries);
      bytes += seg.byteLength;
    }
    return { entries, bytes: bytes + entries.length * DIR_ENTRY_OVERHEAD };
  }

  /** Every large block of a term, decoded, in block order (one range scan). */
  private scanBlocks(termId: number): Array<[number, Uint32Array]> {
    return this.stmt.termBlocks.all(termId).map(([b, data]): [number, Uint32Array] => [b, decodeWords(data)]);
  }

  /** Empties the term cache; the change log is followed from its current end. Inside a transaction (a consistent end). */
  private clearTermCache(): void {
    this.termCache.clear();
    this.staleTerms.clear();
    this.changeSeq = this.stmt.lastChange.get()!;
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
    return this.write(() => {
      const rows = keepVersion === undefined ? this.stmt.docRows.all(documentId) : this.stmt.docRowsExcept.all(documentId, keepVersion);
      this.removeRows(rows);
      return rows.length;
    });
  }

  /** Stored chunks (children and parents), of one document or all. */
  async count(documentId?: string): Promise<number> {
    this.assertOpen();
    return documentId === undefined ? this.stmt.countAll.get()!.n : this.stmt.countDoc.get(documentId)!.n;
  }

  /**
   * Whether a recluster is due under `policy`: the chunk ids written since the last one (ids above the last id it
   * assigned; 0 before the first) reach both `minIds` and `ratio` × the ids it ordered. Two indexed reads.
   */
  reclusterDue(policy: ReclusterPolicy): boolean {
    this.assertOpen();
    if (!(policy.ratio > 0)) return false;
    let upto = Number(this.stmt.clusteredUpto.get() ?? 0);
    const max = this.stmt.maxId.get()!;
    if (max < upto) upto = 0; // the highest ids were deleted since, and new chunks reuse ids below them: count from 0
    const fresh = max - upto;
    return fresh >= policy.minIds && fresh >= policy.ratio * upto;
  }

  /**
   * Renumbers the chunks so that the children a query's terms score highly sit together (ClusterKeys): children in
   * clustered order get ids 1…C, parents C+1…, and every posting block and directory is rewritten for the new ids.
   * Searches return exactly the same hits and scores (ids are internal: hits carry chunk ids, ties break on them);
   * what changes is how many sub-blocks a search visits (scripts/bench/README.md, keyword-scale). Deleted chunks' ids
   * are reclaimed on the way.
   *
   * The new tables (`chunks_r`, `blocks_r`, `dirs_r`) are written beside the old ones in committed steps of about
   * RECLUSTER_STEP_BYTES each, and swapped in by one last transaction — which first checks (`PRAGMA data_version`)
   * that no other connection wrote to the file meanwhile, and gives up (dropping the new tables) if one did: this
   * connection is the file's only writer in the platform (the keyword writer), and it does nothing else until the
   * recluster returns. A crash before the swap leaves the old tables as they were and the partial new ones beside
   * them (dropped by the next recluster, which is due again at once); a failure drops them on the way out. Searches
   * on other connections read the old tables throughout (the steps write no postings of the live tables, so their
   * term caches stay; the swap logs a change without terms, which clears them). Writers on this file wait — the
   * keyword writer runs it between its write tasks, so ingestion pauses for its duration (progress logged every
   * 10 s). Cost: one pass over the chunk rows and one over every posting block, linear in the index; run when the ids
   * written since the last one reach a share of the index (reclusterDue), that is amortised to a constant number of
   * rewrites per chunk.
   *
   * Why steps, not one transaction (until 2026-12-07): a transaction larger than SQLite's page cache spills its
   * pages into the WAL, and every page read that misses the cache then probes the WAL index of every frame the
   * transaction wrote — a cost per read that grows with what was written, so the whole recluster grew with the
   * square of the index. Measured in `bench scale` to 1M chunks: ingestion paused 180 / 360 / 900 s at ≈ 350k /
   * 525k / 790k chunks (1.5× apart); the chunk-row copy of a 1.45M-id index slowed from 15k to 5k rows/s as the
   * transaction grew (scripts/bench/README.md, scale).
   * Disk: the old tables' pages are free (reused by later writes) after the swap, so the file grows to about
   * twice its data at the first recluster and no further; the WAL is checkpointed as the steps commit (every
   * walCheckpointMiB) and after the swap.
   */
  recluster(): ReclusterResult {
    this.assertOpen();
    const started = Date.now();
    let result: ReclusterResult;
    try {
      result = this.reclusterInSteps(started);
    } catch (e) {
      try {
        this.write(() => this.dropReclusterTables());
      } catch {
        // the next recluster drops them first
      }
      throw e; // the old tables are unchanged, and so is what the term cache holds of them
    }
    this.clearTermCache(); // this connection's (it wrote the swap: its data_version does not move)
    try {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    } catch {
      // a reader holds the WAL: it is reused as it is, and checkpointed later
    }
    result.ms = Date.now() - started;
    this.log.info(
      `reclustered ${this.file}: ${result.children} children (${result.keyed} grouped by topic) and ${result.parents} parents renumbered, ` +
        `${result.postings} postings of ${result.terms} terms rewritten, in ${result.ms} ms`,
    );
    return result;
  }

  /**
   * Copies what the write-ahead log holds into `keyword.db` and, when no search is reading from the log, truncates it
   * to nothing — never waiting for readers (a PASSIVE checkpoint, then a TRUNCATE one that gives up at once if busy;
   * what a reader still needs stays for the next checkpoint). The keyword writer calls it once its writes pause, so
   * that a large `walCheckpointMiB` leaves neither searches reading recent pages through the log, nor a crash replaying
   * it, nor its size on disk. Returns whether the log was emptied.
   */
  checkpoint(): boolean {
    this.assertOpen();
    this.db.pragma('wal_checkpoint(PASSIVE)');
    const timeout = this.db.pragma('busy_timeout', { simple: true }) as number;
    this.db.pragma('busy_timeout = 0');
    try {
      const [row] = this.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[];
      return row?.busy === 0;
    } catch {
      return false;
    } finally {
      this.db.pragma(`busy_timeout = ${timeout}`);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.followTimer);
    this.searchCache.clear();
    this.db.close();
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * One write transaction, IMMEDIATE: it reads blocks and directory rows before it rewrites them, so a second writer on
   * the same file waits for the lock (busy timeout) instead of failing to upgrade a read transaction.
   * (Tried and not kept: a cache of the writer's recently written `dirs` rows, checked against `PRAGMA data_version`;
   * the keyword-only fill was no faster, 0.85× / 0.83× of format 3 at 10k / 100k against 0.89× / 0.86× without it —
   * the cost of format 4's writes lies elsewhere, probably in the extra pages each transaction dirties; not profiled further.)
   */
  private write<T>(fn: () => T): T {
    return this.db
      .transaction(() => {
        this.changed.clear();
        const result = fn();
        this.logChanges();
        return result;
      })
      .immediate();
  }

  /**
   * The change log's row for this transaction's postings (term id, first block rewritten — pairs of 32-bit words), so
   * that other connections' term caches drop only what changed (validateTermCache); rows older than CHANGE_LOG_SECONDS
   * go (beyond the last CHANGE_LOG_MIN_ROWS), checked once a second. Constant per commit: what the commit wrote, not
   * the index.
   */
  private logChanges(): void {
    if (this.changed.size === 0) return;
    const w = new Uint32Array(2 * this.changed.size);
    let j = 0;
    for (const [term, block] of this.changed) {
      w[j++] = term;
      w[j++] = block;
    }
    this.changed.clear();
    const seq = Number(this.stmt.logChange.run(encodeWords(w)).lastInsertRowid);
    const now = Date.now();
    const last = this.logMarks[this.logMarks.length - 1];
    if (last && now - last[1] < 1000) return;
    this.logMarks.push([seq, now]);
    // The newest mark at least CHANGE_LOG_SECONDS old: every row up to it is that old (rows before the first mark —
    // written before this connection opened — older still).
    let cut = -1;
    while (this.logMarks.length > 1 && now - this.logMarks[1]![1] >= CHANGE_LOG_SECONDS * 1000) this.logMarks.shift();
    if (now - this.logMarks[0]![1] >= CHANGE_LOG_SECONDS * 1000) cut = this.logMarks[0]![0];
    cut = Math.min(cut, seq - CHANGE_LOG_MIN_ROWS);
    if (cut > 0) this.stmt.pruneChanges.run(cut);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`EmbeddedBm25KeywordIndex(${this.file}) is closed`);
  }

  /** tf / (tf + K0 + K1·len) is BM25's term-frequency part: K0 = k1·(1 − b), K1 = k1·b / avgdl. */
  private norms(avgdl: number): { K0: number; K1: number } {
    return { K0: this.k1 * (1 - this.b), K1: (this.k1 * this.b) / avgdl };
  }

  /** Query terms known to the index, with weights, in the canonical order (weight desc, then term). */
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
    const list = known.map((t): QueryTerm => ({ id: t.id, term: t.term, df: t.df, w: Math.log(1 + (n - t.df + 0.5) / (t.df + 0.5)) * (qtf.get(t.term) ?? 1) }));
    list.sort((a, b) => b.w - a.w || (a.term < b.term ? -1 : a.term > b.term ? 1 : 0));
    return { list, avgdl };
  }

  /**
   * The rows of `ids` (chunk rowids) that pass the request's tenant/ACL/metadata filter, in SQL. Without metadata
   * filters every column the check and the hit need is in the `chunks_visibility` index (see ensureVisibilityIndex),
   * so the lookups read that compact index instead of the chunk rows (each holds the chunk's whole JSON, so every
   * candidate would be a page of its own); a metadata filter needs the row anyway, and reads it directly.
   */
  private filterFor(
    req: KeywordSearchRequest,
    width?: number,
  ): (ids: number[]) => Array<{ id: number; chunk_id: string; document_id: string; version: number }> {
    const where = scopeAndFiltersSql('c', req.scope, req.filters);
    const covered = Object.keys(req.filters ?? {}).every((key) => key === 'document_id');
    const head = `SELECT c.id, c.chunk_id, c.document_id, c.version FROM chunks c${covered ? ` INDEXED BY ${VISIBILITY_INDEX}` : ''} WHERE c.id IN `;
    type Row = { id: number; chunk_id: string; document_id: string; version: number };
    if (width !== undefined) {
      // Batches of at most `width` ids (the pruned search's): bound as that many `?`s, the missing ones NULL (matches
      // nothing), which SQLite reads as a list it sorts once — ≈ 15 % less per id at 1M chunks than parsing the
      // same ids from JSON with json_each (3.1 against 3.6 µs, measured on a 1.4M-row file).
      const stmt = this.cached(`${head}(${new Array<string>(width).fill('?').join(', ')}) AND ${where.sql}`);
      const args = new Array<number | null>(width);
      return (ids) => {
        if (ids.length > width) throw new RangeError(`filter batch of ${ids.length} ids over its width ${width}`);
        for (let j = 0; j < width; j++) args[j] = j < ids.length ? ids[j]! : null;
        return stmt.all(where.params, ...args) as Row[];
      };
    }
    const stmt = this.cached(`${head}(SELECT value FROM json_each(@ids)) AND ${where.sql}`);
    return (ids) => stmt.all({ ...where.params, ids: JSON.stringify(ids) }) as Row[];
  }

  /** Every posting of the query terms scored, every scored chunk filtered, sorted (inside the caller's transaction). */
  private exhaustive(terms: QueryTerm[], avgdl: number, k: number, req: KeywordSearchRequest): KeywordHit[] {
    const { K0, K1 } = this.norms(avgdl);
    const acc = new Map<number, number>();
    // a chunk has one posting per term, so the order of a term's postings does not change the per-chunk sums
    for (const t of terms) this.forEachPosting(t.id, (id, tf, len) => acc.set(id, (acc.get(id) ?? 0) + (t.w * tf) / (tf + K0 + K1 * len)));
    const filter = this.filterFor(req);
    const out: KeywordHit[] = [];
    const ids = [...acc.keys()];
    for (let i = 0; i < ids.length; i += BATCH) {
      for (const r of filter(ids.slice(i, i + BATCH))) out.push({ chunk_id: r.chunk_id, document_id: r.document_id, version: r.version, score: acc.get(r.id)! });
    }
    return out.sort(byScoreThenChunkId).slice(0, k);
  }

  private blockMax(
    terms: QueryTerm[],
    avgdl: number,
    k: number,
    req: KeywordSearchRequest,
    stats: KeywordSearchStats,
    trust = this.trustFilter,
  ): KeywordHit[] {
    const { K0, K1 } = this.norms(avgdl);
    const B = this.blockSize;
    const S = this.subShift;
    const bits = this.bits;
    const mask = B - 1; // a posting word: tf << bits | offset (`&` and `>>>` are exact on 32-bit words)
    const subSize = 1 << S;
    const subCount = B >>> S;
    const nt = terms.length;
    // 1. Directories: every term's `dirs` rows (bounds per sub-block, or a small block's postings themselves), from
    //    the term cache when a recent search read them.
    /** Per term its large blocks packed (PackedBlocks), once a range scan read them or the term cache held them. */
    const packed: Array<PackedBlocks | undefined> = new Array<PackedBlocks | undefined>(nt).fill(undefined);
    /** Point lookups of blocks so far per term (−∞ once every block of the term is in `packed` or `words`). */
    const lookups = new Float64Array(nt);
    const dirs = terms.map((t, i) => {
      stats.postingsTotal += t.df;
      let hit = this.termCache.get(t.id);
      if (hit && this.staleTerms.size) {
        const from = this.staleTerms.get(t.id);
        if (from !== undefined) {
          this.staleTerms.delete(t.id);
          hit = this.refreshTerm(t.id, hit, from);
        }
      }
      if (hit) {
        if (hit.blocks) {
          packed[i] = hit.blocks;
          if (hit.blocks.complete) lookups[i] = -Infinity;
        }
        return hit.dir;
      }
      const { entries, bytes } = this.readDirectory(t.id);
      this.staleTerms.delete(t.id); // (marked while cached, then dropped from the cache: read whole now)
      this.termCache.putDir(t.id, entries, bytes);
      this.journal(t.id, 0);
      return entries;
    });
    let nBlocks = 0;
    for (const dir of dirs) if (dir.length && dir[dir.length - 1]![0] + 1 > nBlocks) nBlocks = dir[dir.length - 1]![0] + 1;
    const nSub = nBlocks * subCount;
    /**
     * termUb[key·nt + i]: term i's bound in sub-block `key` (block·subCount + sub), 0 when absent — key-major, so that
     * a visited sub-block's bounds are one cache line instead of one line per term. Dense, so its size is
     * terms × sub-blocks: ≈ 5 MB for a 10-term question at 1M chunks (one buffer the connection reuses, ScratchBuffer). A query whose slots would
     * exceed maxBoundSlots (2^24 by default, 128 MB: ~1,000 distinct terms at 1M chunks) is evaluated exhaustively
     * instead — same results, memory bounded by the postings; a sparse per-term list would avoid that, not built.
     */
    if (nt * nSub > this.maxBoundSlots) {
      stats.exhaustive = true;
      return this.exhaustive(terms, avgdl, k, req);
    }
    const termUb = this.slotBuffer.take(nt * nSub);
    /** Decoded posting words per (term i, block) at i·nBlocks + block, fetched at most once per search. */
    const words = new Array<Uint32Array | undefined>(nt * nBlocks).fill(undefined);
    // Per sub-block the bound: Σ of the terms' bounds, in term order. Summed term by term as each term's bounds are set
    // (bound[key] receives term 0's, then term 1's… — the same additions in the same order, so the same floats as a
    // pass over every (sub-block, term) slot), which touches only the slots a term has: the dense pass over all
    // terms × sub-blocks was ≈ 10 % of a search's JavaScript at 1M chunks.
    const bound = this.boundBuffer.take(nSub);
    const subsOfTerm = new Uint32Array(nt);
    for (let i = 0; i < nt; i++) {
      const w = terms[i]!.w;
      let subs = 0;
      for (const [block, maxTf, isData, payload, bounds] of dirs[i]!) {
        const at = block * subCount;
        if (isData) {
          // A small block: its postings came with the directory; exact per-posting bounds, and no fetch later.
          const ws = payload;
          words[i * nBlocks + block] = ws;
          for (let j = 0; j < ws.length; j += 2) {
            const tf = ws[j]! >>> bits;
            const ub = (w * tf) / (tf + K0 + K1 * ws[j + 1]!);
            const slot = (at + ((ws[j]! & mask) >>> S)) * nt + i;
            if (ub > termUb[slot]!) termUb[slot] = ub;
          }
          // the block's postings are offset-sorted: each sub-block's are adjacent, so its (final) bound is added once
          let last = -1;
          for (let j = 0; j < ws.length; j += 2) {
            const key = at + ((ws[j]! & mask) >>> S);
            if (key === last) continue;
            last = key;
            bound[key] = bound[key]! + termUb[key * nt + i]!;
            subs++;
          }
        } else {
          const sub = bounds ?? new Uint16Array(payload.buffer, payload.byteOffset, payload.length * 2);
          for (let q = 0; q < subCount; q++) {
            let tf = sub[2 * q]!;
            if (tf === 0) continue;
            if (tf === HALF_MAX) tf = maxTf; // saturated: the block's own maximum bounds it
            const ub = (w * tf) / (tf + K0 + K1 * sub[2 * q + 1]!);
            termUb[(at + q) * nt + i] = ub;
            bound[at + q] = bound[at + q]! + ub;
            subs++;
          }
        }
      }
      subsOfTerm[i] = subs;
    }
    let present = 0;
    let maxBound = 0;
    for (let key = 0; key < nSub; key++) {
      if (bound[key]! > 0) present++;
      if (bound[key]! > maxBound) maxBound = bound[key]!;
    }
    stats.blocksTotal = present;
    // The visiting order: sub-blocks by descending bound, bucketed (a counting sort, linear: the comparison sort of the
    // ≈ 15,000 sub-blocks of a question at 1M chunks was ≈ 14 % of the search's own JavaScript). Bucket j holds bounds
    // in [maxBound·j/NB, maxBound·(j+1)/NB), visited highest first, so `cap` (its upper edge) bounds every sub-block
    // from there on; float rounding at an edge is within BOUND_SLACK.
    const NB = ORDER_BUCKETS;
    const bucketOf = (x: number): number => Math.min(NB - 1, Math.floor((x / maxBound) * NB));
    const start = new Int32Array(NB + 1);
    for (let key = 0; key < nSub; key++) if (bound[key]! > 0) start[NB - 1 - bucketOf(bound[key]!)]!++;
    for (let b = 0, sum = 0; b <= NB; b++) {
      const n = b < NB ? start[b]! : 0;
      start[b] = sum;
      sum += n;
    }
    const keys = new Int32Array(present);
    const fill = start.slice(0, NB);
    for (let key = 0; key < nSub; key++) if (bound[key]! > 0) keys[fill[NB - 1 - bucketOf(bound[key]!)]!++] = key;

    const visitedOfTerm = new Uint32Array(nt);

    const step = Math.max(k, 64);
    // batches bound as `?` parameters up to FILTER_PARAMS ids (SQLite allows 32,766 variables; k ≤ 1,000 from the API)
    const filter = this.filterFor(req, step <= FILTER_PARAMS ? step : undefined);
    const best: Hit[] = [];
    /**
     * How candidates are checked against the filter (step 3): `check` each batch as it comes; `probe` the same, until
     * the top k first fills — if every candidate checked by then passed, `trusted`: from there candidates are scored
     * and kept without a check (θ is the k-th best score among `best` and them, in `heap`), and those that can still be
     * in the top k are checked together at the end. A filter that rejected one of the first candidates (another
     * tenant's chunks, ACL-restricted ones, a metadata filter) gives `check` at once, as before.
     */
    let mode = (trust ? 'probe' : 'check') as 'check' | 'probe' | 'trusted';
    /** Trusted mode: the k best scores so far (a binary min-heap: heap[0] is θ), and the unchecked candidates. */
    const heap = new Float64Array(k);
    const trustedId: number[] = [];
    const trustedScore: number[] = [];
    const theta = (): number => (mode === 'trusted' ? heap[0]! : best.length >= k ? best[k - 1]!.score : -Infinity);
    /** Replaces the heap's smallest score with `x` (> heap[0]) and restores the order. */
    const heapReplaceTop = (x: number): void => {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= k) break;
        const c = l + 1 < k && heap[l + 1]! < heap[l]! ? l + 1 : l;
        if (heap[c]! >= x) break;
        heap[i] = heap[c]!;
        i = c;
      }
      heap[i] = x;
    };
    const trustOffer = (id: number, score: number): void => {
      if (score < heap[0]!) return;
      trustedId.push(id);
      trustedScore.push(score);
      if (score > heap[0]!) heapReplaceTop(score);
      // drop the candidates θ has passed, now and then, so the list stays near k long
      if (trustedId.length >= 4 * k + 64) {
        const th = heap[0]!;
        let w = 0;
        for (let j = 0; j < trustedId.length; j++) {
          if (trustedScore[j]! < th) continue;
          trustedId[w] = trustedId[j]!;
          trustedScore[w++] = trustedScore[j]!;
        }
        trustedId.length = w;
        trustedScore.length = w;
      }
    };
    const offer = (h: Hit): void => {
      if (best.length >= k && byScoreThenChunkId(h, best[k - 1]!) >= 0) return;
      let lo = 0;
      let hi = best.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (byScoreThenChunkId(best[mid]!, h) < 0) lo = mid + 1;
        else hi = mid;
      }
      best.splice(lo, 0, h);
      if (best.length > k) best.pop();
    };

    const acc = new Float64Array(subSize);
    const seen = new Uint8Array(subSize);
    const touched: number[] = [];
    const inSub: number[] = [];
    const suffix = new Float64Array(nt + 1);
    // 3. Candidates (chunks that could enter the top k) wait in `pending` and are checked against the filter in SQL in
    //    batches, best first, only as far as they can still enter: one statement per sub-block would cost more than
    //    the sub-block's scoring. Until the top k is full every sub-block's candidates are checked at once (θ must rise).
    const pendingId: number[] = [];
    const pendingScore: number[] = [];
    const flush = (): void => {
      if (pendingId.length === 0) return;
      const order = pendingId.map((_, j) => j).sort((x, y) => pendingScore[y]! - pendingScore[x]! || pendingId[x]! - pendingId[y]!);
      const scoreOf = new Map<number, number>();
      for (let s = 0; s < order.length; s += step) {
        if (pendingScore[order[s]!]! < theta()) break;
        const batch = order.slice(s, s + step).map((j) => pendingId[j]!);
        for (const j of order.slice(s, s + step)) scoreOf.set(pendingId[j]!, pendingScore[j]!);
        stats.filterChecks += batch.length;
        const rows = filter(batch);
        if (rows.length < batch.length) mode = 'check'; // the filter rejects candidates here: no trust
        for (const r of rows) offer({ id: r.id, chunk_id: r.chunk_id, document_id: r.document_id, version: r.version, score: scoreOf.get(r.id)! });
      }
      pendingId.length = 0;
      pendingScore.length = 0;
      if (mode === 'probe' && best.length >= k) {
        mode = 'trusted';
        stats.filterTrusted = true;
        // best is sorted best first: reversed, it is a valid min-heap (each parent ≤ its children)
        for (let j = 0; j < k; j++) heap[j] = best[k - 1 - j]!.score;
      }
    };
    visiting: for (let b = 0; b < NB; b++) {
      if (start[b] === start[b + 1]) continue;
      // 4. Every sub-block from this bucket on has a bound below its upper edge: once that cannot reach the k-th
      //    score, nothing can.
      const cap = (maxBound * (NB - b)) / NB;
      if (cap * BOUND_SLACK < theta()) {
        flush(); // the waiting candidates may raise θ
        if (cap * BOUND_SLACK < theta()) break visiting;
      }
      for (let n = start[b]!; n < start[b + 1]!; n++) {
        const key = keys[n]!;
        if (bound[key]! * BOUND_SLACK < theta()) continue; // this one cannot; others in its bucket may
        stats.blocksVisited++;
        const block = Math.floor(key / subCount);
        const first = (key - block * subCount) << S; // the sub-block's first offset in its block
        // 2. Score the sub-block's chunks exactly, rarest (highest-weight) term first. Before each further term: a chunk
        //    none of the terms read so far matched scores at most `rest` (the bounds of the terms still to read), so once
        //    rest < θ only chunks already touched can enter, and once none of those can either (score so far + rest < θ)
        //    the remaining — frequent, long — posting blobs are never fetched. Every chunk that can still enter gets all
        //    its terms, so its score is exact.
        const th = theta();
        inSub.length = 0;
        const slots = key * nt;
        for (let i = 0; i < nt; i++) if (termUb[slots + i]! > 0) inSub.push(i);
        suffix[inSub.length] = 0;
        for (let p = inSub.length - 1; p >= 0; p--) suffix[p] = suffix[p + 1]! + termUb[slots + inSub[p]!]!;
        touched.length = 0;
        for (let p = 0; p < inSub.length; p++) {
          const rest = suffix[p]!;
          const closed = rest * BOUND_SLACK < th; // no chunk outside `touched` can reach θ any more
          if (closed && !touched.some((off) => (acc[off]! + rest) * BOUND_SLACK >= th)) break;
          const i = inSub[p]!;
          const t = terms[i]!;
          visitedOfTerm[i]!++;
          // The sub-block's postings: ws[from, to), offsets in [first, first + subSize).
          const at = block * (subCount + 1);
          const q = first >>> S;
          let pk = packed[i];
          let ws: Uint32Array | undefined;
          let from = 0;
          let to = 0;
          // Whether `pk` holds the block, read from the sub-block's own end offset (the line read next anyway) instead
          // of the block's last one (holds()): the term has a posting in this sub-block (its bound is > 0), so a held
          // block's end offset here is above 0 and an absent one's is 0 — one cache miss fewer per (sub-block, term).
          if (!(pk !== undefined && block < pk.nb && pk.starts[at + q + 1]! !== 0)) {
            ws = words[i * nBlocks + block];
            if (ws === undefined) {
              if (lookups[i]! === -Infinity) continue; // every block of the term was read: it has no posting here
              // Point lookups for a term's first few blocks; past that, its remaining blocks in one range scan (a point
              // lookup costs ≈ 13 µs, a row of the scan ≈ 2.2 µs at 1M chunks; at 1M the frequent terms' scans are ≈ 30 %
              // of a search, and 87 % of the blocks they read are needed by a visited sub-block). Either way the blocks
              // go into the term's PackedBlocks, kept in the term cache: a later search takes them from there (the
              // looked-up ones too — left out until 2026-12-06, their lookups were 14 % of a keyword worker's time in
              // the first round of retrieve load at 965k chunks).
              if (++lookups[i]! <= POINT_LOOKUPS) {
                const data = this.stmt.getBlock.get(t.id, block);
                stats.blocksFetched++;
                if (!data) continue;
                const got = decodeWords(data);
                const dir = dirs[i]!;
                pk ??= newPacked(dir.length > 0 ? dir[dir.length - 1]![0] + 1 : block + 1, got.length, subCount, false);
                addBlock(pk, block, got, mask, S, subCount);
              } else if (pk !== undefined && pk.have > 0) {
                // Every block below pk.have is held (a pack refreshed after another connection's commit): only the
                // blocks from there are read, those this search looked up since kept.
                const tail = this.stmt.termBlocksFrom.all(t.id, pk.have).filter(([b]) => !holds(pk, b, subCount));
                reserve(pk, tail.reduce((n, [, data]) => n + (data.byteLength >>> 2), 0));
                for (const [b, data] of tail) addBlock(pk, b, decodeWords(data), mask, S, subCount);
                stats.blocksFetched += tail.length;
                pk.complete = true;
                pk.have = pk.nb;
                lookups[i] = -Infinity;
                this.journal(t.id, 1);
              } else {
                const scanned = this.scanBlocks(t.id);
                stats.blocksFetched += scanned.length;
                pk = packBlocks(scanned, mask, S, subCount);
                lookups[i] = -Infinity; // every large block of the term is in `packed` now (the small ones in `words`)
                this.journal(t.id, 1);
              }
              packed[i] = pk;
              this.termCache.putBlocks(t.id, pk, pk.bytes);
              if (!holds(pk, block, subCount)) continue;
            }
          }
          if (ws === undefined) {
            ws = pk!.data;
            from = pk!.starts[at + q]!;
            to = pk!.starts[at + q + 1]!;
          } else {
            // a small block (its postings came with the directory): binary search (offset-sorted)
            let lo = 0;
            let hi = ws.length >>> 1;
            while (lo < hi) {
              const mid = (lo + hi) >>> 1;
              if ((ws[2 * mid]! & mask) < first) lo = mid + 1;
              else hi = mid;
            }
            from = 2 * lo;
            to = ws.length;
          }
          for (let j = from; j < to; j += 2) {
            const w0 = ws[j]!;
            const tf = w0 >>> bits;
            const off = (w0 & mask) - first;
            if (off >= subSize) break;
            stats.postingsRead++;
            if (seen[off] === 0) {
              if (closed) continue; // cannot reach θ: not worth a score
              seen[off] = 1;
              acc[off] = 0;
              touched.push(off);
            }
            acc[off] = acc[off]! + (t.w * tf) / (tf + K0 + K1 * ws[j + 1]!);
          }
        }
        const base = block * B + first;
        for (const off of touched) {
          seen[off] = 0;
          if (acc[off]! >= th) {
            if (mode === 'trusted') trustOffer(base + off, acc[off]!);
            else {
              pendingId.push(base + off);
              pendingScore.push(acc[off]!);
            }
          }
        }
        if (mode !== 'trusted' && (best.length < k || pendingId.length >= step)) flush();
      }
    }
    flush();
    if (mode === 'trusted') {
      // Every chunk not kept scores below θ (its sub-block's bound was below θ then, or its score was): the top k among
      // the passing chunks is in `best` plus the kept candidates at or above θ, exactly when at least k of those pass.
      const th = heap[0]!;
      for (let j = 0; j < trustedId.length; j++) {
        if (trustedScore[j]! < th) continue;
        pendingId.push(trustedId[j]!);
        pendingScore.push(trustedScore[j]!);
      }
      mode = 'check';
      flush();
      if (!(best.length >= k && best[k - 1]!.score >= th)) {
        // one failed where it mattered (a chunk outside the kept ones might belong in the top k): again, checking each
        stats.filterRetried = true;
        stats.postingsTotal = 0; // counted again (the other counts add up the work of both)
        return this.blockMax(terms, avgdl, k, req, stats, false);
      }
    }
    stats.fullScans = visitedOfTerm.filter((v, i) => v === subsOfTerm[i]).length;
    return best.map((h) => ({ chunk_id: h.chunk_id, document_id: h.document_id, version: h.version, score: h.score }));
  }

  /**
   * A cached term another connection changed from block `from` on (validateTermCache): its directory is kept below
   * that block's `dirs` row and re-read from there, and its large blocks from `from` on are dropped from the pack
   * (read again when a search needs them: point lookups, or a range scan from `from` — PackedBlocks.have). Cost: the
   * changed tail — for an append, the term's last `dirs` row and block — instead of the whole term. A pack whose
   * dropped words pass half its words is dropped whole (read again whole when needed), so the cache stays bounded.
   */
  private refreshTerm(
    termId: number,
    hit: { dir: DirEntry[]; blocks?: PackedBlocks },
    from: number,
  ): { dir: DirEntry[]; blocks?: PackedBlocks } | undefined {
    this.termRefreshes++;
    const seg = from >>> DIR_SEG_BITS;
    const segStart = seg << DIR_SEG_BITS;
    const old = hit.dir;
    let lo = 0;
    let hi = old.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (old[mid]![0] < segStart) lo = mid + 1;
      else hi = mid;
    }
    const dir = old.slice(0, lo);
    for (const row of this.stmt.directoryFrom.all(termId, seg)) readDirSegment(row, dir);
    let bytes = 0;
    for (const e of dir) bytes += 4 * (3 + e[3].length) + DIR_ENTRY_OVERHEAD;
    let pk = hit.blocks;
    if (pk) {
      const subCount = this.blockSize >>> this.subShift;
      const w = subCount + 1;
      for (let b = from; b < pk.nb; b++) {
        const end = pk.starts[b * w + subCount]!;
        if (end === 0) continue;
        pk.dead += end - pk.starts[b * w]!;
        pk.starts.fill(0, b * w, (b + 1) * w);
      }
      pk.complete = false;
      pk.have = Math.min(pk.have, from);
      const nb = dir.length ? dir[dir.length - 1]![0] + 1 : 0;
      if (pk.dead * 2 > pk.used) pk = undefined;
      else if (nb > pk.nb) {
        const starts = new Uint32Array(nb * w);
        starts.set(pk.starts);
        pk.bytes += starts.byteLength - pk.starts.byteLength;
        pk.starts = starts;
        pk.nb = nb;
      }
    }
    this.termCache.replaceDir(termId, dir, bytes, pk === undefined);
    if (pk) this.termCache.putBlocks(termId, pk, pk.bytes);
    return this.termCache.peek(termId);
  }

  /**
   * A scope that rejects a few chunks in a hundred often passes the first k and then fails the end check, so the
   * search runs twice (≈ 1.2× the cost of checking each candidate, estimated for 1 % rejected). When more than
   * TRUST_MAX_RETRIED of the last TRUST_WINDOW trusted searches ran again, this connection checks each candidate for
   * TRUST_PAUSE searches, then tries trusting again. Results are exact either way; only the cost changes.
   */
  private noteTrust(stats: KeywordSearchStats): void {
    const t = this.trusted;
    if (t.paused > 0) {
      t.paused--;
      return;
    }
    if (!stats.filterTrusted) return;
    t.runs++;
    if (stats.filterRetried) t.retried++;
    if (t.runs < TRUST_WINDOW) return;
    if (t.retried > TRUST_MAX_RETRIED * t.runs) t.paused = TRUST_PAUSE;
    t.runs = 0;
    t.retried = 0;
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

  /**
   * `chunks_visibility`: (id, tenant, document_id, version, chunk_id, acl) — what a search's filter check and its hits
   * read of a candidate (filterFor). Additive: no format change, older code ignores it. A file from before it gets it
   * on open, built in one pass over the chunk rows (logged when that takes a while).
   */
  private ensureVisibilityIndex(): void {
    const started = Date.now();
    // IF NOT EXISTS: a query worker may open the same file at the same moment (both connections run this).
    this.db.exec(`CREATE INDEX IF NOT EXISTS ${VISIBILITY_INDEX} ON chunks (id, tenant, document_id, version, chunk_id, acl)`);
    const ms = Date.now() - started;
    if (ms > 1000) this.log.info(`built the search-filter index of ${this.file} in ${ms} ms`);
  }

  private setBlockBits(bits: number): void {
    this.bits = bits;
    this.blockSize = 2 ** bits;
    this.maxTf = 2 ** (32 - bits) - 1;
    this.subShift = Math.max(0, bits - SUB_BLOCK_BITS);
    // a small block's postings (2 words each) take no more room than a large one's bounds (1 word per sub-block)
    this.smallBlock = Math.max(SMALL_BLOCK_MIN, (1 << (bits - this.subShift)) >>> 1);
  }

  /**
   * Brings the file to format 4: a new file gets `blocks`, `dirs` and the requested block size; a format-1/2 file (one
   * row per posting in `postings`, per-term bounds in format 2) gets its postings packed into blocks and each child's
   * term ids, in one transaction, then loses `postings` and the per-term bound columns; a format-3 file (or the one just
   * packed) gets `dirs` built from `blocks` (buildDirs).
   */
  private migrate(wantBits: number): void {
    const stored = this.db.prepare<[], { value: string }>("SELECT value FROM meta WHERE key = 'block_bits'").get();
    const tables = new Set((this.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((r) => r.name));
    const bits = stored ? Number(stored.value) : wantBits;
    if (!Number.isInteger(bits) || bits < 0 || bits > 16) throw new Error(`${this.file}: meta.block_bits is ${stored?.value}, not an integer in 0..16`);
    this.setBlockBits(bits);
    const version = Number(this.db.pragma('user_version', { simple: true }));
    if (version > FORMAT_VERSION) {
      throw new Error(`${this.file} is keyword index format ${version}, written by a newer release; this release reads formats 1–${FORMAT_VERSION} (run the newer release, or move the file away and rebuild it with \`rag reindex\`)`);
    }
    const oldPostings = tables.has('postings');
    if (tables.has('blocks') && !oldPostings) {
      if (!tables.has('dirs')) this.buildDirs();
      this.db.pragma(`user_version = ${FORMAT_VERSION}`);
      return;
    }
    const started = Date.now();
    this.db.transaction(() => {
      this.db.exec(blocksTable('blocks'));
      this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('block_bits', ?)").run(String(bits));
      if (!oldPostings) return;
      const chunkCols = new Set((this.db.prepare("SELECT name FROM pragma_table_info('chunks')").all() as Array<{ name: string }>).map((r) => r.name));
      if (!chunkCols.has('terms')) this.db.exec('ALTER TABLE chunks ADD COLUMN terms BLOB');
      const termCols = new Set((this.db.prepare("SELECT name FROM pragma_table_info('terms')").all() as Array<{ name: string }>).map((r) => r.name));
      for (const c of ['max_tf', 'min_len']) if (termCols.has(c)) this.db.exec(`ALTER TABLE terms DROP COLUMN ${c}`);
      this.packPostings();
      this.db.exec('DROP TABLE postings');
    }).immediate();
    if (oldPostings) this.log.info(`migrated ${this.file} to keyword index format 3 (packed posting blocks) in ${Date.now() - started} ms`);
    this.buildDirs();
    this.db.pragma(`user_version = ${FORMAT_VERSION}`);
  }

  /**
   * Format 3 → 4: every term's block directory packed into `dirs` rows, one pass over `blocks` in (term, block) order
   * (pages of MIGRATION_PAGE rows, keyset), in one transaction (IMMEDIATE: a query worker opening the same file at the
   * same moment waits, then finds the table). ≈ 10M block rows at 1M chunks: a one-time rewrite, logged.
   */
  private buildDirs(): void {
    const started = Date.now();
    let rows = 0;
    this.db.transaction(() => {
      if (this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'dirs'").get()) return; // another connection built it
      this.db.exec(dirsTable('dirs'));
      // Every block's bounds are recomputed from its postings: format 3 kept 16 sub-blocks per block, format 4 has 64.
      const page = this.db
        .prepare<[number, number, number], [number, number, Buffer]>(
          'SELECT term_id, block, data FROM blocks WHERE (term_id, block) > (?, ?) ORDER BY term_id, block LIMIT ?',
        )
        .raw(true);
      const put = this.db.prepare('INSERT INTO dirs (term_id, seg, data) VALUES (?, ?, ?)');
      let term = -1;
      let seg = -1;
      let entries: DirEntry[] = [];
      const flush = (): void => {
        if (entries.length) put.run(term, seg, writeDirSegment(entries));
        entries = [];
      };
      let after: [number, number] = [-1, -1];
      let logged = Date.now();
      for (;;) {
        const page_ = page.all(after[0], after[1], MIGRATION_PAGE);
        if (page_.length === 0) break;
        if (rows === 0) {
          // One pass over every block, synchronous (the file cannot be searched half-migrated): ≈ 40 s per million chunks.
          this.log.info(`migrating ${this.file} to keyword index format ${FORMAT_VERSION} (packed block directories): one pass over every posting block, ≈ 40 s per million chunks`);
        } else if (Date.now() - logged > 10_000) {
          this.log.info(`migrating ${this.file}: ${rows} posting blocks so far, ${Math.round((Date.now() - started) / 1000)} s`);
          logged = Date.now();
        }
        for (const [t, block, data] of page_) {
          if (t !== term || block >>> DIR_SEG_BITS !== seg) {
            flush();
            term = t;
            seg = block >>> DIR_SEG_BITS;
          }
          const words = decodeWords(data);
          entries.push(dirEntry(block, this.boundsOf(words).maxTf, this.subBoundsOf(words), words));
        }
        rows += page_.length;
        const last = page_[page_.length - 1]!;
        after = [last[0], last[1]];
      }
      flush();
      // A small block lives in its directory entry alone from now on; a large one's bounds are in `dirs` only.
      this.db.prepare('DELETE FROM blocks WHERE n <= ?').run(this.smallBlock);
      this.db.exec('UPDATE blocks SET sub = NULL WHERE sub IS NOT NULL');
      this.db.prepare('INSERT INTO term_changes (terms) VALUES (NULL)').run(); // every directory is new: caches clear
    }).immediate();
    const ms = Date.now() - started;
    if (rows > 0) this.log.info(`migrated ${this.file} to keyword index format ${FORMAT_VERSION} (packed block directories, ${rows} blocks) in ${ms} ms`);
  }

  /** Format 1/2 → 3: one pass over `postings` in (term, chunk) order, pages of MIGRATION_PAGE rows (keyset). */
  private packPostings(): void {
    const page = this.db
      .prepare<[number, number, number], [number, number, number, number]>(
        'SELECT term_id, chunk, tf, len FROM postings WHERE (term_id, chunk) > (?, ?) ORDER BY term_id, chunk LIMIT ?',
      )
      .raw(true);
    const put = this.db.prepare('INSERT INTO blocks (term_id, block, max_tf, min_len, n, sub, data) VALUES (?, ?, ?, ?, ?, ?, ?)');
    const termsOf = new Map<number, number[]>();
    let cur: { term: number; block: number; words: number[] } | null = null;
    const flush = (): void => {
      if (!cur) return;
      const words = Uint32Array.from(cur.words);
      const { maxTf, minLen } = this.boundsOf(words);
      put.run(cur.term, cur.block, maxTf, minLen, words.length >>> 1, this.subBoundsOf(words), encodeWords(words));
      cur = null;
    };
    let after: [number, number] = [-1, -1];
    for (;;) {
      const rows = page.all(after[0], after[1], MIGRATION_PAGE);
      if (rows.length === 0) break;
      for (const [term, chunk, tf, len] of rows) {
        const block = Math.floor(chunk / this.blockSize);
        if (!cur || cur.term !== term || cur.block !== block) {
          flush();
          cur = { term, block, words: [] };
        }
        cur.words.push(Math.min(tf, this.maxTf) * this.blockSize + (chunk - block * this.blockSize), len);
        let list = termsOf.get(chunk);
        if (!list) termsOf.set(chunk, (list = []));
        list.push(term);
      }
      const last = rows[rows.length - 1]!;
      after = [last[0], last[1]];
    }
    flush();
    const setTerms = this.db.prepare('UPDATE chunks SET terms = ? WHERE id = ?');
    for (const [chunk, ids] of termsOf) setTerms.run(encodeTermIds(ids), chunk);
  }

  private boundsOf(words: Uint32Array): { maxTf: number; minLen: number } {
    let maxTf = 0;
    let minLen = Infinity;
    for (let j = 0; j < words.length; j += 2) {
      const tf = Math.floor(words[j]! / this.blockSize);
      if (tf > maxTf) maxTf = tf;
      if (words[j + 1]! < minLen) minLen = words[j + 1]!;
    }
    return { maxTf, minLen: Number.isFinite(minLen) ? minLen : 0 };
  }

  /** Writes a block (or deletes it when empty), its bounds recomputed exactly from its postings. */
  /**
   * Rewrites one (term, block): `change` gets its postings (undefined when it has none) and returns the new ones (empty:
   * the block goes; undefined: no change). The bounds are recomputed exactly. A large block is its `blocks` row plus its
   * entry (bounds) in its `dirs` row; a small one (≤ smallBlock postings) is its `dirs` entry alone. One read and one
   * rewrite of a `dirs` row of at most 2^DIR_SEG_BITS entries (≤ 608 B), plus the block row when large: constant,
   * whatever the size of the index.
   */
  private updateBlock(termId: number, block: number, change: (old: Uint32Array | undefined) => Uint32Array | undefined): void {
    this.termCache.evict(termId); // before the write: a failed (rolled back) write leaves at most a cache miss
    const from = this.changed.get(termId);
    if (from === undefined || block < from) this.changed.set(termId, block);
    const seg = block >>> DIR_SEG_BITS;
    const segData = this.stmt.getDirSeg.get(termId, seg);
    const entries: DirEntry[] = [];
    if (segData) readDirSegment(segData, entries);
    let at = entries.findIndex((e) => e[0] >= block);
    if (at < 0) at = entries.length;
    const prev = entries[at]?.[0] === block ? entries[at] : undefined;
    let old: Uint32Array | undefined;
    if (prev?.[2]) old = prev[3];
    else if (prev) {
      const data = this.stmt.getBlock.get(termId, block);
      if (!data) throw new Error(`${this.file}: term ${termId} block ${block} is in the directory but not in \`blocks\` (damaged file: move it away and rebuild it with \`rag reindex\`)`);
      old = decodeWords(data);
    }
    const words = change(old);
    if (words === undefined) return;
    const wasLarge = prev !== undefined && !prev[2];
    if (words.length === 0) {
      if (!prev) return;
      if (wasLarge) this.stmt.deleteBlock.run(termId, block);
      entries.splice(at, 1);
    } else {
      const { maxTf, minLen } = this.boundsOf(words);
      const sub = this.subBoundsOf(words);
      if (sub) this.stmt.putBlock.run(termId, block, maxTf, minLen, words.length >>> 1, null, encodeWords(words)); // bounds: in `dirs`
      else if (wasLarge) this.stmt.deleteBlock.run(termId, block);
      entries.splice(at, prev ? 1 : 0, dirEntry(block, maxTf, sub, words));
    }
    if (entries.length) this.stmt.putDirSeg.run(termId, seg, writeDirSegment(entries));
    else this.stmt.deleteDirSeg.run(termId, seg);
  }

  /**
   * A block's bounds per sub-block (2^subShift chunk ids each): 16-bit (max tf, min length) pairs, saturated (a
   * saturated tf means "use the block's max_tf"; a saturated length is below the true one, so still a bound). NULL for
   * a block of at most smallBlock postings: its postings are no larger than the bounds, and the directory holds them
   * instead.
   */
  private subBoundsOf(words: Uint32Array): Buffer | null {
    if (words.length >>> 1 <= this.smallBlock) return null;
    const B = this.blockSize;
    const S = this.subShift;
    const sub = new Uint16Array(2 * (B >>> S));
    for (let q = 1; q < sub.length; q += 2) sub[q] = HALF_MAX;
    for (let j = 0; j < words.length; j += 2) {
      const tf = Math.min(Math.floor(words[j]! / B), HALF_MAX);
      const q = (words[j]! % B) >>> S;
      if (tf > sub[2 * q]!) sub[2 * q] = tf;
      const len = Math.min(words[j + 1]!, HALF_MAX);
      if (len < sub[2 * q + 1]!) sub[2 * q + 1] = len;
    }
    return Buffer.from(sub.buffer, sub.byteOffset, sub.byteLength);
  }

  /**
   * One run's writes, in its transaction. The same end state as writing the chunks one by one (a later occurrence of a
   * chunk id wins, an unchanged body is a no-op), with each term's row updated once per run and each (term, block)
   * rewritten once per run: the run's chunks get consecutive ids, so a run touches one or two blocks per term, and a
   * block is rewritten at most ⌈2^bits / run⌉ + 1 times while it fills — the write cost per posting is constant,
   * whatever the size of the index.
   */
  private upsertRun(chunks: Chunk[]): void {
    const last = new Map<string, Chunk>();
    for (const chunk of chunks) {
      if (!chunk.chunk_id) throw new Error('EmbeddedBm25KeywordIndex: chunk without chunk_id');
      last.delete(chunk.chunk_id); // keep the order of the last occurrences
      last.set(chunk.chunk_id, chunk);
    }
    const rows: { chunk: Chunk; body: string; tokens: string[] }[] = [];
    const replaced: ChunkRow[] = [];
    for (const chunk of last.values()) {
      const body = JSON.stringify(chunk);
      const old = this.stmt.byChunkId.get(chunk.chunk_id);
      if (old) {
        if (old.body === body) continue; // idempotent replay
        replaced.push(old);
      }
      rows.push({ chunk, body, tokens: chunk.kind === 'child' ? tokenize(indexedText(chunk)) : [] });
    }
    if (replaced.length) this.removeRows(replaced);
    if (rows.length === 0) return;
    // Per chunk its term frequencies; per term of the run its df increment.
    const tfs: Map<string, number>[] = [];
    const df = new Map<string, number>();
    for (const r of rows) {
      const tf = new Map<string, number>();
      if (r.chunk.kind === 'child') for (const t of r.tokens) tf.set(t, (tf.get(t) ?? 0) + 1);
      tfs.push(tf);
      for (const term of tf.keys()) df.set(term, (df.get(term) ?? 0) + 1);
    }
    const termId = new Map<string, number>();
    for (const [term, n] of df) termId.set(term, this.stmt.upsertTerm.get(term, n)!.id);
    /** (term id, block) → new posting words, in chunk-id order. */
    const added = new Map<number, Map<number, number[]>>();
    let docs = 0;
    let totalLen = 0;
    rows.forEach((r, i) => {
      const { chunk, tokens } = r;
      const child = chunk.kind === 'child';
      const ids = child ? [...tfs[i]!.keys()].map((t) => termId.get(t)!) : [];
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
        child ? encodeTermIds(ids) : null,
      );
      if (!child) return;
      const id = Number(info.lastInsertRowid);
      const block = Math.floor(id / this.blockSize);
      const off = id - block * this.blockSize;
      let j = 0;
      for (const f of tfs[i]!.values()) {
        const term = ids[j++]!;
        let byBlock = added.get(term);
        if (!byBlock) added.set(term, (byBlock = new Map()));
        let words = byBlock.get(block);
        if (!words) byBlock.set(block, (words = []));
        words.push(Math.min(f, this.maxTf) * this.blockSize + off, tokens.length);
      }
      docs++;
      totalLen += tokens.length;
    });
    for (const [term, byBlock] of added) {
      for (const [block, fresh] of byBlock) {
        this.updateBlock(term, block, (old) => (old ? this.merge(old, fresh) : Uint32Array.from(fresh)));
      }
    }
    if (docs) this.stmt.addStats.run(docs, totalLen);
  }

  /**
   * Every posting of term `termId` as (chunk id, tf, chunk length): small blocks' from its directory, large ones' from
   * `blocks`, in no set order (the exhaustive evaluation and a recluster read whole posting lists this way).
   */
  private forEachPosting(termId: number, fn: (id: number, tf: number, len: number) => void): void {
    const B = this.blockSize;
    const visit = (block: number, words: Uint32Array): void => {
      const base = block * B;
      for (let j = 0; j < words.length; j += 2) {
        const tf = Math.floor(words[j]! / B);
        fn(base + (words[j]! - tf * B), tf, words[j + 1]!);
      }
    };
    for (const seg of this.stmt.directory.all(termId)) for (const e of readDirSegment(seg, [])) if (e[2]) visit(e[0], e[3]);
    for (const [block, data] of this.stmt.termBlocks.all(termId)) visit(block, decodeWords(data));
  }

  private dropReclusterTables(): void {
    for (const t of ['chunks_r', 'blocks_r', 'dirs_r']) this.db.exec(`DROP TABLE IF EXISTS ${t}`);
  }

  /** recluster's steps: keys and order, the new tables written beside the old ones (committed in steps), the swap. */
  private reclusterInSteps(started: number): ReclusterResult {
    const dataVersion = (): number => this.db.pragma('data_version', { simple: true }) as number;
    // Runs step(i) for i = 0 … count − 1 in transactions of about RECLUSTER_STEP_BYTES each (a step returns what it wrote).
    const inSteps = (count: number, step: (i: number) => number): void => {
      let i = 0;
      while (i < count) {
        this.write(() => {
          let bytes = 0;
          while (i < count && bytes < RECLUSTER_STEP_BYTES) bytes += step(i++);
        });
      }
    };
    const prep = this.write(() => this.reclusterPlan(started, dataVersion()));
    const { order, parents, rows, newOf, maxId, progress } = prep;
    // 3. The chunk rows under their new ids (appended in id order).
    const getRow = this.db.prepare<[number], unknown[]>(`SELECT ${CHUNK_COLUMNS} FROM chunks WHERE id = ?`).raw(true);
    const putRow = this.db.prepare(`INSERT INTO chunks_r (id, ${CHUNK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    inSteps(rows, (i) => {
      const id = i + 1;
      const row = getRow.get(i < order.length ? order[i]! : parents[i - order.length]!)!;
      putRow.run(id, ...row);
      if ((id & 0xffff) === 0) progress(`chunk rows, ${id} of ${rows}`);
      let bytes = 64;
      for (const v of row) bytes += typeof v === 'string' ? v.length : v instanceof Uint8Array ? v.byteLength : 8;
      return bytes;
    });
    // 4. Every term's postings under the new ids, as blocks and directories (appended in (term, block) order).
    const B = this.blockSize;
    const putBlock = this.db.prepare('INSERT INTO blocks_r (term_id, block, max_tf, min_len, n, sub, data) VALUES (?, ?, ?, ?, ?, NULL, ?)');
    const putDir = this.db.prepare('INSERT INTO dirs_r (term_id, seg, data) VALUES (?, ?, ?)');
    const termIds = this.db.prepare<[], number>('SELECT id FROM terms ORDER BY id').pluck(true).all();
    let keysOf = new Float64Array(1024);
    let postings = 0;
    inSteps(termIds.length, (t) => {
      const termId = termIds[t]!;
      // Sorted by new id as one float64 key per posting: new id · 2^21 + its index in these lists (exact while ids are
      // below 2^31 and the term has fewer than 2^21 postings; otherwise an index array is sorted, slower).
      const ids: number[] = [];
      const tfs: number[] = [];
      const lens: number[] = [];
      this.forEachPosting(termId, (id, tf, len) => {
        ids.push(newOf[id]!);
        tfs.push(tf);
        lens.push(len);
      });
      const n = ids.length;
      let idx: ArrayLike<number>;
      if (n < 2 ** 21 && maxId < 2 ** 31) {
        if (keysOf.length < n) keysOf = new Float64Array(Math.max(n, keysOf.length * 2));
        const k = keysOf.subarray(0, n);
        for (let j = 0; j < n; j++) k[j] = ids[j]! * 2 ** 21 + j;
        k.sort();
        idx = Uint32Array.from(k, (x) => x % 2 ** 21);
      } else {
        idx = Array.from({ length: n }, (_, j) => j).sort((a, b) => ids[a]! - ids[b]!);
      }
      let seg = -1;
      let entries: DirEntry[] = [];
      const flushSeg = (): void => {
        if (entries.length) putDir.run(termId, seg, writeDirSegment(entries));
        entries = [];
      };
      for (let p = 0; p < n; ) {
        const block = Math.floor(ids[idx[p]!]! / B);
        let q = p;
        while (q < n && Math.floor(ids[idx[q]!]! / B) === block) q++;
        const words = new Uint32Array(2 * (q - p));
        for (let j = p; j < q; j++) {
          const at = idx[j]!;
          words[2 * (j - p)] = tfs[at]! * B + (ids[at]! - block * B);
          words[2 * (j - p) + 1] = lens[at]!;
        }
        const { maxTf, minLen } = this.boundsOf(words);
        const sub = this.subBoundsOf(words);
        if (sub) putBlock.run(termId, block, maxTf, minLen, q - p, encodeWords(words));
        if (block >>> DIR_SEG_BITS !== seg) {
          flushSeg();
          seg = block >>> DIR_SEG_BITS;
        }
        entries.push(dirEntry(block, maxTf, sub, words));
        p = q;
      }
      flushSeg();
      postings += n;
      progress(`posting blocks, ${t + 1} of ${termIds.length} terms`);
      return 64 + 8 * n; // a posting is two words, a block or directory row a few dozen bytes more
    });
    // 5. The swap, unless another connection wrote meanwhile (the new tables would miss its change). Dropping a table
    // drops its indexes; renaming one renames its UNIQUE constraint's index with it.
    this.write(() => {
      if (dataVersion() !== prep.dataVersion) {
        throw new Error(`recluster of ${this.file} given up: another connection wrote to the file while it ran (this connection must be its only writer); the old tables are kept`);
      }
      this.db.exec('DROP TABLE chunks; DROP TABLE blocks; DROP TABLE dirs');
      this.db.exec('ALTER TABLE chunks_r RENAME TO chunks; ALTER TABLE blocks_r RENAME TO blocks; ALTER TABLE dirs_r RENAME TO dirs');
      this.db.exec(CHUNKS_DOCUMENT_INDEX);
      this.ensureVisibilityIndex();
      this.db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('clustered_upto', ?)").run(String(rows));
      this.stmt.logChange.run(null); // every posting moved: other connections clear their term caches
    });
    return { children: order.length, parents: parents.length, keyed: prep.keyed, terms: termIds.length, postings, ms: 0 };
  }

  /** recluster's first step (in its transaction): the topic keys, the new order, and the new tables, created empty. */
  private reclusterPlan(started: number, dataVersion: number) {
    const st = this.stmt.stats.get()!;
    const maxId = this.stmt.maxId.get()!;
    this.log.info(`reclustering ${this.file}: renumbering ${maxId} chunk ids by topic (keyword writes wait; ≈ 8,000 chunks/s)`);
    let logged = Date.now();
    const progress = (what: string): void => {
      if (Date.now() - logged < 10_000) return;
      logged = Date.now();
      this.log.info(`reclustering ${this.file}: ${what}, ${Math.round((Date.now() - started) / 1000)} s`);
    };
    // 1. Each child's two strongest mid-frequency terms.
    const keys = new ClusterKeys(maxId + 1);
    const avgdl = st.docs > 0 && st.total_len > 0 ? st.total_len / st.docs : 1;
    const { K0, K1 } = this.norms(avgdl);
    const maxDf = Math.max(CLUSTER_MIN_DF, Math.floor(st.docs * CLUSTER_MAX_DF_SHARE));
    const eligible = this.db.prepare<[number, number], [number, number]>('SELECT id, df FROM terms WHERE df BETWEEN ? AND ? ORDER BY id').raw(true).all(CLUSTER_MIN_DF, maxDf);
    eligible.forEach(([termId, df], i) => {
      const idf = Math.log(1 + (st.docs - df + 0.5) / (df + 0.5));
      this.forEachPosting(termId, (id, tf, len) => keys.add(id, termId, (idf * tf) / (tf + K0 + K1 * len)));
      progress(`topic keys, ${i + 1} of ${eligible.length} terms`);
    });
    // 2. The new order: children clustered, then parents; newOf[old id] = new id.
    const children: number[] = [];
    const parents: number[] = [];
    for (const [id, kind] of this.db.prepare<[], [number, string]>('SELECT id, kind FROM chunks ORDER BY id').raw(true).iterate()) (kind === 'child' ? children : parents).push(id);
    const rows = children.length + parents.length;
    const order = keys.order(Uint32Array.from(children));
    let keyed = 0;
    const newOf = new Uint32Array(maxId + 1);
    order.forEach((old, i) => (newOf[old] = i + 1));
    parents.forEach((old, i) => (newOf[old] = order.length + i + 1));
    for (const old of order) if (keys.hasKey(old)) keyed++;
    this.dropReclusterTables();
    this.db.exec(chunksTable('chunks_r'));
    this.db.exec(blocksTable('blocks_r'));
    this.db.exec(dirsTable('dirs_r'));
    return { order, parents, rows, newOf, maxId, keyed, progress, dataVersion };
  }

  /** A block's postings plus new ones (both sorted by offset; a new posting replaces an old one at its offset). */
  private merge(old: Uint32Array, fresh: number[]): Uint32Array {
    const B = this.blockSize;
    const offOf = (w0: number): number => w0 % B;
    if (old.length === 0 || offOf(old[old.length - 2]!) < offOf(fresh[0]!)) {
      // The usual case: new chunks get ids above every existing one.
      const out = new Uint32Array(old.length + fresh.length);
      out.set(old);
      out.set(fresh, old.length);
      return out;
    }
    const out: number[] = [];
    let i = 0;
    let j = 0;
    while (i < old.length || j < fresh.length) {
      const a = i < old.length ? offOf(old[i]!) : Infinity;
      const b = j < fresh.length ? offOf(fresh[j]!) : Infinity;
      if (b <= a) {
        out.push(fresh[j]!, fresh[j + 1]!);
        j += 2;
        if (a === b) i += 2;
      } else {
        out.push(old[i]!, old[i + 1]!);
        i += 2;
      }
    }
    return Uint32Array.from(out);
  }

  /** Removes chunks: their postings (each (term, block) rewritten once), df, dead terms, stats, rows. */
  private removeRows(rows: ChunkRow[]): void {
    const B = this.blockSize;
    /** term id → block → offsets to remove. */
    const gone = new Map<number, Map<number, Set<number>>>();
    const dfDrop = new Map<number, number>();
    let docs = 0;
    let totalLen = 0;
    for (const row of rows) {
      if (row.kind === 'child' && row.terms) {
        const block = Math.floor(row.id / B);
        const off = row.id - block * B;
        for (const term of decodeWords(row.terms)) {
          let byBlock = gone.get(term);
          if (!byBlock) gone.set(term, (byBlock = new Map()));
          let offs = byBlock.get(block);
          if (!offs) byBlock.set(block, (offs = new Set()));
          offs.add(off);
          dfDrop.set(term, (dfDrop.get(term) ?? 0) + 1);
        }
        docs++;
        totalLen += row.len;
      }
      this.stmt.deleteChunk.run(row.id);
    }
    for (const [term, byBlock] of gone) {
      for (const [block, offs] of byBlock) {
        this.updateBlock(term, block, (words) => {
          if (!words) return undefined;
          const keep: number[] = [];
          for (let j = 0; j < words.length; j += 2) if (!offs.has(words[j]! % B)) keep.push(words[j]!, words[j + 1]!);
          return Uint32Array.from(keep);
        });
      }
    }
    for (const [term, n] of dfDrop) this.stmt.addDf.run(-n, term);
    if (dfDrop.size) this.stmt.deleteDeadTerms.run(JSON.stringify([...dfDrop.keys()]));
    if (docs) this.stmt.addStats.run(-docs, -totalLen);
  }
}
