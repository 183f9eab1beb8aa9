import { scriptWeights } from '@rag/domain';
import type { EmbedInputType, Embedder } from '@rag/ports';

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
 * Cost: ingestion runs both models (≈ the sum of their times); queries usually run one.
 */
export class ScriptRoutedEmbedder implements Embedder {
  readonly modelId: string;
  readonly dim: number;

  constructor(
    private readonly cjk: Embedder,
    private readonly other: Embedder,
  ) {
    ({ modelId: this.modelId, dim: this.dim } = ScriptRoutedEmbedder.space(cjk, other));
  }

  /** The id and dimension of the pair, from the two models' own (no model needs to be loaded). */
  static space(cjk: { modelId: string; dim: number }, other: { modelId: string; dim: number }): { modelId: string; dim: number } {
    return { modelId: `routed:${cjk.modelId}+${other.modelId}`, dim: cjk.dim + other.dim };
  }

  async embed(texts: string[], inputType: EmbedInputType): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (inputType === 'passage') {
      // One model after the other: each ONNX run already uses every core, and running both at once was slower
      // (npm run bench -- embed: 6.7 chunks/s in parallel against ≈9 expected from the two models alone).
      const a = await this.cjk.embed(texts, 'passage');
      const b = await this.other.embed(texts, 'passage');
      return texts.map((_, i) => this.join(a[i]!, b[i]!, Math.SQRT1_2, Math.SQRT1_2));
    }
    const weights = texts.map(scriptWeights);
    const need = (pick: (w: { cjk: number; other: number }) => number) => texts.filter((_, i) => pick(weights[i]!) > 0);
    const a = await this.cjk.embed(need((w) => w.cjk), 'query');
    const b = await this.other.embed(need((w) => w.other), 'query');
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
