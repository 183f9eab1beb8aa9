import { HashingEmbedder } from '../hashing-embedder';
import { ScriptRoutedEmbedder } from '../script-routed-embedder';
import { CrossLingualEmbedder } from './cross-lingual-embedder.adapter';

// Real (lexical) embedders as legs: the combination's arithmetic is what is tested here; the real multilingual model
// is exercised in test/e2e/cross-lingual.e2e.spec.ts.
const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);
const norm = (a: Float32Array) => Math.sqrt(dot(a, a));

function legs() {
  const pair = new ScriptRoutedEmbedder(new HashingEmbedder({ dim: 64 }), new HashingEmbedder({ dim: 48 }));
  const multi = new HashingEmbedder({ dim: 32 });
  return { pair, multi };
}

const ZH = ['边界层的厚度随距离增长', '大熊猫主要吃竹子', '高速铁路连接北京和上海'];
const EN = ['the boundary layer thickness grows with distance', 'giant pandas mostly eat bamboo', 'a high speed railway links two cities'];

describe('CrossLingualEmbedder', () => {
  it('names both legs in its model id and has the pair, two multilingual slots and two shift slots as dimensions', () => {
    const { pair, multi } = legs();
    const e = new CrossLingualEmbedder(pair, multi);
    expect(e.modelId).toBe(`xling:${pair.modelId}+${multi.modelId}`);
    expect(e.dim).toBe(pair.dim + 2 * multi.dim + 2);
    expect(CrossLingualEmbedder.space(pair, multi)).toEqual({ modelId: e.modelId, dim: e.dim });
    // Query-side weights change no stored vector, so they are not in the id.
    expect(new CrossLingualEmbedder(pair, multi, { scale: 1, shift: 0, same: 0.5 }).modelId).toBe(e.modelId);
  });

  it('stores unit-length passages and queries', async () => {
    const { pair, multi } = legs();
    const e = new CrossLingualEmbedder(pair, multi);
    for (const v of [...(await e.embed([...ZH, ...EN, 'Nexon Korea开发的游戏'], 'passage')), ...(await e.embed([...ZH, ...EN], 'query'))]) {
      expect(norm(v)).toBeCloseTo(1, 5);
    }
  });

  it('with same = 0 scores a same-script passage by the pair alone, proportionally to the pair’s own score', async () => {
    const { pair, multi } = legs();
    const e = new CrossLingualEmbedder(pair, multi, { same: 0, scale: 3, shift: -1 });
    for (const [q, corpus] of [
      ['边界层厚度', ZH],
      ['boundary layer thickness', EN],
    ] as const) {
      const [qx] = await e.embed([q], 'query');
      const [qp] = await pair.embed([q], 'query');
      const px = await e.embed([...corpus], 'passage');
      const pp = await pair.embed([...corpus], 'passage');
      const ratios = corpus.map((_, i) => dot(qx!, px[i]!) / dot(qp!, pp[i]!));
      for (const r of ratios) expect(r).toBeCloseTo(ratios[0]!, 5);
    }
  });

  it('scores an other-script passage as scale · multilingual similarity + shift (in the same units)', async () => {
    const { pair, multi } = legs();
    const scale = 2.5;
    const shift = -0.7;
    const e = new CrossLingualEmbedder(pair, multi, { same: 0, scale, shift });
    const q = '边界层厚度';
    const [qx] = await e.embed([q], 'query');
    const px = await e.embed(EN, 'passage');
    const [qm] = await multi.embed([q], 'query');
    const pm = await multi.embed(EN, 'passage');
    // Unnormalised query [pair(q) | scale·m(q) in the other-script slot | shift]: norm √(1 + scale² + shift²); passages /√3.
    const k = 1 / (Math.sqrt(3) * Math.sqrt(1 + scale * scale + shift * shift));
    EN.forEach((_, i) => expect(dot(qx!, px[i]!)).toBeCloseTo((scale * dot(qm!, pm[i]!) + shift) * k, 5));
    // The other direction, and the same-script passages get no shift.
    const [qe] = await e.embed(['boundary layer thickness'], 'query');
    const pz = await e.embed(ZH, 'passage');
    const [qem] = await multi.embed(['boundary layer thickness'], 'query');
    const pzm = await multi.embed(ZH, 'passage');
    ZH.forEach((_, i) => expect(dot(qe!, pz[i]!)).toBeCloseTo((scale * dot(qem!, pzm[i]!) + shift) * k, 5));
  });

  it('adds same · multilingual similarity to same-script passages when same > 0', async () => {
    const { pair, multi } = legs();
    const e = new CrossLingualEmbedder(pair, multi, { same: 0.5, scale: 1, shift: 0 });
    const q = 'boundary layer thickness';
    const [qx] = await e.embed([q], 'query');
    const px = await e.embed(EN, 'passage');
    const [qp] = await pair.embed([q], 'query');
    const pp = await pair.embed(EN, 'passage');
    const [qm] = await multi.embed([q], 'query');
    const pm = await multi.embed(EN, 'passage');
    const k = 1 / (Math.sqrt(3) * Math.sqrt(1 + 0.25 + 1));
    EN.forEach((_, i) => expect(dot(qx!, px[i]!)).toBeCloseTo((dot(qp!, pp[i]!) + 0.5 * dot(qm!, pm[i]!)) * k, 5));
  });

  it('rejects weights that would break the ranking', () => {
    const { pair, multi } = legs();
    expect(() => new CrossLingualEmbedder(pair, multi, { scale: 0 })).toThrow(/scale/);
    expect(() => new CrossLingualEmbedder(pair, multi, { shift: Number.NaN })).toThrow(/shift/);
    expect(() => new CrossLingualEmbedder(pair, multi, { minShare: 0.5 })).toThrow(/minShare/);
  });
});
