import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metrics } from '@rag/platform';
import { EmbeddedBm25KeywordIndex } from './embedded-bm25.adapter';
import { keywordCorpus, keywordRequests } from './keyword-cases.fixture';
import { TermCacheMetrics } from './term-cache-metrics';

/** rag_keyword_term_cache_lookups_total and _bytes for one connection label, as /metrics would show them. */
async function published(connection: string) {
  const out = { hit: 0, miss: 0, bytes: 0 };
  for (const v of (await metrics.keywordTermCacheLookups.get()).values) if (v.labels.connection === connection) out[v.labels.result as 'hit' | 'miss'] = v.value;
  for (const v of (await metrics.keywordTermCacheBytes.get()).values) if (v.labels.connection === connection) out.bytes = v.value;
  return out;
}

describe('TermCacheMetrics', () => {
  it('adds what each source counted since its last report, and sums the latest sizes of the sources it keeps', async () => {
    const before = await published('worker');
    const m = new TermCacheMetrics('worker', 2);
    m.report('1', { hits: 3, misses: 2, bytes: 100 });
    m.report('2', { hits: 1, misses: 1, bytes: 50 });
    m.report('1', { hits: 10, misses: 4, bytes: 120 }); // +7 hits, +2 misses
    let now = await published('worker');
    expect({ hit: now.hit - before.hit, miss: now.miss - before.miss, bytes: now.bytes }).toEqual({ hit: 11, miss: 5, bytes: 170 });
    // a third source (a replaced worker thread) pushes out the one that reported least recently
    m.report('3', { hits: 0, misses: 1, bytes: 30 });
    now = await published('worker');
    expect({ miss: now.miss - before.miss, bytes: now.bytes }).toEqual({ miss: 6, bytes: 150 });
    // counts that went down are a new connection under a reused id: counted from zero
    m.report('3', { hits: 2, misses: 0, bytes: 10 });
    now = await published('worker');
    expect({ hit: now.hit - before.hit, bytes: now.bytes }).toEqual({ hit: 13, bytes: 130 });
  });

  it('an index given onTermCacheStats reports its cache after every search (what the factory wires to the main connection)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rag-kw-cache-metrics-'));
    try {
      const m = new TermCacheMetrics('main');
      const index = new EmbeddedBm25KeywordIndex({ dir, onTermCacheStats: (c) => m.report('main', c) });
      await index.upsert(keywordCorpus);
      const before = await published('main');
      for (const req of keywordRequests) await index.search(req);
      for (const req of keywordRequests) await index.search(req); // the same terms again: hits
      const after = await published('main');
      const s = index.termCacheStats();
      expect(after.hit - before.hit).toBe(s.hits);
      expect(after.miss - before.miss).toBe(s.misses);
      expect(s.hits).toBeGreaterThan(0);
      expect(after.bytes).toBe(s.bytes);
      await index.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
