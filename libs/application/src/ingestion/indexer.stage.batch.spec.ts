import { describe, expect, it } from 'vitest';
import { chunkId, Topic, type Chunk, type EmbeddedChunksEvent, type IndexEvent } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import { NonRetryableError, type Bus, type BusMessage, type DocumentDelete, type DocumentRecord, type KeywordIndex, type OutgoingMessage, type Registry, type VectorRecord, type VectorStore } from '@rag/ports';
import { distinctParts } from './batch';
import { IndexerStage } from './indexer.stage';

setLogLevel('silent');

/*
 * The indexer's batch path (bulk ingestion): many documents per call, one bulk write per store, one registry call,
 * and a message that fails alone does not hold back the others. In-memory stand-ins record the calls; the real
 * stores' bulk paths are covered by test/infra/{milvus,opensearch}.infra.spec.ts.
 */

const MODEL = 'test-model';

class Vectors implements Pick<VectorStore, 'upsert' | 'flush' | 'deleteDocument'> {
  records = new Map<string, VectorRecord>();
  upserts: number[] = [];
  failNext = 0;
  async upsert(records: VectorRecord[]) {
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error('milvus unavailable'), { code: 'unavailable' });
    }
    this.upserts.push(records.length);
    for (const r of records) this.records.set(r.chunk_id, r);
  }
  async flush() {}
  async deleteDocument(documentId: string, keepVersion?: number) {
    let n = 0;
    for (const [id, r] of this.records) if (r.document_id === documentId && r.version !== keepVersion && this.records.delete(id)) n++;
    return n;
  }
}

class Keywords implements Pick<KeywordIndex, 'upsert' | 'getChunks' | 'deleteDocument'> {
  chunks = new Map<string, Chunk>();
  upserts: number[] = [];
  async upsert(chunks: Chunk[]) {
    this.upserts.push(chunks.length);
    for (const c of chunks) this.chunks.set(c.chunk_id, c);
  }
  async getChunks(ids: string[]) {
    return ids.map((id) => this.chunks.get(id)).filter((c): c is Chunk => c !== undefined);
  }
  async deleteDocument(documentId: string, keepVersion?: number) {
    let n = 0;
    for (const [id, c] of this.chunks) if (c.document_id === documentId && c.version !== keepVersion && this.chunks.delete(id)) n++;
    return n;
  }
}

/** Several documents, with the sqlite registry's version rules; counts the calls the indexer makes. */
class Documents implements Pick<Registry, 'get' | 'getMany' | 'markIndexed' | 'markIndexedMany' | 'markUnchanged' | 'markDeleted'> {
  recs = new Map<string, DocumentRecord>();
  calls: string[] = [];
  accept(id: string): number {
    const prev = this.recs.get(id);
    const base: DocumentRecord = {
      document_id: id, tenant: 't', title: null, status: 'queued', version: 0, active_version: 0, content_hash: null, raw_hash: null,
      chunks: 0, error: null, mime_type: null, source_url: null, acl: [], metadata: {}, created_at: '', updated_at: '',
    };
    const rec = { ...(prev ?? base), version: (prev?.version ?? 0) + 1, status: 'queued' as const };
    this.recs.set(id, rec);
    return rec.version;
  }
  async get(id: string) {
    this.calls.push('get');
    return this.recs.get(id) ?? null;
  }
  async getMany(ids: string[]) {
    this.calls.push(`getMany(${ids.length})`);
    return new Map(ids.filter((id) => this.recs.has(id)).map((id) => [id, { ...this.recs.get(id)! }]));
  }
  async markIndexed(id: string, version: number, contentHash: string, chunks: number) {
    this.calls.push('markIndexed');
    const r = this.recs.get(id);
    if (r && r.version === version) this.recs.set(id, { ...r, status: 'indexed', active_version: version, content_hash: contentHash, chunks });
  }
  async markIndexedMany(items: { documentId: string; version: number; contentHash: string; chunks: number }[]) {
    this.calls.push(`markIndexedMany(${items.length})`);
    for (const i of items) {
      const r = this.recs.get(i.documentId);
      if (r && r.version === i.version) this.recs.set(i.documentId, { ...r, status: 'indexed', active_version: i.version, content_hash: i.contentHash, chunks: i.chunks });
    }
  }
  async markUnchanged() {
    this.calls.push('markUnchanged');
  }
  async markDeleted(id: string, version: number) {
    this.calls.push('markDeleted');
    const r = this.recs.get(id);
    if (r && r.version === version) this.recs.set(id, { ...r, status: 'deleted', active_version: 0 });
  }
}

/** Stand-ins with the bulk delete the Milvus and OpenSearch/Elasticsearch stores have (deleteDocuments). */
class BulkVectors extends Vectors {
  bulkDeletes: DocumentDelete[][] = [];
  failDeletes = 0;
  async deleteDocuments(documents: DocumentDelete[]) {
    if (this.failDeletes > 0) {
      this.failDeletes--;
      throw Object.assign(new Error('milvus unavailable'), { code: 'unavailable' });
    }
    this.bulkDeletes.push(documents);
    let n = 0;
    for (const d of documents) n += await this.deleteDocument(d.documentId, d.keepVersion);
    return n;
  }
}
class BulkKeywords extends Keywords {
  bulkDeletes: DocumentDelete[][] = [];
  async deleteDocuments(documents: DocumentDelete[]) {
    this.bulkDeletes.push(documents);
    let n = 0;
    for (const d of documents) n += await this.deleteDocument(d.documentId, d.keepVersion);
    return n;
  }
}

class CaptureBus implements Pick<Bus, 'publish'> {
  events: IndexEvent[] = [];
  publishes = 0;
  async publish(_topic: unknown, messages: OutgoingMessage[]) {
    this.publishes++;
    for (const m of messages) this.events.push(m.value as IndexEvent);
  }
}

function upsert(id: string, version: number, children = 2, hash = 'a'.repeat(64)): BusMessage {
  const common = { document_id: id, tenant: 't', version, acl: ['*'], title: id, heading_path: [], metadata: {} };
  const parent = chunkId(id, version, 0);
  const chunks: Chunk[] = [{ ...common, chunk_id: parent, ordinal: 0, kind: 'parent', parent_id: null, text: 'all', token_count: 1 }];
  for (let i = 1; i <= children; i++) chunks.push({ ...common, chunk_id: chunkId(id, version, i), ordinal: i, kind: 'child', parent_id: parent, text: `${id} part ${i}`, token_count: 3 });
  const value: EmbeddedChunksEvent = {
    event_id: `${id}-${version}`,
    op: 'upsert',
    document: {
      document_id: id, tenant: 't', version, content_hash: hash, title: id, chunks, model: MODEL, dim: 2,
      vectors: chunks.filter((c) => c.kind === 'child').map((c) => ({ chunk_id: c.chunk_id, vector: [1, 0] })),
    },
  };
  return { topic: Topic.ChunksEmbedded, partition: 0, offset: version, key: id, value, headers: {}, attempt: 1 };
}

function setup() {
  const bus = new CaptureBus();
  const registry = new Documents();
  const vectors = new Vectors();
  const keywords = new Keywords();
  const indexer = new IndexerStage(bus as unknown as Bus, registry as unknown as Registry, vectors as unknown as VectorStore, keywords as unknown as KeywordIndex, MODEL);
  return { bus, registry, vectors, keywords, indexer };
}

describe('IndexerStage batch path (bulk ingestion)', () => {
  it('writes a batch of documents with one upsert per store and one registry call, then one status per document', async () => {
    const { bus, registry, vectors, keywords, indexer } = setup();
    const msgs = ['a', 'b', 'c'].map((id, i) => upsert(id, registry.accept(id), i + 1));
    expect(await indexer.handleBatch(msgs)).toEqual([undefined, undefined, undefined]);
    expect(vectors.upserts).toEqual([1 + 2 + 3]);
    expect(keywords.upserts).toEqual([2 + 3 + 4]);
    expect(registry.calls).toEqual(['getMany(3)', 'markIndexedMany(3)']);
    expect(bus.events.map((e) => [e.document_id, e.status, e.chunks])).toEqual([
      ['a', 'indexed', 1],
      ['b', 'indexed', 2],
      ['c', 'indexed', 3],
    ]);
    expect([...registry.recs.values()].map((r) => r.active_version)).toEqual([1, 1, 1]);
  });

  it('fails an invalid message and a wrong-model one alone (non-retryable) and indexes the rest', async () => {
    const { bus, registry, vectors, indexer } = setup();
    const good = upsert('a', registry.accept('a'));
    const invalid: BusMessage = { ...good, key: 'x', value: { op: 'upsert', document: { document_id: 'x' } } };
    const wrong = upsert('w', registry.accept('w'));
    (wrong.value as Extract<EmbeddedChunksEvent, { op: 'upsert' }>).document.model = 'other-model';
    const good2 = upsert('b', registry.accept('b'));
    const out = await indexer.handleBatch([good, invalid, wrong, good2]);
    expect(out[0]).toBeUndefined();
    expect(out[1]).toBeInstanceOf(NonRetryableError);
    expect(out[1]!.message).toMatch(/invalid embedded chunks event/);
    expect(out[2]).toBeInstanceOf(NonRetryableError);
    expect(out[2]!.message).toMatch(/other-model/);
    expect(out[3]).toBeUndefined();
    expect(vectors.upserts).toEqual([4]);
    expect(bus.events.map((e) => e.document_id)).toEqual(['a', 'b']);
  });

  it('fails every document of a failed bulk write (retryable, delivered again alone) and switches no active version', async () => {
    const { bus, registry, vectors, indexer } = setup();
    const msgs = ['a', 'b'].map((id) => upsert(id, registry.accept(id)));
    vectors.failNext = 1;
    const out = await indexer.handleBatch(msgs);
    expect(out.map((e) => e?.message)).toEqual(['milvus unavailable', 'milvus unavailable']);
    expect(out.every((e) => !(e instanceof NonRetryableError))).toBe(true);
    expect(registry.calls).toEqual(['getMany(2)']);
    expect(bus.events).toEqual([]);
    // The bus's single redelivery of each then succeeds.
    for (const m of msgs) await indexer.handle(m);
    expect([...registry.recs.values()].map((r) => r.status)).toEqual(['indexed', 'indexed']);
  });

  it('handles a delete, a stale version and upserts in one batch, and a redelivered batch changes nothing', async () => {
    const { bus, registry, vectors, keywords, indexer } = setup();
    await indexer.handle(upsert('gone', registry.accept('gone')));
    const delVersion = registry.accept('gone');
    const del: BusMessage = { topic: Topic.ChunksEmbedded, partition: 0, offset: 9, key: 'gone', value: { event_id: 'd', op: 'delete', document_id: 'gone', tenant: 't', version: delVersion }, headers: {}, attempt: 1 };
    const staleV = registry.accept('s');
    registry.accept('s'); // a newer version was accepted since
    const msgs = [upsert('a', registry.accept('a')), del, upsert('s', staleV)];
    expect(await indexer.handleBatch(msgs)).toEqual([undefined, undefined, undefined]);
    expect(registry.recs.get('gone')!.status).toBe('deleted');
    expect(registry.recs.get('s')!.status).toBe('queued');
    expect([...vectors.records.keys()].every((id) => id.startsWith('a#'))).toBe(true);
    const chunks = keywords.chunks.size;
    const before = bus.events.length;
    expect(await indexer.handleBatch(msgs)).toEqual([undefined, undefined, undefined]);
    expect(keywords.chunks.size).toBe(chunks);
    expect(vectors.records.size).toBe(2);
    // 'a' is indexed again (same chunk ids: no duplicate); the delete is re-applied. The writes and the deletes of a
    // batch run side by side (distinct documents), so only the per-document order is kept: compared sorted.
    expect(bus.events.slice(before).map((e) => [e.document_id, e.status]).sort()).toEqual([
      ['a', 'indexed'],
      ['gone', 'deleted'],
    ]);
  });

  /** An indexer over stores with bulk deletes, and a delete message of the next version of a document. */
  const bulkIndexer = () => {
    const bus = new CaptureBus();
    const registry = new Documents();
    const vectors = new BulkVectors();
    const keywords = new BulkKeywords();
    const indexer = new IndexerStage(bus as unknown as Bus, registry as unknown as Registry, vectors as unknown as VectorStore, keywords as unknown as KeywordIndex, MODEL);
    const del = (id: string, offset: number): BusMessage => ({ topic: Topic.ChunksEmbedded, partition: 0, offset, key: id, value: { event_id: `del-${id}`, op: 'delete', document_id: id, tenant: 't', version: registry.accept(id) }, headers: {}, attempt: 1 });
    return { bus, registry, vectors, keywords, indexer, del };
  };

  it('deletes a batch of documents and the older versions of replaced ones with one delete request per store', async () => {
    const { bus, registry, vectors, keywords, indexer, del: delAt } = bulkIndexer();
    const ids = ['d1', 'd2', 'd3', 'r1', 'r2'];
    // v1 of every document, then (second batch) deletes of d*, new versions of r* (with another body).
    expect(await indexer.handleBatch(ids.map((id) => upsert(id, registry.accept(id))))).toEqual(ids.map(() => undefined));
    expect(vectors.bulkDeletes).toEqual([]); // version 1 replaces nothing
    const del = (id: string) => delAt(id, 20);
    const second = [del('d1'), upsert('r1', registry.accept('r1'), 2, 'b'.repeat(64)), del('d2'), del('d3'), upsert('r2', registry.accept('r2'), 1, 'c'.repeat(64))];
    const before = bus.events.length;
    expect(await indexer.handleBatch(second)).toEqual(second.map(() => undefined));
    const sorted = (calls: DocumentDelete[][]) => calls.map((c) => [...c].sort((a, b) => (a.documentId < b.documentId ? -1 : 1))).sort((a, b) => a.length - b.length);
    const expected = [
      [{ documentId: 'r1', keepVersion: 2 }, { documentId: 'r2', keepVersion: 2 }],
      [{ documentId: 'd1' }, { documentId: 'd2' }, { documentId: 'd3' }],
    ];
    expect(sorted(vectors.bulkDeletes)).toEqual(expected);
    expect(sorted(keywords.bulkDeletes)).toEqual(expected);
    expect([...vectors.records.values()].map((r) => `${r.document_id}@${r.version}`).sort()).toEqual(['r1@2', 'r1@2', 'r2@2']);
    expect([...keywords.chunks.values()].map((c) => `${c.document_id}@${c.version}`).sort()).toEqual(['r1@2', 'r1@2', 'r1@2', 'r2@2', 'r2@2']);
    expect(ids.map((id) => registry.recs.get(id)!.status)).toEqual(['deleted', 'deleted', 'deleted', 'indexed', 'indexed']);
    // One status per document; per-document order only (writes and deletes of a batch run side by side).
    expect(bus.events.slice(before).map((e) => `${e.document_id}:${e.status}`).sort()).toEqual(['d1:deleted', 'd2:deleted', 'd3:deleted', 'r1:indexed', 'r2:indexed']);
  });

  it('a failed bulk delete fails only the deletes of the batch; delivered again alone, each is deleted once', async () => {
    const { bus, registry, vectors, keywords, indexer, del: delAt } = bulkIndexer();
    await indexer.handleBatch(['d1', 'd2'].map((id) => upsert(id, registry.accept(id))));
    const del = (id: string) => delAt(id, 30);
    const msgs = [del('d1'), upsert('n1', registry.accept('n1')), del('d2')];
    vectors.failDeletes = 1;
    const out = await indexer.handleBatch(msgs);
    expect(out.map((e) => e?.message)).toEqual(['milvus unavailable', undefined, 'milvus unavailable']);
    expect(registry.recs.get('n1')!.status).toBe('indexed');
    expect(['d1', 'd2'].map((id) => registry.recs.get(id)!.status)).toEqual(['queued', 'queued']); // accepted, not marked deleted
    for (const m of [msgs[0]!, msgs[2]!]) await indexer.handle(m);
    expect(['d1', 'd2'].map((id) => registry.recs.get(id)!.status)).toEqual(['deleted', 'deleted']);
    expect([...vectors.records.values()].every((r) => r.document_id === 'n1')).toBe(true);
    expect([...keywords.chunks.values()].every((c) => c.document_id === 'n1')).toBe(true);
    expect(bus.events.filter((e) => e.status === 'deleted').map((e) => e.document_id).sort()).toEqual(['d1', 'd2']);
  });

  it('runs two versions of one document in one batch one after the other (the newer ends active)', async () => {
    const { registry, vectors, indexer } = setup();
    const v1 = registry.accept('a');
    const m1 = upsert('a', v1, 2, '1'.repeat(64));
    const v2 = registry.accept('a');
    const m2 = upsert('a', v2, 3, '2'.repeat(64));
    // v1 is stale by the time it is seen (v2 was accepted): skipped; v2 is written.
    expect(await indexer.handleBatch([m1, upsert('b', registry.accept('b')), m2])).toEqual([undefined, undefined, undefined]);
    expect(registry.recs.get('a')!.active_version).toBe(v2);
    expect([...vectors.records.values()].filter((r) => r.document_id === 'a').map((r) => r.version)).toEqual([v2, v2, v2]);
  });
});

describe('distinctParts', () => {
  it('keeps each id once per part and the order of an id across parts', () => {
    const parts = distinctParts(['a1', 'b1', 'a2', 'c1', 'a3', 'b2'], (s) => s[0]!);
    expect(parts).toEqual([['a1', 'b1', 'c1'], ['a2', 'b2'], ['a3']]);
  });
  it('is one part when the ids are distinct', () => {
    expect(distinctParts([1, 2, 3], String)).toEqual([[1, 2, 3]]);
  });
});
