import { ENGLISH_STOP_WORDS, stem } from '../text/tokenize';

/**
 * A bilingual Chinese–English dictionary for query translation (the classic dictionary-based CLIR baseline), built
 * from CC-CEDICT entries: simplified and traditional headword, English senses in dictionary order.
 *
 * zh → en: each headword keeps its first few *cleaned* senses (cleanSense); en → zh: an inverted index from a
 * cleaned sense (stemmed content words, as the keyword index tokenizes them) to the headwords carrying exactly that
 * sense, best first (the sense's position in its entry, then two- to four-character words before single characters
 * and long idioms).
 */
export interface DictionaryEntry {
  simplified: string;
  traditional: string;
  /** English senses, as CC-CEDICT writes them ("to follow; to abide by", "board (CL:塊|块[kuai4])" …). */
  senses: readonly string[];
}

/** Senses that only point elsewhere or describe grammar: they translate nothing. */
const POINTER = /^(?:(?:old |archaic |euphemistic |erroneous |japanese |internet slang |ancient )?variant of|see |see also|used in|surname |cl:|classifier for|abbr\. (?:for|of|to)|(?:also )?(?:written|pr\.)|(?:taiwan|tw) pr\.|[a-z ]*particle\b|interjection|onom\.|radical )/i;

/**
 * One CC-CEDICT sense to the plain English words a document would use, or nothing when it translates nothing:
 * pointer senses ("variant of 是[shi4]", "see 老闆|老板", "surname Li", "CL:…", "abbr. for …") are dropped;
 * parentheses, brackets, Chinese characters, pinyin references, "lit."/"fig." and a leading "to "/"a "/"the " are
 * removed; a sense still longer than `maxWords` words (a definition, not a translation) is dropped.
 */
export function cleanSense(sense: string, maxWords = 4): string | undefined {
  let s = sense.trim();
  if (!s || POINTER.test(s)) return undefined;
  // Nested parentheses first, innermost out; then brackets (pinyin) and Chinese characters.
  for (let i = 0; i < 3 && /\([^()]*\)/.test(s); i++) s = s.replace(/\([^()]*\)/g, ' ');
  s = s
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/[\u3400-\u9fff\uf900-\ufaff|]+/gu, ' ')
    .replace(/^\s*(?:lit\.|fig\.|esp\.|sb's|sth)\s+/i, ' ')
    .replace(/\b(?:sb|sth|sb's|sth's|etc|e\.g\.|i\.e\.|lit\.|fig\.)/gi, ' ')
    .replace(/["“”'‘’]/g, '')
    .replace(/[,.:!?]+$/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(?:to be |to |a |an |the |one's |one )/i, '')
    .trim();
  if (!s || /[()]/.test(s)) return undefined;
  const words = s.split(' ');
  if (words.length > maxWords) return undefined;
  return s.toLowerCase();
}

/** A sense's cleaned translations: CC-CEDICT joins near-synonyms with ";" inside one sense ("similar; alike"). */
export function cleanSenses(senses: readonly string[], maxWords = 4): string[] {
  const out: string[] = [];
  for (const sense of senses) {
    if (POINTER.test(sense.trim())) continue;
    for (const part of sense.split(';')) {
      const c = cleanSense(part, maxWords);
      if (c && !out.includes(c)) out.push(c);
    }
  }
  return out;
}

/** The inverted index's key of an English phrase: its content words, stemmed as the keyword index does. */
export function englishKey(text: string): string {
  return (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])
    .filter((w) => !ENGLISH_STOP_WORDS.has(w))
    .map(stem)
    .join(' ');
}

/** Bumped whenever cleaning or ranking changes, so a cached snapshot of an older derivation is rebuilt. */
export const DICTIONARY_SNAPSHOT_VERSION = 1;

export interface DictionarySnapshot {
  version: number;
  maxWordLength: number;
  maxPhraseWords: number;
  /** Headword → translations joined by "|". */
  zhEn: Record<string, string>;
  /** English key → "word:rank word:rank …", best first. */
  enZh: Record<string, string>;
}

interface Reverse {
  word: string;
  rank: number;
}

/** A headword's length penalty in the reverse index: single characters and long idioms are the least specific. */
const lengthPenalty = (w: string): number => ([...w].length === 1 ? 1.5 : [...w].length > 4 ? 1 : 0);

export class BilingualDictionary {
  /** Headword (simplified and traditional) → cleaned English translations, dictionary order. */
  private readonly zhEn = new Map<string, string[]>();
  /** englishKey(translation) → Chinese headwords (simplified), best first. */
  private readonly enZh = new Map<string, Reverse[]>();
  /** Longest headword, in characters (bounds the longest-match segmentation). */
  readonly maxWordLength: number;
  /** Longest reverse-index key, in words. */
  readonly maxPhraseWords: number;

  /** A dictionary from `snapshot()`'s output (the derived tables, without re-cleaning every sense). */
  static fromSnapshot(s: DictionarySnapshot): BilingualDictionary {
    if (s.version !== DICTIONARY_SNAPSHOT_VERSION) throw new Error(`dictionary snapshot version ${s.version}, expected ${DICTIONARY_SNAPSHOT_VERSION}`);
    const d = new BilingualDictionary([]);
    for (const [head, g] of Object.entries(s.zhEn)) d.zhEn.set(head, g.split('|'));
    for (const [key, list] of Object.entries(s.enZh)) {
      d.enZh.set(
        key,
        list.split(' ').map((x) => {
          const at = x.lastIndexOf(':');
          return { word: x.slice(0, at), rank: Number(x.slice(at + 1)) };
        }),
      );
    }
    (d as { maxWordLength: number }).maxWordLength = s.maxWordLength;
    (d as { maxPhraseWords: number }).maxPhraseWords = s.maxPhraseWords;
    return d;
  }

  /** The derived tables as plain JSON (a cache of the constructor's work: loading it is a JSON.parse). */
  snapshot(): DictionarySnapshot {
    const zhEn: Record<string, string> = {};
    for (const [head, g] of this.zhEn) zhEn[head] = g.join('|');
    const enZh: Record<string, string> = {};
    for (const [key, list] of this.enZh) enZh[key] = list.map((r) => `${r.word}:${r.rank}`).join(' ');
    return { version: DICTIONARY_SNAPSHOT_VERSION, maxWordLength: this.maxWordLength, maxPhraseWords: this.maxPhraseWords, zhEn, enZh };
  }

  constructor(entries: Iterable<DictionaryEntry>) {
    let maxLen = 1;
    let maxPhrase = 1;
    const reverse = new Map<string, Map<string, number>>();
    for (const e of entries) {
      const glosses = cleanSenses(e.senses);
      if (glosses.length === 0) continue;
      for (const head of new Set([e.simplified, e.traditional])) {
        if (!head) continue;
        const known = this.zhEn.get(head);
        if (known) {
          for (const g of glosses) if (!known.includes(g)) known.push(g);
        } else this.zhEn.set(head, [...glosses]);
        maxLen = Math.max(maxLen, [...head].length);
      }
      glosses.forEach((g, i) => {
        const key = englishKey(g);
        if (!key) return;
        maxPhrase = Math.max(maxPhrase, key.split(' ').length);
        let m = reverse.get(key);
        if (!m) reverse.set(key, (m = new Map()));
        const rank = i + lengthPenalty(e.simplified);
        const prev = m.get(e.simplified);
        if (prev === undefined || rank < prev) m.set(e.simplified, rank);
      });
    }
    for (const [key, m] of reverse) {
      const list = [...m].map(([word, rank]) => ({ word, rank })).sort((a, b) => a.rank - b.rank || [...a.word].length - [...b.word].length || (a.word < b.word ? -1 : 1));
      this.enZh.set(key, list);
    }
    this.maxWordLength = Math.min(maxLen, 12);
    this.maxPhraseWords = Math.min(maxPhrase, 4);
  }

  /** Cleaned English translations of a Chinese headword, best first; undefined when it is not a headword. */
  english(word: string): readonly string[] | undefined {
    return this.zhEn.get(word);
  }

  has(word: string): boolean {
    return this.zhEn.has(word);
  }

  /** Chinese headwords translating an English phrase (by englishKey), best first, with their rank (0 = first sense). */
  chinese(phraseKey: string): readonly Reverse[] | undefined {
    return this.enZh.get(phraseKey);
  }

  get size(): number {
    return this.zhEn.size;
  }
}

/**
 * Parses CC-CEDICT's text format (cedict_ts.u8: `Traditional Simplified [pin1 yin1] /sense 1/sense 2/`, `#` comments).
 * Lines that do not match are skipped.
 */
export function parseCedict(text: string): DictionaryEntry[] {
  const out: DictionaryEntry[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^(\S+)\s+(\S+)\s+\[[^\]]*\]\s+\/(.*)\/\s*$/u.exec(line);
    if (!m) continue;
    out.push({ traditional: m[1]!, simplified: m[2]!, senses: m[3]!.split('/').filter(Boolean) });
  }
  return out;
}
