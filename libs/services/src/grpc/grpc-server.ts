import { Server, ServerCredentials, type ServiceDefinition, type UntypedServiceImplementation } from '@grpc/grpc-js';
import type { GenerateCall, RerankCall, RetrieveCall } from '@rag/application';
import { RagV1 } from '@rag/contracts';
import { Logger } from '@rag/platform';
import type { Embedder } from '@rag/ports';
import { HealthService, healthServiceDefinition } from './health';
import { embedderGrpcController, generatorGrpcController, rerankerGrpcController, retrieverGrpcController } from './query-path.grpc.controller';

/** Largest message either side accepts (a Retrieve response carries up to RAG_CANDIDATES chunks with parent text). */
export const GRPC_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

export interface GrpcServiceBinding {
  /** Fully qualified service name, also its name in the health service (e.g. `rag.v1.Retriever`). */
  name: string;
  definition: ServiceDefinition;
  implementation: UntypedServiceImplementation;
}

export type QueryPathService = 'embedder' | 'retriever' | 'reranker' | 'generator';

/** What each query-path service exposes, keyed by service; `impl` is its local service (or the Embedder port). */
export function queryPathBinding(service: 'embedder', impl: Embedder): GrpcServiceBinding;
export function queryPathBinding(service: 'retriever', impl: RetrieveCall): GrpcServiceBinding;
export function queryPathBinding(service: 'reranker', impl: RerankCall): GrpcServiceBinding;
export function queryPathBinding(service: 'generator', impl: GenerateCall): GrpcServiceBinding;
export function queryPathBinding(service: QueryPathService, impl: Embedder | RetrieveCall | RerankCall | GenerateCall): GrpcServiceBinding;
export function queryPathBinding(service: QueryPathService, impl: Embedder | RetrieveCall | RerankCall | GenerateCall): GrpcServiceBinding {
  switch (service) {
    case 'embedder':
      return { name: RagV1.EmbedderClient.serviceName, definition: RagV1.EmbedderService, implementation: embedderGrpcController(impl as Embedder) };
    case 'retriever':
      return { name: RagV1.RetrieverClient.serviceName, definition: RagV1.RetrieverService, implementation: retrieverGrpcController(impl as RetrieveCall) };
    case 'reranker':
      return { name: RagV1.RerankerClient.serviceName, definition: RagV1.RerankerService, implementation: rerankerGrpcController(impl as RerankCall) };
    case 'generator':
      return { name: RagV1.GeneratorClient.serviceName, definition: RagV1.GeneratorService, implementation: generatorGrpcController(impl as GenerateCall) };
    default: {
      const never: never = service;
      throw new Error(`unknown query-path service ${String(never)}`);
    }
  }
}

export interface RunningGrpcServer {
  /** The bound port (the real one when 0 was asked). */
  port: number;
  /** `host:port` for clients. */
  address: string;
  health: HealthService;
  /** Health → NOT_SERVING, then waits up to `graceMs` for in-flight calls before cancelling them. */
  close(graceMs?: number): Promise<void>;
}

/** Starts a grpc-js server with the given services plus grpc.health.v1 on host:port (insecure; loopback or mesh). */
export async function startGrpcServer(opts: { host: string; port: number; services: GrpcServiceBinding[]; logger?: Logger }): Promise<RunningGrpcServer> {
  const log = opts.logger ?? new Logger('grpc');
  const server = new Server({
    'grpc.max_receive_message_length': GRPC_MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': GRPC_MAX_MESSAGE_BYTES,
  });
  const health = new HealthService({ '': 'SERVING', ...Object.fromEntries(opts.services.map((s) => [s.name, 'SERVING' as const])) });
  for (const s of opts.services) server.addService(s.definition, s.implementation);
  server.addService(healthServiceDefinition(), health.implementation());
  const host = opts.host.includes(':') && !opts.host.startsWith('[') ? `[${opts.host}]` : opts.host;
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${opts.port}`, ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const address = `${host}:${port}`;
  log.info('gRPC server listening', { address, services: opts.services.map((s) => s.name) });
  let closed: Promise<void> | undefined;
  return {
    port,
    address,
    health,
    close(graceMs = 5_000) {
      closed ??= new Promise<void>((resolve) => {
        health.shutdown();
        const force = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return closed;
    },
  };
}
