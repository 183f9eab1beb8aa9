import { randomUUID } from 'node:crypto';
import { ChunksEventSchema, encodeVectorF32, Topic, type Chunk, type ChunksEvent, type ChunkVector, type EmbeddedChunksEvent } from '@rag/contracts';
import { embeddingText } from '@rag/domain';
import type { BatchOutcome, Bus, BusMessage, Embedder, OutgoingMessage } from '@rag/ports';
import { asError, eventDocumentId, handleAlone, publishEach, runParts, type BatchItem } from './batch';

type Upsert = Extract<ChunksEvent, { op: 'upsert' }>;

/**
 * Embeds the child chunks of documents. A batch of messages (bulk ingestion) is embedded together: the children of
 * every document of the batch go to the embedder in slices of `batchSize` texts (RAG_EMBEDDING_BATCH), so many
 * short documents make full embedder calls instead of one small call each.
 */
export class EmbedderStage {
  constructor(
    private readonly bus: Bus,
    private readonly embedder: Embedder,
    private readonly batchSize: number,
    /** How vectors go on the wire (RAG_BUS_VECTOR_ENCODING): base64 float32 (default) or JSON numbers. */
    private readonly vectorEncoding: 'f32' | 'json' = 'f32',
  ) {}

  private wireVector(chunkId: string, values: Float32Array): ChunkVector {
    return this.vectorEncoding === 'json' ? { chunk_id: chunkId, vector: Array.from(values) } : { chunk_id: chunkId, vector_f32: encodeVectorF32(values) };
  }

  /** One message (the embedded log bus, tests): the batch path with a batch of one. */
  async handle(msg: BusMessage): Promise<void> {
    return handleAlone((m) => this.handleBatch(m), msg);
  }

  /** Outcomes in message order; an invalid message fails alone (NonRetryableError: dead-lettered with its reason). */
  handleBatch(msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return runParts('embed', 'embedder', msgs, { schema: ChunksEventSchema, what: 'chunks event', documentIdOf: eventDocumentId }, (part) => this.embedPart(part));
  }

  private async embedPart(part: { item: BatchItem; event: ChunksEvent }[]): Promise<void> {
    const out: { item: BatchItem; message: OutgoingMessage<EmbeddedChunksEvent> }[] = [];
    const upserts: { item: BatchItem; event: Upsert; children: Chunk[] }[] = [];
    for (const { item, event } of part) {
      if (event.op === 'delete') {
        item.span.setAttributes({ 'rag.tenant': event.tenant, 'rag.document_id': event.document_id, 'rag.version': event.version, 'rag.op': 'delete' });
        out.push({ item, message: { key: event.document_id, value: { ...event, event_id: randomUUID() } } });
        continue;
      }
      const children = event.document.chunks.filter((c) => c.kind === 'child');
      item.span.setAttributes({
        'rag.tenant': event.document.tenant,
        'rag.document_id': event.document.document_id,
        'rag.version': event.document.version,
        'rag.op': 'upsert',
        'rag.chunks': children.length,
        'rag.embedding.model': this.embedder.modelId,
        'rag.embedding.dim': this.embedder.dim,
      });
      upserts.push({ item, event, children });
    }
    const texts = upserts.flatMap((u) => u.children.map(embeddingText));
    const batches = Math.ceil(texts.length / this.batchSize);
    for (const u of upserts) u.item.span.setAttributes({ 'rag.embedding.batches': batches, 'rag.embedding.texts': texts.length });
    try {
      const vectors: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += this.batchSize) vectors.push(...(await this.embedder.embed(texts.slice(i, i + this.batchSize), 'passage')));
      if (vectors.length !== texts.length) throw new Error(`the embedder returned ${vectors.length} vectors for ${texts.length} texts`);
      let next = 0;
      for (const { item, event, children } of upserts) {
        const embedded: EmbeddedChunksEvent = {
          event_id: randomUUID(),
          op: 'upsert',
          document: {
            ...event.document,
            model: this.embedder.modelId,
            dim: this.embedder.dim,
            vectors: children.map((c) => this.wireVector(c.chunk_id, vectors[next++]!)),
          },
        };
        out.push({ item, message: { key: event.document.document_id, value: embedded } });
      }
    } catch (e) {
      // The whole call failed: every document in it fails here and is delivered again alone (the bus's policy).
      for (const u of upserts) u.item.failed = asError(e);
    }
    await publishEach(this.bus, Topic.ChunksEmbedded, out.filter((o) => !o.item.failed));
  }
}
