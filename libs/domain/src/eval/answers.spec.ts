import { firstSentence, goldInFirstSentence, statementSupport, statementSupported } from './answers';

describe('firstSentence / goldInFirstSentence', () => {
  it('takes the first sentence without citation markers, Chinese and English', () => {
    expect(firstSentence('尤金袋鼠分布在澳大利亚南部。[1] 它们体型较小。[2]')).toBe('尤金袋鼠分布在澳大利亚南部。');
    expect(firstSentence('The wing root carries the bending load [1]. Spars take shear [2].')).toBe('The wing root carries the bending load.');
    expect(firstSentence('')).toBe('');
  });

  it('is true only when the gold answer is in the first sentence', () => {
    const a = '比赛于2008年举行。[1] 冠军是中国队，共获得51枚金牌。[2]';
    expect(goldInFirstSentence(a, ['2008年'])).toBe(true);
    expect(goldInFirstSentence(a, ['51枚'])).toBe(false);
    expect(goldInFirstSentence(a, ['不存在', '2008年'])).toBe(true);
    expect(goldInFirstSentence('', ['x'])).toBe(false);
  });
});

describe('statementSupported / statementSupport', () => {
  it('reads support as a score, a label or a flag', () => {
    expect(statementSupported({ text: 'a', support: 0.8 })).toBe(true);
    expect(statementSupported({ text: 'a', support: 0.2 })).toBe(false);
    expect(statementSupported({ text: 'a', support: 'supported' })).toBe(true);
    expect(statementSupported({ text: 'a', support: 'unsupported' })).toBe(false);
    expect(statementSupported({ text: 'a', supported: true })).toBe(true);
    expect(statementSupported({ text: 'a', support: { score: 0.9, supported: false } })).toBe(false);
    expect(statementSupported({ text: 'a', support: { score: 0.7 } })).toBe(true);
    expect(statementSupported({ text: 'a' })).toBe(false);
    expect(statementSupported(null)).toBe(false);
  });

  it('counts over answers; answers without statements add nothing', () => {
    expect(statementSupport([{ statements: [{ support: 1 }, { support: 0 }] }, {}, { statements: [{ support: 'supported' }] }])).toEqual({ statements: 3, supported: 2 });
  });
});
