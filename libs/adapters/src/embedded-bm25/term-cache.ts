/**
 * A bounded, least-recently-used cache of decoded posting data per query term of the embedded keyword index: the
 * term's block directory (its `dirs` rows decoded) and, once a search has range-scanned them, its large blocks'
 * posting words. A million-chunk search spent ≈ 1.4 ms reading the query terms' directory rows and 10–12 ms reading
 * the frequent terms' block blobs (≈ 6,900 rows), plus decoding both (scripts/bench/README.md, keyword-scale); the
 * frequent terms are the ones that recur across questions, so those reads are what a posting-list cache serves
 * (the classic result-independent cache of search engines).
 *
 * Consistency is the owner's job, and is kept exact: every write to a term's blocks evicts the term first
 * (EmbeddedBm25KeywordIndex.updateBlock), and a commit by another connection (another process, or a query worker's
 * view of the indexer's writes) marks the terms it wrote stale from the first block it changed — read from the file's
 * change log when `PRAGMA data_version` moved, at the start of each search's read transaction — and the owner
 * re-reads only that tail on the term's next use (replaceDir); a log it cannot follow clears the whole cache.
 * Cached directories are shared between searches and never mutated.
 */
export class TermCache<Dir, Blocks> {
  private readonly terms = new Map<number, { dir: Dir; dirBytes: number; blocks?: Blocks; blockBytes: number }>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  /** `maxBytes`: the budget (0: off); one term may take at most a quarter of it. */
  constructor(readonly maxBytes: number) {}

  get size(): number {
    return this.bytes;
  }

  /** The term's cached directory (and large blocks, when cached), most recently used from now on. */
  get(termId: number): { dir: Dir; blocks?: Blocks } | undefined {
    const e = this.terms.get(termId);
    if (!e) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this.terms.delete(termId);
    this.terms.set(termId, e);
    return e;
  }

  /** The term's cached entry without counting a hit or making it recently used (the owner's invalidation). */
  peek(termId: number): { dir: Dir; blocks?: Blocks } | undefined {
    return this.terms.get(termId);
  }

  /**
   * Replaces a cached term's directory (a refreshed one), keeping its blocks unless `dropBlocks`. Nothing when the
   * term is not cached; when it would no longer fit, the term goes.
   */
  replaceDir(termId: number, dir: Dir, bytes: number, dropBlocks = false): void {
    const e = this.terms.get(termId);
    if (!e) return;
    if (dropBlocks) {
      this.bytes -= e.blockBytes;
      e.blocks = undefined;
      e.blockBytes = 0;
    }
    if (!this.fits(bytes + e.blockBytes)) {
      this.evict(termId);
      return;
    }
    this.bytes += bytes - e.dirBytes;
    e.dir = dir;
    e.dirBytes = bytes;
    this.shrink(termId);
  }

  /** Caches a term's directory (replacing what the term had). Skipped when it alone would take over a quarter of the budget. */
  putDir(termId: number, dir: Dir, bytes: number): void {
    this.evict(termId);
    if (!this.fits(bytes)) return;
    this.terms.set(termId, { dir, dirBytes: bytes, blockBytes: 0 });
    this.bytes += bytes;
    this.shrink();
  }

  /**
   * Sets a cached term's large blocks, or replaces them (a term's blocks grow as searches look more of them up, and a
   * range scan replaces those with all of them): `bytes` is what they take now. Nothing when the term is not cached;
   * when they would not fit, the term keeps its directory only.
   */
  putBlocks(termId: number, blocks: Blocks, bytes: number): void {
    const e = this.terms.get(termId);
    if (!e) return;
    this.bytes -= e.blockBytes;
    if (!this.fits(e.dirBytes + bytes)) {
      e.blocks = undefined;
      e.blockBytes = 0;
      return;
    }
    e.blocks = blocks;
    e.blockBytes = bytes;
    this.bytes += bytes;
    this.shrink(termId);
  }

  evict(termId: number): void {
    const e = this.terms.get(termId);
    if (!e) return;
    this.terms.delete(termId);
    this.bytes -= e.dirBytes + e.blockBytes;
  }

  clear(): void {
    this.terms.clear();
    this.bytes = 0;
  }

  private fits(bytes: number): boolean {
    return this.maxBytes > 0 && bytes <= this.maxBytes / 4;
  }

  /** Drops the least recently used terms until the budget holds (never `keep`, the term just added to). */
  private shrink(keep?: number): void {
    for (const [id, e] of this.terms) {
      if (this.bytes <= this.maxBytes) return;
      if (id === keep) continue;
      this.terms.delete(id);
      this.bytes -= e.dirBytes + e.blockBytes;
    }
  }
}
