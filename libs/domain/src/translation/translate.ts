import { scriptWeights } from '../retrieval/script-routing';
import { CHINESE_STOP_WORDS, ENGLISH_STOP_WORDS, stem } from '../text/tokenize';
import { type BilingualDictionary, englishKey } from './dictionary';

const HAN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]/u;
const HAN_RUN = /[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+/gu;

/**
 * Question words and fillers of Chinese questions: they say what is asked, not what about, so they are not
 * translated (their glosses — "what", "whether", "can", "research" — would match every English document).
 * The last line (2026-12-05): function words whose first gloss is noise — the time clause 时 ("o'clock"), directional
 * complements 起来/下来/出来 ("stand up"), the classifier 种 ("seed"), 一 ("one"), the nominal suffix 性 ("nature") and
 * the segmentation artefact 中的 ("hit the target"). Found by reading the translations of cranfield-zh questions and
 * chosen by word class, not per question; there is no second Chinese→English set here to check them on (README).
 */
const CHINESE_QUESTION_WORDS = new Set(
  (
    '什么 哪些 哪个 哪种 哪里 哪儿 多少 几 谁 怎么 怎样 怎么样 如何 为什么 为何 是否 能否 能不能 可否 有没有 是不是 ' +
    '有 有哪些 可以 能 能够 会 应该 必须 需要 关于 对于 一些 已经 得到 进行 什么样 所 之间 以及 并 等 这种 这个 那个 其 ' +
    '呢 吗 吧 的 地 得 了 着 过 被 把 给 对 从 向 在 由 与 和 及 或 或者 还是 又 也 都 就 才 而 但 却 即 且 则 ' +
    '时 时候 起来 下来 出来 中的 得了 一 一种 种 些 既 所得 性 '
  ).split(/\s+/).filter(Boolean),
);

/** English words of questions that would translate into noise (question words and generic verbs). */
const ENGLISH_QUESTION_WORDS = new Set('what which who whom whose when where why how does do did is are was were much many kind type way there count'.split(' '));

/**
 * Segments a run of Han characters into dictionary words by maximum matching in both directions (forward and
 * backward), keeping the segmentation with fewer words, then fewer single characters (backward on a tie: it is
 * the better of the two for Chinese, Sun & Zou 2001). Characters no headword covers stand alone.
 */
export function segmentHan(run: string, dict: BilingualDictionary): string[] {
  const chars = [...run];
  const max = dict.maxWordLength;
  const forward: string[] = [];
  for (let i = 0; i < chars.length; ) {
    let len = Math.min(max, chars.length - i);
    while (len > 1 && !dict.has(chars.slice(i, i + len).join(''))) len--;
    forward.push(chars.slice(i, i + len).join(''));
    i += len;
  }
  const backward: string[] = [];
  for (let j = chars.length; j > 0; ) {
    let len = Math.min(max, j);
    while (len > 1 && !dict.has(chars.slice(j - len, j).join(''))) len--;
    backward.unshift(chars.slice(j - len, j).join(''));
    j -= len;
  }
  const singles = (s: string[]) => s.filter((w) => [...w].length === 1).length;
  if (forward.length !== backward.length) return forward.length < backward.length ? forward : backward;
  return singles(forward) < singles(backward) ? forward : backward;
}

/** The words of a Chinese text: Han runs segmented by the dictionary, Latin/digit runs kept as they are. */
export function segmentChinese(text: string, dict: BilingualDictionary): string[] {
  const out: string[] = [];
  const parts = text.normalize('NFKC').split(/([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+)/u);
  for (const part of parts) {
    if (!part) continue;
    if (HAN.test(part)) out.push(...segmentHan(part, dict));
    else for (const w of part.match(/[\p{L}\p{N}][\p{L}\p{N}.+-]*/gu) ?? []) out.push(w);
  }
  return out;
}

/**
 * Translations of one word the relevance gate accepts as that word found in a source (the searches use the first
 * few only): a dictionary lists synonyms in no order of use (period: 周期, 时期, 时代 …), and a source uses one of them.
 */
const EVIDENCE_ALTERNATIVES = 8;

/** Words of the longest gloss a Chinese word is translated by while it has one that short (see translateZhToEn). */
const MAX_EQUIVALENT_WORDS = 2;

export interface TranslationOptions {
  /** Translations kept per multi-character Chinese word (default 3). */
  sensesPerWord?: number;
  /** Translations kept per single-character Chinese word (default 1: single characters are ambiguous). */
  sensesPerChar?: number;
  /** Chinese words kept per English word or phrase (default 2). */
  wordsPerTerm?: number;
}

/** A query translated for the other script's documents. */
export interface QueryTranslation {
  /** The language translated into. */
  target: 'en' | 'zh';
  /**
   * The translated query: keywords in the target language, in question order, every alternative kept — for keyword
   * and dense search alike (embedding the first alternatives only was worse: cranfield-zh dense nDCG@10 0.220 vs 0.232).
   */
  text: string;
  /**
   * Source words (or phrases) and what each became; untranslated ones are absent. `alternatives`: more of the word's
   * dictionary translations (the first `target`s first), which the relevance gate accepts as the word found
   * (translationForEvidence); the searches use `target` only.
   */
  terms: { source: string; target: string[]; alternatives?: string[] }[];
}

/** The searched text of a translation: every term's translations in order, each once. */
function queryText(terms: QueryTranslation['terms']): string {
  return [...new Set(terms.flatMap((t) => t.target))].join(' ');
}

/** Most times one translation is repeated in balancedKeywordQuery (the least common multiple of 1–3 translations per word). */
const BALANCE_RESOLUTION = 6;

/**
 * The translation as the keyword index searches it, **balanced**: every source word weighs the same however many
 * translations it has. The index weighs a repeated query word by its count (BM25's query term frequency; OpenSearch's
 * match query sums its repeated clauses the same way), so each of a word's n translations is written R/n times, R the
 * least common multiple of the words' counts (at most BALANCE_RESOLUTION; rounded above it). In the flat query a word
 * with three senses ("ferment bubble away simmer") outweighed a word with one three to one, so the question's
 * ambiguous words decided the ranking. Balanced query translation (each translation weighted 1/n) is the standard
 * remedy of dictionary-based cross-language retrieval; measured in the README (Cross-lingual). The dense search
 * embeds `text` (the flat list): repeating words would only distort an embedding.
 */
export function balancedKeywordQuery(t: QueryTranslation): string {
  const counts = t.terms.map((term) => term.target.length).filter((n) => n > 0);
  const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));
  let r = counts.reduce((l, n) => (l * n) / gcd(l, n), 1);
  if (r > BALANCE_RESOLUTION) r = BALANCE_RESOLUTION;
  const out: string[] = [];
  for (const term of t.terms) {
    const times = Math.max(1, Math.round(r / term.target.length));
    for (const g of term.target) for (let i = 0; i < times; i++) out.push(g);
  }
  return out.join(' ');
}

/**
 * Chinese question → English keyword query: segmented by the dictionary, question words and stop words dropped,
 * each word replaced by its first few cleaned translations (all of them kept in order: the keyword index scores
 * each, the English embedding model reads them as a phrase list). Latin words and numbers pass through.
 */
export function translateZhToEn(question: string, dict: BilingualDictionary, opts: TranslationOptions = {}): QueryTranslation | undefined {
  const perWord = opts.sensesPerWord ?? 3;
  const perChar = opts.sensesPerChar ?? 1;
  const terms: QueryTranslation['terms'] = [];
  for (const w of segmentChinese(question, dict)) {
    if (!HAN.test(w)) {
      terms.push({ source: w, target: [w] });
      continue;
    }
    if (CHINESE_QUESTION_WORDS.has(w) || CHINESE_STOP_WORDS.has(w)) continue;
    const glosses = dict.english(w);
    if (!glosses) continue;
    // Equivalents before explanations: a gloss of one or two words ("ultrasonic", "heat transfer") is a translation, a
    // longer one ("look for and obtain", "take notice of", "at the present time") describes the word in words a document
    // would not use together; the longer ones are used only when a word has nothing shorter (measured in the README).
    const usable = glosses.filter((g) => englishKey(g) !== '');
    const short = usable.filter((g) => g.split(' ').length <= MAX_EQUIVALENT_WORDS);
    const pool = short.length ? short : usable;
    const keep = pool.slice(0, [...w].length === 1 ? perChar : perWord);
    const alternatives = pool.slice(0, EVIDENCE_ALTERNATIVES);
    if (keep.length) terms.push({ source: w, target: keep, alternatives });
  }
  if (terms.length === 0) return undefined;
  return { target: 'en', text: queryText(terms), terms };
}

/**
 * English question → Chinese keyword query: the question's content words (stemmed like the keyword index) matched
 * against the dictionary's inverted index, longest phrase first ("boundary layer" before "layer"), each replaced by
 * its best Chinese headwords. Words the dictionary lacks (names) pass through unchanged.
 */
export function translateEnToZh(question: string, dict: BilingualDictionary, opts: TranslationOptions = {}): QueryTranslation | undefined {
  const perTerm = opts.wordsPerTerm ?? 2;
  const raw = (question.normalize('NFKC').toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => !ENGLISH_STOP_WORDS.has(w));
  const words = raw.filter((w) => !ENGLISH_QUESTION_WORDS.has(w));
  const terms: QueryTranslation['terms'] = [];
  for (let i = 0; i < words.length; ) {
    let matched = false;
    for (let n = Math.min(dict.maxPhraseWords, words.length - i); n >= 1; n--) {
      const phrase = words.slice(i, i + n);
      const hits = dict.chinese(phrase.map(stem).join(' '));
      if (!hits?.length) continue;
      const target = hits.slice(0, perTerm).map((h) => h.word);
      const more = hits.filter((h) => [...h.word].length > 1 && !target.includes(h.word)).map((h) => h.word);
      terms.push({ source: phrase.join(' '), target, alternatives: [...target, ...more].slice(0, EVIDENCE_ALTERNATIVES) });
      i += n;
      matched = true;
      break;
    }
    if (!matched) {
      // Not in the dictionary: a name or a term kept as written (Chinese text often quotes Latin names).
      if (/\p{L}/u.test(words[i]!) && words[i]!.length > 2) terms.push({ source: words[i]!, target: [words[i]!] });
      i += 1;
    }
  }
  if (!terms.some((t) => t.target.some((x) => HAN.test(x)))) return undefined;
  return { target: 'zh', text: queryText(terms), terms };
}

/**
 * Translates a question into the other script (script routing): a question mostly in Chinese characters into
 * English, any other into Chinese. Undefined when nothing translates. A question mixing both scripts evenly is
 * translated by its larger share.
 */
export function translateQuery(question: string, dict: BilingualDictionary, opts: TranslationOptions = {}): QueryTranslation | undefined {
  const han = question.match(HAN_RUN)?.join('').length ?? 0;
  if (han === 0 && !/\p{L}/u.test(question)) return undefined;
  const w = scriptWeights(question);
  return w.cjk >= 0.5 ? translateZhToEn(question, dict, opts) : translateEnToZh(question, dict, opts);
}

export type Language = QueryTranslation['target'];

/** The language of a text by its script: Chinese when at least half of it is CJK (scriptWeights), else English. */
export function scriptLanguage(text: string): Language {
  return scriptWeights(text).cjk >= 0.5 ? 'zh' : 'en';
}

/** Share of `texts` written mostly in `lang`'s script, in [0, 1]; 0 for no texts. */
export function languageShare(texts: readonly string[], lang: Language): number {
  if (texts.length === 0) return 0;
  return texts.filter((t) => scriptLanguage(t) === lang).length / texts.length;
}

/**
 * The translation with each word's translations narrowed to those `texts` (what the translation retrieved) use:
 * per source word, its alternatives found in the texts (at most as many as it had), else its translations as they
 * were. A dictionary lists a word's senses in no order of use (period: 周期 "cycle", 时期 "era"); the documents the
 * first translation found tell which one this corpus writes. Undefined when nothing changes.
 */
export function refineTranslation(t: QueryTranslation, texts: readonly string[]): QueryTranslation | undefined {
  const contains = containsIn(t.target, texts);
  let changed = false;
  const terms = t.terms.map((term) => {
    const found = (term.alternatives ?? term.target).filter(contains);
    if (found.length === 0) return term;
    const target = found.slice(0, Math.max(1, term.target.length));
    if (target.join('\u0000') !== term.target.join('\u0000')) changed = true;
    return { ...term, target };
  });
  if (!changed) return undefined;
  return { target: t.target, text: queryText(terms), terms };
}

/** Whether an alternative (a translation) occurs in `texts`: as a substring in Chinese; in English, every content word of it, stemmed as the keyword index stems. */
function containsIn(target: Language, texts: readonly string[]): (alt: string) => boolean {
  if (target === 'zh') {
    const joined = texts.join('\n').toLowerCase();
    return (alt: string) => joined.includes(alt);
  }
  const words = new Set(texts.flatMap((x) => englishKey(x).split(' ')));
  return (alt: string) => {
    const key = englishKey(alt);
    return key !== '' && key.split(' ').every((w) => words.has(w));
  };
}

/**
 * The translation as the relevance gate reads it against `texts` (the retrieved sources): for each source term, the
 * first of its alternatives that a text contains, else its first alternative. The alternatives are one word's
 * translations, so one of them found counts as the word covered; all of them in the gate's question would count the
 * others as missing words, and a correct cross-lingual hit would read as weak evidence.
 */
export function translationForEvidence(t: QueryTranslation, texts: readonly string[]): string {
  const contains = containsIn(t.target, texts);
  const out: string[] = [];
  for (const term of t.terms) {
    const found = (term.alternatives ?? term.target).find(contains);
    // A word the dictionary could not translate into Chinese (a name: Chatuchak, Pennetta) is written in characters
    // in a Chinese text (乍都节, 佩内塔), so its absence from Chinese sources says nothing: it is left out of the
    // gate's question unless a source has it as written.
    if (!found && t.target === 'zh' && !term.target.some((x) => HAN.test(x))) continue;
    const pick = found ?? term.target[0];
    if (pick && !out.includes(pick)) out.push(pick);
  }
  return out.join(' ');
}
