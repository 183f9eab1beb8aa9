import { tokenize } from '../text';
import { containsCjk, normText, questionBigrams, questionTokens, textBigrams } from './lexical';
import { splitSentences } from './sentences';

export interface ExtractiveSource {
  /** Citation number, [1]..[n]. */
  ref: number;
  /** Optional title: sentences inherit its words (see the heuristic). */
  title?: string;
  text: string;
  /** Retrieval/rerank score: only used to order sources when they are not already best first. */
  score: number;
}

export interface ExtractiveOptions {
  /** Most sentences in the answer (default 3). */
  maxSentences?: number;
  /** Most characters in the answer, citations included (default: no limit). */
  maxChars?: number;
}

export interface ExtractiveAnswer {
  answer: string;
  /** Refs cited in the answer, in order of first appearance. */
  citedRefs: number[];
}

/** Weight of the source-rank bonus: the best source adds RANK_BONUS, the second RANK_BONUS/2, ... */
const RANK_BONUS = 0.05;
/** A further sentence is kept only when it scores at least this share of the best sentence. */
const MIN_RELATIVE_SCORE = 0.5;
/** Sentences this similar (Jaccard of their token/bigram sets) to a kept one are near-duplicates. */
const DUPLICATE_JACCARD = 0.8;

export const TUNING = { singleCharWeight: 1, titleCredit: 0, firstSentenceCredit: 0, shortLen: 0, shortPow: 0.5, minRel: 0.5, useTitle: 1, expandShort: 0 };

interface Candidate {
  ctxTokens: Set<string>;
  ctxBigrams: Set<string>;
  ref: number;
  sourceRank: number;
  position: number;
  text: string;
  tokens: Set<string>;
  bigrams: Set<string>;
  score: number;
}

/**
 * Builds an answer from the sources' best sentences, without an LLM.
 *
 * Heuristic:
 * 1. Sources are ranked by score (best first; ties keep their order) and split into sentences
 *    (English and Chinese aware, see `splitSentences`).
 * 2. Each sentence is scored by idf-weighted overlap with the question's content tokens: the share of
 *    the question's idf mass that the sentence contains, idf computed over all candidate sentences
 *    (words found in every sentence count little, rare ones much). For a question with Chinese text,
 *    the same is computed over character bigrams and averaged in, since a question and its answer
 *    sentence are often segmented differently. A small bonus (0.05 / source rank) favours better
 *    sources on near-ties.
 * 3. The best sentence is kept; further ones (up to `maxSentences`) only when they score at least
 *    half the best and are not near-duplicates of a kept one. Whole sentences are returned, never
 *    fragments, so the answer holds the full statement (and any answer span in it).
 * 4. Kept sentences are ordered by source rank, then position in the source, and each is followed by
 *    its citation [n] (placed before the sentence's final punctuation).
 * With no sentence sharing anything with the question, the first sentence of the best source is
 * returned (the relevance gate, not this function, decides whether to refuse). No sources or no text
 * gives an empty answer.
 */
export function extractiveAnswer(question: string, sources: readonly ExtractiveSource[], opts: ExtractiveOptions = {}): ExtractiveAnswer {
  const maxSentences = Math.max(1, Math.floor(opts.maxSentences ?? 3));
  const ranked = sources.map((s, i) => ({ s, i })).sort((a, b) => b.s.score - a.s.score || a.i - b.i);
  const candidates: Candidate[] = [];
  ranked.forEach(({ s }, sourceRank) => {
    const sentences = splitSentences(s.text.normalize('NFC'));
    const ttl = TUNING.useTitle ? s.title ?? '' : '';
    const titleTokens = new Set(tokenize(ttl));
    const titleBigrams = textBigrams(ttl);
    if (TUNING.firstSentenceCredit > 0 && sentences[0]) { for (const t of tokenize(sentences[0].text)) titleTokens.add(t); for (const b of textBigrams(sentences[0].text)) titleBigrams.add(b); }
    sentences.forEach((sentence, position) => {
      candidates.push({
        ctxTokens: titleTokens,
        ctxBigrams: titleBigrams,
        ref: s.ref,
        sourceRank,
        position,
        text: sentence.text,
        tokens: new Set(tokenize(sentence.text)),
        bigrams: textBigrams(sentence.text),
        score: 0,
      });
    });
  });
  if (candidates.length === 0) return { answer: '', citedRefs: [] };

  const cjk = containsCjk(question);
  const qTokens = questionTokens(question);
  const qBigrams = cjk ? questionBigrams(question) : [];
  const tokenIdf = idfOf(qTokens, candidates, (c) => c.tokens);
  const bigramIdf = idfOf(qBigrams, candidates, (c) => c.bigrams);
  for (const [t, w] of tokenIdf) if (t.length === 1 && /[\u3400-\u9fff]/u.test(t)) tokenIdf.set(t, w * TUNING.singleCharWeight);
  for (const c of candidates) {
    const lexical = overlap2(tokenIdf, c.tokens, c.ctxTokens);
    c.score = qBigrams.length > 0 ? (lexical + overlap2(bigramIdf, c.bigrams, c.ctxBigrams)) / 2 : lexical;
    if (TUNING.shortLen > 0 && c.text.length < TUNING.shortLen) c.score *= Math.pow(c.text.length / TUNING.shortLen, TUNING.shortPow);
    if (c.score > 0) c.score += RANK_BONUS / (c.sourceRank + 1);
  }

  const byScore = [...candidates].sort((a, b) => b.score - a.score || a.sourceRank - b.sourceRank || a.position - b.position);
  const best = byScore[0]!;
  const kept: Candidate[] = [best];
  if (best.score > 0) {
    for (const c of byScore.slice(1)) {
      if (kept.length >= maxSentences || c.score < best.score * TUNING.minRel) break;
      if (kept.some((k) => nearDuplicate(k, c))) continue;
      kept.push(c);
    }
  }
  if (TUNING.expandShort > 0 && best.text.length < TUNING.expandShort && best.score > 0) {
    const next = candidates.find((c) => c.ref === best.ref && c.sourceRank === best.sourceRank && c.position === best.position + 1);
    if (next && !kept.includes(next)) { if (kept.length >= maxSentences) kept.pop(); kept.push(next); }
  }
  // Respect maxChars: drop the weakest kept sentences first; the best one is cut if it alone is too long.
  const parts = () =>
    [...kept].sort((a, b) => a.sourceRank - b.sourceRank || a.position - b.position).map((c) => withCitation(c.text, c.ref, cjk));
  const joiner = cjk ? '' : ' ';
  let answer = parts().join(joiner);
  if (opts.maxChars !== undefined) {
    const maxChars = Math.max(1, Math.floor(opts.maxChars));
    while (answer.length > maxChars && kept.length > 1) {
      kept.pop();
      answer = parts().join(joiner);
    }
    if (answer.length > maxChars) {
      const cite = cjk ? `[${best.ref}]` : ` [${best.ref}]`;
      const room = Math.max(0, maxChars - cite.length - 1);
      answer = `${best.text.slice(0, room).trimEnd()}…${cite}`.slice(0, maxChars);
    }
  }
  const citedRefs: number[] = [];
  for (const c of [...kept].sort((a, b) => a.sourceRank - b.sourceRank || a.position - b.position)) {
    if (!citedRefs.includes(c.ref)) citedRefs.push(c.ref);
  }
  return { answer, citedRefs };
}

/** idf (BM25 form, always > 0) of each query term over the candidate sentences. */
function idfOf(terms: readonly string[], candidates: readonly Candidate[], field: (c: Candidate) => ReadonlySet<string>): Map<string, number> {
  const n = candidates.length;
  const idf = new Map<string, number>();
  for (const t of terms) {
    let df = 0;
    for (const c of candidates) if (field(c).has(t)) df++;
    idf.set(t, Math.log(1 + (n - df + 0.5) / (df + 0.5)));
  }
  return idf;
}

/** Share of the query's idf mass present in `have`, in [0, 1]. */
function overlap(idf: ReadonlyMap<string, number>, have: ReadonlySet<string>): number {
  let total = 0;
  let found = 0;
  for (const [t, w] of idf) {
    total += w;
    if (have.has(t)) found += w;
  }
  return total > 0 ? found / total : 0;
}

function overlap2(idf: ReadonlyMap<string, number>, have: ReadonlySet<string>, ctx: ReadonlySet<string>): number {
  let total = 0;
  let found = 0;
  for (const [t, w] of idf) {
    total += w;
    if (have.has(t)) found += w;
    else if (ctx.has(t)) found += w * TUNING.titleCredit;
  }
  return total > 0 ? found / total : 0;
}

function jaccard(a: ReadonlySet<string>, b: ReadonlySet<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  for (const x of a) if (b.has(x)) inter++;
  return inter / (a.size + b.size - inter);
}

function nearDuplicate(a: Candidate, b: Candidate): boolean {
  if (normText(a.text) === normText(b.text)) return true;
  const sim = a.bigrams.size > 0 || b.bigrams.size > 0 ? jaccard(a.bigrams, b.bigrams) : jaccard(a.tokens, b.tokens);
  return sim >= DUPLICATE_JACCARD;
}

/** "Lift rises. " → "Lift rises [1]." ; "升力增大。" → "升力增大[1]。" */
function withCitation(sentence: string, ref: number, cjk: boolean): string {
  const m = /^(.*?)(\s*)([.!?。！？；;:：]+["'’”」』）)\]】》]*)$/su.exec(sentence);
  const body = m ? m[1]! : sentence;
  const tail = m ? m[3]! : '';
  const sep = cjk || /[\u3400-\u9fff]$/u.test(body) ? '' : ' ';
  return `${body}${sep}[${ref}]${tail}`;
}
