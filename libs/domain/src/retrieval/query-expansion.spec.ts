import { buildCorrectivePrompt, buildExpansionPrompt, buildHydePrompt, parseCorrectiveQuery, parseExpansions } from './query-expansion';

describe('query expansion', () => {
  it('parses numbered, bulleted and quoted lines, dropping duplicates of the original', () => {
    const text = '1. "drag reduction on wings"\n- How to reduce wing drag\n\n2) Reduce drag of a wing\nreduce drag of a wing\n（3）机翼减阻';
    expect(parseExpansions(text, 'Reduce drag of a wing', 5)).toEqual(['drag reduction on wings', 'How to reduce wing drag', '机翼减阻']);
  });

  it('keeps at most max lines and ignores empty output', () => {
    expect(parseExpansions('a\nb\nc', 'q', 2)).toEqual(['a', 'b']);
    expect(parseExpansions('   \n', 'q', 3)).toEqual([]);
  });

  it('builds prompts that carry the query and the requested count', () => {
    const m = buildExpansionPrompt('什么是激波？', 3);
    expect(m[0]!.content).toContain('3 alternative phrasings');
    expect(m[1]!.content).toBe('什么是激波？');
    expect(buildHydePrompt('what is a shock wave?')[1]!.content).toBe('what is a shock wave?');
  });
});

describe('corrective rewrite prompt', () => {
  it('asks for one query and parses the first usable line', () => {
    const m = buildCorrectivePrompt('How do planes get rid of frost?');
    expect(m[0]!.content).toContain('ONE better search query');
    expect(m[1]!.content).toBe('How do planes get rid of frost?');
    expect(parseCorrectiveQuery('1. "pneumatic de-icing boots wing"\nsecond line', 'How do planes get rid of frost?')).toBe('pneumatic de-icing boots wing');
    expect(parseCorrectiveQuery('How do planes get rid of frost?', 'How do planes get rid of frost?')).toBeUndefined();
    expect(parseCorrectiveQuery('   \n', 'q')).toBeUndefined();
  });
});
