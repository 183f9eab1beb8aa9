import { countTokens, forEachTokenUnit } from './tokens';

/** A trimmed, non-empty range `[start, end)` of a text with its token count. */
export interface Span {
  start: number;
  end: number;
  tokens: number;
}

/*
 * Boundary levels, coarsest first. Each level's pattern also cuts at every coarser boundary, so a piece
 * found at level L holds no boundary of any level <= L. Capture group 1 is the punctuation that stays
 * with the piece before the cut; the rest of a match (whitespace) belongs to neither piece.
 *
 * 0 paragraph  blank line
 * 1 line       newline
 * 2 sentence   `. ! ? …` followed by whitespace (so 3.5 and e.g.x stay whole), or `。！？；` (Chinese
 *              needs no space after them), with closing quotes/brackets kept on the sentence
 * 3 clause     `, ; :` followed by whitespace, or `，；、：`
 * 4 word       whitespace, plus the CJK punctuation again (CJK text has no spaces to fall back on)
 * then token units (see `splitToFit`).
 */
const CLOSERS = `["'”’」』）》)\\]]*`;
const SENTENCE = `([.!?…]+${CLOSERS})\\s+|([。！？；]+${CLOSERS})\\s*`;
const CLAUSE = `([,;:]+)\\s+|([，；、：]+${CLOSERS})\\s*`;
const LEVELS: readonly RegExp[] = [
  /\n[^\S\n]*\n\s*/g,
  /\s*\n\s*/g,
  new RegExp(`\\s*\\n\\s*|${SENTENCE}`, 'g'),
  new RegExp(`\\s*\\n\\s*|${SENTENCE}|${CLAUSE}`, 'g'),
  new RegExp(`([。！？；，、：]+${CLOSERS})\\s*|\\s+`, 'g'),
];
export const WORD_LEVEL = LEVELS.length - 1;

const WS = /\s/;

/** Trims whitespace off `[start, end)`; `null` when nothing is left. */
function trimRange(text: string, start: number, end: number): [number, number] | null {
  let s = start;
  let e = end;
  while (s < e && WS.test(text[s]!)) s++;
  while (e > s && WS.test(text[e - 1]!)) e--;
  return s < e ? [s, e] : null;
}

/** The trimmed, non-empty pieces of `[start, end)` cut at the boundaries of `level` (and coarser). */
export function piecesAt(text: string, start: number, end: number, level: number): Array<[number, number]> {
  const re = LEVELS[level]!;
  const sub = text.slice(start, end);
  const out: Array<[number, number]> = [];
  let from = 0;
  for (const m of sub.matchAll(re)) {
    const keep = (m[1] ?? m[2] ?? m[3] ?? m[4] ?? '').length;
    const r = trimRange(text, start + from, start + m.index + keep);
    if (r) out.push(r);
    from = m.index + m[0].length;
  }
  const last = trimRange(text, start + from, end);
  if (last) out.push(last);
  return out;
}

/**
 * Recursive boundary-aware split of `[start, end)` into spans of at most `limit` tokens each: a range
 * that fits is kept whole; otherwise it is cut at the coarsest level that has a boundary inside it and
 * each piece is handled the same way with the finer levels; text without any boundary (a very long
 * word, CJK without punctuation) is cut between token units (see `forEachTokenUnit`) as a last resort. The spans are in text
 * order, cover all non-whitespace text, and only a single code point can exceed `limit`.
 */
export function splitToFit(text: string, start: number, end: number, limit: number, level = 0): Span[] {
  const r = trimRange(text, start, end);
  if (!r) return [];
  const [s, e] = r;
  const tokens = countTokens(text.slice(s, e));
  if (tokens <= limit) return [{ start: s, end: e, tokens }];
  for (let l = level; l < LEVELS.length; l++) {
    const pieces = piecesAt(text, s, e, l);
    if (pieces.length > 1) return pieces.flatMap(([ps, pe]) => splitToFit(text, ps, pe, limit, l + 1));
  }
  return splitUnbroken(text, s, e, limit);
}

/**
 * Cut of text with no boundary (CJK without punctuation, a long unbroken string) in one pass over its
 * token units: each piece takes units while their tokens fit `limit`. A piece that still counts more
 * than `limit` once assembled (only when a unit alone exceeds it) is cut by binary search.
 */
function splitUnbroken(text: string, start: number, end: number, limit: number): Span[] {
  const out: Span[] = [];
  let from = start;
  let to = start;
  let used = 0;
  const emit = (): void => {
    const r = trimRange(text, from, to);
    if (!r) return;
    const tokens = countTokens(text.slice(r[0], r[1]));
    if (tokens <= limit) out.push({ start: r[0], end: r[1], tokens });
    else out.push(...splitCodePoints(text, r[0], r[1], limit));
  };
  forEachTokenUnit(text.slice(start, end), (s, e, t) => {
    if (used + t > limit && to > from) {
      emit();
      from = start + s;
      used = 0;
    }
    used += t;
    to = start + e;
  });
  emit();
  return out;
}

/** Greedy cut between code points: each piece is the longest prefix of the rest that fits `limit`. */
function splitCodePoints(text: string, start: number, end: number, limit: number): Span[] {
  const out: Span[] = [];
  let s = start;
  while (s < end) {
    // Binary search for the longest prefix that fits (a shorter prefix never has more tokens).
    let lo = nextCodePoint(text, s, end);
    let hi = end;
    let best = lo;
    let bestTokens = countTokens(text.slice(s, lo));
    while (lo <= hi) {
      const raw = Math.floor((lo + hi) / 2);
      const mid = alignCodePoint(text, raw, s, end);
      const t = countTokens(text.slice(s, mid));
      if (t <= limit) {
        if (mid > best) {
          best = mid;
          bestTokens = t;
        }
        lo = raw + 1;
      } else {
        hi = raw - 1;
      }
    }
    const r = trimRange(text, s, best);
    if (r) out.push({ start: r[0], end: r[1], tokens: r[0] === s && r[1] === best ? bestTokens : countTokens(text.slice(r[0], r[1])) });
    s = best;
  }
  return out;
}

function nextCodePoint(text: string, i: number, end: number): number {
  const c = text.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 2 <= end ? i + 2 : i + 1;
}

/** Moves `i` off the middle of a surrogate pair, staying within `(min, max]`. */
function alignCodePoint(text: string, i: number, min: number, max: number): number {
  const c = text.charCodeAt(i - 1);
  const at = c >= 0xd800 && c <= 0xdbff ? i + 1 : i;
  return Math.min(Math.max(at, min + 1), max);
}

/**
 * The overlap taken from the tail of `[start, end)`: the longest run of trailing pieces, at the coarsest
 * boundary level where at least the last piece fits, whose tokens stay within `budget` (whole
 * paragraphs/lines/sentences first, then clauses, then words; never a cut between characters).
 * `null` when not even the last word fits.
 */
export function tailWithin(text: string, start: number, end: number, budget: number): Span | null {
  if (budget <= 0) return null;
  let s = start;
  for (let level = 0; level < LEVELS.length; level++) {
    const pieces = piecesAt(text, s, end, level);
    let used = 0;
    let first = -1;
    for (let i = pieces.length - 1; i >= 0; i--) {
      const [ps, pe] = pieces[i]!;
      const t = countTokens(text.slice(ps, pe));
      if (used + t > budget) break;
      used += t;
      first = i;
    }
    if (first >= 0) {
      const from = pieces[first]![0];
      const to = pieces[pieces.length - 1]![1];
      return { start: from, end: to, tokens: countTokens(text.slice(from, to)) };
    }
    const lastPiece = pieces[pieces.length - 1];
    if (!lastPiece) return null;
    s = lastPiece[0];
  }
  return null;
}
