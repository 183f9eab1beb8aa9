import { reciprocalRankFusion } from './rrf';

const hits = (...ids: string[]) => ids.map((id, i) => ({ id, score: 100 - i }));

describe('reciprocalRankFusion', () => {
  it('sums 1/(k+rank) over lists with 1-based ranks', () => {
    const out = reciprocalRankFusion(
      [
        { name: 'dense', hits: hits('a', 'b', 'c') },
        { name: 'keyword', hits: hits('b', 'd') },
      ],
      {},
    );
    expect(out.map((h) => h.id)).toEqual(['b', 'a', 'd', 'c']);
    const b = out[0]!;
    expect(b.score).toBeCloseTo(1 / 62 + 1 / 61, 12);
    expect(b.ranks).toEqual({ dense: 2, keyword: 1 });
    expect(out[1]!.score).toBeCloseTo(1 / 61, 12);
    expect(out[1]!.ranks).toEqual({ dense: 1 });
  });

  it('ignores raw scores: only ranks count', () => {
    const out = reciprocalRankFusion(
      [
        { name: 'x', hits: [{ id: 'a', score: 0.001 }, { id: 'b', score: -5 }] },
        { name: 'y', hits: [{ id: 'a', score: 1e9 }] },
      ],
      { k: 1 },
    );
    expect(out[0]).toEqual({ id: 'a', score: 1 / 2 + 1 / 2, ranks: { x: 1, y: 1 } });
    expect(out[1]).toEqual({ id: 'b', score: 1 / 3, ranks: { x: 2 } });
  });

  it('applies list weights', () => {
    const out = reciprocalRankFusion(
      [
        { name: 'dense', weight: 2, hits: hits('a') },
        { name: 'keyword', weight: 0.5, hits: hits('b') },
      ],
      { k: 10 },
    );
    expect(out.map((h) => [h.id, h.score])).toEqual([
      ['a', 2 / 11],
      ['b', 0.5 / 11],
    ]);
  });

  it('keeps the first occurrence of a duplicate within one list', () => {
    const out = reciprocalRankFusion([{ name: 'k', hits: hits('a', 'b', 'a', 'c') }], { k: 0 });
    expect(out).toEqual([
      { id: 'a', score: 1, ranks: { k: 1 } },
      { id: 'b', score: 1 / 2, ranks: { k: 2 } },
      { id: 'c', score: 1 / 3, ranks: { k: 3 } },
    ]);
  });

  it('breaks ties by best rank, then by id', () => {
    const out = reciprocalRankFusion(
      [
        { name: 'x', hits: hits('z', 'y') },
        { name: 'y', hits: hits('y', 'z') },
        { name: 'w', hits: hits('q', 'p') },
      ],
      { k: 60 },
    );
    // z and y tie (1/61 + 1/62) with best rank 1 → by id: y before z. q (1/61) and p (1/62) follow.
    expect(out.map((h) => h.id)).toEqual(['y', 'z', 'q', 'p']);
    // equal score, different best rank: a is rank 1 in a weight-0 list → best rank decides.
    const tie = reciprocalRankFusion(
      [
        { name: 'x', hits: hits('b', 'a') },
        { name: 'y', weight: 0, hits: hits('a') },
        { name: 'z', hits: hits('c', 'b') },
      ],
      {},
    );
    expect(tie.map((h) => h.id)).toEqual(['b', 'c', 'a']);
  });

  it('is deterministic regardless of list order for equal scores', () => {
    const a = reciprocalRankFusion([{ name: 'x', hits: hits('m') }, { name: 'y', hits: hits('n') }], {});
    const b = reciprocalRankFusion([{ name: 'y', hits: hits('n') }, { name: 'x', hits: hits('m') }], {});
    expect(a.map((h) => h.id)).toEqual(['m', 'n']);
    expect(b.map((h) => h.id)).toEqual(['m', 'n']);
  });

  it('honours limit and handles empty input', () => {
    expect(reciprocalRankFusion([{ name: 'x', hits: hits('a', 'b', 'c') }], { limit: 2 }).map((h) => h.id)).toEqual(['a', 'b']);
    expect(reciprocalRankFusion([], {})).toEqual([]);
    expect(reciprocalRankFusion([{ name: 'x', hits: [] }], { limit: 5 })).toEqual([]);
    expect(reciprocalRankFusion([{ name: 'x', hits: hits('a') }], { limit: 0 })).toEqual([]);
  });

  it('rejects invalid k and weights', () => {
    expect(() => reciprocalRankFusion([], { k: -1 })).toThrow(RangeError);
    expect(() => reciprocalRankFusion([{ name: 'x', weight: Number.NaN, hits: [] }], {})).toThrow(RangeError);
  });
});
