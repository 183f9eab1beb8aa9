/** One ranked list to fuse, best first. `weight` scales its contribution (default 1). */
export interface RrfList {
  name: string;
  weight?: number;
  hits: { id: string; score: number }[];
}

export interface FusedHit {
  id: string;
  /** Σ over lists of weight / (k + rank). */
  score: number;
  /** 1-based rank of the id in each list it appeared in, by list name. */
  ranks: Record<string, number>;
}

export interface RrfOptions {
  /** RRF constant (default 60, as in Cormack et al. 2009). */
  k?: number;
  /** Keep only the best `limit` results (default: all). */
  limit?: number;
}

/**
 * Reciprocal rank fusion: score(d) = Σ_lists weight / (k + rank_list(d)), ranks 1-based in each list's order.
 *
 * - Only ranks matter, never the lists' raw scores (BM25 and cosine are not comparable).
 * - An id that occurs twice in one list keeps its first (best) rank; later occurrences are dropped, so
 *   ranks are positions among the list's distinct ids.
 * - Ties are broken deterministically: higher score, then better (smaller) best rank over all lists, then id.
 * - Lists with weight 0 still report ranks but contribute nothing to the score.
 */
export function reciprocalRankFusion(lists: readonly RrfList[], opts: RrfOptions = {}): FusedHit[] {
  const k = opts.k ?? 60;
  if (!(k >= 0) || !Number.isFinite(k)) throw new RangeError(`RRF k must be a finite number >= 0, got ${k}`);
  const fused = new Map<string, FusionEntry>();
  for (const list of lists) {
    const weight = list.weight ?? 1;
    if (!(weight >= 0) || !Number.isFinite(weight)) throw new RangeError(`RRF weight of list "${list.name}" must be a finite number >= 0`);
    const seen = new Set<string>();
    let rank = 0;
    for (const hit of list.hits) {
      if (seen.has(hit.id)) continue;
      seen.add(hit.id);
      rank += 1;
      let entry = fused.get(hit.id);
      if (!entry) {
        entry = { id: hit.id, score: 0, ranks: {}, bestRank: Infinity };
        fused.set(hit.id, entry);
      }
      // The same list name given twice: keep the better rank, but both still add to the score.
      const prev = entry.ranks[list.name];
      entry.ranks[list.name] = prev === undefined ? rank : Math.min(prev, rank);
      entry.score += weight / (k + rank);
      entry.bestRank = Math.min(entry.bestRank, rank);
    }
  }
  return orderFused(fused.values(), opts.limit);
}

/** A fused candidate while lists are being merged: its score so far, its rank per list and its best rank. */
export interface FusionEntry extends FusedHit {
  bestRank: number;
}

/**
 * The fusions' common ordering: higher score, then better (smaller) best rank over all lists, then id — so equal
 * scores never depend on insertion order — cut to `limit` when given.
 */
export function orderFused(entries: Iterable<FusionEntry>, limit?: number): FusedHit[] {
  const out = [...entries].sort((a, b) => b.score - a.score || a.bestRank - b.bestRank || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const limited = limit !== undefined ? out.slice(0, Math.max(0, limit)) : out;
  return limited.map(({ id, score, ranks }) => ({ id, score, ranks }));
}
