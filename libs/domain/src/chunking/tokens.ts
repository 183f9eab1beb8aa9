import { getEncoding, type Tiktoken } from 'js-tiktoken';

/**
 * Token counting for chunk sizes, with the `cl100k_base` vocabulary (js-tiktoken, pure JS, ranks bundled).
 *
 * Why not simply `encoding.encode(text).length`: js-tiktoken's byte-pair merge is quadratic per
 * pre-token and builds a string key for every candidate pair. On English that costs ~0.4 µs/char
 * (1.4 MB ≈ 560 ms per pass, and chunking needs 2–3 passes); on Chinese, where a whole clause between
 * two punctuation marks is a single pre-token, it costs ~23 µs/char (300 k characters ≈ 7 s).
 *
 * What we do instead, with the same vocabulary:
 * - split the text with cl100k's own pre-tokenizer regex (tiktoken encodes every pre-token on its own,
 *   so the sum over pre-tokens is exactly the length of `encode(text)`), and memoise the count of each
 *   distinct pre-token. Latin text repeats its words, so almost every pre-token is a cache hit: exact
 *   counts at ~20–40 ms per MB.
 * - inside a pre-token, CJK characters are counted one by one (also memoised) and the non-CJK runs
 *   between them as a whole. This is an upper bound of the exact count, because BPE merges across
 *   neighbouring Han characters can only save tokens: measured +0.1 % on random common characters and
 *   +3…8 % on real Chinese prose, i.e. Chinese chunks come out a little smaller than the target,
 *   never larger, at ~0.2 µs/char.
 * - a pathological pre-token longer than {@link LONG_PIECE} characters (a run of letters with no
 *   break) is counted in slices, again an upper bound, so no input can make counting quadratic.
 *
 * The encoding itself (~250 ms to build its rank tables) is created lazily, once per process.
 * cl100k is a proxy: the embedder's own tokenizer (WordPiece/SentencePiece) differs by some percent,
 * which the chunk size defaults leave room for.
 */

/** cl100k_base pre-tokenizer (the `(?i:'s|...)` contraction group spelled out, as JS lacks inline flags). */
const PRE_TOKEN =
  /'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+/gu;

/** Han, kana, hangul: scripts without spaces whose runs are counted per character. */
const CJK_CHAR = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/;
const CJK_RUNS = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]|[^\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]+/gu;

const LONG_PIECE = 64;
const CACHE_LIMIT = 100_000;

let encoding: Tiktoken | undefined;
const cache = new Map<string, number>();

function encoder(): Tiktoken {
  encoding ??= getEncoding('cl100k_base');
  return encoding;
}

/** Exact cl100k count of one pre-token (special-token text such as `<|endoftext|>` is plain text here). */
function countPiece(piece: string): number {
  const hit = cache.get(piece);
  if (hit !== undefined) return hit;
  const n = encoder().encode(piece, [], []).length;
  // A bounded memo: a long-running chunker sees an open vocabulary (ids, numbers, misspellings).
  if (cache.size >= CACHE_LIMIT) cache.clear();
  cache.set(piece, n);
  return n;
}

function countPreToken(piece: string): number {
  if (piece.length <= 2) return countPiece(piece);
  if (CJK_CHAR.test(piece)) {
    let n = 0;
    for (const m of piece.matchAll(CJK_RUNS)) n += m[0].length > LONG_PIECE ? countLong(m[0]) : countPiece(m[0]);
    return n;
  }
  return piece.length > LONG_PIECE ? countLong(piece) : countPiece(piece);
}

function countLong(piece: string): number {
  const chars = Array.from(piece);
  let n = 0;
  for (let i = 0; i < chars.length; i += LONG_PIECE) n += countPiece(chars.slice(i, i + LONG_PIECE).join(''));
  return n;
}

/** Number of `cl100k_base` tokens of `text` (exact for non-CJK text, a tight upper bound for CJK). */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  for (const m of text.matchAll(PRE_TOKEN)) n += countPreToken(m[0]);
  return n;
}
