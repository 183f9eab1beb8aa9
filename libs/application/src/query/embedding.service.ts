import { inStage } from '@rag/platform';
import type { Embedder } from '@rag/ports';
import type { QueryEmbeddingCall } from './query-path';

/** Query vectors kept for repeats (see EmbeddingService). */
const RECENT_QUERIES = 256;

/**
 * The embedder service's query-side call (the `query-embed` stage). The last few hundred query vectors are kept: one
 * question is embedded by several parts of the same request — retrieval, the relevance gate's dense signal, the
 * corrective retry, the agent's seed search — and a repeat costs a model run (tens of ms on CPU) for the same vector.
 * A repeat is answered from memory without a new `query-embed` span (the stage ran once for the request).
 */
export class EmbeddingService implements QueryEmbeddingCall {
  private readonly recent = new Map<string, Float32Array>();
  constructor(private readonly embedder: Embedder) {}

  async embedQuery(text: string): Promise<Float32Array> {
    const hit = this.recent.get(text);
    if (hit) {
      this.recent.delete(text); // most recently used last
      this.recent.set(text, hit);
      return hit.slice(); // a copy: no caller can change what the next one gets
    }
    const v = await inStage('query-embed', { 'rag.embedding.model': this.embedder.modelId, 'rag.embedding.dim': this.embedder.dim }, async () => {
      const [out] = await this.embedder.embed([text], 'query');
      if (!out) throw new Error('the embedder returned no vector');
      return out;
    });
    this.recent.set(text, v);
    if (this.recent.size > RECENT_QUERIES) this.recent.delete(this.recent.keys().next().value!);
    return v;
  }
}
