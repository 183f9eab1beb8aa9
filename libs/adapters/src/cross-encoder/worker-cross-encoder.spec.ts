import { TEST_MODELS_DIR, ensureTestModels } from '../onnx-embedder/test-models';
import { OnnxWorkerHost } from '../onnx-embedder/worker-onnx-embedder';
import { buildPairScorer } from './pair-scorer.fixture';
import { CANDIDATES, QUERY } from './rerank-cases.fixture';
import { WorkerCrossEncoderReranker } from './worker-cross-encoder';


// The same stand-in model as cross-encoder.adapter.spec.ts (its own process: ONNX Runtime's binding serves one thread
// per process, and here every model runs in the ONNX worker).
describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('WorkerCrossEncoderReranker (in the ONNX worker thread, beside an embedding model)', () => {
  let reranker: WorkerCrossEncoderReranker;
  beforeAll(async () => {
    ensureTestModels(['all-minilm-l6-v2']);
    const name = buildPairScorer(TEST_MODELS_DIR);
    reranker = await WorkerCrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name, batchSize: 2 });
  }, 15 * 60_000);
  afterAll(() => reranker?.close());

  it('reports its id and length limit, and ranks as the in-process reranker does (same order as its spec)', async () => {
    expect([reranker.id, reranker.maxLength]).toEqual(['cross-encoder:test-pair-scorer-minilm', 256]);
    const out = await reranker.rerank(QUERY, CANDIDATES, 4);
    expect(out.map((c) => c.document_id)).toEqual(['doc:reset', 'doc:rules', 'doc:lunch', 'doc:revenue']);
    for (let i = 1; i < out.length; i++) expect(out[i - 1]!.score).toBeGreaterThanOrEqual(out[i]!.score);
    for (const c of out) {
      expect(c.score).toBeGreaterThan(0);
      expect(c.score).toBeLessThan(1);
      expect({ ...c, score: 0 }).toEqual({ ...CANDIDATES.find((x) => x.chunk_id === c.chunk_id), score: 0 });
    }
    expect(await reranker.rerank(QUERY, CANDIDATES, 2)).toHaveLength(2);
    expect(await reranker.rerank(QUERY, CANDIDATES, 0)).toEqual([]);
    expect(await reranker.rerank(QUERY, [], 5)).toEqual([]);
  });

  it('shares the thread with an embedding model, and a rerank goes before passage runs that were waiting', async () => {
    const [embedder] = await OnnxWorkerHost.create([{ modelsDir: TEST_MODELS_DIR, name: 'all-MiniLM-L6-v2', batchSize: 1 }]);
    try {
      const passages = Array.from({ length: 16 }, (_, i) => `Passage ${i} about password resets and security settings. `.repeat(3));
      const done: string[] = [];
      const ingest = embedder!.embed(passages, 'passage').then(() => done.push('passages'));
      const rerank = reranker.rerank(QUERY, CANDIDATES, 1).then((r) => done.push(`rerank ${r[0]!.document_id}`));
      await Promise.all([ingest, rerank]);
      expect(done).toEqual(['rerank doc:reset', 'passages']);
    } finally {
      await embedder!.close();
    }
  });

  it('refuses to rerank after close', async () => {
    const name = buildPairScorer(TEST_MODELS_DIR);
    const r = await WorkerCrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name, batchSize: 4, score: 'logit' });
    await r.close();
    await expect(r.rerank(QUERY, CANDIDATES, 1)).rejects.toThrow(/closed/);
  });

  it('fails to load an embedding model folder as a cross-encoder, as in-process', async () => {
    await expect(WorkerCrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name: 'all-minilm-l6-v2' })).rejects.toThrow(/not a cross-encoder/);
  });
});
