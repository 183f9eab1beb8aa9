/**
 * How much of a text is written in a CJK script versus a Latin (or other alphabetic) one, for routing a query to
 * the embedding model of its language. Each CJK character counts as one unit (a Chinese word is 1–3 of them, and
 * a character carries about a word's meaning) and each run of letters/digits of another script as one word.
 *
 * Returns weights that sum to 1: `cjk` for the CJK-language model, `other` for the other one. A text with
 * neither (empty, punctuation only) gets 0.5/0.5, so both models are asked.
 */
export function scriptWeights(text: string): { cjk: number; other: number } {
  const cjk = text.match(CJK)?.length ?? 0;
  const other = text.replace(CJK, ' ').match(WORD)?.length ?? 0;
  if (cjk + other === 0) return { cjk: 0.5, other: 0.5 };
  return { cjk: cjk / (cjk + other), other: other / (cjk + other) };
}

// Han (incl. extension A and compatibility ideographs), kana, Hangul.
const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/gu;
// A run of letters of any other script; digits alone (years, versions) carry no language and are not counted.
const WORD = /\p{L}[\p{L}\p{M}\p{N}'’-]*/gu;
