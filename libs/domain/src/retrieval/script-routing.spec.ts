import { describe, expect, it } from 'vitest';
import { scriptWeights } from './script-routing';

describe('scriptWeights', () => {
  it('routes Chinese text to the CJK model and English text to the other', () => {
    expect(scriptWeights('《泡泡战士》是由哪家公司开发的？')).toEqual({ cjk: 1, other: 0 });
    expect(scriptWeights('what is the boundary layer thickness of a flat plate?')).toEqual({ cjk: 0, other: 1 });
  });

  it('splits a mixed query by units: a CJK character or a word of another script', () => {
    // 10 CJK characters, 2 Latin words.
    const w = scriptWeights('Nexon Korea开发的游戏叫什么名字');
    expect(w.cjk).toBeCloseTo(10 / 12);
    expect(w.cjk + w.other).toBeCloseTo(1);
    expect(scriptWeights('カタカナ と ひらがな').cjk).toBe(1);
    expect(scriptWeights('한국어 질문').cjk).toBe(1);
  });

  it('counts no language for digits and punctuation; empty text asks both models', () => {
    expect(scriptWeights('')).toEqual({ cjk: 0.5, other: 0.5 });
    expect(scriptWeights('2024 — 3.14 ?!')).toEqual({ cjk: 0.5, other: 0.5 });
    expect(scriptWeights('1998年')).toEqual({ cjk: 1, other: 0 });
    expect(scriptWeights('Mach 2.5 flow')).toEqual({ cjk: 0, other: 1 });
    expect(scriptWeights('Привет мир').other).toBe(1);
  });

  it('gives ASCII text (its fast path) exactly what the general scan gives (randomised)', () => {
    const general = (text: string) => scriptWeights(`${text}\u00a0`); // one non-ASCII space: the general path, same units
    const pieces = ['wing', 'L/D', "don't", 'x-15', '1998', '3.14', ' ', '  ', '\n', '-', '.', ',', '(', ')', 'A', 'z9', '#', ''];
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 500; i++) {
      const text = Array.from({ length: Math.floor(next() * 8) }, () => pieces[Math.floor(next() * pieces.length)]).join(next() < 0.5 ? ' ' : '');
      expect(scriptWeights(text)).toEqual(general(text));
    }
  });
});
