import { passageScriptWeights, scriptWeights } from '@rag/domain';
import type { EmbedInputType, Embedder } from '@rag/ports';

/**
 * How passages are embedded by the pair: `script` (default) runs, for each passage, only the model(s) of the
 * script(s) it is written in; `both` runs both models on every passage (the behaviour before issue 13).
 */
export type PassageRouting = 'script' | 'both';

export interface ScriptRoutedOptions {
  /** Default `script`. */
  passages?: PassageRouting;
  /**
   * With `script`: a script whose share of the passage (scriptWeights) is below this is ignored for it, so a Chinese
   * passage quoting one English product name is embedded by the Chinese model alone. Default 0.1.
   */
  minShare?: number;
}

/**
 * Two embedding models as one, for content in Chinese (or Japanese/Korean) and English: small models are good in
 * the language they were trained on and poor in the other (bge-small-zh-v1.5 and bge-small-en-v1.5 each lose half
 * their nDCG@10 on the other language's dev set, docs/quality), so neither alone serves mixed enterprise content.
 *
 * - Passages are embedded by both models; the stored vector is the concatenation [cjk(c) | other(c)] / √2 (unit
 *   length), so one collection/index holds them and any vector store works unchanged.
 * - A query is embedded by the model(s) of its script: [w_cjk · cjk(q) | w_other · other(q)] / ‖w‖ with w from
 *   scriptWeights(query). A Chinese query therefore scores every chunk by the Chinese model alone, an English one
 *   by the English model, and a mixed one by a weighted blend — in one nearest-neighbour search. A model whose
 *   weight is 0 is not run for the query.
 *
 * With `passages: 'script'` (the default) a passage is embedded like a query is: by the model(s) of its script,
 * [w_cjk · cjk(c) | w_other · other(c)] / ‖w‖ with w = scriptWeights(passage), a share below `minShare` dropped.
 * An English passage then costs one English-model run instead of two, and a Chinese one a Chinese-model run. For a
 * query in one script the passage's other half never counted (the query's weight on it is 0), so monolingual
 * rankings do not change; what changes is that a Chinese query no longer reaches a pure-English passage through the
 * Chinese model's weak English (and the reverse) — measured in docs/quality and scripts/bench/README.md (issue 13
 * item 5). `passages: 'both'` keeps the old space; the two modes have different model ids (the vectors differ), so
 * an index built with one is never silently mixed with the other.
 *
 * Cost: ingestion runs one model per single-script passage (both for mixed ones, or with `both`); queries usually run one.
 */
export class ScriptRoutedEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;

  private readonly passages: PassageRouting;
  private readonly minShare: number;

  constructor(
    private readonly cjk: Embedder,
    private readonly other: Embedder,
    options: ScriptRoutedOptions = {},
  ) {
    this.passages = options.passages ?? 'script';
    this.minShare = options.minShare ?? 0.1;
    if (!(this.minShare >= 0 && this.minShare < 0.5)) throw new Error(`minShare must be in [0, 0.5), got ${this.minShare}`);
    ({ modelId: this.modelId, dim: this.dim } = ScriptRoutedEmbedder.space(cjk, other, this.passages));
  }

  /** The id and dimension of the pair, from the two models' own (no model needs to be loaded). */
  static space(
    cjk: { modelId: string; dim: number },
    other: { modelId: string; dim: number },
    passages: PassageRouting = 'script',
  ): { modelId: string; dim: number } {
    const kind = passages === 'both' ? 'routed' : 'routed-script';
    return { modelId: `${kind}:${cjk.modelId}+${other.modelId}`, dim: cjk.dim + other.dim };
  }

  /** The script weights a passage is embedded with (`script` mode): minor shares below minShare dropped. */
  private passageWeights(text: string): { cjk: number; other: number } {
    return passageScriptWeights(text, this.minShare);
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (inputType === 'passage' && this.passages === 'both') {
      // One model after the other: each ONNX run already uses every core, and running both at once was slower
      // (npm run bench -- embed: 6.7 chunks/s in parallel against ≈9 expected from the two models alone).
      const a = await this.cjk.embed(texts, 'passage');
      const b = await this.other.embed(texts, 'passage');
      return texts.map((_, i) => this.join(a[i]!, b[i]!, Math.SQRT1_2, Math.SQRT1_2));
    }
    const weights = inputType === 'passage' ? texts.map((t) => this.passageWeights(t)) : texts.map(scriptWeights);
    // The CJK model's texts first, then the other's: one model after the other (see above).
    const need = (pick: (w: { cjk: number; other: number }) => number) => texts.filter((_, i) => pick(weights[i]!) > 0);
    const a = await this.cjk.embed(need((w) => w.cjk), inputType);
    const b = await this.other.embed(need((w) => w.other), inputType);
    let ia = 0;
    let ib = 0;
    return weights.map((w) => {
      const norm = Math.hypot(w.cjk, w.other);
      const va = w.cjk > 0 ? a[ia++]! : null;
      const vb = w.other > 0 ? b[ib++]! : null;
      return this.join(va, vb, w.cjk / norm, w.other / norm);
    });
  }

  private join(a: Float32Array | null, b: Float32Array | null, wa: number, wb: number): Float32Array {
    const out = new Float32Array(this.dim);
    if (a) for (let i = 0; i < a.length; i++) out[i] = a[i]! * wa;
    if (b) for (let i = 0; i < b.length; i++) out[this.cjk.dim + i] = b[i]! * wb;
    return out;
  }

  async close(): Promise<void> {
    await Promise.all([this.cjk.close?.(), this.other.close?.()]);
  }
}
