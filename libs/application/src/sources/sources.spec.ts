import { describe, expect, it } from 'vitest';
import type { Topic } from '@rag/contracts';
import { orderChange } from '@rag/domain';
import type {
  AcceptChange,
  AdmitOutcome,
  Bus,
  DocumentRecord,
  OutgoingMessage,
  Registry,
  SourceChange,
  SourceConnector,
  SourceDocumentState,
  SourceListing,
  SourceStateStore,
} from '@rag/ports';
import { SourceReconciler } from './reconciler';
import { SourceChangeService } from './source-change.service';

/* In-memory stand-ins for the ports (the SQLite and bus adapters are covered by their own specs and the e2e suite). */

class MemoryState implements SourceStateStore {
  events = new Map<string, 'pending' | 'done' | 'ignored'>();
  docs = new Map<string, SourceDocumentState>();
  /** Per pending event: the document and its state before the event's first admission (restored by abandon). */
  prev = new Map<string, { id: string; state: SourceDocumentState | undefined }>();
  async admit(c: SourceChange): Promise<AdmitOutcome> {
    const seen = this.events.get(c.event_id);
    if (seen && seen !== 'pending') return { outcome: 'duplicate' };
    const d = this.docs.get(c.document_id);
    const o = orderChange(d ? { changed_at: d.changed_at, deleted: d.deleted } : null, c);
    if (!o.admit) {
      this.events.set(c.event_id, 'ignored');
      return { outcome: 'stale', reason: o.reason };
    }
    if (!seen) this.prev.set(c.event_id, { id: c.document_id, state: d });
    this.events.set(c.event_id, 'pending');
    this.docs.set(c.document_id, {
      document_id: c.document_id,
      kind: c.kind,
      tenant: c.tenant,
      scope: c.scope ?? d?.scope ?? null,
      source_version: c.op === 'delete' ? (d?.source_version ?? null) : (c.source_version ?? null),
      changed_at: c.changed_at,
      deleted: c.op === 'delete',
      updated_at: '',
    });
    return { outcome: 'admitted' };
  }
  async complete(id: string) {
    this.events.set(id, 'done');
  }
  async abandon(id: string) {
    if (this.events.get(id) !== 'pending') return;
    this.events.delete(id);
    const p = this.prev.get(id)!;
    if (p.state) this.docs.set(p.id, p.state);
    else this.docs.delete(p.id);
  }
  async get(id: string) {
    return this.docs.get(id) ?? null;
  }
  async listLive(kind: string, o: { scope?: string; tenant?: string } = {}) {
    return [...this.docs.values()].filter((d) => d.kind === kind && !d.deleted && (o.scope === undefined || d.scope === o.scope));
  }
  async pruneEvents() {
    return 0;
  }
  async close() {}
}

class MemoryRegistry implements Pick<Registry, 'get' | 'accept'> {
  docs = new Map<string, DocumentRecord>();
  async get(id: string) {
    return this.docs.get(id) ?? null;
  }
  async accept(c: AcceptChange): Promise<DocumentRecord> {
    const prev = this.docs.get(c.document_id);
    const rec = {
      ...(prev ?? { document_id: c.document_id, tenant: c.tenant, title: null, active_version: 0, content_hash: null, raw_hash: null, chunks: 0, error: null, mime_type: null, source_url: null, acl: [], metadata: {}, created_at: '', updated_at: '' }),
      version: (prev?.version ?? 0) + 1,
      status: c.op === 'delete' ? ('deleted' as const) : ('queued' as const),
      ...(c.acl ? { acl: c.acl } : {}),
    };
    this.docs.set(c.document_id, rec);
    return rec;
  }
}

class RecordingBus implements Pick<Bus, 'publish'> {
  sent: OutgoingMessage[] = [];
  failNext = false;
  async publish(_t: Topic, m: OutgoingMessage[]) {
    if (this.failNext) {
      this.failNext = false;
      throw new Error('bus down');
    }
    this.sent.push(...m);
  }
}

class ListConnector implements SourceConnector {
  readonly kind = 'confluence' as const;
  pages: SourceListing[] = [];
  failAfter: number | null = null;
  onList?: () => void;
  documentId(ref: string) {
    return `confluence:acme:${ref}`;
  }
  acls = new Map<string, string[]>();
  aclFails = false;
  async fetch(): Promise<never> {
    throw new Error('not used');
  }
  async acl(ref: string): Promise<string[] | null> {
    if (this.aclFails) throw new Error('source down');
    return this.acls.get(ref) ?? ['*'];
  }
  async scopes() {
    return ['ENG'];
  }
  async *list(): AsyncIterable<SourceListing> {
    let n = 0;
    for (const p of this.pages) {
      if (this.failAfter !== null && n++ >= this.failAfter) throw new Error('listing broke');
      yield p;
    }
    this.onList?.();
  }
}

const page = (ref: string, version = '1'): SourceListing => ({ document_id: `confluence:acme:${ref}`, ref, scope: 'ENG', source_version: version, changed_at: 1 });

function setup() {
  const state = new MemoryState();
  const registry = new MemoryRegistry();
  const bus = new RecordingBus();
  const conn = new ListConnector();
  const changes = new SourceChangeService(registry as unknown as Registry, bus as unknown as Bus, state, { tenant: 'default', defaultAcl: ['*'], connectors: [conn] });
  const reconciler = new SourceReconciler([conn], state, changes, 'default');
  return { state, registry, bus, changes, conn, reconciler };
}

describe('SourceReconciler', () => {
  it('imports new pages, re-fetches changed versions, prunes pages gone at the source', async () => {
    const { bus, conn, reconciler } = setup();
    conn.pages = [page('1'), page('2')];
    expect((await reconciler.runOnce())[0]).toMatchObject({ listed: 2, upserts: 2, deletes: 0 });
    conn.pages = [page('1', '2')];
    expect((await reconciler.runOnce())[0]).toMatchObject({ listed: 1, upserts: 1, deletes: 1 });
    expect(bus.sent.map((m) => [m.key, (m.value as { op: string }).op])).toEqual([
      ['confluence:acme:1', 'upsert'],
      ['confluence:acme:2', 'upsert'],
      ['confluence:acme:1', 'upsert'],
      ['confluence:acme:2', 'delete'],
    ]);
    expect((await reconciler.runOnce())[0]).toMatchObject({ upserts: 0, deletes: 0 });
  });

  it('prunes nothing when the listing fails part-way', async () => {
    const { conn, reconciler, bus } = setup();
    conn.pages = [page('1'), page('2'), page('3')];
    await reconciler.runOnce();
    const before = bus.sent.length;
    conn.failAfter = 1;
    const r = (await reconciler.runOnce())[0]!;
    expect(r.error).toContain('listing broke');
    expect(r.deletes).toBe(0);
    expect(bus.sent.length).toBe(before);
  });

  it('never prunes a page admitted while the listing ran', async () => {
    const { conn, reconciler, changes } = setup();
    conn.pages = [];
    conn.onList = () =>
      void changes.apply({ event_id: 'hook-1', kind: 'confluence', document_id: 'confluence:acme:9', ref: '9', op: 'upsert', changed_at: Date.now() + 1000, scope: 'ENG' });
    await reconciler.runOnce();
    conn.onList = undefined;
    await new Promise((r) => setTimeout(r, 10));
    const r = (await reconciler.runOnce())[0]!;
    expect(r.deletes).toBe(0);
  });
});

describe('SourceChangeService', () => {
  it('undoes an admission whose message could not be queued, so the redelivery is processed', async () => {
    const { changes, bus } = setup();
    const req = { event_id: 'e', kind: 'confluence' as const, document_id: 'confluence:acme:5', ref: '5', op: 'upsert' as const, changed_at: 10 };
    bus.failNext = true;
    await expect(changes.apply(req)).rejects.toThrow('bus down');
    expect(await changes.apply(req)).toMatchObject({ status: 'queued' });
    expect(await changes.apply(req)).toMatchObject({ status: 'duplicate' });
    expect(bus.sent).toHaveLength(1);
  });

  it('a delete of a document never indexed queues nothing but keeps the tombstone', async () => {
    const { changes, bus } = setup();
    expect(await changes.apply({ event_id: 'd', kind: 'confluence', document_id: 'confluence:acme:7', ref: '7', op: 'delete', changed_at: 20 })).toMatchObject({ status: 'ignored' });
    expect(await changes.apply({ event_id: 'u', kind: 'confluence', document_id: 'confluence:acme:7', ref: '7', op: 'upsert', changed_at: 19 })).toMatchObject({ status: 'ignored' });
    expect(bus.sent).toHaveLength(0);
  });

  it('records the ACL the connector computes in the registry and the queued event (a restriction change alone included)', async () => {
    const { changes, bus, registry, conn } = setup();
    const req = (id: string, at: number) => ({ event_id: id, kind: 'confluence' as const, document_id: 'confluence:acme:8', ref: '8', op: 'upsert' as const, changed_at: at, source_version: '3' });
    expect(await changes.apply(req('a', 10))).toMatchObject({ status: 'queued', version: 1 });
    expect((await registry.get('confluence:acme:8'))?.acl).toEqual(['*']);
    conn.acls.set('8', ['group:hr', 'user:557058:aa']); // restricted; the page's version did not change
    expect(await changes.apply(req('b', 20))).toMatchObject({ status: 'queued', version: 2 });
    expect((await registry.get('confluence:acme:8'))?.acl).toEqual(['group:hr', 'user:557058:aa']);
    expect((bus.sent.at(-1)?.value as { acl: string[] }).acl).toEqual(['group:hr', 'user:557058:aa']);
  });

  it('a source that does not answer the ACL lookup still gets the change queued, with the ACL known before', async () => {
    const { changes, bus, registry, conn } = setup();
    conn.acls.set('4', ['group:eng']);
    await changes.apply({ event_id: 'x', kind: 'confluence', document_id: 'confluence:acme:4', ref: '4', op: 'upsert', changed_at: 1 });
    conn.aclFails = true;
    expect(await changes.apply({ event_id: 'y', kind: 'confluence', document_id: 'confluence:acme:4', ref: '4', op: 'upsert', changed_at: 2 })).toMatchObject({ status: 'queued' });
    expect((await registry.get('confluence:acme:4'))?.acl).toEqual(['group:eng']);
    expect((bus.sent.at(-1)?.value as { acl: string[] }).acl).toEqual(['group:eng']);
  });

  it('an update at the same source time as a delete is queued (a delete does not win the tie)', async () => {
    const { changes, bus } = setup();
    const base = { kind: 'confluence' as const, document_id: 'confluence:acme:6', ref: '6' };
    await changes.apply({ ...base, event_id: 'c', op: 'upsert', changed_at: 100 });
    expect(await changes.apply({ ...base, event_id: 'forged-delete', op: 'delete', changed_at: 200 })).toMatchObject({ status: 'queued', op: 'delete' });
    expect(await changes.apply({ ...base, event_id: 'real-update', op: 'upsert', changed_at: 200 })).toMatchObject({ status: 'queued', op: 'upsert' });
    expect(bus.sent.map((m) => (m.value as { op: string }).op)).toEqual(['upsert', 'delete', 'upsert']);
  });
});
