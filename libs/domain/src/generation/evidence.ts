import { containsCjk, isCjkToken, questionBigrams, questionTokens } from './lexical';
import { combinedEvidence, type ScriptCalibration } from './calibration';
import { gateFeaturesOf, LexicalMemo, type GateFeatures } from './lexical-memo';

/** Pseudo-count of one unmatched "virtual" question token (in units of the mean token weight): short questions need fuller coverage. */
const SMOOTHING = 0.5;

/** Weight of a question token: longer Latin words are more specific ("photosynthesis" vs "work"); CJK words weigh alike. */
function tokenWeight(token: string): number {
  return isCjkToken(token) ? 4 : Math.max(1, Math.min(8, token.length - 2));
}

/**
 * How well `text` covers the question's content, in [0, 1]; the relevance gate compares the best
 * value over the top sources with a threshold (0.5 separates well on the Cranfield and CMRC data).
 *
 * Idf-free (it must work on a single source, without corpus statistics) and language-aware:
 * - the question's content tokens are the tokenizer's tokens (stop words removed, light stemming)
 *   minus question-shaping words ("explain", "为什么", "哪些"...);
 * - a Latin token counts fully when the text has it, half when the text only has a word sharing its
 *   first max(5, length - 3) letters (aeroelastic ~ aeroelasticity), which the light stemmer misses;
 * - a CJK token counts when it occurs in the text as a substring (the question's and the text's word
 *   segmentations often differ);
 * - tokens are weighted by specificity without corpus statistics: a Latin word by its length
 *   (clamped to 1..8 after subtracting 2), a CJK word by a constant;
 * - word coverage = matched weight / (total weight + 0.5 × mean weight): the extra half token means a
 *   one- or two-word question needs full coverage to pass 0.5 ("capital of France" against a text
 *   that only mentions France scores 0.44);
 * - for a question with CJK text the score is the mean of the word coverage and the character-bigram
 *   coverage (share of the question's CJK bigrams found in the text, smoothed the same way), since
 *   Chinese questions rarely share exact segmented words with their answer.
 * A question without content tokens scores 0. With a `memo`, the text's analysis (tokens, prefixes,
 * normalised form) is taken from it when the same text was analysed before; the score is the same.
 */
export function evidenceScore(question: string, text: string, memo?: LexicalMemo): number {
  return scoreWith(questionFeaturesOf(question), memo ? memo.gate(text) : gateFeaturesOf(text));
}

interface QuestionFeatures {
  tokens: readonly string[];
  cjk: boolean;
  bigrams: readonly string[];
}

/** The question's side of the score, computed once per question (not once per source). */
function questionFeaturesOf(question: string): QuestionFeatures {
  const tokens = questionTokens(question);
  const cjk = tokens.length > 0 && containsCjk(question);
  return { tokens, cjk, bigrams: cjk ? questionBigrams(question) : [] };
}

function scoreWith(q: QuestionFeatures, text: GateFeatures): number {
  const qTokens = q.tokens;
  if (qTokens.length === 0) return 0;
  const { norm: tText, tokens: textTokens, prefixes } = text;
  let matched = 0;
  let total = 0;
  for (const t of qTokens) {
    const w = tokenWeight(t);
    total += w;
    if (isCjkToken(t)) {
      if (tText.includes(t)) matched += w;
    } else if (textTokens.has(t)) {
      matched += w;
    } else if (t.length >= 6 && hasLongPrefixMatch(t, textTokens, prefixes)) {
      matched += w / 2;
    }
  }
  const wordCoverage = matched / (total + (SMOOTHING * total) / qTokens.length);
  if (!q.cjk) return wordCoverage;
  const bigrams = q.bigrams;
  if (bigrams.length === 0) return wordCoverage;
  const found = bigrams.filter((b) => tText.includes(b)).length;
  return (wordCoverage + found / (bigrams.length + SMOOTHING)) / 2;
}

/** True when some text token shares a prefix of at least max(5, len - 3) letters with `q`. */
function hasLongPrefixMatch(q: string, textTokens: ReadonlySet<string>, prefixes: ReadonlySet<string>): boolean {
  if (!prefixes.has(q.slice(0, 5))) return false;
  const need = Math.max(5, q.length - 3);
  for (const t of textTokens) {
    if (t.length >= need && t.slice(0, need) === q.slice(0, need)) return true;
  }
  return false;
}

export interface RefusalDecision {
  refuse: boolean;
  /**
   * The gate's estimate that the answer is in the sources, in [0, 1] (see gateEvidence): with per-index term weights,
   * the idf-weighted coverage of a Latin-script question by the top sources together; otherwise the best single
   * source's coverage (evidenceScore).
   */
  evidence: number;
  /** The signals the estimate was made from (diagnostics; only what was computed). */
  signals?: GateSignals;
}

/**
 * The gate's signals for one question and its top sources. Each means the same on any corpus:
 * - `coverage`: the best single source's coverage of the question (evidenceScore: length-weighted, idf-free);
 * - `idf_coverage`: the share of the question's content covered by the top sources together (a token counts when
 *   any source has it), each token weighted by its idf in this index (`termWeights`, from a sample of the index's
 *   own chunks, see calibration.ts): a word the index hardly knows weighs most, so a question whose specific words
 *   are nowhere in the sources scores low whatever the corpus, and a long question whose parts are answered by
 *   different sources is not penalised for its length. Absent without term weights or for a CJK question;
 * - `score_gap`: (top score − score at rank k) / top score over the retrieval scores, in [0, 1] (a peaked list
 *   suggests a real match; diagnostic only: fused RRF and reranker scores differ in scale between modes).
 * - `dense_top`: the top hit's dense similarity, measured by the caller (the generator receives no vectors; the
 *   calibrated gate looks it up, see libs/application query/gate-calibration.ts) and passed in `denseTop`.
 * Dense/keyword agreement is not here: the generator receives the fused list only.
 */
export interface GateSignals {
  coverage: number;
  idf_coverage?: number;
  score_gap?: number;
  /** The top hit's dense similarity in the index (raw vector-store score), when the caller measured it. */
  dense_top?: number;
}

export interface GateOptions {
  memo?: LexicalMemo;
  /**
   * Weight of each question token (its idf in the index, see calibration.ts questionTermWeights); tokens missing
   * from the map weigh as an unseen token (`unseenWeight`).
   */
  termWeights?: Readonly<Record<string, number>>;
  unseenWeight?: number;
  /** The index's calibration for the question's script: the estimate is then combinedEvidence (threshold 0.5). */
  calibration?: ScriptCalibration;
  /** The top hit's dense similarity for the question (a signal when `calibration` has a dense scale). */
  denseTop?: number;
}

/** Coverage of the question by the sources together, tokens weighted by `weights` (matching as in evidenceScore). */
export function idfCoverage(question: string, texts: readonly string[], weights: Readonly<Record<string, number>>, unseenWeight: number, memo?: LexicalMemo): number {
  const q = questionFeaturesOf(question);
  return idfCoverageWith(q, texts.map((t) => (memo ? memo.gate(t) : gateFeaturesOf(t))), weights, unseenWeight);
}

function idfCoverageWith(q: QuestionFeatures, texts: readonly GateFeatures[], weights: Readonly<Record<string, number>>, unseenWeight: number): number {
  if (q.tokens.length === 0 || texts.length === 0) return 0;
  let matched = 0;
  let total = 0;
  for (const t of q.tokens) {
    const w = weights[t] ?? unseenWeight;
    total += w;
    let best = 0;
    for (const f of texts) {
      if (isCjkToken(t) ? f.norm.includes(t) : f.tokens.has(t)) {
        best = 1;
        break;
      }
      if (best === 0 && !isCjkToken(t) && t.length >= 6 && hasLongPrefixMatch(t, f.tokens, f.prefixes)) best = 0.5;
    }
    matched += w * best;
  }
  if (total <= 0) return 0;
  return matched / (total + (SMOOTHING * total) / q.tokens.length);
}

/** (top − k-th) / top over positive retrieval scores; 0 for fewer than two sources or a non-positive top score. */
export function scoreGap(scores: readonly number[]): number {
  if (scores.length < 2) return 0;
  const top = Math.max(...scores);
  if (!(top > 0)) return 0;
  const last = Math.min(...scores);
  return Math.max(0, Math.min(1, (top - last) / top));
}

/** The gate's signals (see GateSignals). */
export function gateSignals(question: string, topSources: readonly { text: string; score: number }[], opts: GateOptions = {}): GateSignals {
  const q = questionFeaturesOf(question);
  const feats = topSources.map((s) => (opts.memo ? opts.memo.gate(s.text) : gateFeaturesOf(s.text)));
  let coverage = 0;
  for (const f of feats) coverage = Math.max(coverage, scoreWith(q, f));
  const signals: GateSignals = { coverage, score_gap: scoreGap(topSources.map((s) => s.score)) };
  if (opts.termWeights && !q.cjk) signals.idf_coverage = idfCoverageWith(q, feats, opts.termWeights, opts.unseenWeight ?? maxWeight(opts.termWeights));
  if (opts.denseTop !== undefined) signals.dense_top = opts.denseTop;
  return signals;
}

/** The lexical estimate: `idf_coverage` when there is one, else `coverage`. */
export function gateEvidence(signals: GateSignals): number {
  return signals.idf_coverage ?? signals.coverage;
}

/** The gate's estimate: calibrated (combinedEvidence of the lexical estimate and the dense similarity) with a calibration, else the lexical one. */
export function gateEstimate(signals: GateSignals, calibration?: ScriptCalibration): number {
  if (!calibration) return gateEvidence(signals);
  return combinedEvidence({ lexical: gateEvidence(signals), ...(signals.dense_top !== undefined ? { dense: signals.dense_top } : {}) }, calibration);
}

function maxWeight(weights: Readonly<Record<string, number>>): number {
  let m = 0;
  for (const v of Object.values(weights)) m = Math.max(m, v);
  return m || 1;
}

/**
 * Relevance gate: refuse when the evidence that the answer is in the top sources (gateEvidence) is under the
 * threshold, or when there are no sources. Retrieval scores do not decide: BM25, cosine and reranker scores are not
 * comparable across modes, while coverage is. The threshold is the index's calibrated one (calibration.ts) or the
 * RAG_REFUSAL_THRESHOLD override.
 */
export function shouldRefuse(
  question: string,
  topSources: readonly { text: string; score: number }[],
  threshold: number,
  memoOrOpts?: LexicalMemo | GateOptions,
): RefusalDecision {
  const opts: GateOptions = memoOrOpts instanceof LexicalMemo ? { memo: memoOrOpts } : (memoOrOpts ?? {});
  if (!opts.termWeights && !opts.calibration) {
    // The idf-free gate as before (one signal); kept byte-for-byte so results without calibration do not move.
    let evidence = 0;
    const q = questionFeaturesOf(question);
    for (const s of topSources) evidence = Math.max(evidence, scoreWith(q, opts.memo ? opts.memo.gate(s.text) : gateFeaturesOf(s.text)));
    return { refuse: topSources.length === 0 || evidence < threshold, evidence };
  }
  const signals = gateSignals(question, topSources, opts);
  const evidence = gateEstimate(signals, opts.calibration);
  return { refuse: topSources.length === 0 || evidence < threshold, evidence, signals };
}
