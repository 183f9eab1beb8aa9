// Verbatim copy of evidence.ts as of commit 83317df (before the lexical memo): the reference the equivalence spec compares with. Test-only.
import { tokenize } from '../../text';
import { containsCjk, isCjkToken, normText, questionBigrams, questionTokens } from '../lexical';

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
 * A question without content tokens scores 0.
 */
export function evidenceScore(question: string, text: string): number {
  const qTokens = questionTokens(question);
  if (qTokens.length === 0) return 0;
  const tText = normText(text);
  const textTokens = new Set(tokenize(text));
  const prefixes = new Set<string>();
  for (const t of textTokens) if (t.length >= 5 && !isCjkToken(t)) prefixes.add(t.slice(0, 5));
  let matched = 0;
  let total = 0;
  for (const q of qTokens) {
    const w = tokenWeight(q);
    total += w;
    if (isCjkToken(q)) {
      if (tText.includes(q)) matched += w;
    } else if (textTokens.has(q)) {
      matched += w;
    } else if (q.length >= 6 && hasLongPrefixMatch(q, textTokens, prefixes)) {
      matched += w / 2;
    }
  }
  const wordCoverage = matched / (total + (SMOOTHING * total) / qTokens.length);
  if (!containsCjk(question)) return wordCoverage;
  const bigrams = questionBigrams(question);
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
  /** Best evidence over the sources, in [0, 1]. */
  evidence: number;
}

/**
 * Relevance gate: refuse when even the best of the top sources covers the question too little
 * (`evidence < threshold`), or when there are no sources. Retrieval scores are not used: BM25, cosine
 * and reranker scores are not comparable across modes, while lexical coverage is.
 */
export function shouldRefuse(question: string, topSources: readonly { text: string; score: number }[], threshold: number): RefusalDecision {
  let evidence = 0;
  for (const s of topSources) evidence = Math.max(evidence, evidenceScore(question, s.text));
  return { refuse: topSources.length === 0 || evidence < threshold, evidence };
}
