import { inStage } from '@rag/platform';
import type { Embedder } from '@rag/ports';
import type { QueryEmbeddingCall } from './query-path';

/** The embedder service's query-side call (the `query-embed` stage). */
export class EmbeddingService implements QueryEmbeddingCall {
  constructor(private readonly embedder: Embedder) {}

  embedQuery(text: string): Promise<Float32Array> {
    return inStage('query-embed', { 'rag.embedding.model': this.embedder.modelId, 'rag.embedding.dim': this.embedder.dim }, async () => {
      const [v] = await this.embedder.embed([text], 'query');
      if (!v) throw new Error('the embedder returned no vector');
      return v;
    });
  }
}
