import { Inject, Injectable, Module, type DynamicModule, type OnModuleInit, type Type } from '@nestjs/common';
import { MulterModule } from '@nestjs/platform-express';
import { DocumentService, QueryOrchestrator, QueryRewriter, StatusProjector, type GenerateCall, type QueryEmbeddingCall, type RerankCall, type RetrieveCall } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, LLM, REGISTRY, type Bus, type Llm, type Registry } from '@rag/ports';
import { subscribeStage } from '../core/bus-consumer';
import { CONFIG, GENERATE_CALL, QUERY_EMBEDDING, RERANK_CALL, RETRIEVE_CALL } from '../core/tokens';
import { ApiKeyAuth } from './auth';
import { DocumentsController } from './documents.controller';
import { AUTH } from './gateway.tokens';
import { HealthController } from './health.controller';
import { QueryController } from './query.controller';

@Injectable()
export class StatusConsumer implements OnModuleInit {
  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(REGISTRY) private readonly registry: Registry,
  ) {}
  async onModuleInit(): Promise<void> {
    const projector = new StatusProjector(this.registry);
    await subscribeStage(this.bus, 'registry', Topic.IndexEvents, (m) => projector.handle(m));
  }
}

const multer = MulterModule.registerAsync({
  useFactory: (c: AppConfig) => ({ limits: { fileSize: c.RAG_MAX_BODY_BYTES, files: 1, fields: 20 } }),
  inject: [CONFIG],
});

/** gateway: the REST API, the registry's status projection and the query orchestration. */
@Module({})
export class GatewayModule {
  /** `queryPath` provides QUERY_EMBEDDING, RETRIEVE_CALL, RERANK_CALL and GENERATE_CALL (local or gRPC). */
  static register(queryPath: Type | DynamicModule): DynamicModule {
    return {
      module: GatewayModule,
      imports: [multer, queryPath],
      controllers: [DocumentsController, QueryController, HealthController],
      providers: [
        StatusConsumer,
        { provide: AUTH, useFactory: (c: AppConfig) => new ApiKeyAuth(c.RAG_API_KEYS), inject: [CONFIG] },
        {
          provide: DocumentService,
          useFactory: (r: Registry, b: Bus, c: AppConfig) => new DocumentService(r, b, c.RAG_MAX_BODY_BYTES),
          inject: [REGISTRY, BUS, CONFIG],
        },
        {
          provide: QueryOrchestrator,
          useFactory: (e: QueryEmbeddingCall, r: RetrieveCall, rr: RerankCall, g: GenerateCall, c: AppConfig, llm: Llm | null) =>
            new QueryOrchestrator(
              e,
              r,
              rr,
              g,
              { topK: c.RAG_TOP_K, candidates: c.RAG_CANDIDATES, deadlineMs: c.RAG_DEADLINE_MS, rrfK: c.RAG_RRF_K },
              new QueryRewriter(llm, { expansion: c.RAG_QUERY_EXPANSION, count: c.RAG_QUERY_EXPANSIONS, timeoutMs: c.RAG_LLM_TIMEOUT_MS }),
            ),
          inject: [QUERY_EMBEDDING, RETRIEVE_CALL, RERANK_CALL, GENERATE_CALL, CONFIG, { token: LLM, optional: true }],
        },
      ],
      exports: [DocumentService, QueryOrchestrator],
    };
  }
}
