import { parseJsonl } from './jsonl';

describe('parseJsonl', () => {
  it('parses BEIR corpus lines and reports bad lines with 1-based numbers', () => {
    const input = [
      '{"_id": "doc1", "title": "First", "text": "Alpha text.", "extra": 1}',
      '',
      '{"_id": "doc2", "title": "Second", "text": "Beta", "metadata": {"year": 2024, "tags": ["a", "b"], "draft": false, "lang": "en"}}',
      '{"_id": "doc3", "title": "Broken", "text": "missing brace"',
      '{"title": "No id", "text": "x"}',
      '{"_id": "   ", "text": "blank id"}',
      '{"_id": "doc4", "title": "No text"}',
      '{"_id": "doc5", "text": "   "}',
      '[1, 2]',
      '{"_id": "doc6", "text": "bad metadata", "metadata": {"nested": {"a": 1}}}',
      '{"_id": "doc1", "text": "again"}',
      '{"_id": 7, "text": "numeric id, no title"}',
      '   ',
      '{"_id": "doc8", "title": null, "text": "null title"}\r',
    ].join('\n');
    const { docs, errors } = parseJsonl(input);
    expect(docs).toEqual([
      { _id: 'doc1', title: 'First', text: 'Alpha text.' },
      { _id: 'doc2', title: 'Second', text: 'Beta', metadata: { year: 2024, tags: ['a', 'b'], draft: false, lang: 'en' } },
      { _id: '7', title: '', text: 'numeric id, no title' },
      { _id: 'doc8', title: '', text: 'null title' },
    ]);
    expect(errors.map((e) => e.line)).toEqual([4, 5, 6, 7, 8, 9, 10, 11]);
    const byLine = new Map(errors.map((e) => [e.line, e.error]));
    expect(byLine.get(4)).toMatch(/^malformed JSON/);
    expect(byLine.get(5)).toBe('missing "_id"');
    expect(byLine.get(6)).toMatch(/"_id" must be a non-blank string/);
    expect(byLine.get(7)).toBe('missing "text" (document "doc4")');
    expect(byLine.get(8)).toBe('"text" must be a non-blank string (document "doc5")');
    expect(byLine.get(9)).toMatch(/expected a JSON object/);
    expect(byLine.get(10)).toMatch(/"metadata" must be an object .* at "nested"/);
    expect(byLine.get(11)).toBe('duplicate "_id" "doc1" (first on line 1)');
  });

  it('handles empty input', () => {
    expect(parseJsonl('')).toEqual({ docs: [], errors: [] });
    expect(parseJsonl('\n\n')).toEqual({ docs: [], errors: [] });
  });
});
