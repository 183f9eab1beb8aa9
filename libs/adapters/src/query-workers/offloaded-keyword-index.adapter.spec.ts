import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Chunk } from '@rag/contracts';
import { metrics } from '@rag/platform';
import { EmbeddedBm25KeywordIndex } from '../embedded-bm25';
import { keywordChunk, keywordCorpus, keywordRequests, keywordScope } from '../embedded-bm25/keyword-cases.fixture';
import { OffloadedKeywordIndex, type OffloadedKeywordIndexOptions } from './offloaded-keyword-index.adapter';

const scope = keywordScope;
const chunk = (doc: string, ordinal: number, text: string, extra: Partial<Chunk> = {}): Chunk => keywordChunk(doc, ordinal, text, extra);
const corpus = keywordCorpus;
const requests = keywordRequests;

/** rag_keyword_searches_total by thread, as /metrics would show it. */
async function threadCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.keywordSearches.get()).values) out[String(v.labels.thread)] = v.value;
  return out;
}
const grown = (before: Record<string, number>, after: Record<string, number>) =>
  Object.fromEntries(Object.entries(after).filter(([k, v]) => v !== (before[k] ?? 0)).map(([k, v]) => [k, v - (before[k] ?? 0)]));

const dirs: string[] = [];
const opened: OffloadedKeywordIndex[] = [];
afterAll(async () => {
  for (const x of opened) await x.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
async function setup(opts: Partial<OffloadedKeywordIndexOptions> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-kw-workers-'));
  dirs.push(dir);
  const inner = new EmbeddedBm25KeywordIndex({ dir });
  await inner.upsert(corpus);
  const index = new OffloadedKeywordIndex(inner, { workers: 1, timeoutMs: 30_000, index: { dir }, ...opts });
  opened.push(index);
  return { dir, inner, index };
}
const faulty = join(__dirname, 'testing/faulty-keyword.worker.ts');

describe('OffloadedKeywordIndex (embedded BM25 searches on a worker thread)', () => {
  it('finds exactly what the main-thread index finds (scopes, ACL, filters, Chinese), from the worker', async () => {
    const { inner, index } = await setup();
    for (const req of requests) expect(await index.search(req)).toEqual(await inner.search(req));
    expect(index.stats()).toEqual({ inWorker: requests.length, small: 0, inline: 0, retriedInProcess: 0, timedOut: 0 });
    expect((await index.search({ query: 'wing', k: 10, scope })).length).toBeGreaterThan(0);
  }, 60_000);

  it('minSearchMs: searches stay on this thread while recent ones were cheaper than it, and go to a worker once they are not (same hits either way)', async () => {
    const cheap = await setup({ minSearchMs: 1e9 });
    for (const req of requests) expect(await cheap.index.search(req)).toEqual(await cheap.inner.search(req));
    expect(cheap.index.stats()).toEqual({ inWorker: 0, small: requests.length, inline: 0, retriedInProcess: 0, timedOut: 0 });
    // a threshold every real search exceeds: the average (1/32 per search, samples capped at 4× the threshold) passes
    // it after 10 searches, which run here; every later one runs on the worker
    const costly = await setup({ minSearchMs: 1e-6 });
    const many = [...requests, ...requests, ...requests];
    for (const req of many) expect(await costly.index.search(req)).toEqual(await costly.inner.search(req));
    expect(costly.index.stats()).toEqual({ inWorker: many.length - 10, small: 10, inline: 0, retriedInProcess: 0, timedOut: 0 });
  }, 60_000);

  it('publishes the workers\' term caches (rag_keyword_term_cache_lookups_total / _bytes, connection="worker")', async () => {
    const lookups = async () => {
      const out = { hit: 0, miss: 0 };
      for (const v of (await metrics.keywordTermCacheLookups.get()).values) if (v.labels.connection === 'worker') out[v.labels.result as 'hit' | 'miss'] = v.value;
      return out;
    };
    const { index } = await setup();
    const before = await lookups();
    for (const req of requests) await index.search(req);
    for (const req of requests) await index.search(req); // the same terms again: the worker's cache serves them
    const after = await lookups();
    expect(after.miss).toBeGreaterThan(before.miss);
    expect(after.hit).toBeGreaterThan(before.hit);
    const bytes = (await metrics.keywordTermCacheBytes.get()).values.find((v) => v.labels.connection === 'worker');
    expect(bytes?.value).toBeGreaterThan(0);
  }, 60_000);

  it('sees every write that returned before the search (upsert, replace, delete), and delegates the rest', async () => {
    const { inner, index } = await setup();
    expect(await index.search({ query: 'turbine blade', k: 5, scope })).toEqual([]);
    await index.upsert([chunk('turbine', 0, 'Turbine blade cooling by film injection.')]);
    expect((await index.search({ query: 'turbine blade', k: 5, scope })).map((h) => h.chunk_id)).toEqual(['turbine#v1#0']);
    expect(await index.deleteDocument('turbine')).toBe(1);
    expect(await index.search({ query: 'turbine blade', k: 5, scope })).toEqual([]);
    expect(await index.count()).toBe(await inner.count());
    expect((await index.getChunks(['wing#v1#0'])).map((c) => c.text)).toEqual([corpus[0]!.text]);
    for (const req of requests) expect(await index.search(req)).toEqual(await inner.search(req));
  }, 60_000);

  it('a worker that dies mid-search: the search runs on the main thread (same hits), and the pool goes on', async () => {
    const { inner, index } = await setup({ workerFile: faulty });
    const before = await threadCounts();
    const req = { query: 'CRASH wing load', k: 10, scope };
    const hits = await index.search(req);
    expect(hits).toEqual(await inner.search(req));
    expect(hits.length).toBeGreaterThan(0);
    expect(index.stats()).toMatchObject({ retriedInProcess: 1 });
    expect(await index.search(requests[0]!)).toEqual(await inner.search(requests[0]!));
    expect(index.stats()).toEqual({ inWorker: 1, small: 0, inline: 0, retriedInProcess: 1, timedOut: 0 });
    expect(grown(before, await threadCounts())).toEqual({ main_retry: 1, worker: 1 });
  }, 60_000);

  it('a search stuck past the time limit fails with the setting named (never hangs); searches meanwhile run on this thread, not queued behind it', async () => {
    const { inner, index } = await setup({ workerFile: faulty, timeoutMs: 8000 });
    const before = await threadCounts();
    const started = new Promise<void>((resolve) => index.onWorkerMessage((m) => (m as { hangStarted?: boolean }).hangStarted && resolve()));
    const events: string[] = [];
    const stuck = index.search({ query: 'HANG wing', k: 3, scope }).catch((e: Error) => {
      events.push('stuck search failed');
      return e;
    });
    await started;
    // the only worker is busy: this search does not wait for it
    expect(await index.search(requests[0]!)).toEqual(await inner.search(requests[0]!));
    events.push('other search answered');
    expect(String(await stuck)).toMatch(/ran past 8000 ms \(RAG_QUERY_WORKER_TIMEOUT_MS\)/);
    expect(events).toEqual(['other search answered', 'stuck search failed']);
    // the replacement worker takes the next one
    expect(await index.search(requests[2]!)).toEqual(await inner.search(requests[2]!));
    expect(index.stats()).toEqual({ inWorker: 1, small: 0, inline: 1, retriedInProcess: 0, timedOut: 1 });
    // the same counts on /metrics: where each search ran (the dashboards tell a busy worker from a cheap index)
    expect(grown(before, await threadCounts())).toEqual({ worker: 1, main_busy: 1, timed_out: 1 });
  }, 60_000);

  it('queuePerWorker 1: a search finding the worker busy waits for it (one per worker); the next one runs on this thread', async () => {
    expect(() => new OffloadedKeywordIndex({} as never, { workers: 1, timeoutMs: 1000, index: { dir: '/unused' }, queuePerWorker: -1 })).toThrow(/queuePerWorker/);
    const { inner, index } = await setup({ workerFile: faulty, timeoutMs: 6000, queuePerWorker: 1 });
    const started = new Promise<void>((resolve) => index.onWorkerMessage((m) => (m as { hangStarted?: boolean }).hangStarted && resolve()));
    const events: string[] = [];
    const stuck = index.search({ query: 'HANG wing', k: 3, scope }).catch((e: Error) => (events.push('stuck search failed'), e));
    await started;
    const queued = index.search(requests[2]!).then((hits) => (events.push('queued search answered'), hits));
    // the worker is busy and one search waits for it: this one runs here at once
    expect(await index.search(requests[0]!)).toEqual(await inner.search(requests[0]!));
    events.push('third search answered');
    expect(String(await stuck)).toMatch(/ran past 6000 ms/);
    expect(await queued).toEqual(await inner.search(requests[2]!));
    expect(events).toEqual(['third search answered', 'stuck search failed', 'queued search answered']);
    expect(index.stats()).toEqual({ inWorker: 1, small: 0, inline: 1, retriedInProcess: 0, timedOut: 1 });
  }, 60_000);

  it('keeps the terms its workers loaded across a restart (warmFile) and warms every worker with them before serving: no term-cache miss after', async () => {
    const workerMisses = async () => {
      let n = 0;
      for (const v of (await metrics.keywordTermCacheLookups.get()).values) if (v.labels.connection === 'worker' && v.labels.result === 'miss') n += v.value;
      return n;
    };
    const { dir, inner } = await setup();
    const warmFile = join(dir, 'keyword-warm.json');
    const first = new OffloadedKeywordIndex(inner, { workers: 2, timeoutMs: 30_000, index: { dir }, warmFile, queuePerWorker: 8 });
    opened.push(first);
    expect(await first.warmUp(10_000)).toBeNull(); // nothing saved yet
    const expected = await Promise.all(requests.map((req) => first.search(req))); // both workers
    expect(existsSync(warmFile)).toBe(false); // written every WARM_SAVE_MS, and at close
    await first.close();
    const saved = JSON.parse(readFileSync(warmFile, 'utf8')) as { format: number; terms: number[]; recent_search_ms: number };
    expect(saved.format).toBe(1);
    expect(saved.terms.length).toBeGreaterThan(0);
    expect(saved.terms.length % 2).toBe(0);

    // The restart: a new process on the same folder warms both workers, then answers the same searches from their caches.
    const again = new OffloadedKeywordIndex(new EmbeddedBm25KeywordIndex({ dir }), { workers: 2, timeoutMs: 30_000, index: { dir }, warmFile, queuePerWorker: 8 });
    opened.push(again);
    const report = await again.warmUp(10_000);
    expect(report).toMatchObject({ terms: saved.terms.length / 2, cutShort: false });
    expect(report!.loaded).toHaveLength(2);
    expect(new Set(report!.threads).size).toBe(2); // one task per worker (they meet at a barrier: none takes two)
    expect(report!.loaded.every((n) => n === saved.terms.length / 2)).toBe(true);
    const misses = await workerMisses();
    for (let round = 0; round < 3; round++) expect(await Promise.all(requests.map((req) => again.search(req)))).toEqual(expected);
    expect(await workerMisses()).toBe(misses);
    expect(again.stats().inWorker).toBe(requests.length * 3);
  }, 60_000);

  it('warm-up: one task per worker even when one worker comes up later than the other (they meet at a barrier)', async () => {
    const { dir, inner } = await setup();
    const warmFile = join(dir, 'keyword-warm.json');
    const first = new OffloadedKeywordIndex(inner, { workers: 1, timeoutMs: 30_000, index: { dir }, warmFile });
    opened.push(first);
    for (const req of requests) await first.search(req);
    await first.close();
    const terms = (JSON.parse(readFileSync(warmFile, 'utf8')) as { terms: number[] }).terms.length / 2;
    // one of the two workers takes 4 s to load, and still warms with a task of its own: the tasks meet at a barrier, so
    // the worker ready first cannot take both (on this machine piscina did not show that race without the barrier
    // either — the first task took longer than the late worker's start — so this checks the outcome, not the race)
    const slow = join(__dirname, 'testing/slow-start-keyword.worker.ts');
    const again = new OffloadedKeywordIndex(new EmbeddedBm25KeywordIndex({ dir }), { workers: 2, timeoutMs: 30_000, index: { dir }, warmFile, workerFile: slow });
    opened.push(again);
    const report = await again.warmUp(20_000);
    expect(new Set(report!.threads).size).toBe(2);
    expect(report!.loaded).toEqual([terms, terms]);
  }, 60_000);

  it('warm-up: restores the recent searches\' average (searches go to the warm workers at once), ignores a damaged file, and is off at 0 ms', async () => {
    const { dir, inner } = await setup();
    const warmFile = join(dir, 'keyword-warm.json');
    // a costly index before the restart: its average was above minSearchMs
    writeFileSync(warmFile, JSON.stringify({ format: 1, recent_search_ms: 40, terms: [1, 0, 2, 1] }));
    const costly = new OffloadedKeywordIndex(inner, { workers: 1, timeoutMs: 30_000, index: { dir }, warmFile, minSearchMs: 10 });
    opened.push(costly);
    expect(await costly.warmUp(0)).toBeNull();
    expect(await costly.search(requests[0]!)).toEqual(await inner.search(requests[0]!));
    expect(costly.stats()).toMatchObject({ inWorker: 0, small: 1 }); // not warmed: starts on this thread
    const warmed = new OffloadedKeywordIndex(inner, { workers: 1, timeoutMs: 30_000, index: { dir }, warmFile, minSearchMs: 10 });
    opened.push(warmed);
    expect(await warmed.warmUp(10_000)).toMatchObject({ terms: 2 });
    expect(await warmed.search(requests[0]!)).toEqual(await inner.search(requests[0]!));
    expect(warmed.stats()).toMatchObject({ inWorker: 1, small: 0 });
    // damaged: ignored (logged), searches unaffected, and the file is written afresh at close
    for (const bad of ['{not json', JSON.stringify({ format: 1, terms: [1] }), JSON.stringify({ format: 9, terms: [] })]) {
      writeFileSync(warmFile, bad);
      const x = new OffloadedKeywordIndex(new EmbeddedBm25KeywordIndex({ dir }), { workers: 1, timeoutMs: 30_000, index: { dir }, warmFile });
      opened.push(x);
      expect(await x.warmUp(10_000)).toBeNull();
      expect(await x.search(requests[0]!)).toEqual(await inner.search(requests[0]!));
      await x.close();
      expect(JSON.parse(readFileSync(warmFile, 'utf8')).format).toBe(1);
    }
  }, 60_000);

  it('closes the pool and the inner index; a search after close is refused', async () => {
    const { index } = await setup();
    await index.search(requests[0]!);
    await index.close();
    await expect(index.search(requests[0]!)).rejects.toThrow(/closed/);
    await expect(index.count()).rejects.toThrow();
    expect(() => new OffloadedKeywordIndex(index, { workers: 0, timeoutMs: 1000, index: { dir: '/x' } })).toThrow(/at least 1 worker/);
  }, 60_000);
});
