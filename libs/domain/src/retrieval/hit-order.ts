/**
 * The order in which every keyword index returns its hits: score descending, then chunk id ascending (UTF-16
 * code-unit order). The embedded index ranks its top k with it, and the search-engine adapters re-rank what the
 * engine returned with it, so equal scores rank alike on every backend. Negative when `a` ranks first.
 */
export function byScoreThenChunkId(a: { score: number; chunk_id: string }, b: { score: number; chunk_id: string }): number {
  return b.score - a.score || (a.chunk_id < b.chunk_id ? -1 : a.chunk_id > b.chunk_id ? 1 : 0);
}
