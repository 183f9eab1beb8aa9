import { createHash } from 'node:crypto';
import { chunkId, chunkVectorValues, EmbeddedChunksEventSchema, parseChunkId, Topic, type Chunk, type EmbeddedChunksEvent, type EmbeddedDocument } from '@rag/contracts';
import { Logger, withTraceContext } from '@rag/platform';
import { NonRetryableError } from '@rag/ports';
import type { BatchOutcome, Bus, BusMessage, DocumentDelete, DocumentRecord, KeywordIndex, Registry, VectorRecord, VectorStore } from '@rag/ports';
import { asError, eventDocumentId, handleAlone, inSpans, publishEach, runParts, type BatchItem } from './batch';
import { publishStatus, statusMessage } from './stage-publisher';

type DeleteEvent = Extract<EmbeddedChunksEvent, { op: 'delete' }>;
interface Write {
  item: BatchItem;
  doc: EmbeddedDocument;
  records: VectorRecord[];
  children: number;
}

/** Waits for every operation, then rethrows the first failure (so none is still running when the caller moves on). */
async function settleAll(ops: Promise<unknown>[]): Promise<void> {
  const results = await Promise.allSettled(ops);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/** Several documents' deletes from a store: one request where the store has a bulk delete, else one per document. */
async function deleteFrom(store: Pick<VectorStore, 'deleteDocument' | 'deleteDocuments'>, documents: DocumentDelete[]): Promise<number> {
  if (store.deleteDocuments) return store.deleteDocuments(documents);
  let removed = 0;
  for (const d of documents) removed += await store.deleteDocument(d.documentId, d.keepVersion);
  return removed;
}

/**
 * Writes a document's chunks to the vector store and the keyword index, idempotently:
 * - a version older than the latest accepted one is stale and skipped (a late update never resurrects a delete);
 * - the same content hash as the active version is a no-op only when the chunks the stores hold for the active
 *   version also carry the same attributes (acl, title, metadata, source url, headings, parent links): a changed ACL,
 *   title or metadata with an unchanged body is indexed as the new version like any other change, so every store
 *   (dense and keyword, embedded or Milvus/OpenSearch/Elasticsearch) gets it through the one version-switch path.
 *   No model runs again for that: the vectors come with the event (the embedder's cache answers identical texts);
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

  /** One message (the embedded log bus, tests): the batch path with a batch of one. */
  async handle(msg: BusMessage): Promise<void> {
    return handleAlone((m) => this.handleBatch(m), msg);
  }

  /**
   * Several messages at once (bulk ingestion), outcomes in message order. The documents to write are written together:
   * one vector upsert, one keyword-index upsert (one `_bulk` on OpenSearch/Elasticsearch), one registry transaction
   * that switches their active versions, then their status events; each keeps its order (stores before the registry
   * switch, the switch before the old versions are deleted). Deletes, stale and unchanged versions are handled one by
   * one (they write little). A message that fails alone (invalid, wrong model) does not hold the others back; a
   * failed bulk write fails the documents it carried, which the bus then delivers again one at a time.
   */
  handleBatch(msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return runParts('index', 'indexer', msgs, { schema: EmbeddedChunksEventSchema, what: 'embedded chunks event', documentIdOf: eventDocumentId }, (part) => this.indexPart(part));
  }

  private async records(ids: string[]): Promise<Map<string, DocumentRecord>> {
    if (this.registry.getMany) return this.registry.getMany(ids);
    const out = new Map<string, DocumentRecord>();
    for (const id of ids) {
      const r = await this.registry.get(id);
      if (r) out.set(id, r);
    }
    return out;
  }

  private async indexPart(part: { item: BatchItem; event: EmbeddedChunksEvent }[]): Promise<void> {
    if (part.length === 0) return;
    const ids = part.map((p) => (p.event.op === 'delete' ? p.event.document_id : p.event.document.document_id));
    const registered = await this.records(ids);
    const writes: Write[] = [];
    const deletes: { item: BatchItem; event: DeleteEvent }[] = [];
    for (const { item, event } of part) {
      try {
        const prepared = await withTraceContext(item.context, () => this.prepare(item, event, registered.get(event.op === 'delete' ? event.document_id : event.document.document_id) ?? null));
        if (prepared === 'delete' && event.op === 'delete') deletes.push({ item, event });
        else if (prepared && prepared !== 'delete') writes.push({ item, ...prepared });
      } catch (e) {
        item.failed = asError(e);
      }
    }
    // The documents of a part are distinct, so its writes and its deletes do not depend on each other.
    await Promise.all([this.writeAll(writes), this.deleteAll(deletes)]);
  }

  /**
   * The part's new versions: one vector upsert and one keyword upsert, in parallel (both durable before the registry
   * switches the active versions), one registry transaction, the older versions' deletes of both stores in one request
   * each, then one `indexed` status per document.
   */
  private async writeAll(writes: Write[]): Promise<void> {
    if (writes.length === 0) return;
    const dense = (w: Write) => ({
      item: w.item,
      attributes: { 'rag.tenant': w.doc.tenant, 'rag.document_id': w.doc.document_id, 'rag.index.type': this.vectors.constructor.name, 'rag.vectors': w.records.length },
    });
    const keyword = (w: Write) => ({
      item: w.item,
      attributes: { 'rag.tenant': w.doc.tenant, 'rag.document_id': w.doc.document_id, 'rag.index.type': this.keywords.constructor.name, 'rag.chunks': w.doc.chunks.length },
    });
    try {
      // Both writes are durable before the registry switches the active versions below. They run side by side (they
      // touch different stores); both are awaited even when one fails, so nothing of this part is still being written
      // when its messages are delivered again.
      await settleAll([
        inSpans('index-dense', writes.map(dense), async () => {
          await this.vectors.upsert(writes.flatMap((w) => w.records));
          await this.vectors.flush();
        }),
        inSpans('index-keyword', writes.map(keyword), () => this.keywords.upsert(writes.flatMap((w) => w.doc.chunks))),
      ]);
      const marks = writes.map((w) => ({ documentId: w.doc.document_id, version: w.doc.version, contentHash: w.doc.content_hash, chunks: w.children }));
      if (this.registry.markIndexedMany) await this.registry.markIndexedMany(marks);
      else for (const m of marks) await this.registry.markIndexed(m.documentId, m.version, m.contentHash, m.chunks);
    } catch (e) {
      for (const w of writes) w.item.failed = asError(e);
      return;
    }
    // Version 1 is the first version ever reserved for this id (a re-created document gets a higher one), so there
    // is nothing older to delete; skipping the deletes halves the store round trips of a bulk ingestion.
    const replaced = writes.filter((w) => w.doc.version > 1);
    if (replaced.length > 0) {
      const old = replaced.map((w) => ({ documentId: w.doc.document_id, keepVersion: w.doc.version }));
      try {
        await settleAll([
          inSpans('index-dense', replaced.map(dense), () => deleteFrom(this.vectors, old)),
          inSpans('index-keyword', replaced.map(keyword), () => deleteFrom(this.keywords, old)),
        ]);
      } catch (e) {
        // The new versions are active already; delivered again, they rewrite the same ids and retry these deletes.
        for (const w of replaced) w.item.failed = asError(e);
      }
    }
    const statuses = writes
      .filter((w) => !w.item.failed)
      .map((w) => ({ item: w.item, message: statusMessage({ document_id: w.doc.document_id, tenant: w.doc.tenant, version: w.doc.version, status: 'indexed', stage: 'indexer', content_hash: w.doc.content_hash, chunks: w.children }) }));
    await publishEach(this.bus, Topic.IndexEvents, statuses);
  }

  /**
   * The part's deletes: one delete request per store for all of them (in parallel), then the registry, then one
   * `deleted` status per document. A failure fails every delete of the part, which the bus delivers again alone
   * (deleting is idempotent).
   */
  private async deleteAll(deletes: { item: BatchItem; event: DeleteEvent }[]): Promise<void> {
    if (deletes.length === 0) return;
    const attributes = (d: { item: BatchItem; event: DeleteEvent }, type: string) => ({
      item: d.item,
      attributes: { 'rag.tenant': d.event.tenant, 'rag.document_id': d.event.document_id, 'rag.index.type': type },
    });
    const all = deletes.map((d) => ({ documentId: d.event.document_id }));
    try {
      await settleAll([
        inSpans('index-dense', deletes.map((d) => attributes(d, this.vectors.constructor.name)), async () => {
          await deleteFrom(this.vectors, all);
          await this.vectors.flush();
        }),
        inSpans('index-keyword', deletes.map((d) => attributes(d, this.keywords.constructor.name)), () => deleteFrom(this.keywords, all)),
      ]);
      for (const d of deletes) await this.registry.markDeleted(d.event.document_id, d.event.version);
    } catch (e) {
      for (const d of deletes) d.item.failed = asError(e);
      return;
    }
    await publishEach(
      this.bus,
      Topic.IndexEvents,
      deletes.map((d) => ({ item: d.item, message: statusMessage({ document_id: d.event.document_id, tenant: d.event.tenant, version: d.event.version, status: 'deleted', stage: 'indexer' }) })),
    );
  }

  /**
   * Everything of one event but the bulk write: stale versions are skipped, unchanged versions handled here; a delete
   * comes back as `'delete'` and a version to write with its vector records.
   */
  private async prepare(item: BatchItem, event: EmbeddedChunksEvent, record: DocumentRecord | null): Promise<Omit<Write, 'item'> | 'delete' | null> {
    const documentId = event.op === 'delete' ? event.document_id : event.document.document_id;
    const latest = record?.version ?? 0;
    const version = event.op === 'delete' ? event.version : event.document.version;
    const tenant = event.op === 'delete' ? event.tenant : event.document.tenant;
    item.span.setAttributes({ 'rag.tenant': tenant, 'rag.document_id': documentId, 'rag.version': version, 'rag.op': event.op });
    if (version < latest) {
      this.log.info('skipping a stale version', { document_id: documentId, version, latest });
      return null;
    }
    // Deletes are done together, for the whole part (deleteAll).
    if (event.op === 'delete') return 'delete';
    const doc = event.document;
    if (doc.model !== this.modelId) {
      throw new NonRetryableError(`chunks were embedded with model ${doc.model} but this index serves ${this.modelId}`);
    }
    // The active record when this version's body equals the active version's (the attributes are checked next).
    const sameBody = record && record.active_version > 0 && record.content_hash === doc.content_hash && record.active_version !== version ? record : null;
    if (sameBody && (await this.activeChunksMatch(doc, sameBody.active_version))) {
      await this.registry.markUnchanged(doc.document_id, version);
      await publishStatus(this.bus, {
        document_id: doc.document_id,
        tenant: doc.tenant,
        version,
        status: 'unchanged',
        stage: 'indexer',
        content_hash: doc.content_hash,
        chunks: sameBody.chunks,
      });
      return null;
    }
    if (sameBody) {
      this.log.info('same content with changed attributes: indexing the new version', { document_id: documentId, version, active: sameBody.active_version });
    }
    const byId = new Map(doc.chunks.map((c) => [c.chunk_id, c]));
    const records: VectorRecord[] = doc.vectors.map((v) => {
      const c = byId.get(v.chunk_id);
      if (!c) throw new NonRetryableError(`vector for unknown chunk ${v.chunk_id}`);
      let vector: Float32Array;
      try {
        vector = chunkVectorValues(v);
      } catch (e) {
        throw new NonRetryableError(`vector of chunk ${v.chunk_id}: ${e instanceof Error ? e.message : String(e)}`);
      }
      return {
        chunk_id: c.chunk_id,
        document_id: c.document_id,
        tenant: c.tenant,
        version: c.version,
        acl: c.acl,
        metadata: c.metadata,
        vector,
        chunk: c,
      };
    });
    item.span.setAttributes({ 'rag.chunks': doc.chunks.length, 'rag.vectors': records.length, 'rag.embedding.model': doc.model });
    return { doc, records, children: doc.chunks.filter((c) => c.kind === 'child').length };
  }

  /**
   * Whether the chunks the keyword index holds for the active version are, version aside, exactly the new version's
   * (one `getChunks` by id, only for a version whose body hash equals the active one's). The keyword index keeps
   * every chunk whole (children and parents) and is written together with the vector store from the same event, so
   * it stands for both. The id of one ordinal past the new chunks is asked too (ordinals are one contiguous sequence),
   * so an active version with more chunks (e.g. another chunk size since) does not pass for the same one. A store
   * that lost the active chunks makes this false, and the re-index heals it.
   */
  private async activeChunksMatch(doc: EmbeddedDocument, activeVersion: number): Promise<boolean> {
    const ids = doc.chunks.map((c) => chunkId(doc.document_id, activeVersion, c.ordinal));
    ids.push(chunkId(doc.document_id, activeVersion, doc.chunks.length));
    const stored = await this.keywords.getChunks(ids);
    return stored.length === doc.chunks.length && chunksFingerprint(stored) === chunksFingerprint(doc.chunks);
  }
}

/**
 * sha256 of everything a version's chunks expose to search and answers, with the version taken out (chunk and parent
 * ids reduced to ordinals): two versions with the same fingerprint are interchangeable in every store. Metadata keys
 * and ACL entries are sorted (an ACL is a set; metadata key order means nothing), so re-sending the same attributes in
 * another order stays a no-op. Rows are built with a fixed key order, so plain JSON.stringify is a stable form.
 */
export function chunksFingerprint(chunks: readonly Chunk[]): string {
  const rows = [...chunks]
    .sort((a, b) => a.ordinal - b.ordinal)
    .map((c) => ({
      ordinal: c.ordinal,
      kind: c.kind,
      parent: c.parent_id === null ? null : (parseChunkId(c.parent_id)?.ordinal ?? c.parent_id),
      document_id: c.document_id,
      tenant: c.tenant,
      acl: [...new Set(c.acl)].sort(),
      title: c.title,
      heading_path: c.heading_path,
      source_url: c.source_url ?? null,
      // Metadata values are flat (string, number, boolean, string[]), so sorting the keys is all a stable form needs.
      metadata: Object.entries(c.metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
      text: c.text,
      token_count: c.token_count,
      // A re-index that adds (or drops) the LLM-written context is a change, not a no-op.
      context: c.context ?? null,
    }));
  return createHash('sha256').update(JSON.stringify(rows), 'utf8').digest('hex');
}
