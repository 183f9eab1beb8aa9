import { orderFused, type FusedHit, type FusionEntry, type RrfList } from './rrf';

export type ScoreNormalization = 'zscore' | 'minmax';

export interface ScoreFusionOptions {
  /** How each list's raw scores are put on one scale before weighting (default `zscore`). */
  normalization?: ScoreNormalization;
  /** Keep only the best `limit` results (default: all). */
  limit?: number;
}

/**
 * Convex score fusion: score(d) = Σ_lists (weight / Σ weights) · norm_list(d).
 *
 * Unlike RRF it keeps *how much* better one candidate is than the next inside each list, which matters when one
 * retriever is near the ceiling (keyword search on CMRC: RRF could only drag it down; this lets a confident dense
 * score break a close keyword call). Each list is normalised over its own candidates — `zscore`: (s − mean) / sd;
 * `minmax`: (s − min) / (max − min) — so BM25 and cosine become comparable per query.
 *
 * - An id missing from a list gets that list's lowest normalised score: it was not in the candidates, so it scored
 *   at most that (a lower bound; 0 would over-reward it under z-scores, where the mean is 0).
 * - An empty list contributes nothing (a degraded store leaves the other list's order untouched).
 * - Only the weights' ratio matters; all-zero weights fall back to equal weights.
 * - Duplicates in a list keep their first (best) occurrence; ties break on the better best rank, then the id —
 *   the same deterministic order as reciprocalRankFusion, whose FusedHit shape this returns.
 */
export function scoreFusion(lists: readonly RrfList[], opts: ScoreFusionOptions = {}): FusedHit[] {
  const how = opts.normalization ?? 'zscore';
  for (const l of lists) {
    const w = l.weight ?? 1;
    if (!(w >= 0) || !Number.isFinite(w)) throw new RangeError(`fusion weight of list "${l.name}" must be a finite number >= 0`);
  }
  const live = lists.filter((l) => l.hits.length > 0);
  const total = live.reduce((s, l) => s + (l.weight ?? 1), 0);
  const weightOf = (l: RrfList) => (total > 0 ? (l.weight ?? 1) / total : 1 / live.length);

  const fused = new Map<string, FusionEntry>();
  const normalised = live.map((l) => {
    const firsts = new Map<string, { score: number; rank: number }>();
    for (const h of l.hits) if (!firsts.has(h.id)) firsts.set(h.id, { score: h.score, rank: firsts.size + 1 });
    const scores = [...firsts.values()].map((x) => x.score);
    const norm = normaliser(scores, how);
    const floor = Math.min(...scores.map(norm));
    for (const [id, x] of firsts) {
      let e = fused.get(id);
      if (!e) fused.set(id, (e = { id, score: 0, ranks: {}, bestRank: Infinity }));
      const prev = e.ranks[l.name];
      e.ranks[l.name] = prev === undefined ? x.rank : Math.min(prev, x.rank);
      e.bestRank = Math.min(e.bestRank, x.rank);
    }
    return { list: l, firsts, norm, floor };
  });
  for (const e of fused.values()) {
    for (const n of normalised) {
      const x = n.firsts.get(e.id);
      e.score += weightOf(n.list) * (x ? n.norm(x.score) : n.floor);
    }
  }
  return orderFused(fused.values(), opts.limit);
}

function normaliser(scores: number[], how: ScoreNormalization): (s: number) => number {
  if (how === 'minmax') {
    const lo = Math.min(...scores);
    const hi = Math.max(...scores);
    return hi > lo ? (s) => (s - lo) / (hi - lo) : () => 1;
  }
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
  const sd = Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / scores.length);
  // One candidate, or all equal: every candidate is as good as the list's best, i.e. 0 standard deviations away.
  return sd > 0 ? (s) => (s - mean) / sd : () => 0;
}
