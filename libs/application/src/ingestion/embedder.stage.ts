import { randomUUID } from 'node:crypto';
import { ChunksEventSchema, Topic, type EmbeddedChunksEvent } from '@rag/contracts';
import { embeddingText } from '@rag/domain';
import { setSpanAttributes } from '@rag/platform';
import type { Bus, BusMessage, Embedder } from '@rag/ports';
import { parseMessage } from './validate';

/** Embeds the child chunks of a document in batches. */
export class EmbedderStage {
  constructor(
    private readonly bus: Bus,
    private readonly embedder: Embedder,
    private readonly batchSize: number,
  ) {}

  async handle(msg: BusMessage): Promise<void> {
    const event = parseMessage(ChunksEventSchema, msg.value, 'chunks event');
    setSpanAttributes(
      event.op === 'delete'
        ? { 'rag.tenant': event.tenant, 'rag.document_id': event.document_id, 'rag.version': event.version, 'rag.op': 'delete' }
        : { 'rag.tenant': event.document.tenant, 'rag.document_id': event.document.document_id, 'rag.version': event.document.version, 'rag.op': 'upsert' },
    );
    if (event.op === 'delete') {
      await this.bus.publish(Topic.ChunksEmbedded, [{ key: event.document_id, value: { ...event, event_id: randomUUID() } }]);
      return;
    }
    const children = event.document.chunks.filter((c) => c.kind === 'child');
    setSpanAttributes({
      'rag.chunks': children.length,
      'rag.embedding.model': this.embedder.modelId,
      'rag.embedding.dim': this.embedder.dim,
      'rag.embedding.batches': Math.ceil(children.length / this.batchSize),
    });
    const vectors: { chunk_id: string; vector: number[] }[] = [];
    for (let i = 0; i < children.length; i += this.batchSize) {
      const batch = children.slice(i, i + this.batchSize);
      const out = await this.embedder.embed(batch.map(embeddingText), 'passage');
      batch.forEach((c, j) => vectors.push({ chunk_id: c.chunk_id, vector: Array.from(out[j]!) }));
    }
    const embedded: EmbeddedChunksEvent = {
      event_id: randomUUID(),
      op: 'upsert',
      document: { ...event.document, model: this.embedder.modelId, dim: this.embedder.dim, vectors },
    };
    await this.bus.publish(Topic.ChunksEmbedded, [{ key: event.document.document_id, value: embedded }]);
  }
}
