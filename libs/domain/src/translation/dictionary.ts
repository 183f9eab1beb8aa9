import { ENGLISH_STOP_WORDS, stem } from '../text/tokenize';

/**
 * A bilingual Chinese–English dictionary for query translation (the classic dictionary-based CLIR baseline), built
 * from CC-CEDICT entries: simplified and traditional headword, English senses in dictionary order.
 *
 * zh → en: each headword keeps its first few *cleaned* senses (cleanSense); en → zh: an inverted index from a
 * cleaned sense (stemmed content words, as the keyword index tokenizes them) to the headwords carrying exactly that
 * sense, best first (the sense's position in its entry, two- to four-character words before single characters and
 * long idioms, and a bonus for common words: see commonnessBonus).
 */
export interface DictionaryEntry {
  simplified: string;
  traditional: string;
  /** English senses, as CC-CEDICT writes them ("to follow; to abide by", "board (CL:塊|块[kuai4])" …). */
  senses: readonly string[];
  /** The reading ("bo1", "Bo1"): CC-CEDICT capitalises the pinyin of proper nouns. */
  pinyin?: string;
}

/**
 * A single character read as a proper noun (capitalised pinyin: a surname, a place or country abbreviation — 波 Bo1
 * "Poland", 涡 Guo1 "name of a river"): such an entry translates a character that a question almost always uses in
 * its common sense (波 bo1 "wave", 涡 wo1 "eddy"), so it is left out. Multi-character proper nouns (牛顿 "Newton") stay.
 */
export function isSingleCharProperNoun(e: DictionaryEntry): boolean {
  return [...e.simplified].length === 1 && e.pinyin !== undefined && /^[A-Z]/.test(e.pinyin);
}

/**
 * Senses that only point elsewhere or describe grammar, and proper-noun senses ("name of a river": the npm package's
 * data writes some of those readings in lower case, so isSingleCharProperNoun cannot see them): they translate nothing.
 */
const POINTER = /^(?:(?:old |archaic |euphemistic |erroneous |japanese |internet slang |ancient )?variant of|see |see also|used in|surname |cl:|classifier for|abbr\. (?:for|of|to)|(?:also )?(?:written|pr\.)|(?:taiwan|tw) pr\.|[a-z ]*particle\b|interjection|onom\.|radical |name of )/i;

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
    .replace(/["“”‘’]/g, '')
    .replace(/'/g, ' ')
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
export const DICTIONARY_SNAPSHOT_VERSION = 5;

export interface DictionarySnapshot {
  version: number;
  maxWordLength: number;
  maxPhraseWords: number;
  /** Headword → translations joined by "|". */
  zhEn: Record<string, string>;
  /** English key → "word:rank word:rank …", best first. */
  enZh: Record<string, string>;
}

export interface Reverse {
  word: string;
  rank: number;
}

/** A headword's length penalty in the reverse index: single characters and long idioms are the least specific. */
const lengthPenalty = (w: string): number => ([...w].length === 1 ? 1.5 : [...w].length > 4 ? 1 : 0);

/**
 * A word's commonness without frequency data: how many other headwords contain it (模型 is part of 模型飞机, 数学模型 …;
 * a rare synonym such as 典范 of few). Used as a bonus in the reverse index, so an English word maps to the Chinese word
 * a text would use rather than to the dictionary's rarest synonym; log-scaled and capped at one sense position.
 */
const commonnessBonus = (containedIn: number): number => Math.min(1, Math.log2(1 + containedIn) / 4);

/**
 * Builds a BilingualDictionary entry by entry (`add`), so a caller can spread the work over event-loop turns
 * (buildDictionary); `finish` derives the reverse index.
 */
export class DictionaryBuilder {
  private readonly zhEn = new Map<string, string[]>();
  private readonly reverse = new Map<string, Map<string, number>>();
  private maxLen = 1;
  private maxPhrase = 1;

  add(e: DictionaryEntry): void {
    if (isSingleCharProperNoun(e)) return;
    const glosses = cleanSenses(e.senses);
    if (glosses.length === 0) return;
    for (const head of new Set([e.simplified, e.traditional])) {
      if (!head) continue;
      const known = this.zhEn.get(head);
      if (known) {
        for (const g of glosses) if (!known.includes(g)) known.push(g);
      } else this.zhEn.set(head, [...glosses]);
      this.maxLen = Math.max(this.maxLen, [...head].length);
    }
    glosses.forEach((g, i) => {
      const key = englishKey(g);
      if (!key) return;
      // A sense that is one content word plus function words ("at large", "good at", "used to") means something else
      // than that word alone: it would turn every "large" into 在逃 (at large). Such senses translate zh → en only.
      if (!key.includes(' ') && g.includes(' ')) return;
      this.maxPhrase = Math.max(this.maxPhrase, key.split(' ').length);
      let m = this.reverse.get(key);
      if (!m) this.reverse.set(key, (m = new Map()));
      const rank = i + lengthPenalty(e.simplified);
      const prev = m.get(e.simplified);
      if (prev === undefined || rank < prev) m.set(e.simplified, rank);
    });
  }

  finish(): BilingualDictionary {
    // Commonness: for every headword, the shorter headwords inside it (2..4 characters).
    const contained = new Map<string, number>();
    for (const head of this.zhEn.keys()) {
      const chars = [...head];
      const seen = new Set<string>();
      for (let len = 2; len <= Math.min(4, chars.length - 1); len++) {
        for (let i = 0; i + len <= chars.length; i++) {
          const sub = chars.slice(i, i + len).join('');
          if (!seen.has(sub) && this.zhEn.has(sub)) {
            seen.add(sub);
            contained.set(sub, (contained.get(sub) ?? 0) + 1);
          }
        }
      }
    }
    const enZh = new Map<string, Reverse[]>();
    for (const [key, m] of this.reverse) {
      const list = [...m]
        .map(([word, rank]) => ({ word, rank: Math.round((rank - ([...word].length > 1 ? commonnessBonus(contained.get(word) ?? 0) : 0)) * 1000) / 1000 }))
        .sort((a, b) => a.rank - b.rank || [...a.word].length - [...b.word].length || (a.word < b.word ? -1 : 1));
      enZh.set(key, list);
    }
    return new BilingualDictionary(this.zhEn, enZh, Math.min(this.maxLen, 12), Math.min(this.maxPhrase, 4));
  }
}

/**
 * Builds the dictionary, calling `pause` every `every` entries (an adapter passes a next-event-loop-turn wait, so a
 * process building the ≈ 124k-entry dictionary keeps answering meanwhile).
 */
export async function buildDictionary(entries: Iterable<DictionaryEntry>, pause: () => Promise<void>, every = 2000): Promise<BilingualDictionary> {
  const b = new DictionaryBuilder();
  let n = 0;
  for (const e of entries) {
    b.add(e);
    if (++n % every === 0) await pause();
  }
  await pause();
  return b.finish();
}

export class BilingualDictionary {
  /** A dictionary of these entries, built at once (see buildDictionary for a build in steps). */
  static of(entries: Iterable<DictionaryEntry>): BilingualDictionary {
    const b = new DictionaryBuilder();
    for (const e of entries) b.add(e);
    return b.finish();
  }

  /** A dictionary from `snapshot()`'s output (the derived tables, without re-cleaning every sense). */
  static fromSnapshot(s: DictionarySnapshot): BilingualDictionary {
    if (s?.version !== DICTIONARY_SNAPSHOT_VERSION) throw new Error(`dictionary snapshot version ${s?.version}, expected ${DICTIONARY_SNAPSHOT_VERSION}`);
    const zhEn = new Map<string, string[]>();
    for (const [head, g] of Object.entries(s.zhEn)) zhEn.set(head, g.split('|'));
    const enZh = new Map<string, Reverse[]>();
    for (const [key, list] of Object.entries(s.enZh)) {
      enZh.set(
        key,
        list.split(' ').map((x) => {
          const at = x.lastIndexOf(':');
          return { word: x.slice(0, at), rank: Number(x.slice(at + 1)) };
        }),
      );
    }
    return new BilingualDictionary(zhEn, enZh, s.maxWordLength, s.maxPhraseWords);
  }

  /**
   * @param zhEn headword (simplified and traditional) → cleaned English translations, dictionary order
   * @param enZh englishKey(translation) → Chinese headwords (simplified), best first
   * @param maxWordLength longest headword, in characters (bounds the longest-match segmentation)
   * @param maxPhraseWords longest reverse-index key, in words
   */
  constructor(
    private readonly zhEn: ReadonlyMap<string, readonly string[]>,
    private readonly enZh: ReadonlyMap<string, readonly Reverse[]>,
    readonly maxWordLength: number,
    readonly maxPhraseWords: number,
  ) {}

  /** The derived tables as plain JSON (a cache of the builder's work: loading it is a JSON.parse). */
  snapshot(): DictionarySnapshot {
    const zhEn: Record<string, string> = {};
    for (const [head, g] of this.zhEn) zhEn[head] = g.join('|');
    const enZh: Record<string, string> = {};
    for (const [key, list] of this.enZh) enZh[key] = list.map((r) => `${r.word}:${r.rank}`).join(' ');
    return { version: DICTIONARY_SNAPSHOT_VERSION, maxWordLength: this.maxWordLength, maxPhraseWords: this.maxPhraseWords, zhEn, enZh };
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
    const m = /^(\S+)\s+(\S+)\s+\[([^\]]*)\]\s+\/(.*)\/\s*$/u.exec(line);
    if (!m) continue;
    out.push({ traditional: m[1]!, simplified: m[2]!, pinyin: m[3]!, senses: m[4]!.split('/').filter(Boolean) });
  }
  return out;
}
