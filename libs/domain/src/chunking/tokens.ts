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
 *   between them as a whole. In practice this is a slight over-count, since what it leaves out are
 *   merges across neighbouring Han characters, which save tokens: measured +0.1 % on random common
 *   characters and +3…8 % on real Chinese prose, so Chinese chunks come out a little smaller than
 *   the target rather than larger, at ~0.2 µs/char.
 * - a pre-token longer than {@link LONG_PIECE} characters (a run of letters with no break, base64)
 *   is counted in slices of that length: within a few tokens of the exact count, and no input can make
 *   counting quadratic.
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

/**
 * Calls `visit(start, end, tokens)` for each counting unit of `text` in order: a pre-token, or inside
 * one a CJK character, a run of non-CJK characters, or a slice of a long run. The units' tokens sum to
 * `countTokens(text)`, and cutting a text between units keeps each side's count (used to cut text that
 * has no boundary at all in one linear pass).
 */
export function forEachTokenUnit(text: string, visit: (start: number, end: number, tokens: number) => void): void {
  for (const m of text.matchAll(PRE_TOKEN)) {
    const piece = m[0];
    if (piece.length > 2 && CJK_CHAR.test(piece)) {
      for (const r of piece.matchAll(CJK_RUNS)) visitRun(r[0], m.index + r.index, visit);
    } else {
      visitRun(piece, m.index, visit);
    }
  }
}

function visitRun(run: string, at: number, visit: (start: number, end: number, tokens: number) => void): void {
  if (run.length <= LONG_PIECE) {
    visit(at, at + run.length, countPiece(run));
    return;
  }
  for (let i = 0; i < run.length; ) {
    let j = Math.min(run.length, i + LONG_PIECE);
    const c = run.charCodeAt(j - 1);
    if (j < run.length && c >= 0xd800 && c <= 0xdbff) j++; // keep a surrogate pair together
    visit(at + i, at + j, countPiece(run.slice(i, j)));
    i = j;
  }
}

/**
 * Number of `cl100k_base` tokens of `text`: exact for non-CJK text (bar words over 64 characters), a
 * slight over-count for CJK (see above).
 */
export function countTokens(text: string): number {
  if (text.length === 0) return 0;
  let n = 0;
  forEachTokenUnit(text, (_s, _e, t) => {
    n += t;
  });
  return n;
}
