import { getEncoding } from 'js-tiktoken';
import { countTokens } from './tokens';

const cl100k = getEncoding('cl100k_base');
const exact = (text: string): number => cl100k.encode(text, [], []).length;

describe('countTokens', () => {
  it('is 0 for the empty string', () => {
    expect(countTokens('')).toBe(0);
  });

  it.each([
    ['English prose', 'The quick brown fox jumps over the lazy dog. It wasn\'t the first time; it\'ll not be the last!'],
    ['numbers and punctuation', 'recall@10 = 0.973 over 1,234,567 vectors (p95 < 120 ms) -- see https://example.com/a?b=c#d'],
    ['code', 'function foo(x: number): string {\n  return `${x}`;\n}\n\n\tconst y = [1, 2, 3].map((v) => v * 2);\n'],
    ['whitespace runs', 'a    b\n\n\n   c\t\td  \n'],
    ['accents and emoji', 'Café déjà vu — naïve façade 🎉👍🏽 Ünïcödé'],
    ['a long word', 'pneumonoultramicroscopicsilicovolcanoconiosis and Donaudampfschifffahrtsgesellschaft'],
  ])('equals the cl100k_base encoding length on %s', (_label, text) => {
    expect(countTokens(text)).toBe(exact(text));
  });

  it('counts CJK as a tight upper bound of cl100k (per-character BPE)', () => {
    const zh =
      '检索增强生成（RAG）是一种将信息检索与文本生成相结合的技术。系统首先把企业文档切分成较小的片段，并为每个片段计算向量表示；' +
      '用户提问时，检索器同时进行稠密检索和关键词检索，然后用倒数排名融合合并结果。这样做有什么好处？答案的可追溯性提高了！';
    const n = countTokens(zh);
    expect(n).toBeGreaterThanOrEqual(exact(zh));
    expect(n).toBeLessThanOrEqual(Math.ceil(exact(zh) * 1.15));
  });

  it('treats special-token text as plain text instead of throwing', () => {
    expect(countTokens('before <|endoftext|> after')).toBe(exact('before <|endoftext|> after'));
  });

  it('approximates a pre-token over 64 characters by slices', () => {
    const word = 'x'.repeat(40) + 'pneumonoultramicroscopicsilicovolcanoconiosis';
    expect(Math.abs(countTokens(word) - exact(word))).toBeLessThanOrEqual(Math.ceil(exact(word) * 0.15));
  });

  it('counts a huge unbroken run in linear time (exact BPE on it would be quadratic)', () => {
    const run = 'ab'.repeat(50_000);
    const n = countTokens(run);
    // 'ab' is one cl100k token: exactly 50,000, give or take the slice joints.
    expect(n).toBeGreaterThanOrEqual(50_000);
    expect(n).toBeLessThanOrEqual(50_000 * 1.05);
  });
});
