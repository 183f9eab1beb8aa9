import { EmbeddedChunksEventSchema } from '@rag/contracts';
import { inStage, Logger, setSpanAttributes } from '@rag/platform';
import { NonRetryableError } from '@rag/ports';
import type { Bus, BusMessage, KeywordIndex, Registry, VectorRecord, VectorStore } from '@rag/ports';
import { publishStatus } from './stage-publisher';
import { parseMessage } from './validate';

/**
 * Writes a document's chunks to the vector store and the keyword index, idempotently:
 * - a version older than the latest accepted one is stale and skipped (a late update never resurrects a delete);
 * - the same content hash as the active version is a no-op;
 * - a changed document is written as the new version first, then the registry switches the active version
 *   (queries fence on it, so they never see a mix), then the older versions are deleted;
 * - a redelivered message rewrites the same chunk ids (upsert), so nothing is duplicated.
 */
export class IndexerStage {
  private readonly log = new Logger('indexer');
  constructor(
    private readonly bus: Bus,
    private readonly registry: Registry,
    private readonly vectors: VectorStore,
    private readonly keywords: KeywordIndex,
    private readonly modelId: string,
  ) {}

  async handle(msg: BusMessage): Promise<void> {
    const event = parseMessage(EmbeddedChunksEventSchema, msg.value, 'embedded chunks event');
    const documentId = event.op === 'delete' ? event.document_id : event.document.document_id;
    const record = await this.registry.get(documentId);
    const latest = record?.version ?? 0;
    const version = event.op === 'delete' ? event.version : event.document.version;
    const tenant = event.op === 'delete' ? event.tenant : event.document.tenant;
    setSpanAttributes({ 'rag.tenant': tenant, 'rag.document_id': documentId, 'rag.version': version, 'rag.op': event.op });
    const dense = { 'rag.tenant': tenant, 'rag.document_id': documentId, 'rag.index.type': this.vectors.constructor.name };
    const keyword = { 'rag.tenant': tenant, 'rag.document_id': documentId, 'rag.index.type': this.keywords.constructor.name };
    if (version < latest) {
      this.log.info('skipping a stale version', { document_id: documentId, version, latest });
      return;
    }
    if (event.op === 'delete') {
      await inStage('index-dense', dense, async () => {
        await this.vectors.deleteDocument(event.document_id);
        await this.vectors.flush();
      });
      await inStage('index-keyword', keyword, () => this.keywords.deleteDocument(event.document_id));
      await this.registry.markDeleted(event.document_id, event.version);
      await publishStatus(this.bus, { document_id: event.document_id, tenant: event.tenant, version, status: 'deleted', stage: 'indexer' });
      return;
    }
    const doc = event.document;
    if (doc.model !== this.modelId) {
      throw new NonRetryableError(`chunks were embedded with model ${doc.model} but this index serves ${this.modelId}`);
    }
    if (record && record.active_version > 0 && record.content_hash === doc.content_hash && record.active_version !== version) {
      await this.registry.markUnchanged(doc.document_id, version);
      await publishStatus(this.bus, {
        document_id: doc.document_id,
        tenant: doc.tenant,
        version,
        status: 'unchanged',
        stage: 'indexer',
        content_hash: doc.content_hash,
        chunks: record.chunks,
      });
      return;
    }
    const byId = new Map(doc.chunks.map((c) => [c.chunk_id, c]));
    const records: VectorRecord[] = doc.vectors.map((v) => {
      const c = byId.get(v.chunk_id);
      if (!c) throw new NonRetryableError(`vector for unknown chunk ${v.chunk_id}`);
      return {
        chunk_id: c.chunk_id,
        document_id: c.document_id,
        tenant: c.tenant,
        version: c.version,
        acl: c.acl,
        metadata: c.metadata,
        vector: Float32Array.from(v.vector),
        chunk: c,
      };
    });
    setSpanAttributes({ 'rag.chunks': doc.chunks.length, 'rag.vectors': records.length, 'rag.embedding.model': doc.model });
    // Both writes are durable before the registry switches the active version below.
    await inStage('index-dense', { ...dense, 'rag.vectors': records.length }, async () => {
      await this.vectors.upsert(records);
      await this.vectors.flush();
    });
    await inStage('index-keyword', { ...keyword, 'rag.chunks': doc.chunks.length }, () => this.keywords.upsert(doc.chunks));
    const children = doc.chunks.filter((c) => c.kind === 'child').length;
    await this.registry.markIndexed(doc.document_id, version, doc.content_hash, children);
    // Version 1 is the first version ever reserved for this id (a re-created document gets a higher one), so there
    // is nothing older to delete; skipping the two deletes halves the store round trips of a bulk ingestion.
    if (version > 1) {
      await this.vectors.deleteDocument(doc.document_id, version);
      await this.keywords.deleteDocument(doc.document_id, version);
    }
    await publishStatus(this.bus, {
      document_id: doc.document_id,
      tenant: doc.tenant,
      version,
      status: 'indexed',
      stage: 'indexer',
      content_hash: doc.content_hash,
      chunks: children,
    });
  }
}
