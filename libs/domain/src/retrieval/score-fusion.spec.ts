import { describe, expect, it } from 'vitest';
import { reciprocalRankFusion } from './rrf';
import { scoreFusion } from './score-fusion';

const list = (name: string, scores: Record<string, number>, weight?: number) => ({
  name,
  weight,
  hits: Object.entries(scores).map(([id, score]) => ({ id, score })),
});

describe('scoreFusion', () => {
  it('lets a confident second list overturn a close call where RRF cannot', () => {
    // Keyword barely prefers a over b; dense is sure about b.
    const keyword = list('keyword', { a: 10.1, b: 10.0, c: 2, d: 1.5, e: 1 });
    const dense = list('dense', { b: 0.9, a: 0.49, c: 0.48, d: 0.47, e: 0.46 });
    expect(scoreFusion([dense, keyword]).map((h) => h.id)[0]).toBe('b');
    // RRF only sees ranks (a: 1st + 2nd, b: 2nd + 1st): a tie, broken on the id.
    expect(reciprocalRankFusion([dense, keyword]).map((h) => h.id)[0]).toBe('a');
  });

  it('only the ratio of the weights matters; weight 0 ignores a list for scoring but reports its ranks', () => {
    const k = list('keyword', { a: 3, b: 2, c: 1 });
    const d = list('dense', { c: 0.9, b: 0.5, a: 0.1 });
    const order = (dw: number, kw: number) => scoreFusion([{ ...d, weight: dw }, { ...k, weight: kw }]).map((h) => h.id);
    expect(order(0.6, 0.4)).toEqual(order(3, 2));
    expect(order(0, 1)).toEqual(['a', 'b', 'c']);
    expect(order(1, 0)).toEqual(['c', 'b', 'a']);
    expect(scoreFusion([{ ...d, weight: 0 }, k])[0]!.ranks).toEqual({ dense: 3, keyword: 1 });
  });

  it('gives an id missing from a list that list’s lowest score, not a neutral one', () => {
    const k = list('keyword', { a: 5, b: 4, c: 3, d: 1 });
    const d = list('dense', { x: 0.95, a: 0.5, b: 0.45, c: 0.4 });
    const fused = scoreFusion([d, k]);
    const x = fused.find((h) => h.id === 'x')!;
    const dOnly = fused.find((h) => h.id === 'd')!;
    expect(x.ranks).toEqual({ dense: 1 });
    expect(dOnly.ranks).toEqual({ keyword: 4 });
    // x is the dense winner but absent from keyword: it must not beat a, which both lists rank well.
    expect(fused[0]!.id).toBe('a');
  });

  it('an empty list (a degraded store) leaves the other list’s order as it was', () => {
    const k = list('keyword', { a: 5, b: 4, c: 3 });
    expect(scoreFusion([list('dense', {}), k]).map((h) => h.id)).toEqual(['a', 'b', 'c']);
    expect(scoreFusion([])).toEqual([]);
  });

  it('handles one-candidate and all-equal lists without dividing by zero', () => {
    for (const normalization of ['zscore', 'minmax'] as const) {
      const fused = scoreFusion([list('dense', { a: 0.5 }), list('keyword', { b: 2, c: 2 })], { normalization });
      expect(fused.map((h) => h.id).sort()).toEqual(['a', 'b', 'c']);
      expect(fused.every((h) => Number.isFinite(h.score))).toBe(true);
    }
  });

  it('keeps the first occurrence of a duplicate, breaks ties deterministically and honours limit', () => {
    const fused = scoreFusion([list('keyword', { b: 1, a: 1 }), { name: 'dense', hits: [{ id: 'a', score: 1 }, { id: 'b', score: 1 }, { id: 'a', score: 0 }] }], { limit: 1 });
    expect(fused).toHaveLength(1);
    expect(fused[0]!.id).toBe('a');
    expect(fused[0]!.ranks).toEqual({ keyword: 2, dense: 1 });
  });

  it('minmax normalisation maps each list to [0, 1]', () => {
    const fused = scoreFusion([list('only', { a: 10, b: 5, c: 0 })], { normalization: 'minmax' });
    expect(fused.map((h) => h.score)).toEqual([1, 0.5, 0]);
  });

  it('rejects negative or non-finite weights', () => {
    expect(() => scoreFusion([list('dense', { a: 1 }, -1)])).toThrow(/weight/);
    expect(() => scoreFusion([list('dense', { a: 1 }, Number.NaN)])).toThrow(/weight/);
  });
});
