import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { Topic } from '@rag/contracts';
import type { AcceptChange } from '@rag/ports';
import { SqliteRegistry } from './sqlite-registry.adapter';

const HASH_A = 'a'.repeat(64);
const HASH_B = 'b'.repeat(64);

function upsert(id: string, extra: Partial<AcceptChange> = {}): AcceptChange {
  return { document_id: id, tenant: 't1', op: 'upsert', ...extra };
}

describe('SqliteRegistry', () => {
  let dir: string;
  const open: SqliteRegistry[] = [];
  const make = (): SqliteRegistry => {
    const r = new SqliteRegistry({ dir, synchronous: 'NORMAL' });
    open.push(r);
    return r;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'registry-spec-'));
  });
  afterEach(async () => {
    for (const r of open.splice(0)) await r.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a new document as version 1, queued, with its fields', async () => {
    const r = make();
    const rec = await r.accept(
      upsert('upload:1', {
        title: 'Report',
        raw_hash: 'r1',
        mime_type: 'text/plain',
        source_url: 'https://x/1',
        acl: ['g1'],
        metadata: { lang: 'en', tags: ['a'], n: 3, ok: true },
      }),
    );
    expect(rec).toMatchObject({
      document_id: 'upload:1',
      tenant: 't1',
      title: 'Report',
      status: 'queued',
      version: 1,
      active_version: 0,
      content_hash: null,
      raw_hash: 'r1',
      chunks: 0,
      error: null,
      mime_type: 'text/plain',
      source_url: 'https://x/1',
      acl: ['g1'],
      metadata: { lang: 'en', tags: ['a'], n: 3, ok: true },
    });
    expect(Date.parse(rec.created_at)).not.toBeNaN();
    expect(rec.updated_at).toBe(rec.created_at);
    expect(await r.get('upload:1')).toEqual(rec);
    expect(await r.get('nope')).toBeNull();
  });

  it('walks a version through processing → indexed and a new version replaces it', async () => {
    const r = make();
    await r.accept(upsert('d', { title: 'T', acl: ['g'], raw_hash: 'r1' }));
    await r.markProcessing('d', 1);
    expect((await r.get('d'))!.status).toBe('processing');
    await r.markIndexed('d', 1, HASH_A, 4);
    expect(await r.get('d')).toMatchObject({ status: 'indexed', version: 1, active_version: 1, content_hash: HASH_A, chunks: 4, error: null });

    const v2 = await r.accept(upsert('d', { raw_hash: 'r2', metadata: { k: 'v' } }));
    // Omitted fields keep their previous values; the active version stays visible until v2 is indexed.
    expect(v2).toMatchObject({ version: 2, status: 'queued', active_version: 1, title: 'T', acl: ['g'], raw_hash: 'r2', metadata: { k: 'v' } });
    expect((await r.activeVersions(['d'])).get('d')).toBe(1);
    await r.markIndexed('d', 2, HASH_B, 6);
    expect(await r.get('d')).toMatchObject({ status: 'indexed', version: 2, active_version: 2, content_hash: HASH_B, chunks: 6 });
  });

  it('ignores late events for an older version (never resurrects or overwrites newer state)', async () => {
    const r = make();
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
    expect(before).toMatchObject({ status: 'indexed', version: 2, active_version: 2, content_hash: HASH_B, chunks: 3 });

    // A delete was accepted after v3: the late markIndexed(v3) must not bring the document back.
    await r.accept(upsert('d'));
    await r.accept({ document_id: 'd', tenant: 't1', op: 'delete' });
    await r.markIndexed('d', 3, HASH_A, 5);
    expect(await r.get('d')).toMatchObject({ version: 4, active_version: 2, status: 'queued' });
    await r.markDeleted('d', 4);
    await r.markIndexed('d', 3, HASH_A, 5);
    expect(await r.get('d')).toMatchObject({ status: 'deleted', version: 4, active_version: 0, chunks: 0, content_hash: null });
    expect((await r.activeVersions(['d'])).size).toBe(0);
    // Events for versions never accepted (or unknown documents) are ignored as well.
    await r.markIndexed('d', 99, HASH_A, 1);
    await r.markIndexed('unknown', 1, HASH_A, 1);
    expect((await r.get('d'))!.status).toBe('deleted');
    expect(await r.get('unknown')).toBeNull();
  });

  it('deletes: version increments, status stays until markDeleted, raw hash cleared', async () => {
    const r = make();
    await r.accept(upsert('d', { raw_hash: 'r1' }));
    await r.markIndexed('d', 1, HASH_A, 2);
    const del = await r.accept({ document_id: 'd', tenant: 't1', op: 'delete' });
    expect(del).toMatchObject({ version: 2, status: 'indexed', active_version: 1, raw_hash: null });
    await r.markDeleted('d', 2);
    expect(await r.get('d')).toMatchObject({ status: 'deleted', version: 2, active_version: 0, chunks: 0 });
    // Re-upload after delete: version 3, queued.
    expect(await r.accept(upsert('d', { raw_hash: 'r1' }))).toMatchObject({ version: 3, status: 'queued', active_version: 0 });
    // Deleting an unknown document records it as deleted.
    expect(await r.accept({ document_id: 'ghost', tenant: 't1', op: 'delete' })).toMatchObject({ version: 1, status: 'deleted', active_version: 0 });
  });

  it('marks failures and unchanged versions', async () => {
    const r = make();
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
    const r = make();
    await r.accept(upsert('d'));
    await expect(r.accept({ document_id: 'd', tenant: 't2', op: 'upsert' })).rejects.toMatchObject({ code: 'conflict' });
    await expect(r.accept({ document_id: 'd', tenant: 't2', op: 'delete' })).rejects.toMatchObject({ code: 'conflict' });
    expect((await r.get('d'))!.version).toBe(1);
  });

  it('returns active versions only for documents with one', async () => {
    const r = make();
    await r.accept(upsert('a'));
    await r.accept(upsert('b'));
    await r.markIndexed('a', 1, HASH_A, 1);
    const m = await r.activeVersions(['a', 'b', 'missing']);
    expect([...m.entries()]).toEqual([['a', 1]]);
    expect((await r.activeVersions([])).size).toBe(0);

    // Re-indexed (c: v2 replaces v1), a new version pending or failed (d, e: the previous one stays active), deleted
    // (f), never indexed (b: queued, g: failed), unknown, and an id asked twice.
    await r.acceptMany(['c', 'd', 'e', 'f', 'g'].map((id) => ({ change: upsert(id) })));
    await r.markIndexedMany(['c', 'd', 'e', 'f'].map((id) => ({ documentId: id, version: 1, contentHash: HASH_A, chunks: 2 })));
    await r.accept(upsert('c'));
    await r.markIndexed('c', 2, HASH_B, 3);
    await r.accept(upsert('d'));
    await r.accept(upsert('e'));
    await r.markFailed('e', 2, 'parse error');
    await r.accept({ document_id: 'f', tenant: 't1', op: 'delete' });
    await r.markDeleted('f', 2);
    await r.markFailed('g', 1, 'parse error');
    const all = await r.activeVersions(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'missing', 'c']);
    expect(Object.fromEntries(all)).toEqual({ a: 1, c: 2, d: 1, e: 1 });
  });

  /** EXPLAIN QUERY PLAN of the statement activeVersions runs (its own SQL, so an edit of either is checked). */
  const activeVersionsPlan = (r: SqliteRegistry): string[] => {
    const sql = (r as unknown as { stmt: { active: Database.Statement } }).stmt.active.source;
    const db = new Database(path.join(dir, 'registry.db'), { readonly: true });
    try {
      return (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(JSON.stringify(['a', 'b'])) as { detail: string }[]).map((p) => p.detail);
    } finally {
      db.close();
    }
  };

  it('reads active versions from the covering index alone, not the documents rows', async () => {
    const r = make();
    await r.acceptMany(['a', 'b', 'c'].map((id) => ({ change: upsert(id) })));
    await r.markIndexed('a', 1, HASH_A, 1);
    const plan = activeVersionsPlan(r);
    expect(plan).toContainEqual(expect.stringMatching(/^SEARCH documents USING COVERING INDEX documents_active \(document_id=\?/));
    expect(plan.filter((d) => /\bdocuments\b/.test(d))).toHaveLength(1); // no second lookup of the table
  });

  it('adds the covering index to a registry made before it, on open', async () => {
    const first = make();
    await first.accept(upsert('a'));
    await first.markIndexed('a', 1, HASH_A, 1);
    await first.accept(upsert('b'));
    await first.close();
    const old = new Database(path.join(dir, 'registry.db'));
    old.exec('DROP INDEX documents_active');
    old.close();
    const r = make();
    expect(activeVersionsPlan(r)).toContainEqual(expect.stringMatching(/USING COVERING INDEX documents_active/));
    expect(Object.fromEntries(await r.activeVersions(['a', 'b']))).toEqual({ a: 1 });
    make(); // opening it again changes nothing
    expect(Object.fromEntries(await r.activeVersions(['a', 'b']))).toEqual({ a: 1 });
  });

  it('counts by status, per tenant or overall, with every status present', async () => {
    const r = make();
    await r.accept(upsert('a'));
    await r.accept(upsert('b'));
    await r.markIndexed('b', 1, HASH_A, 1);
    await r.accept(upsert('c', { tenant: 't2' }));
    await r.markFailed('c', 1, 'x');
    expect(await r.countByStatus()).toEqual({ queued: 1, processing: 0, indexed: 1, failed: 1, deleted: 0 });
    expect(await r.countByStatus('t1')).toEqual({ queued: 1, processing: 0, indexed: 1, failed: 0, deleted: 0 });
    expect(await r.countByStatus('none')).toEqual({ queued: 0, processing: 0, indexed: 0, failed: 0, deleted: 0 });
  });

  it('keeps the status counts equal to a count of the documents through every transition', async () => {
    const r = make();
    const truth = () => {
      const db = new Database(path.join(dir, 'registry.db'), { readonly: true });
      const out: Record<string, Record<string, number>> = {};
      for (const row of db.prepare('SELECT tenant, status, COUNT(*) AS n FROM documents GROUP BY tenant, status').all() as { tenant: string; status: string; n: number }[]) {
        (out[row.tenant] ??= { queued: 0, processing: 0, indexed: 0, failed: 0, deleted: 0 })[row.status] = row.n;
      }
      db.close();
      return out;
    };
    const check = async () => {
      const t = truth();
      for (const tenant of ['t1', 't2']) expect(await r.countByStatus(tenant)).toEqual(t[tenant] ?? { queued: 0, processing: 0, indexed: 0, failed: 0, deleted: 0 });
      const all = { queued: 0, processing: 0, indexed: 0, failed: 0, deleted: 0 };
      for (const byStatus of Object.values(t)) for (const [k, n] of Object.entries(byStatus)) all[k as keyof typeof all] += n;
      expect(await r.countByStatus()).toEqual(all);
    };
    for (const id of ['a', 'b', 'c', 'd']) await r.accept(upsert(id, { tenant: id === 'd' ? 't2' : 't1' }));
    await check();
    await r.markProcessing('a', 1);
    await r.markIndexed('b', 1, HASH_A, 2);
    await r.markFailed('d', 1, 'broken');
    await check();
    await r.accept(upsert('b')); // a new version of an indexed document: indexed -> queued
    await r.markIndexed('b', 1, HASH_B, 1); // a late event for the old version changes nothing
    await r.accept({ document_id: 'c', tenant: 't1', op: 'delete' });
    await r.markDeleted('c', 2);
    await expect(r.accept(upsert('d', { tenant: 't1' }))).rejects.toThrow(); // another tenant's id: rejected, counts unchanged
    await check();
    await r.acceptMany([upsert('e'), upsert('e'), upsert('f', { tenant: 't2' })].map((change) => ({ change })));
    await check();
  });

  it('counts the documents of a registry made before the counts table once, on open, then keeps them', async () => {
    const first = make();
    await first.accept(upsert('a'));
    await first.accept(upsert('b', { tenant: 't2' }));
    await first.markIndexed('b', 1, HASH_A, 1);
    await first.close();
    const old = new Database(path.join(dir, 'registry.db'));
    old.exec('DROP TRIGGER document_counts_insert; DROP TRIGGER document_counts_update; DROP TRIGGER document_counts_delete; DROP TABLE document_counts');
    old.close();
    const r = make();
    expect(await r.countByStatus()).toEqual({ queued: 1, processing: 0, indexed: 1, failed: 0, deleted: 0 });
    await r.accept(upsert('c'));
    expect(await r.countByStatus('t1')).toEqual({ queued: 2, processing: 0, indexed: 0, failed: 0, deleted: 0 });
    const again = make(); // a second process opening the same file finds the table and counts nothing twice
    expect(await again.countByStatus()).toEqual({ queued: 2, processing: 0, indexed: 1, failed: 0, deleted: 0 });
  });

  /** The store inspector's registry figures, from the trigger-maintained tables and from a scan of the documents. */
  const registryFigures = () => {
    const db = new Database(path.join(dir, 'registry.db'), { readonly: true });
    try {
      const counters = db
        .prepare(
          "SELECT (SELECT SUM(n) FROM document_counts) AS n, (SELECT active_chunks FROM document_chunk_totals WHERE id = 1) AS c, (SELECT COALESCE(SUM(n), 0) FROM document_counts WHERE status IN ('queued', 'processing')) AS p",
        )
        .get();
      const scan = db
        .prepare(
          "SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN active_version > 0 THEN chunks ELSE 0 END), 0) AS c, COALESCE(SUM(CASE WHEN status IN ('queued', 'processing') THEN 1 ELSE 0 END), 0) AS p FROM documents",
        )
        .get();
      return { counters, scan };
    } finally {
      db.close();
    }
  };

  it('keeps the active chunk total equal to a sum over the documents through every write', async () => {
    const r = make();
    const check = (expected: { n: number; c: number; p: number }) => {
      const { counters, scan } = registryFigures();
      expect(scan).toEqual(expected); // the sequence below did what it says
      expect(counters).toEqual(scan);
    };
    expect(registryFigures().scan).toEqual({ n: 0, c: 0, p: 0 });
    await r.acceptMany(['a', 'b', 'c', 'd', 'e'].map((id) => ({ change: upsert(id, { tenant: id === 'd' || id === 'e' ? 't2' : 't1' }) })));
    await r.markProcessing('a', 1);
    check({ n: 5, c: 0, p: 5 });
    await r.markIndexed('a', 1, HASH_A, 4);
    await r.markIndexedMany([
      { documentId: 'b', version: 1, contentHash: HASH_A, chunks: 7 },
      { documentId: 'd', version: 1, contentHash: HASH_B, chunks: 3 },
    ]);
    await r.markFailed('c', 1, 'parse error');
    check({ n: 5, c: 14, p: 1 });
    // A new version re-indexed with another chunk count: the old count leaves, the new one comes in.
    await r.accept(upsert('a'));
    check({ n: 5, c: 14, p: 2 });
    await r.markIndexed('a', 2, HASH_B, 9);
    check({ n: 5, c: 19, p: 1 });
    // Late events for older versions change nothing; an unchanged re-submission keeps the active chunks.
    await r.markIndexed('a', 1, HASH_A, 100);
    await r.markDeleted('a', 1);
    await r.accept(upsert('b'));
    await r.markUnchanged('b', 2);
    check({ n: 5, c: 19, p: 1 });
    // A failed new version leaves the previous active version (and its chunks) visible.
    await r.accept(upsert('d', { tenant: 't2' }));
    await r.markFailed('d', 2, 'embedder down');
    check({ n: 5, c: 19, p: 1 });
    // Delete: accepted (still counted until the delete is applied), then applied.
    await r.accept({ document_id: 'b', tenant: 't1', op: 'delete' });
    check({ n: 5, c: 19, p: 1 });
    await r.markDeleted('b', 3);
    check({ n: 5, c: 12, p: 1 });
    await r.accept({ document_id: 'ghost', tenant: 't2', op: 'delete' });
    await expect(r.accept(upsert('d', { tenant: 't1' }))).rejects.toThrow(); // another tenant's id: nothing changes
    await expect(
      r.accept(upsert('f'), () => {
        throw new Error('boom'); // rolled back with its change
      }),
    ).rejects.toThrow('boom');
    check({ n: 6, c: 12, p: 1 });
    // A re-indexed document whose new version has no chunks at all.
    await r.accept(upsert('d', { tenant: 't2' }));
    await r.markIndexed('d', 3, HASH_A, 0);
    check({ n: 6, c: 9, p: 1 });
    // No statement of the adapter deletes a document or inserts one already indexed; rows written so by hand (or by a
    // later version: a purge, an import) are counted too.
    await r.close();
    const raw = new Database(path.join(dir, 'registry.db'));
    raw.exec("DELETE FROM documents WHERE document_id IN ('a', 'b', 'ghost')");
    raw.exec(
      "INSERT INTO documents (document_id, tenant, status, version, active_version, chunks, created_at, updated_at, seq) VALUES ('g', 't2', 'indexed', 1, 1, 4, 'x', 'x', 100)",
    );
    raw.close();
    check({ n: 4, c: 4, p: 1 });
  });

  it('sums the active chunks of a registry made before the totals table once, on open, then keeps them', async () => {
    const first = make();
    await first.acceptMany(['a', 'b', 'c'].map((id) => ({ change: upsert(id, { tenant: id === 'c' ? 't2' : 't1' }) })));
    await first.markIndexed('a', 1, HASH_A, 5);
    await first.markIndexed('c', 1, HASH_B, 2);
    await first.accept(upsert('a'));
    await first.close();
    const old = new Database(path.join(dir, 'registry.db'));
    old.exec(
      'DROP TRIGGER document_chunk_totals_insert; DROP TRIGGER document_chunk_totals_update; DROP TRIGGER document_chunk_totals_delete; DROP TABLE document_chunk_totals',
    );
    old.exec("UPDATE documents SET chunks = 11 WHERE document_id = 'c'"); // written by an older version: no trigger sees it
    old.close();
    const r = make();
    expect(registryFigures()).toEqual({ counters: { n: 3, c: 16, p: 2 }, scan: { n: 3, c: 16, p: 2 } });
    await r.markIndexed('a', 2, HASH_B, 1);
    const again = make(); // a second process opening the same file finds the table and sums nothing twice
    await again.markIndexed('b', 1, HASH_A, 3);
    expect(registryFigures()).toEqual({ counters: { n: 3, c: 15, p: 0 }, scan: { n: 3, c: 15, p: 0 } });
  });

  it('lists with filters and paging, most recently updated first', async () => {
    const r = make();
    for (const id of ['a', 'b', 'c', 'd']) await r.accept(upsert(id));
    await r.accept(upsert('e', { tenant: 't2' }));
    await r.markIndexed('b', 1, HASH_A, 1); // b is now the most recently updated
    const ids = async (o: Parameters<SqliteRegistry['list']>[0]) => (await r.list(o)).map((d) => d.document_id);
    expect(await ids({ limit: 10, offset: 0 })).toEqual(['b', 'e', 'd', 'c', 'a']);
    expect(await ids({ tenant: 't1', limit: 10, offset: 0 })).toEqual(['b', 'd', 'c', 'a']);
    expect(await ids({ tenant: 't1', limit: 2, offset: 1 })).toEqual(['d', 'c']);
    expect(await ids({ tenant: 't1', status: 'queued', limit: 10, offset: 0 })).toEqual(['d', 'c', 'a']);
    expect(await ids({ status: 'indexed', limit: 10, offset: 0 })).toEqual(['b']);
    expect(await ids({ tenant: 't1', limit: 10, offset: 10 })).toEqual([]);
  });

  it('records feedback only on a trace issued to the same tenant', async () => {
    const r = make();
    await r.recordQueryTrace('trace-1', 't1');
    expect(await r.recordFeedback('trace-1', 't1', 'up')).toBe(true);
    expect(await r.recordFeedback('trace-1', 't1', 'down', 'wrong source')).toBe(true);
    // Another tenant's trace and an unknown trace get the same answer, and store nothing.
    expect(await r.recordFeedback('trace-1', 't2', 'down', 'not mine')).toBe(false);
    expect(await r.recordFeedback('trace-unknown', 't1', 'up')).toBe(false);
    await r.close();
    const db = new Database(path.join(dir, 'registry.db'), { readonly: true });
    try {
      const rows = db.prepare('SELECT trace_id, tenant, rating, comment FROM feedback ORDER BY id').all();
      expect(rows).toEqual([
        { trace_id: 'trace-1', tenant: 't1', rating: 'up', comment: null },
        { trace_id: 'trace-1', tenant: 't1', rating: 'down', comment: 'wrong source' },
      ]);
    } finally {
      db.close();
    }
  });

  it('keeps query traces bounded: expired ones and the oldest beyond the cap are forgotten', async () => {
    const expired = new SqliteRegistry({ dir, synchronous: 'NORMAL', traceRetentionMs: -1 });
    open.push(expired);
    await expired.recordQueryTrace('old', 't1');
    expect(await expired.recordFeedback('old', 't1', 'up')).toBe(false);
    await expired.close();
    const capped = new SqliteRegistry({ dir, synchronous: 'NORMAL', maxTraces: 3 });
    open.push(capped);
    for (let i = 0; i < 600; i++) await capped.recordQueryTrace(`t-${i}`, 't1');
    await capped.close();
    const db = new Database(path.join(dir, 'registry.db'), { readonly: true });
    try {
      // Pruned every 500 traces and when the registry opens: at most the cap plus one pruning interval.
      const n = (db.prepare('SELECT COUNT(*) AS n FROM query_traces').get() as { n: number }).n;
      expect(n).toBeLessThanOrEqual(3 + 100);
      expect(db.prepare("SELECT 1 FROM query_traces WHERE trace_id = 't-0'").get()).toBeUndefined();
      expect(db.prepare("SELECT 1 FROM query_traces WHERE trace_id = 't-599'").get()).toBeDefined();
    } finally {
      db.close();
    }
  });

  it('adds the tenant column to the feedback table of an older registry', async () => {
    const old = new Database(path.join(dir, 'registry.db'));
    old.exec("CREATE TABLE feedback (id INTEGER PRIMARY KEY, trace_id TEXT NOT NULL, rating TEXT NOT NULL, comment TEXT, created_at TEXT NOT NULL)");
    old.close();
    const r = make();
    await r.recordQueryTrace('tr', 't1');
    expect(await r.recordFeedback('tr', 't1', 'up')).toBe(true);
  });

  it('measures the pending outbox messages of a registry made before the size column, on open, and claims them by bytes', async () => {
    const old = new Database(path.join(dir, 'registry.db'));
    old.exec(`CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, topic TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,
                                   created_at TEXT NOT NULL, claimed_until INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0)`);
    const insert = old.prepare("INSERT INTO outbox (topic, key, value, created_at) VALUES (?, ?, ?, '2026-01-01T00:00:00.000Z')");
    insert.run(Topic.SourceEvents, 'a', JSON.stringify('汉'.repeat(1000))); // 3,002 bytes
    insert.run(Topic.SourceEvents, 'b', JSON.stringify('x'.repeat(98))); // 100 bytes
    old.close();
    const r = make();
    await r.accept(upsert('c'), (rec) => ({ topic: Topic.SourceEvents, key: rec.document_id, value: 'x'.repeat(98) }));
    expect((await r.claimOutbox(10, 60_000, 3050)).map((c) => c.key)).toEqual(['a']);
    expect((await r.claimOutbox(10, 60_000, 3050)).map((c) => c.key)).toEqual(['b', 'c']);
  });

  it('finds the outbox messages to claim in the covering index, reading from the table only the values it claims', async () => {
    const r = make();
    await r.accept(upsert('a'), (rec) => ({ topic: Topic.SourceEvents, key: rec.document_id, value: 'x' }));
    const sql = (r as unknown as { stmt: { outboxClaimable: Database.Statement } }).stmt.outboxClaimable.source;
    const db = new Database(path.join(dir, 'registry.db'), { readonly: true });
    try {
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(0, 100, 1000) as { detail: string }[]).map((p) => p.detail);
      expect(plan).toContainEqual('SCAN outbox USING COVERING INDEX outbox_claim');
      // the one other use of the table: the claimed rows, one primary-key lookup each (no scan of the outbox)
      expect(plan).toContainEqual('SEARCH o USING INTEGER PRIMARY KEY (rowid=?)');
      expect(plan.filter((d) => /^SCAN (o|outbox)\b/.test(d))).toEqual(['SCAN outbox USING COVERING INDEX outbox_claim']);
    } finally {
      db.close();
    }
  });

  it('stores an outbox message in the same transaction as the change it announces', async () => {
    const r = make();
    const rec = await r.accept(upsert('d'), (record) => ({ topic: Topic.SourceEvents, key: record.document_id, value: { version: record.version } }));
    expect(rec.version).toBe(1);
    const claimed = await r.claimOutbox(10, 60_000);
    expect(claimed).toEqual([{ id: expect.any(Number), topic: Topic.SourceEvents, key: 'd', value: { version: 1 }, attempts: 0 }]);
    // Claimed: a second relay does not take it while the lease holds.
    expect(await r.claimOutbox(10, 60_000)).toEqual([]);
    await r.releaseOutbox(claimed.map((c) => c.id));
    const again = await r.claimOutbox(10, 60_000);
    expect(again.map((c) => c.attempts)).toEqual([1]);
    await r.completeOutbox(again.map((c) => c.id));
    await r.releaseOutbox(again.map((c) => c.id));
    expect(await r.claimOutbox(10, 0)).toEqual([]);
  });

  it('rolls the change back when its outbox message cannot be built, and hands expired claims to the next relay', async () => {
    const r = make();
    await expect(
      r.accept(upsert('d'), () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await r.get('d')).toBeNull();
    await r.accept(upsert('d'), (record) => ({ topic: Topic.SourceEvents, key: 'd', value: record.version }));
    await r.accept(upsert('d'), (record) => ({ topic: Topic.SourceEvents, key: 'd', value: record.version }));
    expect((await r.claimOutbox(1, -1)).map((c) => c.value)).toEqual([1]);
    // The lease above already expired (a relay that died): the oldest message comes back first.
    expect((await r.claimOutbox(10, 60_000)).map((c) => c.value)).toEqual([1, 2]);
  });

  it('persists across close and reopen', async () => {
    const r1 = make();
    await r1.accept(upsert('d', { title: 'T', metadata: { x: 1 } }));
    await r1.markIndexed('d', 1, HASH_A, 2);
    const before = await r1.get('d');
    await r1.close();
    const r2 = make();
    expect(await r2.get('d')).toEqual(before);
    expect((await r2.accept(upsert('d'))).version).toBe(2);
    expect((await r2.activeVersions(['d'])).get('d')).toBe(1);
  });

  it('rejects use after close, and close is idempotent', async () => {
    const r = make();
    await r.close();
    await r.close();
    await expect(r.get('d')).rejects.toThrow(/closed/);
  });
});
