import { tokenize } from '../text';
import { isCjkToken, normText, textBigrams } from './lexical';
import { splitSentences } from './sentences';

/**
 * What the relevance gate needs from one source text, independent of the question: its normalised form
 * (substring tests), its token set, and the 5-letter prefixes of its Latin tokens of 5+ letters.
 */
export interface GateFeatures {
  readonly norm: string;
  readonly tokens: ReadonlySet<string>;
  readonly prefixes: ReadonlySet<string>;
}

/** One sentence of a source, analysed for the extractive answerer. */
export interface SentenceFeatures {
  readonly text: string;
  readonly tokens: ReadonlySet<string>;
  readonly bigrams: ReadonlySet<string>;
}

/** Tokens and CJK bigrams of a text used as context (a title, or a source's first sentence). */
export interface ContextFeatures {
  readonly tokens: ReadonlySet<string>;
  readonly bigrams: ReadonlySet<string>;
}

export function gateFeaturesOf(text: string): GateFeatures {
  const tokens = new Set(tokenize(text));
  const prefixes = new Set<string>();
  for (const t of tokens) if (t.length >= 5 && !isCjkToken(t)) prefixes.add(t.slice(0, 5));
  return { norm: normText(text), tokens, prefixes };
}

export function sentenceFeaturesOf(text: string): readonly SentenceFeatures[] {
  return splitSentences(text.normalize('NFC')).map((s) => ({ text: s.text, tokens: new Set(tokenize(s.text)), bigrams: textBigrams(s.text) }));
}

export function contextFeaturesOf(text: string): ContextFeatures {
  return { tokens: new Set(tokenize(text)), bigrams: textBigrams(text) };
}

interface Entry {
  gate?: GateFeatures;
  sentences?: readonly SentenceFeatures[];
  context?: ContextFeatures;
}

export interface LexicalMemoOptions {
  /** Most texts held (least recently used dropped first); 0 disables the memo. */
  maxEntries: number;
  /** Most characters of text held, summed over the keys (least recently used dropped first). */
  maxChars: number;
}

export interface LexicalMemoStats {
  hits: number;
  misses: number;
  entries: number;
  chars: number;
}

/**
 * A bounded LRU memo of the question-independent text analysis done by the relevance gate and the extractive
 * answerer (tokenize with Intl.Segmenter, sentence splitting, CJK bigrams), keyed by the text itself.
 *
 * Why a memo and not tokens stored with the chunk at index time (issue 13 item 3 asks for the latter): the gate and
 * the answerer analyse the *parent* text when there is one and split it into sentences, so the stored form would
 * have to be per-sentence token sets of the parent, kept by every store (HNSW labels, SQLite, Milvus, OpenSearch) and
 * carried by the Chunk contract — a schema change across all adapters for data that costs ~1 ms per source to
 * recompute. Keying by the text (not the chunk id) cannot serve a stale analysis: equal text gives equal features.
 * Popular chunks recur across queries, so the memo removes the per-query tokenization for them; a miss costs what
 * it cost before. Results are identical with or without the memo (generation/lexical-memo.spec.ts checks this
 * against the previous implementation on the dev corpora).
 *
 * Pure (no Node built-ins): a Map in insertion order is the LRU list. Cached sets are shared read-only.
 */
export class LexicalMemo {
  private readonly entries = new Map<string, Entry>();
  private chars = 0;
  private hits = 0;
  private misses = 0;

  constructor(private readonly opts: LexicalMemoOptions) {}

  gate(text: string): GateFeatures {
    const e = this.entry(text, 'gate');
    return (e.gate ??= gateFeaturesOf(text));
  }

  sentences(text: string): readonly SentenceFeatures[] {
    const e = this.entry(text, 'sentences');
    return (e.sentences ??= sentenceFeaturesOf(text));
  }

  context(text: string): ContextFeatures {
    const e = this.entry(text, 'context');
    return (e.context ??= contextFeaturesOf(text));
  }

  stats(): LexicalMemoStats {
    return { hits: this.hits, misses: this.misses, entries: this.entries.size, chars: this.chars };
  }

  private entry(text: string, field: keyof Entry): Entry {
    const found = this.entries.get(text);
    if (found) {
      if (found[field]) this.hits++;
      else this.misses++;
      // Move to the most recently used end.
      this.entries.delete(text);
      this.entries.set(text, found);
      return found;
    }
    this.misses++;
    const e: Entry = {};
    if (this.opts.maxEntries <= 0 || text.length > this.opts.maxChars) return e; // not kept
    this.entries.set(text, e);
    this.chars += text.length;
    for (const [k] of this.entries) {
      if (this.entries.size <= this.opts.maxEntries && this.chars <= this.opts.maxChars) break;
      this.entries.delete(k);
      this.chars -= k.length;
    }
    return e;
  }
}
