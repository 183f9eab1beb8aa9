import { byScoreThenChunkId } from './hit-order';

describe('byScoreThenChunkId', () => {
  it('ranks by score descending, then by chunk id in code-unit order', () => {
    const hit = (chunk_id: string, score: number) => ({ chunk_id, score });
    const hits = [hit('b', 1), hit('a', 1), hit('c', 2), hit('B', 1)];
    expect([...hits].sort(byScoreThenChunkId).map((h) => h.chunk_id)).toEqual(['c', 'B', 'a', 'b']);
    expect(byScoreThenChunkId(hit('x', 1), hit('x', 1))).toBe(0);
  });
});
