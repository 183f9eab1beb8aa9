import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import type { Chunk, FilterCondition, Filters, Metadata, SearchScope } from '@rag/contracts';
import { matches, seededRandom as rng } from '@rag/domain';
import { EmbeddedBm25KeywordIndex, type EmbeddedBm25KeywordIndexOptions, type KeywordSearchStats } from './embedded-bm25.adapter';
import { testChunkOf } from '@rag/contracts';

const chunk = (doc: string, version: number, ordinal: number, text: string, extra: Partial<Chunk> = {}): Chunk =>
  testChunkOf(doc, version, ordinal, { tenant: 't1', text, token_count: text.length, ...extra });

const scope: SearchScope = { tenant: 't1' };

describe('EmbeddedBm25KeywordIndex', () => {
  let dir: string;
  const open: EmbeddedBm25KeywordIndex[] = [];
  const make = (o: Partial<EmbeddedBm25KeywordIndexOptions> = {}, at = dir): EmbeddedBm25KeywordIndex => {
    const s = new EmbeddedBm25KeywordIndex({ dir: at, synchronous: 'NORMAL', ...o });
    open.push(s);
    return s;
  };
  const search = async (s: EmbeddedBm25KeywordIndex, query: string, k = 10, sc: SearchScope = scope, filters?: Filters) =>
    (await s.search({ query, k, scope: sc, filters })).map((h) => h.chunk_id);

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bm25-spec-'));
  });
  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('writes a large batch in runs of whole documents, letting other work run between them', async () => {
    const s = make();
    const batch = Array.from({ length: 40 }, (_, d) => [0, 1, 2].map((o) => chunk(`doc${d}`, 1, o, `flutter of swept wings number ${d} part ${o}`))).flat();
    const seen: number[] = [];
    let writing = true;
    const poll = (): void => {
      if (!writing) return; // never read after the write (the store is closed after the test)
      void s.count().then((n) => {
        seen.push(n);
        setImmediate(poll);
      });
    };
    setImmediate(poll);
    await s.upsert(batch);
    writing = false;
    expect(await s.count()).toBe(batch.length);
    const partial = seen.filter((n) => n > 0 && n < batch.length);
    expect(partial.length).toBeGreaterThan(0); // read between runs
    expect(partial.every((n) => n % 3 === 0)).toBe(true); // never part of a document
  });

  it('a run ends as if its chunks were written one by one: a repeated id, a replaced chunk, an unchanged replay', async () => {
    const words = ['flutter', 'wing', 'shock', 'boundary', 'layer', 'heat', 'transfer', 'nozzle', 'panel', 'cone'];
    const random = rng(13);
    const text = (n: number) => Array.from({ length: n }, () => words[Math.floor(random() * words.length)]).join(' ');
    const first = Array.from({ length: 30 }, (_, d) => [0, 1].map((o) => chunk(`doc${d}`, 1, o, text(6 + ((d + o) % 9))))).flat();
    const second = [
      ...first.slice(0, 10), // unchanged replays
      ...first.slice(10, 20).map((c) => ({ ...c, text: text(12) })), // replaced
      chunk('doc99', 1, 0, text(5)),
      chunk('doc99', 1, 0, text(7)), // the same id twice in one run: the later wins
      ...Array.from({ length: 30 }, (_, d) => chunk(`new${d}`, 1, 0, text(4 + (d % 6)))),
    ];
    const batched = make({}, path.join(dir, 'runs'));
    const single = make({}, path.join(dir, 'single'));
    await batched.upsert(first);
    await batched.upsert(second);
    for (const c of [...first, ...second]) await single.upsert([c]);
    expect(await batched.count()).toBe(await single.count());
    const db = (s: EmbeddedBm25KeywordIndex) => new Database(s.file, { readonly: true });
    for (const sql of [
      'SELECT term, df FROM terms ORDER BY term',
      'SELECT t.term, b.block, b.max_tf, b.min_len, b.n FROM blocks b JOIN terms t ON t.id = b.term_id ORDER BY t.term, b.block',
      'SELECT docs, total_len FROM stats',
    ]) {
      const [a, b] = [db(batched), db(single)];
      expect(a.prepare(sql).all()).toEqual(b.prepare(sql).all());
      a.close();
      b.close();
    }
    for (const q of ['flutter wing', 'shock boundary layer', 'heat transfer nozzle', 'panel cone wing flutter']) {
      expect(await batched.search({ query: q, k: 10, scope })).toEqual(await single.search({ query: q, k: 10, scope }));
    }
  });

  it('returns [] for an empty index, a stop-word-only query, unknown terms and k <= 0', async () => {
    const s = make();
    expect(await search(s, 'wing')).toEqual([]);
    await s.upsert([chunk('a', 1, 0, 'the wing of the aircraft')]);
    expect(await search(s, 'the of and')).toEqual([]);
    expect(await search(s, '')).toEqual([]);
    expect(await search(s, 'zeppelin')).toEqual([]);
    expect(await search(s, 'wing', 0)).toEqual([]);
    expect(await search(s, 'wing')).toEqual(['a#v1#0']);
  });

  it('computes Lucene-style BM25 with the configured k1 and b', async () => {
    const s = make();
    await s.upsert([chunk('d1', 1, 0, 'apple banana'), chunk('d2', 1, 0, 'apple apple cherry'), chunk('d3', 1, 0, 'durian')]);
    // N = 3, avgdl = 2, df(apple) = 2.
    const idf = Math.log(1 + (3 - 2 + 0.5) / (2 + 0.5));
    const bm25 = (tf: number, dl: number, k1: number, b: number) => (idf * tf) / (tf + k1 * (1 - b + (b * dl) / 2));
    const hits = await s.search({ query: 'apple', k: 10, scope });
    expect(hits.map((h) => h.chunk_id)).toEqual(['d2#v1#0', 'd1#v1#0']);
    expect(hits[0]!.score).toBeCloseTo(bm25(2, 3, 0.9, 0.4), 10);
    expect(hits[1]!.score).toBeCloseTo(bm25(1, 2, 0.9, 0.4), 10);
    expect(hits[0]).toMatchObject({ document_id: 'd2', version: 1 });
    await s.close();
    // Integral k1/b must not turn the SQL arithmetic into integer division.
    const s2 = make({ k1: 2, b: 1 });
    const hits2 = await s2.search({ query: 'apple', k: 10, scope });
    expect(hits2[0]!.score).toBeCloseTo(bm25(2, 3, 2, 1), 10);
    expect(hits2[1]!.score).toBeCloseTo(bm25(1, 2, 2, 1), 10);
    // A query term repeated counts twice; two terms add up.
    const twice = await s2.search({ query: 'apple apple', k: 1, scope });
    expect(twice[0]!.score).toBeCloseTo(2 * bm25(2, 3, 2, 1), 10);
  });

  it('stems English: "wings" finds "wing" and vice versa', async () => {
    const s = make();
    await s.upsert([
      chunk('a', 1, 0, 'Pressure distribution over a swept wing at supersonic speed.'),
      chunk('b', 1, 0, 'Flutter of delta wings and their testing in the tunnel.'),
      chunk('c', 1, 0, 'Boundary layer transition on a flat plate.'),
    ]);
    expect((await search(s, 'wings')).sort()).toEqual(['a#v1#0', 'b#v1#0']);
    expect((await search(s, 'wing')).sort()).toEqual(['a#v1#0', 'b#v1#0']);
    expect(await search(s, 'tested')).toEqual(['b#v1#0']);
  });

  it('segments Chinese: 首都 finds the capital sentences', async () => {
    const s = make();
    await s.upsert([
      chunk('bj', 1, 0, '北京是中国的首都，也是政治和文化中心。'),
      chunk('tk', 1, 0, '东京是日本的首都。'),
      chunk('sh', 1, 0, '上海是中国最大的经济中心城市。'),
      chunk('en', 1, 0, 'Paris is the capital of France.'),
    ]);
    expect((await search(s, '首都')).sort()).toEqual(['bj#v1#0', 'tk#v1#0']);
    expect((await search(s, '中国的首都是哪里？'))[0]).toBe('bj#v1#0');
    expect(await search(s, '经济')).toEqual(['sh#v1#0']);
    expect(await search(s, 'capital')).toEqual(['en#v1#0']);
  });

  it('indexes title and heading path with the text', async () => {
    const s = make();
    await s.upsert([
      chunk('a', 1, 0, 'Some body text.', { title: 'Hypersonic Inlets', heading_path: ['Design', 'Boundary bleed'] }),
      chunk('b', 1, 0, 'Other text.'),
    ]);
    expect(await search(s, 'hypersonic')).toEqual(['a#v1#0']);
    expect(await search(s, 'bleed')).toEqual(['a#v1#0']);
  });

  it('is idempotent: the same chunk twice changes neither the count nor the scores', async () => {
    const s = make();
    const cs = [chunk('a', 1, 0, 'wing flutter'), chunk('b', 1, 0, 'wing stall at low speed')];
    await s.upsert(cs);
    const before = await s.search({ query: 'wing flutter', k: 10, scope });
    await s.upsert(cs);
    await s.upsert([cs[0]!, cs[0]!]);
    expect(await s.count()).toBe(2);
    expect(await s.search({ query: 'wing flutter', k: 10, scope })).toEqual(before);
  });

  it('replaces a chunk whose content changed under the same chunk_id', async () => {
    const s = make();
    await s.upsert([chunk('a', 1, 0, 'supersonic nozzle'), chunk('b', 1, 0, 'subsonic nozzle')]);
    await s.upsert([chunk('a', 1, 0, 'hypersonic inlet')]);
    expect(await s.count()).toBe(2);
    expect(await search(s, 'supersonic')).toEqual([]);
    expect(await search(s, 'nozzle')).toEqual(['b#v1#0']);
    expect(await search(s, 'inlet')).toEqual(['a#v1#0']);
  });

  it('replaces a document version (write v2, delete all but v2) with statistics identical to a fresh index', async () => {
    const s = make();
    await s.upsert([chunk('doc', 1, 0, 'old shock wave text'), chunk('doc', 1, 1, 'old shock tube text'), chunk('x', 1, 0, 'shock layer')]);
    const v2 = [chunk('doc', 2, 0, 'new shock wave interaction'), chunk('doc', 2, 1, 'new expansion fan')];
    await s.upsert(v2);
    expect(await s.deleteDocument('doc', 2)).toBe(2);
    expect(await s.count('doc')).toBe(2);
    const hits = await s.search({ query: 'old shock wave text tube', k: 10, scope });
    expect(hits.every((h) => h.version === 2 || h.document_id !== 'doc')).toBe(true);
    expect(hits.map((h) => h.chunk_id).sort()).toEqual(['doc#v2#0', 'x#v1#0']);
    expect(await search(s, 'old')).toEqual([]);

    const fresh = make({}, fs.mkdtempSync(path.join(dir, 'fresh-')));
    await fresh.upsert([chunk('x', 1, 0, 'shock layer'), ...v2]);
    expect(await s.search({ query: 'shock wave expansion', k: 10, scope })).toEqual(
      await fresh.search({ query: 'shock wave expansion', k: 10, scope }),
    );
    expect(await s.deleteDocument('doc', 2)).toBe(0);
  });

  it('deletes every chunk of a document, parents included', async () => {
    const s = make();
    await s.upsert([
      chunk('a', 1, 0, 'parent text about wings', { kind: 'parent' }),
      chunk('a', 1, 1, 'child about wings', { parent_id: 'a#v1#0' }),
      chunk('b', 1, 0, 'other wings'),
    ]);
    expect(await s.deleteDocument('a')).toBe(2);
    expect(await s.count()).toBe(1);
    expect(await search(s, 'wings')).toEqual(['b#v1#0']);
    expect(await s.getChunks(['a#v1#0', 'a#v1#1'])).toEqual([]);
    expect(await s.deleteDocument('nope')).toBe(0);
  });

  it('searches children only, stores parents, and round-trips full chunks in getChunks order', async () => {
    const s = make();
    const parent = chunk('a', 1, 0, 'Parent section: transonic buffet on wings.', {
      kind: 'parent',
      title: 'Buffet',
      heading_path: ['Ch 1'],
      source_url: 'https://example.com/a',
      metadata: { tags: ['x'], n: 1.5, ok: true },
      acl: ['g1', 'g2'],
    });
    const child = chunk('a', 1, 1, 'Transonic buffet.', { parent_id: 'a#v1#0', title: 'Buffet', heading_path: ['Ch 1'] });
    await s.upsert([parent, child]);
    expect(await search(s, 'wings')).toEqual([]); // only in the parent
    expect(await search(s, 'buffet')).toEqual(['a#v1#1']);
    expect(await s.getChunks(['a#v1#1', 'missing', 'a#v1#0', 'a#v1#1'])).toEqual([child, parent]);
    expect(await s.getChunks([])).toEqual([]);
    expect(await s.count()).toBe(2);
    expect(await s.count('a')).toBe(2);
    expect(await s.count('b')).toBe(0);
  });

  it('isolates tenants and enforces the ACL inside the query', async () => {
    const s = make();
    await s.upsert([
      chunk('t2', 1, 0, 'wing wing wing', { tenant: 't2' }),
      chunk('fin', 1, 0, 'wing wing', { acl: ['group:finance'] }),
      chunk('alice', 1, 0, 'wing report', { acl: ['user:alice'] }),
      chunk('pub', 1, 0, 'a long public text about one wing and many other things'),
    ]);
    const docs = async (sc: SearchScope, k = 10) => (await s.search({ query: 'wing', k, scope: sc })).map((h) => h.document_id).sort();
    expect(await docs({ tenant: 't1' })).toEqual(['alice', 'fin', 'pub']);
    expect(await docs({ tenant: 't2' })).toEqual(['t2']);
    expect(await docs({ tenant: 'zz' })).toEqual([]);
    expect(await docs({ tenant: 't1', principals: [] })).toEqual(['pub']);
    expect(await docs({ tenant: 't1', principals: ['user:alice'] })).toEqual(['alice', 'pub']);
    expect(await docs({ tenant: 't1', principals: ['user:bob', 'group:finance'] })).toEqual(['fin', 'pub']);
    // The best-scoring chunks are forbidden; k=1 still returns an allowed one.
    expect(await docs({ tenant: 't1', principals: ['user:nobody'] }, 1)).toEqual(['pub']);
  });

  it('applies metadata filters inside the query (eq, string[] contains, in, range, document_id)', async () => {
    const s = make();
    await s.upsert([
      chunk('a', 1, 0, 'wing', { metadata: { lang: 'en', tags: ['x', 'y', '5'], year: 2020, draft: true, 'x.y': 'dot' } }),
      chunk('b', 1, 0, 'wing', { metadata: { lang: 'zh', tags: ['y'], year: 2022, draft: false, ratio: 0.5 } }),
      chunk('c', 1, 0, 'wing', { metadata: { lang: 'en', tags: [], year: 2024, n: '2024', ratio: 1 } }),
      chunk('d', 1, 0, 'wing', { metadata: {} }),
    ]);
    const docs = async (filters: Filters) => (await s.search({ query: 'wing', k: 10, scope, filters })).map((h) => h.document_id).sort();
    expect(await docs({ lang: 'en' })).toEqual(['a', 'c']);
    expect(await docs({ tags: 'y' })).toEqual(['a', 'b']);
    expect(await docs({ tags: 5 })).toEqual(['a']); // string[] contains String(5)
    expect(await docs({ draft: true })).toEqual(['a']);
    expect(await docs({ draft: false })).toEqual(['b']);
    expect(await docs({ lang: { in: ['zh', 'fr'] } })).toEqual(['b']);
    expect(await docs({ tags: { in: ['x', 'z'] } })).toEqual(['a']);
    expect(await docs({ year: { in: [2022, 2024] } })).toEqual(['b', 'c']);
    expect(await docs({ year: { gte: 2022 } })).toEqual(['b', 'c']);
    expect(await docs({ year: { gt: 2020, lt: 2024 } })).toEqual(['b']);
    expect(await docs({ ratio: { lte: 0.5 } })).toEqual(['b']);
    expect(await docs({ ratio: 1 })).toEqual(['c']);
    expect(await docs({ year: 2024 })).toEqual(['c']);
    expect(await docs({ n: 2024 })).toEqual([]); // a string never equals a number
    expect(await docs({ n: { gte: 0 } })).toEqual([]); // ranges apply to numbers only
    expect(await docs({ 'x.y': 'dot' })).toEqual(['a']);
    expect(await docs({ document_id: 'c' })).toEqual(['c']);
    expect(await docs({ document_id: { in: ['a', 'd'] } })).toEqual(['a', 'd']);
    expect(await docs({ lang: 'en', year: { lt: 2021 } })).toEqual(['a']);
    expect(await docs({ missing: 'x' })).toEqual([]);
  });

  it('returns k matching results when a filter excludes the top BM25 hits', async () => {
    const s = make();
    const cs: Chunk[] = [];
    for (let i = 0; i < 30; i++) {
      // Lower i = more occurrences of "wing" = higher score.
      const text = `${'wing '.repeat(30 - i)}${'filler '.repeat(i)}`;
      cs.push(chunk(`d${i}`, 1, 0, text, { metadata: { group: i < 10 ? 'top' : 'rest' } }));
    }
    await s.upsert(cs);
    expect(await search(s, 'wing', 3)).toEqual(['d0#v1#0', 'd1#v1#0', 'd2#v1#0']);
    const hits = await search(s, 'wing', 5, scope, { group: 'rest' });
    expect(hits).toEqual(['d10#v1#0', 'd11#v1#0', 'd12#v1#0', 'd13#v1#0', 'd14#v1#0']);
  });

  it('filters exactly like matches() from @rag/domain (randomised)', async () => {
    const s = make();
    const r = rng(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const scalars = ['en', 'zh', 'a', '5', 5, 2020, 1.5, true, false] as const;
    const chunks: Chunk[] = [];
    for (let i = 0; i < 150; i++) {
      const metadata: Metadata = {};
      if (r() < 0.8) metadata.lang = pick(scalars);
      if (r() < 0.7) metadata.tags = ['a', 'b', '5', 'true', 'en'].filter(() => r() < 0.4);
      if (r() < 0.8) metadata.year = pick([2019, 2020, 2021, 2022.5, '2020']);
      if (r() < 0.5) metadata.flag = r() < 0.5;
      const acl = pick([['*'], ['g1'], ['g2'], ['g1', 'u1'], []]);
      chunks.push(chunk(`d${i % 40}`, 1, i, 'common text', { metadata, acl, tenant: r() < 0.75 ? 't1' : 't2' }));
    }
    await s.upsert(chunks);
    const cond = (): FilterCondition => {
      const x = r();
      if (x < 0.4) return pick(scalars);
      if (x < 0.7) return { in: ['en', 'a', '5', 5, 2020, 'd3', 'true'].filter(() => r() < 0.3).concat(['zz']) };
      const range: { gte?: number; gt?: number; lte?: number; lt?: number } = {};
      if (r() < 0.5) range.gte = pick([2019, 2020, 2021]);
      if (r() < 0.5) range.lt = pick([2021, 2022, 2023]);
      if (r() < 0.3) range.gt = pick([0, 2020]);
      if (Object.keys(range).length === 0) range.lte = 2020;
      return range;
    };
    for (let trial = 0; trial < 300; trial++) {
      const filters: Filters = {};
      const nkeys = r() < 0.6 ? 1 : r() < 0.5 ? 0 : 2;
      for (let j = 0; j < nkeys; j++) filters[r() < 0.05 ? 'missing' : pick(['lang', 'tags', 'year', 'flag'])] = cond();
      if (r() < 0.2) filters.document_id = pick(['d3', 'd4', { in: ['d1', 'd2', 'd3'] }, 3]);
      const sc: SearchScope = r() < 0.5 ? { tenant: 't1' } : { tenant: pick(['t1', 't2']), principals: pick([[], ['g1'], ['u1', 'g2'], ['zz']]) };
      const expected = chunks.filter((c) => matches(c, sc, filters)).map((c) => c.chunk_id).sort();
      const got = (await search(s, 'common', 1000, sc, filters)).sort();
      expect({ filters, sc, got }).toEqual({ filters, sc, got: expected });
    }
  });

  /** A Zipf-like vocabulary: a few very frequent words, a long tail of rare ones (as in real text). */
  /** Every block of a format-4 file: large ones from `blocks`, small ones from their `dirs` entries. */
  function allBlocks(db: Database.Database): Array<{ term_id: number; block: number; max_tf: number; small: boolean; data: Buffer }> {
    const out: Array<{ term_id: number; block: number; max_tf: number; small: boolean; data: Buffer }> = [];
    for (const b of db.prepare('SELECT term_id, block, max_tf, data FROM blocks').all() as Array<{ term_id: number; block: number; max_tf: number; data: Buffer }>) {
      out.push({ ...b, small: false });
    }
    for (const r of db.prepare('SELECT term_id, data FROM dirs').all() as Array<{ term_id: number; data: Buffer }>) {
      const w = new Uint32Array(Uint8Array.from(r.data).buffer);
      for (let j = 0; j < w.length; ) {
        const n = w[j + 2]! & 0x7fffffff;
        if (w[j + 2]! & 0x80000000) out.push({ term_id: r.term_id, block: w[j]!, max_tf: w[j + 1]!, small: true, data: Buffer.from(w.slice(j + 3, j + 3 + n).buffer) });
        j += 3 + n;
      }
    }
    return out;
  }
  const postingsIn = (db: Database.Database): number => allBlocks(db).reduce((n, b) => n + b.data.length / 8, 0);
  /** A format-4 file's `dirs` rows, in key order. */
  const dirRows = (file: string): unknown[] => {
    const db = new Database(file, { readonly: true });
    const rows = db.prepare('SELECT term_id, seg, data FROM dirs ORDER BY term_id, seg').all();
    db.close();
    return rows;
  };
  /**
   * Turns a closed format-4 file into what format 3 wrote: every block a `blocks` row (a small one with `sub` NULL), no
   * `dirs`. Returns the small blocks moved back.
   */
  function toFormat3(file: string): number {
    const raw = new Database(file);
    const put = raw.prepare('INSERT INTO blocks (term_id, block, max_tf, min_len, n, sub, data) VALUES (?, ?, ?, ?, ?, NULL, ?)');
    let small = 0;
    for (const b of allBlocks(raw)) {
      if (!b.small) continue;
      const w = new Uint32Array(Uint8Array.from(b.data).buffer);
      let minLen = Infinity;
      for (let j = 1; j < w.length; j += 2) minLen = Math.min(minLen, w[j]!);
      put.run(b.term_id, b.block, b.max_tf, minLen, w.length / 2, b.data);
      small++;
    }
    raw.exec('DROP TABLE dirs');
    raw.pragma('user_version = 3');
    raw.close();
    return small;
  }

  function zipfCorpus(n: number, seed: number, extra: (i: number) => Partial<Chunk> = () => ({})): Chunk[] {
    const r = rng(seed);
    const vocab = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}x`);
    const word = () => vocab[Math.min(vocab.length - 1, Math.floor(Math.exp(r() * Math.log(vocab.length + 1))) - 1)]!;
    return Array.from({ length: n }, (_, i) => {
      const len = 3 + Math.floor(r() * 40);
      return chunk(`z${i}`, 1, 0, Array.from({ length: len }, word).join(' '), extra(i));
    });
  }

  it('prunes: blocks whose bound cannot reach the k-th score are never read (block-max), same hits as the exhaustive evaluation', async () => {
    const s = make({ blockBits: 6 }); // 64 chunk ids per block: 47 blocks on this corpus
    const cs = zipfCorpus(3000, 11);
    // A rare term in 20 chunks, with the most frequent words of the corpus in the same query.
    for (let i = 0; i < 20; i++) cs[i * 137] = chunk(`z${i * 137}`, 1, 0, `${cs[i * 137]!.text} needle${i % 2 ? ' needle' : ''}`);
    await s.upsert(cs);
    const req = { query: 'needle w0x w1x w2x w3x', k: 5, scope };
    const { hits, stats } = s.searchWithStats(req);
    expect(hits).toHaveLength(5);
    expect(stats.terms).toBe(5);
    expect(stats.fullScans).toBeLessThan(stats.terms);
    expect(stats.blocksVisited).toBeLessThan(stats.blocksTotal / 2);
    expect(stats.postingsRead).toBeLessThan(stats.postingsTotal / 2);
    const exact = s.searchExhaustive(req);
    expect(hits.map((h) => h.chunk_id)).toEqual(exact.map((h) => h.chunk_id));
    hits.forEach((h, i) => expect(h.score).toBe(exact[i]!.score)); // same summation order: bit-identical
  });

  it('prunes inside a block: sub-block bounds skip the parts of a 1,024-id block where the rare terms do not meet', async () => {
    const s = make(); // default: 1,024 chunk ids per block, 16 sub-blocks of 64
    // Every chunk holds `common`; `alpha` sits in the even sub-blocks, `beta` in the odd ones (each alone in its chunk),
    // and they meet only in chunks 900–904: every sub-block but that one is bounded by one of them plus `common`.
    const cs = Array.from({ length: 1000 }, (_, i) => {
      const words = ['common', `filler${i % 50}`, `pad${i % 7}`];
      if (i % 128 === 5) words.push('alpha'); // chunk id i + 1: sub-block 2j
      if (i % 128 === 70) words.push('beta'); // sub-block 2j + 1
      if (i >= 900 && i < 905) words.push('alpha', 'beta');
      return chunk(`s${i}`, 1, 0, words.join(' '));
    });
    await s.upsert(cs);
    const req = { query: 'alpha beta common', k: 5, scope };
    const { hits, stats } = s.searchWithStats(req);
    expect(hits.map((h) => h.document_id).sort()).toEqual(['s900', 's901', 's902', 's903', 's904']);
    expect(stats.blocksTotal).toBe(16); // one block, every sub-block holds `common`
    expect(stats.blocksVisited).toBe(1); // chunks 900–904 (ids 901–905) are all in sub-block 14
    expect(stats.postingsRead).toBeLessThan(stats.postingsTotal / 4);
    const exact = s.searchExhaustive(req);
    expect(hits).toEqual(exact);
  });

  it('visits a shrinking share of the blocks as the index grows (the cost follows the bounds, not the postings)', async () => {
    const s = make({ blockBits: 6 });
    const share: number[] = [];
    let n = 0;
    for (const size of [1000, 4000, 16000]) {
      const more = zipfCorpus(size - n, size).map((c, i) => ({ ...c, chunk_id: `g${n + i}#v1#0`, document_id: `g${n + i}` }));
      // one chunk in ~500 holds two rare words together: the answer of the query
      more.forEach((c, i) => {
        if ((n + i) % 500 === 7) c.text = `${c.text} quartz basalt`;
      });
      await s.upsert(more);
      n = size;
      const { stats } = s.searchWithStats({ query: 'quartz basalt w0x w1x w2x', k: 10, scope });
      share.push(stats.postingsRead / stats.postingsTotal);
    }
    expect(share[2]!).toBeLessThan(share[0]!);
    expect(share[2]!).toBeLessThan(0.25);
  });

  it('returns exactly what the exhaustive evaluation returns (randomised: queries, k, scopes, filters, after deletes and replacements)', async () => {
    const s = make({ blockBits: 5 });
    const cs = zipfCorpus(1500, 3, (i) => ({
      tenant: i % 10 === 0 ? 't2' : 't1',
      acl: i % 7 === 0 ? ['g1'] : ['*'],
      metadata: { group: i % 50 === 0 ? 'rare' : i % 2 ? 'odd' : 'even', n: i },
    }));
    await s.upsert(cs);
    // Deletes and replacements leave the stored bounds loose (never too low): results must not change.
    for (let i = 0; i < 1500; i += 9) await s.deleteDocument(`z${i}`);
    await s.upsert(zipfCorpus(200, 5).map((c, i) => ({ ...c, chunk_id: `z${i * 9 + 1}#v1#0`, document_id: `z${i * 9 + 1}` })));
    const r = rng(99);
    const words = cs.slice(0, 300).flatMap((c) => c.text.split(' '));
    const filterChoices: Array<Filters | undefined> = [undefined, { group: 'rare' }, { group: 'odd' }, { n: { lt: 100 } }, { group: { in: ['rare', 'zz'] } }];
    const scopes: SearchScope[] = [{ tenant: 't1' }, { tenant: 't2' }, { tenant: 't1', principals: [] }, { tenant: 't1', principals: ['g1'] }];
    let pruned = 0;
    for (let trial = 0; trial < 150; trial++) {
      const query = Array.from({ length: 1 + Math.floor(r() * 8) }, () => words[Math.floor(r() * words.length)]!).join(' ');
      const req = { query, k: [1, 3, 10, 50, 100][trial % 5]!, scope: scopes[Math.floor(r() * scopes.length)]!, filters: filterChoices[Math.floor(r() * filterChoices.length)] };
      const { hits, stats } = s.searchWithStats(req);
      if (stats.postingsRead < stats.postingsTotal) pruned++;
      const exact = s.searchExhaustive(req);
      expect({ req, got: hits.map((h) => h.chunk_id) }).toEqual({ req, got: exact.map((h) => h.chunk_id) });
      hits.forEach((h, i) => expect(h.score).toBeCloseTo(exact[i]!.score, 9));
    }
    expect(pruned).toBeGreaterThan(20); // the comparison covers pruned searches, not only exhaustive ones
  });

  it('reuses its search buffers from one search to the next: a long query, then short ones, then long again give what a fresh connection gives', async () => {
    const s = make({ blockBits: 5 });
    await s.upsert(zipfCorpus(1500, 17));
    // The bound buffers are sized terms × sub-blocks: a 12-term query leaves slots a 1-term query must not read as bounds.
    const long = 'w0x w1x w2x w3x w5x w8x w13x w21x w34x w55x w89x wbx';
    const queries = [long, 'w3x', 'w40x w7ax', long, 'w0x', 'wbx w2x'];
    // Stale bounds would only be too high (results stay exact, pruning weakens), so the work counts are compared too.
    const work = (st: KeywordSearchStats) => ({ blocksTotal: st.blocksTotal, blocksVisited: st.blocksVisited, postingsRead: st.postingsRead, filterChecks: st.filterChecks });
    const got = queries.map((query) => s.searchWithStats({ query, k: 20, scope }));
    for (const [i, query] of queries.entries()) {
      const fresh = make({ blockBits: 5 }, dir).searchWithStats({ query, k: 20, scope }); // its own connection, buffers never used
      expect({ query, hits: got[i]!.hits, work: work(got[i]!.stats) }).toEqual({ query, hits: fresh.hits, work: work(fresh.stats) });
      expect(got[i]!.hits.map((h) => h.chunk_id)).toEqual(s.searchExhaustive({ query, k: 20, scope }).map((h) => h.chunk_id));
    }
  });

  it('trusts the filter once the first full top k all passed: the rest are checked together at the end, same hits; one failing there runs the search again', async () => {
    // one tenant, every chunk public: the filter passes everything, so only the first k and the final candidates are checked
    const s = make({ blockBits: 5 });
    await s.upsert(zipfCorpus(3000, 23, () => ({ acl: ['*'] })));
    const checking = make({ blockBits: 5, trustFilter: false }, dir);
    const req = { query: 'w0x w3x w7ax w11x w2x', k: 10, scope: { tenant: 't1', principals: ['g1'] } };
    const trusted = s.searchWithStats(req);
    const each = checking.searchWithStats(req);
    expect(trusted.stats.filterTrusted).toBe(true);
    expect(trusted.stats.filterRetried).toBeUndefined();
    expect(each.stats.filterTrusted).toBeUndefined();
    expect(trusted.hits).toEqual(each.hits);
    expect(trusted.hits).toEqual(s.searchExhaustive(req));
    expect(trusted.stats.filterChecks).toBeLessThan(each.stats.filterChecks);

    // Another tenant's chunks that rank between the first full top k and the best possible: trusted, then the final check
    // finds them failing where it matters (fewer than k passing candidates at or above θ), and the search runs again.
    // Sub-blocks of 2 chunk ids (blockBits 5): A (alpha ×4 in 64 words) beside B (alpha once, 1 word) bound their
    // sub-block at tf 4 and length 1 (0.88 × idf) though A scores 0.74 and B 0.64; C (another tenant, alpha ×2 in 2
    // words) scores 0.78; D (alpha ×2 in 20 words) 0.71. Visit order: the 7 A/B sub-blocks (the first 5 fill the top 10:
    // all pass, trusted), then the Cs (θ rises to A's 0.73), and the Ds' sub-blocks are skipped (0.71 < θ) — though
    // they, not the Bs, belong in the top 10 once the Cs fail: only the search run again finds them.
    const mixedDir = path.join(dir, 'mixed');
    fs.mkdirSync(mixedDir);
    const t = make({ blockBits: 5 }, mixedDir);
    const filler = Array.from({ length: 60 }, (_, i) => `zz${i}`).join(' ');
    await t.upsert([chunk('lead', 1, 0, 'nothing to see')]); // id 1: the pairs start at an even id
    await t.upsert(Array.from({ length: 7 }, (_, i) => [chunk(`a${i}`, 1, 0, `alpha alpha alpha alpha ${filler}`), chunk(`b${i}`, 1, 0, 'alpha')]).flat());
    await t.upsert(Array.from({ length: 3 }, (_, i) => chunk(`c${i}`, 1, 0, 'alpha alpha', { tenant: 't2' })));
    await t.upsert(Array.from({ length: 3 }, (_, i) => chunk(`d${i}`, 1, 0, `alpha alpha ${filler.split(' ').slice(0, 18).join(' ')}`)));
    const alpha = { query: 'alpha', k: 10, scope: { tenant: 't1' } };
    const mixed = t.searchWithStats(alpha);
    expect(mixed.stats.filterTrusted).toBe(true);
    expect(mixed.stats.filterRetried).toBe(true);
    expect(mixed.hits.map((h) => h.document_id).sort()).toEqual([...Array.from({ length: 7 }, (_, i) => `a${i}`), 'd0', 'd1', 'd2'].sort());
    expect(mixed.hits).toEqual(t.searchExhaustive(alpha));
    expect(make({ blockBits: 5, trustFilter: false }, mixedDir).searchWithStats(alpha).hits).toEqual(mixed.hits);
    // Every trusted search here runs again: after 32 of them (more than a quarter ran again) the connection checks each
    // candidate for the next 256 searches — same hits, no rerun — and then trusts again.
    for (let i = 1; i < 32; i++) expect(t.searchWithStats(alpha).stats.filterRetried).toBe(true);
    for (let i = 0; i < 256; i++) {
      const paused = t.searchWithStats(alpha);
      expect(paused.stats.filterTrusted).toBeUndefined();
      expect(paused.hits).toEqual(mixed.hits);
    }
    expect(t.searchWithStats(alpha).stats.filterRetried).toBe(true);
  });

  it('a query whose bound slots would exceed maxBoundSlots is evaluated exhaustively: same hits, memory bounded', async () => {
    const s = make({ blockBits: 5, maxBoundSlots: 200 }); // 1,500 chunks: 47 blocks of 16 sub-blocks → 752 slots a term
    await s.upsert(zipfCorpus(1500, 41));
    for (const query of ['w0x', 'w0x w3x w7ax w11x', 'w2x w9x w0x w11x w3x w40x']) {
      const req = { query, k: 10, scope };
      const { hits, stats } = s.searchWithStats(req);
      expect(stats.exhaustive).toBe(true);
      expect(hits).toEqual(s.searchExhaustive(req));
      expect(hits).toHaveLength(10);
    }
    const roomy = make({ blockBits: 5 }, dir);
    expect(roomy.searchWithStats({ query: 'w0x w3x', k: 10, scope }).stats.exhaustive).toBeUndefined();
    expect(() => make({ maxBoundSlots: -1 })).toThrow(/maxBoundSlots must be >= 0/);
  });

  it('a restrictive filter still yields k hits when pruning would have cut them (the k-th score is taken among passing chunks)', async () => {
    const s = make({ blockBits: 5 });
    const cs = zipfCorpus(2000, 17, (i) => ({ metadata: { keep: i % 400 === 0 } }));
    await s.upsert(cs);
    const req = { query: 'w0x w1x w5x w9x', k: 5, scope, filters: { keep: true } };
    const hits = await s.search(req);
    expect(hits).toHaveLength(5);
    expect(hits.map((h) => h.chunk_id)).toEqual(s.searchExhaustive(req).map((h) => h.chunk_id));
    expect(hits.every((h) => Number(h.document_id.slice(1)) % 400 === 0)).toBe(true);
  });

  it.each([1, 2])('migrates a format-%i file (one row per posting) on open: postings packed into blocks, same results', async (format) => {
    const s1 = make({ blockBits: 6 });
    await s1.upsert(zipfCorpus(800, 23));
    await s1.deleteDocument('z5'); // a gap in the chunk ids
    const reqs = ['w0x w3x w40x w7ax', 'w1x', 'w2x w9x w0x w11x w3x'].map((query) => ({ query, k: 10, scope }));
    const before = await Promise.all(reqs.map((r) => s1.search(r)));
    await s1.close();
    // Turn the file into what the release of that format wrote: a postings table, no blocks, no chunks.terms.
    const raw = new Database(path.join(dir, 'keyword.db'));
    raw.exec('CREATE TABLE postings (term_id INTEGER NOT NULL, chunk INTEGER NOT NULL, tf INTEGER NOT NULL, len INTEGER NOT NULL, PRIMARY KEY (term_id, chunk)) WITHOUT ROWID');
    const ins = raw.prepare('INSERT INTO postings VALUES (?, ?, ?, ?)');
    let postings = 0;
    for (const b of allBlocks(raw)) {
      const w = new Uint32Array(Uint8Array.from(b.data).buffer);
      for (let j = 0; j < w.length; j += 2) {
        ins.run(b.term_id, b.block * 64 + (w[j]! % 64), Math.floor(w[j]! / 64), w[j + 1]!);
        postings++;
      }
    }
    raw.exec('CREATE INDEX postings_chunk ON postings (chunk); DROP TABLE blocks; DROP TABLE dirs; DROP TABLE meta; ALTER TABLE chunks DROP COLUMN terms;');
    if (format === 2) raw.exec('ALTER TABLE terms ADD COLUMN max_tf INTEGER NOT NULL DEFAULT 0; ALTER TABLE terms ADD COLUMN min_len INTEGER NOT NULL DEFAULT 0;');
    raw.pragma(`user_version = ${format}`);
    raw.close();
    const s2 = make({ blockBits: 6 });
    const check = new Database(path.join(dir, 'keyword.db'), { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(4);
    expect(check.prepare("SELECT name FROM sqlite_master WHERE name = 'postings'").all()).toEqual([]);
    expect(postingsIn(check)).toBe(postings);
    check.close();
    expect(await Promise.all(reqs.map((r) => s2.search(r)))).toEqual(before);
    // deletes find the migrated postings through chunks.terms; new writes go on
    await s2.deleteDocument('z0');
    expect((await s2.search(reqs[1]!)).some((h) => h.document_id === 'z0')).toBe(false);
    await s2.upsert([chunk('new', 1, 0, 'w0x needle')]);
    expect(await search(s2, 'needle')).toEqual(['new#v1#0']);
  });

  it('keeps each term\'s packed directory (`dirs`, format 4) equal to one built afresh from the blocks, through writes, replacements and deletes; a format-3 file gets it on open', async () => {
    const s1 = make({ blockBits: 5 }); // 32 ids a block, 16 blocks a directory row: many rows and small blocks
    await s1.upsert(zipfCorpus(1500, 31));
    await s1.deleteDocument('z7');
    await s1.deleteDocument('z1200');
    await s1.upsert(zipfCorpus(40, 32)); // replaces z0..z39 with other text (new versions)
    await s1.upsert([chunk('late', 1, 0, 'w0x w1x needle')]);
    await s1.deleteDocument('late');
    const reqs = ['w0x w3x w40x w7ax', 'w1x', 'w2x w9x w0x w11x w3x', 'w100x w5x'].map((query) => ({ query, k: 10, scope }));
    const before = await Promise.all(reqs.map((r) => s1.search(r)));
    for (const r of reqs) expect(before[reqs.indexOf(r)]).toEqual(s1.searchExhaustive(r));
    await s1.close();
    const file = path.join(dir, 'keyword.db');
    const dirsOf = (): unknown[] => dirRows(file);
    const maintained = dirsOf();
    expect(maintained.length).toBeGreaterThan(50);
    const largeRows = (new Database(file, { readonly: true }).prepare('SELECT COUNT(*) AS n FROM blocks').get() as { n: number }).n;
    // Make it what format 3 wrote — every block a `blocks` row (a small one with `sub` NULL), no `dirs` — and open it
    // again: the directories are rebuilt from `blocks`, and the small blocks' rows go.
    expect(toFormat3(file)).toBeGreaterThan(100);
    const s2 = make({ blockBits: 5 });
    const check = new Database(file, { readonly: true });
    expect(check.pragma('user_version', { simple: true })).toBe(4);
    expect((check.prepare('SELECT COUNT(*) AS n FROM blocks').get() as { n: number }).n).toBe(largeRows);
    check.close();
    expect(dirsOf()).toEqual(maintained);
    expect(await Promise.all(reqs.map((r) => s2.search(r)))).toEqual(before);
    // and writes go on against the migrated file
    await s2.deleteDocument('z3');
    await s2.upsert([chunk('new', 1, 0, 'w0x needle')]);
    for (const r of [...reqs, { query: 'needle w0x', k: 5, scope }]) expect(await s2.search(r)).toEqual(s2.searchExhaustive(r));
  });

  it('two connections writing the same file in turn keep the directories right', async () => {
    const a = make({ blockBits: 5 });
    const b = make({ blockBits: 5 });
    const corpus = zipfCorpus(900, 43);
    for (let i = 0; i < corpus.length; i += 50) await (i % 100 === 0 ? a : b).upsert(corpus.slice(i, i + 50));
    await b.deleteDocument('z10');
    await a.upsert(zipfCorpus(30, 44)); // replaces z0..z29: a rewrites rows b wrote last
    await b.deleteDocument('z20');
    const reqs = ['w0x w3x w40x w7ax', 'w1x', 'w2x w9x w0x w11x w3x'].map((query) => ({ query, k: 10, scope }));
    for (const s of [a, b]) for (const r of reqs) expect(await s.search(r)).toEqual(s.searchExhaustive(r));
    await a.close();
    await b.close();
    const file = path.join(dir, 'keyword.db');
    const maintained = dirRows(file);
    // rebuilt from the blocks (as a format-3 file would be), the directories are the same
    toFormat3(file);
    make({ blockBits: 5 });
    expect(dirRows(file)).toEqual(maintained);
  });

  it('serves repeated terms from a bounded cache that stays exact through its own writes and another connection\'s commits', async () => {
    const s = make({ blockBits: 5 });
    const other = make({ blockBits: 5 });
    await s.upsert(zipfCorpus(1500, 7));
    const r = rng(5);
    const queries = ['w0x', 'w0x w1x w2x', 'w0x w3x w40x w7ax', 'w1x', 'w2x w9x w0x w11x w3x', 'w5x w0x'];
    const check = (query: string, k = 10) => {
      const req = { query, k, scope };
      const got = s.searchWithStats(req).hits;
      expect({ query, got: got.map((h) => h.chunk_id) }).toEqual({ query, got: s.searchExhaustive(req).map((h) => h.chunk_id) });
      return got.map((h) => h.chunk_id);
    };
    for (const q of queries) check(q);
    const before = s.termCacheStats();
    for (const q of queries) check(q);
    expect(s.termCacheStats().hits).toBeGreaterThan(before.hits); // the second round read cached terms
    expect(s.termCacheStats().bytes).toBeGreaterThan(0);
    // This connection's writes evict the terms they touch: a new chunk heavy in w0x is found at once, a deleted one gone.
    await s.upsert([chunk('hot', 1, 0, 'w0x '.repeat(30).trim())]);
    expect(check('w0x', 3)).toContain('hot#v1#0');
    await s.deleteDocument('hot');
    expect(check('w0x', 3)).not.toContain('hot#v1#0');
    // Another connection's commit clears the cache (PRAGMA data_version).
    await other.upsert([chunk('cold', 1, 0, 'w1x '.repeat(30).trim())]);
    expect(check('w1x', 3)).toContain('cold#v1#0');
    // Randomised: writes from either connection between searches, every search equal to the exhaustive evaluation.
    const words = queries.join(' ').split(' ');
    for (let trial = 0; trial < 60; trial++) {
      const writer = r() < 0.5 ? s : other;
      const id = `x${Math.floor(r() * 40)}`;
      if (r() < 0.3) await writer.deleteDocument(id);
      else await writer.upsert([chunk(id, 1, 0, Array.from({ length: 1 + Math.floor(r() * 20) }, () => words[Math.floor(r() * words.length)]!).join(' '))]);
      check(queries[trial % queries.length]!, [1, 5, 20][trial % 3]);
    }
  });

  it('keeps its term cache through another connection\'s commits, re-reading only the terms and tail blocks they changed', async () => {
    const writer = make({ blockBits: 5 });
    const reader = make({ blockBits: 5 }); // a query worker's connection
    await writer.upsert(zipfCorpus(1500, 21));
    const reqs = ['w0x', 'w1x w2x', 'w3x', 'w0x w4x w9x'].map((query) => ({ query, k: 200, scope }));
    const full = reqs.map((req) => reader.searchWithStats(req)); // range-scans the frequent terms (complete packs)
    for (const req of reqs) expect(reader.searchWithStats(req).stats.blocksFetched).toBe(0);
    expect(full[0]!.stats.blocksFetched).toBeGreaterThan(20);
    // An append heavy in w0x: w1x…w4x are untouched and stay cached whole; w0x re-reads its last block only.
    await writer.upsert([chunk('hot', 1, 0, 'w0x '.repeat(30).trim())]);
    const before = reader.termCacheStats();
    const untouched = reader.searchWithStats(reqs[1]!);
    expect(untouched.stats.blocksFetched).toBe(0);
    expect(untouched.hits).toEqual(reader.searchExhaustive(reqs[1]!)); // (scores move: the new chunk changed avgdl)
    const touched = reader.searchWithStats(reqs[0]!);
    expect(touched.hits).toEqual(reader.searchExhaustive(reqs[0]!));
    expect(touched.hits[0]!.chunk_id).toBe('hot#v1#0');
    expect(touched.stats.blocksFetched).toBeGreaterThan(0);
    expect(touched.stats.blocksFetched).toBeLessThanOrEqual(2); // the appended tail, not the term's ≈ 47 blocks
    expect(reader.termCacheStats()).toMatchObject({ misses: before.misses, refreshes: before.refreshes + 1 });
    // A delete early in the file (a chunk of the first block): w0x re-reads from there on, still exact.
    await writer.deleteDocument('z0');
    await writer.deleteDocument('z3');
    for (const req of reqs) expect(reader.searchWithStats(req).hits).toEqual(reader.searchExhaustive(req));
    expect(reader.termCacheStats().misses).toBe(before.misses);
    // A burst of commits inside the log's minute (deleting a source: a commit per document) is followed, not cleared.
    let now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      for (let i = 0; i < 400; i++) await writer.upsert([chunk(`b${i}`, 1, 0, `w0x w1x w${(i % 30).toString(36)}x`)]);
      for (const req of reqs) expect(reader.searchWithStats(req).hits).toEqual(reader.searchExhaustive(req));
      expect(reader.termCacheStats().misses).toBe(before.misses);
      // A reader behind by more than the log keeps (older than a minute, and more than 256 commits) clears its cache.
      for (let i = 0; i < 300; i++) {
        now += 1000;
        await writer.upsert([chunk(`n${i}`, 1, 0, `w0x w1x w${(i % 30).toString(36)}x`)]);
      }
      const behind = reader.termCacheStats();
      for (const req of reqs) expect(reader.searchWithStats(req).hits).toEqual(reader.searchExhaustive(req));
      expect(reader.termCacheStats().misses).toBeGreaterThan(behind.misses);
    } finally {
      clock.mockRestore();
    }
    const db = new Database(writer.file, { readonly: true });
    const logged = (db.prepare('SELECT COUNT(*) AS n FROM term_changes').get() as { n: number }).n;
    db.close();
    expect(logged).toBe(256); // bounded: the commits of the last minute (60 here), but at least the last 256
  });

  it('follows the change log between searches (followChanges, or every followChangesMs): a reader that searches less often than the log turns over keeps its cache', async () => {
    // (Date.now mocked: the log keeps the last minute of commits, and the writer's clock decides what is a minute.)
    const writer = make({ blockBits: 5 });
    await writer.upsert(zipfCorpus(800, 41));
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const timed = make({ blockBits: 5, followChangesMs: 1000 }); // the platform's search connections
      const called = make({ blockBits: 5 }); // followChanges called by hand
      const idle = make({ blockBits: 5 }); // searches only
      const reqs = ['w0x', 'w1x w2x', 'w3x w0x'].map((query) => ({ query, k: 50, scope }));
      for (const r of [timed, called, idle]) for (const req of reqs) r.searchWithStats(req);
      const before = [timed, called, idle].map((r) => r.termCacheStats());
      // 600 commits a second apart (the log keeps a minute, and at least 256), the readers given a chance to follow every 100
      let now = Date.now();
      const clock = vi.spyOn(Date, 'now').mockImplementation(() => now);
      try {
        for (let i = 0; i < 600; i++) {
          now += 1000;
          await writer.upsert([chunk(`f${i}`, 1, 0, `w0x w1x w${(i % 20).toString(36)}x`)]);
          if (i % 100 === 99) {
            vi.advanceTimersByTime(1000);
            called.followChanges();
          }
        }
      } finally {
        clock.mockRestore();
      }
      for (const r of [timed, called, idle]) for (const req of reqs) expect(r.searchWithStats(req).hits).toEqual(r.searchExhaustive(req));
      const [t, c, n] = [timed, called, idle].map((r, i) => ({ misses: r.termCacheStats().misses - before[i]!.misses, refreshes: r.termCacheStats().refreshes - before[i]!.refreshes }));
      expect(t).toMatchObject({ misses: 0 });
      expect(t.refreshes).toBeGreaterThan(0);
      expect(c).toEqual(t);
      expect(n.misses).toBeGreaterThan(0); // fell behind the log: cleared
      await timed.close(); // stops its timer
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
    expect(() => make({ followChangesMs: -1 })).toThrow(/followChangesMs/);
  });

  it('stays exact under randomised writes of another connection between searches: appends, replacements, deletes anywhere, point lookups and tail scans', async () => {
    const writer = make({ blockBits: 5 });
    const reader = make({ blockBits: 5 });
    await writer.upsert(zipfCorpus(1200, 31));
    const r = rng(17);
    const vocab = Array.from({ length: 40 }, (_, i) => `w${i.toString(36)}x`);
    const queries = ['w0x', 'w0x w1x w2x', 'w3x w5x', 'w1x w7x w0x w11x', 'w2x', 'w4x w0x w6x'];
    for (let trial = 0; trial < 150; trial++) {
      const n = 1 + Math.floor(r() * 4);
      const body = () => Array.from({ length: 1 + Math.floor(r() * 25) }, () => vocab[Math.floor(r() * r() * vocab.length)]!).join(' ');
      const pick = r();
      if (pick < 0.25) await writer.deleteDocument(`z${Math.floor(r() * 1200)}`); // anywhere in the file
      else if (pick < 0.45) {
        const d = Math.floor(r() * 1200); // a new version: the old chunk's postings go, the new ones are appended
        await writer.upsert([chunk(`z${d}`, 2, 0, body())]);
        await writer.deleteDocument(`z${d}`, 2);
      } else await writer.upsert(Array.from({ length: n }, (_, i) => chunk(`a${trial}`, 1, i, body())));
      for (let q = 0; q < 2; q++) {
        const req = { query: queries[(trial + q) % queries.length]!, k: [1, 3, 10, 200][(trial + q) % 4]!, scope };
        const got = reader.searchWithStats(req).hits;
        expect({ trial, req: req.query, k: req.k, got }).toEqual({ trial, req: req.query, k: req.k, got: reader.searchExhaustive(req) });
      }
    }
    expect(reader.termCacheStats().refreshes).toBeGreaterThan(50);
  });

  it('keeps the blocks a search fetched, looked up one by one or range-scanned, in the term cache: the same search again reads none', async () => {
    const s = make({ blockBits: 5 });
    await s.upsert(zipfCorpus(1500, 9));
    // k = 1 on a frequent term visits a few of its blocks (point lookups: an incomplete pack); k = 200 then visits
    // enough to range-scan it (the pack made complete), and the other frequent terms at k = 200 are scanned at once.
    const reqs = [
      { query: 'w3x', k: 1, scope },
      { query: 'w3x', k: 200, scope },
      { query: 'w0x w1x w2x', k: 200, scope },
      { query: 'w0x w40x w7ax', k: 20, scope },
    ];
    const fetched: number[] = [];
    for (const req of reqs) {
      const first = s.searchWithStats(req);
      expect(first.hits).toEqual(s.searchExhaustive(req));
      fetched.push(first.stats.blocksFetched);
      const again = s.searchWithStats(req);
      expect({ query: req.query, k: req.k, fetched: again.stats.blocksFetched }).toEqual({ query: req.query, k: req.k, fetched: 0 });
      expect(again.hits).toEqual(first.hits);
    }
    expect(fetched[0]).toBeGreaterThan(0); // looked up one by one…
    expect(fetched[0]).toBeLessThanOrEqual(8);
    expect(fetched[1]).toBeGreaterThan(8); // …then the rest of the term in one scan
    expect(fetched[2]).toBeGreaterThan(0);
    // A write evicts the terms it touches: their blocks are fetched again, and the results follow the write.
    await s.upsert([chunk('hot', 1, 0, 'w3x '.repeat(30).trim())]);
    const after = s.searchWithStats(reqs[1]!);
    expect(after.stats.blocksFetched).toBeGreaterThan(0);
    expect(after.hits).toEqual(s.searchExhaustive(reqs[1]!));
    expect(after.hits[0]!.chunk_id).toBe('hot#v1#0');
  });

  it('journals the terms its searches load, and a fresh connection warmed with them (warmTerms) answers the same searches reading no term data', async () => {
    const writer = make({ blockBits: 5 });
    await writer.upsert(zipfCorpus(1500, 17));
    const reqs = ['w0x w1x', 'w3x', 'w0x w40x w7ax', 'w2x w9x w11x'].map((query) => ({ query, k: 200, scope }));
    const before = make({ blockBits: 5, journalLoads: true }); // a keyword worker before a restart
    const cold = reqs.map((req) => before.searchWithStats(req));
    const expected = cold.map((r) => r.hits);
    const journal = before.takeLoadedTerms();
    expect(journal.length % 2).toBe(0);
    expect(journal.filter((_, i) => i % 2 === 1 && journal[i] === 1).length).toBeGreaterThan(0); // range-scanned terms marked full
    expect(before.takeLoadedTerms()).toEqual([]); // taken
    for (const req of reqs) before.searchWithStats(req);
    expect(before.takeLoadedTerms()).toEqual([]); // all cached: nothing loaded
    expect(make({ blockBits: 5 }).takeLoadedTerms()).toEqual([]); // no journal unless asked
    // After the restart: warmed with the journal (and a term listed again as directory-only, an unknown id, a bogus
    // one), the searches find every term cached.
    const after = make({ blockBits: 5 });
    const warmed = after.warmTerms([...journal, 999_999, 1, journal[0]!, 0, -5, 0]);
    const distinct = new Set(journal.filter((_, i) => i % 2 === 0)).size;
    expect(warmed.terms).toBe(distinct);
    expect(warmed.bytes).toBe(after.termCacheStats().bytes);
    let fetched = 0;
    for (const [i, req] of reqs.entries()) {
      const r = after.searchWithStats(req);
      expect(r.hits).toEqual(expected[i]);
      // the range-scanned terms' blocks came with the warm-up; a term whose blocks were only looked up one by one
      // (cheap: ≈ 13 µs each at 1M chunks) is warmed with its directory, and looks them up again
      expect(r.stats.blocksFetched).toBeLessThanOrEqual(8 * r.stats.terms);
      fetched += r.stats.blocksFetched;
    }
    expect(fetched).toBeLessThan(cold.reduce((n, r) => n + r.stats.blocksFetched, 0) / 4);
    expect(after.termCacheStats().misses).toBe(0);
    // Exact under writes that came after the warm-up (the change log is followed as for searches' own loads).
    await writer.upsert([chunk('hot', 1, 0, 'w0x '.repeat(30).trim())]);
    await writer.deleteDocument('z1');
    for (const req of reqs) expect(after.searchWithStats(req).hits).toEqual(after.searchExhaustive(req));
    expect(after.searchWithStats({ query: 'w0x', k: 5, scope }).hits[0]!.chunk_id).toBe('hot#v1#0');
    // Bounded: a deadline already past loads nothing; a small budget stops at 3/4 of it.
    expect(make({ blockBits: 5 }).warmTerms(journal, Date.now() - 1)).toEqual({ terms: 0, bytes: 0 });
    const small = make({ blockBits: 5, termCacheBytes: 64 * 1024 });
    const cut = small.warmTerms(journal);
    expect(cut.terms).toBeLessThan(distinct);
    expect(cut.bytes).toBeLessThanOrEqual(64 * 1024);
  });

  it('keeps the term cache within its budget, and 0 turns it off (same results)', async () => {
    const corpus = zipfCorpus(1500, 8);
    const small = make({ blockBits: 5, termCacheBytes: 16_384 });
    await small.upsert(corpus);
    const off = make({ blockBits: 5, termCacheBytes: 0 }, dir);
    const reqs = ['w0x w1x w2x', 'w3x w4x', 'w0x w5x w6x w7x', 'w1x w2x'].map((query) => ({ query, k: 10, scope }));
    for (let round = 0; round < 2; round++) {
      for (const req of reqs) {
        expect(await small.search(req)).toEqual(small.searchExhaustive(req));
        expect(await off.search(req)).toEqual(await small.search(req));
        expect(small.termCacheStats().bytes).toBeLessThanOrEqual(16_384);
      }
    }
    expect(off.termCacheStats()).toMatchObject({ bytes: 0, hits: 0 });
    expect(() => make({ termCacheBytes: -1 })).toThrow(/termCacheBytes/);
  });

  it('refuses a file of a newer format (it could not read it correctly) with a message that says so', async () => {
    const s1 = make();
    await s1.upsert(zipfCorpus(50, 3));
    await s1.close();
    const raw = new Database(path.join(dir, 'keyword.db'));
    raw.pragma('user_version = 99');
    raw.close();
    expect(() => make()).toThrow(/keyword index format 99, written by a newer release; this release reads formats 1–4/);
  });

  it('reads the file through a memory map by default (2 GiB; 0 turns it off), with the same results, and rejects a bad size', async () => {
    const s = make();
    await s.upsert(zipfCorpus(300, 7));
    const mmapOf = (x: EmbeddedBm25KeywordIndex) => (x as unknown as { db: { pragma(p: string, o: { simple: true }): unknown } }).db.pragma('mmap_size', { simple: true });
    expect(mmapOf(s)).toBeGreaterThan(2 ** 30); // SQLite clamps 2 GiB to its maximum (0x7fff0000 in this build)
    const off = make({ mmapBytes: 0 });
    expect(mmapOf(off)).toBe(0);
    for (const q of ['w0x w1x', 'w5x w9x w2x', 'w3x']) expect(await search(off, q)).toEqual(await search(s, q));
    expect(() => make({ mmapBytes: -1 })).toThrow(/mmapBytes must be a non-negative integer/);
  });

  it('checkpoints its write-ahead log only once it holds walCheckpointMiB: the file is written less often, results the same', async () => {
    const dirB = fs.mkdtempSync(path.join(os.tmpdir(), 'bm25-spec-'));
    try {
      const pragma = (x: EmbeddedBm25KeywordIndex, p: string) => (x as unknown as { db: { pragma(p: string, o: { simple: true }): number } }).db.pragma(p, { simple: true });
      const large = make({ walCheckpointMiB: 64, blockBits: 6 });
      const small = make({ walCheckpointMiB: 1, blockBits: 6 }, dirB);
      expect(pragma(large, 'wal_autocheckpoint')).toBe((64 * 2 ** 20) / pragma(large, 'page_size'));
      expect(pragma(make({}, fs.mkdtempSync(path.join(dirB, 'd-'))), 'wal_autocheckpoint')).toBe(1000); // SQLite's default unless asked
      const corpus = zipfCorpus(3000, 5);
      const sizes = { large: [] as number[], small: [] as number[] };
      for (let i = 0; i < corpus.length; i += 100) {
        await large.upsert(corpus.slice(i, i + 100));
        await small.upsert(corpus.slice(i, i + 100));
        sizes.large.push(fs.statSync(path.join(dir, 'keyword.db')).size);
        sizes.small.push(fs.statSync(path.join(dirB, 'keyword.db')).size);
      }
      // 1 MiB: the log is copied into keyword.db as the writes go; 64 MiB: not during these writes, so a page many
      // writes changed is copied once (at close), not once per checkpoint
      expect(new Set(sizes.small).size).toBeGreaterThan(3);
      expect(new Set(sizes.large).size).toBe(1);
      expect(fs.statSync(path.join(dir, 'keyword.db-wal')).size).toBeGreaterThan(4 * 2 ** 20);
      for (const q of ['w0x w1x', 'w5x w9x w2x', 'w3x w1ax']) expect(await search(large, q)).toEqual(await search(small, q));
      const expected = await search(large, 'w2x w7x w1bx');
      await large.close();
      expect(await search(make({}), 'w2x w7x w1bx')).toEqual(expected); // everything reached keyword.db (or replays from the log)
      expect(() => make({ walCheckpointMiB: 0 })).toThrow(/walCheckpointMiB must be an integer >= 1/);
    } finally {
      fs.rmSync(dirB, { recursive: true, force: true });
    }
  });

  it('creates keyword.db with 1 KiB pages; a file made with other pages keeps them, with the same results', async () => {
    const dirB = fs.mkdtempSync(path.join(os.tmpdir(), 'bm25-spec-'));
    try {
      const pageSize = (x: EmbeddedBm25KeywordIndex) => (x as unknown as { db: { pragma(p: string, o: { simple: true }): number } }).db.pragma('page_size', { simple: true });
      const corpus = zipfCorpus(800, 9);
      const s = make();
      expect(pageSize(s)).toBe(1024);
      await s.upsert(corpus);
      const old = make({ pageSize: 4096 }, dirB);
      expect(pageSize(old)).toBe(4096);
      await old.upsert(corpus);
      await old.close();
      const reopened = make({}, dirB);
      expect(pageSize(reopened)).toBe(4096);
      await reopened.upsert([chunk('late', 1, 0, 'w0x w1x late words')]);
      await s.upsert([chunk('late', 1, 0, 'w0x w1x late words')]);
      for (const q of ['w0x w1x', 'w5x w9x w2x', 'late w3x']) expect(await s.search({ query: q, k: 10, scope })).toEqual(await reopened.search({ query: q, k: 10, scope }));
    } finally {
      fs.rmSync(dirB, { recursive: true, force: true });
    }
  });

  it('keeps the block size a file was created with', async () => {
    const s1 = make({ blockBits: 4 });
    await s1.upsert(zipfCorpus(100, 2));
    const before = await s1.search({ query: 'w0x w5x', k: 5, scope });
    await s1.close();
    const s2 = make({ blockBits: 10 });
    expect(await s2.search({ query: 'w0x w5x', k: 5, scope })).toEqual(before);
    const check = new Database(path.join(dir, 'keyword.db'), { readonly: true });
    expect(Math.max(...allBlocks(check).map((b) => b.block))).toBe(6); // 100 ids / 16
    check.close();
  });

  it('persists across close and reopen', async () => {
    const s1 = make();
    const c = chunk('a', 1, 0, '北京是中国的首都', { metadata: { lang: 'zh' }, acl: ['g'] });
    await s1.upsert([c, chunk('b', 1, 0, 'wing flutter')]);
    const before = await s1.search({ query: '首都', k: 5, scope });
    await s1.close();
    const s2 = make();
    expect(await s2.count()).toBe(2);
    expect(await s2.search({ query: '首都', k: 5, scope: { tenant: 't1', principals: ['g'] }, filters: { lang: 'zh' } })).toEqual(before);
    expect(await s2.getChunks(['a#v1#0'])).toEqual([c]);
    await s2.deleteDocument('b');
    expect(await search(s2, 'wing')).toEqual([]);
  });

  it('checks candidates against the filter in its covering index, which a file from before it gets on open', async () => {
    const s1 = make();
    await s1.upsert([
      chunk('pub', 1, 0, 'wing flutter report'),
      chunk('fin', 1, 0, 'wing flutter budget', { acl: ['group:finance'], metadata: { lang: 'en' } }),
      chunk('zh', 1, 0, 'wing flutter 报告', { acl: ['*', 'user:x'], metadata: { lang: 'zh' } }),
    ]);
    const scopes: SearchScope[] = [{ tenant: 't1' }, { tenant: 't1', principals: [] }, { tenant: 't1', principals: ['group:finance'] }, { tenant: 't2' }];
    const ask = async (s: EmbeddedBm25KeywordIndex) =>
      Promise.all(scopes.flatMap((sc) => [search(s, 'wing flutter', 10, sc), search(s, 'wing flutter', 10, sc, { lang: 'en' }), search(s, 'wing', 10, sc, { document_id: 'fin' })]));
    const before = await ask(s1);
    expect(before[3]).toEqual(['pub#v1#0', 'zh#v1#0']); // no principal: public chunks, whatever their ACL's spelling
    await s1.close();
    // A file written before the index: dropped, then opened again.
    const raw = new Database(path.join(dir, 'keyword.db'));
    const plan = (sql: string) => (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as Array<{ detail: string }>).map((r) => r.detail).join(' | ');
    const probe = "SELECT c.id, c.chunk_id, c.document_id, c.version FROM chunks c INDEXED BY chunks_visibility WHERE c.id IN (SELECT value FROM json_each('[1,2]')) AND c.tenant = 't1'";
    expect(plan(probe)).toMatch(/USING COVERING INDEX chunks_visibility/);
    raw.exec('DROP INDEX chunks_visibility');
    raw.close();
    const s2 = make();
    expect(await ask(s2)).toEqual(before);
    const check = new Database(path.join(dir, 'keyword.db'), { readonly: true });
    expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = 'chunks_visibility'").get()).toBeTruthy();
    check.close();
  });

  /**
   * Documents on `topics` topics, interleaved in ingestion order (as a crawl mixes spaces): each chunk holds 8 words of
   * its topic's 40 and 6 of a shared Zipf-like filler, so a topic word is in ≈ n / topics / 5 chunks.
   */
  function topicalCorpus(n: number, seed: number, topics = 8, extra: (i: number) => Partial<Chunk> = () => ({})): Chunk[] {
    const r = rng(seed);
    const filler = Array.from({ length: 60 }, (_, i) => `f${i}x`);
    return Array.from({ length: n }, (_, i) => {
      const t = Math.floor(r() * topics);
      const words = [
        ...Array.from({ length: 8 }, () => `t${t}w${Math.floor(r() * 40)}x`),
        ...Array.from({ length: 6 }, () => filler[Math.min(59, Math.floor(Math.exp(r() * Math.log(61))) - 1)]!),
      ];
      return chunk(`d${i}`, 1, 0, words.join(' '), extra(i));
    });
  }
  const topicQueries = (r: () => number, n: number): string[] =>
    Array.from({ length: n }, () => {
      const t = Math.floor(r() * 8);
      return [...Array.from({ length: 1 + Math.floor(r() * 4) }, () => `t${t}w${Math.floor(r() * 40)}x`), ...(r() < 0.5 ? ['f0x', 'f1x'] : [])].join(' ');
    });

  it('reclusters: same hits and scores for every search (randomised, scopes, filters, another connection\'s warm cache), fewer sub-blocks visited, deleted ids reclaimed, writes go on', async () => {
    const s = make();
    const reader = make({}, dir); // another connection (a query worker) with a warm term cache
    const cs = topicalCorpus(4000, 5, 8, (i) => ({ tenant: i % 10 === 0 ? 't2' : 't1', acl: i % 7 === 0 ? ['g1'] : ['*'], metadata: { n: i } }));
    await s.upsert(cs.slice(0, 2000));
    await s.upsert(cs.slice(2000).map((c, i) => (i % 3 ? c : { ...c, kind: 'parent' as const }))); // parents among them
    for (let i = 0; i < 4000; i += 11) await s.deleteDocument(`d${i}`);
    await s.upsert(topicalCorpus(100, 6).map((c, i) => ({ ...c, chunk_id: `d${i * 11}#v2#0`, document_id: `d${i * 11}`, version: 2 })));
    const r = rng(7);
    const scopes: SearchScope[] = [{ tenant: 't1' }, { tenant: 't2' }, { tenant: 't1', principals: ['g1'] }];
    const reqs = topicQueries(r, 60).map((query, i) => ({ query, k: [1, 10, 50][i % 3]!, scope: scopes[i % 3]!, filters: i % 5 === 0 ? { n: { lt: 2000 } } : undefined }));
    const before = reqs.map((q) => s.searchWithStats(q));
    for (const q of reqs) reader.searchWithStats(q); // fills the reader's term cache with the old ids' blocks
    const peek = new Database(s.file, { readonly: true });
    const maxIdBefore = (peek.prepare('SELECT MAX(id) AS m FROM chunks').get() as { m: number }).m;
    peek.close();
    const rows = await s.count();

    const result = s.recluster();
    expect(result.children + result.parents).toBe(rows);
    expect(result.keyed).toBeGreaterThan(result.children * 0.9);
    const db = new Database(s.file, { readonly: true });
    expect((db.prepare('SELECT MAX(id) AS m FROM chunks').get() as { m: number }).m).toBe(rows); // ids 1…rows: deleted ones reclaimed
    expect(maxIdBefore).toBeGreaterThan(rows);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name LIKE '%\\_r' ESCAPE '\\'").all()).toEqual([]);
    db.close();
    const visits = { before: 0, after: 0 };
    for (const [i, q] of reqs.entries()) {
      for (const conn of [s, reader]) {
        const { hits, stats } = conn.searchWithStats(q);
        expect({ q, hits }).toEqual({ q, hits: before[i]!.hits });
        if (conn === s) visits.after += stats.blocksVisited;
      }
      visits.before += before[i]!.stats.blocksVisited;
    }
    expect(visits.after).toBeLessThan(visits.before * 0.6);
    expect(await s.getChunks(['d5#v1#0', 'd11#v2#0'])).toHaveLength(2);
    // writes, replacements and deletes go on against the renumbered file, and a second recluster finds it as the first left it
    await s.upsert(topicalCorpus(300, 8).map((c, i) => ({ ...c, chunk_id: `late${i}#v1#0`, document_id: `late${i}` })));
    await s.deleteDocument('d5');
    await s.upsert([{ ...cs[7]!, text: `${cs[7]!.text} needle` }]);
    s.recluster();
    for (const q of [...reqs, { query: 'needle t1w3x', k: 5, scope }]) {
      expect(s.searchWithStats(q).hits).toEqual(s.searchExhaustive(q));
      expect(reader.searchWithStats(q).hits).toEqual(s.searchExhaustive(q));
    }
    expect(await search(s, 'needle')).toEqual([cs[7]!.chunk_id]);
    await s.close();
    const reopened = make();
    expect(await reopened.count()).toBe(rows + 300 - 1);
  });

  it('a recluster that fails part-way leaves the file as it was', async () => {
    const s = make();
    await s.upsert(topicalCorpus(2000, 9));
    const reqs = topicQueries(rng(3), 20).map((query) => ({ query, k: 10, scope }));
    const before = reqs.map((q) => s.searchWithStats(q));
    // the 50th block the recluster writes fails: after the chunk rows were copied, amid the posting blocks
    let calls = 0;
    const orig = (s as unknown as { subBoundsOf: (w: Uint32Array) => Buffer | null }).subBoundsOf;
    vi.spyOn(s as unknown as { subBoundsOf: (w: Uint32Array) => Buffer | null }, 'subBoundsOf').mockImplementation(function (this: unknown, w: Uint32Array) {
      if (++calls === 50) throw new Error('disk full (injected)');
      return orig.call(this, w);
    });
    expect(() => s.recluster()).toThrow(/injected/);
    vi.restoreAllMocks();
    for (const [i, q] of reqs.entries()) expect(s.searchWithStats(q)).toEqual({ ...before[i], stats: { ...before[i]!.stats, blocksFetched: 0 } }); // blocks from the term cache
    const db = new Database(s.file, { readonly: true });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('chunks_r', 'blocks_r', 'dirs_r')").all()).toEqual([]);
    db.close();
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1000 })).toBe(true);
  });

  it('a recluster gives up, keeping the old tables, when another connection writes to the file while it runs', async () => {
    const s = make();
    await s.upsert(topicalCorpus(2000, 9));
    const reqs = topicQueries(rng(5), 10).map((query) => ({ query, k: 10, scope }));
    const before = reqs.map((q) => s.searchWithStats(q).hits);
    // between two of its steps (the plan, then the chunk rows, are committed), another connection commits a write
    type Writes = { write: <T>(fn: () => T) => T };
    let calls = 0;
    const orig = (s as unknown as Writes).write;
    vi.spyOn(s as unknown as Writes, 'write').mockImplementation(function <T>(this: unknown, fn: () => T): T {
      if (++calls === 3) {
        const other = new Database(s.file);
        other.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('spec_other_writer', '1')").run();
        other.close();
      }
      return orig.call(this, fn) as T;
    });
    expect(() => s.recluster()).toThrow(/another connection wrote to the file while it ran/);
    vi.restoreAllMocks();
    expect(reqs.map((q) => s.searchWithStats(q).hits)).toEqual(before);
    const db = new Database(s.file, { readonly: true });
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name IN ('chunks_r', 'blocks_r', 'dirs_r')").all()).toEqual([]);
    db.close();
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1000 })).toBe(true);
    expect(s.recluster().children).toBeGreaterThan(0); // with no other writer it goes through
    expect(reqs.map((q) => s.searchWithStats(q).hits)).toEqual(before);
  });

  it('is due once the ids written since the last recluster reach minIds and ratio × the ids it ordered', async () => {
    const s = make();
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1 })).toBe(false); // empty
    await s.upsert(topicalCorpus(999, 1));
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1000 })).toBe(false);
    await s.upsert([chunk('one', 1, 0, 'more words')]);
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1000 })).toBe(true);
    expect(s.reclusterDue({ ratio: 0, minIds: 1 })).toBe(false); // 0: never
    s.recluster();
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1 })).toBe(false);
    await s.upsert(topicalCorpus(499, 2).map((c, i) => ({ ...c, chunk_id: `n${i}#v1#0`, document_id: `n${i}` })));
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1 })).toBe(false); // 499 < 0.5 × 1,000
    await s.upsert([chunk('two', 1, 0, 'more words')]);
    expect(s.reclusterDue({ ratio: 0.5, minIds: 1 })).toBe(true);
    // emptied and filled again below the last recluster's ids: new chunks reuse ids from 1, counted from 0
    s.recluster();
    const db = new Database(s.file);
    const docs = db.prepare('SELECT DISTINCT document_id AS d FROM chunks').pluck(true).all() as string[];
    db.close();
    for (const d of docs) await s.deleteDocument(d);
    expect(await s.count()).toBe(0);
    await s.upsert(topicalCorpus(600, 3).map((c, i) => ({ ...c, chunk_id: `r${i}#v1#0`, document_id: `r${i}` })));
    expect(s.reclusterDue({ ratio: 0.5, minIds: 700 })).toBe(false);
    expect(s.reclusterDue({ ratio: 0.5, minIds: 600 })).toBe(true); // 600 ids < the 1,500 of the last recluster
  });

  it('rejects use after close, and close is idempotent', async () => {
    const s = make();
    await s.close();
    await s.close();
    await expect(s.count()).rejects.toThrow(/closed/);
  });

  const cranfield = path.resolve(__dirname, '../../../../../shared/eval/cranfield');
  it.skipIf(!fs.existsSync(path.join(cranfield, 'corpus.jsonl')))('reaches the expected BM25 quality on Cranfield (nDCG@10 ≥ 0.30; 0.36 measured with title+stemming)', async () => {
    const s = make();
    const lines = (f: string) => fs.readFileSync(path.join(cranfield, f), 'utf8').split('\n').filter((l) => l.trim().length > 0);
    const corpus = lines('corpus.jsonl').map((l) => JSON.parse(l) as { _id: string; title: string; text: string });
    await s.upsert(corpus.map((d) => chunk(`c${d._id}`, 1, 0, d.text, { title: d.title })));
    const queries = lines('queries.jsonl').map((l) => JSON.parse(l) as { _id: string; text: string });
    const qrels = new Map<string, Map<string, number>>();
    const qrelFile = fs.readdirSync(path.join(cranfield, 'qrels')).find((f) => f.startsWith('test')) ?? fs.readdirSync(path.join(cranfield, 'qrels'))[0]!;
    for (const l of lines(path.join('qrels', qrelFile)).slice(1)) {
      const [q, d, g] = l.split('\t');
      if (!qrels.has(q!)) qrels.set(q!, new Map());
      qrels.get(q!)!.set(`c${d}`, Number(g));
    }
    // Linear gain, as trec_eval/pytrec_eval (BEIR) compute nDCG.
    let ndcgSum = 0;
    let evaluated = 0;
    for (const q of queries) {
      const rel = qrels.get(q._id);
      if (!rel) continue;
      const hits = (await s.search({ query: q.text, k: 10, scope })).map((h) => h.document_id);
      const dcg = hits.reduce((acc, d, i) => acc + (rel.get(d) ?? 0) / Math.log2(i + 2), 0);
      const ideal = [...rel.values()].sort((a, b) => b - a).slice(0, 10).reduce((acc, g, i) => acc + g / Math.log2(i + 2), 0);
      ndcgSum += ideal > 0 ? dcg / ideal : 0;
      evaluated++;
    }
    const ndcg = ndcgSum / evaluated;
    expect(evaluated).toBeGreaterThan(100);
    expect(ndcg).toBeGreaterThan(0.3);
    expect(ndcg).toBeLessThan(0.42);
  });
});
