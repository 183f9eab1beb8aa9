import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedBm25KeywordIndex, EmbeddedHnswVectorStore, HashingEmbedder, SqliteLogBus, SqliteRegistry } from '@rag/adapters';
import {
  ChunkerStage,
  DocumentService,
  EmbedderStage,
  EmbeddingService,
  GeneratorService,
  IndexerStage,
  LoaderStage,
  RerankerService,
  RetrieverService,
  StatusProjector,
} from '@rag/application';
import { Topic } from '@rag/contracts';
import { DEFAULT_CHUNK_OPTIONS } from '@rag/domain';
import { credentials, makeClientConstructor, Metadata, type Client, type ServiceDefinition, type ServiceError } from '@grpc/grpc-js';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { MicroserviceOptions } from '@nestjs/microservices';
import { service as healthServiceDefinition, type ServingStatus } from 'grpc-health-check';
import type { GenerateCall, RerankCall, RetrieveCall } from '@rag/application';
import { RAG_GRPC_SERVICES, type QueryPathService } from '@rag/contracts';
import { EMBEDDER, type Embedder, type Llm } from '@rag/ports';
import { GENERATE_CALL, RERANK_CALL, RETRIEVE_CALL } from '../core/tokens';
import { GRPC_CONTROLLERS } from './grpc-query-path.module';
import { GrpcHealth, grpcServerOptions, type ReadinessSource } from './grpc-server';

/**
 * Test-only: the real local query-path services over real embedded adapters in a temp folder, with a few documents
 * ingested through the real stages — what the gRPC servers wrap in the specs.
 */
export const FIXTURE_DOCS = [
  { id: 'inlet', text: 'Supersonic inlets.\n\nA supersonic inlet decelerates the flow through oblique shocks before a terminal normal shock.', metadata: { team: 'propulsion' } },
  { id: 'wing', text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.', metadata: { team: 'aero' } },
  { id: 'flutter', text: 'Panel flutter.\n\nPanel flutter is a self-excited oscillation of a thin skin panel exposed to supersonic flow.', metadata: { team: 'structures' } },
];

export async function createLocalQueryPath(opts: { llm?: Llm | null } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'rag-grpc-'));
  const bus = new SqliteLogBus({ path: join(dir, 'bus.db'), partitions: 2, maxAttempts: 2, retryBaseMs: 1, pollMs: 20 });
  const registry = new SqliteRegistry({ dir });
  const embedder = new HashingEmbedder({ dim: 256 });
  const vectors = new EmbeddedHnswVectorStore({ dir: join(dir, 'vectors'), modelId: embedder.modelId, dim: embedder.dim });
  const keywords = new EmbeddedBm25KeywordIndex({ dir });
  const stages: [string, Topic, { handle: (m: never) => Promise<void> }][] = [
    ['loader', Topic.SourceEvents, new LoaderStage(bus)],
    ['chunker', Topic.Documents, new ChunkerStage(bus, DEFAULT_CHUNK_OPTIONS)],
    ['embedder', Topic.Chunks, new EmbedderStage(bus, embedder, 16)],
    ['indexer', Topic.ChunksEmbedded, new IndexerStage(bus, registry, vectors, keywords, embedder.modelId)],
    ['registry', Topic.IndexEvents, new StatusProjector(registry)],
  ];
  for (const [group, topic, stage] of stages) await bus.subscribe({ group, topic, stage: group, handler: (m) => stage.handle(m as never) });
  await bus.start();
  const documents = new DocumentService(registry, bus, 10 * 1024 * 1024);
  for (const d of FIXTURE_DOCS) await documents.submit({ id: d.id, text: d.text, metadata: d.metadata }, 'default');
  await bus.drain();
  return {
    stores: { vectors, keywords, registry },
    embedder,
    embedding: new EmbeddingService(embedder),
    retriever: new RetrieverService(vectors, keywords, registry, { rrfK: 60, denseWeight: 1, keywordWeight: 1 }),
    reranker: new RerankerService(null),
    generator: new GeneratorService(opts.llm ?? null, { refusalThreshold: 0.5, llmTimeoutMs: 2_000, maxSources: 5 }),
    async close() {
      await bus.close();
      await vectors.close();
      await keywords.close();
      await registry.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A loopback port nothing listens on (bound, then released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** An LLM that streams fixed pieces (one per tick). */
export function scriptedLlm(pieces: string[]): Llm {
  return {
    id: 'scripted',
    async *stream(_messages, opts) {
      for (const p of pieces) {
        if (opts.signal?.aborted) throw new Error('aborted');
        await new Promise((r) => setTimeout(r, 2));
        yield p;
      }
    },
    async complete() {
      return { text: pieces.join('') };
    },
  };
}

/** What each query-path controller serves: the Embedder port for the embedder, the local call for the others. */
interface Served {
  embedder: Embedder;
  retriever: RetrieveCall;
  reranker: RerankCall;
  generator: GenerateCall;
}
const SERVED_TOKEN: Record<QueryPathService, symbol> = { embedder: EMBEDDER, retriever: RETRIEVE_CALL, reranker: RERANK_CALL, generator: GENERATE_CALL };

export interface TestGrpcServer {
  address: string;
  health: GrpcHealth;
  close(): Promise<void>;
}

/** A real Transport.GRPC microservice with the service's @GrpcMethod controller around `impl`, on a free loopback port. */
export async function serveGrpc<S extends QueryPathService>(
  service: S,
  impl: Served[S],
  opts: { readiness?: ReadinessSource; pollMs?: number; drainGraceMs?: number } = {},
): Promise<TestGrpcServer> {
  const port = await freePort();
  const health = new GrpcHealth(RAG_GRPC_SERVICES[service], opts.readiness, opts.pollMs, opts.drainGraceMs);
  @Module({
    controllers: [GRPC_CONTROLLERS[service]],
    providers: [
      { provide: SERVED_TOKEN[service], useValue: impl },
      { provide: GrpcHealth, useValue: health },
    ],
  })
  class TestGrpcModule {}
  const app = await NestFactory.createMicroservice<MicroserviceOptions>(TestGrpcModule, {
    ...grpcServerOptions({ RAG_HOST: '127.0.0.1', RAG_GRPC_PORT: port }, health),
    logger: false,
  });
  await app.listen();
  let closed: Promise<void> | undefined;
  return { address: `127.0.0.1:${port}`, health, close: () => (closed ??= app.close()) };
}

const HealthClient = makeClientConstructor(healthServiceDefinition as unknown as ServiceDefinition, 'Health');

/** One grpc.health.v1 Check against a server (rejects with the ServiceError, e.g. NOT_FOUND for an unknown name). */
export function checkHealth(address: string, service = '', deadlineMs = 2_000): Promise<ServingStatus> {
  const client = new HealthClient(address, credentials.createInsecure()) as unknown as Client & {
    check(req: { service: string }, md: Metadata, o: { deadline: number }, cb: (e: ServiceError | null, r?: { status: ServingStatus }) => void): void;
  };
  return new Promise<ServingStatus>((resolve, reject) =>
    client.check({ service }, new Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) => {
      client.close();
      if (err) reject(err);
      else resolve(res?.status ?? 'UNKNOWN');
    }),
  );
}

/** A grpc.health.v1 Watch: every status the server streams, in order, until `close()`. */
export function watchHealth(address: string, service = ''): { statuses: ServingStatus[]; close(): void } {
  const client = new HealthClient(address, credentials.createInsecure()) as unknown as Client & {
    watch(req: { service: string }): NodeJS.EventEmitter & { cancel(): void };
  };
  const statuses: ServingStatus[] = [];
  const call = client.watch({ service });
  call.on('data', (r: { status: ServingStatus }) => statuses.push(r.status));
  call.on('error', () => undefined);
  return {
    statuses,
    close() {
      call.cancel();
      client.close();
    },
  };
}
