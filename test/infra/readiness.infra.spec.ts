/**
 * Readiness against real servers (issue 12 item 4): the indexer's parts (Kafka bus, registry, Milvus, OpenSearch)
 * composed as the indexer process composes them, /readyz served by the same health endpoints. OpenSearch is reached
 * through a loopback TCP proxy this test starts and stops — the shared OpenSearch itself is never stopped — so the
 * probe sees the keyword index go away and come back. (Kafka cannot be cut the same way: clients reconnect to the
 * broker's advertised address, not the proxy's, so the bus check is shown failing on a disconnected bus.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { loadConfig } from '@rag/platform';
import { BUS, KEYWORD_INDEX, VECTOR_STORE, type Bus } from '@rag/ports';
import { CoreModule, type Part } from '../../libs/services/src/core/core.module';
import { HealthEndpointsModule } from '../../libs/services/src/core/health-endpoints';
import type { OpenSearchKeywordIndex } from '../../libs/adapters/src/opensearch';
import type { MilvusVectorStore } from '../../libs/adapters/src/milvus';

const BASE = Number(process.env.RAG_TEST_PORT_BASE ?? 18080);
const PROXY_PORT = BASE + 20;
const OPENSEARCH = new URL(process.env.RAG_OPENSEARCH_URL ?? 'http://127.0.0.1:9200');
const run = `ready${Date.now().toString(36)}`;
const INDEXER: Part[] = ['bus', 'registry', 'vectors', 'keywords'];

/** A TCP proxy on 127.0.0.1:PROXY_PORT to OpenSearch; stop() closes the port and cuts every open connection. */
function proxy() {
  let server: net.Server | undefined;
  const sockets = new Set<net.Socket>();
  return {
    start: () =>
      new Promise<void>((resolve, reject) => {
        server = net.createServer((client) => {
          const upstream = net.connect({ host: OPENSEARCH.hostname, port: Number(OPENSEARCH.port || 9200) });
          for (const s of [client, upstream]) {
            sockets.add(s);
            s.on('close', () => sockets.delete(s));
            s.on('error', () => undefined);
          }
          client.pipe(upstream).pipe(client);
          client.on('close', () => upstream.destroy());
          upstream.on('close', () => client.destroy());
        });
        server.once('error', reject);
        server.listen(PROXY_PORT, '127.0.0.1', () => resolve());
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        if (!server) return resolve();
        server.close(() => resolve());
        server = undefined;
      }),
  };
}

type ReadyBody = { status: string; error?: string; checks: Record<string, { status: string; message?: string }> };

const dirs: string[] = [];
const apps: INestApplication[] = [];
const search = proxy();

async function start(env: Record<string, string>) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-ready-infra-'));
  dirs.push(dir);
  const config = loadConfig({
    RAG_DATA_DIR: dir,
    RAG_EMBEDDER: 'hashing',
    RAG_BUS: 'kafka',
    RAG_KAFKA_TOPIC_PREFIX: `${run}.`,
    RAG_VECTOR_STORE: 'milvus',
    RAG_MILVUS_COLLECTION_PREFIX: run,
    RAG_KEYWORD_INDEX: 'opensearch',
    RAG_KEYWORD_INDEX_PREFIX: `${run}-chunks`,
    RAG_OPENSEARCH_URL: `http://127.0.0.1:${PROXY_PORT}`,
    RAG_DEADLINE_MS: '3000',
    ...env,
  });
  const app = (await Test.createTestingModule({ imports: [CoreModule.forRoot(config, INDEXER), HealthEndpointsModule] }).compile()).createNestApplication({
    logger: false,
  });
  apps.push(app);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as AddressInfo).port;
  const readyz = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/readyz`);
    return { code: res.status, body: (await res.json()) as ReadyBody };
  };
  /** Polls /readyz until it answers `code` (each answer within the 2 s check bound), or gives up after `rounds`. */
  const until = async (code: number, rounds = 60) => {
    let last = await readyz();
    for (let i = 0; i < rounds && last.code !== code; i++) {
      await new Promise((r) => setTimeout(r, 500));
      last = await readyz();
    }
    return last;
  };
  return { app, readyz, until };
}

beforeAll(() => search.start());

afterAll(async () => {
  await search.stop();
  await search.start(); // the cleanup below reaches OpenSearch through the proxy
  for (const app of apps) {
    await app
      .get<OpenSearchKeywordIndex>(KEYWORD_INDEX)
      .dropAll()
      .catch(() => undefined);
    await app
      .get<MilvusVectorStore>(VECTOR_STORE)
      .drop()
      .catch(() => undefined);
    await app.close().catch(() => undefined);
  }
  await search.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 120_000);

describe('indexer readiness on real Kafka, Milvus and OpenSearch', () => {
  it('is ready with every dependency up, fails naming the keyword index while OpenSearch is unreachable, and recovers', async () => {
    const { until } = await start({});
    const ready = await until(200);
    expect(ready.code, JSON.stringify(ready.body)).toBe(200);
    expect(Object.fromEntries(Object.entries(ready.body.checks).map(([k, c]) => [k, c.status]))).toEqual({
      bus: 'up',
      registry: 'up',
      vectors: 'up',
      keywords: 'up',
    });

    await search.stop();
    const down = await until(503);
    expect(down.code).toBe(503);
    expect(down.body.status).toBe('not_ready');
    expect(down.body.checks.keywords!.status).toBe('down');
    expect(down.body.error).toMatch(/^keywords: /);
    expect(down.body.checks.vectors!.status).toBe('up');
    expect(down.body.checks.bus!.status).toBe('up');

    await search.start();
    const back = await until(200);
    expect(back.code, JSON.stringify(back.body)).toBe(200);
    expect(back.body.checks.keywords!.status).toBe('up');
  }, 180_000);

  it('is not ready once its Kafka bus is disconnected', async () => {
    const { app, until } = await start({});
    expect((await until(200)).code).toBe(200);
    await app.get<Bus>(BUS).close();
    const r = await until(503, 10);
    expect(r.code).toBe(503);
    expect(r.body.checks.bus!.status).toBe('down');
    expect(r.body.error).toMatch(/^bus: /);
    expect(r.body.checks.keywords!.status).toBe('up');
  }, 120_000);
});
