import { randomUUID } from 'node:crypto';
import { DocumentEventSchema, Topic, type ChunksEvent, type DocumentEvent, type IndexEvent } from '@rag/contracts';
import { chunkDocumentWithin, DEFAULT_MAX_CHUNKS_PER_DOCUMENT, type ChunkOptions } from '@rag/domain';
import { withTraceContext } from '@rag/platform';
import type { BatchOutcome, Bus, BusMessage, OutgoingMessage } from '@rag/ports';
import { asError, eventDocumentId, handleAlone, publishEach, runParts, type BatchItem } from './batch';
import type { Contextualizer } from './contextualizer';
import { statusMessage } from './stage-publisher';

/**
 * Splits a structured document into parent and child chunks; a document over `maxChunks` chunks is `failed`. With a
 * contextualizer (RAG_CONTEXTUAL_CHUNKS=on), each child then gets its LLM-written context before it is published;
 * a failed LLM call leaves that chunk without one and never fails the document.
 */
export class ChunkerStage {
  constructor(
    private readonly bus: Bus,
    private readonly options: ChunkOptions,
    /** RAG_MAX_CHUNKS_PER_DOCUMENT */
    private readonly maxChunks: number = DEFAULT_MAX_CHUNKS_PER_DOCUMENT,
    private readonly contextualizer: Contextualizer | null = null,
  ) {}

  async handle(msg: BusMessage): Promise<void> {
    return handleAlone((m) => this.handleBatch(m), msg);
  }

  /**
   * A batch of document events (distinct documents): each is chunked as before, and all of their chunk events go in
   * ONE publish (one log-bus transaction, one Kafka produce request), their `failed` statuses in another. On the
   * embedded log every document used to cost its own publish transaction and offset commit on the event loop that
   * also runs every other stage. Outcomes in message order; an invalid message fails alone (dead-lettered with its
   * reason); a failed publish fails the documents it carried, which the bus delivers again one by one.
   */
  handleBatch(msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return runParts('chunk', 'chunker', msgs, { schema: DocumentEventSchema, what: 'document event', documentIdOf: eventDocumentId }, (part) => this.chunkPart(part));
  }

  private async chunkPart(part: { item: BatchItem; event: DocumentEvent }[]): Promise<void> {
    const out: { item: BatchItem; message: OutgoingMessage<ChunksEvent> }[] = [];
    const failed: { item: BatchItem; message: OutgoingMessage<IndexEvent> }[] = [];
    for (const { item, event } of part) {
      try {
        const r = await this.chunkOne(item, event);
        if ('chunks' in r) out.push({ item, message: { key: eventDocumentId(r.chunks), value: r.chunks } });
        else failed.push({ item, message: r.failed });
      } catch (e) {
        item.failed = asError(e);
      }
    }
    await Promise.all([publishEach(this.bus, Topic.Chunks, out), publishEach(this.bus, Topic.IndexEvents, failed)]);
  }

  /** One document's chunk event, or its `failed` status (too many chunks, no text). */
  private async chunkOne(item: BatchItem, event: DocumentEvent): Promise<{ chunks: ChunksEvent } | { failed: OutgoingMessage<IndexEvent> }> {
    const span = item.span;
    if (event.op === 'delete') {
      span.setAttributes({ 'rag.tenant': event.tenant, 'rag.document_id': event.document_id, 'rag.version': event.version, 'rag.op': 'delete' });
      return { chunks: { ...event, event_id: randomUUID() } };
    }
    const doc = event.document;
    span.setAttributes({ 'rag.tenant': doc.tenant, 'rag.document_id': doc.document_id, 'rag.version': doc.version, 'rag.op': 'upsert' });
    const chunked = chunkDocumentWithin(doc, this.options, this.maxChunks);
    if (!chunked.ok) {
      span.setAttributes({ 'rag.outcome': 'failed' });
      return { failed: this.failure(doc, `${chunked.code}: ${chunked.reason} (RAG_MAX_CHUNKS_PER_DOCUMENT)`) };
    }
    let chunks = chunked.chunks;
    span.setAttributes({ 'rag.chunks': chunks.length, 'rag.chunks.child': chunks.filter((c) => c.kind === 'child').length });
    if (chunks.length === 0) return { failed: this.failure(doc, 'empty: the document has no text to index') };
    if (this.contextualizer) {
      // Under the document's chunk span, as on the single-message path: the LLM calls' spans join its trace.
      const contextualizer = this.contextualizer;
      const c = await withTraceContext(item.context, () => contextualizer.contextualize({ document_id: doc.document_id, title: doc.title, chunks }));
      chunks = c.chunks;
      span.setAttributes({
        'rag.context.model': this.contextualizer.modelId,
        'rag.context.written': c.written,
        'rag.context.failed': c.failed,
        'rag.context.empty': c.empty,
        'rag.context.prompt_tokens': c.prompt_tokens,
      });
    }
    return {
      chunks: {
        event_id: randomUUID(),
        op: 'upsert',
        document: {
          document_id: doc.document_id,
          tenant: doc.tenant,
          version: doc.version,
          content_hash: doc.content_hash,
          title: doc.title,
          chunks,
        },
      },
    };
  }

  /** The document ends `failed` with the reason (a value, not an exception: nothing to retry or dead-letter). */
  private failure(doc: { document_id: string; tenant: string; version: number }, error: string): OutgoingMessage<IndexEvent> {
    return statusMessage({ document_id: doc.document_id, tenant: doc.tenant, version: doc.version, status: 'failed', stage: 'chunker', error });
  }
}
