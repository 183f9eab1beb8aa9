/** A sentence of a source text and where it starts in that text. */
export interface SourceSentence {
  text: string;
  /** Offset of the sentence's first character in the (NFC) source text. */
  start: number;
}

/** Words ending in "." that rarely end a sentence (compared lower-cased, without the final dot). */
const ABBREVIATIONS = new Set(
  (
    'e.g i.e etc vs cf al fig figs eq eqs ref refs no nos vol pp approx ca resp sec ch dr mr mrs ms prof st jr sr ' +
    'inc ltd co corp dept univ jan feb mar apr jun jul aug sep sept oct nov dec mt ft gen col lt sgt capt'
  ).split(' '),
);

/** Chinese sentence terminators: always a boundary. */
const CJK_TERMINATOR = /[。！？；]/u;
/** Closing quotes and brackets that stay with the sentence they close. */
const CLOSERS = /["'’”」』）)\]】》]/u;
const CJK_CHAR = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u3040-\u30ff\uac00-\ud7af]/u;

/**
 * Splits text into sentences, for English and Chinese alike:
 * - a line break always ends a sentence (headings, list items, table rows);
 * - 。！？； end a sentence, with any closing quote or bracket that follows;
 * - . ! ? (runs such as "?!" or "...") end a sentence only when followed by whitespace, the end of
 *   the text or a CJK character, so decimals ("3.5"), versions ("v1.2") and domains never split;
 * - a single "." does not end a sentence after a known abbreviation ("e.g.", "Fig.", "Dr."), a dotted
 *   acronym ("U.S."), a single capital initial ("J. Smith"), a list number at the start of a sentence
 *   ("1. Introduction"), or when it directly follows a word and the next word starts lower-case
 *   ("approx. the").
 */
export function splitSentences(text: string): SourceSentence[] {
  const out: SourceSentence[] = [];
  let start = 0;
  const push = (end: number) => {
    const raw = text.slice(start, end);
    const lead = raw.length - raw.trimStart().length;
    const trimmed = raw.trim();
    if (trimmed) out.push({ text: trimmed, start: start + lead });
    start = end;
  };
  const n = text.length;
  let i = 0;
  while (i < n) {
    const ch = text[i]!;
    if (ch === '\n' || ch === '\r') {
      push(i);
      i++;
      continue;
    }
    if (CJK_TERMINATOR.test(ch)) {
      let j = i + 1;
      while (j < n && (CJK_TERMINATOR.test(text[j]!) || CLOSERS.test(text[j]!))) j++;
      push(j);
      i = j;
      continue;
    }
    if (ch === '.' || ch === '!' || ch === '?') {
      let j = i + 1;
      while (j < n && /[.!?]/.test(text[j]!)) j++;
      while (j < n && CLOSERS.test(text[j]!)) j++;
      const next = j < n ? text[j]! : '';
      const boundary = next === '' || /\s/u.test(next) || CJK_CHAR.test(next);
      if (boundary && !(j === i + 1 && ch === '.' && isNonFinalPeriod(text, start, i, j))) {
        push(j);
      }
      i = j;
      continue;
    }
    i++;
  }
  push(n);
  return out;
}

/** Decides whether the single "." at `dot` (sentence started at `start`, run ends at `end`) is not a sentence end. */
function isNonFinalPeriod(text: string, start: number, dot: number, end: number): boolean {
  let w = dot;
  while (w > start && /[\p{Script=Latin}\p{N}.]/u.test(text[w - 1]!)) w--;
  const word = text.slice(w, dot);
  if (!word) return false; // " ." as in "slipstream . the results": a real end
  const lower = word.toLowerCase();
  if (ABBREVIATIONS.has(lower)) return true;
  if (/^\p{L}(\.\p{L})+$/u.test(word)) return true; // U.S, e.g, i.e
  if (/^\p{Lu}$/u.test(word)) return true; // initial
  if (/^\d{1,2}$/.test(word) && text.slice(start, w).trim() === '') return true; // "1. Introduction"
  const after = /\S/u.exec(text.slice(end));
  if (after && /\p{Ll}/u.test(after[0]) && /\p{L}/u.test(text[dot - 1]!)) return true;
  return false;
}
