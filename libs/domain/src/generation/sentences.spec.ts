import { splitSentences } from './sentences';

const texts = (s: string) => splitSentences(s).map((x) => x.text);

describe('splitSentences', () => {
  it('splits English on . ! ? followed by whitespace', () => {
    expect(texts('Lift grows with angle. Drag grows too! Does it stall? Yes.')).toEqual([
      'Lift grows with angle.',
      'Drag grows too!',
      'Does it stall?',
      'Yes.',
    ]);
  });

  it('does not split decimals, versions, abbreviations, acronyms, initials or list numbers', () => {
    expect(texts('The ratio was 3.5 at Mach 2.0 in v1.2 tests. Next one.')).toEqual(['The ratio was 3.5 at Mach 2.0 in v1.2 tests.', 'Next one.']);
    expect(texts('Some gases, e.g. Helium, i.e. noble ones, etc. Are inert.')).toEqual(['Some gases, e.g. Helium, i.e. noble ones, etc. Are inert.']);
    expect(texts('See Fig. 3 and Dr. Smith in the U.S. Army report. J. Smith agreed.')).toEqual([
      'See Fig. 3 and Dr. Smith in the U.S. Army report.',
      'J. Smith agreed.',
    ]);
    expect(texts('1. Introduction of the model')).toEqual(['1. Introduction of the model']);
    expect(texts('it weighs approx. the same')).toEqual(['it weighs approx. the same']);
  });

  it('splits lower-case text whose periods stand apart (Cranfield style)', () => {
    expect(texts('a wing in a slipstream . the results were intended as a basis .')).toEqual([
      'a wing in a slipstream .',
      'the results were intended as a basis .',
    ]);
  });

  it('splits Chinese on 。！？； and keeps closing quotes with their sentence', () => {
    expect(texts('他说：“走吧。”然后离开了！真的吗？是的；没错。')).toEqual(['他说：“走吧。”', '然后离开了！', '真的吗？', '是的；', '没错。']);
    expect(texts('圆周率约为3.14。下一句')).toEqual(['圆周率约为3.14。', '下一句']);
    expect(texts('以笔名S.G. Tallentyre写作。及St. John雕像。')).toEqual(['以笔名S.G. Tallentyre写作。', '及St. John雕像。']);
    expect(texts('He said hi.然后走了。')).toEqual(['He said hi.', '然后走了。']);
  });

  it('treats line breaks as boundaries and reports offsets', () => {
    const s = splitSentences('# Title\n\n  First line\nSecond. Third');
    expect(s.map((x) => x.text)).toEqual(['# Title', 'First line', 'Second.', 'Third']);
    expect(s.map((x) => x.start)).toEqual([0, 11, 22, 30]);
    expect(splitSentences('')).toEqual([]);
    expect(splitSentences('   \n ')).toEqual([]);
  });
});
