/**
 * MilvusVectorStore against a real Milvus 2.3 standalone at RAG_MILVUS_ADDRESS (default 127.0.0.1:19530).
 * Start it first: `bash deploy/local/servers.sh start milvus`. Every run uses fresh collections (random model ids)
 * and drops them afterwards.
 *
 * Covers: upsert idempotency, replace (keepVersion), delete, count; COSINE scores are similarities; scope and
 * filters inside the search (a filter that excludes the top hits still returns k matching results); the
 * expression builder's semantics against `matches()` over a randomised data set (type strictness of JSON
 * comparisons, string[] membership, `in`, ranges, ACL); both index types (HNSW, IVF_SQ8). Logs search latency.
 */
import { randomBytes } from 'node:crypto';
import { ConsistencyLevelEnum, MilvusClient } from '@zilliz/milvus2-sdk-node';
import type { Filters, MetadataValue, SearchScope } from '@rag/contracts';
import { matches, seededRandom as rng } from '@rag/domain';
import { setLogLevel } from '@rag/platform';
import type { VectorRecord } from '@rag/ports';
import { buildMilvusExpr, MilvusVectorStore, type MilvusIndexType } from '../../libs/adapters/src/milvus';

setLogLevel('warn');

const ADDRESS = process.env['RAG_MILVUS_ADDRESS'] ?? '127.0.0.1:19530';
const DIM = 16;

function unit(v: number[]): Float32Array {
  const n = Math.hypot(...v) || 1;
  return Float32Array.from(v.map((x) => x / n));
}

function randomVector(r: () => number): Float32Array {
  return unit(Array.from({ length: DIM }, () => r() * 2 - 1));
}

/** A vector close to `base` (cosine ≈ 1 - eps). */
function near(base: Float32Array, r: () => number, eps: number): Float32Array {
  return unit(Array.from(base, (x) => x + (r() * 2 - 1) * eps));
}

function record(id: string, vector: Float32Array, extra: Partial<VectorRecord> = {}): VectorRecord {
  const [doc, v] = id.split('#');
  return { chunk_id: id, document_id: doc!, tenant: 't1', version: Number(v!.slice(1)), acl: ['*'], metadata: {}, vector, ...extra };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}

const runId = randomBytes(4).toString('hex');

describe.each<[MilvusIndexType]>([['HNSW'], ['IVF_SQ8']])('MilvusVectorStore on a real Milvus (%s)', (indexType) => {
  let store: MilvusVectorStore;
  const r = rng(indexType === 'HNSW' ? 7 : 11);

  beforeAll(async () => {
    store = new MilvusVectorStore({
      address: ADDRESS,
      modelId: `infra-${indexType.toLowerCase()}-${runId}`,
      dim: DIM,
      indexType,
      collectionPrefix: 'rag_infra',
      nlist: 16,
      nprobe: 16,
      m: 16,
      efConstruction: 64,
      ef: 64,
      timeoutMs: 20_000,
      consistencyLevel: 'Strong', // read-your-writes for the assertions; latency is measured for Bounded too
    });
  });

  afterAll(async () => {
    if (!store) return;
    await store.drop();
    await store.close();
  });

  it('creates the collection with the configured index on first use', async () => {
    expect(await store.count()).toBe(0);
    expect(store.effectiveIndexType).toBe(indexType);
    expect(store.collection).toMatch(/^rag_infra_infra_/);
  });

  it('upsert is idempotent by chunk_id', async () => {
    const recs = Array.from({ length: 40 }, (_, i) => record(`idem#v1#${i}`, randomVector(r)));
    await store.upsert(recs);
    await store.upsert(recs);
    await store.upsert(recs.slice(0, 10).map((x) => ({ ...x, metadata: { touched: true } })));
    expect(await store.count('idem')).toBe(40);
    // Changed rows are really replaced (the metadata filter sees the new value, exactly once).
    const touched = await store.search({ vector: recs[0]!.vector, k: 50, scope: { tenant: 't1' }, filters: { touched: true } });
    expect(touched).toHaveLength(10);
    expect(new Set(touched.map((h) => h.chunk_id)).size).toBe(10);
  });

  it('bulk ingestion: one upsert of many documents writes each exactly once; the redelivered batch duplicates nothing', async () => {
    // What the indexer's batch path sends: the records of 30 documents (7 chunks each) in one call.
    const docs = Array.from({ length: 30 }, (_, d) => `bulk${d}`);
    const recs = docs.flatMap((doc) => Array.from({ length: 7 }, (_, i) => record(`${doc}#v1#${i}`, randomVector(r))));
    await store.upsert(recs);
    await store.upsert(recs); // a redelivery after a crash before the commit
    expect(await store.count()).toBeGreaterThanOrEqual(210);
    for (const doc of docs) expect(await store.count(doc), doc).toBe(7);
    const hits = await store.search({ vector: recs[100]!.vector, k: 5, scope: { tenant: 't1' } });
    expect(hits[0]!.chunk_id).toBe(recs[100]!.chunk_id);
  });

  it('keeps each chunk beside its vector (answers survive a keyword-index outage); an oversized text is shortened, not rejected', async () => {
    const chunk = (id: string, text: string) => ({
      chunk_id: id, document_id: id.split('#')[0]!, tenant: 't1', version: 1, ordinal: 0, kind: 'child' as const, parent_id: null,
      title: 'Stored', heading_path: ['A', 'B'], text, acl: ['*'], metadata: { lang: 'en' },
    });
    const small = chunk('kept#v1#0', 'The boundary layer thickens downstream.');
    const huge = chunk('kept#v1#1', '表格 '.repeat(40_000));
    await store.upsert([
      record('kept#v1#0', randomVector(r), { chunk: small as unknown as VectorRecord['chunk'] }),
      record('kept#v1#1', randomVector(r), { chunk: huge as unknown as VectorRecord['chunk'] }),
      record('kept#v1#2', randomVector(r)),
    ]);
    const got = await store.getChunks(['kept#v1#1', 'kept#v1#0', 'kept#v1#2', 'missing#v1#0']);
    expect(got.map((c) => c.chunk_id)).toEqual(['kept#v1#1', 'kept#v1#0']);
    expect(got[1]).toMatchObject({ title: 'Stored', heading_path: ['A', 'B'], text: small.text });
    expect(got[0]!.text.length).toBeGreaterThan(1000);
    expect(got[0]!.text.length).toBeLessThan(huge.text.length);
    expect(huge.text.startsWith(got[0]!.text)).toBe(true);
  });

  it('scores are cosine similarities (self ≈ 1, opposite ≈ -1), best first', async () => {
    const v = randomVector(r);
    const neg = Float32Array.from(v, (x) => -x);
    await store.upsert([record('cos#v1#0', v), record('cos#v1#1', neg)]);
    const hits = await store.search({ vector: v, k: 5, scope: { tenant: 't1' }, filters: { document_id: 'cos' } });
    expect(hits.map((h) => h.chunk_id)).toEqual(['cos#v1#0', 'cos#v1#1']);
    expect(hits[0]!.score).toBeGreaterThan(0.999);
    expect(hits[1]!.score).toBeLessThan(-0.999);
    expect(hits[0]).toMatchObject({ document_id: 'cos', version: 1 });
  });

  it('replace: write the new version, delete the others (keepVersion), then delete the document', async () => {
    await store.upsert([0, 1, 2].map((i) => record(`doc"q\\x#v1#${i}`, randomVector(r))));
    await store.upsert([0, 1].map((i) => record(`doc"q\\x#v2#${i}`, randomVector(r))));
    expect(await store.count('doc"q\\x')).toBe(5);
    expect(await store.deleteDocument('doc"q\\x', 2)).toBe(3);
    expect(await store.count('doc"q\\x')).toBe(2);
    const hits = await store.search({ vector: randomVector(r), k: 10, scope: { tenant: 't1' }, filters: { document_id: 'doc"q\\x' } });
    expect(hits.map((h) => h.version)).toEqual([2, 2]);
    expect(await store.deleteDocument('doc"q\\x')).toBe(2);
    expect(await store.count('doc"q\\x')).toBe(0);
    expect(await store.deleteDocument('doc"q\\x')).toBe(0);
  });

  it('bulk deletes: several documents (some keeping a version) in one request each remove exactly their rows; again, none', async () => {
    // What the indexer's batch path sends: the deletes of a batch together (deleteDocuments), not one per document.
    const docs = ['bd"0', 'bd1', 'bd2', 'bd3'];
    for (const doc of docs) {
      await store.upsert([0, 1].map((i) => record(`${doc}#v1#${i}`, randomVector(r))));
      await store.upsert([0, 1, 2].map((i) => record(`${doc}#v2#${i}`, randomVector(r))));
    }
    await store.upsert([record('bdkeep#v1#0', randomVector(r))]);
    const ask = [{ documentId: 'bd"0', keepVersion: 2 }, { documentId: 'bd1', keepVersion: 2 }, { documentId: 'bd2' }, { documentId: 'bd3' }];
    expect(await store.deleteDocuments(ask)).toBe(2 + 2 + 5 + 5);
    expect([await store.count('bd"0'), await store.count('bd1'), await store.count('bd2'), await store.count('bd3'), await store.count('bdkeep')]).toEqual([3, 3, 0, 0, 1]);
    const hits = await store.search({ vector: randomVector(r), k: 20, scope: { tenant: 't1' }, filters: { document_id: { in: ['bd"0', 'bd1'] } } });
    expect(hits.map((h) => h.version)).toEqual([2, 2, 2, 2, 2, 2]);
    // Ids only (every version): one `in` expression.
    expect(await store.deleteDocuments([{ documentId: 'bd"0' }, { documentId: 'bd1' }, { documentId: 'bd2' }])).toBe(6);
    expect(await store.deleteDocuments(ask)).toBe(0); // a redelivery deletes nothing more
    expect(await store.count('bdkeep')).toBe(1);
  });

  it('filters and scope are applied inside the search: excluding the top hits still yields k matches', async () => {
    const q = randomVector(r);
    const recs: VectorRecord[] = [];
    // 30 very close neighbours in team x, 30 farther ones in team y, some in another tenant / restricted ACL.
    for (let i = 0; i < 30; i++) recs.push(record(`fx#v1#${i}`, near(q, r, 0.05), { metadata: { team: 'x' } }));
    for (let i = 0; i < 30; i++) recs.push(record(`fy#v1#${i}`, near(q, r, 0.8), { metadata: { team: 'y', year: 2000 + i } }));
    for (let i = 0; i < 10; i++) recs.push(record(`fo#v1#${i}`, near(q, r, 0.01), { tenant: 'other', metadata: { team: 'y' } }));
    for (let i = 0; i < 10; i++) recs.push(record(`fa#v1#${i}`, near(q, r, 0.01), { acl: ['g:secret'], metadata: { team: 'y' } }));
    await store.upsert(recs);

    const unfiltered = await store.search({ vector: q, k: 5, scope: { tenant: 't1' }, filters: { document_id: { in: ['fx', 'fy', 'fa'] } } });
    expect(unfiltered.every((h) => h.document_id === 'fx' || h.document_id === 'fa')).toBe(true);

    const y = await store.search({ vector: q, k: 5, scope: { tenant: 't1', principals: ['u:bob'] }, filters: { team: 'y' } });
    expect(y).toHaveLength(5);
    expect(y.every((h) => h.document_id === 'fy')).toBe(true);

    const secret = await store.search({ vector: q, k: 5, scope: { tenant: 't1', principals: ['g:secret'] }, filters: { team: 'y' } });
    expect(secret).toHaveLength(5);
    expect(secret.every((h) => h.document_id === 'fa')).toBe(true); // public fy rows are farther than the restricted ones

    const range = await store.search({ vector: q, k: 50, scope: { tenant: 't1' }, filters: { team: 'y', year: { gte: 2010, lt: 2015 } } });
    expect(range.map((h) => h.chunk_id).sort()).toEqual(['fy#v1#10', 'fy#v1#11', 'fy#v1#12', 'fy#v1#13', 'fy#v1#14']);

    const other = await store.search({ vector: q, k: 50, scope: { tenant: 'other' } });
    expect(other).toHaveLength(10);
  });

  it('the expression has exactly the semantics of matches() (randomised, typed metadata)', async () => {
    const KEYS = ['team', 'year', 'draft', 'tags'];
    const STRINGS = ['a', 'b', '5', 'true', '1', 'q"uote', 'back\\slash', '首都'];
    const value = (): MetadataValue => {
      switch (Math.floor(r() * 5)) {
        case 0:
          return STRINGS[Math.floor(r() * STRINGS.length)]!;
        case 1:
          return [0, 1, 5, 2.5, -3][Math.floor(r() * 5)]!;
        case 2:
          return r() < 0.5;
        case 3:
          return STRINGS.filter(() => r() < 0.35);
        default:
          return [1, 5, 2024][Math.floor(r() * 3)]!;
      }
    };
    const rows: VectorRecord[] = [];
    for (let i = 0; i < 150; i++) {
      const metadata: Record<string, MetadataValue> = {};
      for (const k of KEYS) if (r() < 0.75) metadata[k] = value();
      rows.push(
        record(`sem${i % 3}#v1#${i}`, randomVector(r), {
          tenant: 'sem',
          acl: [['*'], ['g1'], ['g2', 'u1'], []][Math.floor(r() * 4)]!,
          metadata,
        }),
      );
    }
    await store.upsert(rows);
    const client = new MilvusClient({ address: ADDRESS, timeout: 20_000, logLevel: 'error' });
    client.connectPromise.catch(() => undefined);
    try {
      const scalar = (): string | number | boolean => {
        const c = Math.floor(r() * 3);
        return c === 0 ? STRINGS[Math.floor(r() * STRINGS.length)]! : c === 1 ? [0, 1, 5, 2.5, 2024][Math.floor(r() * 5)]! : r() < 0.5;
      };
      let checked = 0;
      let nonEmpty = 0;
      for (let i = 0; i < 80; i++) {
        const scope: SearchScope = r() < 0.3 ? { tenant: 'sem' } : { tenant: 'sem', principals: [[], ['g1'], ['u1', 'g3']][Math.floor(r() * 3)]! };
        const filters: Filters = {};
        const n = 1 + Math.floor(r() * 2);
        for (let j = 0; j < n; j++) {
          const key = KEYS[Math.floor(r() * KEYS.length)]!;
          const kind = Math.floor(r() * 4);
          if (kind <= 1) filters[key] = scalar();
          else if (kind === 2) filters[key] = { in: Array.from({ length: 1 + Math.floor(r() * 3) }, () => { const v = scalar(); return typeof v === 'boolean' ? String(v) : v; }) };
          else filters[key] = r() < 0.5 ? { gte: [0, 1, 2.5][Math.floor(r() * 3)]!, lt: [5, 2024][Math.floor(r() * 2)]! } : { gt: 0, lte: 5 };
        }
        if (r() < 0.2) filters['document_id'] = r() < 0.5 ? 'sem1' : { in: ['sem0', 'sem2'] };
        const expected = rows.filter((row) => matches(row, scope, filters)).map((row) => row.chunk_id).sort();
        const expr = buildMilvusExpr(scope, filters);
        let actual: string[] = [];
        if (expr !== null) {
          const res = await client.query({
            collection_name: store.collection,
            expr,
            output_fields: ['chunk_id'],
            limit: 1000,
            consistency_level: ConsistencyLevelEnum.Strong,
          });
          expect(res.status.error_code, `${expr}: ${res.status.reason}`).toBe('Success');
          actual = res.data.map((d) => String((d as Record<string, unknown>)['chunk_id'])).sort();
        }
        expect(actual, `filters ${JSON.stringify(filters)} scope ${JSON.stringify(scope)} expr ${expr}`).toEqual(expected);
        checked++;
        if (expected.length > 0) nonEmpty++;
      }
      expect(checked).toBe(80);
      expect(nonEmpty).toBeGreaterThan(15);
    } finally {
      client.closeConnection();
    }
  });

  it('sealing segments, and search latency (logged, not asserted)', async () => {
    const bulk = Array.from({ length: 2000 }, (_, i) => record(`lat${i % 50}#v1#${i}`, randomVector(r), { metadata: { team: i % 2 ? 'x' : 'y', n: i } }));
    const t0 = performance.now();
    await store.upsert(bulk);
    const upsertMs = performance.now() - t0;
    const t1 = performance.now();
    await store.sealSegments();
    const flushMs = performance.now() - t1;
    const plain: number[] = [];
    const filtered: number[] = [];
    for (let i = 0; i < 40; i++) {
      const q = randomVector(r);
      let s = performance.now();
      expect(await store.search({ vector: q, k: 10, scope: { tenant: 't1' } })).toHaveLength(10);
      plain.push(performance.now() - s);
      s = performance.now();
      const hits = await store.search({ vector: q, k: 10, scope: { tenant: 't1', principals: ['g1'] }, filters: { team: 'x', n: { gte: 100 } } });
      filtered.push(performance.now() - s);
      expect(hits).toHaveLength(10);
    }
    const bounded = new MilvusVectorStore({
      address: ADDRESS,
      modelId: `infra-${indexType.toLowerCase()}-${runId}`,
      dim: DIM,
      indexType,
      collectionPrefix: 'rag_infra',
      consistencyLevel: 'Bounded',
    });
    const boundedMs: number[] = [];
    try {
      await bounded.count();
      for (let i = 0; i < 40; i++) {
        const s = performance.now();
        await bounded.search({ vector: randomVector(r), k: 10, scope: { tenant: 't1' } });
        boundedMs.push(performance.now() - s);
      }
    } finally {
      await bounded.close();
    }
    console.log(
      `[milvus ${indexType}] ${await store.count()} rows; upsert 2000: ${upsertMs.toFixed(0)} ms; flush: ${flushMs.toFixed(0)} ms; ` +
        `search k=10 (Strong) median ${median(plain).toFixed(1)} ms p90 ${percentile(plain, 0.9).toFixed(1)} ms; ` +
        `filtered (ACL+eq+range) median ${median(filtered).toFixed(1)} ms p90 ${percentile(filtered, 0.9).toFixed(1)} ms; ` +
        `Bounded median ${median(boundedMs).toFixed(1)} ms p90 ${percentile(boundedMs, 0.9).toFixed(1)} ms`,
    );
  });
});
