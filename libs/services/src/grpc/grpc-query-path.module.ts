import { Inject, Injectable, Module, type BeforeApplicationShutdown, type DynamicModule, type OnApplicationBootstrap, type OnApplicationShutdown, type Type } from '@nestjs/common';
import type { GenerateCall, RerankCall, RetrieveCall } from '@rag/application';
import { Logger, type AppConfig } from '@rag/platform';
import { EMBEDDER, type Embedder } from '@rag/ports';
import { CONFIG, GENERATE_CALL, QUERY_EMBEDDING, RERANK_CALL, RETRIEVE_CALL } from '../core/tokens';
import { queryPathBinding, startGrpcServer, type GrpcServiceBinding, type QueryPathService, type RunningGrpcServer } from './grpc-server';
import { createGrpcQueryPathClients, type GrpcQueryPathClients } from './query-path.grpc.client';

export const GRPC_QUERY_PATH_CLIENTS = Symbol('GRPC_QUERY_PATH_CLIENTS');

@Injectable()
class GrpcClientsLifecycle implements OnApplicationShutdown {
  constructor(@Inject(GRPC_QUERY_PATH_CLIENTS) private readonly clients: GrpcQueryPathClients) {}
  onApplicationShutdown(): void {
    this.clients.close();
  }
}

/**
 * The query path as gRPC clients of the embedder, retriever, reranker and generator processes (addresses from
 * RAG_*_GRPC, RAG_DEADLINE_MS per call): the distributed gateway uses `GatewayModule.register(GrpcQueryPathModule)`.
 */
@Module({
  providers: [
    { provide: GRPC_QUERY_PATH_CLIENTS, useFactory: (c: AppConfig) => createGrpcQueryPathClients(c), inject: [CONFIG] },
    { provide: QUERY_EMBEDDING, useFactory: (c: GrpcQueryPathClients) => c.embedding, inject: [GRPC_QUERY_PATH_CLIENTS] },
    { provide: RETRIEVE_CALL, useFactory: (c: GrpcQueryPathClients) => c.retrieve, inject: [GRPC_QUERY_PATH_CLIENTS] },
    { provide: RERANK_CALL, useFactory: (c: GrpcQueryPathClients) => c.rerank, inject: [GRPC_QUERY_PATH_CLIENTS] },
    { provide: GENERATE_CALL, useFactory: (c: GrpcQueryPathClients) => c.generate, inject: [GRPC_QUERY_PATH_CLIENTS] },
    GrpcClientsLifecycle,
  ],
  exports: [QUERY_EMBEDDING, RETRIEVE_CALL, RERANK_CALL, GENERATE_CALL],
})
export class GrpcQueryPathModule {}

/** What each service serves: the Embedder port for the embedder, the local query-path call for the others. */
const SERVED: Record<QueryPathService, symbol> = {
  embedder: EMBEDDER,
  retriever: RETRIEVE_CALL,
  reranker: RERANK_CALL,
  generator: GENERATE_CALL,
};

/** Serves one query-path service on RAG_HOST:RAG_GRPC_PORT from bootstrap until shutdown (nothing when the port is 0). */
export class GrpcServerLifecycle implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly log = new Logger('grpc');
  private server?: RunningGrpcServer;
  constructor(
    private readonly config: AppConfig,
    private readonly binding: GrpcServiceBinding,
  ) {}

  /** The running server (undefined before bootstrap or when RAG_GRPC_PORT is 0). */
  get running(): RunningGrpcServer | undefined {
    return this.server;
  }

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.RAG_GRPC_PORT === 0) {
      this.log.info('RAG_GRPC_PORT is 0: not serving gRPC', { service: this.binding.name });
      return;
    }
    this.server = await startGrpcServer({ host: this.config.RAG_HOST, port: this.config.RAG_GRPC_PORT, services: [this.binding], logger: this.log });
  }

  /** Before the stores close: health NOT_SERVING, in-flight calls finish (5 s at most). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.server?.close(5_000);
  }
}

export const GRPC_SERVER = Symbol('GRPC_SERVER');

export class GrpcServerModule {
  /**
   * Serves `service` over gRPC when RAG_GRPC_PORT is set: `serviceModule` is the module providing its local call
   * (RetrieverModule, RerankerModule, GeneratorModule; EmbedderModule — the embedder serves the Embedder port of
   * CoreModule). E.g. `runStandalone('retriever', [GrpcServerModule.forService('retriever', RetrieverModule)], …)`.
   */
  static forService(service: QueryPathService, serviceModule: Type | DynamicModule): DynamicModule {
    return {
      module: GrpcServerModule,
      imports: [serviceModule],
      providers: [
        {
          provide: GRPC_SERVER,
          useFactory: (config: AppConfig, impl: Embedder | RetrieveCall | RerankCall | GenerateCall) =>
            new GrpcServerLifecycle(config, queryPathBinding(service, impl)),
          inject: [CONFIG, SERVED[service]],
        },
      ],
      exports: [GRPC_SERVER],
    };
  }
}
