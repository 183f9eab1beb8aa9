import { expandToParents } from './parents';

describe('expandToParents', () => {
  const parents = new Map([
    ['d#v1#0', 'PARENT ZERO'],
    ['d#v1#5', 'PARENT FIVE'],
  ]);

  it('attaches parent text and collapses siblings, keeping the best-scoring child', () => {
    const out = expandToParents(
      [
        { chunk_id: 'd#v1#1', text: 'c1', score: 0.5, parent_id: 'd#v1#0', document_id: 'd' },
        { chunk_id: 'd#v1#6', text: 'c6', score: 0.7, parent_id: 'd#v1#5', document_id: 'd' },
        { chunk_id: 'd#v1#2', text: 'c2', score: 0.9, parent_id: 'd#v1#0', document_id: 'd' },
        { chunk_id: 'd#v1#7', text: 'c7', score: 0.1, parent_id: 'd#v1#5', document_id: 'd' },
      ],
      parents,
    );
    expect(out).toEqual([
      { chunk_id: 'd#v1#2', text: 'c2', score: 0.9, parent_id: 'd#v1#0', document_id: 'd', parent_text: 'PARENT ZERO' },
      { chunk_id: 'd#v1#6', text: 'c6', score: 0.7, parent_id: 'd#v1#5', document_id: 'd', parent_text: 'PARENT FIVE' },
    ]);
  });

  it('keeps hits without a parent (or with an unknown parent) as they are, using their own text', () => {
    const out = expandToParents(
      [
        { chunk_id: 'x', text: 'own x', score: 0.4, parent_id: null },
        { chunk_id: 'y', text: 'own y', score: 0.6 },
        { chunk_id: 'z1', text: 'own z1', score: 0.3, parent_id: 'missing' },
        { chunk_id: 'z2', text: 'own z2', score: 0.2, parent_id: 'missing' },
      ],
      parents,
    );
    expect(out.map((h) => [h.chunk_id, h.parent_text])).toEqual([
      ['y', 'own y'],
      ['x', 'own x'],
      ['z1', 'own z1'],
      ['z2', 'own z2'],
    ]);
  });

  it('keeps the earlier hit on equal scores and does not mutate its input', () => {
    const input = [
      { chunk_id: 'a', text: 'a', score: 1, parent_id: 'd#v1#0' },
      { chunk_id: 'b', text: 'b', score: 1, parent_id: 'd#v1#0' },
    ];
    const out = expandToParents(input, parents);
    expect(out.map((h) => h.chunk_id)).toEqual(['a']);
    expect(input[0]).not.toHaveProperty('parent_text');
  });
});
