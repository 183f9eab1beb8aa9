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

const EN_FILLER = new Set(
  (
    'a an the of to in on at for by with from about into as is are was were be been being do does did done has have had ' +
    'what which who whom whose where when why how whether can could would should will shall may might must ' +
    'please tell me us i we you it its this that these those there their any some explain describe give show find ' +
    'and or if than then so such also just'
  ).split(' '),
);
/** Chinese question words and particles (longest first) that carry no search content. */
const ZH_FILLER = ['请问', '为什么', '是什么', '什么样', '怎么样', '怎样', '怎么', '如何', '哪些', '哪个', '哪里', '多少', '什么', '是否', '能否', '可以', '一下', '吗', '呢', '吧', '啊'];

/**
 * The non-LLM rewrite of the corrective retry (CRAG, issue 16 item 4) when no LLM is configured: the question
 * normalised, then reduced to its content words — interrogatives, auxiliaries, articles and politeness dropped
 * ("What is the effect of sweep on wings?" → "effect sweep wings"; "边界层是什么？" → "边界层"), punctuation
 * removed. Search terms the question shares with a passage are kept, so BM25 and the embedding see the topic
 * without question noise. Returns the normalised question when nothing would be left.
 */
export function keywordQuery(q: string): string {
  const n = normalizeQuery(q);
  let s = n;
  for (const w of ZH_FILLER) s = s.split(w).join(' ');
  const words = s
    .replace(/[^\p{L}\p{N}\s#+.'-]/gu, ' ')
    .split(/\s+/)
    .map((w) => w.replace(/^[.'-]+|[.'-]+$/g, ''))
    .filter((w) => w && !EN_FILLER.has(w.toLowerCase()));
  const out = words.join(' ').trim();
  return out || n;
}
