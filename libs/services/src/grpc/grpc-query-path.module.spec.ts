import 'reflect-metadata';
import { Global, Module, type DynamicModule, type INestApplication, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { QueryOrchestrator, type RerankCall } from '@rag/application';
import { loadConfig, setLogLevel, type AppConfig } from '@rag/platform';
import { BUS, EMBEDDER, KEYWORD_INDEX, LLM, REGISTRY, RERANKER, VECTOR_STORE, type Bus, type Registry } from '@rag/ports';
import { CONFIG, RERANK_CALL } from '../core/tokens';
import { EmbedderModule } from '../embedder/embedder.module';
import { GatewayModule } from '../gateway/gateway.module';
import { GeneratorModule } from '../generator/generator.module';
import { RerankerModule } from '../reranker/reranker.module';
import { RetrieverModule } from '../retriever/retriever.module';
import type { QueryPathService } from '@rag/contracts';
import { checkHealth, createLocalQueryPath, freePort, serveGrpc, type TestGrpcServer } from './grpc-test-fixtures';
import { GrpcQueryPathModule, GrpcServerModule } from './grpc-query-path.module';
import { connectGrpcMicroservice } from './grpc-server';
import { createGrpcClient, grpcQueryPathCalls } from './query-path.grpc.client';

setLogLevel('silent');

/** Stand-in for CoreModule: the config and whatever ports a test process needs. */
function testCore(config: AppConfig, ports: { provide: symbol; useValue: unknown }[] = []): DynamicModule {
  @Global()
  @Module({})
  class TestCore {}
  const providers = [{ provide: CONFIG, useValue: config }, ...ports];
  return { module: TestCore, global: true, providers, exports: providers.map((p) => p.provide) };
}

const context = (imports: (DynamicModule | (new () => unknown))[]) =>
  NestFactory.createApplicationContext({ module: class Root {}, imports }, { logger: false, abortOnError: false });

/** What runStandalone(…, { grpc: service }) does: a Nest app with GrpcServerModule, Transport.GRPC on RAG_GRPC_PORT. */
async function grpcApp(config: AppConfig, service: QueryPathService, imports: DynamicModule[]): Promise<{ app: INestApplication; address: string | undefined }> {
  const app = await NestFactory.create({ module: class Root {}, imports }, { logger: false, abortOnError: false });
  const address = connectGrpcMicroservice(app, config, service);
  await app.startAllMicroservices();
  await app.init();
  return { app, address };
}

describe('GrpcServerModule', () => {
  it('serves a service on RAG_GRPC_PORT from bootstrap and stops on shutdown', async () => {
    const port = await freePort();
    const config = loadConfig({ RAG_GRPC_PORT: String(port), RAG_HOST: '127.0.0.1' });
    const { app: ctx, address: bound } = await grpcApp(config, 'reranker', [testCore(config, [{ provide: RERANKER, useValue: null }]), GrpcServerModule.forService('reranker', RerankerModule)]);
    const address = `127.0.0.1:${port}`;
    try {
      expect(bound).toBe(address);
      expect(await checkHealth(address, 'rag.v1.Reranker')).toBe('SERVING');
      expect(await checkHealth(address)).toBe('SERVING');
      const clients = await context([testCore(loadConfig({ RAG_RERANKER_GRPC: address, RAG_RERANKER: 'cross-encoder' })), GrpcQueryPathModule]);
      try {
        const rerank = clients.get<RerankCall>(RERANK_CALL, { strict: false });
        expect(rerank.available).toBe(true);
        const r = await rerank.rerank('q', [{ chunk_id: 'd#v1#0', document_id: 'd', title: 't', text: 'x', score: 1, heading_path: [] }], 1);
        expect(r.degraded).toEqual(['reranker']);
        expect(rerank.available).toBe(false);
      } finally {
        await clients.close();
      }
    } finally {
      await ctx.close();
    }
    await expect(checkHealth(address, '', 500)).rejects.toBeDefined();
  });

  it('serves nothing when RAG_GRPC_PORT is 0', async () => {
    const { app: ctx, address } = await grpcApp(loadConfig({}), 'reranker', [testCore(loadConfig({}), [{ provide: RERANKER, useValue: null }]), GrpcServerModule.forService('reranker', RerankerModule)]);
    try {
      expect(address).toBeUndefined();
      expect(ctx.getMicroservices()).toEqual([]);
    } finally {
      await ctx.close();
    }
  });

  it('wires the embedder, retriever and generator modules to their services', async () => {
    const local = await createLocalQueryPath();
    const contexts: INestApplicationContext[] = [];
    const proxies: ReturnType<typeof createGrpcClient>[] = [];
    try {
      const idle: Pick<Bus, 'subscribe'> = { subscribe: async () => undefined };
      const specs = [
        ['embedder', EmbedderModule, 'rag.v1.Embedder', [{ provide: EMBEDDER, useValue: local.embedder }, { provide: BUS, useValue: idle }]],
        [
          'retriever',
          RetrieverModule,
          'rag.v1.Retriever',
          [
            { provide: VECTOR_STORE, useValue: local.stores.vectors },
            { provide: KEYWORD_INDEX, useValue: local.stores.keywords },
            { provide: REGISTRY, useValue: local.stores.registry },
          ],
        ],
        ['generator', GeneratorModule, 'rag.v1.Generator', [{ provide: LLM, useValue: null }]],
      ] as const;
      const addresses: Record<string, string> = {};
      for (const [service, mod, name, ports] of specs) {
        const port = await freePort();
        const config = loadConfig({ RAG_GRPC_PORT: String(port) });
        contexts.push((await grpcApp(config, service, [testCore(config, [...ports]), GrpcServerModule.forService(service, mod)])).app);
        addresses[service] = `127.0.0.1:${port}`;
        expect(await checkHealth(addresses[service]!, name)).toBe('SERVING');
      }
      const proxy = (a: string) => {
        const c = createGrpcClient(a);
        proxies.push(c);
        return c;
      };
      const clients = grpcQueryPathCalls(
        { embedder: proxy(addresses.embedder!), retriever: proxy(addresses.retriever!), reranker: proxy('127.0.0.1:1'), generator: proxy(addresses.generator!) },
        loadConfig({}),
      );
      {
        const vector = await clients.embedding.embedQuery('panel flutter');
        const found = await clients.retrieve.retrieve({ query: 'panel flutter', vector, top_k: 3, candidates: 10, mode: 'hybrid', scope: { tenant: 'default' } });
        expect(found.results[0]?.document_id).toBe('flutter');
        const answer = await clients.generate.generate('What is panel flutter?', found.results);
        expect(answer.refused).toBe(false);
      }
    } finally {
      for (const p of proxies) p.close();
      for (const c of contexts) await c.close();
      await local.close();
    }
  });
});

describe('GatewayModule.register(GrpcQueryPathModule)', () => {
  let local: Awaited<ReturnType<typeof createLocalQueryPath>>;
  let servers: TestGrpcServer[] = [];
  beforeAll(async () => {
    local = await createLocalQueryPath();
  });
  afterAll(async () => {
    for (const s of servers) await s.close();
    await local.close();
  });

  it('answers through the gateway orchestrator with every query-path call over gRPC', async () => {
    servers = [
      await serveGrpc('embedder', local.embedder),
      await serveGrpc('retriever', local.retriever),
      await serveGrpc('reranker', local.reranker),
      await serveGrpc('generator', local.generator),
    ];
    const [embedder, retriever, reranker, generator] = servers.map((s) => s.address) as [string, string, string, string];
    const config = loadConfig({ RAG_EMBEDDER_GRPC: embedder, RAG_RETRIEVER_GRPC: retriever, RAG_RERANKER_GRPC: reranker, RAG_GENERATOR_GRPC: generator, RAG_DEADLINE_MS: '5000' });
    const bus: Pick<Bus, 'subscribe'> = { subscribe: async () => undefined };
    const registry: Partial<Registry> = {};
    const ctx = await context([
      testCore(config, [
        { provide: BUS, useValue: bus },
        { provide: REGISTRY, useValue: registry },
      ]),
      GatewayModule.register(GrpcQueryPathModule),
    ]);
    try {
      const query = ctx.get(QueryOrchestrator, { strict: false });
      const a = await query.answer({ question: 'What makes the boundary layer on a swept wing unstable?' }, { tenant: 'default' });
      expect(a.refused).toBe(false);
      expect(a.citations[0]?.document_id).toBe('wing');
      expect(a.degraded).toEqual([]);
      const filtered = await query.retrieve({ question: 'supersonic flow', filters: { team: 'structures' } }, { tenant: 'default' });
      expect(filtered.results.map((r) => r.document_id)).toEqual(['flutter']);
      // a query-path service going away: the embedder → dense degraded; the retriever → 503-mapped AppError
      await servers[0]!.close();
      const degraded = await query.retrieve({ question: 'supersonic flow' }, { tenant: 'default' });
      expect(degraded.degraded).toContain('dense');
      await servers[1]!.close();
      await expect(query.retrieve({ question: 'supersonic flow' }, { tenant: 'default' })).rejects.toMatchObject({ code: 'unavailable' });
    } finally {
      await ctx.close();
    }
  });
});
