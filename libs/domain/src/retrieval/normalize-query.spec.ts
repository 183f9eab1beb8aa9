import { normalizeQuery } from './normalize-query';

describe('normalizeQuery', () => {
  it('applies NFKC (full-width letters, digits and punctuation)', () => {
    expect(normalizeQuery('ＡＢＣ　１２３？')).toBe('ABC 123?');
    expect(normalizeQuery('尤金袋鼠分布在哪些地区？')).toBe('尤金袋鼠分布在哪些地区?');
  });

  it('collapses whitespace and strips control and invisible characters', () => {
    expect(normalizeQuery('  what\tis\n\n the\u200b boundary\u0000 layer  ')).toBe('what is the boundary layer');
    expect(normalizeQuery('\ufeffhello\u2028world')).toBe('hello world');
  });

  it('trims trailing punctuation noise, keeping one question mark', () => {
    expect(normalizeQuery('what is lift???')).toBe('what is lift?');
    expect(normalizeQuery('what is lift ?!?! ')).toBe('what is lift?');
    expect(normalizeQuery('tell me about drag...')).toBe('tell me about drag');
    expect(normalizeQuery('什么是升力？？？')).toBe('什么是升力?');
    expect(normalizeQuery('升力。。。')).toBe('升力');
    expect(normalizeQuery('flow at mach 3.5')).toBe('flow at mach 3.5');
  });

  it('keeps meaningful trailing symbols', () => {
    expect(normalizeQuery('how to learn C#')).toBe('how to learn C#');
    expect(normalizeQuery('what is C++?')).toBe('what is C++?');
    expect(normalizeQuery('define "lift"')).toBe('define "lift"');
    expect(normalizeQuery('growth of 5%')).toBe('growth of 5%');
  });

  it('handles empty and punctuation-only input', () => {
    expect(normalizeQuery('')).toBe('');
    expect(normalizeQuery(' ?? ')).toBe('');
  });
});
