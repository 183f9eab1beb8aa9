import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { Piscina } from 'piscina';
import { isAbort, workerEntry } from '../worker-parser/worker-support';
import type { Chunk } from '@rag/contracts';
import { Logger, metrics } from '@rag/platform';
import type { KeywordHit, KeywordIndex, KeywordSearchRequest } from '@rag/ports';
import { TermCacheMetrics } from '../embedded-bm25/term-cache-metrics';
import type { KeywordWarmResult, KeywordWarmTask, KeywordWorkerData, KeywordWorkerResult } from './keyword-search.worker';

export interface OffloadedKeywordIndexOptions {
  /** Worker threads that run searches (RAG_QUERY_WORKERS, ≥ 1). */
  workers: number;
  /** Time limit of one search from when a worker takes it (RAG_QUERY_WORKER_TIMEOUT_MS); past it the thread is terminated. */
  timeoutMs: number;
  /** What each worker opens: the data folder of the embedded index (and its BM25 parameters). */
  index: KeywordWorkerData;
  /** The worker module (`.ts` source or built `.js`); default: keyword-search.worker of this folder. Tests pass their own. */
  workerFile?: string;
  /**
   * Searches go to a worker only while recent searches took longer than this on average (RAG_QUERY_WORKERS_MIN_MS;
   * default 0: always). A search on a small index costs less than handing it over and competing for the other core
   * (see {@link OffloadedKeywordIndex}); on a large one it is the request's main cost.
   */
  minSearchMs?: number;
  /**
   * Searches that may wait for a busy worker, per worker (RAG_QUERY_WORKERS_QUEUE; default 0: a search finding every
   * worker busy runs on this thread at once). With 1, a worker that finishes takes the next search without waiting for
   * this thread to hand it over, and a search waits for at most the one ahead of it.
   */
  queuePerWorker?: number;
  /**
   * Where the hot terms are kept across restarts (the factory: `keyword-warm.json` in the data folder; unset: not
   * kept). The terms the workers' searches loaded into their term caches, and the recent searches' average time,
   * written every WARM_SAVE_MS while they change and at close; warmUp reads it.
   */
  warmFile?: string;
}

/** What warmUp did. */
export interface KeywordWarmUpReport {
  /** Terms in the warm file. */
  terms: number;
  /** Per worker thread that ran a warm-up task: the terms it loaded, and the thread's id. */
  loaded: number[];
  threads: number[];
  /** Whether a worker stopped at the deadline before loading every term it could. */
  cutShort: boolean;
  ms: number;
}

export interface OffloadedKeywordStats {
  inWorker: number;
  /** Searches run on this thread because recent searches were cheaper than `minSearchMs`. */
  small: number;
  /** Searches run on this thread because every worker was busy (no queue behind a worker). */
  inline: number;
  /** Searches whose worker failed (crashed, exited, could not open the index) and that ran on this thread instead. */
  retriedInProcess: number;
  timedOut: number;
}

/**
 * The embedded keyword index with its searches on worker threads (issue 13 item 3). Profiled under /v1/query load
 * (6k chunks, 10 connections, hashing embedder), BM25's MaxScore over SQLite was ≈ 50 % of the event loop's busy
 * time and the generator's text work ≈ 3 % (its memo already serves repeated sources), so this is the query work
 * that gains from a second core. Each worker holds a read connection of its own to the same `keyword.db` (WAL:
 * readers never block the writer; each search is one read transaction, so it sees every upsert/delete that returned
 * before it began — read-your-writes for a caller); writes, getChunks and counts stay on `inner`, this thread's index.
 * - a worker that dies (or cannot open the file) fails its search; the search is run again on `inner` (same result);
 * - a search past `timeoutMs` terminates its thread and throws (the retriever then answers `degraded: keyword`,
 *   as for any keyword store failure) — not re-run here, where it would block the event loop;
 * - no queue: when every worker is busy the search runs on this thread (`inline`), as it did before. Measured with a
 *   queue instead (bench load, 10 connections): each search waited for the ~9 ahead of it on the one worker, keyword
 *   P50 rose from 2.9 ms to 29.5 ms and P99 from 9 to 318 ms for ≤ 1.2× throughput; running the overflow here keeps
 *   both threads busy without a convoy; `queuePerWorker` (RAG_QUERY_WORKERS_QUEUE) lets a bounded number wait instead;
 * - the pool starts on the first search (a process that only indexes never starts threads) and keeps its workers.
 */
/** How often the hot terms are written while they change (and at close). */
export const WARM_SAVE_MS = 60_000;
/** Most hot terms kept (the least recently loaded go first): far more than a term cache holds at 1M chunks (≈ 1,100–2,000). */
const HOT_TERMS_MAX = 1 << 16;
const WARM_FILE_FORMAT = 1;

/** The `thread` label of rag_keyword_searches_total for each count of {@link OffloadedKeywordStats}. */
const THREAD_LABEL: Record<keyof OffloadedKeywordStats, string> = {
  inWorker: 'worker',
  small: 'main_small',
  inline: 'main_busy',
  retriedInProcess: 'main_retry',
  timedOut: 'timed_out',
};

export class OffloadedKeywordIndex implements KeywordIndex {
  private readonly log = new Logger('keyword-workers');
  private pool: Piscina<KeywordSearchRequest | KeywordWarmTask, KeywordWorkerResult | KeywordWarmResult> | undefined;
  /** The workers' term caches, published as rag_keyword_term_cache_* {connection="worker"}. */
  private readonly cacheMetrics: TermCacheMetrics;
  private readonly counts: OffloadedKeywordStats = { inWorker: 0, small: 0, inline: 0, retriedInProcess: 0, timedOut: 0 };
  private busy = 0;
  /**
   * Moving average of recent searches' time in ms, wherever they ran: weight 1/32 for the newest, each sample capped
   * at 4 × minSearchMs, so one slow outlier (a cold file, the pool starting) cannot move a small index onto the
   * workers, while a sustained cost above the threshold does within a few dozen searches.
   */
  private recentMs = 0;
  private closed = false;
  /** Searches that may wait for a worker (workers × queuePerWorker). */
  private readonly queueLimit: number;
  /**
   * Searches waiting for a worker, oldest first. Ours, not the pool's queue: a worker slot passes straight to the
   * next waiter, whose time limit starts only then (the pool's timer would also count the wait).
   */
  private readonly waiting: (() => void)[] = [];
  /** Terms the workers loaded into their term caches: term id → 1 when a search read all its large blocks; oldest first. */
  private readonly hot = new Map<number, number>();
  private hotChanged = false;
  private saveTimer: NodeJS.Timeout | undefined;
  private saving: Promise<void> | undefined;

  constructor(
    private readonly inner: KeywordIndex,
    private readonly options: OffloadedKeywordIndexOptions,
  ) {
    if (!Number.isInteger(options.workers) || options.workers < 1) throw new RangeError(`OffloadedKeywordIndex needs at least 1 worker (got ${options.workers})`);
    const queue = options.queuePerWorker ?? 0;
    if (!Number.isInteger(queue) || queue < 0) throw new RangeError(`OffloadedKeywordIndex queuePerWorker must be an integer ≥ 0 (got ${queue})`);
    this.queueLimit = options.workers * queue;
    this.cacheMetrics = new TermCacheMetrics('worker', options.workers);
    workerEntry(__dirname, 'keyword-search.worker', 'keyword search worker', options.workerFile); // fail at start-up, not at the first query, when the module is missing
    if (options.warmFile) {
      this.saveTimer = setInterval(() => void this.saveHot(), WARM_SAVE_MS);
      this.saveTimer.unref();
    }
  }

  /** Messages a worker posts (tests use them to see a search start); starts the pool. */
  onWorkerMessage(listener: (message: unknown) => void): void {
    this.poolOf().on('message', listener);
  }

  stats(): OffloadedKeywordStats {
    return { ...this.counts };
  }

  /** Counts where a search ran, here and in rag_keyword_searches_total{thread}. */
  private record(kind: keyof OffloadedKeywordStats): void {
    this.counts[kind]++;
    metrics.keywordSearches.inc({ thread: THREAD_LABEL[kind] });
  }

  private poolOf(): Piscina<KeywordSearchRequest | KeywordWarmTask, KeywordWorkerResult | KeywordWarmResult> {
    if (this.pool) return this.pool;
    const entry = workerEntry(__dirname, 'keyword-search.worker', 'keyword search worker', this.options.workerFile);
    this.pool = new Piscina<KeywordSearchRequest | KeywordWarmTask, KeywordWorkerResult | KeywordWarmResult>({
      filename: entry.filename,
      workerData: { ...this.options.index, ...(entry.tsEntry ? { tsEntry: entry.tsEntry } : {}) },
      minThreads: this.options.workers,
      maxThreads: this.options.workers,
      idleTimeout: Number.POSITIVE_INFINITY,
    });
    // a worker failing outside any task must not crash the process
    this.pool.on('error', () => undefined);
    return this.pool;
  }

  async search(req: KeywordSearchRequest): Promise<KeywordHit[]> {
    if (this.closed) throw new Error('keyword index is closed');
    // plain data only across the thread boundary (a request with functions or symbols would fail to clone)
    const task: KeywordSearchRequest = { query: req.query, k: req.k, scope: req.scope, ...(req.filters !== undefined ? { filters: req.filters } : {}) };
    const t0 = performance.now();
    const minMs = this.options.minSearchMs ?? 0;
    const timed = (hits: KeywordHit[]): KeywordHit[] => {
      this.recentMs += (Math.min(performance.now() - t0, 4 * minMs) - this.recentMs) / 32;
      return hits;
    };
    // on this thread: recent searches were cheap (`small`), or every worker is busy (`inline`)
    const full = this.busy >= this.options.workers;
    const here = this.recentMs < minMs ? 'small' : full && this.waiting.length >= this.queueLimit ? 'inline' : undefined;
    if (here) {
      this.record(here);
      return timed(await this.inner.search(req));
    }
    await this.acquire(full);
    try {
      if (this.closed) throw new Error('keyword index is closed');
      const out = (await this.poolOf().run(task, { signal: AbortSignal.timeout(this.options.timeoutMs) })) as KeywordWorkerResult;
      this.record('inWorker');
      this.cacheMetrics.report(String(out.thread), out.cache);
      if (out.loaded) this.noteHot(out.loaded);
      return timed(out.hits);
    } catch (err) {
      if (this.closed) throw new Error('keyword index was closed during a search', { cause: err });
      if (isAbort(err)) {
        this.record('timedOut');
        throw new Error(`keyword search ran past ${this.options.timeoutMs} ms (RAG_QUERY_WORKER_TIMEOUT_MS); its worker was stopped`, { cause: err });
      }
      if (err instanceof TypeError && err.message.startsWith('invalid keyword search request')) throw err;
      this.record('retriedInProcess');
      this.log.warn('keyword search worker failed; searching on the main thread', { error: String(err) });
      return this.inner.search(req);
    } finally {
      this.release();
    }
  }

  /** A worker slot: at once when one is free (`full` false), else after the search ahead hands its slot over. */
  private async acquire(full = this.busy >= this.options.workers): Promise<void> {
    if (full) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.busy++;
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy--;
  }

  /** Terms a worker's search loaded: the most recently loaded last, at most HOT_TERMS_MAX. */
  private noteHot(pairs: number[]): void {
    for (let i = 0; i + 1 < pairs.length; i += 2) {
      const id = pairs[i]!;
      const full = Math.max(this.hot.get(id) ?? 0, pairs[i + 1]!);
      this.hot.delete(id);
      this.hot.set(id, full);
    }
    for (const id of this.hot.keys()) {
      if (this.hot.size <= HOT_TERMS_MAX) break;
      this.hot.delete(id);
    }
    this.hotChanged = true;
  }

  private hotFile(): string {
    const terms: number[] = [];
    for (const [id, full] of this.hot) terms.push(id, full);
    // recent_search_ms: so that after a restart searches go to the (warm) workers at once instead of starting on the
    // main thread until the average passes minSearchMs again
    return JSON.stringify({ format: WARM_FILE_FORMAT, saved_at: new Date().toISOString(), recent_search_ms: this.recentMs, terms });
  }

  /** Writes the hot terms when they changed (a temporary file renamed over the old one: never half written). */
  private saveHot(): Promise<void> {
    const file = this.options.warmFile;
    if (!file || !this.hotChanged || this.saving) return this.saving ?? Promise.resolve();
    this.hotChanged = false;
    const tmp = `${file}.tmp`;
    this.saving = writeFile(tmp, this.hotFile())
      .then(() => rename(tmp, file))
      .catch((e: unknown) => {
        this.hotChanged = true;
        this.log.warn('could not write the keyword workers\' hot terms; retried later', { file, error: String(e) });
      })
      .finally(() => {
        this.saving = undefined;
      });
    return this.saving;
  }

  /** The saved hot terms and average, or null when there are none (a missing or unreadable file: logged, not thrown). */
  private readHot(): { terms: number[]; recentMs: number } | null {
    const file = this.options.warmFile;
    if (!file) return null;
    let raw: string;
    try {
      raw = readFileSync(file, 'utf8');
    } catch {
      return null; // never searched before (or the file was removed): nothing to warm
    }
    try {
      const v = JSON.parse(raw) as { format?: unknown; recent_search_ms?: unknown; terms?: unknown };
      const terms = v.terms;
      if (v.format !== WARM_FILE_FORMAT || !Array.isArray(terms) || terms.length % 2 !== 0 || !terms.every((x) => Number.isSafeInteger(x) && (x as number) >= 0)) {
        throw new Error(`not a format-${WARM_FILE_FORMAT} list of (term id, full) pairs`);
      }
      const ms = typeof v.recent_search_ms === 'number' && Number.isFinite(v.recent_search_ms) && v.recent_search_ms >= 0 ? v.recent_search_ms : 0;
      return { terms: terms as number[], recentMs: ms };
    } catch (e) {
      this.log.warn('ignoring the keyword workers\' hot-terms file (it is rewritten as searches run)', { file, error: String(e) });
      return null;
    }
  }

  /**
   * Warms every worker's term cache with the hot terms saved before the last stop (warmFile), for at most `maxMs`
   * (RAG_KEYWORD_WARMUP_MS): the retriever awaits it before the process serves, so a restart of a large index does not
   * answer its first minute of questions from cold caches — at 1M chunks each worker otherwise reads ≈ 1,100 terms at
   * ≈ 4 ms each inside the first searches (scripts/bench/README.md, keyword-churn), and the first searches ran on the
   * main thread, cold too, until the recent average passed minSearchMs again; the saved average is restored as well.
   * Like InnoDB's buffer-pool dump and load. One task per worker (they meet at a barrier before warming, so that no
   * worker takes two), each holding a worker slot (a search meanwhile waits or runs here, as when every worker is busy).
   * Null when there is nothing to warm.
   */
  async warmUp(maxMs: number): Promise<KeywordWarmUpReport | null> {
    if (this.closed || !(maxMs > 0)) return null;
    const saved = this.readHot();
    if (!saved) return null;
    this.recentMs = Math.max(this.recentMs, saved.recentMs);
    this.noteHot(saved.terms);
    this.hotChanged = false;
    if (saved.terms.length === 0) return null;
    const t0 = performance.now();
    const deadline = Date.now() + maxMs;
    const parties = this.options.workers;
    const task: KeywordWarmTask = { warm: saved.terms, deadline, barrier: new Int32Array(new SharedArrayBuffer(4)), parties };
    const loaded: number[] = [];
    const threads: number[] = [];
    let cutShort = false;
    await Promise.all(
      Array.from({ length: parties }, async () => {
        await this.acquire();
        try {
          if (this.closed) return;
          // the worker stops at the deadline by itself; the signal only guards against one that hangs
          const out = (await this.poolOf().run(task, { signal: AbortSignal.timeout(maxMs + this.options.timeoutMs) })) as KeywordWarmResult;
          this.cacheMetrics.report(String(out.thread), out.cache);
          loaded.push(out.warmed.terms);
          threads.push(out.thread);
          if (Date.now() >= deadline) cutShort = true;
        } catch (e) {
          if (!this.closed) this.log.warn('keyword worker warm-up failed; its term cache fills as searches run', { error: String(e) });
        } finally {
          this.release();
        }
      }),
    );
    const report = { terms: saved.terms.length >>> 1, loaded, threads, cutShort, ms: Math.round(performance.now() - t0) };
    this.log.info('keyword workers warmed their term caches from the terms searched before the restart', { terms: report.terms, loaded_per_worker: loaded, cut_short: cutShort, ms: report.ms });
    return report;
  }

  upsert(chunks: Chunk[]): Promise<void> {
    return this.inner.upsert(chunks);
  }

  getChunks(chunkIds: string[]): Promise<Chunk[]> {
    return this.inner.getChunks(chunkIds);
  }

  deleteDocument(documentId: string, keepVersion?: number): Promise<number> {
    return this.inner.deleteDocument(documentId, keepVersion);
  }

  count(documentId?: string): Promise<number> {
    return this.inner.count(documentId);
  }

  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      clearInterval(this.saveTimer);
      await this.saving;
      if (this.options.warmFile && this.hotChanged) {
        try {
          writeFileSync(`${this.options.warmFile}.tmp`, this.hotFile());
          renameSync(`${this.options.warmFile}.tmp`, this.options.warmFile);
        } catch (e) {
          this.log.warn('could not write the keyword workers\' hot terms', { file: this.options.warmFile, error: String(e) });
        }
      }
      for (const next of this.waiting.splice(0)) next(); // they find the index closed
      await this.pool?.destroy();
    }
    await this.inner.close();
  }
}
