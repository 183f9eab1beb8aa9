import { metrics } from '@rag/platform';

/** Cumulative counts of one connection's term cache (EmbeddedBm25KeywordIndex.termCacheStats()). */
export interface TermCacheCounts {
  /** Lookups served from the cache, `refreshes` of them after re-reading what another connection's commit changed. */
  hits: number;
  misses: number;
  refreshes: number;
  bytes: number;
}

/**
 * Publishes term caches as rag_keyword_term_cache_lookups_total and rag_keyword_term_cache_bytes. Each connection
 * (the main thread's index, each keyword worker's) reports its cumulative counts after a search; the counters grow by
 * the difference since that source's last report, and the gauge is the sum of the sources' latest sizes. Why it is
 * worth a metric: a budget below the working set of the questions being asked makes the least-recently-used cache
 * miss on most lookups round after round (at ≈ 1M chunks, 256 MiB against a 360 MB working set: a third of the
 * lookups missed and searches took ≈ 1.6× as long), which nothing else shows. result="refresh" counts the hits on a
 * term another connection (the keyword writer) had written since, whose changed tail was re-read; "hit" the rest.
 */
export class TermCacheMetrics {
  private readonly last = new Map<string, TermCacheCounts>();

  /** `maxSources`: sources kept (a replaced worker thread reports under a new id; the oldest is dropped). */
  constructor(
    private readonly connection: 'main' | 'worker',
    private readonly maxSources = 1,
  ) {}

  report(source: string, now: TermCacheCounts): void {
    const prev = this.last.get(source);
    // counts only grow within a source; a smaller one is a new connection under a reused id
    const grew = (a: number, b: number | undefined): number => (b !== undefined && a >= b ? a - b : a);
    const refreshes = grew(now.refreshes, prev?.refreshes);
    const hits = Math.max(0, grew(now.hits, prev?.hits) - refreshes);
    const misses = grew(now.misses, prev?.misses);
    if (hits > 0) metrics.keywordTermCacheLookups.inc({ connection: this.connection, result: 'hit' }, hits);
    if (refreshes > 0) metrics.keywordTermCacheLookups.inc({ connection: this.connection, result: 'refresh' }, refreshes);
    if (misses > 0) metrics.keywordTermCacheLookups.inc({ connection: this.connection, result: 'miss' }, misses);
    this.last.delete(source);
    this.last.set(source, { hits: now.hits, misses: now.misses, refreshes: now.refreshes, bytes: now.bytes });
    for (const id of this.last.keys()) {
      if (this.last.size <= this.maxSources) break;
      this.last.delete(id);
    }
    let bytes = 0;
    for (const c of this.last.values()) bytes += c.bytes;
    metrics.keywordTermCacheBytes.set({ connection: this.connection }, bytes);
  }
}
