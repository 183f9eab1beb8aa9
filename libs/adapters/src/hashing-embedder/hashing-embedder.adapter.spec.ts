import { AppError } from '@rag/platform';
import { HashingEmbedder } from './hashing-embedder.adapter';

function cosine(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s; // both unit length
}
const norm = (v: Float32Array) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('HashingEmbedder', () => {
  const e = new HashingEmbedder();

  it('names itself for what it is, with its dimension', () => {
    expect(e.modelId).toBe('hashing-lexical-v1-384');
    expect(e.dim).toBe(384);
    expect(new HashingEmbedder({ dim: 1024 }).modelId).toBe('hashing-lexical-v1-1024');
    // Options that change the vectors change the id.
    expect(new HashingEmbedder({ charNgrams: [] }).modelId).toBe('hashing-lexical-v1-384-c0');
    expect(new HashingEmbedder({ wordBigrams: false }).modelId).toBe('hashing-lexical-v1-384-c34-nobigram');
  });

  it('is deterministic across instances and calls', async () => {
    const [a] = await e.embed(['Kafka consumer groups rebalance'], 'passage');
    const [b] = await new HashingEmbedder().embed(['Kafka consumer groups rebalance'], 'query');
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it('returns unit vectors of the configured dimension, in input order', async () => {
    const texts = ['first text about wings', 'second text about engines', '', 'the of and'];
    const vs = await e.embed(texts, 'passage');
    expect(vs).toHaveLength(4);
    for (const v of vs) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v).toHaveLength(384);
      expect(norm(v)).toBeCloseTo(1, 5);
    }
    expect(Array.from(vs[0])).toEqual(Array.from(e.embedOne('first text about wings')));
  });

  it('ranks texts sharing words above unrelated ones', async () => {
    const [q, rel, unrel] = await e.embed(
      ['pressure distribution on a swept wing', 'measured pressure distributions over swept wings at high speed', 'the committee approved the annual budget'],
      'passage',
    );
    expect(cosine(q, rel)).toBeGreaterThan(0.3);
    expect(cosine(q, rel)).toBeGreaterThan(cosine(q, unrel) + 0.25);
  });

  it('matches word pieces through character n-grams (misspellings, compounds)', async () => {
    const [a, typo, other] = await e.embed(['aerodynamic heating'], 'query').then(async (x) => [
      x[0],
      ...(await e.embed(['aerodynamik heatting', 'budget committee'], 'passage')),
    ]);
    expect(cosine(a, typo)).toBeGreaterThan(0.2);
    expect(cosine(a, typo)).toBeGreaterThan(cosine(a, other) + 0.15);
  });

  it('handles Chinese through segmentation plus character features', async () => {
    const [q, rel, unrel] = await e.embed(['如何重置密码', '忘记密码后可以在登录页面重置密码', '今年第三季度营收增长'], 'passage');
    expect(cosine(q, rel)).toBeGreaterThan(cosine(q, unrel) + 0.2);
  });

  it('weights repeated terms sublinearly', () => {
    const once = e.embedOne('turbine blade');
    const many = e.embedOne('turbine turbine turbine turbine turbine turbine turbine turbine blade');
    const blade = e.embedOne('blade');
    // With raw tf (8 vs 1) "blade" would be drowned by the repeated word; with 1 + ln(tf) it still counts.
    expect(cosine(many, blade)).toBeGreaterThan(0.1);
    expect(cosine(once, many)).toBeGreaterThan(0.8);
  });

  it('rejects nonsensical options', () => {
    expect(() => new HashingEmbedder({ dim: 3 })).toThrow(AppError);
    expect(() => new HashingEmbedder({ charNgrams: [1] })).toThrow(AppError);
  });
});
