/**
 * The order a recluster gives the keyword index's children (EmbeddedBm25KeywordIndex.recluster): chunks grouped by
 * their strongest terms, so that the chunks a query's terms score highly sit in few 64-id sub-blocks.
 *
 * Why: block-max search skips a sub-block when the sum of its terms' bounds cannot reach the k-th score. In ingestion
 * order a sub-block holds 20–40 unrelated documents, so every query term is present with a high bound in most of
 * them and the sum stays high: at 965k chunks only 4 % of the visited sub-blocks held a chunk that reached the k-th
 * score. Grouping chunks by topic is what the block-max literature does (document reordering by clustering or graph
 * bisection); measured on a copy of a 104k-chunk index, sorting the children by their two strongest mid-frequency
 * terms halved the sub-blocks a question visits (scripts/bench/README.md, keyword-scale).
 *
 * The key per child: its two terms with the highest BM25 weight (idf · tf part) among the terms of mid document
 * frequency (a term in fewer chunks groups too few to fill a sub-block; one in a large share of them groups nothing);
 * children are ordered by (strongest term, second term, previous id). Children with no such term go last, in their
 * previous order. Pure and in memory: two term ids and two weights per chunk id (24 bytes).
 */
export class ClusterKeys {
  private readonly t1: Int32Array;
  private readonly t2: Int32Array;
  private readonly w1: Float64Array;
  private readonly w2: Float64Array;

  /** `size`: one more than the largest chunk id that will be added. */
  constructor(size: number) {
    this.t1 = new Int32Array(size).fill(-1);
    this.t2 = new Int32Array(size).fill(-1);
    this.w1 = new Float64Array(size);
    this.w2 = new Float64Array(size);
  }

  /** Chunk `id` has term `term` with weight `weight`; the two strongest are kept (equal weights: the lower term id). */
  add(id: number, term: number, weight: number): void {
    const { t1, t2, w1, w2 } = this;
    if (t1[id]! < 0 || weight > w1[id]! || (weight === w1[id]! && term < t1[id]!)) {
      t2[id] = t1[id]!;
      w2[id] = w1[id]!;
      t1[id] = term;
      w1[id] = weight;
    } else if (t2[id]! < 0 || weight > w2[id]! || (weight === w2[id]! && term < t2[id]!)) {
      t2[id] = term;
      w2[id] = weight;
    }
  }

  /** Whether chunk `id` got a term (it is grouped by topic). */
  hasKey(id: number): boolean {
    return this.t1[id]! >= 0;
  }

  /** `ids` (chunk ids, ascending) in clustered order: by (strongest term, second term, id); keyless ones last. */
  order(ids: Uint32Array): Uint32Array {
    const { t1, t2 } = this;
    const out = Uint32Array.from(ids);
    const keyless = (x: number): number => (t1[x]! < 0 ? 1 : 0);
    out.sort((a, b) => keyless(a) - keyless(b) || t1[a]! - t1[b]! || t2[a]! - t2[b]! || a - b);
    return out;
  }
}
