import { documentRuns } from './write-runs';

const items = (docs: string) => [...docs].map((d, i) => ({ document_id: d, i }));

describe('documentRuns', () => {
  it('keeps each document together and makes runs of at least min items, but for the last', () => {
    const runs = documentRuns(items('aaabbbbcdddde'), 3);
    expect(runs.map((r) => r.map((x) => x.document_id).join(''))).toEqual(['aaa', 'bbbb', 'cdddd', 'e']);
    expect(runs.flat().map((x) => x.i)).toEqual([...Array(13).keys()]); // every item once, in order
  });

  it('never splits a document longer than min, and handles empty and single-item batches', () => {
    expect(documentRuns(items('aaaaaaa'), 2).map((r) => r.length)).toEqual([7]);
    expect(documentRuns([], 4)).toEqual([]);
    expect(documentRuns(items('a'), 4).map((r) => r.length)).toEqual([1]);
  });
});
