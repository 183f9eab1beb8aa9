import { mkdtempSync, openSync, readFileSync, statSync, truncateSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { runEmbedded } from '@rag/services';
import { loadConfig } from '@rag/platform';
import { api, removeDir, startServer, type Server } from './harness';

/**
 * Damaged store files (issue 11, item 8): start-up checks every embedded store (SQLite quick_check, expected schema,
 * registry vs index counts) and refuses with one line naming the file; a query hitting a damaged page answers 503
 * store_corrupt naming the file and /readyz turns 503.
 */

const DOCS = 60;
const TEXT = (i: number) =>
  `Document ${i} is about boundary layer transition number ${i}. The heat transfer rate depends on the Reynolds number, ` +
  `the Mach number and the wall temperature ratio; experiments ${i} in the shock tunnel confirm the laminar prediction. `.repeat(3);

/** A data folder holding DOCS indexed documents, made once and copied for each test. */
let seed: string;
const dirs: string[] = [];

function copyOfSeed(): string {
  const dir = mkdtempSync(join(tmpdir(), 'rag-integrity-'));
  dirs.push(dir);
  for (const f of ['registry.db', 'keyword.db', 'bus.db', 'api-keys.db']) {
    try {
      writeFileSync(join(dir, f), readFileSync(join(seed, f)));
    } catch {
      /* not every store has a file */
    }
  }
  return dir;
}

/** Deterministic "random" bytes (an LCG), so a failure reproduces. */
function noise(n: number, seedValue = 12345): Buffer {
  const b = Buffer.alloc(n);
  let x = seedValue >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    b[i] = x >>> 24;
  }
  return b;
}

/** Overwrites the middle page of table/index `name` in a closed SQLite file with noise. */
function scramblePageOf(file: string, name: string): number {
  const db = new Database(file, { readonly: true });
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pages = db.prepare<[string], { pageno: number }>("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno").all(name);
  db.close();
  expect(pages.length, `${name} has leaf pages`).toBeGreaterThan(0);
  const page = pages[Math.floor(pages.length / 2)]!.pageno;
  const fd = openSync(file, 'r+');
  writeSync(fd, noise(pageSize - 200), 0, pageSize - 200, (page - 1) * pageSize + 100);
  closeSync(fd);
  return page;
}

async function startFails(dir: string, env: Record<string, string> = {}): Promise<string> {
  try {
    const s = await startServer(dir, env);
    await s.stop();
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
  throw new Error('the server started');
}

/**
 * Until n documents are indexed and the bus has nothing left to deliver: the registry says `indexed` before the status
 * projector has read the indexer's events, and a seed stopped with some unread would replay them at the next start
 * (reading the registry before the query a test makes meet its damage first).
 */
async function waitIndexed(server: Server, n: number): Promise<void> {
  for (;;) {
    const r = await api<{ documents?: { indexed: number }; backlog?: number }>(server, 'GET', '/readyz');
    if ((r.body.documents?.indexed ?? 0) >= n && r.body.backlog === 0) return;
    await new Promise((res) => setTimeout(res, 100));
  }
}

beforeAll(async () => {
  seed = mkdtempSync(join(tmpdir(), 'rag-integrity-seed-'));
  const s = await startServer(seed);
  const r = await api(s, 'POST', '/v1/documents:batch', {
    documents: Array.from({ length: DOCS }, (_, i) => ({ id: `doc-${i}`, title: `Transition ${i}`, text: TEXT(i) })),
  });
  expect(r.status).toBe(202);
  await waitIndexed(s, DOCS);
  await s.stop(); // a clean stop: the WAL is checkpointed into the files
}, 120_000);

afterAll(() => {
  for (const d of [seed, ...dirs]) if (d) removeDir(d);
});

describe('store integrity at start-up', () => {
  it('a healthy data folder restarts ready, with the store check in /readyz', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rag-integrity-'));
    dirs.push(dir);
    for (const f of ['registry.db', 'keyword.db', 'bus.db']) writeFileSync(join(dir, f), readFileSync(join(seed, f)));
    const s = await startServer(dir);
    try {
      const r = await api<{ status: string; documents: { indexed: number }; stores: { problems: unknown[]; counts: { registryIndexedChunks: number; keywordChunks: number } } }>(
        s,
        'GET',
        '/readyz',
      );
      expect(r.status).toBe(200);
      expect(r.body.status).toBe('ready');
      expect(r.body.documents.indexed).toBe(DOCS);
      expect(r.body.stores.problems).toEqual([]);
      expect(r.body.stores.counts.keywordChunks).toBe(r.body.stores.counts.registryIndexedChunks);
      const q = await api(s, 'POST', '/v1/retrieve', { query: 'boundary layer transition', top_k: 3 });
      expect(q.status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  it('refuses to start on a registry.db truncated to 0 bytes beside a populated keyword index, naming the file and the override', async () => {
    const dir = copyOfSeed();
    truncateSync(join(dir, 'registry.db'), 0);
    const message = await startFails(dir);
    expect(message).toContain(join(dir, 'registry.db'));
    expect(message).toMatch(/holds no documents, but .*keyword\.db holds \d+ chunks/);
    expect(message).toContain('RAG_ALLOW_EMPTY_REGISTRY=true');
    expect(message.split('\n')).toHaveLength(1);

    // The deliberate override starts, and readiness says what was allowed.
    const s = await startServer(dir, { RAG_ALLOW_EMPTY_REGISTRY: 'true' });
    try {
      const r = await api<{ status: string; stores: { warnings: string[] } }>(s, 'GET', '/readyz');
      expect(r.status).toBe(200);
      expect(r.body.stores.warnings.join('\n')).toMatch(/registry\.db holds no documents.*allowed by RAG_ALLOW_EMPTY_REGISTRY/);
    } finally {
      await s.stop();
    }
  });

  it.each([
    ['registry.db', 'documents'],
    ['keyword.db', 'blocks'],
  ])('refuses to start when random bytes land in the middle of %s, naming the file', async (file, table) => {
    const dir = copyOfSeed();
    scramblePageOf(join(dir, file), table);
    const message = await startFails(dir);
    expect(message.split('\n')[0]).toMatch(new RegExp(`^${join(dir, file).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is corrupt \\(.+\\): restore it from a backup or move it away to start empty$`));
  });

  it('a file that is not SQLite ends the start with one line naming it', async () => {
    const dir = copyOfSeed();
    writeFileSync(join(dir, 'keyword.db'), 'this is not a database at all, just some text a user copied over the file\n'.repeat(100));
    const message = await startFails(dir);
    expect(message).toBe(
      `${join(dir, 'keyword.db')} is not a valid SQLite database (file is not a database): restore it from a backup or move it away to start empty`,
    );
  });

  it('`rag start` (runEmbedded) prints that one line and exits non-zero instead of a stack trace', async () => {
    const dir = copyOfSeed();
    writeFileSync(join(dir, 'registry.db'), noise(8192));
    const lines: string[] = [];
    const write = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      lines.push(String(chunk));
      return true;
    });
    const exit = vi.spyOn(process, 'exit').mockImplementation(((code?: number) => {
      throw new Error(`exit ${code}`);
    }) as never);
    try {
      const config = loadConfig({ RAG_EMBEDDER: 'hashing', RAG_DATA_DIR: dir, RAG_PORT: '0', RAG_HOST: '127.0.0.1' });
      await expect(runEmbedded(config)).rejects.toThrow('exit 2');
    } finally {
      write.mockRestore();
      exit.mockRestore();
    }
    expect(lines).toEqual([
      `rag: ${join(dir, 'registry.db')} is not a valid SQLite database (file is not a database): restore it from a backup or move it away to start empty\n`,
    ]);
    expect(() => statSync(join(dir, 'embedded.lock'))).toThrow(); // the data folder is unlocked again
  });
});

describe('store corruption at run time', () => {
  it('a query hitting a damaged registry page answers 503 store_corrupt naming registry.db, and /readyz turns 503', async () => {
    const dir = copyOfSeed();
    // The primary-key index the query's version fence reads; with the structure check off, start-up reads only the
    // schema and the table's rows (counts), so the damage is first met by a query.
    scramblePageOf(join(dir, 'registry.db'), 'sqlite_autoindex_documents_1');
    const s = await startServer(dir, { RAG_INTEGRITY_CHECK: 'off' });
    try {
      expect((await api(s, 'GET', '/readyz')).status).toBe(200);
      const docs = await Promise.all(Array.from({ length: 20 }, (_, i) => api(s, 'GET', `/v1/documents/doc-${i}`)));
      const q = await api<{ error: { code: string; message: string } }>(s, 'POST', '/v1/query', { question: 'boundary layer transition heat transfer', top_k: 5 });
      const failed = [q, ...docs].filter((r) => r.status !== 200 && r.status !== 404);
      expect(failed.length).toBeGreaterThan(0);
      for (const r of failed) {
        expect(r.status).toBe(503);
        expect((r.body as { error: { code: string } }).error.code).toBe('store_corrupt');
        expect((r.body as { error: { message: string } }).error.message).toContain(join(dir, 'registry.db'));
      }
      const ready = await api<{ status: string; error: string }>(s, 'GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.error).toContain(join(dir, 'registry.db'));
    } finally {
      await s.stop();
    }
  });
});
