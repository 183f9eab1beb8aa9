import { tokenize } from '../text';
import { containsCjk, isCjkToken, normText, questionTokens } from './lexical';

/**
 * Per-index calibration of the relevance gate (issue 15 item 1): what the gate needs to know about one tenant's
 * index, learnt from the index itself — never from evaluation queries.
 *
 * - Term statistics from a bounded random sample of the index's chunks (`termStatsOf`): document frequencies, so that
 *   the gate weighs a question's words by how specific they are *in this index* (idf) instead of by a fixed proxy.
 * - Thresholds from off-topic probes (`GATE_PROBES`, generic everyday questions in English and Chinese, written for
 *   this purpose and unrelated to any evaluation set): each probe is asked through retrieval and the gate, and the
 *   threshold is set just above the probes' high quantile, separately per script (a Latin-script question is gated
 *   on its idf coverage, a CJK one on its word+bigram coverage: two scales). Probes that happen to be answerable from
 *   the index (a cooking wiki and the cooking probes) are why a quantile is used, not the maximum.
 * - A guard from pseudo-queries drawn from the index's own chunks (`pseudoQuery`): the threshold never exceeds what
 *   most of them reach, so an index whose every text resembles the probes does not refuse its own content.
 * Everything here is pure; the job that samples, retrieves and stores is libs/application query/gate-calibration.ts.
 */

/** Document frequencies of tokens over a sample of an index's chunks (serialisable). */
export interface TermStats {
  /** Number of sampled chunks. */
  docs: number;
  /** Latin tokens (the tokenizer's), CJK characters and CJK character bigrams → number of sampled chunks holding them. */
  df: Record<string, number>;
}

/** Most distinct terms kept; beyond it the terms seen in one chunk only are dropped (they weigh as unseen). */
export const MAX_TERMS = 60_000;

const CJK_CHAR = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/u;

/** Terms of one text for the statistics: Latin tokens, CJK characters and CJK bigrams. */
function termsOf(text: string): Set<string> {
  const out = new Set<string>();
  for (const t of tokenize(text)) if (!isCjkToken(t)) out.add(t);
  const n = normText(text);
  for (let i = 0; i < n.length; i++) {
    const a = n[i]!;
    if (!CJK_CHAR.test(a)) continue;
    out.add(a);
    const b = n[i + 1];
    if (b !== undefined && CJK_CHAR.test(b)) out.add(a + b);
  }
  return out;
}

/** Document frequencies over `texts` (one sampled chunk each), bounded to `maxTerms` distinct terms. */
export function termStatsOf(texts: readonly string[], maxTerms = MAX_TERMS): TermStats {
  const df = new Map<string, number>();
  for (const t of texts) for (const term of termsOf(t)) df.set(term, (df.get(term) ?? 0) + 1);
  let entries = [...df];
  if (entries.length > maxTerms) {
    entries = entries.filter(([, n]) => n > 1);
    if (entries.length > maxTerms) entries = entries.sort((a, b) => b[1] - a[1]).slice(0, maxTerms);
  }
  return { docs: texts.length, df: Object.fromEntries(entries) };
}

/** Sampled document frequency of a question token; a CJK word takes the least frequent of its bigrams (an upper bound). */
export function termDf(stats: TermStats, token: string): number {
  if (!isCjkToken(token)) return stats.df[token] ?? 0;
  const t = normText(token);
  if (t.length === 1) return stats.df[t] ?? 0;
  let min = Infinity;
  for (let i = 0; i + 1 < t.length; i++) min = Math.min(min, stats.df[t.slice(i, i + 2)] ?? 0);
  return Number.isFinite(min) ? min : 0;
}

/** Smoothed idf: ln((N + 1) / (df + 0.5)), at least 0.1 (a word in every chunk still counts a little). */
export function idf(stats: TermStats, token: string): number {
  return Math.max(0.1, Math.log((stats.docs + 1) / (termDf(stats, token) + 0.5)));
}

/** The idf of an unseen token. */
export function unseenIdf(stats: TermStats): number {
  return Math.log((stats.docs + 1) / 0.5);
}

/** Weights of the question's content tokens for the gate (see evidence.ts idfCoverage): small, sent with each task. */
export function questionTermWeights(question: string, stats: TermStats): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of questionTokens(question)) out[t] = idf(stats, t);
  return out;
}

/** Which threshold a question is gated with: CJK questions and Latin-script ones are scored on different signals. */
export type GateScript = 'latin' | 'cjk';
export const gateScriptOf = (question: string): GateScript => (containsCjk(question) ? 'cjk' : 'latin');

export interface CalibrationOptions {
  /** Quantile of the probes' evidence the threshold sits on (default 0.95). */
  probeQuantile: number;
  /** Added to that quantile (default 0.03). */
  margin: number;
  /** Bounds of a calibrated threshold (default 0.3 and 0.6). */
  floor: number;
  ceiling: number;
  /** Quantile of the pseudo-queries' evidence the threshold may not exceed (default 0.1). */
  pseudoQuantile: number;
  /** Fewest probes of a script to calibrate it; fewer → the default threshold for that script (default 10). */
  minProbes: number;
}

export const DEFAULT_CALIBRATION: CalibrationOptions = { probeQuantile: 0.95, margin: 0.03, floor: 0.3, ceiling: 0.6, pseudoQuantile: 0.1, minProbes: 10 };

/** The q-quantile of values (nearest rank on the sorted values; q in [0, 1]); NaN for none. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

/**
 * The threshold for one script: the probes' `probeQuantile` plus `margin`, at most the pseudo-queries'
 * `pseudoQuantile` (when there are at least `minProbes` of them), clamped to [floor, ceiling]; `fallback` when
 * there are fewer than `minProbes` probes.
 */
export function calibratedThreshold(probes: readonly number[], pseudo: readonly number[], fallback: number, opts: CalibrationOptions = DEFAULT_CALIBRATION): number {
  if (probes.length < opts.minProbes) return fallback;
  let t = quantile(probes, opts.probeQuantile) + opts.margin;
  if (pseudo.length >= opts.minProbes) t = Math.min(t, quantile(pseudo, opts.pseudoQuantile));
  return Math.round(Math.min(opts.ceiling, Math.max(opts.floor, t)) * 1000) / 1000;
}

/** One tenant's stored calibration. */
export interface GateCalibration {
  version: 1;
  tenant: string;
  /** Chunks in the tenant's index when calibrated (a grown index is recalibrated). */
  chunks: number;
  /** Chunks sampled for the term statistics and the pseudo-queries. */
  sampled: number;
  thresholds: Record<GateScript, number>;
  /** Diagnostics: how many probes / pseudo-queries per script, and their quantiles. */
  probes: Record<GateScript, { n: number; q50: number; q95: number }>;
  pseudo: Record<GateScript, { n: number; q10: number; q50: number }>;
  stats: TermStats;
  calibrated_at: string;
}

/** Whether a stored calibration is stale for an index now holding `chunks` chunks (grown or shrunk by `growth` or more). */
export function calibrationStale(cal: Pick<GateCalibration, 'chunks'>, chunks: number, growth = 0.2): boolean {
  if (cal.chunks <= 0) return chunks > 0;
  return Math.abs(chunks - cal.chunks) / cal.chunks >= growth;
}

/**
 * A pseudo-query from one of the index's chunks: a window of one of its sentences (10 words, or 20 CJK
 * characters), chosen with `random` (a function returning [0, 1)). Null when the text has no sentence long enough.
 */
export function pseudoQuery(text: string, random: () => number): string | null {
  const sentences = text
    .normalize('NFC')
    .split(/(?<=[.!?;。！？；])\s*|\n+/u)
    .map((s) => s.trim())
    .filter((s) => (containsCjk(s) ? s.length >= 12 : s.split(/\s+/).length >= 6));
  if (sentences.length === 0) return null;
  const s = sentences[Math.floor(random() * sentences.length)]!;
  if (containsCjk(s)) {
    const start = Math.floor(random() * Math.max(1, s.length - 20));
    return s.slice(start, start + 20);
  }
  const words = s.split(/\s+/);
  const start = Math.floor(random() * Math.max(1, words.length - 10));
  return words.slice(start, start + 10).join(' ');
}

/** A small seeded PRNG (mulberry32), so that a calibration is reproducible for a given seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The tenant of an internal document id (libs/domain documents/document-id.ts: `tenant#external`, or plain for `default`). */
export function tenantOfDocumentId(internalId: string): string {
  const hash = internalId.indexOf('#');
  return hash < 0 ? 'default' : internalId.slice(0, hash);
}
