import { LexicalMemo } from './lexical-memo';
import { verifyStatements } from './verify';

const sources = [
  { ref: 1, text: 'The boundary layer on a flat plate grows with distance from the leading edge. Transition occurs near a Reynolds number of 500000.' },
  { ref: 2, text: '尤金袋鼠分布在澳洲南部岛屿及西岸地区。牠们约只有8公斤重。' },
];
const good = { text: 'The boundary layer grows with distance from the leading edge.', source_ids: [1] };
const goodZh = { text: '尤金袋鼠约只有8公斤重。', source_ids: [2] };
const bad = { text: 'Shock waves ahead of blunt bodies raise the heat transfer to the nose.', source_ids: [1] };

describe('verifyStatements', () => {
  it('scores statements against the sources they cite, English and Chinese', () => {
    const v = verifyStatements([good, goodZh, bad], sources, { mode: 'mark' });
    expect(v.statements.map((s) => s.supported)).toEqual([true, true, false]);
    expect(v.statements[0]!.support).toBe(1);
    expect(v.statements[2]!.support).toBeLessThan(0.3);
    expect(v.supportRate).toBeCloseTo(2 / 3);
  });

  it('a true statement citing the wrong source is unsupported; one citing nothing, or a ref that is not a source, too', () => {
    const v = verifyStatements(
      [
        { text: good.text, source_ids: [2] },
        { text: good.text, source_ids: [] },
        { text: good.text, source_ids: [7] },
      ],
      sources,
      { mode: 'mark' },
    );
    expect(v.statements.map((s) => s.support)).toEqual([0, 0, 0]);
  });

  it('mark keeps every statement with its flag', () => {
    const v = verifyStatements([good, bad], sources, { mode: 'mark' });
    expect(v.kept.map((s) => s.text)).toEqual([good.text, bad.text]);
    expect(v.refuse).toBe(false);
  });

  it('drop removes the unsupported statements, and refuses when none is left', () => {
    const v = verifyStatements([good, bad], sources, { mode: 'drop' });
    expect(v.kept.map((s) => s.text)).toEqual([good.text]);
    expect(v.refuse).toBe(false);
    const none = verifyStatements([bad], sources, { mode: 'drop' });
    expect(none.kept).toEqual([]);
    expect(none.refuse).toBe(true);
  });

  it('refuse refuses when any statement is unsupported, and answers when all are', () => {
    expect(verifyStatements([good, bad], sources, { mode: 'refuse' })).toMatchObject({ refuse: true, kept: [] });
    expect(verifyStatements([good, goodZh], sources, { mode: 'refuse' }).refuse).toBe(false);
  });

  it('embedding similarity can raise a paraphrase to supported, never lower a verbatim statement', () => {
    const paraphrase = { text: 'Its thickness increases downstream.', source_ids: [1] };
    expect(verifyStatements([paraphrase], sources, { mode: 'mark' }).statements[0]!.supported).toBe(false);
    const sims = [new Map([[1, 0.93]])];
    expect(verifyStatements([paraphrase], sources, { mode: 'mark', similarity: sims }).statements[0]!.supported).toBe(true);
    const low = [new Map([[1, 0.1]])];
    expect(verifyStatements([good], sources, { mode: 'mark', similarity: low }).statements[0]!.support).toBe(1);
  });

  it('scores the same with a memo of the text analysis, which serves a repeated answer and never analyses an uncited source', () => {
    const memo = new LexicalMemo({ maxEntries: 100, maxChars: 100_000 });
    const analysed: string[] = [];
    const features = (t: string) => (analysed.push(t), memo.context(t));
    const third = { ref: 3, text: 'A source nothing cites.' };
    for (const mode of ['mark', 'drop', 'refuse'] as const) {
      expect(verifyStatements([good, goodZh, bad], [...sources, third], { mode, features })).toEqual(verifyStatements([good, goodZh, bad], sources, { mode }));
    }
    expect(analysed).not.toContain(third.text);
    const misses = memo.stats().misses;
    verifyStatements([good, goodZh, bad], sources, { mode: 'mark', features });
    expect(memo.stats().misses).toBe(misses);
  });

  it('no statements: nothing to refuse, support rate 1', () => {
    expect(verifyStatements([], sources, { mode: 'refuse' })).toEqual({ statements: [], kept: [], refuse: false, supportRate: 1 });
  });
});
