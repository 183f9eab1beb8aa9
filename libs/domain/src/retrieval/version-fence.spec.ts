import { applyVersionFence } from './version-fence';

describe('applyVersionFence', () => {
  const hits = [
    { chunk_id: 'a#v1#0', document_id: 'a', version: 1, score: 0.9 },
    { chunk_id: 'a#v2#0', document_id: 'a', version: 2, score: 0.8 },
    { chunk_id: 'b#v3#0', document_id: 'b', version: 3, score: 0.7 },
    { chunk_id: 'gone#v1#0', document_id: 'gone', version: 1, score: 0.6 },
    { chunk_id: 'a#v2#1', document_id: 'a', version: 2, score: 0.5 },
  ];

  it('keeps only the active version of each document, in order', () => {
    const out = applyVersionFence(hits, new Map([['a', 2], ['b', 3]]));
    expect(out.map((h) => h.chunk_id)).toEqual(['a#v2#0', 'b#v3#0', 'a#v2#1']);
  });

  it('keeps the old version while the new one is not yet active (no mix during a replacement)', () => {
    const out = applyVersionFence(hits, new Map([['a', 1], ['b', 3]]));
    expect(out.map((h) => h.chunk_id)).toEqual(['a#v1#0', 'b#v3#0']);
  });

  it('drops deleted or unknown documents', () => {
    expect(applyVersionFence(hits, new Map())).toEqual([]);
  });
});
