import { randomUUID } from 'node:crypto';
import { DocumentEventSchema, Topic, type ChunksEvent } from '@rag/contracts';
import { chunkDocumentWithin, DEFAULT_MAX_CHUNKS_PER_DOCUMENT, type ChunkOptions } from '@rag/domain';
import { setSpanAttributes } from '@rag/platform';
import type { Bus, BusMessage } from '@rag/ports';
import type { Contextualizer } from './contextualizer';
import { publishStatus } from './stage-publisher';
import { parseMessage } from './validate';

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
    const event = parseMessage(DocumentEventSchema, msg.value, 'document event');
    setSpanAttributes(
      event.op === 'delete'
        ? { 'rag.tenant': event.tenant, 'rag.document_id': event.document_id, 'rag.version': event.version, 'rag.op': 'delete' }
        : { 'rag.tenant': event.document.tenant, 'rag.document_id': event.document.document_id, 'rag.version': event.document.version, 'rag.op': 'upsert' },
    );
    if (event.op === 'delete') {
      await this.bus.publish(Topic.Chunks, [{ key: event.document_id, value: { ...event, event_id: randomUUID() } }]);
      return;
    }
    const doc = event.document;
    const chunked = chunkDocumentWithin(doc, this.options, this.maxChunks);
    if (!chunked.ok) {
      setSpanAttributes({ 'rag.outcome': 'failed' });
      await this.fail(doc, `${chunked.code}: ${chunked.reason} (RAG_MAX_CHUNKS_PER_DOCUMENT)`);
      return;
    }
    let chunks = chunked.chunks;
    setSpanAttributes({ 'rag.chunks': chunks.length, 'rag.chunks.child': chunks.filter((c) => c.kind === 'child').length });
    if (chunks.length === 0) {
      await this.fail(doc, 'empty: the document has no text to index');
      return;
    }
    if (this.contextualizer) {
      const c = await this.contextualizer.contextualize({ document_id: doc.document_id, title: doc.title, chunks });
      chunks = c.chunks;
      setSpanAttributes({
        'rag.context.model': this.contextualizer.modelId,
        'rag.context.written': c.written,
        'rag.context.failed': c.failed,
        'rag.context.empty': c.empty,
        'rag.context.prompt_tokens': c.prompt_tokens,
      });
    }
    const out: ChunksEvent = {
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
    };
    await this.bus.publish(Topic.Chunks, [{ key: doc.document_id, value: out }]);
  }

  /** The document ends `failed` with the reason (a value, not an exception: nothing to retry or dead-letter). */
  private fail(doc: { document_id: string; tenant: string; version: number }, error: string): Promise<void> {
    return publishStatus(this.bus, { document_id: doc.document_id, tenant: doc.tenant, version: doc.version, status: 'failed', stage: 'chunker', error });
  }
}
