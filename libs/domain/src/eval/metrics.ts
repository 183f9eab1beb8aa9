/**
 * Retrieval and answer metrics on BEIR-style data. Pure functions; the CLI's `rag eval` reads the
 * files and feeds them here.
 *
 * Conventions (those of trec_eval / pytrec_eval, which BEIR uses):
 * - a document is relevant when its grade is > 0; grades ≤ 0 and unjudged documents count as not relevant;
 * - nDCG uses the grade itself as the gain and 1/log2(rank + 1) as the discount, the ideal ranking
 *   being the judged grades sorted descending;
 * - a document repeated in a ranking counts once, at its first position.
 */

/** qrels: query id → (doc id → grade). */
export type Qrels = Map<string, Map<string, number>>;

/**
 * Parses a BEIR qrels TSV (`query-id<TAB>corpus-id<TAB>score`, with a header line). Also accepts
 * space-separated columns and the 4-column TREC layout (`qid 0 docid grade`). Blank lines are skipped;
 * a malformed line throws with its line number. A pair listed twice keeps the last grade.
 */
export function parseQrels(tsv: string): Qrels {
  const qrels: Qrels = new Map();
  const lines = tsv.split(/\r?\n/);
  lines.forEach((line, i) => {
    const trimmed = line.trim();
    if (!trimmed) return;
    const cols = trimmed.split(/\s+/);
    if (i === 0 && /^query[-_ ]?id$/i.test(cols[0] ?? '')) return;
    let qid: string | undefined;
    let docId: string | undefined;
    let gradeText: string | undefined;
    if (cols.length === 3) [qid, docId, gradeText] = cols;
    else if (cols.length === 4) [qid, , docId, gradeText] = cols;
    const grade = gradeText === undefined ? Number.NaN : Number(gradeText);
    if (qid === undefined || docId === undefined || !Number.isFinite(grade)) {
      throw new Error(`qrels line ${i + 1}: expected "query-id corpus-id score", got ${JSON.stringify(line)}`);
    }
    let judged = qrels.get(qid);
    if (!judged) {
      judged = new Map();
      qrels.set(qid, judged);
    }
    judged.set(docId, grade);
  });
  return qrels;
}

function firstK(ranked: readonly string[], k: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const id of ranked) {
    if (out.length >= k) break;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(id);
  }
  return out;
}

function relevantCount(qrels: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const g of qrels.values()) if (g > 0) n++;
  return n;
}

const gain = (qrels: ReadonlyMap<string, number>, id: string): number => Math.max(0, qrels.get(id) ?? 0);

/** nDCG@k with graded gains; 0 when the query has no relevant document. */
export function ndcgAt(ranked: readonly string[], qrels: ReadonlyMap<string, number>, k: number): number {
  let dcg = 0;
  firstK(ranked, k).forEach((id, i) => {
    dcg += gain(qrels, id) / Math.log2(i + 2);
  });
  const ideal = [...qrels.values()]
    .filter((g) => g > 0)
    .sort((a, b) => b - a)
    .slice(0, k);
  let idcg = 0;
  ideal.forEach((g, i) => {
    idcg += g / Math.log2(i + 2);
  });
  return idcg > 0 ? dcg / idcg : 0;
}

/** Fraction of the relevant documents found in the top k; 0 when none is relevant. */
export function recallAt(ranked: readonly string[], qrels: ReadonlyMap<string, number>, k: number): number {
  const total = relevantCount(qrels);
  if (total === 0) return 0;
  return firstK(ranked, k).filter((id) => gain(qrels, id) > 0).length / total;
}

/** Reciprocal rank of the first relevant document within the top k, else 0. */
export function mrrAt(ranked: readonly string[], qrels: ReadonlyMap<string, number>, k: number): number {
  const top = firstK(ranked, k);
  const i = top.findIndex((id) => gain(qrels, id) > 0);
  return i < 0 ? 0 : 1 / (i + 1);
}

/** 1 when a relevant document is in the top k, else 0. */
export function hitAt(ranked: readonly string[], qrels: ReadonlyMap<string, number>, k: number): number {
  return firstK(ranked, k).some((id) => gain(qrels, id) > 0) ? 1 : 0;
}

export interface RunMetrics {
  ndcg_at_10: number;
  recall_at_10: number;
  recall_at_100: number;
  mrr_at_10: number;
  hit_at_5: number;
  /** Queries averaged over: those with at least one relevant judgment. */
  queries: number;
}

export interface EvaluateRunOptions {
  /**
   * Only these queries (e.g. the ones in queries.jsonl). Default: every query of `qrels`.
   */
  queryIds?: Iterable<string>;
}

/**
 * Averages the metrics over the queries that have at least one relevant judgment. A judged query
 * missing from `run` counts as an empty ranking (all metrics 0): a system that returns nothing for a
 * hard query must not look better for it. Queries of `run` without judgments are ignored.
 */
export function evaluateRun(run: ReadonlyMap<string, readonly string[]>, qrels: Qrels, opts: EvaluateRunOptions = {}): RunMetrics {
  const ids = opts.queryIds ? [...new Set(opts.queryIds)] : [...qrels.keys()];
  const sums = { ndcg_at_10: 0, recall_at_10: 0, recall_at_100: 0, mrr_at_10: 0, hit_at_5: 0 };
  let n = 0;
  for (const qid of ids) {
    const judged = qrels.get(qid);
    if (!judged || relevantCount(judged) === 0) continue;
    const ranked = run.get(qid) ?? [];
    sums.ndcg_at_10 += ndcgAt(ranked, judged, 10);
    sums.recall_at_10 += recallAt(ranked, judged, 10);
    sums.recall_at_100 += recallAt(ranked, judged, 100);
    sums.mrr_at_10 += mrrAt(ranked, judged, 10);
    sums.hit_at_5 += hitAt(ranked, judged, 5);
    n++;
  }
  const avg = (x: number) => (n === 0 ? 0 : x / n);
  return {
    ndcg_at_10: avg(sums.ndcg_at_10),
    recall_at_10: avg(sums.recall_at_10),
    recall_at_100: avg(sums.recall_at_100),
    mrr_at_10: avg(sums.mrr_at_10),
    hit_at_5: avg(sums.hit_at_5),
    queries: n,
  };
}

/**
 * Normalises answer text for containment checks: NFKC, lower case, and every whitespace, punctuation
 * and symbol character removed (so "4 分钟", "4分钟。" and "4分钟" compare equal, as do "U.S." and "us").
 */
export function normalizeAnswerText(s: string): string {
  return s
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\s\p{P}\p{S}]+/gu, '');
}

/**
 * True when the answer contains any non-empty gold answer, both normalised with `normalizeAnswerText`.
 * Citation markers such as "[1]" or "[1, 2]" are removed from the answer first, so their digits can
 * neither fake a match (gold "1") nor break one.
 */
export function answerContainsGold(answer: string, golds: readonly string[]): boolean {
  const a = normalizeAnswerText(answer.replace(/\[\s*\d+(?:\s*[,，、;；-]\s*\d+)*\s*\]/gu, ''));
  return golds.some((g) => {
    const n = normalizeAnswerText(g);
    return n.length > 0 && a.includes(n);
  });
}
