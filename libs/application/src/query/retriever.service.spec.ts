import { testChunk } from '@rag/contracts';
import type { KeywordHit, KeywordIndex, Registry, VectorHit, VectorStore } from '@rag/ports';
import { RetrieverService } from './retriever.service';

/**
 * Port doubles that spend "CPU" the way the embedded stores do: synchronously, inside the call (the embedded keyword
 * index runs a search on the calling thread when every worker is busy). Time is a fake clock, so the assertions are
 * about which stage a cost is booked to, not about how fast anything is.
 */
function setup(costs: { keywordMs: number; denseMs: number }) {
  const calls: string[] = [];
  const keywords = {
    search: async (): Promise<KeywordHit[]> => {
      calls.push('keyword');
      vi.advanceTimersByTime(costs.keywordMs);
      return [{ chunk_id: 'k#v1#0', document_id: 'k', version: 1, score: 2 }];
    },
    getChunks: async (ids: string[]) => ids.map((id) => testChunk(id, { text: `text of ${id}` })),
  } as unknown as KeywordIndex;
  const vectors = {
    search: async (): Promise<VectorHit[]> => {
      calls.push('dense');
      vi.advanceTimersByTime(costs.denseMs);
      return [{ chunk_id: 'v#v1#0', document_id: 'v', version: 1, score: 0.9 }];
    },
  } as unknown as VectorStore;
  const registry = { activeVersions: async (ids: string[]) => new Map(ids.map((id) => [id, 1])) } as unknown as Registry;
  const retriever = new RetrieverService(vectors, keywords, registry, { rrfK: 60, denseWeight: 1, keywordWeight: 1 });
  const request = { query: 'q', vector: new Float32Array([1, 0]), top_k: 5, candidates: 10, mode: 'hybrid' as const, scope: { tenant: 't', principals: [] as string[] } };
  return { calls, retriever, request };
}

describe('RetrieverService stage timings', () => {
  beforeEach(() => vi.useFakeTimers({ toFake: ['performance'] }));
  afterEach(() => vi.useRealTimers());

  it('starts the keyword search first, so a search run on this thread is not booked to the dense stage', async () => {
    const { calls, retriever, request } = setup({ keywordMs: 40, denseMs: 1 });
    const res = await retriever.retrieve(request);
    expect(calls).toEqual(['keyword', 'dense']);
    // Before, the dense search ran first and its continuation waited for the inline keyword search: 41 ms "dense".
    expect(res.timings_ms.retrieve_dense).toBe(1);
    expect(res.timings_ms.retrieve_keyword).toBeGreaterThanOrEqual(40);
    expect(res.results.map((r) => r.chunk_id).sort()).toEqual(['k#v1#0', 'v#v1#0']);
  });

  it('runs only the search the mode asks for', async () => {
    for (const [mode, want] of [
      ['keyword', ['keyword']],
      ['dense', ['dense']],
    ] as const) {
      const { calls, retriever, request } = setup({ keywordMs: 2, denseMs: 3 });
      const res = await retriever.retrieve({ ...request, mode });
      expect(calls).toEqual(want);
      expect(Object.keys(res.timings_ms).filter((k) => k.startsWith('retrieve_'))).toEqual([`retrieve_${want[0]}`]);
    }
  });
});
