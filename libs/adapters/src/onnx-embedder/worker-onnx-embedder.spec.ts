import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '@rag/platform';
import { OnnxWorkerHost, type WorkerOnnxEmbedder } from './worker-onnx-embedder';
import { TEST_MODELS_DIR, cosine, ensureTestModels, norm } from './test-models';

// ONNX Runtime's Node binding serves one thread per process, so this file never loads a model on its own thread: every
// model here runs in the shared worker (the in-process OnnxEmbedder has its own spec file, i.e. its own process).
const MODELS = ['all-minilm-l6-v2', 'bge-small-en-v1.5-q'];
const PASSAGES = Array.from({ length: 24 }, (_, i) => `Passage ${i}: the boundary layer over a flat plate at Mach ${i % 7} with heat transfer. `.repeat(4));

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('WorkerOnnxEmbedder (real models, one worker thread)', () => {
  let minilm: WorkerOnnxEmbedder;
  let bge: WorkerOnnxEmbedder;
  beforeAll(async () => {
    ensureTestModels(MODELS);
    [minilm, bge] = await OnnxWorkerHost.create([
      { modelsDir: TEST_MODELS_DIR, name: 'all-MiniLM-L6-v2', batchSize: 2 },
      { modelsDir: TEST_MODELS_DIR, name: 'bge-small-en-v1.5-q', batchSize: 1 },
    ]);
  }, 15 * 60_000);
  afterAll(async () => {
    await minilm?.close();
    await bge?.close();
  });

  it('loads both models in the one worker and reports their ids and dimensions', () => {
    expect([minilm.modelId.toLowerCase(), minilm.dim, minilm.batchSize]).toEqual(['onnx:all-minilm-l6-v2', 384, 2]);
    expect([bge.modelId, bge.dim]).toEqual(['onnx:bge-small-en-v1.5-q', 384]);
  });

  it('embeds in input order with unit vectors, whatever order the runs come back in', async () => {
    const texts = ['The cat sat on the mat.', 'A kitten is resting on a rug.', 'Quarterly revenue grew by twelve percent.'];
    const [cat, kitten, revenue] = await minilm.embed(texts, 'passage');
    for (const v of [cat!, kitten!, revenue!]) expect(norm(v)).toBeCloseTo(1, 5);
    expect(cosine(cat!, kitten!)).toBeGreaterThan(cosine(cat!, revenue!) + 0.2);
    // each text alone gives the same vector as in the call (runs are cut longest first, results put back in order)
    const alone = await Promise.all(texts.map(async (t) => (await minilm.embed([t], 'passage'))[0]!));
    alone.forEach((v, i) => expect(cosine(v, [cat!, kitten!, revenue!][i]!)).toBeGreaterThan(0.9999));
    expect(await minilm.embed([], 'passage')).toEqual([]);
  });

  it('keeps the event loop free while it embeds (timers run between every run, not only between calls)', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const vectors = await bge.embed(PASSAGES, 'passage');
    clearInterval(timer);
    expect(vectors).toHaveLength(PASSAGES.length);
    // In-process, each of the 24 runs held the thread, so at most one tick could fire per run. Here the thread only waits.
    expect(ticks).toBeGreaterThan(2 * PASSAGES.length);
  });

  it("runs a query before passage runs that were waiting, so a question asked during an ingestion is not queued behind it", async () => {
    const done: string[] = [];
    const passages = bge.embed(PASSAGES, 'passage').then(() => done.push('passages'));
    const query = bge.embed(['what is a boundary layer?'], 'query').then(() => done.push('query'));
    await Promise.all([passages, query]);
    expect(done).toEqual(['query', 'passages']);
  });

  it('a model loaded again with the same options shares the worker; closing one user keeps it for the other', async () => {
    const [again] = await OnnxWorkerHost.create([{ modelsDir: TEST_MODELS_DIR, name: 'all-MiniLM-L6-v2', batchSize: 2 }]);
    const [a] = await again!.embed(['shared model'], 'query');
    await again!.close();
    await expect(again!.embed(['x'], 'query')).rejects.toThrow(/closed/);
    const [b] = await minilm.embed(['shared model'], 'query');
    expect(cosine(a!, b!)).toBeGreaterThan(0.9999);
  });

  it('closed and created again in the same process (a platform restarted in-process) it embeds again', async () => {
    const [first] = await OnnxWorkerHost.create([{ modelsDir: TEST_MODELS_DIR, name: 'bge-small-en-v1.5-q', batchSize: 4 }]);
    const [v1] = await first!.embed(['restart'], 'passage');
    await first!.close();
    const [second] = await OnnxWorkerHost.create([{ modelsDir: TEST_MODELS_DIR, name: 'bge-small-en-v1.5-q', batchSize: 4 }]);
    const [v2] = await second!.embed(['restart'], 'passage');
    await second!.close();
    expect(cosine(v1!, v2!)).toBeGreaterThan(0.9999);
  });

  it('rejects a malformed task at the worker edge with invalid_request and keeps serving', async () => {
    const r = await OnnxWorkerHost.shared().run({ op: 'embed', key: 'no such model', texts: [1 as unknown as string], inputType: 'query' });
    expect(r).toMatchObject({ ok: false, code: 'invalid_request' });
    const missing = await OnnxWorkerHost.shared().run({ op: 'embed', key: 'no such model', texts: ['x'], inputType: 'query' });
    expect(missing).toMatchObject({ ok: false, code: 'unavailable' });
    expect(await minilm.embed(['still here'], 'query')).toHaveLength(1);
  });
});

describe('OnnxWorkerHost.create without a fetched model', () => {
  let empty: string;
  beforeAll(() => {
    empty = mkdtempSync(join(tmpdir(), 'rag-models-'));
  });
  afterAll(() => rmSync(empty, { recursive: true, force: true }));

  it('fails as OnnxEmbedder.create does: unavailable, naming the folder and the fetch command', async () => {
    const err = await OnnxWorkerHost.create([{ modelsDir: empty, name: 'bge-small-en-v1.5' }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('unavailable');
    expect((err as AppError).message).toMatch(/npm run models:fetch/);
    expect((err as AppError).message).toContain(join(empty, 'bge-small-en-v1.5'));
  });
});
