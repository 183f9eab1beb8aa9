import { containsCjk } from './lexical';
import { contextFeaturesOf, type ContextFeatures } from './lexical-memo';
import type { AnswerStatement } from './statements';

/** What to do with a statement its cited sources do not support (RAG_VERIFY). */
export type VerifyMode = 'mark' | 'drop' | 'refuse';
export const VERIFY_MODES: readonly VerifyMode[] = ['mark', 'drop', 'refuse'];

export interface VerifiedStatement extends AnswerStatement {
  /** How well the cited sources support the statement, in [0, 1]. */
  support: number;
  /** support ≥ the threshold. */
  supported: boolean;
}

export interface VerifySource {
  ref: number;
  text: string;
}

export interface VerifyOptions {
  mode: VerifyMode;
  /** A statement is supported from this support on (default SUPPORT_THRESHOLD). */
  threshold?: number;
  /**
   * Embedding similarity (cosine) of statement i to the cited source with ref r: `similarity[i]?.get(r)`, computed by
   * the caller (the domain embeds nothing). Absent: lexical support only.
   */
  similarity?: ReadonlyArray<ReadonlyMap<number, number> | undefined>;
  /**
   * Tokens and CJK bigrams of a text (a source or a statement): `LexicalMemo.context` so the sources' analysis is
   * shared across answers (profiled under /v1/query load: tokenizing the sources afresh for every answer was 18 % of
   * the event loop's busy time). Default contextFeaturesOf — the same result, computed each time.
   */
  features?: (text: string) => ContextFeatures;
}

export interface Verification {
  /** Every statement, scored and marked. */
  statements: VerifiedStatement[];
  /** The statements the answer keeps: all of them (mark), the supported ones (drop), none when refusing. */
  kept: VerifiedStatement[];
  /** Mode refuse with an unsupported statement, or mode drop with none supported: the answer becomes a refusal. */
  refuse: boolean;
  /** Share of the statements that are supported (1 when there are none). */
  supportRate: number;
}

/**
 * Support from this on counts as supported. Measured on the eval-style test (verify-eval.spec.ts: extractive answers
 * over cranfield and cmrc2018-trial passages, false statements swapped in from unrelated passages): the original
 * statements score 1 (they are the sources' own sentences), the injected ones mostly well under 0.5.
 */
export const SUPPORT_THRESHOLD = 0.6;
/** Cosines at or under this give no semantic support; at SIM_FULL and above, full support (linear between). */
const SIM_NONE = 0.75;
const SIM_FULL = 0.92;

/**
 * Scores each statement against the sources it cites and applies `mode` (issue 15 item 3):
 * - lexical support: the share of the statement's content words (the tokenizer's stemmed, stop-word-free tokens)
 *   found in the cited sources; for text with Chinese, averaged with the share of its character bigrams found there
 *   (Chinese word segmentation differs between a claim and its source, bigrams do not);
 * - semantic support, when the caller passes embedding similarities: the cosine mapped linearly from 0.75 (none) to
 *   0.92 (full) — it can raise a paraphrase's support, never lower a verbatim one's;
 * - support = the larger of the two; a statement citing no source, or only refs not among `sources`, has support 0.
 * mark: every statement kept, each with `supported`; drop: unsupported ones removed (refusal when none is left);
 * refuse: refusal when any statement is unsupported.
 */
export function verifyStatements(statements: readonly AnswerStatement[], sources: readonly VerifySource[], opts: VerifyOptions): Verification {
  const threshold = opts.threshold ?? SUPPORT_THRESHOLD;
  const features = opts.features ?? contextFeaturesOf;
  const textOf = new Map(sources.map((s) => [s.ref, s.text]));
  const byRef = new Map<number, ContextFeatures>(); // analysed on first citation: an uncited source costs nothing
  const sourceFeatures = (r: number): ContextFeatures | undefined => {
    let f = byRef.get(r);
    const text = textOf.get(r);
    if (!f && text !== undefined) byRef.set(r, (f = features(text)));
    return f;
  };
  const scored: VerifiedStatement[] = statements.map((st, i) => {
    const cited = st.source_ids.map(sourceFeatures).filter((x): x is ContextFeatures => x !== undefined);
    let support = 0;
    if (cited.length > 0) {
      support = lexicalSupport(st.text, cited, features);
      const sims = opts.similarity?.[i];
      if (sims) for (const r of st.source_ids) support = Math.max(support, semantic(sims.get(r)));
    }
    support = Math.round(support * 1000) / 1000;
    return { text: st.text, source_ids: [...st.source_ids], support, supported: support >= threshold };
  });
  const supported = scored.filter((s) => s.supported);
  const supportRate = scored.length ? supported.length / scored.length : 1;
  if (opts.mode === 'refuse') {
    const refuse = supported.length < scored.length;
    return { statements: scored, kept: refuse ? [] : scored, refuse, supportRate };
  }
  if (opts.mode === 'drop') return { statements: scored, kept: supported, refuse: scored.length > 0 && supported.length === 0, supportRate };
  return { statements: scored, kept: scored, refuse: false, supportRate };
}

function lexicalSupport(text: string, cited: readonly ContextFeatures[], features: (text: string) => ContextFeatures): number {
  const own = features(text);
  const tokens = [...own.tokens];
  const tokenShare = share(tokens, (t) => cited.some((c) => c.tokens.has(t)));
  if (!containsCjk(text)) return tokenShare ?? 0;
  const bigramShare = share([...own.bigrams], (b) => cited.some((c) => c.bigrams.has(b)));
  if (tokenShare === undefined) return bigramShare ?? 0;
  return bigramShare === undefined ? tokenShare : (tokenShare + bigramShare) / 2;
}

function share<T>(items: readonly T[], has: (x: T) => boolean): number | undefined {
  if (items.length === 0) return undefined;
  let n = 0;
  for (const x of items) if (has(x)) n++;
  return n / items.length;
}

function semantic(cos: number | undefined): number {
  if (cos === undefined || !Number.isFinite(cos)) return 0;
  return Math.min(1, Math.max(0, (cos - SIM_NONE) / (SIM_FULL - SIM_NONE)));
}
