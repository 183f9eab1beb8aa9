import type { Chunk } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import type { BulkIndexAction, ChunkDocument } from './documents';
import { TIE_MARGIN } from './query';
import { SearchEngineKeywordIndex } from './search-engine-keyword-index';
import { MemoryEngine } from './testing/memory-engine';
import { testChunkOf } from '@rag/contracts';

setLogLevel('silent');

const chunk = (doc: string, version: number, ordinal: number, over: Partial<Chunk> = {}): Chunk =>
  testChunkOf(doc, version, ordinal, { text: 'wing lift', token_count: 2, ...over });

describe('SearchEngineKeywordIndex (shared core over an in-memory engine)', () => {
  let engine: MemoryEngine;
  let index: SearchEngineKeywordIndex;

  beforeEach(() => {
    engine = new MemoryEngine();
    index = new SearchEngineKeywordIndex(engine, { prefix: 'kw' });
  });

  it('creates kw-v1 with read and write aliases on first use, once', async () => {
    await index.count();
    await index.count();
    expect(engine.ops().filter((o) => o === 'createIndex')).toHaveLength(1);
    expect([...engine.indices.keys()]).toEqual(['kw-v1']);
    expect([...engine.aliases.get('kw-read')!.keys()]).toEqual(['kw-v1']);
    expect(engine.aliases.get('kw-write')!.get('kw-v1')).toBe(true);
  });

  it('repairs a missing write alias and adopts an existing index created by another process', async () => {
    await engine.createIndex('kw-v1', { ...(await import('./mapping')).buildIndexBody(), aliases: { 'kw-read': {} } });
    await index.count();
    expect(engine.aliases.get('kw-write')!.get('kw-v1')).toBe(true);

    const e2 = new MemoryEngine();
    await e2.createIndex('kw-v1', (await import('./mapping')).buildIndexBody()); // no aliases at all
    await new SearchEngineKeywordIndex(e2, { prefix: 'kw' }).count();
    expect([...e2.aliases.keys()].sort()).toEqual(['kw-read', 'kw-write']);
  });

  it('upsert is idempotent, bulks without refresh then refreshes the write alias, batches and collapses duplicate ids', async () => {
    index = new SearchEngineKeywordIndex(engine, { prefix: 'kw', bulkBatchSize: 2 });
    const chunks = [chunk('a', 1, 0), chunk('a', 1, 1), chunk('a', 1, 2)];
    await index.upsert(chunks);
    await index.upsert(chunks);
    await index.upsert([chunk('b', 1, 0, { text: 'one' }), chunk('b', 1, 0, { text: 'two' })]);
    expect(await index.count()).toBe(4);
    const bulks = engine.calls.filter((c) => c.op === 'bulk');
    expect(bulks.map((b) => (b.args[0] as unknown[]).length / 2)).toEqual([2, 1, 2, 1, 1]);
    expect(bulks.every((b) => b.args[1] === false)).toBe(true);
    const refreshes = engine.calls.filter((c) => c.op === 'refresh');
    expect(refreshes).toHaveLength(3); // one per upsert call, after its last bulk
    expect(refreshes.every((r) => r.args[0] === 'kw-write')).toBe(true);
    expect(((bulks[0]!.args[0] as unknown[])[0] as BulkIndexAction).index._index).toBe('kw-write');
    expect((await index.getChunks(['b#v1#0']))[0]!.text).toBe('two');
  });

  it('concurrent upserts share refreshes, and each resolves only after a refresh that started after its bulk', async () => {
    index = new SearchEngineKeywordIndex(engine, { prefix: 'kw' });
    await index.upsert([chunk('warm', 1, 0)]);
    engine.calls.length = 0;
    await Promise.all(Array.from({ length: 6 }, (_, i) => index.upsert([chunk(`p${i}`, 1, 0)])));
    const ops = engine.calls.map((c) => c.op).filter((op) => op === 'bulk' || op === 'refresh');
    expect(ops.filter((op) => op === 'bulk')).toHaveLength(6);
    const refreshes = ops.filter((op) => op === 'refresh').length;
    expect(refreshes).toBeGreaterThanOrEqual(1);
    expect(refreshes).toBeLessThan(6);
    // the last bulk is followed by a refresh
    expect(ops.lastIndexOf('refresh')).toBeGreaterThan(ops.lastIndexOf('bulk'));
    expect(await index.count()).toBe(7);
  });

  it('search: filters and scope inside the query; parents never match', async () => {
    await index.upsert([
      chunk('a', 1, 0, { metadata: { team: 'x' }, text: 'wing wing wing' }),
      chunk('b', 1, 0, { metadata: { team: 'y' }, text: 'wing' }),
      chunk('c', 1, 0, { metadata: { team: 'y' }, text: 'wing', acl: ['g1'] }),
      chunk('d', 1, 0, { metadata: { team: 'y' }, text: 'wing', tenant: 'other' }),
      chunk('e', 1, 0, { kind: 'parent', text: 'wing wing wing wing' }),
    ]);
    const all = await index.search({ query: 'wings', k: 10, scope: { tenant: 't' } });
    expect(all.map((h) => h.chunk_id)).toEqual(['a#v1#0', 'b#v1#0', 'c#v1#0']);
    const filtered = await index.search({ query: 'wings', k: 10, scope: { tenant: 't', principals: ['u9'] }, filters: { team: 'y' } });
    expect(filtered.map((h) => h.chunk_id)).toEqual(['b#v1#0']);
    expect(filtered[0]).toMatchObject({ document_id: 'b', version: 1 });
    expect(await index.search({ query: 'the and of', k: 10, scope: { tenant: 't' } })).toEqual([]);
    expect(engine.calls.filter((c) => c.op === 'search').every((c) => c.args[0] === 'kw-read')).toBe(true);
  });

  it('search: the engine ranks by score alone; ties at the k-th hit go to the lower chunk id, as in the embedded index', async () => {
    // Indexed in reverse id order: the engine (like Lucene with a score-only sort) returns equal scores in index order.
    await index.upsert(['e', 'd', 'c', 'b', 'a'].map((doc) => chunk(doc, 1, 0, { text: 'wing' })));
    await index.upsert([chunk('z', 1, 0, { text: 'wing wing' })]);
    const hits = await index.search({ query: 'wing', k: 3, scope: { tenant: 't' } });
    expect(hits.map((h) => h.chunk_id)).toEqual(['z#v1#0', 'a#v1#0', 'b#v1#0']);
    const body = engine.calls.filter((c) => c.op === 'search').at(-1)!.args[1] as { size: number; sort?: unknown };
    expect(body.size).toBe(3 + TIE_MARGIN);
    expect(body.sort).toBeUndefined();
  });

  it('getChunks: asked order, duplicates once, unknown skipped, long ids through their hash', async () => {
    const long = chunk('x'.repeat(600), 1, 0);
    await index.upsert([chunk('a', 1, 0), chunk('a', 1, 1), long, chunk('p', 1, 0, { kind: 'parent' })]);
    const got = await index.getChunks(['a#v1#1', 'nope', long.chunk_id, 'a#v1#1', 'a#v1#0', 'p#v1#0']);
    expect(got.map((c) => c.chunk_id)).toEqual(['a#v1#1', long.chunk_id, 'a#v1#0', 'p#v1#0']);
    expect(got[1]).toEqual(long);
    expect(await index.getChunks([])).toEqual([]);
  });

  it('deleteDocument: all versions, or all but keepVersion; through both aliases', async () => {
    await index.upsert([chunk('a', 1, 0), chunk('a', 1, 1), chunk('a', 2, 0), chunk('b', 1, 0)]);
    expect(await index.deleteDocument('a', 2)).toBe(2);
    expect(await index.count('a')).toBe(1);
    expect(await index.deleteDocument('a')).toBe(1);
    expect(await index.count('a')).toBe(0);
    expect(await index.count()).toBe(1);
    const del = engine.calls.find((c) => c.op === 'deleteByQuery')!;
    expect(del.args[0]).toEqual(['kw-write', 'kw-read']);
  });

  it('blue/green: reindex to v2, writes switch first, reads switch atomically, old kept or deleted', async () => {
    await index.upsert([chunk('a', 1, 0), chunk('b', 1, 0)]);
    const summary = await index.reindexAndSwap();
    expect(summary).toEqual({ from: 'kw-v1', to: 'kw-v2', copied: 2, skipped: 0, deletedOld: false });
    expect([...engine.aliases.get('kw-read')!.keys()]).toEqual(['kw-v2']);
    expect([...engine.aliases.get('kw-write')!.entries()]).toEqual([['kw-v2', true]]);
    expect(await index.count()).toBe(2);
    await index.upsert([chunk('c', 1, 0)]);
    expect(engine.indices.get('kw-v2')!.docs.has('c#v1#0')).toBe(true);
    expect(engine.indices.get('kw-v1')!.docs.has('c#v1#0')).toBe(false);

    // Order of operations: create → move write alias → reindex → refresh → swap read alias.
    const ops = engine.ops();
    const at = (op: string, from = 0) => ops.indexOf(op, from);
    const create = ops.lastIndexOf('createIndex');
    const firstUpdate = at('updateAliases', create);
    expect(create).toBeLessThan(firstUpdate);
    expect(firstUpdate).toBeLessThan(at('reindex'));
    expect(at('reindex')).toBeLessThan(at('refresh', at('reindex')));
    expect(at('refresh', at('reindex'))).toBeLessThan(at('updateAliases', at('refresh', at('reindex'))));

    const s2 = await index.reindexAndSwap({ deleteOld: true });
    expect(s2).toMatchObject({ from: 'kw-v2', to: 'kw-v3', deletedOld: true });
    expect(engine.indices.has('kw-v2')).toBe(false);
    expect(await index.count()).toBe(3);
  });

  it('reindex: chunks already rewritten in the new index are not overwritten by old copies', async () => {
    await index.upsert([chunk('a', 1, 0, { text: 'old' })]);
    // Simulate a write landing in v2 between the write-alias move and the copy.
    const original = engine.reindex.bind(engine);
    engine.reindex = async (source: string, dest: string) => {
      const docs = engine.indices.get(dest)!.docs;
      const fresh = JSON.parse(JSON.stringify(engine.indices.get(source)!.docs.get('a#v1#0'))) as ChunkDocument;
      fresh.chunk.text = 'new';
      docs.set('a#v1#0', fresh);
      return original(source, dest);
    };
    const s = await index.reindexAndSwap();
    expect(s).toMatchObject({ copied: 0, skipped: 1 });
    expect((await index.getChunks(['a#v1#0']))[0]!.text).toBe('new');
  });

  it('reindex refuses an existing target', async () => {
    await index.count();
    await engine.createIndex('kw-v2', (await import('./mapping')).buildIndexBody());
    await expect(index.reindexAndSwap()).rejects.toThrow(/already exists/);
  });

  it('errors become AppError(unavailable); a hanging call hits the deadline', async () => {
    engine.failNext = { op: 'search', error: Object.assign(new Error('connect ECONNREFUSED'), { name: 'ConnectionError' }) };
    await expect(index.search({ query: 'wing', k: 3, scope: { tenant: 't' } })).rejects.toMatchObject({ code: 'unavailable' });

    engine.failNext = { op: 'count', error: Object.assign(new Error('Request timed out'), { name: 'TimeoutError' }) };
    await expect(index.count()).rejects.toMatchObject({ code: 'deadline_exceeded' });

    const slow = new MemoryEngine();
    slow.hang = 'getAliasTargets';
    const idx = new SearchEngineKeywordIndex(slow, { prefix: 'kw', adminTimeoutMs: 20 });
    await expect(idx.count()).rejects.toMatchObject({ code: 'deadline_exceeded' });
  });

  it('bulk item failures fail the upsert', async () => {
    await index.count();
    engine.bulk = async () => ({
      took: 1,
      errors: true,
      items: [{ index: { _id: 'a#v1#0', status: 400, error: { type: 'mapper_parsing_exception', reason: 'bad' } } }],
    });
    await expect(index.upsert([chunk('a', 1, 0)])).rejects.toThrow(/1 of 1 chunks were not indexed; first: a#v1#0 \(400\) mapper_parsing_exception: bad/);
  });

  it('dropAll deletes only this prefix; close closes the client and blocks later calls', async () => {
    await index.count();
    await engine.createIndex('kw-other', (await import('./mapping')).buildIndexBody());
    expect(await index.dropAll()).toEqual(['kw-v1']);
    expect([...engine.indices.keys()]).toEqual(['kw-other']);
    await index.close();
    expect(engine.closed).toBe(true);
    await expect(index.count()).rejects.toThrow(/closed/);
  });
});
