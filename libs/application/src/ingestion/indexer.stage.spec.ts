import { describe, expect, it } from 'vitest';
import { chunkId, Topic, type Chunk, type EmbeddedChunksEvent, type IndexEvent, type Metadata } from '@rag/contracts';
import { setLogLevel } from '@rag/platform';
import type { Bus, BusMessage, DocumentRecord, KeywordIndex, OutgoingMessage, Registry, VectorRecord, VectorStore } from '@rag/ports';
import { chunksFingerprint, IndexerStage } from './indexer.stage';

setLogLevel('silent');

/* In-memory stand-ins for the ports the indexer uses (the real stores are covered by their own specs and the e2e suites). */

class MemoryKeywords implements Pick<KeywordIndex, 'upsert' | 'getChunks' | 'deleteDocument'> {
  chunks = new Map<string, Chunk>();
  upserts = 0;
  async upsert(chunks: Chunk[]) {
    this.upserts++;
    for (const c of chunks) this.chunks.set(c.chunk_id, structuredClone(c));
  }
  async getChunks(ids: string[]) {
    return ids.map((id) => this.chunks.get(id)).filter((c): c is Chunk => c !== undefined);
  }
  async deleteDocument(documentId: string, keepVersion?: number) {
    let n = 0;
    for (const [id, c] of this.chunks) {
      if (c.document_id === documentId && c.version !== keepVersion) {
        this.chunks.delete(id);
        n++;
      }
    }
    return n;
  }
}

class MemoryVectors implements Pick<VectorStore, 'upsert' | 'flush' | 'deleteDocument'> {
  records = new Map<string, VectorRecord>();
  async upsert(records: VectorRecord[]) {
    for (const r of records) this.records.set(r.chunk_id, r);
  }
  async flush() {}
  async deleteDocument(documentId: string, keepVersion?: number) {
    let n = 0;
    for (const [id, r] of this.records) {
      if (r.document_id === documentId && r.version !== keepVersion) {
        this.records.delete(id);
        n++;
      }
    }
    return n;
  }
}

/** Just the registry calls the indexer makes, with the sqlite registry's version rules. */
class MemoryRegistry implements Pick<Registry, 'get' | 'markIndexed' | 'markUnchanged'> {
  rec: DocumentRecord | null = null;
  async get() {
    return this.rec ? { ...this.rec } : null;
  }
  /** Accepts the next version, as the gateway does before the pipeline runs. */
  accept(id: string): number {
    const base: DocumentRecord = {
      document_id: id, tenant: 't', title: null, status: 'queued', version: 0, active_version: 0, content_hash: null, raw_hash: null,
      chunks: 0, error: null, mime_type: null, source_url: null, acl: [], metadata: {}, created_at: '', updated_at: '',
    };
    this.rec = { ...(this.rec ?? base), version: (this.rec?.version ?? 0) + 1, status: 'queued' };
    return this.rec.version;
  }
  async markIndexed(_id: string, version: number, contentHash: string, chunks: number) {
    if (this.rec && this.rec.version === version) this.rec = { ...this.rec, status: 'indexed', active_version: version, content_hash: contentHash, chunks };
  }
  async markUnchanged(_id: string, version: number) {
    if (this.rec && this.rec.version === version) this.rec = { ...this.rec, status: 'indexed' };
  }
}

class CaptureBus implements Pick<Bus, 'publish'> {
  events: IndexEvent[] = [];
  async publish(_topic: unknown, messages: OutgoingMessage[]) {
    for (const m of messages) this.events.push(m.value as IndexEvent);
  }
}

const ID = 'doc-1';
const HASH = 'a'.repeat(64);
const MODEL = 'test-model';

interface Attrs {
  acl: string[];
  title: string;
  metadata: Metadata;
  source_url?: string;
}
const BASE: Attrs = { acl: ['*'], title: 'Bonus plan', metadata: { dept: 'finance', year: 2025 }, source_url: 'https://wiki.example/bonus' };

/** One parent and `children` children, as the chunker makes them (one contiguous ordinal sequence). */
function chunksOf(version: number, a: Attrs, children = 2): Chunk[] {
  const common = { document_id: ID, tenant: 't', version, acl: a.acl, title: a.title, heading_path: ['Plan'], metadata: a.metadata, ...(a.source_url ? { source_url: a.source_url } : {}) };
  const parentId = chunkId(ID, version, 0);
  const out: Chunk[] = [{ ...common, chunk_id: parentId, ordinal: 0, kind: 'parent', parent_id: null, text: 'whole section', token_count: 2 }];
  for (let i = 1; i <= children; i++) {
    out.push({ ...common, chunk_id: chunkId(ID, version, i), ordinal: i, kind: 'child', parent_id: parentId, text: `part ${i}`, token_count: 2 });
  }
  return out;
}

function eventOf(version: number, a: Attrs, children = 2): BusMessage {
  const chunks = chunksOf(version, a, children);
  const value: EmbeddedChunksEvent = {
    event_id: `e${version}`,
    op: 'upsert',
    document: {
      document_id: ID, tenant: 't', version, content_hash: HASH, title: a.title, chunks, model: MODEL, dim: 2,
      vectors: chunks.filter((c) => c.kind === 'child').map((c) => ({ chunk_id: c.chunk_id, vector: [1, 0] })),
    },
  };
  return { topic: Topic.ChunksEmbedded, partition: 0, offset: version, key: ID, value, headers: {}, attempt: 1 };
}

function setup() {
  const bus = new CaptureBus();
  const registry = new MemoryRegistry();
  const vectors = new MemoryVectors();
  const keywords = new MemoryKeywords();
  const indexer = new IndexerStage(bus as unknown as Bus, registry as unknown as Registry, vectors as unknown as VectorStore, keywords as unknown as KeywordIndex, MODEL);
  /** Accepts the next version with these attributes and runs the indexer on it; returns the status it published. */
  const send = async (a: Attrs, children = 2) => {
    const version = registry.accept(ID);
    await indexer.handle(eventOf(version, a, children));
    return { version, status: bus.events.at(-1)!.status };
  };
  const stored = () => [...keywords.chunks.values()];
  return { registry, vectors, keywords, send, stored };
}

describe('IndexerStage: same body, changed attributes', () => {
  it('keeps the active version when body and attributes are the same (ACL order and metadata key order do not count)', async () => {
    const s = setup();
    expect(await s.send(BASE)).toEqual({ version: 1, status: 'indexed' });
    const upserts = s.keywords.upserts;
    expect(await s.send({ ...BASE, acl: ['*', '*'], metadata: { year: 2025, dept: 'finance' } })).toEqual({ version: 2, status: 'unchanged' });
    expect(s.keywords.upserts).toBe(upserts);
    expect(s.registry.rec).toMatchObject({ version: 2, active_version: 1, status: 'indexed' });
    expect(s.stored().every((c) => c.version === 1)).toBe(true);
  });

  it.each<[string, Partial<Attrs>]>([
    ['a narrowed ACL', { acl: ['group:hr'] }],
    ['a widened ACL', { acl: ['*', 'user:bob'] }],
    ['a new title', { title: 'Bonus plan FY25' }],
    ['a changed metadata value', { metadata: { dept: 'people', year: 2025 } }],
    ['an added metadata key', { metadata: { ...BASE.metadata, secret: true } }],
    ['a changed source url', { source_url: 'https://wiki.example/bonus-v2' }],
    ['a removed source url', { source_url: undefined }],
  ])('indexes %s as the new version in both stores and drops the old one', async (_name, change) => {
    const s = setup();
    await s.send(BASE);
    const next = { ...BASE, ...change };
    expect(await s.send(next)).toEqual({ version: 2, status: 'indexed' });
    expect(s.registry.rec).toMatchObject({ version: 2, active_version: 2, content_hash: HASH, chunks: 2 });
    const want = chunksOf(2, next);
    expect(s.stored().sort((a, b) => a.ordinal - b.ordinal)).toEqual(want);
    const vectors = [...s.vectors.records.values()];
    expect(vectors.map((r) => r.chunk_id).sort()).toEqual([chunkId(ID, 2, 1), chunkId(ID, 2, 2)]);
    for (const r of vectors) expect({ acl: r.acl, metadata: r.metadata, title: r.chunk?.title }).toEqual({ acl: next.acl, metadata: next.metadata, title: next.title });
  });

  it('re-indexes when the active version has more or fewer chunks than the new one', async () => {
    const s = setup();
    await s.send(BASE, 3);
    expect(await s.send(BASE, 2)).toEqual({ version: 2, status: 'indexed' });
    expect(s.stored()).toHaveLength(3);
    expect(await s.send(BASE, 3)).toEqual({ version: 3, status: 'indexed' });
    expect(s.stored()).toHaveLength(4);
    expect(await s.send(BASE, 3)).toEqual({ version: 4, status: 'unchanged' });
  });

  it('re-indexes when the keyword index no longer holds the active chunks (the re-index heals it)', async () => {
    const s = setup();
    await s.send(BASE);
    s.keywords.chunks.clear();
    expect(await s.send(BASE)).toEqual({ version: 2, status: 'indexed' });
    expect(s.stored().map((c) => c.chunk_id).sort()).toEqual([0, 1, 2].map((o) => chunkId(ID, 2, o)));
  });
});

describe('chunksFingerprint', () => {
  it('ignores the version (chunk and parent ids) and chunk order, and sees every attribute', () => {
    const v1 = chunksFingerprint(chunksOf(1, BASE));
    expect(chunksFingerprint(chunksOf(7, BASE).reverse())).toBe(v1);
    const changed: Chunk[][] = [
      chunksOf(1, { ...BASE, acl: ['group:hr'] }),
      chunksOf(1, { ...BASE, title: 'Other' }),
      chunksOf(1, { ...BASE, metadata: { dept: 'finance', year: 2026 } }),
      chunksOf(1, { ...BASE, metadata: { dept: 'finance', year: '2025' } }),
      chunksOf(1, { ...BASE, source_url: undefined }),
      chunksOf(1, BASE).map((c) => (c.kind === 'child' ? { ...c, heading_path: ['Plan', 'Sub'] } : c)),
      chunksOf(1, BASE).map((c) => (c.ordinal === 2 ? { ...c, text: 'part two' } : c)),
      chunksOf(1, BASE).map((c) => (c.ordinal === 2 ? { ...c, parent_id: null } : c)),
    ];
    for (const c of changed) expect(chunksFingerprint(c)).not.toBe(v1);
  });
});
