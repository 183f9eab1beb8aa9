import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Filters, SearchScope } from '@rag/contracts';
import Database from 'better-sqlite3';
import { HierarchicalNSW } from 'hnswlib-node';
import { matches, seededRandom as rng } from '@rag/domain';
import { Logger } from '@rag/platform';
import type { VectorRecord } from '@rag/ports';
import { EmbeddedHnswVectorStore, modelFolderName, type EmbeddedHnswVectorStoreOptions } from './embedded-hnsw.adapter';

class CapturingLogger extends Logger {
  readonly messages: string[] = [];
  constructor() {
    super('test');
  }
  override info(msg: string): void {
    this.messages.push(msg);
  }
  override error(msg: string): void {
    this.messages.push(msg);
  }
}

const DIM = 8;
const rand = rng(42);
function randomVector(dim = DIM): Float32Array {
  const v = new Float32Array(dim);
  for (let i = 0; i < dim; i++) v[i] = rand() * 2 - 1;
  return v;
}
/** A vector close to `v` (cosine ≈ 1 - eps). */
function near(v: Float32Array, eps = 0.01): Float32Array {
  return v.map((x) => x + (rand() * 2 - 1) * eps);
}

function rec(chunk: string, doc: string, version: number, vector: Float32Array, extra: Partial<VectorRecord> = {}): VectorRecord {
  return { chunk_id: chunk, document_id: doc, tenant: 't1', version, acl: ['*'], metadata: {}, vector, ...extra };
}

const scope: SearchScope = { tenant: 't1' };

describe('EmbeddedHnswVectorStore', () => {
  let dir: string;
  const open: EmbeddedHnswVectorStore[] = [];
  const make = (o: Partial<EmbeddedHnswVectorStoreOptions> = {}): EmbeddedHnswVectorStore => {
    const s = new EmbeddedHnswVectorStore({ dir, modelId: 'test-model', dim: DIM, persistIntervalMs: 0, ...o });
    open.push(s);
    return s;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hnsw-spec-'));
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('returns [] from an empty store and for k <= 0', async () => {
    const s = make();
    expect(await s.search({ vector: randomVector(), k: 5, scope })).toEqual([]);
    await s.upsert([rec('d#v1#0', 'd', 1, randomVector())]);
    expect(await s.search({ vector: randomVector(), k: 0, scope })).toEqual([]);
    expect(await s.count()).toBe(1);
  });

  it('finds the nearest vector with cosine similarity, and returns at most the live count when k is larger', async () => {
    const s = make();
    const target = randomVector();
    await s.upsert([rec('a#v1#0', 'a', 1, target), rec('b#v1#0', 'b', 1, randomVector()), rec('c#v1#0', 'c', 1, randomVector())]);
    const hits = await s.search({ vector: target, k: 10, scope });
    expect(hits).toHaveLength(3);
    expect(hits[0]).toMatchObject({ chunk_id: 'a#v1#0', document_id: 'a', version: 1 });
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    for (let i = 1; i < hits.length; i++) expect(hits[i]!.score).toBeLessThanOrEqual(hits[i - 1]!.score);
    // Scaling does not change cosine similarity.
    const scaled = target.map((x) => x * 7);
    expect((await s.search({ vector: scaled, k: 1, scope }))[0]!.chunk_id).toBe('a#v1#0');
  });

  it('is idempotent: upserting the same chunk twice keeps one record', async () => {
    const s = make();
    const r = rec('d#v1#0', 'd', 1, randomVector(), { metadata: { lang: 'en' } });
    await s.upsert([r]);
    await s.upsert([r]);
    await s.upsert([{ ...r, vector: new Float32Array(r.vector) }]);
    expect(await s.count()).toBe(1);
    expect(await s.count('d')).toBe(1);
    const hits = await s.search({ vector: r.vector, k: 5, scope });
    expect(hits.map((h) => h.chunk_id)).toEqual(['d#v1#0']);
  });

  it('replaces a chunk by chunk_id when its content changes', async () => {
    const s = make();
    const v1 = randomVector();
    const v2 = randomVector();
    await s.upsert([rec('d#v1#0', 'd', 1, v1, { metadata: { lang: 'en' } })]);
    await s.upsert([rec('d#v1#0', 'd', 1, v2, { metadata: { lang: 'fr' } })]);
    expect(await s.count()).toBe(1);
    const hits = await s.search({ vector: v2, k: 5, scope, filters: { lang: 'fr' } });
    expect(hits).toHaveLength(1);
    expect(hits[0]!.score).toBeCloseTo(1, 5);
    expect(await s.search({ vector: v1, k: 5, scope, filters: { lang: 'en' } })).toEqual([]);
  });

  it('replaces a document version: write v2, delete all but v2, and v1 is never returned', async () => {
    const s = make();
    const v1 = [randomVector(), randomVector(), randomVector()];
    await s.upsert(v1.map((v, i) => rec(`doc#v1#${i}`, 'doc', 1, v)));
    await s.upsert([rec('other#v1#0', 'other', 1, randomVector())]);
    const v2 = [randomVector(), randomVector()];
    await s.upsert(v2.map((v, i) => rec(`doc#v2#${i}`, 'doc', 2, v)));
    expect(await s.count('doc')).toBe(5);
    expect(await s.deleteDocument('doc', 2)).toBe(3);
    expect(await s.count('doc')).toBe(2);
    expect(await s.count()).toBe(3);
    for (const q of v1) {
      const hits = await s.search({ vector: q, k: 10, scope });
      expect(hits.every((h) => h.version !== 1 || h.document_id !== 'doc')).toBe(true);
      expect(hits.map((h) => h.chunk_id).sort()).toEqual(['doc#v2#0', 'doc#v2#1', 'other#v1#0']);
    }
    // Deleting again is a no-op.
    expect(await s.deleteDocument('doc', 2)).toBe(0);
  });

  it('deletes all vectors of a document', async () => {
    const s = make();
    await s.upsert([rec('a#v1#0', 'a', 1, randomVector()), rec('a#v1#1', 'a', 1, randomVector()), rec('b#v1#0', 'b', 1, randomVector())]);
    expect(await s.deleteDocument('a')).toBe(2);
    expect(await s.count('a')).toBe(0);
    const hits = await s.search({ vector: randomVector(), k: 10, scope });
    expect(hits.map((h) => h.document_id)).toEqual(['b']);
    expect(await s.deleteDocument('missing')).toBe(0);
  });

  /** The record count from the trigger-maintained counter and from a scan of the records (another connection). */
  const recordFigures = (s: EmbeddedHnswVectorStore): { counter: number | undefined; scan: number } => {
    const db = new Database(path.join(s.storeDir, 'vectors.db'), { readonly: true });
    try {
      return {
        counter: db.prepare<[], { n: number }>('SELECT n FROM record_count WHERE id = 1').get()?.n,
        scan: db.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM records').get()!.n,
      };
    } finally {
      db.close();
    }
  };

  it('keeps the record count equal to COUNT(*) over the records through every write, and count() reads it', async () => {
    const logger = new CapturingLogger(); // the reopens below rebuild and catch up the graph
    let s = make({ logger });
    const check = async (expected: number) => {
      expect(recordFigures(s)).toEqual({ counter: expected, scan: expected }); // the scan: the sequence did what it says
      expect(await s.count()).toBe(expected);
    };
    await check(0);
    const docs = (v: number, ...ids: string[]) => ids.flatMap((d) => [0, 1, 2].map((i) => rec(`${d}#v${v}#${i}`, d, v, randomVector())));
    const v1 = docs(1, 'a', 'b', 'c');
    await s.upsert(v1);
    await check(9);
    // An idempotent replay writes nothing; a changed chunk is deleted and inserted under a new label (one record).
    await s.upsert(v1);
    await s.upsert([{ ...v1[0]!, metadata: { lang: 'fr' } }, { ...v1[4]!, vector: randomVector() }]);
    await check(9);
    // The same new chunk twice in one call: inserted, then replaced within the same transaction.
    await s.upsert([rec('x#v1#0', 'x', 1, randomVector()), rec('x#v1#0', 'x', 1, randomVector())]);
    await check(10);
    // A new version, then the old one deleted (what the indexer does); a chunk id moved to another document.
    await s.upsert(docs(2, 'a').slice(0, 2));
    await check(12);
    expect(await s.deleteDocument('a', 2)).toBe(3);
    await check(9);
    await s.upsert([rec('x#v1#0', 'y', 1, randomVector())]);
    await check(9);
    // Whole-document deletes, one of nothing; a rejected batch writes nothing.
    expect(await s.deleteDocument('b')).toBe(3);
    expect(await s.deleteDocument('missing')).toBe(0);
    await check(6);
    await expect(s.upsert([rec('z#v1#0', 'z', 1, randomVector()), rec('z#v1#1', 'z', 1, randomVector(DIM + 1))])).rejects.toThrow(/dimension/);
    await check(6);
    // A batch of several write runs (one transaction each), then a re-upsert of all of it with new vectors.
    const many = Array.from({ length: 40 }, (_, d) => docs(1, `m${d}`)).flat();
    await s.upsert(many);
    await check(126);
    await s.upsert(many.map((r) => ({ ...r, vector: randomVector() })));
    await check(126);
    // Kept across close and reopen (the open counts nothing again), and across a rebuild of the graph.
    await s.close();
    s = make({ logger });
    await check(126);
    await s.close();
    fs.rmSync(path.join(s.storeDir, 'index.hnsw'));
    s = make({ logger });
    await check(126);
    for (let d = 0; d < 40; d++) await s.deleteDocument(`m${d}`);
    await check(6);
    // A record deleted or inserted by hand (another connection) is counted too.
    await s.close();
    const raw = new Database(path.join(s.storeDir, 'vectors.db'));
    raw.exec("DELETE FROM records WHERE document_id = 'c'");
    raw.prepare("INSERT INTO records (chunk_id, document_id, tenant, version, acl, metadata, vector) VALUES ('h#v1#0', 'h', 't1', 1, '[\"*\"]', '{}', ?)").run(Buffer.from(randomVector().buffer));
    s = make({ logger });
    await check(4);
    // count() answers from the counter, not from the records: a (deliberately) wrong counter shows through.
    raw.exec('UPDATE record_count SET n = 1000');
    raw.close();
    expect(await s.count()).toBe(1000);
  });

  it('counts the records of a store made before the counter once, on open, then keeps the count', async () => {
    const first = make();
    await first.upsert(['a', 'b', 'c'].flatMap((d) => [0, 1, 2].map((i) => rec(`${d}#v1#${i}`, d, 1, randomVector()))));
    await first.close();
    const old = new Database(path.join(first.storeDir, 'vectors.db'));
    old.exec('DROP TRIGGER record_count_insert; DROP TRIGGER record_count_delete; DROP TABLE record_count');
    old.exec("DELETE FROM records WHERE chunk_id = 'c#v1#2'"); // written by an older version: no trigger sees it
    old.close();
    const s = make({ logger: new CapturingLogger() });
    expect(recordFigures(s)).toEqual({ counter: 8, scan: 8 });
    expect(await s.count()).toBe(8);
    await s.upsert([rec('d#v1#0', 'd', 1, randomVector())]);
    await s.deleteDocument('a');
    expect(recordFigures(s)).toEqual({ counter: 6, scan: 6 });
    expect(await s.count()).toBe(6);
  });

  it('isolates tenants and enforces the ACL inside the search', async () => {
    const s = make();
    const q = randomVector();
    await s.upsert([
      rec('t2doc#v1#0', 't2doc', 1, near(q, 0.001), { tenant: 't2' }),
      rec('secret#v1#0', 'secret', 1, near(q, 0.002), { acl: ['group:finance'] }),
      rec('alice#v1#0', 'alice', 1, near(q, 0.003), { acl: ['user:alice'] }),
      rec('public#v1#0', 'public', 1, near(q, 0.5)),
    ]);
    const ids = async (sc: SearchScope) => (await s.search({ vector: q, k: 10, scope: sc })).map((h) => h.document_id).sort();
    expect(await ids({ tenant: 't1' })).toEqual(['alice', 'public', 'secret']);
    expect(await ids({ tenant: 't2' })).toEqual(['t2doc']);
    expect(await ids({ tenant: 't3' })).toEqual([]);
    expect(await ids({ tenant: 't1', principals: [] })).toEqual(['public']);
    expect(await ids({ tenant: 't1', principals: ['user:alice'] })).toEqual(['alice', 'public']);
    expect(await ids({ tenant: 't1', principals: ['user:bob', 'group:finance'] })).toEqual(['public', 'secret']);
    // k=1 still yields an allowed hit although nearer, forbidden ones exist.
    const top = await s.search({ vector: q, k: 1, scope: { tenant: 't1', principals: ['nobody'] } });
    expect(top.map((h) => h.document_id)).toEqual(['public']);
  });

  it('applies metadata filters inside the search (eq, string[] contains, in, range, document_id)', async () => {
    const s = make();
    const q = randomVector();
    await s.upsert([
      rec('a#v1#0', 'a', 1, near(q, 0.001), { metadata: { lang: 'en', tags: ['x', 'y'], year: 2020, draft: true } }),
      rec('b#v1#0', 'b', 1, near(q, 0.002), { metadata: { lang: 'zh', tags: ['y'], year: 2022, draft: false } }),
      rec('c#v1#0', 'c', 1, near(q, 0.003), { metadata: { lang: 'en', tags: [], year: 2024, n: '2024' } }),
      rec('d#v1#0', 'd', 1, near(q, 0.004), { metadata: {} }),
    ]);
    const ids = async (filters: Filters) => (await s.search({ vector: q, k: 10, scope, filters })).map((h) => h.document_id).sort();
    expect(await ids({ lang: 'en' })).toEqual(['a', 'c']);
    expect(await ids({ tags: 'y' })).toEqual(['a', 'b']);
    expect(await ids({ draft: true })).toEqual(['a']);
    expect(await ids({ draft: false })).toEqual(['b']);
    expect(await ids({ lang: { in: ['zh', 'fr'] } })).toEqual(['b']);
    expect(await ids({ tags: { in: ['x', 'z'] } })).toEqual(['a']);
    expect(await ids({ year: { gte: 2022 } })).toEqual(['b', 'c']);
    expect(await ids({ year: { gt: 2020, lt: 2024 } })).toEqual(['b']);
    expect(await ids({ year: 2024 })).toEqual(['c']);
    expect(await ids({ n: 2024 })).toEqual([]); // a string never equals a number
    expect(await ids({ document_id: 'c' })).toEqual(['c']);
    expect(await ids({ document_id: { in: ['a', 'd'] } })).toEqual(['a', 'd']);
    expect(await ids({ lang: 'en', year: { lt: 2021 } })).toEqual(['a']);
    expect(await ids({ missing: 'x' })).toEqual([]);
  });

  it('returns k matching hits when a filter excludes the nearest neighbours', async () => {
    const q = randomVector(32);
    const s32 = make({ modelId: 'm32', dim: 32, ef: 10 });
    const records: VectorRecord[] = [];
    for (let i = 0; i < 400; i++) {
      const v = i < 100 ? near(q, 0.05) : randomVector(32);
      records.push(rec(`d${i}#v1#0`, `d${i}`, 1, v, { metadata: { keep: i % 50 === 7 } }));
    }
    await s32.upsert(records);
    const all = await s32.search({ vector: q, k: 5, scope });
    expect(all.every((h) => Number(h.document_id.slice(1)) < 100)).toBe(true);
    const hits = await s32.search({ vector: q, k: 5, scope, filters: { keep: true } });
    expect(hits).toHaveLength(5);
    // Brute force: the 8 records with keep=true; the two nearest (d7, d57) must lead.
    expect(hits.slice(0, 2).map((h) => h.document_id).sort()).toEqual(['d57', 'd7']);
  });

  it('grows the index past its initial capacity and keeps exact top-1 recall on self-queries', async () => {
    const s = make({ initialCapacity: 16 });
    const vectors = Array.from({ length: 300 }, () => randomVector());
    for (let i = 0; i < vectors.length; i += 50) {
      await s.upsert(vectors.slice(i, i + 50).map((v, j) => rec(`d${i + j}#v1#0`, `d${i + j}`, 1, v)));
    }
    expect(await s.count()).toBe(300);
    let correct = 0;
    for (let i = 0; i < vectors.length; i++) {
      const [top] = await s.search({ vector: vectors[i]!, k: 1, scope });
      if (top?.chunk_id === `d${i}#v1#0`) correct++;
    }
    expect(correct).toBeGreaterThanOrEqual(297);
  });

  it('reuses deleted slots: churn does not grow the graph without bound', async () => {
    const s = make({ initialCapacity: 16 });
    for (let round = 1; round <= 10; round++) {
      await s.upsert(Array.from({ length: 16 }, (_, i) => rec(`d#v${round}#${i}`, 'd', round, randomVector())));
      await s.deleteDocument('d', round);
    }
    expect(await s.count()).toBe(16);
    const hits = await s.search({ vector: randomVector(), k: 100, scope });
    expect(hits).toHaveLength(16);
    expect(new Set(hits.map((h) => h.version))).toEqual(new Set([10]));
  });

  it('rejects vectors of the wrong dimension with a clear error and writes nothing', async () => {
    const s = make();
    await expect(s.upsert([rec('ok#v1#0', 'ok', 1, randomVector()), rec('bad#v1#0', 'bad', 1, new Float32Array(3))])).rejects.toThrow(
      /dimension 3, expected 8/,
    );
    expect(await s.count()).toBe(0);
    await expect(s.search({ vector: new Float32Array(4), k: 1, scope })).rejects.toThrow(/dimension 4, expected 8/);
    await expect(s.upsert([rec('nan#v1#0', 'nan', 1, new Float32Array(DIM).fill(Number.NaN))])).rejects.toThrow(/non-finite/);
  });

  it('keeps each model in its own folder: another model id opens an empty, separate store', async () => {
    const a = make({ modelId: 'Xenova/bge-small-zh-v1.5' });
    await a.upsert([rec('d#v1#0', 'd', 1, randomVector())]);
    await a.flush();
    const b = make({ modelId: 'all-MiniLM-L6-v2' });
    expect(await b.count()).toBe(0);
    expect(await b.search({ vector: randomVector(), k: 5, scope })).toEqual([]);
    await b.upsert([rec('e#v1#0', 'e', 1, randomVector())]);
    expect(await a.count()).toBe(1);
    expect(await a.search({ vector: randomVector(), k: 5, scope })).toHaveLength(1);
    const c = make({ modelId: 'Xenova/bge-small-zh-v1.5', dim: 4 });
    expect(await c.count()).toBe(0);
    expect(a.storeDir).not.toBe(b.storeDir);
    expect(a.storeDir).not.toBe(c.storeDir);
    expect(path.dirname(a.storeDir)).toBe(dir);
    expect(modelFolderName('all-MiniLM-L6-v2', 384)).toBe('all-MiniLM-L6-v2-384');
    expect(modelFolderName('a/b', 8)).not.toBe(modelFolderName('a_b', 8));
    expect(modelFolderName('../../etc', 8)).not.toContain('/');
  });

  it('persists across close and reopen, loading the saved index without a rebuild', async () => {
    const v = [randomVector(), randomVector(), randomVector()];
    const s1 = make();
    await s1.upsert(v.map((x, i) => rec(`d${i}#v1#0`, `d${i}`, 1, x, { acl: ['g'], metadata: { i } })));
    await s1.deleteDocument('d2');
    await s1.close();
    const log = new CapturingLogger();
    const s2 = make({ logger: log });
    expect(log.messages).toEqual([]);
    expect(await s2.count()).toBe(2);
    const [top] = await s2.search({ vector: v[1]!, k: 1, scope: { tenant: 't1', principals: ['g'] }, filters: { i: 1 } });
    expect(top).toMatchObject({ chunk_id: 'd1#v1#0', version: 1 });
    expect(await s2.search({ vector: v[2]!, k: 5, scope, filters: { document_id: 'd2' } })).toEqual([]);
    // Writes after reopening keep working (slot reuse after load).
    await s2.upsert([rec('d3#v1#0', 'd3', 1, v[2]!)]);
    expect((await s2.search({ vector: v[2]!, k: 1, scope }))[0]!.chunk_id).toBe('d3#v1#0');
  });

  it('rebuilds the index from SQLite when the index file is deleted', async () => {
    const v = Array.from({ length: 50 }, () => randomVector());
    const s1 = make();
    await s1.upsert(v.map((x, i) => rec(`d${i}#v1#0`, `d${i}`, 1, x)));
    await s1.close();
    fs.rmSync(path.join(s1.storeDir, 'index.hnsw'));
    const log = new CapturingLogger();
    const s2 = make({ logger: log });
    expect(log.messages).toContain('rebuilt hnsw index from sqlite');
    expect(await s2.count()).toBe(50);
    for (let i = 0; i < 50; i += 7) expect((await s2.search({ vector: v[i]!, k: 1, scope }))[0]!.chunk_id).toBe(`d${i}#v1#0`);
    await s2.close();
    // The rebuilt index was saved: the next open loads it.
    const log3 = new CapturingLogger();
    make({ logger: log3 });
    expect(log3.messages).toEqual([]);
  });

  it('catches up a stale saved index instead of rebuilding it (writes after the last checkpoint, then a crash)', async () => {
    const s1 = make();
    const a = randomVector();
    const b = randomVector();
    await s1.upsert([rec('a#v1#0', 'a', 1, a)]);
    await s1.close();
    const saved = path.join(dir, 'saved');
    fs.mkdirSync(saved);
    for (const f of ['index.hnsw', 'index.meta.json']) fs.copyFileSync(path.join(s1.storeDir, f), path.join(saved, f));
    const s2 = make();
    await s2.upsert([rec('b#v1#0', 'b', 1, b)]);
    await s2.deleteDocument('a');
    await s2.close();
    // Simulate a crash before the last checkpoint: put back the older index files.
    for (const f of ['index.hnsw', 'index.meta.json']) fs.copyFileSync(path.join(saved, f), path.join(s1.storeDir, f));
    const log = new CapturingLogger();
    const s3 = make({ logger: log });
    expect(log.messages).toEqual(['caught up hnsw index with sqlite']);
    const hits = await s3.search({ vector: a, k: 5, scope });
    expect(hits.map((h) => h.chunk_id)).toEqual(['b#v1#0']);
  });

  it('rebuilds when the index file is corrupt', async () => {
    const s1 = make();
    const a = randomVector();
    await s1.upsert([rec('a#v1#0', 'a', 1, a)]);
    await s1.close();
    fs.writeFileSync(path.join(s1.storeDir, 'index.hnsw'), 'garbage');
    const log = new CapturingLogger();
    const s2 = make({ logger: log });
    expect(log.messages).toContain('rebuilt hnsw index from sqlite');
    expect((await s2.search({ vector: a, k: 1, scope }))[0]!.chunk_id).toBe('a#v1#0');
  });

  describe('filtering without a per-candidate callback where it can (issue 13 item 4)', () => {
    /** Records the store's searchKnn calls (k, and whether a filter callback was passed); the N-API prototype cannot be spied on. */
    const spyKnn = (st: EmbeddedHnswVectorStore): { calls: () => Array<{ k: number; callback: boolean }>; clear: () => void } => {
      const index = (st as unknown as { index: HierarchicalNSW }).index;
      const original = index.searchKnn.bind(index);
      const seen: Array<{ k: number; callback: boolean }> = [];
      // The inherited method is read-only: shadow it with an own property.
      Object.defineProperty(index, 'searchKnn', {
        value: (q: number[], k: number, filter?: (label: number) => boolean) => {
          seen.push({ k, callback: typeof filter === 'function' });
          return original(q, k, filter);
        },
      });
      return { calls: () => [...seen], clear: () => void seen.splice(0) };
    };

    /** Exact top-k by cosine over the records `allowed` admits (brute force). */
    const bruteForce = (records: VectorRecord[], q: Float32Array, k: number, allowed: (r: VectorRecord) => boolean): string[] => {
      const cos = (a: Float32Array, b: Float32Array): number => {
        let d = 0;
        let na = 0;
        let nb = 0;
        for (let i = 0; i < a.length; i++) {
          d += a[i]! * b[i]!;
          na += a[i]! * a[i]!;
          nb += b[i]! * b[i]!;
        }
        return d / Math.sqrt(na * nb);
      };
      return records
        .filter(allowed)
        .map((r) => ({ id: r.chunk_id, s: cos(r.vector, q) }))
        .sort((a, b) => b.s - a.s)
        .slice(0, k)
        .map((x) => x.id);
    };

    it('passes no filter to hnswlib when the scope reads every label, oversamples without one for a mostly readable scope, and filters inside the search otherwise', async () => {
      const s = make({ ef: 100 });
      const records = Array.from({ length: 60 }, (_, i) => rec(`d${i}#v1#0`, `d${i}`, 1, randomVector(), { acl: i % 4 === 0 ? ['group:a'] : ['*'], metadata: { i } }));
      await s.upsert(records);
      const q = randomVector();
      const knn = spyKnn(s);
      // Unrestricted within the only tenant: every label is readable.
      expect((await s.search({ vector: q, k: 5, scope })).map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 5, () => true));
      expect(knn.calls()).toEqual([{ k: 5, callback: false }]);
      // Principals that do not name group:a read the 45 public labels (75 %): unfiltered search for 2·5/0.75 = 14, then filtered.
      knn.clear();
      const bob = { tenant: 't1', principals: ['user:bob'] };
      expect((await s.search({ vector: q, k: 5, scope: bob })).map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 5, (r) => r.acl.includes('*')));
      expect(knn.calls()).toEqual([{ k: 14, callback: false }]);
      // group:a reads everything: no filter at all.
      knn.clear();
      await s.search({ vector: q, k: 5, scope: { tenant: 't1', principals: ['group:a'] } });
      expect(knn.calls()).toEqual([{ k: 5, callback: false }]);
      // Metadata filters: their share of the labels is sampled (here all 60, so exactly). A broad one (48 of 60) is
      // oversampled without a callback (2·5/0.8 = 13 ≤ ef); for a selective one (3 of 60: 2·5/0.05 = 200) the search
      // is capped at the whole index, 60 ≤ ef, so it also needs no callback.
      knn.clear();
      const broad = await s.search({ vector: q, k: 5, scope, filters: { i: { gte: 12 } } });
      expect(broad.map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 5, (r) => (r.metadata['i'] as number) >= 12));
      expect(knn.calls()).toEqual([{ k: 13, callback: false }]);
      knn.clear();
      const filtered = await s.search({ vector: q, k: 5, scope, filters: { i: { lt: 3 } } });
      expect(filtered.map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 3, (r) => (r.metadata['i'] as number) < 3));
      expect(knn.calls()).toEqual([{ k: 60, callback: false }]);
      // Another tenant holds nothing here: no search at all.
      knn.clear();
      expect(await s.search({ vector: q, k: 5, scope: { tenant: 't9' } })).toEqual([]);
      expect(knn.calls()).toEqual([]);
      // With ef below that (a large index), the selective filter goes inside the search; the broad one still does not.
      await s.close();
      const small = make({ ef: 20 }); // the same folder, reopened with a smaller ef
      const knnSmall = spyKnn(small);
      expect((await small.search({ vector: q, k: 5, scope, filters: { i: { lt: 3 } } })).map((h) => h.chunk_id)).toEqual(
        bruteForce(records, q, 3, (r) => (r.metadata['i'] as number) < 3),
      );
      expect(knnSmall.calls()).toEqual([{ k: 5, callback: true }]);
      knnSmall.clear();
      await small.search({ vector: q, k: 5, scope, filters: { i: { gte: 12 } } });
      expect(knnSmall.calls()).toEqual([{ k: 13, callback: false }]);
    });

    it('a restricted caller whose few permitted chunks are far away still gets its k best: the oversampled search falls back to the filter inside the search', async () => {
      const s = make({ ef: 500 });
      const q = randomVector();
      const records: VectorRecord[] = [];
      for (let i = 0; i < 200; i++) records.push(rec(`near${i}#v1#0`, `near${i}`, 1, near(q, 0.05), { acl: ['group:b'], metadata: { side: 'near' } }));
      for (let i = 0; i < 300; i++) records.push(rec(`far${i}#v1#0`, `far${i}`, 1, randomVector(), { acl: ['group:a'], metadata: { side: 'far' } }));
      await s.upsert(records);
      const knn = spyKnn(s);
      const hits = await s.search({ vector: q, k: 5, scope: { tenant: 't1', principals: ['group:a'] } });
      expect(hits.map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 5, (r) => r.acl.includes('group:a')));
      // 300 of 500 readable: 2·5/0.6 = 17 unfiltered (all group:b), then the filtered search.
      expect(knn.calls()).toEqual([
        { k: 17, callback: false },
        { k: 5, callback: true },
      ]);
      // The same with a metadata filter whose share (0.6) comes from the sample (64 of the 500 labels, so ≈ 17).
      knn.clear();
      const meta = await s.search({ vector: q, k: 5, scope, filters: { side: 'far' } });
      expect(meta.map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 5, (r) => r.metadata['side'] === 'far'));
      const calls = knn.calls();
      expect(calls).toHaveLength(2);
      expect(calls[0]!.callback).toBe(false);
      expect(calls[0]!.k).toBeGreaterThanOrEqual(11);
      expect(calls[1]).toEqual({ k: 5, callback: true });
    });

    it('answers every scope and filter exactly like brute force over matches() (random tenants, ACLs, metadata, chunk ids, deletes)', async () => {
      const s = make({ ef: 1000 });
      const r = rng(7);
      const pick = <T,>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
      const acls = [['*'], ['group:a'], ['group:b'], ['group:a', 'user:carol'], ['user:dave'], ['*', 'group:a']];
      const model = new Map<string, VectorRecord>();
      for (let d = 0; d < 120; d++) {
        const tenant = d % 5 === 0 ? 't2' : 't1';
        const acl = pick(acls);
        const meta = { lang: pick(['en', 'zh']), year: 2000 + (d % 7), tags: d % 3 === 0 ? ['x'] : ['y', 'z'] };
        const version = d % 11 === 0 ? 1e15 + d : 1 + (d % 3);
        const chunks = 1 + (d % 3);
        const recs = Array.from({ length: chunks }, (_, i) => {
          // Irregular chunk ids (not `${doc}#v${version}#${ordinal}`) must come back verbatim.
          const chunk_id = d % 13 === 0 ? `odd/${d}/${i}` : d % 17 === 0 ? `doc${d}#v${version}#0${i}` : `doc${d}#v${version}#${i}`;
          return rec(chunk_id, `doc${d}`, version, randomVector(), { tenant, acl, metadata: meta });
        });
        await s.upsert(recs);
        for (const x of recs) model.set(x.chunk_id, x);
      }
      for (let d = 0; d < 120; d += 9) {
        await s.deleteDocument(`doc${d}`);
        for (const [id, x] of model) if (x.document_id === `doc${d}`) model.delete(id);
      }
      const scopes: SearchScope[] = [
        { tenant: 't1' },
        { tenant: 't2' },
        { tenant: 't1', principals: [] },
        { tenant: 't1', principals: ['group:a'] },
        { tenant: 't1', principals: ['group:b', 'user:dave'] },
        { tenant: 't2', principals: ['user:carol'] },
      ];
      const filterSets: (Filters | undefined)[] = [undefined, {}, { lang: 'en' }, { year: { gte: 2003 } }, { tags: 'x', lang: 'zh' }, { document_id: { in: ['doc1', 'doc2', 'doc26'] } }];
      const records = [...model.values()];
      for (let t = 0; t < 60; t++) {
        const sc = scopes[t % scopes.length]!;
        const filters = filterSets[Math.floor(t / scopes.length) % filterSets.length];
        const q = randomVector();
        const k = 1 + (t % 12);
        const got = await s.search({ vector: q, k, scope: sc, filters });
        const want = bruteForce(records, q, k, (x) => matches(x, sc, filters));
        expect(got.map((h) => h.chunk_id)).toEqual(want);
        for (const h of got) expect(h).toMatchObject({ document_id: model.get(h.chunk_id)!.document_id, version: model.get(h.chunk_id)!.version });
      }
      // The same after a reopen (the table is rebuilt from SQLite).
      await s.close();
      const s2 = make({ ef: 1000 });
      for (let t = 0; t < 12; t++) {
        const sc = scopes[t % scopes.length]!;
        const q = randomVector();
        expect((await s2.search({ vector: q, k: 7, scope: sc })).map((h) => h.chunk_id)).toEqual(bruteForce(records, q, 7, (x) => matches(x, sc)));
      }
      // Chunks of one document share one document id and one ACL/metadata set in memory.
      const st = s2.memoryStats();
      expect(st.labels).toBe(records.length);
      expect(st.documents).toBe(new Set(records.map((x) => x.document_id)).size);
      expect(st.attribute_sets).toBeLessThanOrEqual(st.documents);
      expect(st.irregular_chunk_ids).toBe(records.filter((x) => !/^doc\d+#v\d+#(0|[1-9]\d*)$/.test(x.chunk_id)).length);
    });
  });

  it('caps the SQLite page cache of vectors.db (sqliteCacheKiB, default 2048 KiB) and rejects a bad value', () => {
    const cacheOf = (st: EmbeddedHnswVectorStore): number => (st as unknown as { db: Database.Database }).db.pragma('cache_size', { simple: true }) as number;
    expect(cacheOf(make())).toBe(-2048);
    expect(cacheOf(make({ modelId: 'other', sqliteCacheKiB: 512 }))).toBe(-512);
    expect(() => make({ modelId: 'third', sqliteCacheKiB: -1 })).toThrow(/sqliteCacheKiB must be an integer >= 0/);
  });

  it('rejects use after close, and close is idempotent', async () => {
    const s = make();
    await s.close();
    await s.close();
    await expect(s.count()).rejects.toThrow(/closed/);
  });
});

describe('EmbeddedHnswVectorStore checkpoints and crash safety', () => {
  let dir: string;
  const open: EmbeddedHnswVectorStore[] = [];
  const make = (o: Partial<EmbeddedHnswVectorStoreOptions> = {}, at = dir): EmbeddedHnswVectorStore => {
    const s = new EmbeddedHnswVectorStore({ dir: at, modelId: 'test-model', dim: DIM, persistIntervalMs: 0, ef: 400, ...o });
    open.push(s);
    return s;
  };
  /** A process death: the SQLite handle goes away (its committed transactions stay), nothing else runs — no checkpoint. */
  const crash = (s: EmbeddedHnswVectorStore): void => {
    const raw = s as unknown as { db: { close(): void }; timer?: NodeJS.Timeout };
    if (raw.timer) clearInterval(raw.timer);
    raw.db.close();
    open.splice(open.indexOf(s), 1);
  };
  const indexFile = (s: EmbeddedHnswVectorStore) => path.join(s.storeDir, 'index.hnsw');
  const metaFile = (s: EmbeddedHnswVectorStore) => path.join(s.storeDir, 'index.meta.json');
  /** Identity of the graph file's current version: a checkpoint renames a new file over it (new inode). */
  const graphVersion = (s: EmbeddedHnswVectorStore): string | null => {
    try {
      const st = fs.statSync(indexFile(s));
      return `${st.ino}:${st.mtimeMs}:${st.size}`;
    } catch {
      return null;
    }
  };

  /** What the store must hold: chunk_id → record, maintained beside every operation of a test. */
  class Model {
    readonly records = new Map<string, VectorRecord>();
    async upsert(s: EmbeddedHnswVectorStore, recs: VectorRecord[]): Promise<void> {
      await s.upsert(recs);
      for (const r of recs) this.records.set(r.chunk_id, r);
    }
    async deleteDocument(s: EmbeddedHnswVectorStore, doc: string, keep?: number): Promise<void> {
      await s.deleteDocument(doc, keep);
      for (const [id, r] of this.records) if (r.document_id === doc && r.version !== keep) this.records.delete(id);
    }
  }
  /** Document d's version v: 3 chunks. */
  const docRecs = (d: number, v: number): VectorRecord[] => [0, 1, 2].map((i) => rec(`d${d}#v${v}#${i}`, `d${d}`, v, randomVector(), { metadata: { d } }));
  /** Ingests documents from..to-1 the way the indexer does: upsert, flush, delete older versions. */
  const ingest = async (s: EmbeddedHnswVectorStore, m: Model, from: number, to: number, version = 1): Promise<void> => {
    for (let d = from; d < to; d++) {
      await m.upsert(s, docRecs(d, version));
      await s.flush();
      if (version > 1) await m.deleteDocument(s, `d${d}`, version);
    }
  };

  /**
   * Every committed vector is searchable, nothing else is, and the answers equal those of a store freshly built from
   * the same records (and brute force: the graphs are small and ef exceeds their size, so both searches are exact).
   */
  const expectSameAsFresh = async (s: EmbeddedHnswVectorStore, m: Model): Promise<void> => {
    const expected = [...m.records.values()];
    expect(await s.count()).toBe(expected.length);
    const all = await s.search({ vector: randomVector(), k: expected.length + 10, scope });
    expect(all.map((h) => h.chunk_id).sort()).toEqual(expected.map((r) => r.chunk_id).sort());
    for (const r of expected) expect((await s.search({ vector: r.vector, k: 1, scope }))[0]?.chunk_id).toBe(r.chunk_id);
    const freshDir = fs.mkdtempSync(path.join(os.tmpdir(), 'hnsw-fresh-'));
    try {
      const fresh = make({}, freshDir);
      await fresh.upsert(expected);
      for (let q = 0; q < 20; q++) {
        const vector = randomVector();
        const got = (await s.search({ vector, k: 5, scope })).map((h) => h.chunk_id);
        expect(got).toEqual((await fresh.search({ vector, k: 5, scope })).map((h) => h.chunk_id));
        const filtered = { d: { lt: 10 } };
        expect((await s.search({ vector, k: 5, scope, filters: filtered })).map((h) => h.chunk_id)).toEqual(
          (await fresh.search({ vector, k: 5, scope, filters: filtered })).map((h) => h.chunk_id),
        );
      }
      await fresh.close();
      open.splice(open.indexOf(fresh), 1);
    } finally {
      fs.rmSync(freshDir, { recursive: true, force: true });
    }
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hnsw-ckpt-spec-'));
  });
  afterEach(async () => {
    vi.useRealTimers();
    for (const s of open.splice(0)) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('flush() rewrites the graph only when max(checkpointOps, checkpointFraction × records) changes accumulated', async () => {
    const s = make({ checkpointOps: 10, checkpointFraction: 0.5 });
    const m = new Model();
    await ingest(s, m, 0, 3); // 9 ops
    expect(graphVersion(s)).toBeNull();
    await ingest(s, m, 3, 4); // 12 ops >= max(10, 0.5 × 12)
    const first = graphVersion(s);
    expect(first).not.toBeNull();
    expect(JSON.parse(fs.readFileSync(metaFile(s), 'utf8'))).toMatchObject({ format: 2, count: 12, max_label: 12 });
    await ingest(s, m, 4, 7); // 9 more ops: under 10
    expect(graphVersion(s)).toBe(first);
    await ingest(s, m, 7, 8); // 12 ops >= max(10, 0.5 × 24)
    const second = graphVersion(s);
    expect(second).not.toBe(first);
    await ingest(s, m, 8, 11); // 9 ops < max(10, 0.5 × 33)
    expect(graphVersion(s)).toBe(second);
    // Above 20 records the fraction rules: 12 new adds at 36 records (checked by flush) are under 0.5 × 36 = 18 ...
    await ingest(s, m, 0, 1, 2); // 9 + 3 adds (flush: 12 < 18), then 3 deletes of v1 = 15 ops
    expect(graphVersion(s)).toBe(second);
    await ingest(s, m, 1, 2, 2); // ... and 18 ops at 36 records are due
    expect(graphVersion(s)).not.toBe(second);
    await s.close();
    const log = new CapturingLogger();
    await expectSameAsFresh(make({ logger: log }), m);
    expect(log.messages).toEqual([]);
  });

  it('checks for a due checkpoint every persistIntervalMs, and writes none before it is due', async () => {
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const s = make({ checkpointOps: 5, persistIntervalMs: 1000 });
    await s.upsert([0, 1, 2, 3].map((i) => rec(`d${i}#v1#0`, `d${i}`, 1, randomVector())));
    vi.advanceTimersByTime(3000);
    expect(graphVersion(s)).toBeNull();
    await s.upsert([rec('d4#v1#0', 'd4', 1, randomVector())]);
    expect(graphVersion(s)).toBeNull();
    vi.advanceTimersByTime(1000);
    await vi.waitFor(() => expect(graphVersion(s)).not.toBeNull()); // written on the libuv pool
  });

  it('answers searches while a checkpoint is written, and applies changes made meanwhile after it, in order', async () => {
    const s = make({ checkpointOps: 5 });
    const m = new Model();
    for (let d = 0; d < 4; d++) await m.upsert(s, docRecs(d, 1)); // 12 adds: a checkpoint is due
    expect(graphVersion(s)).toBeNull();
    const order: string[] = [];
    const flushed = s.flush().then(() => order.push('checkpoint'));
    const searched = s.search({ vector: m.records.get('d1#v1#0')!.vector, k: 1, scope }).then((h) => order.push(`search ${h[0]?.chunk_id}`));
    // Changes committed during the write: a new version of d0 replaces v1, and d2 goes.
    const changed = (async () => {
      await m.upsert(s, docRecs(0, 2));
      await m.deleteDocument(s, 'd0', 2);
      await m.deleteDocument(s, 'd2');
      order.push('changed');
    })();
    await Promise.all([flushed, searched, changed]);
    // The search did not wait for the file; the changes were applied only after it (the graph was frozen meanwhile).
    expect(order).toEqual(['search d1#v1#0', 'checkpoint', 'changed']);
    expect(graphVersion(s)).not.toBeNull();
    await expectSameAsFresh(s, m);
    crash(s); // the checkpoint predates the changes: an open catches them up from SQLite (no rebuild)
    const log = new CapturingLogger();
    await expectSameAsFresh(make({ logger: log }), m);
    expect(log.messages).toEqual(['caught up hnsw index with sqlite']);
  });

  it('rejects invalid checkpoint settings', () => {
    expect(() => make({ checkpointOps: 0 })).toThrow(/checkpointOps must be a positive integer/);
    expect(() => make({ checkpointFraction: -1 })).toThrow(/checkpointFraction must be a finite number >= 0/);
  });

  it('a crash before the first checkpoint: the open rebuilds from SQLite and every committed vector is searchable', async () => {
    const m = new Model();
    const s1 = make({ checkpointOps: 1000 });
    await ingest(s1, m, 0, 20);
    await ingest(s1, m, 0, 5, 2);
    await m.deleteDocument(s1, 'd7');
    crash(s1);
    expect(graphVersion(s1)).toBeNull();
    const log = new CapturingLogger();
    const s2 = make({ logger: log });
    expect(log.messages).toEqual(['rebuilt hnsw index from sqlite']);
    await expectSameAsFresh(s2, m);
  });

  it('crashes after upserts and deletes at several points: each open catches up from the last checkpoint, never rebuilds', async () => {
    const m = new Model();
    let s = make({ checkpointOps: 25 });
    await ingest(s, m, 0, 12); // 36 ops: one checkpoint at 27
    await m.deleteDocument(s, 'd3');
    crash(s); // un-checkpointed: 3 adds + the delete of d3
    let log = new CapturingLogger();
    s = make({ checkpointOps: 25, logger: log });
    expect(log.messages).toEqual(['caught up hnsw index with sqlite']);
    await expectSameAsFresh(s, m);
    // New versions replace old ones (slot reuse of deleted labels), deletes, new documents; crash again.
    await ingest(s, m, 0, 6, 2);
    await ingest(s, m, 12, 20);
    await m.deleteDocument(s, 'd15');
    await m.deleteDocument(s, 'd1', 3); // keeps no version: v3 does not exist
    crash(s);
    log = new CapturingLogger();
    s = make({ checkpointOps: 25, logger: log });
    expect(log.messages).toEqual(['caught up hnsw index with sqlite']);
    await expectSameAsFresh(s, m);
    // A crash right after an open that caught up (nothing written since): the next open catches up again.
    crash(s);
    log = new CapturingLogger();
    s = make({ checkpointOps: 25, logger: log });
    expect(log.messages).not.toContain('rebuilt hnsw index from sqlite');
    await expectSameAsFresh(s, m);
    // A clean close checkpoints: the next open has nothing to replay.
    await s.close();
    log = new CapturingLogger();
    s = make({ checkpointOps: 25, logger: log });
    expect(log.messages).toEqual([]);
    await expectSameAsFresh(s, m);
  });

  it('an open whose catch-up reaches the threshold writes a checkpoint, so repeated crashes do not accumulate replay work', async () => {
    const m = new Model();
    const s1 = make({ checkpointOps: 1000 });
    await ingest(s1, m, 0, 4);
    await s1.close();
    const s2 = make({ checkpointOps: 1000 });
    const before = graphVersion(s2);
    await ingest(s2, m, 4, 10);
    crash(s2); // 18 un-checkpointed ops
    const s3 = make({ checkpointOps: 10 }); // a lower threshold: the catch-up alone is due
    expect(graphVersion(s3)).not.toBe(before);
    crash(s3);
    const log = new CapturingLogger();
    const s4 = make({ checkpointOps: 10, logger: log });
    expect(log.messages).toEqual([]);
    await expectSameAsFresh(s4, m);
  });

  it('a crash in the middle of a checkpoint (temporary files left, or the new graph beside the old meta) still opens with every vector', async () => {
    const m = new Model();
    const s1 = make({ checkpointOps: 15 });
    await ingest(s1, m, 0, 5); // checkpoint at 15
    const oldMeta = fs.readFileSync(metaFile(s1));
    await ingest(s1, m, 5, 10); // checkpoint at 30
    await ingest(s1, m, 0, 2, 2);
    await m.deleteDocument(s1, 'd8');
    crash(s1);
    // Crash between the graph's rename and the meta's: the new graph beside the previous meta, and a half-written meta.
    fs.writeFileSync(metaFile(s1), oldMeta);
    fs.writeFileSync(`${metaFile(s1)}.tmp`, '{"format":2,');
    // ...and, from a later attempt, a graph file that was being written when the process died.
    fs.writeFileSync(`${indexFile(s1)}.tmp`, Buffer.alloc(1000, 7));
    const log = new CapturingLogger();
    const s2 = make({ checkpointOps: 15, logger: log });
    expect(log.messages).toEqual(['caught up hnsw index with sqlite']);
    expect(fs.existsSync(`${indexFile(s1)}.tmp`)).toBe(false);
    expect(fs.existsSync(`${metaFile(s1)}.tmp`)).toBe(false);
    await expectSameAsFresh(s2, m);
    // The caught-up graph keeps working: more writes, a clean close, a reopen without replay.
    await ingest(s2, m, 10, 14);
    await s2.close();
    const log3 = new CapturingLogger();
    await expectSameAsFresh(make({ checkpointOps: 15, logger: log3 }), m);
    expect(log3.messages).toEqual([]);
  });

  it('an index of the previous format (rewritten on every flush) is loaded and caught up, not rebuilt', async () => {
    const m = new Model();
    const s1 = make();
    await ingest(s1, m, 0, 6);
    await s1.close();
    const meta = JSON.parse(fs.readFileSync(metaFile(s1), 'utf8')) as Record<string, unknown>;
    delete meta['max_label'];
    fs.writeFileSync(metaFile(s1), JSON.stringify({ ...meta, format: 1 }));
    const s2 = make();
    await ingest(s2, m, 6, 8);
    crash(s2);
    const log = new CapturingLogger();
    const s3 = make({ logger: log });
    expect(log.messages).toEqual(['caught up hnsw index with sqlite']);
    await expectSameAsFresh(s3, m);
  });

  it('rebuilds when the graph holds labels SQLite never issued (SQLite lost commits), so labels are not reused for other vectors', async () => {
    const m = new Model();
    const s1 = make();
    await ingest(s1, m, 0, 4); // labels 1..12
    await s1.close();
    // What a power loss under a disk that ignores fsync could leave: SQLite without its last document.
    const db = new Database(path.join(s1.storeDir, 'vectors.db'));
    db.prepare("DELETE FROM records WHERE document_id = 'd3'").run();
    db.prepare("UPDATE sqlite_sequence SET seq = 9 WHERE name = 'records'").run();
    db.close();
    for (let i = 0; i < 3; i++) m.records.delete(`d3#v1#${i}`);
    const log = new CapturingLogger();
    const s2 = make({ logger: log });
    expect(log.messages).toEqual(['rebuilt hnsw index from sqlite']);
    await expectSameAsFresh(s2, m);
    // Labels 10..12 are issued again, now for other vectors: each is found by its own vector.
    await ingest(s2, m, 4, 12);
    await m.deleteDocument(s2, 'd5');
    await ingest(s2, m, 0, 12, 2);
    await expectSameAsFresh(s2, m);
  });
});
