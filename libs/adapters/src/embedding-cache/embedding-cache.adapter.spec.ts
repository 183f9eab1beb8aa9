import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { CachedEmbedder } from './embedding-cache.adapter';

/** Deterministic fake: vector depends on text and input type; records every call. */
class CountingEmbedder implements Embedder {
  readonly dim = 4;
  calls: Array<{ texts: string[]; inputType: EmbedInputType }> = [];
  closed = false;
  delayMs = 0;
  constructor(readonly modelId = 'fake-v1') {}

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    this.calls.push({ texts: [...texts], inputType });
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    return texts.map((t) => Float32Array.from([t.length, inputType === 'query' ? 1 : 2, t.charCodeAt(0) || 0, this.modelId.length]));
  }
  async close(): Promise<void> {
    this.closed = true;
  }
  get texts(): number {
    return this.calls.reduce((n, c) => n + c.texts.length, 0);
  }
}

const arr = (vs: Float32Array[]) => vs.map((v) => Array.from(v));

describe('CachedEmbedder', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rag-embcache-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('passes through id and dimension', () => {
    const c = new CachedEmbedder(new CountingEmbedder('m-x'));
    expect(c.modelId).toBe('m-x');
    expect(c.dim).toBe(4);
  });

  it('sends only misses to the inner embedder and keeps input order', async () => {
    const inner = new CountingEmbedder();
    const c = new CachedEmbedder(inner);
    const first = await c.embed(['a', 'bb', 'ccc'], 'passage');
    expect(c.stats()).toMatchObject({ hits: 0, misses: 3, memoryHits: 0 });

    const second = await c.embed(['dddd', 'bb', 'a', 'eeeee'], 'passage');
    expect(inner.calls.map((x) => x.texts)).toEqual([['a', 'bb', 'ccc'], ['dddd', 'eeeee']]);
    expect(c.stats()).toMatchObject({ hits: 2, misses: 5, memoryHits: 2, diskHits: 0 });
    expect(arr(second)).toEqual(arr(await inner.embed(['dddd', 'bb', 'a', 'eeeee'], 'passage')));
    expect(arr([second[1], second[2]])).toEqual(arr([first[1], first[0]]));
  });

  it('keys on input type: a query and a passage of the same text are different entries', async () => {
    const inner = new CountingEmbedder();
    const c = new CachedEmbedder(inner);
    const [q] = await c.embed(['same'], 'query');
    const [p] = await c.embed(['same'], 'passage');
    expect(inner.texts).toBe(2);
    expect(Array.from(q)).not.toEqual(Array.from(p));
    await c.embed(['same'], 'query');
    expect(c.stats()).toMatchObject({ hits: 1, misses: 2 });
  });

  it('folds duplicates within one call', async () => {
    const inner = new CountingEmbedder();
    const c = new CachedEmbedder(inner);
    const out = await c.embed(['x', 'y', 'x', 'x'], 'passage');
    expect(inner.calls).toEqual([{ texts: ['x', 'y'], inputType: 'passage' }]);
    expect(out).toHaveLength(4);
    expect(arr([out[0], out[2], out[3]])).toEqual(arr([out[0], out[0], out[0]]));
    expect(c.stats()).toMatchObject({ hits: 2, misses: 2 });
  });

  it('shares one computation between concurrent calls for the same text', async () => {
    const inner = new CountingEmbedder();
    inner.delayMs = 30;
    const c = new CachedEmbedder(inner);
    const [a, b] = await Promise.all([c.embed(['slow', 'one'], 'passage'), c.embed(['slow', 'two'], 'passage')]);
    expect(inner.texts).toBe(3);
    expect(Array.from(a[0])).toEqual(Array.from(b[0]));
    expect(c.stats()).toMatchObject({ hits: 1, misses: 3 });
  });

  it('evicts the least recently used entry beyond maxEntries', async () => {
    const inner = new CountingEmbedder();
    const c = new CachedEmbedder(inner, { maxEntries: 2 });
    await c.embed(['a', 'b'], 'passage');
    await c.embed(['a'], 'passage'); // a is now more recent than b
    await c.embed(['c'], 'passage'); // evicts b
    expect(c.stats().memoryEntries).toBe(2);
    await c.embed(['a', 'c', 'b'], 'passage');
    expect(inner.calls.at(-1)?.texts).toEqual(['b']);
    expect(c.stats()).toMatchObject({ hits: 3, misses: 4 });
  });

  it('returns copies, so a caller mutating a vector does not corrupt the cache', async () => {
    const c = new CachedEmbedder(new CountingEmbedder());
    const [v] = await c.embed(['abc'], 'passage');
    v[0] = 999;
    const [again] = await c.embed(['abc'], 'passage');
    expect(again[0]).toBe(3);
  });

  it('persists to SQLite across instances, per model id', async () => {
    const file = join(dir, 'nested', 'cache.sqlite');
    const inner1 = new CountingEmbedder('model-a');
    const c1 = new CachedEmbedder(inner1, { sqlitePath: file });
    const original = await c1.embed(['alpha', 'beta'], 'passage');
    await c1.close();
    expect(inner1.closed).toBe(true);

    const inner2 = new CountingEmbedder('model-a');
    const c2 = new CachedEmbedder(inner2, { sqlitePath: file, maxEntries: 0 });
    const again = await c2.embed(['beta', 'gamma', 'alpha'], 'passage');
    expect(inner2.calls.map((x) => x.texts)).toEqual([['gamma']]);
    expect(c2.stats()).toMatchObject({ hits: 2, diskHits: 2, memoryHits: 0, misses: 1 });
    expect(arr([again[0], again[2]])).toEqual(arr([original[1], original[0]]));
    await c2.close();

    // Another model id over the same file shares nothing.
    const inner3 = new CountingEmbedder('model-b');
    const c3 = new CachedEmbedder(inner3, { sqlitePath: file });
    await c3.embed(['alpha'], 'passage');
    expect(inner3.texts).toBe(1);
    expect(c3.stats()).toMatchObject({ hits: 0, misses: 1 });
    await c3.close();
  });

  it('propagates inner failures and does not cache them', async () => {
    const inner = new CountingEmbedder();
    const c = new CachedEmbedder(inner);
    const failing = vi.spyOn(inner, 'embed').mockRejectedValueOnce(new Error('boom'));
    await expect(c.embed(['x'], 'passage')).rejects.toThrow('boom');
    failing.mockRestore();
    const [v] = await c.embed(['x'], 'passage');
    expect(v[0]).toBe(1);
    expect(inner.texts).toBe(1);
  });

  it('answers [] for no input without calling the inner embedder', async () => {
    const inner = new CountingEmbedder();
    expect(await new CachedEmbedder(inner).embed([], 'query')).toEqual([]);
    expect(inner.calls).toHaveLength(0);
  });
});
