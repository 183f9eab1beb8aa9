import { Module, type DynamicModule, type Type } from '@nestjs/common';
import { ClientsModule, type ClientGrpc } from '@nestjs/microservices';
import { RAG_GRPC_SERVICES, type QueryPathService } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { ReadinessService } from '../core/readiness';
import { CONFIG, GENERATE_CALL, QUERY_EMBEDDING, RERANK_CALL, RETRIEVE_CALL } from '../core/tokens';
import { EmbedderGrpcController } from '../embedder/embedder.grpc.controller';
import { GeneratorGrpcController } from '../generator/generator.grpc.controller';
import { RerankerGrpcController } from '../reranker/reranker.grpc.controller';
import { RetrieverGrpcController } from '../retriever/retriever.grpc.controller';
import { GRPC_HEALTH_POLL_MS, GrpcHealth } from './grpc-server';
import { grpcClientOptions, grpcQueryPathCalls } from './query-path.grpc.client';

/** ClientsModule names of the four query-path clients. */
export const GRPC_CLIENTS = {
  embedder: 'EMBEDDER_GRPC_CLIENT',
  retriever: 'RETRIEVER_GRPC_CLIENT',
  reranker: 'RERANKER_GRPC_CLIENT',
  generator: 'GENERATOR_GRPC_CLIENT',
} as const satisfies Record<QueryPathService, string>;

const ADDRESS: Record<QueryPathService, keyof AppConfig> = {
  embedder: 'RAG_EMBEDDER_GRPC',
  retriever: 'RAG_RETRIEVER_GRPC',
  reranker: 'RAG_RERANKER_GRPC',
  generator: 'RAG_GENERATOR_GRPC',
};

const SERVICES = Object.keys(GRPC_CLIENTS) as QueryPathService[];
const CALLS = Symbol('GRPC_QUERY_PATH_CALLS');

/**
 * The query path as ClientGrpc clients of the embedder, retriever, reranker and generator processes (addresses from
 * RAG_*_GRPC, RAG_DEADLINE_MS per call): the distributed gateway uses `GatewayModule.register(GrpcQueryPathModule)`.
 * ClientsModule closes the channels on shutdown.
 */
@Module({
  imports: [
    ClientsModule.registerAsync(
      SERVICES.map((s) => ({
        name: GRPC_CLIENTS[s],
        useFactory: (c: AppConfig) => grpcClientOptions(String(c[ADDRESS[s]])),
        inject: [CONFIG],
      })),
    ),
  ],
  providers: [
    {
      provide: CALLS,
      useFactory: (c: AppConfig, embedder: ClientGrpc, retriever: ClientGrpc, reranker: ClientGrpc, generator: ClientGrpc) =>
        grpcQueryPathCalls({ embedder, retriever, reranker, generator }, c),
      inject: [CONFIG, ...SERVICES.map((s) => GRPC_CLIENTS[s])],
    },
    { provide: QUERY_EMBEDDING, useFactory: (c: ReturnType<typeof grpcQueryPathCalls>) => c.embedding, inject: [CALLS] },
    { provide: RETRIEVE_CALL, useFactory: (c: ReturnType<typeof grpcQueryPathCalls>) => c.retrieve, inject: [CALLS] },
    { provide: RERANK_CALL, useFactory: (c: ReturnType<typeof grpcQueryPathCalls>) => c.rerank, inject: [CALLS] },
    { provide: GENERATE_CALL, useFactory: (c: ReturnType<typeof grpcQueryPathCalls>) => c.generate, inject: [CALLS] },
  ],
  exports: [QUERY_EMBEDDING, RETRIEVE_CALL, RERANK_CALL, GENERATE_CALL],
})
export class GrpcQueryPathModule {}

/** The @GrpcMethod controller of each query-path service. */
export const GRPC_CONTROLLERS: Record<QueryPathService, Type> = {
  embedder: EmbedderGrpcController,
  retriever: RetrieverGrpcController,
  reranker: RerankerGrpcController,
  generator: GeneratorGrpcController,
};

export class GrpcServerModule {
  /**
   * The gRPC side of `service`: its controller over the local call `serviceModule` provides (RetrieverModule,
   * RerankerModule, GeneratorModule; EmbedderModule — the embedder serves the Embedder port of CoreModule) and its
   * grpc.health.v1 state. runStandalone(…, { grpc: service }) serves it on RAG_GRPC_PORT through Transport.GRPC.
   */
  static forService(service: QueryPathService, serviceModule: Type | DynamicModule): DynamicModule {
    return {
      module: GrpcServerModule,
      imports: [serviceModule],
      controllers: [GRPC_CONTROLLERS[service]],
      providers: [
        {
          provide: GrpcHealth,
          // Follows the process's readiness where ReadinessModule is loaded (runStandalone's health endpoints).
          useFactory: (config: AppConfig, readiness?: ReadinessService) =>
            new GrpcHealth(RAG_GRPC_SERVICES[service], readiness ?? undefined, GRPC_HEALTH_POLL_MS, config.RAG_GRPC_SHUTDOWN_GRACE_MS),
          inject: [CONFIG, { token: ReadinessService, optional: true }],
        },
      ],
      exports: [GrpcHealth],
    };
  }
}
