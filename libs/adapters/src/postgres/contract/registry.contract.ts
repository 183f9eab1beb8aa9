import { expect, it } from 'vitest';
import { Topic } from '@rag/contracts';
import type { AcceptChange, Registry } from '@rag/ports';

/**
 * The Registry contract, run against every implementation (SQLite in the unit suite, PostgreSQL in test/infra).
 * `open` opens the store under test (the same store on every call of one test, so a reopen sees earlier writes).
 */
export interface RegistryHarness {
  open(opts?: { traceRetentionMs?: number; maxTraces?: number }): Promise<Registry>;
}

const HASH_A = 'a'.repeat(64);
const HASH_B = 'b'.repeat(64);
const upsert = (id: string, extra: Partial<AcceptChange> = {}): AcceptChange => ({ document_id: id, tenant: 't1', op: 'upsert', ...extra });

export function registryContract(h: RegistryHarness): void {
  it('accepts a new document as version 1, queued, with its fields', async () => {
    const r = await h.open();
    const rec = await r.accept(upsert('upload:1', { title: 'Report', raw_hash: 'r1', mime_type: 'text/plain', source_url: 'https://x/1', acl: ['g1'], metadata: { lang: 'en', tags: ['a'], n: 3, ok: true } }));
    expect(rec).toMatchObject({
      document_id: 'upload:1', tenant: 't1', title: 'Report', status: 'queued', version: 1, active_version: 0, content_hash: null, raw_hash: 'r1',
      chunks: 0, error: null, mime_type: 'text/plain', source_url: 'https://x/1', acl: ['g1'], metadata: { lang: 'en', tags: ['a'], n: 3, ok: true },
    });
    expect(Date.parse(rec.created_at)).not.toBeNaN();
    expect(rec.updated_at).toBe(rec.created_at);
    expect(await r.get('upload:1')).toEqual(rec);
    expect(await r.get('nope')).toBeNull();
  });

  it('walks a version through processing → indexed and a new version replaces it, keeping omitted fields', async () => {
    const r = await h.open();
    await r.accept(upsert('d', { title: 'T', acl: ['g'], raw_hash: 'r1' }));
    await r.markProcessing('d', 1);
    expect((await r.get('d'))!.status).toBe('processing');
    await r.markIndexed('d', 1, HASH_A, 4);
    expect(await r.get('d')).toMatchObject({ status: 'indexed', version: 1, active_version: 1, content_hash: HASH_A, chunks: 4, error: null });
    const v2 = await r.accept(upsert('d', { raw_hash: 'r2', metadata: { k: 'v' } }));
    expect(v2).toMatchObject({ version: 2, status: 'queued', active_version: 1, title: 'T', acl: ['g'], raw_hash: 'r2', metadata: { k: 'v' } });
    expect((await r.activeVersions(['d'])).get('d')).toBe(1);
    await r.markIndexed('d', 2, HASH_B, 6);
    expect(await r.get('d')).toMatchObject({ status: 'indexed', version: 2, active_version: 2, content_hash: HASH_B, chunks: 6 });
  });

  it('batch forms (bulk ingestion): getMany skips unknown ids; markIndexedMany switches each version it names, skips stale ones', async () => {
    const r = await h.open();
    if (!r.getMany || !r.markIndexedMany) throw new Error('the registry lacks the batch methods');
    for (const id of ['a', 'b', 'c']) await r.accept(upsert(id));
    await r.accept(upsert('c', { raw_hash: 'newer' })); // c is at version 2 now
    const got = await r.getMany(['a', 'b', 'c', 'missing', 'a']);
    expect([...got.keys()].sort()).toEqual(['a', 'b', 'c']);
    expect(got.get('c')).toEqual(await r.get('c'));
    await r.markIndexedMany([
      { documentId: 'a', version: 1, contentHash: HASH_A, chunks: 3 },
      { documentId: 'b', version: 1, contentHash: HASH_B, chunks: 5 },
      { documentId: 'c', version: 1, contentHash: HASH_A, chunks: 7 }, // stale: ignored
    ]);
    expect(await r.get('a')).toMatchObject({ status: 'indexed', active_version: 1, content_hash: HASH_A, chunks: 3 });
    expect(await r.get('b')).toMatchObject({ status: 'indexed', active_version: 1, content_hash: HASH_B, chunks: 5 });
    expect(await r.get('c')).toMatchObject({ status: 'queued', version: 2, active_version: 0 });
    await r.markIndexedMany([]);
  });

  it('markMany (the status projection\'s batch) leaves each document as the single forms do, stale updates ignored', async () => {
    const r = await h.open();
    if (!r.markMany) throw new Error('the registry lacks markMany');
    // The same history for two sets of ids: s-* through the single forms, m-* through one markMany.
    for (const p of ['s-', 'm-']) {
      for (const id of 'abcdef') await r.accept(upsert(p + id, { raw_hash: `raw-${id}` }));
      await r.markIndexed(`${p}d`, 1, HASH_A, 2);
      await r.markIndexed(`${p}f`, 1, HASH_A, 5);
      await r.accept(upsert(`${p}d`)); // d is at version 2: an update for version 1 is stale
      await r.accept({ document_id: `${p}f`, tenant: 't1', op: 'delete' });
    }
    await r.markProcessing('s-a', 1);
    await r.markIndexed('s-b', 1, HASH_B, 4);
    await r.markFailed('s-c', 1, 'chunker: empty');
    await r.markIndexed('s-d', 1, HASH_B, 9);
    await r.markUnchanged('s-e', 1);
    await r.markDeleted('s-f', 2);
    await r.markMany([
      { status: 'processing', documentId: 'm-a', version: 1 },
      { status: 'indexed', documentId: 'm-b', version: 1, contentHash: HASH_B, chunks: 4 },
      { status: 'failed', documentId: 'm-c', version: 1, error: 'chunker: empty' },
      { status: 'indexed', documentId: 'm-d', version: 1, contentHash: HASH_B, chunks: 9 },
      { status: 'unchanged', documentId: 'm-e', version: 1 },
      { status: 'deleted', documentId: 'm-f', version: 2 },
      { status: 'processing', documentId: 'm-unknown', version: 1 },
    ]);
    await r.markMany([]);
    const view = async (p: string) =>
      Promise.all([...'abcdef'].map(async (id) => {
        const d = (await r.get(p + id))!;
        return [id, d.status, d.version, d.active_version, d.content_hash, d.chunks, d.error, d.raw_hash];
      }));
    expect(await view('m-')).toEqual(await view('s-'));
    expect((await view('m-')).map((v) => v[1])).toEqual(['processing', 'indexed', 'failed', 'queued', 'indexed', 'deleted']);
    expect(await r.get('m-unknown')).toBeNull();
  });

  it('ignores late events for an older version (never resurrects or overwrites newer state)', async () => {
    const r = await h.open();
    await r.accept(upsert('d'));
    await r.accept(upsert('d'));
    await r.markIndexed('d', 2, HASH_B, 3);
    const before = await r.get('d');
    await r.markIndexed('d', 1, HASH_A, 9);
    await r.markProcessing('d', 1);
    await r.markFailed('d', 1, 'boom');
    await r.markUnchanged('d', 1);
    await r.markDeleted('d', 1);
    expect(await r.get('d')).toEqual(before);
    await r.accept(upsert('d'));
    await r.accept({ document_id: 'd', tenant: 't1', op: 'delete' });
    await r.markIndexed('d', 3, HASH_A, 5);
    expect(await r.get('d')).toMatchObject({ version: 4, active_version: 2, status: 'queued' });
    await r.markDeleted('d', 4);
    await r.markIndexed('d', 3, HASH_A, 5);
    expect(await r.get('d')).toMatchObject({ status: 'deleted', version: 4, active_version: 0, chunks: 0, content_hash: null });
    expect((await r.activeVersions(['d'])).size).toBe(0);
    await r.markIndexed('unknown', 1, HASH_A, 1);
    expect(await r.get('unknown')).toBeNull();
  });

  it('deletes: version increments, status stays until markDeleted, raw hash cleared; an unknown id is recorded deleted', async () => {
    const r = await h.open();
    await r.accept(upsert('d', { raw_hash: 'r1' }));
    await r.markIndexed('d', 1, HASH_A, 2);
    expect(await r.accept({ document_id: 'd', tenant: 't1', op: 'delete' })).toMatchObject({ version: 2, status: 'indexed', active_version: 1, raw_hash: null });
    await r.markDeleted('d', 2);
    expect(await r.get('d')).toMatchObject({ status: 'deleted', version: 2, active_version: 0, chunks: 0 });
    expect(await r.accept(upsert('d', { raw_hash: 'r1' }))).toMatchObject({ version: 3, status: 'queued', active_version: 0 });
    expect(await r.accept({ document_id: 'ghost', tenant: 't1', op: 'delete' })).toMatchObject({ version: 1, status: 'deleted', active_version: 0 });
  });

  it('marks failures (raw hash cleared, error kept) and unchanged versions', async () => {
    const r = await h.open();
    await r.accept(upsert('d', { raw_hash: 'r1' }));
    await r.markFailed('d', 1, 'parse error');
    expect(await r.get('d')).toMatchObject({ status: 'failed', error: 'parse error', active_version: 0, raw_hash: null });
    await r.accept(upsert('d'));
    expect(await r.get('d')).toMatchObject({ status: 'queued', error: null, version: 2 });
    await r.markIndexed('d', 2, HASH_A, 2);
    await r.accept(upsert('d'));
    await r.markUnchanged('d', 3);
    expect(await r.get('d')).toMatchObject({ status: 'indexed', version: 3, active_version: 2, content_hash: HASH_A, chunks: 2 });
  });

  it('refuses a change to a document id owned by another tenant', async () => {
    const r = await h.open();
    await r.accept(upsert('d'));
    await expect(r.accept({ document_id: 'd', tenant: 't2', op: 'upsert' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(r.accept({ document_id: 'd', tenant: 't2', op: 'delete' })).rejects.toMatchObject({ code: 'conflict' });
    expect((await r.get('d'))!.version).toBe(1);
  });

  it('counts by status and lists with filters and paging, most recently updated first', async () => {
    const r = await h.open();
    for (const id of ['a', 'b', 'c', 'd']) await r.accept(upsert(id));
    await r.accept(upsert('e', { tenant: 't2' }));
    await r.markIndexed('b', 1, HASH_A, 1);
    await r.markFailed('e', 1, 'x');
    expect(await r.countByStatus()).toEqual({ queued: 3, processing: 0, indexed: 1, failed: 1, deleted: 0 });
    expect(await r.countByStatus('t1')).toEqual({ queued: 3, processing: 0, indexed: 1, failed: 0, deleted: 0 });
    expect(await r.countByStatus('none')).toEqual({ queued: 0, processing: 0, indexed: 0, failed: 0, deleted: 0 });
    const ids = async (o: Parameters<Registry['list']>[0]) => (await r.list(o)).map((d) => d.document_id);
    expect(await ids({ limit: 10, offset: 0 })).toEqual(['e', 'b', 'd', 'c', 'a']);
    expect(await ids({ tenant: 't1', limit: 2, offset: 1 })).toEqual(['d', 'c']);
    expect(await ids({ tenant: 't1', status: 'queued', limit: 10, offset: 0 })).toEqual(['d', 'c', 'a']);
    expect(await ids({ status: 'indexed', limit: 10, offset: 0 })).toEqual(['b']);
    expect(await ids({ tenant: 't1', limit: 10, offset: 10 })).toEqual([]);
    expect([...(await r.activeVersions(['a', 'b', 'missing'])).entries()]).toEqual([['b', 1]]);
    expect((await r.activeVersions([])).size).toBe(0);
  });

  it('pages by keyset cursor: every document once, in list order, at any depth; a changed one moves to the front', async () => {
    const r = await h.open();
    const all = Array.from({ length: 23 }, (_, i) => `k${String(i).padStart(2, '0')}`);
    for (const id of all) await r.accept(upsert(id));
    await r.accept(upsert('other', { tenant: 't2' }));
    for (const id of ['k03', 'k11', 'k19']) await r.markIndexed(id, 1, HASH_A, 1);
    const walk = async (o: { tenant?: string; status?: 'indexed' | 'queued' }, limit: number) => {
      const seen: string[] = [];
      let after: { updated_at: string; seq: number } | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const page = await r.list({ ...o, limit, ...(after ? { after } : {}) });
        for (const d of page) expect(typeof d.seq).toBe('number');
        seen.push(...page.map((d) => d.document_id));
        if (page.length < limit) return seen;
        const last = page[page.length - 1]!;
        after = { updated_at: last.updated_at, seq: last.seq! };
      }
      throw new Error('did not end');
    };
    const byOffset = (await r.list({ tenant: 't1', limit: 100, offset: 0 })).map((d) => d.document_id);
    expect(byOffset).toHaveLength(23);
    expect(await walk({ tenant: 't1' }, 5)).toEqual(byOffset);
    expect(await walk({ tenant: 't1' }, 23)).toEqual(byOffset); // a full last page, then an empty one
    expect(await walk({ tenant: 't1', status: 'indexed' }, 2)).toEqual(['k19', 'k11', 'k03']);
    expect(await walk({ tenant: 't1', status: 'queued' }, 4)).toEqual(byOffset.filter((id) => !['k03', 'k11', 'k19'].includes(id)));
    expect(await walk({}, 7)).toEqual((await r.list({ limit: 100, offset: 0 })).map((d) => d.document_id));
    // A document that changes between two pages moves ahead of the cursor: the rest of the walk neither repeats
    // nor skips any other document.
    const first = await r.list({ tenant: 't1', limit: 5 });
    const last = first[4]!;
    await r.markIndexed(byOffset[10]!, 1, HASH_A, 1);
    const rest = await r.list({ tenant: 't1', limit: 100, after: { updated_at: last.updated_at, seq: last.seq! } });
    expect(rest.map((d) => d.document_id)).toEqual(byOffset.slice(5).filter((id) => id !== byOffset[10]));
    expect((await r.list({ tenant: 't1', limit: 1 }))[0]!.document_id).toBe(byOffset[10]);
    await expect(r.list({ tenant: 't1', limit: 5, offset: 5, after: { updated_at: last.updated_at, seq: last.seq! } })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('records feedback only on a trace issued to the same tenant, within the retention', async () => {
    const r = await h.open();
    await r.recordQueryTrace('trace-1', 't1');
    await r.recordQueryTrace('trace-1', 't1');
    expect(await r.recordFeedback('trace-1', 't1', 'up')).toBe(true);
    expect(await r.recordFeedback('trace-1', 't1', 'down', 'wrong source')).toBe(true);
    expect(await r.recordFeedback('trace-1', 't2', 'down', 'not mine')).toBe(false);
    expect(await r.recordFeedback('trace-unknown', 't1', 'up')).toBe(false);
    await expect(r.recordFeedback('trace-1', 't1', 'meh' as 'up')).rejects.toMatchObject({ code: 'invalid_request' });
    await r.close();
    const expired = await h.open({ traceRetentionMs: -1 });
    expect(await expired.recordFeedback('trace-1', 't1', 'up')).toBe(false);
  });

  it('keeps query traces bounded: the oldest beyond the cap are forgotten', async () => {
    const capped = await h.open({ maxTraces: 3 });
    for (let i = 0; i < 600; i++) await capped.recordQueryTrace(`t-${i}`, 't1');
    expect(await capped.recordFeedback('t-0', 't1', 'up')).toBe(false);
    expect(await capped.recordFeedback('t-599', 't1', 'up')).toBe(true);
  });

  it('stores an outbox message in the same transaction as its change; claims lease, release and complete', async () => {
    const r = await h.open();
    const rec = await r.accept(upsert('d'), (record) => ({ topic: Topic.SourceEvents, key: record.document_id, value: { version: record.version } }));
    expect(rec.version).toBe(1);
    const claimed = await r.claimOutbox(10, 60_000);
    expect(claimed).toEqual([{ id: expect.any(Number), topic: Topic.SourceEvents, key: 'd', value: { version: 1 }, attempts: 0 }]);
    expect(await r.claimOutbox(10, 60_000)).toEqual([]);
    await r.releaseOutbox(claimed.map((c) => c.id));
    const again = await r.claimOutbox(10, 60_000);
    expect(again.map((c) => c.attempts)).toEqual([1]);
    await r.completeOutbox(again.map((c) => c.id));
    await r.releaseOutbox(again.map((c) => c.id));
    expect(await r.claimOutbox(10, 0)).toEqual([]);
  });

  it('rolls the change back when its outbox message cannot be built, and hands expired claims to the next relay', async () => {
    const r = await h.open();
    await expect(r.accept(upsert('d'), () => { throw new Error('boom'); })).rejects.toThrow('boom');
    expect(await r.get('d')).toBeNull();
    await r.accept(upsert('d'), (record) => ({ topic: Topic.SourceEvents, key: 'd', value: record.version }));
    await r.accept(upsert('d'), (record) => ({ topic: Topic.SourceEvents, key: 'd', value: record.version }));
    expect((await r.claimOutbox(1, -1)).map((c) => c.value)).toEqual([1]);
    expect((await r.claimOutbox(10, 60_000)).map((c) => c.value)).toEqual([1, 2]);
  });

  it('reports the outbox backlog (messages, bytes, the oldest change) whether claimed or not, and nothing once published', async () => {
    const r = await h.open();
    expect(await r.outboxStats!()).toEqual({ messages: 0, bytes: 0, oldest_created_at: null });
    const first = await r.accept(upsert('a'), (rec) => ({ topic: Topic.SourceEvents, key: rec.document_id, value: 'x'.repeat(98) }));
    await r.accept(upsert('b'), (rec) => ({ topic: Topic.SourceEvents, key: rec.document_id, value: '汉'.repeat(100) }));
    const claimed = await r.claimOutbox(1, 60_000);
    const stats = await r.outboxStats!();
    expect(stats).toEqual({ messages: 2, bytes: 100 + 302, oldest_created_at: expect.any(String) });
    expect(Date.parse(stats.oldest_created_at!)).toBe(Date.parse(first.updated_at));
    await r.completeOutbox(claimed.map((c) => c.id));
    expect(await r.outboxStats!()).toMatchObject({ messages: 1, bytes: 302 });
  });

  it('claims the outbox by bytes when asked: oldest first, stopping before the message past the budget, the first always', async () => {
    const r = await h.open();
    // A JSON string value of n characters is stored as n + 2 bytes.
    const sized = (value: string) => (rec: { document_id: string }) => ({ topic: Topic.SourceEvents, key: rec.document_id, value });
    const keys = (claimed: { key: string }[]) => claimed.map((c) => c.key);
    await r.accept(upsert('a'), sized('x'.repeat(998)));
    await r.accept(upsert('b'), sized('x'.repeat(998)));
    await r.accept(upsert('c'), sized('x'.repeat(4998)));
    await r.accept(upsert('d'), sized('x'.repeat(8)));
    expect(keys(await r.claimOutbox(10, 60_000, 2500))).toEqual(['a', 'b']); // 2,000 bytes; with c's 5,000 past 2,500
    expect(keys(await r.claimOutbox(10, 60_000, 2500))).toEqual(['c']); // larger than the budget alone: claimed by itself
    expect(keys(await r.claimOutbox(10, 60_000, 2500))).toEqual(['d']);
    // UTF-8 bytes, not characters: 500 Han characters are 1,502 bytes (502 characters)
    await r.accept(upsert('e'), sized('汉'.repeat(500)));
    await r.accept(upsert('f'), sized('x'.repeat(98)));
    await r.accept(upsert('g'), sized('x'.repeat(98)));
    expect(keys(await r.claimOutbox(10, 60_000, 1550))).toEqual(['e']);
    // the count still caps a claim within the budget; no budget (absent or 0) claims by count alone
    expect(keys(await r.claimOutbox(1, 60_000, 1_000_000))).toEqual(['f']);
    await r.accept(upsert('h'), sized('x'.repeat(4998)));
    expect(keys(await r.claimOutbox(10, 60_000, 0))).toEqual(['g', 'h']);
  });

  it('acceptMany (bulk ingestion): new and existing ids and repeats in order, one transaction with the outbox in item order', async () => {
    const r = await h.open();
    if (!r.acceptMany) throw new Error('the registry lacks acceptMany');
    await r.accept(upsert('old', { title: 'Kept', acl: ['g'], raw_hash: 'r0' }));
    await r.markIndexed('old', 1, HASH_A, 3);
    const msg = (rec: { document_id: string; version: number }) => ({ topic: Topic.SourceEvents, key: rec.document_id, value: `${rec.document_id}@${rec.version}` });
    const recs = await r.acceptMany([
      { change: upsert('n2', { title: 'N2', raw_hash: 'h2', metadata: { k: 1 } }), message: msg },
      { change: upsert('old', { raw_hash: 'r1' }), message: msg },
      { change: upsert('n1', { acl: ['a'] }), message: msg },
      { change: { document_id: 'n2', tenant: 't1', op: 'delete' }, message: msg },
      { change: upsert('n2', { raw_hash: 'h3' }) },
    ]);
    expect(recs.map((x) => [x.document_id, x.version, x.status])).toEqual([
      ['n2', 1, 'queued'],
      ['old', 2, 'queued'],
      ['n1', 1, 'queued'],
      ['n2', 2, 'queued'],
      ['n2', 3, 'queued'],
    ]);
    expect(recs[0]).toMatchObject({ title: 'N2', raw_hash: 'h2', metadata: { k: 1 }, acl: [], active_version: 0 });
    expect(recs[1]).toMatchObject({ title: 'Kept', acl: ['g'], raw_hash: 'r1', active_version: 1, content_hash: HASH_A });
    expect(recs[3]!.raw_hash).toBeNull();
    expect(await r.get('n2')).toEqual(recs[4]);
    expect((await r.claimOutbox(100, 60_000)).map((c) => [c.key, c.value])).toEqual([
      ['n2', 'n2@1'],
      ['old', 'old@2'],
      ['n1', 'n1@1'],
      ['n2', 'n2@2'],
    ]);
    expect(await r.acceptMany([])).toEqual([]);
  });

  it('acceptMany is all or nothing: another tenant\'s id or a message that cannot be built rolls every change back', async () => {
    const r = await h.open();
    if (!r.acceptMany) throw new Error('the registry lacks acceptMany');
    await r.accept(upsert('theirs'));
    await expect(r.acceptMany([{ change: upsert('mine') }, { change: { document_id: 'theirs', tenant: 't2', op: 'upsert' } }])).rejects.toMatchObject({ code: 'conflict' });
    await expect(
      r.acceptMany([
        { change: upsert('mine'), message: (rec) => ({ topic: Topic.SourceEvents, key: rec.document_id, value: 1 }) },
        { change: upsert('theirs'), message: () => { throw new Error('boom'); } },
      ]),
    ).rejects.toThrow('boom');
    expect(await r.get('mine')).toBeNull();
    expect((await r.get('theirs'))!.version).toBe(1);
    expect(await r.claimOutbox(100, 60_000)).toEqual([]);
  });

  it('acceptMany from two registries at once over overlapping ids: every change gets its own version, none is lost', async () => {
    const [a, b] = [await h.open(), await h.open()];
    const ids = Array.from({ length: 12 }, (_, i) => `c${i}`);
    const batch = (reg: Registry, order: string[]) => reg.acceptMany!(order.map((id) => ({ change: upsert(id), message: (rec) => ({ topic: Topic.SourceEvents, key: id, value: rec.version }) })));
    await Promise.all([batch(a, ids), batch(b, [...ids].reverse()), batch(a, ids.slice(3)), batch(b, ids.slice(0, 6).reverse())]);
    for (const [i, id] of ids.entries()) expect((await a.get(id))!.version).toBe(2 + (i >= 3 ? 1 : 0) + (i < 6 ? 1 : 0));
    const claimed = await a.claimOutbox(1000, 60_000);
    for (const id of ids) {
      const versions = claimed.filter((c) => c.key === id).map((c) => c.value);
      expect(versions).toEqual(Array.from({ length: versions.length }, (_, k) => k + 1));
    }
  });

  it('serializes concurrent accepts of one document: every change gets its own version, each with its outbox message', async () => {
    const [a, b] = [await h.open(), await h.open()];
    const versions = await Promise.all(
      Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).accept(upsert('hot'), (rec) => ({ topic: Topic.SourceEvents, key: 'hot', value: rec.version }))),
    );
    expect(versions.map((v) => v.version).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect((await a.claimOutbox(100, 60_000)).map((c) => c.value).sort((x, y) => (x as number) - (y as number))).toEqual(versions.map((v) => v.version).sort((x, y) => x - y));
  });

  it('persists across close and reopen; rejects use after close; close is idempotent', async () => {
    const r1 = await h.open();
    await r1.accept(upsert('d', { title: 'T', metadata: { x: 1 } }));
    await r1.markIndexed('d', 1, HASH_A, 2);
    const before = await r1.get('d');
    await r1.close();
    await r1.close();
    await expect(r1.get('d')).rejects.toThrow(/closed/);
    const r2 = await h.open();
    expect(await r2.get('d')).toEqual(before);
    expect((await r2.accept(upsert('d'))).version).toBe(2);
    expect((await r2.activeVersions(['d'])).get('d')).toBe(1);
  });
}
