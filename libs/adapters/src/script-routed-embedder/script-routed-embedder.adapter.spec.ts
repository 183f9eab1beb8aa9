import { loadConfig } from '@rag/platform';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { embeddingSpace } from '../factory';
import { OnnxEmbedder } from '../onnx-embedder';
import { TEST_MODELS_DIR, cosine, ensureTestModels, norm } from '../onnx-embedder/test-models';
import { ScriptRoutedEmbedder } from './script-routed-embedder.adapter';

/** A model that maps each text to a fixed unit vector and records what it was asked. */
class TableEmbedder implements Embedder {
  readonly calls: { texts: string[]; type: EmbedInputType }[] = [];
  constructor(
    readonly modelId: string,
    readonly dim: number,
    private readonly table: Record<string, number[]>,
  ) {}
  async embed(texts: string[], type: EmbedInputType): Promise<Float32Array[]> {
    this.calls.push({ texts, type });
    return texts.map((t) => {
      const v = Float32Array.from(this.table[t] ?? [1, ...new Array(this.dim - 1).fill(0)]);
      const n = norm(v);
      return v.map((x) => x / n);
    });
  }
}

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

describe('ScriptRoutedEmbedder', () => {
  const zh = () => new TableEmbedder('zh', 2, { 中文问题: [1, 0], 中文段落: [0.8, 0.6], 'English passage': [0, 1] });
  const en = () => new TableEmbedder('en', 3, { 'english question': [0, 0, 1], 'English passage': [0, 0.6, 0.8], 中文段落: [1, 0, 0] });

  it("passages: 'both' concatenates both models for passages into one unit vector of their summed dimension", async () => {
    const a = zh();
    const b = en();
    const e = new ScriptRoutedEmbedder(a, b, { passages: 'both' });
    expect(e.modelId).toBe('routed:zh+en');
    expect(e.dim).toBe(5);
    const [v] = await e.embed(['中文段落'], 'passage');
    expect(v).toHaveLength(5);
    expect(norm(v!)).toBeCloseTo(1);
    expect(a.calls).toEqual([{ texts: ['中文段落'], type: 'passage' }]);
    expect(b.calls).toEqual([{ texts: ['中文段落'], type: 'passage' }]);
  });

  it("passages: 'both' scores a Chinese query by the CJK model alone and an English query by the other, without running the unused one", async () => {
    const a = zh();
    const b = en();
    const e = new ScriptRoutedEmbedder(a, b, { passages: 'both' });
    const [pZh, pEn] = await e.embed(['中文段落', 'English passage'], 'passage');
    a.calls.length = 0;
    b.calls.length = 0;
    const [qZh, qEn] = await e.embed(['中文问题', 'english question'], 'query');
    expect(a.calls).toEqual([{ texts: ['中文问题'], type: 'query' }]);
    expect(b.calls).toEqual([{ texts: ['english question'], type: 'query' }]);
    // Inner product = that model's cosine / √2, the same factor for every passage: ranking is the model's own.
    expect(dot(qZh!, pZh!)).toBeCloseTo(0.8 / Math.SQRT2);
    expect(dot(qZh!, pEn!)).toBeCloseTo(0);
    expect(dot(qEn!, pEn!)).toBeCloseTo(0.8 / Math.SQRT2);
    expect(dot(qEn!, pZh!)).toBeCloseTo(0);
    expect(norm(qZh!)).toBeCloseTo(1);
  });

  it("passages: 'script' (the default) runs only the model of a passage's script, with a model id of its own", async () => {
    const a = zh();
    const b = en();
    const e = new ScriptRoutedEmbedder(a, b);
    expect(e.modelId).toBe('routed-script:zh+en');
    expect(ScriptRoutedEmbedder.space(a, b)).toEqual({ modelId: 'routed-script:zh+en', dim: 5 });
    expect(ScriptRoutedEmbedder.space(a, b, 'both')).toEqual({ modelId: 'routed:zh+en', dim: 5 });
    const [pZh, pEn] = await e.embed(['中文段落', 'English passage'], 'passage');
    expect(a.calls).toEqual([{ texts: ['中文段落'], type: 'passage' }]);
    expect(b.calls).toEqual([{ texts: ['English passage'], type: 'passage' }]);
    expect(norm(pZh!)).toBeCloseTo(1);
    expect(norm(pZh!.subarray(2))).toBeCloseTo(0); // no English half
    expect(norm(pEn!.subarray(0, 2))).toBeCloseTo(0); // no Chinese half
    // A query in one script scores passages by its model's cosine, unscaled.
    const [qZh, qEn] = await e.embed(['中文问题', 'english question'], 'query');
    expect(dot(qZh!, pZh!)).toBeCloseTo(0.8);
    expect(dot(qEn!, pEn!)).toBeCloseTo(0.8);
    expect(dot(qZh!, pEn!)).toBeCloseTo(0);
  });

  it("passages: 'script' embeds a mixed passage with both models by its script shares, ignoring a share under minShare", async () => {
    const a = zh();
    const b = en();
    const e = new ScriptRoutedEmbedder(a, b, { minShare: 0.1 });
    // 2 CJK characters + 1 Latin word → 2/3 : 1/3, both run; 20 CJK characters + 1 word → 1/21 < 0.1: Chinese model only.
    const mostlyChinese = '中文'.repeat(10) + ' Nexon';
    const [mixed, zhOnly] = await e.embed(['Nexon 开发', mostlyChinese], 'passage');
    expect(a.calls).toEqual([{ texts: ['Nexon 开发', mostlyChinese], type: 'passage' }]);
    expect(b.calls).toEqual([{ texts: ['Nexon 开发'], type: 'passage' }]);
    expect(norm(mixed!.subarray(0, 2)) / norm(mixed!.subarray(2))).toBeCloseTo(2);
    expect(norm(zhOnly!.subarray(2))).toBeCloseTo(0);
    expect(() => new ScriptRoutedEmbedder(a, b, { minShare: 0.5 })).toThrow(/minShare/);
  });

  it('blends both models for a mixed-script query, by its script weights', async () => {
    const e = new ScriptRoutedEmbedder(zh(), en());
    const [q] = await e.embed(['Nexon 开发'], 'query'); // 2 CJK characters, 1 Latin word → 2/3 : 1/3
    expect(norm(q!)).toBeCloseTo(1);
    const wa = norm(q!.subarray(0, 2));
    const wb = norm(q!.subarray(2));
    expect(wa / wb).toBeCloseTo(2);
  });

  it('returns [] for no input and closes both models', async () => {
    let closed = 0;
    const a = Object.assign(zh(), { close: async () => void closed++ });
    const b = Object.assign(en(), { close: async () => void closed++ });
    const e = new ScriptRoutedEmbedder(a, b);
    expect(await e.embed([], 'query')).toEqual([]);
    await e.close();
    expect(closed).toBe(2);
  });
});

describe.skipIf(process.env.RAG_SKIP_MODEL_TESTS === '1')('ScriptRoutedEmbedder (bge-small-zh-v1.5 + bge-small-en-v1.5)', () => {
  let e: ScriptRoutedEmbedder;
  beforeAll(async () => {
    ensureTestModels(['bge-small-zh-v1.5', 'bge-small-en-v1.5']);
    const [a, b] = await Promise.all(['bge-small-zh-v1.5', 'bge-small-en-v1.5'].map((name) => OnnxEmbedder.create({ modelsDir: TEST_MODELS_DIR, name, batchSize: 4 })));
    e = new ScriptRoutedEmbedder(a!, b!);
  }, 15 * 60_000);
  afterAll(() => e?.close());

  it('embeddingSpace names the same vectors without loading a model (what the indexer and retriever use)', async () => {
    const cfg = (model: string) => loadConfig({ RAG_EMBEDDER: 'onnx', RAG_EMBEDDING_MODEL: model, RAG_MODELS_DIR: TEST_MODELS_DIR, RAG_MODELS_AUTO_FETCH: 'false' });
    expect(await embeddingSpace(cfg('bge-small-zh-v1.5+bge-small-en-v1.5'))).toEqual({ modelId: e.modelId, dim: e.dim });
    expect(e).toMatchObject({ modelId: 'routed-script:onnx:bge-small-zh-v1.5+onnx:bge-small-en-v1.5', dim: 896 });
    const both = loadConfig({ RAG_EMBEDDER: 'onnx', RAG_EMBEDDING_MODEL: 'bge-small-zh-v1.5+bge-small-en-v1.5', RAG_EMBEDDING_PASSAGES: 'both', RAG_MODELS_DIR: TEST_MODELS_DIR, RAG_MODELS_AUTO_FETCH: 'false' });
    expect(await embeddingSpace(both)).toEqual({ modelId: 'routed:onnx:bge-small-zh-v1.5+onnx:bge-small-en-v1.5', dim: 896 });
    expect(await embeddingSpace(cfg('BGE-small-en-v1.5'))).toEqual({ modelId: 'onnx:bge-small-en-v1.5', dim: 384 });
  });

  it('finds the right passage for a Chinese and an English question in one mixed collection', async () => {
    const passages = [
      '长城是中国古代的军事防御工程，总长度超过两万公里。',
      '熊猫主要生活在四川的竹林里，以竹子为食。',
      'The boundary layer on a flat plate thickens downstream as the Reynolds number grows.',
      'Supersonic inlets use oblique shocks to slow the flow before the compressor.',
    ];
    const pv = await e.embed(passages, 'passage');
    const best = async (q: string) => {
      const [v] = await e.embed([q], 'query');
      return pv.map((p, i) => ({ i, s: cosine(v!, p) })).sort((x, y) => y.s - x.s)[0]!.i;
    };
    expect(await best('大熊猫吃什么？')).toBe(1);
    expect(await best('长城有多长')).toBe(0);
    expect(await best('how does the boundary layer grow along a flat plate')).toBe(2);
    expect(await best('what slows the air in a supersonic intake')).toBe(3);
  });
});
