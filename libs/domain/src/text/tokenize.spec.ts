import { describe, expect, it } from 'vitest';
import { seededRandom } from '../generation/calibration';
import { segmentForIndex, tokenize, tokenizeWithIcu } from './tokenize';

// ASCII of every class ICU's word-break rules treat differently (letters, digits, MidLetter ':' MidNum ',' ';'
// MidNumLet '.' "'" , ExtendNumLet '_', whitespace and other controls), beside the characters that take the ICU path:
// Latin-1 and accented letters, curly quotes, dashes, NBSP and other spaces, combining marks, ligatures, full-width and
// superscript forms (NFKC), Chinese, Japanese, Korean, Thai (dictionary segmentation), a supplementary-plane ideograph,
// Hebrew, Cyrillic, emoji.
const ASCII_PARTS = [...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789', ' ', ' ', '  ', '\t', '\n', '\r\n', '\v', '\f', '\u0000', '\u001f', ...".,;:'\"_-/\\()[]{}!?@#$%^&*+=<>|~`"];
const WORDS = ['wing', 'wings', 'the', 'testing', 'flows', "o'neil", '3.5', 'e.g.', 'foo_bar', 'x86', 'mach-2', 'don’t'];
const OTHER_PARTS = [...'éüßñçÆøÅ', '’', '“', '”', '—', '–', '\u00a0', '\u2002', '\u3000', 'e\u0301', '\u0301', 'ﬁ', 'Ａｂ', '²', '½', '中文', '机翼', '的', '飞机的升力', 'カタカナ', 'ひらがな', '한국어', 'ภาษาไทย', '𠀀', 'שלום', 'привет', '😀', '\u00ad', '\u200d'];

function randomText(next: () => number, otherShare: number): string {
  const parts: string[] = [];
  const n = 1 + Math.floor(next() * 40);
  for (let i = 0; i < n; i++) {
    const r = next();
    const pool = r < otherShare ? OTHER_PARTS : r < otherShare + 0.3 ? WORDS : ASCII_PARTS;
    parts.push(pool[Math.floor(next() * pool.length)]!);
  }
  return parts.join('');
}

describe('tokenize', () => {
  it('gives the ICU path\'s tokens on random mixed-script text (the ASCII fast path changes nothing)', () => {
    const next = seededRandom(13);
    let mixed = 0;
    for (let i = 0; i < 6000; i++) {
      const text = randomText(next, i % 3 === 0 ? 0 : i % 3 === 1 ? 0.05 : 0.3);
      if (!/^[\x00-\x7f]*$/.test(text)) mixed++;
      for (const opts of [{}, { stopWords: false, stem: false }]) expect(tokenize(text, opts), JSON.stringify(text)).toEqual(tokenizeWithIcu(text, opts));
    }
    expect(mixed).toBeGreaterThan(2000); // both paths were exercised
  });

  it('tokenizes English, Chinese and mixed text', () => {
    expect(tokenize('The wings of the aircraft were tested at Mach 3.5.')).toEqual(['wing', 'aircraft', 'test', 'mach', '3', '5']);
    expect(tokenize('飞机的机翼')).toEqual(tokenizeWithIcu('飞机的机翼'));
    expect(tokenize('飞机的机翼')).not.toContain('的');
    expect(tokenize('Boeing 747 的 机翼 wings “lift”')).toEqual(['boe', '747', ...tokenizeWithIcu('机翼'), 'wing', 'lift']);
    expect(segmentForIndex('Flows over wings')).toBe('flow over wing');
  });
});
