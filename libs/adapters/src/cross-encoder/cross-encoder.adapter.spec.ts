import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '@rag/platform';
import { TEST_MODELS_DIR, ensureTestModels } from '../onnx-embedder/test-models';
import { CrossEncoderReranker, sigmoid } from './cross-encoder.adapter';
import { buildPairScorer } from './pair-scorer.fixture';
import { CANDIDATES, QUERY, chunk } from './rerank-cases.fixture';


/*
 * No registry reachable from here ships a cross-encoder, so these tests run the real adapter code
 * (transformers.js AutoModelForSequenceClassification, pair tokenisation, batching, truncation,
 * logits → scores) on a stand-in model built from the fetched all-MiniLM-L6-v2 (see pair-scorer.fixture.ts).
 */
describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('CrossEncoderReranker (pair-scoring stand-in over all-MiniLM-L6-v2)', () => {
  let name: string;
  let reranker: CrossEncoderReranker;
  beforeAll(async () => {
    ensureTestModels(['all-minilm-l6-v2']);
    name = buildPairScorer(TEST_MODELS_DIR);
    reranker = await CrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name, batchSize: 2 });
  }, 15 * 60_000);
  afterAll(() => reranker?.close());

  it('reports its id and length limit', () => {
    expect(reranker.id).toBe('cross-encoder:test-pair-scorer-minilm');
    expect(reranker.maxLength).toBe(256);
  });

  it('orders candidates by the model, keeps their fields, replaces the score with sigmoid(logit)', async () => {
    const out = await reranker.rerank(QUERY, CANDIDATES, 4);
    expect(out.map((c) => c.document_id)).toEqual(['doc:reset', 'doc:rules', 'doc:lunch', 'doc:revenue']);
    for (let i = 1; i < out.length; i++) expect(out[i - 1].score).toBeGreaterThanOrEqual(out[i].score);
    for (const c of out) {
      expect(c.score).toBeGreaterThan(0);
      expect(c.score).toBeLessThan(1);
      const original = CANDIDATES.find((x) => x.chunk_id === c.chunk_id);
      expect({ ...c, score: 0 }).toEqual({ ...original, score: 0 });
    }
  });

  it('returns at most topN and nothing for topN 0 or no candidates', async () => {
    expect(await reranker.rerank(QUERY, CANDIDATES, 2)).toHaveLength(2);
    expect(await reranker.rerank(QUERY, CANDIDATES, 10)).toHaveLength(4);
    expect(await reranker.rerank(QUERY, CANDIDATES, 0)).toEqual([]);
    expect(await reranker.rerank(QUERY, [], 5)).toEqual([]);
  });

  it('gives the same logits whatever the batch size, in passage order', async () => {
    const wide = await CrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name, batchSize: 16, score: 'logit' });
    try {
      const texts = CANDIDATES.map((c) => c.text);
      const a = await reranker.logits(QUERY, texts);
      const b = await wide.logits(QUERY, texts);
      const single = await Promise.all(texts.map(async (t) => (await wide.logits(QUERY, [t]))[0]));
      a.forEach((x, i) => {
        expect(x).toBeCloseTo(b[i], 4);
        expect(x).toBeCloseTo(single[i], 4);
      });
      // score: 'logit' exposes the raw value; sigmoid of it is the default score.
      const [top] = await wide.rerank(QUERY, CANDIDATES, 1);
      const [topSig] = await reranker.rerank(QUERY, CANDIDATES, 1);
      expect(sigmoid(top.score)).toBeCloseTo(topSig.score, 5);
    } finally {
      await wide.close();
    }
  });

  it('truncates pairs longer than the model limit instead of failing', async () => {
    const long = 'The password reset page lists every step. '.repeat(400);
    const out = await reranker.rerank(QUERY, [chunk('long', long), ...CANDIDATES], 5);
    expect(out).toHaveLength(5);
    expect(out.every((c) => Number.isFinite(c.score))).toBe(true);
  });

  it('refuses to load an embedding model folder as a cross-encoder', async () => {
    await expect(CrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name: 'all-minilm-l6-v2' })).rejects.toThrow(/not a cross-encoder/);
  });
});

// Runs only where a real ms-marco cross-encoder was fetched (needs the Hugging Face hub).
const MS_MARCO = 'ms-marco-minilm-l-6-v2';
describe.skipIf(!existsSync(join(TEST_MODELS_DIR, MS_MARCO, 'config.json')))('CrossEncoderReranker (ms-marco-MiniLM-L-6-v2)', () => {
  it('ranks the answering passage first', async () => {
    const r = await CrossEncoderReranker.create({ modelsDir: TEST_MODELS_DIR, name: 'ms-marco-MiniLM-L-6-v2' });
    try {
      const out = await r.rerank(QUERY, CANDIDATES, 4);
      expect(out[0].document_id).toBe('doc:reset');
      expect(out[0].score).toBeGreaterThan(0.5);
      expect(out.at(-1)?.score).toBeLessThan(0.1);
    } finally {
      await r.close();
    }
  });
});

describe('CrossEncoderReranker.create without a model', () => {
  let empty: string;
  beforeAll(() => {
    empty = mkdtempSync(join(tmpdir(), 'rag-models-'));
  });
  afterAll(() => rmSync(empty, { recursive: true, force: true }));

  it('fails with a clear error saying how to get one', async () => {
    const err = await CrossEncoderReranker.create({ modelsDir: empty, name: 'ms-marco-MiniLM-L-6-v2' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('unavailable');
    expect((err as AppError).message).toMatch(/npm run models:fetch -- ms-marco-MiniLM-L-6-v2/);
    expect((err as AppError).message).toContain(join(empty, 'ms-marco-minilm-l-6-v2'));
  });
});
