/**
 * DocumentService over the real SQLite registry (hence here, not beside the service: application code may not import
 * adapters): tenant-scoped document ids and atomic submission through the transactional outbox.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SqliteRegistry, SqliteSourceStateStore } from '@rag/adapters';
import { DocumentService, SourceChangeService } from '@rag/application';
import { RecordingBus } from '../fakes/recording-bus';

describe('DocumentService', () => {
  let dir: string;
  let registry: SqliteRegistry;
  let bus: RecordingBus;
  let docs: DocumentService;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'document-service-'));
    registry = new SqliteRegistry({ dir, synchronous: 'NORMAL' });
    bus = new RecordingBus();
    docs = new DocumentService(registry, bus, 1024 * 1024);
  });
  afterEach(async () => {
    await docs.stopRelay();
    await registry.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('document ids are scoped by tenant', () => {
    it('gives another tenant’s id to a tenant as a free, independent id (no conflict, no oracle)', async () => {
      const a = await docs.submit({ id: 'shared', text: 'acme text', title: 'A' }, 'acme');
      const b = await docs.submit({ id: 'shared', text: 'beta text', title: 'B' }, 'beta');
      expect(a).toMatchObject({ ok: true, value: { document_id: 'shared', version: 1, status: 'queued' } });
      expect(b).toMatchObject({ ok: true, value: { document_id: 'shared', version: 1, status: 'queued' } });
      expect(await docs.get('shared', 'acme')).toMatchObject({ document_id: 'shared', tenant: 'acme', title: 'A', version: 1 });
      expect(await docs.get('shared', 'beta')).toMatchObject({ document_id: 'shared', tenant: 'beta', title: 'B', version: 1 });
      // Inside: two records, two event keys, never one id for two tenants.
      expect((await registry.get('acme#shared'))?.tenant).toBe('acme');
      expect((await registry.get('beta#shared'))?.tenant).toBe('beta');
      expect(bus.published.map((m) => [m.key, m.value.document_id, m.value.tenant])).toEqual([
        ['acme#shared', 'acme#shared', 'acme'],
        ['beta#shared', 'beta#shared', 'beta'],
      ]);
      // Deleting one leaves the other alone; listing shows each tenant its own, by external id.
      expect(await docs.delete('shared', 'beta')).toMatchObject({ ok: true, value: { document_id: 'shared', version: 2 } });
      expect((await registry.get('acme#shared'))?.version).toBe(1);
      expect((await docs.list({ tenant: 'acme', limit: 10, offset: 0 })).map((d) => d.document_id)).toEqual(['shared']);
    });

    it('keeps the default tenant’s ids as they are', async () => {
      await docs.submit({ id: 'plain', text: 'x' }, 'default');
      expect((await registry.get('plain'))?.tenant).toBe('default');
      expect(await docs.get('plain', 'default')).toMatchObject({ document_id: 'plain' });
      expect(await docs.get('plain', 'acme')).toBeNull();
    });

    it('answers an id of another tenant like an unknown one on get and delete', async () => {
      await docs.submit({ id: 'mine', text: 'x' }, 'acme');
      expect(await docs.get('mine', 'beta')).toBeNull();
      const del = await docs.delete('mine', 'beta');
      expect(del.ok ? null : del.error).toMatchObject({ code: 'not_found', message: 'document mine not found' });
      const unknown = await docs.delete('never-was', 'beta');
      expect(unknown.ok ? null : unknown.error.message).toBe('document never-was not found');
      // A qualified internal id is not an external id: it names nothing.
      expect(await docs.get('acme#mine', 'acme')).toBeNull();
      expect(await docs.get('acme#mine', 'default')).toBeNull();
    });

    it('still finds a record stored under its plain id before ids were scoped, for its own tenant only', async () => {
      await registry.accept({ document_id: 'legacy', tenant: 'acme', op: 'upsert', raw_hash: 'old' });
      expect(await docs.get('legacy', 'acme')).toMatchObject({ document_id: 'legacy', tenant: 'acme' });
      // An update goes to that record (no duplicate under the qualified id).
      const up = await docs.submit({ id: 'legacy', text: 'new' }, 'acme');
      expect(up).toMatchObject({ ok: true, value: { document_id: 'legacy', version: 2 } });
      expect(await registry.get('acme#legacy')).toBeNull();
      expect(bus.published.at(-1)?.key).toBe('legacy');
      // Another tenant does not see it and gets its own document under the same external id.
      expect(await docs.get('legacy', 'beta')).toBeNull();
      expect(await docs.submit({ id: 'legacy', text: 'beta' }, 'beta')).toMatchObject({ ok: true, value: { version: 1 } });
      expect((await registry.get('legacy'))?.version).toBe(2);
    });

    it('source connectors produce the internal id of their configured tenant, visible under the page’s id', async () => {
      const state = new SqliteSourceStateStore({ dir, synchronous: 'NORMAL' });
      try {
        const sources = new SourceChangeService(registry, bus, state, { tenant: 'acme', defaultAcl: ['*'] });
        const r = await sources.apply({ event_id: 'e1', kind: 'confluence', document_id: 'confluence:acme.example:42', ref: '42', op: 'upsert', changed_at: 1 });
        expect(r).toMatchObject({ status: 'queued', document_id: 'confluence:acme.example:42', version: 1 });
        expect((await registry.get('acme#confluence:acme.example:42'))?.tenant).toBe('acme');
        expect(bus.published.map((m) => [m.key, m.value.document_id])).toEqual([['acme#confluence:acme.example:42', 'acme#confluence:acme.example:42']]);
        expect(await docs.get('confluence:acme.example:42', 'acme')).toMatchObject({ document_id: 'confluence:acme.example:42', tenant: 'acme' });
        expect(await docs.get('confluence:acme.example:42', 'beta')).toBeNull();
        // Nobody can upload over the page, not even its own tenant.
        const squat = await docs.submit({ id: 'confluence:acme.example:42', text: 'squat' }, 'acme');
        expect(squat.ok).toBe(false);
        expect((await registry.get('acme#confluence:acme.example:42'))?.version).toBe(1);
      } finally {
        await state.close();
      }
    });

    it('reserves the connectors’ id prefixes: an upload with confluence:… or notion:… is invalid', async () => {
      for (const id of ['confluence:acme.atlassian.net:1', 'notion:0b6b8e5c-0000-0000-0000-000000000000', 'Confluence:x']) {
        const r = await docs.submit({ id, text: 'squat' }, 'acme');
        expect(r.ok ? null : r.error).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/reserved for the (confluence|notion) connector/) });
      }
      expect(bus.published).toEqual([]);
    });
  });

  describe('atomic submission (transactional outbox)', () => {
    it('a publish failure right after the commit does not lose the event: the relay delivers it once', async () => {
      bus.failNext = 1;
      const r = await docs.submit({ id: 'doc', text: 'hello' }, 'default');
      expect(r).toMatchObject({ ok: true, value: { document_id: 'doc', version: 1, status: 'queued' } });
      expect(bus.published).toEqual([]);
      await docs.relay();
      expect(bus.published.map((m) => [m.key, m.value.op, m.value.version])).toEqual([['doc', 'upsert', 1]]);
      await docs.relay();
      expect(bus.published).toHaveLength(1);
    });

    it('a process that dies between commit and publish leaves the event for the next process to publish', async () => {
      bus.failNext = 1; // the first process "dies" at its publish
      await docs.submit({ id: 'doc', text: 'hello' }, 'acme');
      await docs.stopRelay();
      // Before the restart, a resubmission of the same bytes is a duplicate of an accepted change: its event is
      // still pending in the outbox (not lost), so nothing is queued twice.
      const next = new DocumentService(registry, bus, 1024 * 1024, { relayIntervalMs: 60_000 });
      try {
        next.startRelay(); // start-up relays what the previous process left
        await next.relay();
        expect(bus.published.map((m) => [m.key, m.value.document_id, m.value.version])).toEqual([['acme#doc', 'acme#doc', 1]]);
        const again = await next.submit({ id: 'doc', text: 'hello' }, 'acme');
        expect(again).toMatchObject({ ok: true, value: { unchanged: true } });
        expect(bus.published).toHaveLength(1);
      } finally {
        await next.stopRelay();
      }
    });

    it('relays in commit order and keeps what it could not publish', async () => {
      bus.failNext = 2;
      await docs.submit({ id: 'a', text: 'one' }, 'default');
      await docs.submit({ id: 'a', text: 'two' }, 'default');
      await docs.delete('a', 'default');
      expect(bus.published.map((m) => [m.value.op, m.value.version])).toEqual([
        ['upsert', 1],
        ['upsert', 2],
        ['delete', 3],
      ]);
    });
  });

  it('fails an upload too large for the bus with the reason and keeps relaying the changes after it', async () => {
    bus.maxValueBytes = 4096;
    bus.failNext = 1; // the first submit's own relay fails: its change waits in the outbox, ahead of the large one
    await docs.submit({ id: 'small-1', text: 'one' }, 'default');
    await docs.submit({ id: 'big', text: 'x'.repeat(10_000) }, 'default');
    bus.failNext = 0;
    await docs.submit({ id: 'small-2', text: 'two' }, 'default');
    await docs.relay();
    expect(bus.published.map((m) => m.key)).toEqual(['small-1', 'small-2']);
    expect(await docs.get('big', 'default')).toMatchObject({ status: 'failed', error: expect.stringMatching(/larger than the topic accepts/) });
    // The outbox is empty (the large change no longer heads it), and later changes go out as before.
    await docs.submit({ id: 'small-3', text: 'three' }, 'default');
    await docs.relay();
    expect(bus.published.map((m) => m.key)).toEqual(['small-1', 'small-2', 'small-3']);
  });

  it('claims the outbox by bytes: a backlog of large uploads goes out a budget at a time, all of it, in order', async () => {
    await docs.stopRelay();
    docs = new DocumentService(registry, bus, 1024 * 1024, { relayIntervalMs: 60_000, relayClaimBytes: 20_000 });
    bus.failNext = Infinity; // a bus outage: every change waits in the outbox
    const ids = Array.from({ length: 12 }, (_, i) => `up-${i}`);
    for (const [i, id] of ids.entries()) await docs.submit({ id, text: `${i} ${'z'.repeat(i === 5 ? 50_000 : 6_000)}` }, 'default');
    expect(bus.published).toEqual([]);
    bus.failNext = 0;
    bus.callBytes.length = 0;
    await docs.relay();
    expect(bus.published.map((m) => m.key)).toEqual(ids);
    // ≈ 8 KB a source event: two or three per claim; the 67 KB one (its text base64) alone
    expect(Math.max(...bus.callBytes.filter((b) => b < 60_000))).toBeLessThanOrEqual(20_000);
    expect(bus.callBytes.filter((b) => b > 20_000)).toHaveLength(1);
    expect(bus.callBytes.length).toBeGreaterThanOrEqual(5);
  });

  it('fails only the too-large version when two versions of one document go out together', async () => {
    bus.maxValueBytes = 4096;
    bus.failNext = 1; // version 1's own relay fails: both versions wait in the outbox, one relay group
    await docs.submit({ id: 'a', text: 'short first version' }, 'default');
    await docs.submit({ id: 'a', text: 'y'.repeat(10_000) }, 'default');
    await docs.relay();
    expect(bus.published.map((m) => [m.key, m.value.version])).toEqual([['a', 1]]);
    expect(await docs.get('a', 'default')).toMatchObject({ version: 2, status: 'failed', error: expect.stringMatching(/larger than the topic accepts/) });
  });

  describe('batches (documents:batch, bulk ingestion)', () => {
    it('accepts a batch in input order: new, repeated, unchanged and rejected documents, each as submit would answer', async () => {
      await docs.submit({ id: 'old', text: 'same body' }, 'acme');
      const spy = vi.spyOn(registry, 'acceptMany');
      const out = await docs.submitMany(
        [
          { input: { id: 'a', text: 'alpha' } },
          { input: { id: 'old', text: 'same body' } },
          { input: { id: 'empty', text: '' } },
          { input: { id: 'a', text: 'alpha' } },
          { input: { id: 'a', text: 'alpha two' } },
          { input: { id: 'b', text: 'beta' } },
        ],
        'acme',
      );
      expect(out.map((r) => (r.ok ? [r.value.document_id, r.value.version, r.value.unchanged ?? false] : r.error.code))).toEqual([
        ['a', 1, false],
        ['old', 1, true],
        'invalid_request',
        ['a', 1, true],
        ['a', 2, false],
        ['b', 1, false],
      ]);
      // parts with distinct ids, in order: [a, old] (only `a` changes: one accept), [a] (unchanged), [a two, b] (one acceptMany)
      expect(spy.mock.calls.map((c) => c[0].map((i) => i.change.document_id))).toEqual([['acme#a', 'acme#b']]);
      expect(bus.published.map((m) => [m.key, m.value.version])).toEqual([
        ['acme#old', 1],
        ['acme#a', 1],
        ['acme#a', 2],
        ['acme#b', 1],
      ]);
    });

    it('rejects only the document whose id is held by another tenant’s record; the rest of the batch is accepted', async () => {
      // A record of another tenant under this tenant's qualified id (only a pre-scoping record could be one).
      await registry.accept({ document_id: 'acme#x', tenant: 'beta', op: 'upsert' });
      const out = await docs.submitMany([{ input: { id: 'y', text: 'why' } }, { input: { id: 'x', text: 'ex' } }, { input: { id: 'z', text: 'zed' } }], 'acme');
      expect(out.map((r) => (r.ok ? r.value.document_id : r.error.code))).toEqual(['y', 'conflict', 'z']);
      expect((await registry.get('acme#y'))?.version).toBe(1);
      expect((await registry.get('acme#z'))?.version).toBe(1);
    });
  });
});
