/**
 * Cheap query normalisation applied before embedding and keyword search (and shown to the LLM):
 * - Unicode NFKC (full-width ＡＢＣ１２３ and ？ become ASCII, ligatures are split),
 * - control and invisible format characters removed (zero-width spaces, BOM, bidi marks); tabs and
 *   newlines count as whitespace,
 * - whitespace runs collapsed to one space, ends trimmed,
 * - trailing punctuation noise trimmed: a run of sentence punctuation at the end ("???", "?!", "...",
 *   "。。", ",") becomes a single question mark when it held one, and is dropped otherwise. Symbols
 *   that may carry meaning ("C#", "C++", quotes, closing brackets, "%") are kept.
 * Case is kept: the tokenizer lower-cases for search, and the LLM may need it.
 */
export function normalizeQuery(q: string): string {
  let s = q.normalize('NFKC');
  // Line/paragraph separators and other Unicode whitespace become spaces; then drop control (Cc),
  // format (Cf: zero-width, bidi, BOM) and unassigned/private-use characters.
  s = s.replace(/[\s\u2028\u2029]+/gu, ' ');
  s = s.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Cn}]/gu, '');
  s = s.replace(/ {2,}/g, ' ').trim();
  const tail = /[\s.,;:!?、。，；：！？…~～·]+$/u.exec(s);
  if (tail) {
    const hadQuestion = /[?？]/u.test(tail[0]);
    s = s.slice(0, tail.index).trimEnd();
    if (hadQuestion && s.length > 0) s += '?';
  }
  return s;
}
