import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Filters, SearchScope } from '@rag/contracts';
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

/** Deterministic PRNG (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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

  it('rebuilds when the saved index is stale (writes after the last flush, then a crash)', async () => {
    const s1 = make();
    const a = randomVector();
    const b = randomVector();
    await s1.upsert([rec('a#v1#0', 'a', 1, a)]);
    await s1.flush();
    const saved = path.join(dir, 'saved');
    fs.mkdirSync(saved);
    for (const f of ['index.hnsw', 'index.meta.json']) fs.copyFileSync(path.join(s1.storeDir, f), path.join(saved, f));
    await s1.upsert([rec('b#v1#0', 'b', 1, b)]);
    await s1.deleteDocument('a');
    await s1.close();
    // Simulate a crash before the last index write: put back the older index files.
    for (const f of ['index.hnsw', 'index.meta.json']) fs.copyFileSync(path.join(saved, f), path.join(s1.storeDir, f));
    const log = new CapturingLogger();
    const s2 = make({ logger: log });
    expect(log.messages).toContain('rebuilt hnsw index from sqlite');
    const hits = await s2.search({ vector: a, k: 5, scope });
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

  it('rejects use after close, and close is idempotent', async () => {
    const s = make();
    await s.close();
    await s.close();
    await expect(s.count()).rejects.toThrow(/closed/);
  });
});
