import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { loadConfig } from '@rag/platform';
import { BUS, KEYWORD_INDEX, VECTOR_STORE, type Bus, type KeywordIndex, type VectorStore } from '@rag/ports';
import { CoreModule, type Part } from './core.module';
import { HealthEndpointsModule } from './health-endpoints';
import { READY_CHECK_TIMEOUT_MS, ReadinessService } from './readiness';

/*
 * Issue 12 item 4: a stage service's /readyz checks what the service needs and fails when a dependency stops. The
 * embedded adapters (SQLite log bus, SQLite registry, HNSW store, BM25 index) are the real ones; a dependency that
 * goes away and comes back is a store whose count() is switched between failing and answering.
 */
type ReadyBody = { status: string; error?: string; checks: Record<string, { status: string; message?: string } & Record<string, unknown>> };

const dirs: string[] = [];
const apps: INestApplication[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(parts: Part[], override?: { token: symbol; value: unknown }) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-ready-'));
  dirs.push(dir);
  const config = loadConfig({ RAG_DATA_DIR: dir, RAG_EMBEDDER: 'hashing', RAG_BUS: 'embedded', RAG_VECTOR_STORE: 'embedded', RAG_KEYWORD_INDEX: 'embedded' });
  let builder = Test.createTestingModule({ imports: [CoreModule.forRoot(config, parts), HealthEndpointsModule] });
  if (override) builder = builder.overrideProvider(override.token).useValue(override.value);
  const app = (await builder.compile()).createNestApplication({ logger: false });
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { code: res.status, body: (await res.json()) as ReadyBody };
  };
  return { app, readyz };
}

describe('GET /readyz of a stage service', () => {
  it('is ready when the bus, registry, vector store and keyword index all answer, with each check listed', async () => {
    const { readyz } = await start(['bus', 'registry', 'vectors', 'keywords']);
    const r = await readyz();
    expect(r.code).toBe(200);
    expect(r.body.status).toBe('ready');
    expect(Object.keys(r.body.checks).sort()).toEqual(['bus', 'keywords', 'registry', 'vectors']);
    for (const c of Object.values(r.body.checks)) expect(c.status).toBe('up');
    expect(r.body.checks.keywords).toMatchObject({ chunks: 0 });
    expect(r.body.checks.bus).toMatchObject({ backlog: 0 });
  });

  it('turns 503 naming the keyword index once it is closed, while the other checks stay up', async () => {
    const { app, readyz } = await start(['bus', 'registry', 'vectors', 'keywords']);
    await app.get<KeywordIndex>(KEYWORD_INDEX).close();
    const r = await readyz();
    expect(r.code).toBe(503);
    expect(r.body.status).toBe('not_ready');
    expect(r.body.checks.keywords!.status).toBe('down');
    expect(r.body.error).toMatch(/^keywords: .*closed/);
    expect(r.body.checks.bus!.status).toBe('up');
    expect(r.body.checks.vectors!.status).toBe('up');
  });

  it('turns 503 naming the bus once the SQLite log is closed', async () => {
    const { app, readyz } = await start(['bus']);
    expect((await readyz()).code).toBe(200);
    await app.get<Bus>(BUS).close();
    const r = await readyz();
    expect(r.code).toBe(503);
    expect(r.body.checks.bus!.status).toBe('down');
    expect(r.body.error).toMatch(/^bus: /);
  });

  it('fails while the vector store is unreachable and recovers when it answers again', async () => {
    let reachable = true;
    const store = {
      count: async () => {
        if (!reachable) throw new Error('connect ECONNREFUSED 127.0.0.1:19530');
        return 7;
      },
      close: async () => undefined,
    } as unknown as VectorStore;
    const { readyz } = await start(['vectors'], { token: VECTOR_STORE, value: store });
    expect(await readyz()).toMatchObject({ code: 200, body: { status: 'ready', checks: { vectors: { status: 'up', vectors: 7 } } } });
    reachable = false;
    const down = await readyz();
    expect(down.code).toBe(503);
    expect(down.body.error).toBe('vectors: connect ECONNREFUSED 127.0.0.1:19530');
    reachable = true;
    expect((await readyz()).code).toBe(200);
  });

  it('reports a store that hangs as down after the check timeout instead of hanging the probe', async () => {
    const store = { count: () => new Promise<number>(() => undefined), close: async () => undefined } as unknown as VectorStore;
    const { readyz } = await start(['vectors'], { token: VECTOR_STORE, value: store });
    const r = await readyz();
    expect(r.code).toBe(503);
    expect(r.body.checks.vectors!.message).toBe(`timeout of ${READY_CHECK_TIMEOUT_MS}ms exceeded`);
  });

  it('lists the loaded embedding model, and an absent reranker or LLM as not configured without failing', async () => {
    const { readyz } = await start(['embedder', 'reranker', 'llm']);
    const r = await readyz();
    expect(r.code).toBe(200);
    expect(r.body.checks.embedder).toMatchObject({ status: 'up', dim: 384 });
    expect(String(r.body.checks.embedder!.model)).toMatch(/hashing/);
    expect(r.body.checks.reranker).toMatchObject({ status: 'up', configured: false });
    expect(r.body.checks.llm).toMatchObject({ status: 'up', configured: false });
  });

  it('is not ready once the service is shutting down', async () => {
    const { app } = await start(['registry']);
    const readiness = app.get(ReadinessService);
    expect((await readiness.readiness()).ok).toBe(true);
    await app.close();
    apps.splice(apps.indexOf(app), 1);
    const r = await readiness.readiness();
    expect(r).toMatchObject({ ok: false, status: 'shutting_down' });
  });
});
