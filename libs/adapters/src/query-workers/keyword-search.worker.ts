/**
 * The keyword-search worker (a piscina task module): holds its own read connection to the embedded BM25 index
 * (`keyword.db` in workerData.dir; WAL, so it reads while the main thread writes, and each search is one read
 * transaction that sees every write committed before it began) and runs the MaxScore evaluation there, off the
 * event loop. It never writes: upserts and deletes stay with the main thread's EmbeddedBm25KeywordIndex.
 */
import { threadId, workerData } from 'node:worker_threads';
import type { KeywordHit, KeywordSearchRequest } from '@rag/ports';
import { EmbeddedBm25KeywordIndex } from '../embedded-bm25';
import type { TermCacheCounts } from '../embedded-bm25/term-cache-metrics';

export interface KeywordWorkerData {
  dir: string;
  k1?: number;
  b?: number;
  termCacheBytes?: number;
  /** EmbeddedBm25KeywordIndexOptions.followChangesMs (the platform: FOLLOW_CHANGES_MS). */
  followChangesMs?: number;
}

/** A warm-up task (OffloadedKeywordIndex.warmUp): the terms to load, as EmbeddedBm25KeywordIndex.warmTerms takes them. */
export interface KeywordWarmTask {
  warm: number[];
  /** Date.now() time to stop at. */
  deadline: number;
  /**
   * One warm-up task per worker: each task counts itself in here (shared memory) and waits until `parties` have started
   * (at most BARRIER_WAIT_MS) before it warms, so no worker can take a second task while another has none.
   */
  barrier?: Int32Array;
  parties?: number;
}

/** Longest a warm-up task waits for the other workers' tasks to start (a worker that never comes up). */
const BARRIER_WAIT_MS = 10_000;

/** Counts this task in and waits until `parties` tasks have (or BARRIER_WAIT_MS, or the deadline, passed). */
function meet(barrier: Int32Array, parties: number, deadline: number): void {
  Atomics.add(barrier, 0, 1);
  Atomics.notify(barrier, 0);
  const until = Math.min(deadline, Date.now() + BARRIER_WAIT_MS);
  for (;;) {
    const seen = Atomics.load(barrier, 0);
    const left = until - Date.now();
    if (seen >= parties || left <= 0) return;
    Atomics.wait(barrier, 0, seen, left);
  }
}

/** What a warm-up task did in this worker. */
export interface KeywordWarmResult {
  warmed: { terms: number; bytes: number };
  cache: TermCacheCounts;
  thread: number;
}

/** A search's hits, with this worker's term-cache counts so far (the host publishes them as metrics). */
export interface KeywordWorkerResult {
  hits: KeywordHit[];
  cache: TermCacheCounts;
  /** This worker thread's id: the source of `cache`. */
  thread: number;
  /** The terms this search loaded into the worker's term cache (EmbeddedBm25KeywordIndex.takeLoadedTerms), when any. */
  loaded?: number[];
}

let index: EmbeddedBm25KeywordIndex | undefined;

function problemOf(req: unknown): string | null {
  if (typeof req !== 'object' || req === null) return 'a search request must be an object';
  const r = req as Record<string, unknown>;
  if (typeof r['query'] !== 'string') return 'query must be a string';
  if (typeof r['k'] !== 'number' || !Number.isFinite(r['k'])) return 'k must be a finite number';
  const scope = r['scope'] as Record<string, unknown> | null | undefined;
  if (typeof scope !== 'object' || scope === null || typeof scope['tenant'] !== 'string') return 'scope.tenant must be a string';
  return null;
}

function open(): EmbeddedBm25KeywordIndex {
  const data = workerData as KeywordWorkerData;
  index ??= new EmbeddedBm25KeywordIndex({
    dir: data.dir,
    ...(data.k1 !== undefined ? { k1: data.k1 } : {}),
    ...(data.b !== undefined ? { b: data.b } : {}),
    ...(data.termCacheBytes !== undefined ? { termCacheBytes: data.termCacheBytes } : {}),
    ...(data.followChangesMs !== undefined ? { followChangesMs: data.followChangesMs } : {}),
    journalLoads: true,
  });
  return index;
}

function counts(i: EmbeddedBm25KeywordIndex): TermCacheCounts {
  const c = i.termCacheStats();
  return { hits: c.hits, misses: c.misses, refreshes: c.refreshes, bytes: c.bytes };
}

function isWarmTask(req: unknown): req is KeywordWarmTask {
  return typeof req === 'object' && req !== null && 'warm' in req;
}

export default async function keywordSearchTask(req: unknown): Promise<KeywordWorkerResult | KeywordWarmResult> {
  if (isWarmTask(req)) {
    // validated here too: this is the edge of the worker thread
    if (!Array.isArray(req.warm) || req.warm.length % 2 !== 0 || typeof req.deadline !== 'number') {
      throw new TypeError('invalid keyword search request: a warm-up task needs warm (term id, full pairs) and a deadline');
    }
    if (req.barrier instanceof Int32Array && typeof req.parties === 'number') meet(req.barrier, req.parties, req.deadline);
    const i = open();
    const warmed = i.warmTerms(req.warm, req.deadline);
    return { warmed, cache: counts(i), thread: threadId };
  }
  const problem = problemOf(req);
  if (problem) throw new TypeError(`invalid keyword search request: ${problem}`);
  const i = open();
  const hits = await i.search(req as KeywordSearchRequest);
  const loaded = i.takeLoadedTerms();
  return { hits, cache: counts(i), thread: threadId, ...(loaded.length ? { loaded } : {}) };
}
