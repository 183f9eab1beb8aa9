import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { EmbeddedBm25KeywordIndex } from '../embedded-bm25';
import { EmbeddedHnswVectorStore } from '../embedded-hnsw';
import { CachedEmbedder } from '../embedding-cache';
import { HashingEmbedder } from '../hashing-embedder';
import { SqliteLogBus } from '../log-bus';
import { SqliteApiKeyStore } from '../sqlite-api-keys';
import { SqliteRegistry, SqliteSourceStateStore } from '../sqlite-registry';
import { openSqlite } from './open-sqlite';
import { StoreCorruptError, observedCorruption } from './store-error';
import { testChunkOf } from '@rag/contracts';
import { loadConfig } from '@rag/platform';
import { createStoreInspector } from '../factory/shared-state.factory';
import { SqliteStoreInspector, type StoreFileTarget } from './sqlite-store-inspector';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'rag-inspect-'));
  dirs.push(d);
  return d;
};
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const space = { modelId: 'm', dim: 4 };
function targets(dir: string): StoreFileTarget[] {
  return [
    { store: 'registry', file: join(dir, 'registry.db') },
    { store: 'keyword', file: join(dir, 'keyword.db') },
    { store: 'vectors', file: join(dir, 'vectors', 'm-4', 'vectors.db') },
    { store: 'bus', file: join(dir, 'bus.db') },
    { store: 'api_keys', file: join(dir, 'api-keys.db') },
    { store: 'embedding_cache', file: join(dir, 'embedding-cache.db') },
  ];
}

describe('createStoreInspector', () => {
  it('inspects registry.db and api-keys.db exactly when the platform keeps its shared state in them', () => {
    const dir = tmp();
    const stores = (env: NodeJS.ProcessEnv) => createStoreInspector(loadConfig({ RAG_DATA_DIR: dir, ...env }), space).targets.map((t) => t.store);
    const all = ['registry', 'keyword', 'vectors', 'bus', 'api_keys', 'embedding_cache'];
    const withoutSharedState = ['keyword', 'vectors', 'bus', 'embedding_cache'];
    expect(stores({})).toEqual(all);
    expect(stores({ RAG_DATABASE_URL: 'postgres://rag@127.0.0.1:5432/rag' })).toEqual(withoutSharedState);
    writeFileSync(join(dir, 'url'), 'postgresql://rag@db:5432/rag\n');
    expect(stores({ RAG_DATABASE_URL_FILE: join(dir, 'url') })).toEqual(withoutSharedState);
    // An empty Secret file leaves the shared state in SQLite (databaseUrl), so its files are inspected.
    writeFileSync(join(dir, 'empty'), '\n');
    expect(stores({ RAG_DATABASE_URL_FILE: join(dir, 'empty') })).toEqual(all);
  });

  it('with the registry in PostgreSQL, an embedded index holding chunks is not taken for a lost registry', async () => {
    const dir = tmp();
    const kw = new EmbeddedBm25KeywordIndex({ dir });
    await kw.upsert([testChunkOf('d1', 1, 0, { tenant: 't', text: 'wing flutter at high speed' })]);
    await kw.close();
    const config = loadConfig({ RAG_DATA_DIR: dir, RAG_DATABASE_URL: 'postgres://rag@127.0.0.1:5432/rag' });
    const r = await createStoreInspector(config, space).inspect('quick');
    expect(r.files.filter((f) => !f.ok)).toEqual([]);
    expect(r.counts.keywordChunks).toBe(1);
    expect(r.counts.registryDocuments).toBeNull();
  });
});

describe('SqliteStoreInspector', () => {
  it('accepts the files every adapter creates (the expected schemas match the adapters)', async () => {
    const dir = tmp();
    const stores = [
      new SqliteRegistry({ dir }),
      new SqliteSourceStateStore({ dir }),
      new EmbeddedBm25KeywordIndex({ dir }),
      new EmbeddedHnswVectorStore({ dir: join(dir, 'vectors'), ...space, persistIntervalMs: 0 }),
      new SqliteLogBus({ path: join(dir, 'bus.db') }),
      new SqliteApiKeyStore({ dir }),
    ];
    const cache = new CachedEmbedder(new HashingEmbedder({ dim: 8 }), { sqlitePath: join(dir, 'embedding-cache.db') });
    for (const s of stores) await s.close();
    await cache.close?.();
    const r = await new SqliteStoreInspector(targets(dir)).inspect('quick');
    expect(r.files.filter((f) => !f.ok)).toEqual([]);
    expect(r.files.every((f) => f.exists)).toBe(true);
    expect(r.counts).toMatchObject({ registryDocuments: 0, registryIndexedChunks: 0, registryPendingDocuments: 0, keywordChunks: 0, vectorRecords: 0 });
  });

  it('missing and 0-byte files are new stores (counted as empty), not problems', async () => {
    const dir = tmp();
    writeFileSync(join(dir, 'registry.db'), '');
    const r = await new SqliteStoreInspector(targets(dir)).inspect('quick');
    expect(r.files.filter((f) => !f.ok)).toEqual([]);
    expect(r.counts.registryDocuments).toBe(0);
    expect(r.counts.keywordChunks).toBe(0);
  });

  it('reading a file ahead of the check (large files, cold start) finds the same: healthy ok, a scrambled page corrupt', async () => {
    const dir = tmp();
    const kw = new EmbeddedBm25KeywordIndex({ dir });
    await kw.upsert(Array.from({ length: 400 }, (_, i) => testChunkOf(`d${i}`, 1, 0, { tenant: 't', text: `wing flutter ${i} at speed ${i * 7} over the plate` })));
    await kw.close();
    const keyword = (r: Awaited<ReturnType<SqliteStoreInspector['inspect']>>) => r.files.find((f) => f.store === 'keyword')!;
    const without = await new SqliteStoreInspector(targets(dir), { readAheadMinBytes: Number.MAX_SAFE_INTEGER }).inspect('quick');
    const ahead = await new SqliteStoreInspector(targets(dir), { readAheadMinBytes: 0 }).inspect('quick');
    expect(keyword(ahead)).toEqual(keyword(without));
    expect(keyword(ahead).ok).toBe(true);
    expect(ahead.counts.keywordChunks).toBe(400);
    // Random bytes over every page after the first: the b-trees' pages are no longer pages.
    const file = join(dir, 'keyword.db');
    const pageSize = (() => {
      const db = new Database(file, { readonly: true });
      try {
        return db.pragma('page_size', { simple: true }) as number;
      } finally {
        db.close();
      }
    })();
    const fd = openSync(file, 'r+');
    try {
      const junk = Buffer.alloc(pageSize, 0xa5);
      for (let page = 1; page < 6; page++) writeSync(fd, junk, 0, junk.length, page * pageSize);
    } finally {
      closeSync(fd);
    }
    const scrambledWithout = await new SqliteStoreInspector(targets(dir), { readAheadMinBytes: Number.MAX_SAFE_INTEGER }).inspect('quick');
    const scrambledAhead = await new SqliteStoreInspector(targets(dir), { readAheadMinBytes: 0 }).inspect('quick');
    expect(keyword(scrambledAhead).ok).toBe(false);
    expect(keyword(scrambledAhead).problem).toMatch(/keyword\.db (is corrupt|.*malformed)/);
    expect(keyword(scrambledAhead)).toEqual(keyword(scrambledWithout));
  });

  it('a SQLite file of something else fails the schema check, naming the file and what is missing', async () => {
    const dir = tmp();
    const db = new Database(join(dir, 'keyword.db'));
    db.exec('CREATE TABLE chunks (id INTEGER PRIMARY KEY, text TEXT)');
    db.close();
    const r = await new SqliteStoreInspector(targets(dir)).inspect('quick');
    const bad = r.files.find((f) => f.store === 'keyword')!;
    expect(bad.ok).toBe(false);
    expect(bad.problem).toBe(
      `${join(dir, 'keyword.db')} does not hold the schema of the keyword index (table chunks lacks columns chunk_id, document_id, tenant, version, kind, acl, metadata, len, body; no table terms; no table stats): restore it from a backup or move it away to start empty`,
    );
  });

  it('reads the registry counts from the registry\'s counters, the same figures as a scan; an older file without them is scanned', async () => {
    const dir = tmp();
    const registry = new SqliteRegistry({ dir, synchronous: 'NORMAL' });
    const upsert = (id: string, tenant: string) => ({ change: { document_id: id, tenant, op: 'upsert' as const } });
    await registry.acceptMany([upsert('a', 't1'), upsert('b', 't1'), upsert('c', 't2'), upsert('d', 't2'), upsert('e', 't3')]);
    await registry.markIndexed('a', 1, 'h1', 4);
    await registry.markIndexed('c', 1, 'h2', 6);
    await registry.markProcessing('b', 1);
    await registry.markFailed('e', 1, 'x');
    await registry.accept({ document_id: 'c', tenant: 't2', op: 'upsert' });
    await registry.markIndexed('c', 2, 'h3', 2);
    await registry.accept({ document_id: 'a', tenant: 't1', op: 'delete' });
    await registry.markDeleted('a', 2);
    await registry.accept({ document_id: 'd', tenant: 't2', op: 'upsert' });
    await registry.close();
    const file = join(dir, 'registry.db');
    const raw = new Database(file);
    const scan = raw
      .prepare(
        "SELECT COUNT(*) AS registryDocuments, SUM(CASE WHEN active_version > 0 THEN chunks ELSE 0 END) AS registryIndexedChunks, SUM(CASE WHEN status IN ('queued', 'processing') THEN 1 ELSE 0 END) AS registryPendingDocuments FROM documents",
      )
      .get();
    expect(scan).toEqual({ registryDocuments: 5, registryIndexedChunks: 2, registryPendingDocuments: 2 });
    const inspector = new SqliteStoreInspector([{ store: 'registry', file }]);
    const registryCounts = async () => {
      const [inspected, counted] = [(await inspector.inspect('quick')).counts, await inspector.counts()];
      expect(counted).toEqual(inspected);
      const { registryDocuments, registryIndexedChunks, registryPendingDocuments } = counted;
      return { registryDocuments, registryIndexedChunks, registryPendingDocuments };
    };
    expect(await registryCounts()).toEqual(scan);

    // The figures come from the counters, not from the documents: a (deliberately) wrong total shows through.
    raw.exec('UPDATE document_chunk_totals SET active_chunks = 1000');
    expect((await registryCounts()).registryIndexedChunks).toBe(1000);
    // A file without the totals row, or made by a version with only the status counts, or none: scanned, same figures.
    raw.exec('DELETE FROM document_chunk_totals');
    expect(await registryCounts()).toEqual(scan);
    raw.exec('DROP TRIGGER document_chunk_totals_insert; DROP TRIGGER document_chunk_totals_update; DROP TRIGGER document_chunk_totals_delete; DROP TABLE document_chunk_totals');
    expect(await registryCounts()).toEqual(scan);
    raw.exec('DROP TRIGGER document_counts_insert; DROP TRIGGER document_counts_update; DROP TRIGGER document_counts_delete; DROP TABLE document_counts');
    raw.close();
    const inspected = await inspector.inspect('quick');
    expect(inspected.files.filter((f) => !f.ok)).toEqual([]); // an older registry still passes the schema check
    expect(await registryCounts()).toEqual(scan);
  });

  it('reads the vector records from the vector store\'s counter, the same figure as a scan; an older file without it is counted', async () => {
    const dir = tmp();
    const store = new EmbeddedHnswVectorStore({ dir: join(dir, 'vectors'), ...space, persistIntervalMs: 0, synchronous: 'NORMAL' });
    const vec = () => new Float32Array([Math.random(), Math.random(), Math.random(), 1]);
    const rec = (chunk: string, doc: string, version: number) => ({ chunk_id: chunk, document_id: doc, tenant: 't1', version, acl: ['*'], metadata: {}, vector: vec() });
    await store.upsert([rec('a#0', 'a', 1), rec('a#1', 'a', 1), rec('b#0', 'b', 1), rec('c#0', 'c', 1), rec('c#1', 'c', 1)]);
    await store.upsert([rec('a#0', 'a', 1), rec('a#2', 'a', 2)]);
    await store.deleteDocument('a', 2);
    await store.deleteDocument('b');
    await store.close();
    const file = join(dir, 'vectors', 'm-4', 'vectors.db');
    const raw = new Database(file);
    const scan = raw.prepare<[], { n: number }>('SELECT COUNT(*) AS n FROM records').get()!.n;
    expect(scan).toBe(3);
    const inspector = new SqliteStoreInspector([{ store: 'vectors', file }]);
    const vectorRecords = async () => {
      const [inspected, counted] = [(await inspector.inspect('quick')).counts, await inspector.counts()];
      expect(counted).toEqual(inspected);
      return counted.vectorRecords;
    };
    expect(await vectorRecords()).toBe(scan);

    // The figure comes from the counter, not from the records: a (deliberately) wrong counter shows through.
    raw.exec('UPDATE record_count SET n = 1000');
    expect(await vectorRecords()).toBe(1000);
    // A file without the counter's row, or made by a version without the counter: counted, same figure.
    raw.exec('DELETE FROM record_count');
    expect(await vectorRecords()).toBe(scan);
    raw.exec('DROP TRIGGER record_count_insert; DROP TRIGGER record_count_delete; DROP TABLE record_count');
    raw.close();
    const inspected = await inspector.inspect('quick');
    expect(inspected.files.filter((f) => !f.ok)).toEqual([]); // an older vector store still passes the schema check
    expect(await vectorRecords()).toBe(scan);
  });

  it('ping notices a file overwritten under the running service', async () => {
    const dir = tmp();
    await new SqliteRegistry({ dir }).close();
    const inspector = new SqliteStoreInspector(targets(dir));
    await inspector.inspect('quick');
    expect((await inspector.ping()).every((f) => f.ok)).toBe(true);
    writeFileSync(join(dir, 'registry.db'), 'garbage');
    const bad = (await inspector.ping()).find((f) => f.store === 'registry')!;
    expect(bad.problem).toMatch(/registry\.db is no longer a SQLite database/);
  });
});

describe('openSqlite', () => {
  it('keeps better-sqlite3 behaviour: chaining, iteration, transactions, and non-corruption errors with their code', () => {
    const file = join(tmp(), 'x.db');
    const db = openSqlite(file);
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER)');
    const ins = db.prepare('INSERT INTO t (k, v) VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 5; i++) ins.run(`k${i}`, i);
    })();
    expect(db.prepare('SELECT v FROM t ORDER BY v').pluck().all()).toEqual([0, 1, 2, 3, 4]);
    expect([...db.prepare<[], { k: string }>('SELECT k FROM t ORDER BY k').iterate()].map((r) => r.k)).toEqual(['k0', 'k1', 'k2', 'k3', 'k4']);
    let err: unknown;
    try {
      ins.run('k1', 9);
    } catch (e) {
      err = e;
    }
    expect((err as { code?: string }).code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
    expect(db.open).toBe(true);
    db.close();
  });

  it('a corruption error raised by a statement names the file and is recorded for readiness', () => {
    const file = join(tmp(), 'y.db');
    const raw = new Database(file);
    raw.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)');
    const ins = raw.prepare('INSERT INTO t VALUES (?, ?)');
    raw.transaction(() => {
      for (let i = 0; i < 2000; i++) ins.run(`key-${i}`, 'x'.repeat(100));
    })();
    const pageSize = raw.pragma('page_size', { simple: true }) as number;
    const pages = raw.prepare<[], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = 't' AND pagetype = 'leaf'").all();
    raw.close();
    const page = pages[Math.floor(pages.length / 2)]!.pageno;
    const buf = Buffer.alloc(pageSize, 0xa5);
    const fd = openSync(file, 'r+');
    writeSync(fd, buf, 0, pageSize, (page - 1) * pageSize);
    closeSync(fd);

    const db = openSqlite(file);
    let err: unknown;
    try {
      db.prepare('SELECT COUNT(v) FROM t').get();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreCorruptError);
    expect((err as Error).message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is corrupt \\(SQLITE_CORRUPT`));
    expect(observedCorruption([file]).map((e) => e.file)).toEqual([file]);
    db.close();
    openSqlite(file).close(); // opening it again (after a restore) clears the record
    expect(observedCorruption([file])).toEqual([]);
  });

  it('a file that is not a database fails to open with one line naming it', () => {
    const file = join(tmp(), 'z.db');
    writeFileSync(file, 'hello, not sqlite\n'.repeat(64));
    expect(() => openSqlite(file)).toThrow(
      `${file} is not a valid SQLite database (file is not a database): restore it from a backup or move it away to start empty`,
    );
  });
});
