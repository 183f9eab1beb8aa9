import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { metrics } from '@rag/platform';
import { EmbeddedBm25KeywordIndex } from './embedded-bm25.adapter';
import { keywordChunk, keywordCorpus, keywordRequests } from './keyword-cases.fixture';
import { TermCacheMetrics } from './term-cache-metrics';

/** rag_keyword_term_cache_lookups_total and _bytes for one connection label, as /metrics would show them. */
async function published(connection: string) {
  const out = { hit: 0, miss: 0, refresh: 0, bytes: 0 };
  for (const v of (await metrics.keywordTermCacheLookups.get()).values) if (v.labels.connection === connection) out[v.labels.result as 'hit' | 'miss' | 'refresh'] = v.value;
  for (const v of (await metrics.keywordTermCacheBytes.get()).values) if (v.labels.connection === connection) out.bytes = v.value;
  return out;
}

describe('TermCacheMetrics', () => {
  it('adds what each source counted since its last report, and sums the latest sizes of the sources it keeps', async () => {
    const before = await published('worker');
    const m = new TermCacheMetrics('worker', 2);
    m.report('1', { hits: 3, misses: 2, refreshes: 0, bytes: 100 });
    m.report('2', { hits: 1, misses: 1, refreshes: 0, bytes: 50 });
    m.report('1', { hits: 10, misses: 4, refreshes: 0, bytes: 120 }); // +7 hits, +2 misses
    let now = await published('worker');
    expect({ hit: now.hit - before.hit, miss: now.miss - before.miss, bytes: now.bytes }).toEqual({ hit: 11, miss: 5, bytes: 170 });
    // a third source (a replaced worker thread) pushes out the one that reported least recently
    m.report('3', { hits: 0, misses: 1, refreshes: 0, bytes: 30 });
    now = await published('worker');
    expect({ miss: now.miss - before.miss, bytes: now.bytes }).toEqual({ miss: 6, bytes: 150 });
    // counts that went down are a new connection under a reused id: counted from zero
    m.report('3', { hits: 2, misses: 0, refreshes: 0, bytes: 10 });
    now = await published('worker');
    expect({ hit: now.hit - before.hit, bytes: now.bytes }).toEqual({ hit: 13, bytes: 130 });
    // hits on terms another connection had changed (their tails re-read) are counted as result="refresh", not "hit"
    m.report('3', { hits: 7, misses: 0, refreshes: 4, bytes: 10 });
    now = await published('worker');
    expect({ hit: now.hit - before.hit, refresh: now.refresh - before.refresh }).toEqual({ hit: 14, refresh: 4 });
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
      expect(after.hit - before.hit).toBe(s.hits - s.refreshes);
      expect(after.refresh - before.refresh).toBe(s.refreshes);
      expect(after.miss - before.miss).toBe(s.misses);
      expect(s.hits).toBeGreaterThan(0);
      expect(after.bytes).toBe(s.bytes);
      // another connection (the keyword writer) writes 'wing': the next search re-reads that term's changed tail
      const writer = new EmbeddedBm25KeywordIndex({ dir });
      await writer.upsert([keywordChunk('wing2', 0, 'A swept wing.')]);
      await writer.close();
      await index.search(keywordRequests[0]!);
      const refreshed = await published('main');
      expect(index.termCacheStats().refreshes).toBe(1);
      expect(refreshed.refresh - before.refresh).toBe(1);
      await index.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
