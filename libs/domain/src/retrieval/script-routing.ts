import { isAscii } from '../text/tokenize';

/**
 * How much of a text is written in a CJK script versus a Latin (or other alphabetic) one, for routing a query to
 * the embedding model of its language. Each CJK character counts as one unit (a Chinese word is 1–3 of them, and
 * a character carries about a word's meaning) and each run of letters/digits of another script as one word.
 *
 * Returns weights that sum to 1: `cjk` for the CJK-language model, `other` for the other one. A text with
 * neither (empty, punctuation only) gets 0.5/0.5, so both models are asked.
 */
export function scriptWeights(text: string): { cjk: number; other: number } {
  // ASCII text (most English sources): no CJK unit, so the weights only depend on whether it has a letter — the same
  // result without the two Unicode-property scans (≈ 50 µs for a 4 KB parent text, ≈ 5 µs this way; the query path
  // asks this of every result text, languageShare).
  if (isAscii(text)) return ASCII_LETTER.test(text) ? { cjk: 0, other: 1 } : { cjk: 0.5, other: 0.5 };
  const cjk = text.match(CJK)?.length ?? 0;
  const other = text.replace(CJK, ' ').match(WORD)?.length ?? 0;
  if (cjk + other === 0) return { cjk: 0.5, other: 0.5 };
  return { cjk: cjk / (cjk + other), other: other / (cjk + other) };
}

const ASCII_LETTER = /[A-Za-z]/;
// Han (incl. extension A and compatibility ideographs), kana, Hangul.
const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/gu;
// A run of letters of any other script; digits alone (years, versions) carry no language and are not counted.
const WORD = /\p{L}[\p{L}\p{M}\p{N}'’-]*/gu;

/**
 * The script weights a passage is embedded with: scriptWeights with a minor share below `minShare` dropped, so a
 * Chinese passage quoting one English product name counts as Chinese only. `minShare` in [0, 0.5).
 */
export function passageScriptWeights(text: string, minShare: number): { cjk: number; other: number } {
  const w = scriptWeights(text);
  if (w.cjk < minShare) return { cjk: 0, other: 1 };
  if (w.other < minShare) return { cjk: 1, other: 0 };
  return w;
}

/** How the multilingual leg of a cross-lingual embedding is weighted for a query (CrossLingualEmbedder). */
export interface CrossLingualWeights {
  /** Weight of the multilingual similarity against passages in the query's own script (0: the pair alone ranks them). */
  same: number;
  /** Scale of the multilingual similarity against passages in the other script. */
  scale: number;
  /** Added to the score of a passage in the other script (in the same units), to put both on one scale. */
  shift: number;
}

/**
 * The query-side coefficients of a cross-lingual embedding, from the query's script weights `w`: the multilingual
 * leg's weight on the CJK-passage slot and on the other-passage slot, and the shift on each passage-script slot.
 * A passage stores its multilingual vector in the slot of its own script (weighted by its own script weights), so
 * for a pure-script query the score of a passage in the same script is `pair + same·multi` and of one in the other
 * script `scale·multi + shift`; a mixed query blends the two by its weights.
 */
export function crossLingualQueryCoefficients(
  w: { cjk: number; other: number },
  k: CrossLingualWeights,
): { multiCjk: number; multiOther: number; shiftCjk: number; shiftOther: number } {
  return {
    multiCjk: k.same * w.cjk + k.scale * w.other,
    multiOther: k.same * w.other + k.scale * w.cjk,
    shiftCjk: k.shift * w.other,
    shiftOther: k.shift * w.cjk,
  };
}
