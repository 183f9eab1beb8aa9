import { parseStructuredStatements, renderStatements, statementsFromCitedText, withoutCitations } from './statements';

describe('statementsFromCitedText', () => {
  it('splits cited text into statements with the refs each sentence cites', () => {
    expect(statementsFromCitedText('Lift rises with angle [1]. Drag too [2][3]. Unsourced claim.', 3)).toEqual([
      { text: 'Lift rises with angle.', source_ids: [1] },
      { text: 'Drag too.', source_ids: [2, 3] },
      { text: 'Unsourced claim.', source_ids: [] },
    ]);
  });

  it('Chinese, refs out of range ignored, a citation after the full stop belongs to the sentence before', () => {
    expect(statementsFromCitedText('尤金袋鼠约8公斤重[2]。分布在澳洲[9]。', 3)).toEqual([
      { text: '尤金袋鼠约8公斤重。', source_ids: [2] },
      { text: '分布在澳洲。', source_ids: [] },
    ]);
    expect(statementsFromCitedText('Lift rises. [2]', 3)).toEqual([{ text: 'Lift rises.', source_ids: [2] }]);
  });
});

describe('parseStructuredStatements', () => {
  it('reads a parsed value', () => {
    expect(parseStructuredStatements({ statements: [{ text: 'Lift rises.', source_ids: [1, 5] }] }, 3)).toEqual([{ text: 'Lift rises.', source_ids: [1] }]);
  });

  it('repairs text: code fences, prose around the JSON, trailing commas, a bare array, ids as strings, refs in the text', () => {
    const raw = 'Here you go:\n```json\n{"statements": [{"text": "Lift rises [2].", "source_ids": ["1"],},]}\n```';
    expect(parseStructuredStatements(raw, 3)).toEqual([{ text: 'Lift rises.', source_ids: [1, 2] }]);
    expect(parseStructuredStatements('[{"text": "Drag.", "source_ids": [3]}]', 3)).toEqual([{ text: 'Drag.', source_ids: [3] }]);
  });

  it('salvages JSON cut off at a token limit: the statements written so far', () => {
    expect(parseStructuredStatements('{"statements": [{"text": "Lift rises.", "source_ids": [1, 2]}, {"text": "Drag gro', 3)).toEqual([
      { text: 'Lift rises.', source_ids: [1, 2] },
      { text: 'Drag gro', source_ids: [] },
    ]);
  });

  it('gives null when nothing usable parses (the caller falls back to the cited text)', () => {
    expect(parseStructuredStatements('Lift rises [1].', 3)).toBeNull();
    expect(parseStructuredStatements('{"statements": [{"text": ""}]}', 3)).toBeNull();
    expect(parseStructuredStatements({ answer: 'x' }, 3)).toBeNull();
  });
});

describe('renderStatements / withoutCitations', () => {
  it('writes each statement with its citations before the final punctuation', () => {
    expect(renderStatements([{ text: 'Lift rises.', source_ids: [1, 2] }, { text: 'No source', source_ids: [] }])).toBe('Lift rises [1][2]. No source');
    expect(renderStatements([{ text: '升力增大。', source_ids: [1] }, { text: '阻力也增大。', source_ids: [2] }])).toBe('升力增大[1]。阻力也增大[2]。');
  });

  it('strips citation markers', () => {
    expect(withoutCitations('Lift rises [1, 2]. ')).toBe('Lift rises.');
    expect(withoutCitations('升力增大【3】。')).toBe('升力增大。');
  });
});
