import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import { testChunk, type Chunk } from '@rag/contracts';
import { loadConfig } from '@rag/platform';
import { KEYWORD_INDEX, type KeywordIndex } from '@rag/ports';
import { CoreModule } from './core.module';

/*
 * Issue 13 item 3: with RAG_QUERY_WORKERS > 0 the embedded keyword index the services get searches on worker threads
 * (same hits as on the main thread); with 0 it is the plain embedded index.
 */
const chunk = (doc: string, text: string): Chunk => testChunk(`${doc}#v1#0`, { text, token_count: 6 });
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function keywordIndexWith(workers: number, minMs = 0, writeWorker = false) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-kw-wiring-'));
  dirs.push(dir);
  const config = loadConfig({ RAG_DATA_DIR: dir, RAG_EMBEDDER: 'hashing', RAG_KEYWORD_INDEX: 'embedded', RAG_QUERY_WORKERS: String(workers), RAG_QUERY_WORKERS_MIN_MS: String(minMs), RAG_KEYWORD_WRITE_WORKER: String(writeWorker) });
  const app = await Test.createTestingModule({ imports: [CoreModule.forRoot(config, ['keywords'])] }).compile();
  await app.init();
  return { app, index: app.get<KeywordIndex>(KEYWORD_INDEX) };
}

describe('CoreModule keyword index and RAG_QUERY_WORKERS', () => {
  it('wraps the embedded index in worker threads with RAG_QUERY_WORKERS=1 and not with 0; both find the same', async () => {
    const pooled = await keywordIndexWith(1);
    const plain = await keywordIndexWith(0);
    try {
      expect(pooled.index.constructor.name).toBe('OffloadedKeywordIndex');
      expect(plain.index.constructor.name).toBe('EmbeddedBm25KeywordIndex');
      const chunks = [chunk('a', 'The wing root carries the bending load.'), chunk('b', 'Shock tubes measure test times.')];
      for (const x of [pooled, plain]) await x.index.upsert(chunks);
      const req = { query: 'wing load', k: 5, scope: { tenant: 't' } };
      const hits = await pooled.index.search(req);
      expect(hits.map((h) => h.chunk_id)).toEqual(['a#v1#0']);
      expect(hits).toEqual(await plain.index.search(req));
      expect((pooled.index as unknown as { stats(): { inWorker: number } }).stats().inWorker).toBe(1);
    } finally {
      await pooled.app.close();
      await plain.app.close();
    }
  }, 60_000);

  it('writes on a writer thread with RAG_KEYWORD_WRITE_WORKER (default true), under the search workers; same hits', async () => {
    expect(loadConfig({ RAG_DATA_DIR: '/tmp/unused' }).RAG_KEYWORD_WRITE_WORKER).toBe(true);
    const both = await keywordIndexWith(1, 0, true);
    const writerOnly = await keywordIndexWith(0, 0, true);
    const plain = await keywordIndexWith(0, 0, false);
    try {
      expect(both.index.constructor.name).toBe('OffloadedKeywordIndex');
      expect(writerOnly.index.constructor.name).toBe('OffloadedKeywordWrites');
      const chunks = [chunk('a', 'The wing root carries the bending load.'), chunk('b', 'Shock tubes measure test times.')];
      for (const x of [both, writerOnly, plain]) await x.index.upsert(chunks);
      const req = { query: 'wing load', k: 5, scope: { tenant: 't' } };
      const expected = await plain.index.search(req);
      expect(expected.map((h) => h.chunk_id)).toEqual(['a#v1#0']);
      expect(await both.index.search(req)).toEqual(expected);
      expect(await writerOnly.index.search(req)).toEqual(expected);
      expect((writerOnly.index as unknown as { stats(): { worker: number } }).stats().worker).toBe(1);
    } finally {
      await both.app.close();
      await writerOnly.app.close();
      await plain.app.close();
    }
  }, 60_000);

  it('defaults: two workers where there are two cores or more (64 searches may wait for each), and only for searches over RAG_QUERY_WORKERS_MIN_MS (3 ms) — a small index searches on the main thread', async () => {
    const defaults = loadConfig({ RAG_DATA_DIR: '/tmp/unused' });
    expect(defaults.RAG_QUERY_WORKERS).toBe(availableParallelism() >= 2 ? 2 : 0);
    expect(defaults.RAG_QUERY_WORKERS_QUEUE).toBe(64);
    expect(defaults.RAG_QUERY_WORKERS_MIN_MS).toBe(3);
    const pooled = await keywordIndexWith(1, 3);
    try {
      await pooled.index.upsert([chunk('a', 'The wing root carries the bending load.')]);
      for (let i = 0; i < 20; i++) expect((await pooled.index.search({ query: 'wing load', k: 5, scope: { tenant: 't' } })).length).toBe(1);
      expect((pooled.index as unknown as { stats(): { inWorker: number; small: number } }).stats()).toMatchObject({ inWorker: 0, small: 20 });
    } finally {
      await pooled.app.close();
    }
  }, 60_000);
});
