import type { Chunk } from '@rag/contracts';
import { segmentForIndex } from '@rag/domain';
import { indexedText as embeddedIndexedText } from '../embedded-bm25/embedded-bm25.adapter';
import { bulkIndexOperations, engineId, indexedText, MAX_ENGINE_ID_BYTES, toChunkDocument } from './documents';
import { buildIndexBody, decodeFieldKey, encodeFieldKey, indexNames, metadataField, SIMILARITY_NAME } from './mapping';
import { testChunk } from '@rag/contracts';

const chunk = (over: Partial<Chunk> = {}): Chunk =>
  testChunk('d#v1#0', {
    parent_id: 'd#v1#p0',
    acl: ['g1', '*'],
    title: 'Wing Design',
    heading_path: ['Aerodynamics', 'Lift'],
    metadata: { team: 'aero', year: 2024, draft: false, tags: ['a', 'b'], 'dotted.key': 'x' },
    text: 'The wings were tested at supersonic speeds.',
    token_count: 8,
    ...over,
  });

describe('index names', () => {
  it('read/write aliases and versioned physical indexes', () => {
    const n = indexNames('rag-chunks');
    expect(n.readAlias).toBe('rag-chunks-read');
    expect(n.writeAlias).toBe('rag-chunks-write');
    expect(n.physical(1)).toBe('rag-chunks-v1');
    expect(n.versionOf('rag-chunks-v12')).toBe(12);
    expect(n.versionOf('rag-chunks-read')).toBeNull();
    expect(n.versionOf('other-v1')).toBeNull();
    expect(() => n.physical(0)).toThrow();
  });

  it('escapes regex characters of the prefix', () => {
    const n = indexNames('a.b');
    expect(n.versionOf('a.b-v2')).toBe(2);
    expect(n.versionOf('axb-v2')).toBeNull();
  });

  it('rejects prefixes the engines would reject', () => {
    for (const bad of ['Upper', '-lead', '_lead', 'has space', 'a/b', 'a*b', '', '.', '..']) expect(() => indexNames(bad)).toThrow();
  });
});

describe('field key encoding', () => {
  it('keeps [A-Za-z0-9_-], encodes the rest, never yields a dot', () => {
    expect(encodeFieldKey('team_name-1')).toBe('team_name-1');
    expect(encodeFieldKey('a.b')).toBe('a~002eb');
    expect(encodeFieldKey('~')).toBe('~007e');
    expect(encodeFieldKey('部门')).toBe('~90e8~95e8');
    for (const k of ['a.b', 'x y', '~007e', '部门', '😀', 'a~b.c']) {
      expect(encodeFieldKey(k)).not.toContain('.');
      expect(decodeFieldKey(encodeFieldKey(k))).toBe(k);
    }
  });

  it('is injective on tricky pairs', () => {
    expect(encodeFieldKey('a.b')).not.toBe(encodeFieldKey('a~002eb'));
    expect(metadataField('string', 'k')).toBe('md_s.k');
    expect(metadataField('array', 'k')).toBe('md_a.k');
    expect(metadataField('number', 'k')).toBe('md_n.k');
    expect(metadataField('boolean', 'k')).toBe('md_b.k');
  });
});

describe('index body', () => {
  it('BM25 similarity with configurable k1/b on both text fields', () => {
    const body = buildIndexBody({ k1: 1.1, b: 0.6 });
    expect(body.settings.index['similarity']).toEqual({ [SIMILARITY_NAME]: { type: 'BM25', k1: 1.1, b: 0.6 } });
    expect(body.mappings.properties['text']).toEqual({ type: 'text', analyzer: 'standard', similarity: SIMILARITY_NAME });
    expect(body.mappings.properties['text_seg']).toEqual({ type: 'text', analyzer: 'whitespace', similarity: SIMILARITY_NAME });
    expect(buildIndexBody().settings.index['similarity']).toEqual({ [SIMILARITY_NAME]: { type: 'BM25', k1: 0.9, b: 0.4 } });
  });

  it('keyword security fields, long version, typed metadata templates, non-indexed chunk', () => {
    const m = buildIndexBody().mappings;
    for (const f of ['chunk_id', 'document_id', 'tenant', 'acl', 'kind']) expect(m.properties[f]).toEqual({ type: 'keyword' });
    expect(m.properties['version']).toEqual({ type: 'long' });
    expect(m.properties['chunk']).toEqual({ type: 'object', enabled: false });
    expect(m.dynamic).toBe('strict');
    expect(m.dynamic_templates.map((t) => Object.values(t)[0]!.path_match)).toEqual(['md_s.*', 'md_a.*', 'md_n.*', 'md_b.*']);
    expect(m.dynamic_templates.map((t) => Object.values(t)[0]!.mapping['type'])).toEqual(['keyword', 'keyword', 'double', 'boolean']);
  });

  it('shards/replicas and validation', () => {
    const s = buildIndexBody({ shards: 3, replicas: 1 }).settings.index;
    expect(s['number_of_shards']).toBe(3);
    expect(s['number_of_replicas']).toBe(1);
    expect(() => buildIndexBody({ b: 1.5 })).toThrow();
    expect(() => buildIndexBody({ k1: -1 })).toThrow();
  });
});

describe('chunk documents', () => {
  it('children: text, pre-segmented text_seg, typed metadata, full chunk', () => {
    const c = chunk();
    const d = toChunkDocument(c);
    expect(d.text).toBe('Wing Design\nAerodynamics\nLift\nThe wings were tested at supersonic speeds.');
    expect(d.text_seg).toBe(segmentForIndex(d.text!));
    expect(d.text_seg!.split(' ')).toContain('wing'); // stemmed like the embedded index
    expect(d.md_s).toEqual({ team: 'aero', 'dotted~002ekey': 'x' });
    expect(d.md_n).toEqual({ year: 2024 });
    expect(d.md_b).toEqual({ draft: false });
    expect(d.md_a).toEqual({ tags: ['a', 'b'] });
    expect(d.chunk).toEqual(c);
    expect(d).toMatchObject({ chunk_id: c.chunk_id, document_id: 'd', tenant: 't', version: 1, kind: 'child', acl: ['g1', '*'] });
  });

  it('parents carry no searchable text', () => {
    const d = toChunkDocument(chunk({ kind: 'parent', parent_id: null }));
    expect(d.text).toBeUndefined();
    expect(d.text_seg).toBeUndefined();
    expect(d.chunk.kind).toBe('parent');
  });

  it('indexes the same text as the embedded BM25 index', () => {
    for (const c of [chunk(), chunk({ title: '', heading_path: [] }), chunk({ title: '首都', heading_path: ['北京'], text: '中国的首都是北京。' })]) {
      expect(indexedText(c)).toBe(embeddedIndexedText(c));
    }
  });

  it('Chinese text is segmented into words', () => {
    const d = toChunkDocument(chunk({ title: '', heading_path: [], text: '北京是中华人民共和国的首都。' }));
    expect(d.text_seg!.split(' ')).toContain('首都');
  });

  it('engine ids: the chunk id, or a hash when longer than 512 bytes', () => {
    expect(engineId('d#v1#0')).toBe('d#v1#0');
    const long = `${'文'.repeat(200)}#v1#0`; // 600+ bytes
    const id = engineId(long);
    expect(id).toMatch(/^#sha256:[0-9a-f]{64}$/);
    expect(Buffer.byteLength(id)).toBeLessThanOrEqual(MAX_ENGINE_ID_BYTES);
    expect(engineId(long)).toBe(id);
  });

  it('bulk operations: index action to the write alias + document', () => {
    const ops = bulkIndexOperations('p-write', [chunk(), chunk({ chunk_id: 'd#v1#1' })]);
    expect(ops).toHaveLength(4);
    expect(ops[0]).toEqual({ index: { _index: 'p-write', _id: 'd#v1#0' } });
    expect(ops[2]).toEqual({ index: { _index: 'p-write', _id: 'd#v1#1' } });
    expect((ops[3] as { chunk_id: string }).chunk_id).toBe('d#v1#1');
  });
});
