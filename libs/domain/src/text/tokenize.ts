/**
 * Search tokenization shared by the embedded BM25 index and the pre-segmented field of the
 * Elasticsearch/OpenSearch adapters, so Chinese behaves the same in both modes.
 *
 * Chinese/Japanese runs are segmented into words with `Intl.Segmenter` (ICU dictionary segmentation,
 * built into Node); Latin text is lower-cased, split on non-letters, and lightly stemmed (plural/-ing/-ed)
 * so "wings" matches "wing". Common English stop words are dropped.
 */
const segmenter = new Intl.Segmenter('zh', { granularity: 'word' });

const CJK = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/;

export const ENGLISH_STOP_WORDS = new Set(
  (
    'a an and are as at be but by for if in into is it no not of on or such that the their then there these ' +
    'they this to was will with what which who whom how why when where do does did has have had been being ' +
    'can could should would may might must shall its from than so we you he she our your i me my us them ' +
    'were am any all also about above after again against between both each few more most other some ' +
    'only own same too very s t just don now'
  ).split(' '),
);

/** Chinese function words and punctuation-like particles that carry no retrieval signal. */
export const CHINESE_STOP_WORDS = new Set('的 了 是 在 和 与 及 或 也 都 而 就 被 把 对 这 那 之 其 有 为 以 于 中 上 下 个 吗 呢 吧 啊 么 什么 哪 哪些 多少 几 谁 怎么 如何 是否'.split(' '));

/** Light English stemmer (a subset of Porter step 1): enough to conflate plurals and -ing/-ed forms. */
export function stem(word: string): string {
  if (word.length <= 3) return word;
  let w = word;
  if (w.endsWith('sses')) w = w.slice(0, -2);
  else if (w.endsWith('ies')) w = w.slice(0, -3) + 'y';
  else if (w.endsWith('ss')) {
    /* keep */
  } else if (w.endsWith('s') && !w.endsWith('us') && !w.endsWith('is')) w = w.slice(0, -1);
  if (w.length > 5 && w.endsWith('ing')) w = w.slice(0, -3);
  else if (w.length > 4 && w.endsWith('ed')) w = w.slice(0, -2);
  return w;
}

export interface TokenizeOptions {
  /** Drop stop words (default true). */
  stopWords?: boolean;
  /** Apply the light stemmer to Latin words (default true). */
  stem?: boolean;
}

/**
 * Splits text into normalized search tokens.
 *
 * Pure-ASCII stretches skip the ICU segmenter, whose segment objects cost ≈ 20× a regular-expression split (678 vs 32
 * ms for the 1,400 Cranfield abstracts; it was the largest cost of the hashing embedder and of the keyword index's
 * writes). The result is the same token for token: on ASCII text NFKC changes nothing and lower-casing stays ASCII,
 * every word-like ICU segment is then split on non-alphanumerics, and ICU never breaks inside a run of ASCII letters and
 * digits (Unicode word-break rules WB5, WB8–WB10) nor joins characters across ASCII whitespace — so the tokens are the
 * alphanumeric runs. The text is cut at ASCII whitespace; ASCII pieces take the split, consecutive others go to ICU
 * together, in order. Checked against the ICU path on random mixed-script strings and on the evaluation corpora (spec).
 */
export function tokenize(text: string, opts: TokenizeOptions = {}): string[] {
  const useStop = opts.stopWords ?? true;
  const useStem = opts.stem ?? true;
  const out: string[] = [];
  if (isAscii(text)) {
    asciiTokens(text, useStop, useStem, out);
    return out;
  }
  if (!HAS_ASCII_PIECE.test(text)) {
    // No piece to take the fast path (most Chinese text): straight to ICU, without the cut (≈ 15 % of ICU's time).
    icuTokens(text, useStop, useStem, out);
    return out;
  }
  let pending: string[] = [];
  for (const piece of text.split(ASCII_SPACE)) {
    if (piece === '') continue;
    if (isAscii(piece)) {
      if (pending.length > 0) {
        icuTokens(pending.join(' '), useStop, useStem, out);
        pending = [];
      }
      asciiTokens(piece, useStop, useStem, out);
    } else pending.push(piece);
  }
  if (pending.length > 0) icuTokens(pending.join(' '), useStop, useStem, out);
  return out;
}

const ASCII = /^[\x00-\x7f]*$/;

/** Whether every character of `text` is ASCII (one native scan); the fast paths of tokenize and scriptWeights. */
export function isAscii(text: string): boolean {
  return ASCII.test(text);
}
const ASCII_SPACE = /[ \t\n\v\f\r]+/;
/** Some piece between ASCII whitespace is all ASCII (a native scan: ≈ 0.7 µs for a CMRC paragraph). */
const HAS_ASCII_PIECE = /(?:^|[ \t\n\v\f\r])[\x00-\x08\x0e-\x1f\x21-\x7f]+(?=[ \t\n\v\f\r]|$)/;
const NOT_ASCII_ALNUM = /[^a-z0-9]+/;

/** The tokens of ASCII text: its lower-cased alphanumeric runs (see tokenize). */
function asciiTokens(text: string, useStop: boolean, useStem: boolean, out: string[]): void {
  for (const part of text.toLowerCase().split(NOT_ASCII_ALNUM)) pushLatin(part, useStop, useStem, out);
}

/** One lower-cased alphanumeric run of either path: dropped if empty or a stop word, else stemmed as asked. */
function pushLatin(part: string, useStop: boolean, useStem: boolean, out: string[]): void {
  if (!part) return;
  if (useStop && ENGLISH_STOP_WORDS.has(part)) return;
  out.push(useStem ? stem(part) : part);
}

/** The tokens of any text through ICU word segmentation (Chinese/Japanese dictionary segmentation included). */
function icuTokens(text: string, useStop: boolean, useStem: boolean, out: string[]): void {
  for (const seg of segmenter.segment(text.normalize('NFKC'))) {
    if (!seg.isWordLike) continue;
    const raw = seg.segment.toLowerCase();
    if (CJK.test(raw)) {
      if (useStop && CHINESE_STOP_WORDS.has(raw)) continue;
      out.push(raw);
      continue;
    }
    // A Latin "word" from ICU may still hold punctuation such as "o'neil" or "3.5": split on non-alphanumerics.
    for (const part of raw.split(/[^\p{L}\p{N}]+/u)) pushLatin(part, useStop, useStem, out);
  }
}

/** The ICU path alone, for every text (the reference the ASCII fast path is checked against). */
export function tokenizeWithIcu(text: string, opts: TokenizeOptions = {}): string[] {
  const out: string[] = [];
  icuTokens(text, opts.stopWords ?? true, opts.stem ?? true, out);
  return out;
}

/** Tokens joined by spaces: the pre-segmented form stored in keyword indexes. */
export function segmentForIndex(text: string): string {
  return tokenize(text).join(' ');
}

export function containsCjk(text: string): boolean {
  return CJK.test(text);
}
