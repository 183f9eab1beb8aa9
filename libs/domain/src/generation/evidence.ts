import { tokenize } from '../text';
import { containsCjk, isCjkToken, normText, questionBigrams, questionTokens } from './lexical';

/**
 * How well `text` covers the question's content, in [0, 1]; the relevance gate compares the best
 * value over the top sources with a threshold.
 *
 * Idf-free (it must work on a single source, without corpus statistics) and language-aware:
 * - the question's content tokens are the tokenizer's tokens (stop words removed, light stemming)
 *   minus question-shaping words ("explain", "为什么", "哪些"...);
 * - a Latin token counts 1 when the text has it, 0.5 when the text only has a word sharing its first
 *   five or more letters (aeroelastic ~ aeroelasticity) — the light stemmer does not conflate those;
 * - a CJK token counts 1 when it occurs in the text as a substring (word segmentation of the question
 *   and of the text often differ);
 * - word coverage is the mean of those counts; for a question with CJK text the score is the mean of
 *   the word coverage and the character-bigram coverage (share of the question's CJK bigrams found in
 *   the text), since Chinese questions rarely share exact segmented words with their answer.
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
  for (const q of qTokens) {
    if (isCjkToken(q)) {
      if (tText.includes(q)) matched += 1;
    } else if (textTokens.has(q)) {
      matched += 1;
    } else if (q.length >= 6 && hasLongPrefixMatch(q, textTokens, prefixes)) {
      matched += 0.5;
    }
  }
  const wordCoverage = matched / qTokens.length;
  if (!containsCjk(question)) return wordCoverage;
  const bigrams = questionBigrams(question);
  if (bigrams.length === 0) return wordCoverage;
  const found = bigrams.filter((b) => tText.includes(b)).length;
  return (wordCoverage + found / bigrams.length) / 2;
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
