import { containsCjk, tokenize } from '@rag/domain';
import type { EmbedInputType, Embedder } from '@rag/ports';
import { AppError } from '@rag/platform';

export interface HashingEmbedderOptions {
  /** Number of hash buckets = vector dimension (default 384). More buckets, fewer collisions. */
  dim?: number;
  /** Character n-gram sizes taken from each Latin token with boundary marks, `<wing>` (default [3, 4]; [] for none). */
  charNgrams?: number[];
  /** Add adjacent-token bigrams, so phrases weigh more than scattered words (default true). */
  wordBigrams?: boolean;
}

const DEFAULT_NGRAMS = [3, 4];
const WEIGHT = { word: 1, bigram: 0.5, charNgram: 0.35, cjkChar: 0.5, cjkBigram: 0.5 } as const;

/**
 * A deterministic lexical embedder that needs nothing installed: the tokens of `@rag/domain`'s
 * `tokenize` (stemmed, stop words dropped, Chinese segmented), adjacent-token bigrams and character
 * n-grams are hashed (FNV-1a, 32 bit) into `dim` buckets with a hash-derived sign (the "hashing trick",
 * which keeps collisions unbiased), weighted by sublinear term frequency (1 + ln tf), and L2-normalised.
 *
 * It is NOT a semantic model: it matches shared words and word pieces ("wings" ~ "wing", typos,
 * compounds), never synonyms. It makes the dense path work offline and in tests; use an ONNX or HTTP
 * embedder for semantic retrieval. Queries and passages are embedded the same way.
 */
export class HashingEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  private readonly ngrams: number[];
  private readonly bigrams: boolean;

  constructor(options: HashingEmbedderOptions = {}) {
    const dim = options.dim ?? 384;
    if (!Number.isInteger(dim) || dim < 8 || dim > 1 << 20) {
      throw new AppError('invalid_request', `HashingEmbedder dim must be an integer in [8, 1048576], got ${dim}`);
    }
    const ngrams = [...new Set(options.charNgrams ?? DEFAULT_NGRAMS)].sort((a, b) => a - b);
    if (ngrams.some((n) => !Number.isInteger(n) || n < 2 || n > 8)) {
      throw new AppError('invalid_request', `HashingEmbedder charNgrams must be integers in [2, 8], got ${ngrams.join(',')}`);
    }
    this.dim = dim;
    this.ngrams = ngrams;
    this.bigrams = options.wordBigrams ?? true;
    // The id says everything that changes the vectors: vectors of two ids never share an index.
    const isDefault = ngrams.join(',') === DEFAULT_NGRAMS.join(',') && this.bigrams;
    this.modelId = `hashing-lexical-v1-${dim}${isDefault ? '' : `-c${ngrams.join('') || '0'}${this.bigrams ? '' : '-nobigram'}`}`;
  }

  async embed(texts: string[], _inputType: EmbedInputType): Promise<Float32Array[]> {
    return texts.map((t) => this.embedOne(t));
  }

  /** Synchronous form of `embed` for one text. */
  embedOne(text: string): Float32Array {
    const features = this.features(text);
    const v = new Float32Array(this.dim);
    if (features.size === 0) {
      // Nothing to hash (empty or all stop words): a fixed unit vector keeps the result normalisable.
      v[bucketOf(fnv1a('\u0000empty'), this.dim)] = 1;
      return v;
    }
    for (const [feature, { tf, weight }] of features) {
      const h = fnv1a(feature);
      const sign = fmix32(h) & 0x80000000 ? -1 : 1;
      v[bucketOf(h, this.dim)] += sign * weight * (1 + Math.log(tf));
    }
    let s = 0;
    for (let i = 0; i < v.length; i++) s += v[i] * v[i];
    const norm = Math.sqrt(s);
    if (norm > 0) for (let i = 0; i < v.length; i++) v[i] /= norm;
    else v[bucketOf(fnv1a('\u0000empty'), this.dim)] = 1; // every feature cancelled out in collisions
    return v;
  }

  private features(text: string): Map<string, { tf: number; weight: number }> {
    const out = new Map<string, { tf: number; weight: number }>();
    const add = (feature: string, weight: number) => {
      const f = out.get(feature);
      if (f) f.tf++;
      else out.set(feature, { tf: 1, weight });
    };
    const tokens = tokenize(text);
    for (let i = 0; i < tokens.length; i++) {
      const tok = tokens[i];
      add(`w\u0001${tok}`, WEIGHT.word);
      if (this.bigrams && i > 0) add(`b\u0001${tokens[i - 1]}\u0002${tok}`, WEIGHT.bigram);
      if (containsCjk(tok)) {
        // Segmenters disagree on word boundaries between a query and a passage; characters and character
        // pairs still match.
        const chars = Array.from(tok);
        if (chars.length > 1) {
          for (let c = 0; c < chars.length; c++) {
            add(`h\u0001${chars[c]}`, WEIGHT.cjkChar);
            if (c > 0) add(`j\u0001${chars[c - 1]}${chars[c]}`, WEIGHT.cjkBigram);
          }
        }
      } else if (this.ngrams.length > 0) {
        const marked = Array.from(`<${tok}>`);
        for (const n of this.ngrams) {
          if (marked.length <= n) continue; // the whole token is already a word feature
          for (let s = 0; s + n <= marked.length; s++) add(`c${n}\u0001${marked.slice(s, s + n).join('')}`, WEIGHT.charNgram);
        }
      }
    }
    return out;
  }
}

/** FNV-1a, 32 bit, over UTF-16 code units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** MurmurHash3's finaliser: decorrelates the sign bit from the bucket bits of the same hash. */
function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function bucketOf(h: number, dim: number): number {
  return h % dim;
}
