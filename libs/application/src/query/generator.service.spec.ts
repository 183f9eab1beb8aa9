import type { ScoredChunk } from '@rag/contracts';
import { GeneratorService } from './generator.service';

const chunk = (id: string, text: string, score: number, parent?: string): ScoredChunk => ({
  chunk_id: `doc:${id}#v1#0`,
  document_id: `doc:${id}`,
  title: `Title ${id}`,
  text,
  score,
  heading_path: [],
  ...(parent !== undefined ? { parent_text: parent } : {}),
});

const sources = [
  chunk('a', 'The wing root carries the bending load.', 3, 'Wing structure. The wing root carries the bending load. Spars take shear.'),
  chunk('b', 'Aeroelastic models of heated aircraft must obey similarity laws.', 2),
  chunk('c', 'Unrelated text about boundary layers.', 1),
];

describe('GeneratorService lexical memo', () => {
  const base = { refusalThreshold: 0.45, llmTimeoutMs: 1000, maxSources: 5 };

  it('answers the same with and without the memo, and serves repeated sources from it', async () => {
    const withMemo = new GeneratorService(null, { ...base, lexicalMemo: { maxEntries: 100, maxChars: 100_000 } });
    const without = new GeneratorService(null, base);
    for (const q of ['what similarity laws must aeroelastic models of heated aircraft obey', 'what does the wing root carry', 'capital of france']) {
      const expected = await without.generate(q, sources);
      expect(await withMemo.generate(q, sources)).toEqual(expected);
    }
    const afterFirst = withMemo.memoStats()!;
    expect(afterFirst.entries).toBeGreaterThan(0);
    // The texts analysed: parent text of a, texts of b and c, and the three titles.
    expect(afterFirst.entries).toBe(6);
    const repeat = await withMemo.generate('what does the wing root carry', sources);
    expect(repeat.refused).toBe(false);
    const afterRepeat = withMemo.memoStats()!;
    // Every source text, parent text and title was analysed before: no new misses; the gate (3 sources), the
    // answerer's sentences (3) and its title contexts (3) are all served from the memo.
    expect(afterRepeat.misses).toBe(afterFirst.misses);
    expect(afterRepeat.hits - afterFirst.hits).toBe(9);
    expect(without.memoStats()).toBeNull();
  });

  it('keeps no memo with maxEntries 0', async () => {
    const g = new GeneratorService(null, { ...base, lexicalMemo: { maxEntries: 0, maxChars: 100_000 } });
    await g.generate('what does the wing root carry', sources);
    expect(g.memoStats()).toBeNull();
  });
});
