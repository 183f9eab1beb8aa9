/**
 * OpenSearchKeywordIndex against a real OpenSearch 2.19 at RAG_OPENSEARCH_URL (default http://127.0.0.1:9200).
 * Start it first: `bash deploy/local/servers.sh start opensearch`. Every run uses a fresh index prefix and deletes its
 * indexes afterwards.
 *
 * Covers: first-use index + aliases, idempotent upsert, replace (keepVersion) and delete, count, getChunks (children,
 * parents, >512-byte ids); scope + filters inside the query (k matches even when the best BM25 hits are excluded);
 * the filter translation against `matches()` over a randomised typed data set; Chinese search through `text_seg`
 * (首都); English stemming; ranking parity with the embedded BM25 index on Cranfield and CMRC 2018; blue/green reindex. Logs
 * search latency.
 *
 * The Elasticsearch adapter shares all of this code except its transport; no Elasticsearch server can run here.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { testChunk, type Chunk, type Filters, type MetadataValue, type SearchScope } from '@rag/contracts';
import { matches, seededRandom as rng } from '@rag/domain';
import { setLogLevel } from '@rag/platform';
import { EmbeddedBm25KeywordIndex } from '../../libs/adapters/src/embedded-bm25';
import { OpenSearchKeywordIndex } from '../../libs/adapters/src/opensearch';

setLogLevel('warn');

const URL = process.env['RAG_OPENSEARCH_URL'] ?? 'http://127.0.0.1:9200';
const runId = randomBytes(4).toString('hex');
const EVAL = path.resolve(__dirname, '../../../shared/eval');
const CRANFIELD = path.join(EVAL, 'cranfield');
const CMRC = path.join(EVAL, 'cmrc2018-trial');

const chunk = (id: string, over: Partial<Chunk> = {}): Chunk => testChunk(id, { tenant: 't1', text: 'placeholder', ...over });

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(s.length * p))]!;
}

describe('OpenSearchKeywordIndex on a real OpenSearch', () => {
  let index: OpenSearchKeywordIndex;
  const prefix = `rag-infra-${runId}`;

  beforeAll(() => {
    index = new OpenSearchKeywordIndex({ node: URL, prefix, timeoutMs: 30_000 });
  });

  afterAll(async () => {
    if (!index) return;
    await index.dropAll();
    await index.close();
  });

  it('creates the first physical index with read and write aliases', async () => {
    expect(await index.ensureIndex()).toBe(`${prefix}-v1`);
    expect(await index.count()).toBe(0);
  });

  it('upsert is idempotent and immediately searchable; getChunks returns the stored chunks', async () => {
    const cs = [0, 1, 2].map((i) => chunk(`idem#v1#${i}`, { title: 'Idempotency', text: `quokka number ${i}`, metadata: { i } }));
    const parent = chunk('idem#v1#100', { kind: 'parent', text: 'quokka quokka quokka parent text' });
    await index.upsert([...cs, parent]);
    await index.upsert([...cs, parent]);
    expect(await index.count('idem')).toBe(4);
    const hits = await index.search({ query: 'quokka', k: 10, scope: { tenant: 't1' } });
    expect(hits.map((h) => h.chunk_id).sort()).toEqual(['idem#v1#0', 'idem#v1#1', 'idem#v1#2']); // parent not searchable
    expect(hits[0]).toMatchObject({ document_id: 'idem', version: 1 });
    expect(hits[0]!.score).toBeGreaterThan(0);
    const got = await index.getChunks(['idem#v1#2', 'missing#v1#0', 'idem#v1#100', 'idem#v1#2']);
    expect(got).toEqual([cs[2], parent]);
  });

  it('bulk ingestion: one upsert of many documents (several _bulk requests) is searchable at once; a redelivery duplicates nothing', async () => {
    // What the indexer's batch path sends: the chunks of 25 documents (6 each) in one call; bulkBatchSize 40 cuts it
    // into four `_bulk` requests followed by one refresh.
    const bulk = new OpenSearchKeywordIndex({ node: URL, prefix, timeoutMs: 30_000, bulkBatchSize: 40 });
    try {
      const docs = Array.from({ length: 25 }, (_, d) => `bulk${d}`);
      const cs = docs.flatMap((doc) => Array.from({ length: 6 }, (_, i) => chunk(`${doc}#v1#${i}`, { text: `numbat ${doc} part ${i}` })));
      await bulk.upsert(cs);
      await bulk.upsert(cs);
      for (const doc of docs) expect(await index.count(doc), doc).toBe(6);
      const hits = await index.search({ query: 'numbat', k: 200, scope: { tenant: 't1' } });
      expect(hits).toHaveLength(150);
      expect(new Set(hits.map((h) => h.chunk_id)).size).toBe(150);
    } finally {
      await bulk.close();
    }
  });

  it('chunk ids longer than 512 bytes round-trip', async () => {
    const long = chunk(`${'長'.repeat(200)}#v1#0`, { text: 'wombat burrow' });
    await index.upsert([long]);
    const hits = await index.search({ query: 'wombat', k: 5, scope: { tenant: 't1' } });
    expect(hits.map((h) => h.chunk_id)).toEqual([long.chunk_id]);
    expect(await index.getChunks([long.chunk_id])).toEqual([long]);
  });

  it('replace: new version written, older versions deleted (keepVersion), then the whole document', async () => {
    const id = 'doc"q\\x';
    await index.upsert([0, 1, 2].map((i) => chunk(`${id}#v1#${i}`, { text: 'platypus old version' })));
    await index.upsert([0, 1].map((i) => chunk(`${id}#v2#${i}`, { text: 'platypus new version' })));
    expect(await index.count(id)).toBe(5);
    expect(await index.deleteDocument(id, 2)).toBe(3);
    expect(await index.count(id)).toBe(2);
    const hits = await index.search({ query: 'platypus', k: 10, scope: { tenant: 't1' } });
    expect(hits.map((h) => h.version)).toEqual([2, 2]);
    expect(await index.deleteDocument(id)).toBe(2);
    expect(await index.count(id)).toBe(0);
    expect(await index.search({ query: 'platypus', k: 10, scope: { tenant: 't1' } })).toEqual([]);
  });

  it('bulk deletes: several documents (some keeping a version) in one _delete_by_query remove exactly their chunks', async () => {
    // A word no other case of this file indexes (the index is shared by the file's cases; 'wombat', 'quokka' and 'numbat' are in others).
    const docs = ['bd"0', 'bd1', 'bd2', 'bd3'];
    for (const doc of docs) {
      await index.upsert([0, 1].map((i) => chunk(`${doc}#v1#${i}`, { text: 'bilby old version' })));
      await index.upsert([0, 1, 2].map((i) => chunk(`${doc}#v2#${i}`, { text: 'bilby new version' })));
    }
    await index.upsert([chunk('bdkeep#v1#0', { text: 'bilby kept' })]);
    const ask = [{ documentId: 'bd"0', keepVersion: 2 }, { documentId: 'bd1', keepVersion: 2 }, { documentId: 'bd2' }, { documentId: 'bd3' }];
    expect(await index.deleteDocuments(ask)).toBe(2 + 2 + 5 + 5);
    expect([await index.count('bd"0'), await index.count('bd1'), await index.count('bd2'), await index.count('bd3'), await index.count('bdkeep')]).toEqual([3, 3, 0, 0, 1]);
    // Searchable at once (the delete refreshes): only the kept versions and the untouched document are found.
    const hits = await index.search({ query: 'bilby', k: 20, scope: { tenant: 't1' } });
    expect(hits.map((h) => `${h.document_id}@${h.version}`).sort()).toEqual(['bd"0@2', 'bd"0@2', 'bd"0@2', 'bd1@2', 'bd1@2', 'bd1@2', 'bdkeep@1']);
    // Ids only (every version): one terms query.
    expect(await index.deleteDocuments([{ documentId: 'bd"0' }, { documentId: 'bd1' }, { documentId: 'bd2' }])).toBe(6);
    expect(await index.deleteDocuments(ask)).toBe(0);
    expect(await index.count('bdkeep')).toBe(1);
  });

  it('scope and filters are inside the query: excluding the best hits still yields k matches', async () => {
    const cs: Chunk[] = [];
    for (let i = 0; i < 20; i++) cs.push(chunk(`fx#v1#${i}`, { text: 'narwhal narwhal narwhal narwhal tusk', metadata: { team: 'x' } }));
    for (let i = 0; i < 20; i++) cs.push(chunk(`fy#v1#${i}`, { text: `narwhal and many other unrelated words about the sea number ${i}`, metadata: { team: 'y', year: 2000 + i } }));
    for (let i = 0; i < 5; i++) cs.push(chunk(`fo#v1#${i}`, { tenant: 'other', text: 'narwhal narwhal narwhal narwhal narwhal', metadata: { team: 'y' } }));
    for (let i = 0; i < 5; i++) cs.push(chunk(`fa#v1#${i}`, { acl: ['g:secret'], text: 'narwhal narwhal narwhal narwhal narwhal', metadata: { team: 'y' } }));
    await index.upsert(cs);

    const top = await index.search({ query: 'narwhal', k: 5, scope: { tenant: 't1' } });
    expect(top.every((h) => h.document_id === 'fa' || h.document_id === 'fx')).toBe(true);

    const y = await index.search({ query: 'narwhal', k: 5, scope: { tenant: 't1', principals: ['u:bob'] }, filters: { team: 'y' } });
    expect(y).toHaveLength(5);
    expect(y.every((h) => h.document_id === 'fy')).toBe(true);

    const secret = await index.search({ query: 'narwhal', k: 5, scope: { tenant: 't1', principals: ['g:secret'] }, filters: { team: 'y' } });
    expect(secret.map((h) => h.document_id)).toEqual(['fa', 'fa', 'fa', 'fa', 'fa']);

    const range = await index.search({ query: 'narwhal', k: 50, scope: { tenant: 't1' }, filters: { year: { gte: 2010, lt: 2015 } } });
    expect(range.map((h) => h.chunk_id).sort()).toEqual(['fy#v1#10', 'fy#v1#11', 'fy#v1#12', 'fy#v1#13', 'fy#v1#14']);

    const other = await index.search({ query: 'narwhal', k: 50, scope: { tenant: 'other' } });
    expect(other).toHaveLength(5);
    expect(await index.search({ query: 'narwhal', k: 5, scope: { tenant: 't1' }, filters: { document_id: 3 } })).toEqual([]);
  });

  it('filters have exactly the semantics of matches() (randomised, typed metadata)', async () => {
    const r = rng(99);
    const KEYS = ['team', 'year', 'draft', 'tags', 'a.b'];
    const STRINGS = ['a', 'b', '5', 'true', '1', 'q"uote', '首都'];
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
    const rows: Chunk[] = [];
    for (let i = 0; i < 150; i++) {
      const metadata: Record<string, MetadataValue> = {};
      for (const k of KEYS) if (r() < 0.75) metadata[k] = value();
      rows.push(chunk(`sem${i % 3}#v1#${i}`, { tenant: 'sem', acl: [['*'], ['g1'], ['g2', 'u1'], []][Math.floor(r() * 4)]!, text: 'semantics probe', metadata }));
    }
    await index.upsert(rows);
    const scalar = (): string | number | boolean => {
      const c = Math.floor(r() * 3);
      return c === 0 ? STRINGS[Math.floor(r() * STRINGS.length)]! : c === 1 ? [0, 1, 5, 2.5, 2024][Math.floor(r() * 5)]! : r() < 0.5;
    };
    let nonEmpty = 0;
    for (let i = 0; i < 80; i++) {
      const scope: SearchScope = r() < 0.3 ? { tenant: 'sem' } : { tenant: 'sem', principals: [[], ['g1'], ['u1', 'g3']][Math.floor(r() * 3)]! };
      const filters: Filters = {};
      const n = 1 + Math.floor(r() * 2);
      for (let j = 0; j < n; j++) {
        const key = KEYS[Math.floor(r() * KEYS.length)]!;
        const kind = Math.floor(r() * 4);
        if (kind <= 1) filters[key] = scalar();
        else if (kind === 2) {
          filters[key] = {
            in: Array.from({ length: 1 + Math.floor(r() * 3) }, () => {
              const v = scalar();
              return typeof v === 'boolean' ? String(v) : v;
            }),
          };
        } else filters[key] = r() < 0.5 ? { gte: [0, 1, 2.5][Math.floor(r() * 3)]!, lt: [5, 2024][Math.floor(r() * 2)]! } : { gt: 0, lte: 5 };
      }
      if (r() < 0.2) filters['document_id'] = r() < 0.5 ? 'sem1' : { in: ['sem0', 'sem2'] };
      const expected = rows.filter((row) => matches(row, scope, filters)).map((row) => row.chunk_id).sort();
      const hits = await index.search({ query: 'semantics', k: 500, scope, filters });
      expect(hits.map((h) => h.chunk_id).sort(), `filters ${JSON.stringify(filters)} scope ${JSON.stringify(scope)}`).toEqual(expected);
      if (expected.length > 0) nonEmpty++;
    }
    expect(nonEmpty).toBeGreaterThan(15);
  });

  it('Chinese through text_seg: 首都', async () => {
    await index.upsert([
      chunk('zh1#v1#0', { tenant: 'zh', title: '北京', text: '北京是中华人民共和国的首都，也是全国的政治和文化中心。' }),
      chunk('zh2#v1#0', { tenant: 'zh', title: '上海', text: '上海是中国最大的城市和经济中心。' }),
      chunk('zh3#v1#0', { tenant: 'zh', title: '巴黎', text: '巴黎是法国的首都。' }),
    ]);
    // 中华人民共和国 is one word for the segmenter (as in embedded mode), so the query must use it to prefer zh1.
    const hits = await index.search({ query: '中华人民共和国的首都是哪里', k: 5, scope: { tenant: 'zh' } });
    expect(hits[0]!.document_id).toBe('zh1');
    expect(hits.map((h) => h.document_id).sort()).toEqual(['zh1', 'zh3']);
    const capital = await index.search({ query: '首都', k: 5, scope: { tenant: 'zh' } });
    expect(capital.map((h) => h.document_id).sort()).toEqual(['zh1', 'zh3']);
  });

  it('English stemming: plurals and -ing/-ed forms match, like the embedded index', async () => {
    await index.upsert([
      chunk('en1#v1#0', { tenant: 'en', text: 'The wings were tested at supersonic speeds.' }),
      chunk('en2#v1#0', { tenant: 'en', text: 'Boundary layer transition on a flat plate.' }),
    ]);
    for (const q of ['wing', 'testing wing', 'WINGS tested']) {
      const hits = await index.search({ query: q, k: 5, scope: { tenant: 'en' } });
      expect(hits.map((h) => h.document_id), q).toEqual(['en1']);
    }
    expect((await index.search({ query: 'plates', k: 5, scope: { tenant: 'en' } })).map((h) => h.document_id)).toEqual(['en2']);
  });

  /** Indexes a BEIR corpus into OpenSearch and the embedded BM25 index and compares their top-10 for its queries. */
  async function parity(dir: string, label: string, maxQueries: number): Promise<{ overlap: number; top1: number }> {
    const read = (file: string) =>
      fs
        .readFileSync(path.join(dir, file), 'utf8')
        .split('\n')
        .filter((l) => l.trim());
    const corpus = read('corpus.jsonl').map((l) => JSON.parse(l) as { _id: string; title?: string; text: string });
    const queries = read('queries.jsonl')
      .slice(0, maxQueries)
      .map((l) => (JSON.parse(l) as { text: string }).text);
    const chunks = corpus.map((d) => chunk(`${label}:${d._id}#v1#0`, { tenant: label, title: d.title ?? '', text: d.text }));

    const os1 = new OpenSearchKeywordIndex({ node: URL, prefix: `${prefix}-${label}`, timeoutMs: 60_000 });
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rag-bm25-parity-'));
    const embedded = new EmbeddedBm25KeywordIndex({ dir: tmp, synchronous: 'NORMAL' });
    try {
      const t0 = performance.now();
      await os1.upsert(chunks);
      const indexMs = performance.now() - t0;
      await embedded.upsert(chunks);
      const overlaps: number[] = [];
      let sameTop1 = 0;
      const latencies: number[] = [];
      const filteredLatencies: number[] = [];
      for (const q of queries) {
        const s = performance.now();
        const a = await os1.search({ query: q, k: 10, scope: { tenant: label } });
        latencies.push(performance.now() - s);
        const b = await embedded.search({ query: q, k: 10, scope: { tenant: label } });
        const setB = new Set(b.map((h) => h.chunk_id));
        overlaps.push(b.length === 0 && a.length === 0 ? 1 : a.filter((h) => setB.has(h.chunk_id)).length / Math.max(1, Math.min(10, b.length)));
        if (a[0]?.chunk_id === b[0]?.chunk_id) sameTop1++;
        const s2 = performance.now();
        await os1.search({ query: q, k: 10, scope: { tenant: label, principals: ['g1'] }, filters: { document_id: { in: [`${label}:1`, `${label}:2`] } } });
        filteredLatencies.push(performance.now() - s2);
      }
      const overlap = overlaps.reduce((x, y) => x + y, 0) / overlaps.length;
      console.log(
        `[opensearch] ${label}: ${chunks.length} chunks indexed in ${indexMs.toFixed(0)} ms; ${queries.length} queries k=10: ` +
          `median ${median(latencies).toFixed(1)} ms p90 ${percentile(latencies, 0.9).toFixed(1)} ms; ` +
          `with ACL+document_id filters median ${median(filteredLatencies).toFixed(1)} ms; ` +
          `top-10 overlap with embedded BM25 ${(overlap * 100).toFixed(1)}%, same top-1 ${sameTop1}/${queries.length}`,
      );
      return { overlap, top1: sameTop1 / queries.length };
    } finally {
      await os1.dropAll();
      await os1.close();
      await embedded.close();
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  }

  // Same tokens, same BM25 formula and k1/b; differences come only from Lucene's lossy (1-byte) length norms.
  it.skipIf(!fs.existsSync(path.join(CRANFIELD, 'corpus.jsonl')))('English: ranks Cranfield like the embedded BM25 index (and logs latency)', async () => {
    const { overlap, top1 } = await parity(CRANFIELD, 'cran', 1000);
    expect(overlap).toBeGreaterThan(0.85);
    expect(top1).toBeGreaterThan(0.8);
  });

  it.skipIf(!fs.existsSync(path.join(CMRC, 'corpus.jsonl')))('Chinese: ranks CMRC 2018 like the embedded BM25 index (and logs latency)', async () => {
    const { overlap, top1 } = await parity(CMRC, 'cmrc', 300);
    expect(overlap).toBeGreaterThan(0.85);
    expect(top1).toBeGreaterThan(0.8);
  });

  it('blue/green: reindex into v2 and swap aliases; data and search survive', async () => {
    const before = await index.count();
    const summary = await index.reindexAndSwap({ deleteOld: true });
    expect(summary).toMatchObject({ from: `${prefix}-v1`, to: `${prefix}-v2`, deletedOld: true });
    expect(summary.copied).toBe(before);
    expect(await index.count()).toBe(before);
    expect((await index.search({ query: '首都', k: 5, scope: { tenant: 'zh' } })).length).toBe(2);
    await index.upsert([chunk('after#v1#0', { text: 'axolotl' })]);
    expect((await index.search({ query: 'axolotl', k: 5, scope: { tenant: 't1' } })).map((h) => h.chunk_id)).toEqual(['after#v1#0']);
  });
});
