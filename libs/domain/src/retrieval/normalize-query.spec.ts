import { keywordQuery, normalizeQuery } from './normalize-query';

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

describe('keywordQuery (the non-LLM rewrite of the corrective retry)', () => {
  it('keeps the content words of an English question and drops question noise', () => {
    expect(keywordQuery('What is the effect of sweep on the boundary layer of a wing???')).toBe('effect sweep boundary layer wing');
    expect(keywordQuery('Please tell me how do ablative heat shields absorb heat?')).toBe('ablative heat shields absorb heat');
  });
  it('keeps symbols that carry meaning, numbers and case', () => {
    expect(keywordQuery('Which C++ compiler supports Mach 3.5 flows?')).toBe('C++ compiler supports Mach 3.5 flows');
  });
  it('drops Chinese question words and particles', () => {
    expect(keywordQuery('边界层是什么？')).toBe('边界层');
    expect(keywordQuery('请问尤金袋鼠分布在哪些地区？')).toBe('尤金袋鼠分布在 地区');
  });
  it('falls back to the normalised question when nothing would be left', () => {
    expect(keywordQuery('What is it?')).toBe('What is it?');
  });
});
