import type { Chunk, Filters, MetadataValue, SearchScope } from '@rag/contracts';
import { matches, segmentForIndex, seededRandom as rng } from '@rag/domain';
import { toChunkDocument } from './documents';
import { metadataField } from './mapping';
import { buildSearchBody, countQuery, documentQuery, documentsQuery, filterClauses, MAX_RESULT_WINDOW, rankHits, TIE_MARGIN, type Query } from './query';
import { evaluate } from './testing/query-evaluator';
import { testChunk } from '@rag/contracts';

const chunk = (over: Partial<Chunk> = {}): Chunk => testChunk('d#v1#0', { title: 'Title', ...over });

describe('buildSearchBody', () => {
  const scope: SearchScope = { tenant: 'acme', principals: ['g:eng'] };

  it('bool: should over text_seg (segmented query), filters for tenant, ACL, kind and metadata, size k + TIE_MARGIN', () => {
    const body = buildSearchBody({ query: 'Running wings of the aircraft', k: 7, scope, filters: { team: 'x' } })!;
    expect(body.query).toEqual({
      bool: {
        should: [{ match: { text_seg: { query: segmentForIndex('Running wings of the aircraft'), operator: 'or' } } }],
        minimum_should_match: 1,
        filter: [
          { term: { tenant: { value: 'acme' } } },
          { terms: { acl: ['*', 'g:eng'] } },
          { bool: { should: [{ term: { [metadataField('string', 'team')]: { value: 'x' } } }, { term: { [metadataField('array', 'team')]: { value: 'x' } } }], minimum_should_match: 1 } },
          { term: { kind: { value: 'child' } } },
        ],
      },
    });
    expect(body._source).toEqual(['chunk_id', 'document_id', 'version']);
    // by score alone (a field sort would make the engine score every match), TIE_MARGIN more for the tie-break here
    expect(body).not.toHaveProperty('sort');
    expect(body.size).toBe(7 + TIE_MARGIN);
    expect(body.track_total_hits).toBe(false);
  });

  it('segments Chinese exactly like the embedded tokenizer', () => {
    const body = buildSearchBody({ query: '中国的首都是哪里', k: 5, scope: { tenant: 't' } })!;
    const should = (body.query as { bool: { should: Query[] } }).bool.should;
    expect(should[0]).toEqual({ match: { text_seg: { query: segmentForIndex('中国的首都是哪里'), operator: 'or' } } });
    expect(segmentForIndex('中国的首都是哪里')).toContain('首都');
  });

  it('adds a boosted standard-analysed text clause when asked', () => {
    const body = buildSearchBody({ query: 'Wings', k: 5, scope: { tenant: 't' } }, { textBoost: 0.2 })!;
    const should = (body.query as { bool: { should: Query[] } }).bool.should;
    expect(should).toHaveLength(2);
    expect(should[1]).toEqual({ match: { text: { query: 'Wings', operator: 'or', boost: 0.2 } } });
  });

  it('no principals: tenant only; principals [] still admits public chunks', () => {
    const f1 = filterClauses({ tenant: 't' })!;
    expect(f1).toEqual([{ term: { tenant: { value: 't' } } }]);
    const f2 = filterClauses({ tenant: 't', principals: [] })!;
    expect(f2[1]).toEqual({ terms: { acl: ['*'] } });
  });

  it('returns null when nothing can match', () => {
    expect(buildSearchBody({ query: 'the of and', k: 5, scope: { tenant: 't' } })).toBeNull(); // stop words only
    expect(buildSearchBody({ query: '   ', k: 5, scope: { tenant: 't' } })).toBeNull();
    expect(buildSearchBody({ query: 'wing', k: 0, scope: { tenant: 't' } })).toBeNull();
    expect(buildSearchBody({ query: 'wing', k: 5, scope: { tenant: 't' }, filters: { document_id: 5 } })).toBeNull();
    expect(buildSearchBody({ query: 'wing', k: 5, scope: { tenant: 't' }, filters: { document_id: { gte: 1 } } })).toBeNull();
    expect(buildSearchBody({ query: 'wing', k: 5, scope: { tenant: 't' }, filters: { document_id: { in: [1] } } })).toBeNull();
  });

  it('clamps k to the result window', () => {
    expect(buildSearchBody({ query: 'wing', k: 1e9, scope: { tenant: 't' } })!.size).toBe(MAX_RESULT_WINDOW);
    expect(buildSearchBody({ query: 'wing', k: 3.7, scope: { tenant: 't' } })!.size).toBe(3 + TIE_MARGIN);
  });

  it('filter shapes: in (mixed), range, document_id', () => {
    const f = filterClauses({ tenant: 't' }, { lang: { in: ['en', 3] }, year: { gte: 2000, lt: 2010 }, document_id: { in: ['a', 'b'] } })!;
    expect(f.slice(1)).toEqual([
      {
        bool: {
          should: [{ terms: { 'md_s.lang': ['en'] } }, { terms: { 'md_n.lang': [3] } }, { terms: { 'md_a.lang': ['en', '3'] } }],
          minimum_should_match: 1,
        },
      },
      { range: { 'md_n.year': { gte: 2000, lt: 2010 } } },
      { terms: { document_id: ['a', 'b'] } },
    ]);
  });

  it('metadata keys with dots or odd characters become one encoded field segment', () => {
    const f = filterClauses({ tenant: 't' }, { 'a.b': 1 })!;
    expect(JSON.stringify(f[1])).toContain('md_n.a~002eb');
  });
});

describe('rankHits', () => {
  it('orders by score, then chunk id, and keeps the first k (the engine returns ties in index order)', () => {
    const hit = (chunk_id: string, score: number) => ({ chunk_id, document_id: chunk_id, version: 1, score });
    const engine = [hit('c', 2), hit('z', 3), hit('b', 2), hit('a', 2), hit('y', 1)];
    expect(rankHits(engine, 3).map((h) => h.chunk_id)).toEqual(['z', 'a', 'b']);
    expect(rankHits(engine, 10).map((h) => h.chunk_id)).toEqual(['z', 'a', 'b', 'c', 'y']);
    expect(rankHits(engine, 0)).toEqual([]);
    expect(engine[0]!.chunk_id).toBe('c'); // the input is not reordered
  });
});

describe('delete/count bodies', () => {
  it('delete a whole document, or all versions but one', () => {
    expect(documentQuery('d')).toEqual({ query: { bool: { filter: [{ term: { document_id: { value: 'd' } } }] } } });
    expect(documentQuery('d', 3)).toEqual({
      query: { bool: { filter: [{ term: { document_id: { value: 'd' } } }], must_not: [{ term: { version: { value: 3 } } }] } },
    });
  });

  it('several deletes in one query: each document with its own kept version, or one terms on the ids', () => {
    const q = documentsQuery([{ documentId: 'a', keepVersion: 2 }, { documentId: 'b' }, { documentId: 'c', keepVersion: 5 }]).query;
    const at = (document_id: string, version: number) => evaluate(q, toChunkDocument(chunk({ document_id, version })));
    expect([at('a', 1), at('a', 2), at('a', 3), at('b', 1), at('b', 7), at('c', 5), at('c', 4), at('d', 1)]).toEqual([true, false, true, true, true, false, true, false]);
    // The same rows as the single-document queries one after the other.
    for (const [id, v] of [['a', 1], ['a', 2], ['c', 5], ['c', 6], ['x', 2]] as const) {
      const one = [documentQuery('a', 2), documentQuery('b'), documentQuery('c', 5)].some((d) => evaluate(d.query, toChunkDocument(chunk({ document_id: id, version: v }))));
      expect(at(id, v), `${id}@${v}`).toBe(one);
    }
    expect(documentsQuery([{ documentId: 'a' }, { documentId: 'b' }, { documentId: 'a' }])).toEqual({ query: { bool: { filter: [{ terms: { document_id: ['a', 'b'] } }] } } });
    expect(() => documentsQuery([])).toThrow(/no documents/);
  });

  it('count all or one document', () => {
    expect(countQuery()).toEqual({ query: { match_all: {} } });
    expect(countQuery('x')).toEqual(documentQuery('x'));
  });

  it('delete query semantics', () => {
    const q = documentQuery('d', 2).query;
    expect(evaluate(q, toChunkDocument(chunk({ document_id: 'd', version: 1 })))).toBe(true);
    expect(evaluate(q, toChunkDocument(chunk({ document_id: 'd', version: 2 })))).toBe(false);
    expect(evaluate(q, toChunkDocument(chunk({ document_id: 'e', version: 1 })))).toBe(false);
  });
});

describe('contract: filter clauses ≡ matches() (property test over typed metadata)', () => {
  const KEYS = ['team', 'year', 'draft', 'tags'];
  const STRINGS = ['a', 'b', '5', 'true', '1', ''];

  function randomValue(r: () => number): MetadataValue {
    switch (Math.floor(r() * 5)) {
      case 0:
        return STRINGS[Math.floor(r() * STRINGS.length)]!;
      case 1:
        return [0, 1, 5, 2.5, -3][Math.floor(r() * 5)]!;
      case 2:
        return r() < 0.5;
      case 3:
        return STRINGS.filter(() => r() < 0.4);
      default:
        return [1, 5, 2024][Math.floor(r() * 3)]!;
    }
  }

  function randomCondition(r: () => number): Filters[string] {
    const scalar = (): string | number | boolean => {
      const c = Math.floor(r() * 3);
      return c === 0 ? STRINGS[Math.floor(r() * STRINGS.length)]! : c === 1 ? [0, 1, 5, 2.5, 2024][Math.floor(r() * 5)]! : r() < 0.5;
    };
    switch (Math.floor(r() * 4)) {
      case 0:
      case 1:
        return scalar();
      case 2: {
        const vals = Array.from({ length: 1 + Math.floor(r() * 3) }, () => {
          const v = scalar();
          return typeof v === 'boolean' ? String(v) : v;
        });
        return { in: vals };
      }
      default: {
        const range: { gte?: number; gt?: number; lte?: number; lt?: number } = {};
        if (r() < 0.5) range.gte = [0, 1, 2.5][Math.floor(r() * 3)]!;
        else range.gt = [0, 1][Math.floor(r() * 2)]!;
        if (r() < 0.5) range.lt = [5, 2024][Math.floor(r() * 2)]!;
        else range.lte = [5, 2.5][Math.floor(r() * 2)]!;
        return range;
      }
    }
  }

  it('agrees with matches() on 3000 random chunk/scope/filter combinations', () => {
    const r = rng(42);
    let matched = 0;
    for (let i = 0; i < 3000; i++) {
      const metadata: Record<string, MetadataValue> = {};
      for (const k of KEYS) if (r() < 0.7) metadata[k] = randomValue(r);
      const c = chunk({
        tenant: r() < 0.8 ? 't' : 'u',
        document_id: r() < 0.5 ? 'doc-a' : 'doc-b',
        acl: [['*'], ['g1'], ['g2', 'u1'], []][Math.floor(r() * 4)]!,
        metadata,
      });
      const scope: SearchScope = r() < 0.3 ? { tenant: 't' } : { tenant: 't', principals: [[], ['g1'], ['u1', 'g3']][Math.floor(r() * 3)]! };
      const filters: Filters = {};
      const nKeys = Math.floor(r() * 3);
      for (let j = 0; j < nKeys; j++) filters[KEYS[Math.floor(r() * KEYS.length)]!] = randomCondition(r);
      if (r() < 0.15) filters['document_id'] = r() < 0.7 ? 'doc-a' : { in: ['doc-b', 7] };
      if (r() < 0.05) filters['missing_key'] = 'a';

      const expected = matches(c, scope, filters);
      const clauses = filterClauses(scope, filters);
      const actual = clauses !== null && evaluate({ bool: { filter: clauses } }, toChunkDocument(chunk(JSON.parse(JSON.stringify(c)) as Chunk)));
      if (actual !== expected) {
        throw new Error(`mismatch for ${JSON.stringify({ metadata, acl: c.acl, tenant: c.tenant, scope, filters })}: matches()=${expected}`);
      }
      if (expected) matched++;
    }
    // The generator must exercise both outcomes meaningfully.
    expect(matched).toBeGreaterThan(200);
    expect(matched).toBeLessThan(2800);
  });

  it('type strictness: "5" ≠ 5, true ≠ 1, ranges ignore strings and booleans', () => {
    const doc = (metadata: Record<string, MetadataValue>) => toChunkDocument(chunk({ metadata }));
    const ok = (metadata: Record<string, MetadataValue>, filters: Filters) => evaluate({ bool: { filter: filterClauses({ tenant: 't' }, filters)! } }, doc(metadata));
    expect(ok({ v: '5' }, { v: 5 })).toBe(false);
    expect(ok({ v: 5 }, { v: '5' })).toBe(false);
    expect(ok({ v: 5 }, { v: 5 })).toBe(true);
    expect(ok({ v: true }, { v: 1 })).toBe(false);
    expect(ok({ v: 1 }, { v: true })).toBe(false);
    expect(ok({ v: ['5', 'true'] }, { v: 5 })).toBe(true); // string[] membership of String(5)
    expect(ok({ v: ['5', 'true'] }, { v: true })).toBe(true);
    expect(ok({ v: '7' }, { v: { gte: 1 } })).toBe(false);
    expect(ok({ v: true }, { v: { gte: 0 } })).toBe(false);
    expect(ok({ v: 7 }, { v: { gte: 1, lt: 7 } })).toBe(false);
    expect(ok({ v: 6.5 }, { v: { gte: 1, lt: 7 } })).toBe(true);
    expect(ok({}, { v: 'a' })).toBe(false);
  });
});
