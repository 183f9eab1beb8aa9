import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import type { Chunk } from '@rag/contracts';
import { metrics, setLogLevel } from '@rag/platform';
import { EmbeddedBm25KeywordIndex, type ReclusterPolicy } from '../embedded-bm25';
import { keywordChunk, keywordCorpus, keywordRequests, keywordScope } from '../embedded-bm25/keyword-cases.fixture';
import keywordWriteTask from './keyword-writer.worker';
import { OffloadedKeywordWrites } from './offloaded-keyword-writes.adapter';

setLogLevel('silent');

const scope = keywordScope;
const chunk = (doc: string, version: number, ordinal: number, text: string, extra: Partial<Chunk> = {}): Chunk => keywordChunk(doc, ordinal, text, extra, version);
const corpus = keywordCorpus;
const requests = keywordRequests;

/** rag_keyword_reclusters_total by outcome. */
async function reclusterCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.keywordReclusters.get()).values) out[String(v.labels.outcome)] = v.value;
  return out;
}

/** `n` one-chunk documents on 6 topics of 30 words each (so topic words are in ≥ 30 chunks and group them). */
const topical = (prefix: string, n: number): Chunk[] =>
  Array.from({ length: n }, (_, i) => chunk(`${prefix}${i}`, 1, 0, Array.from({ length: 8 }, (_, j) => `topic${i % 6}word${(i * 7 + j * 13) % 30}`).join(' ') + ' shared filler text'));

const clusteredUpto = (dir: string): string | undefined => {
  const db = new Database(join(dir, 'keyword.db'), { readonly: true });
  const row = db.prepare("SELECT value FROM meta WHERE key = 'clustered_upto'").get() as { value: string } | undefined;
  db.close();
  return row?.value;
};

/** rag_keyword_writes_total by thread and op, as /metrics would show it. */
async function writeCounts(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.keywordWrites.get()).values) out[`${String(v.labels.thread)}/${String(v.labels.op)}`] = v.value;
  return out;
}

const dirs: string[] = [];
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const x of opened) await x.close().catch(() => undefined);
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rag-kw-writer-'));
  dirs.push(dir);
  return dir;
}
function setup(workerFile?: string, recluster?: ReclusterPolicy) {
  const dir = tempDir();
  const inner = new EmbeddedBm25KeywordIndex({ dir });
  const index = new OffloadedKeywordWrites(inner, { index: { dir, ...(recluster ? { recluster } : {}) }, ...(workerFile ? { workerFile } : {}) });
  opened.push(index);
  return { dir, inner, index };
}
const faulty = join(__dirname, 'testing/faulty-keyword-writer.worker.ts');

describe('OffloadedKeywordWrites (embedded BM25 writes on a worker thread)', () => {
  it('checkpoints the writer\'s log once writes pause, so that recent pages do not stay in a large WAL', async () => {
    const dir = tempDir();
    const inner = new EmbeddedBm25KeywordIndex({ dir });
    const index = new OffloadedKeywordWrites(inner, { index: { dir, walCheckpointMiB: 64, idleCheckpointMs: 100 } });
    opened.push(index);
    const dbSize = () => statSync(join(dir, 'keyword.db')).size;
    const before = dbSize();
    await index.upsert(corpus);
    expect(dbSize()).toBe(before); // 64 MiB of log allowed: the write is in the WAL only
    const deadline = Date.now() + 10_000;
    while (dbSize() === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(dbSize()).toBeGreaterThan(before); // copied into keyword.db after 100 ms without writes
    while (statSync(join(dir, 'keyword.db-wal')).size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(statSync(join(dir, 'keyword.db-wal')).size).toBe(0); // and the log truncated (no search was reading it)
    for (const req of requests) expect(await index.search(req)).toEqual(await inner.search(req));
  });

  it('writes through the worker what a main-thread index writes: same searches, chunks and counts, read on this thread', async () => {
    const { index } = setup();
    const reference = new EmbeddedBm25KeywordIndex({ dir: tempDir() });
    opened.push(reference);
    await index.upsert(corpus);
    await reference.upsert(corpus);
    // read-your-writes: the upsert has committed on the worker's connection before it returned
    for (const req of requests) expect(await index.search(req)).toEqual(await reference.search(req));
    expect(await index.count()).toBe(await reference.count());
    const ids = corpus.map((c) => c.chunk_id);
    expect(await index.getChunks(ids)).toEqual(await reference.getChunks(ids));
    expect(index.stats()).toEqual({ worker: 1, main_retry: 0 });
  });

  it('runs writes in the order they were sent: a new version, then the delete of the older ones', async () => {
    const { index } = setup();
    const before = await writeCounts();
    const v1 = chunk('doc', 1, 0, 'Boundary layer transition on a flat plate.');
    const v2 = chunk('doc', 2, 0, 'Laminar flow separation behind a step.');
    // sent without waiting in between: the worker takes them one at a time, in this order
    const writes = [index.upsert([v1]), index.upsert([v2]), index.deleteDocument('doc', 2)];
    const [, , deleted] = await Promise.all(writes);
    expect(deleted).toBe(1);
    expect(await index.count('doc')).toBe(1);
    expect((await index.search({ query: 'laminar separation', k: 5, scope })).map((h) => h.chunk_id)).toEqual([v2.chunk_id]);
    expect(await index.search({ query: 'boundary layer transition', k: 5, scope })).toEqual([]);
    expect(await index.deleteDocument('doc')).toBe(1);
    expect(await index.count()).toBe(0);
    const after = await writeCounts();
    expect((after['worker/upsert'] ?? 0) - (before['worker/upsert'] ?? 0)).toBe(2);
    expect((after['worker/delete'] ?? 0) - (before['worker/delete'] ?? 0)).toBe(2);
  });

  it('gives the caller the write’s own error and keeps writing afterwards', async () => {
    const { index } = setup();
    const bad = { ...chunk('bad', 1, 0, 'no tenant'), tenant: undefined } as unknown as Chunk;
    const reference = new EmbeddedBm25KeywordIndex({ dir: tempDir() });
    opened.push(reference);
    const expected = await reference.upsert([bad]).then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    const got = await index.upsert([bad]).then(
      () => 'resolved',
      (e: Error) => e.message,
    );
    expect(expected).not.toBe('resolved');
    expect(got).toBe(expected);
    await index.upsert(corpus);
    expect(await index.count()).toBe(corpus.length);
    expect(index.stats().main_retry).toBe(0);
  });

  it('sends upserts queued behind one another as one task; when it fails, each goes again alone and only the faulty one fails', async () => {
    const { index } = setup();
    await index.upsert([corpus[0]!]); // the thread is up
    const sentBefore = index.tasksSent;
    const docs = Array.from({ length: 12 }, (_, i) => [chunk(`m${i}`, 1, 0, `merged write ${i} about supersonic inlets`)]);
    await Promise.all(docs.map((d) => index.upsert(d)));
    // the first goes at once, the other eleven wait behind it and go together
    expect(index.tasksSent - sentBefore).toBeLessThanOrEqual(3);
    expect(await index.count()).toBe(13);

    const bad = { ...chunk('bad', 1, 0, 'no tenant'), tenant: undefined } as unknown as Chunk;
    const good = [chunk('g1', 1, 0, 'good write one about wind tunnels'), chunk('g2', 1, 0, 'good write two about wind tunnels')];
    const blocker = index.upsert([chunk('blocker', 1, 0, 'sent first, so the next three queue behind it')]);
    const outcomes = await Promise.allSettled([index.upsert([good[0]!]), index.upsert([bad]), index.upsert([good[1]!])]);
    await blocker;
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await index.search({ query: 'wind tunnels', k: 5, scope })).map((h) => h.chunk_id).sort()).toEqual(good.map((c) => c.chunk_id).sort());
    expect(await index.count()).toBe(16);
  });

  it('rejects a malformed task at the worker’s edge without touching the index', async () => {
    expect(await keywordWriteTask({ op: 'truncate' })).toEqual({ ok: false, error: 'invalid keyword write task: unknown op "truncate"', invalid: true });
    expect(await keywordWriteTask({ op: 'upsert', chunks: 'x' })).toMatchObject({ ok: false, invalid: true });
    expect(await keywordWriteTask({ op: 'delete', documentId: 'd', keepVersion: 1.5 })).toMatchObject({ ok: false, invalid: true });
    expect(await keywordWriteTask(null)).toMatchObject({ ok: false, invalid: true });
  });

  it('writes on the main thread when the writer thread dies, and the next write goes to a new thread', async () => {
    const { index } = setup(faulty);
    const before = await writeCounts();
    const crash = chunk('crash', 1, 0, 'CRASH the writer, then find this turbulence chunk.');
    await index.upsert([crash]);
    expect((await index.search({ query: 'turbulence', k: 5, scope })).map((h) => h.chunk_id)).toEqual([crash.chunk_id]);
    expect(index.stats()).toEqual({ worker: 0, main_retry: 1 });
    await index.upsert(corpus);
    expect(index.stats()).toEqual({ worker: 1, main_retry: 1 });
    expect(await index.count()).toBe(corpus.length + 1);
    const after = await writeCounts();
    expect((after['main_retry/upsert'] ?? 0) - (before['main_retry/upsert'] ?? 0)).toBe(1);
  });

  it('reclusters on the writer thread once due, after the upsert that made it due returned; writes sent meanwhile run after it; same hits', async () => {
    const { dir, index } = setup(undefined, { ratio: 0.5, minIds: 2000 });
    const reference = new EmbeddedBm25KeywordIndex({ dir: tempDir() });
    opened.push(reference);
    const before = await reclusterCounts();
    await index.upsert(topical('a', 1999));
    expect(clusteredUpto(dir)).toBeUndefined(); // 1,999 ids < minIds
    await index.upsert(topical('b', 1));
    // the upsert that made it due has returned; the recluster is queued behind it, not done yet
    expect((await reclusterCounts())['done'] ?? 0).toBe(before['done'] ?? 0);
    const late = topical('c', 10);
    await index.upsert(late); // waits for the recluster (one writer, in order)
    expect((await reclusterCounts())['done']).toBe((before['done'] ?? 0) + 1);
    expect(clusteredUpto(dir)).toBe('2000');
    await reference.upsert([...topical('a', 1999), ...topical('b', 1), ...late]);
    const queries = ['topic1word3 topic1word4', 'topic2word7 shared', 'topic5word0', 'topic0word1 topic3word2 filler'];
    for (const query of queries) expect(await index.search({ query, k: 20, scope })).toEqual(await reference.search({ query, k: 20, scope }));
    expect(await index.count()).toBe(2010);
    expect(index.stats().main_retry).toBe(0);
  });

  it('close() during a recluster abandons it: rolled back, the writes queued behind it refused, nothing else lost', async () => {
    const { dir, index } = setup(undefined, { ratio: 0.5, minIds: 6000 });
    const before = await reclusterCounts();
    await index.upsert(topical('a', 6000));
    const behind = index.upsert(topical('b', 5)).then(
      () => 'written',
      (e: Error) => e.message,
    );
    while (!index.reclustering) await new Promise((r) => setTimeout(r, 1));
    await index.close();
    expect(await behind).toMatch(/closed before this write ran/);
    expect((await reclusterCounts())['abandoned']).toBe((before['abandoned'] ?? 0) + 1);
    expect(clusteredUpto(dir)).toBeUndefined(); // rolled back
    const reopened = new EmbeddedBm25KeywordIndex({ dir });
    opened.push(reopened);
    expect(await reopened.count()).toBe(6000);
    const req = { query: 'topic4word9 topic4word2 shared', k: 10, scope };
    expect(reopened.searchWithStats(req).hits).toEqual(reopened.searchExhaustive(req));
    expect(reopened.reclusterDue({ ratio: 0.5, minIds: 6000 })).toBe(true);
  });

  it('close() lets the writes in flight finish; later writes are refused', async () => {
    const { dir, index } = setup();
    const many = Array.from({ length: 300 }, (_, i) => chunk(`d${i % 30}`, 1, Math.floor(i / 30), `chunk ${i} about nozzle flow number ${i}`));
    const inFlight = index.upsert(many);
    await index.close();
    await expect(inFlight).resolves.toBeUndefined();
    await expect(index.upsert(corpus)).rejects.toThrow(/closed/);
    const reopened = new EmbeddedBm25KeywordIndex({ dir });
    opened.push(reopened);
    expect(await reopened.count()).toBe(many.length);
  });
});
