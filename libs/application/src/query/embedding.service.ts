import type { Embedder } from '@rag/ports';
import type { QueryEmbeddingCall } from './query-path';

/** The embedder service's query-side call. */
export class EmbeddingService implements QueryEmbeddingCall {
  constructor(private readonly embedder: Embedder) {}

  async embedQuery(text: string): Promise<Float32Array> {
    const [v] = await this.embedder.embed([text], 'query');
    if (!v) throw new Error('the embedder returned no vector');
    return v;
  }
}
