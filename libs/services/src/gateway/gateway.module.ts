import { Inject, Injectable, Module, type DynamicModule, type OnApplicationShutdown, type Type } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { MulterModule } from '@nestjs/platform-express';
import { DocumentService, QueryOrchestrator, QueryRewriter, type GenerateCall, type QueryEmbeddingCall, type RerankCall, type RetrieveCall } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { createApiKeyStore, createSharedRateLimiter } from '@rag/adapters';
import { API_KEY_STORE, BUS, LLM, QUERY_TRANSLATOR, REGISTRY, type ApiKeyStore, type Bus, type Llm, type QueryTranslator, type RateLimiter, type Registry } from '@rag/ports';
import { RegistryMessageController } from './registry.message.controller';
import { CONFIG, GENERATE_CALL, QUERY_EMBEDDING, RERANK_CALL, RETRIEVE_CALL } from '../core/tokens';
import { queryTranslatorProvider, QueryTranslatorWarmUp } from '../core/query-translation';
import { AdminController } from './admin.controller';
import { Authenticator } from './auth';
import { AuthGuard } from './auth.guard';
import { DocumentChunksController } from './document-chunks.controller';
import { DocumentsController } from './documents.controller';
import { AUTH, RATE_LIMITER } from './gateway.tokens';
import { TokenBucketLimiter } from './rate-limit';
import { HealthController } from './health.controller';
import { OverviewController } from './overview.controller';
import { OverviewSampler } from './overview';
import { QueryController } from './query.controller';
import { SessionController } from './session.controller';
import { SourcesController } from './sources.controller';
import { SourcesModule } from '../sources/sources.module';

/**
 * Closes the API key store and the rate limiter at application shutdown: after the HTTP drain (http-drain.ts, in
 * beforeApplicationShutdown), since every request still being answered then passes the auth guard, which reads both.
 */
@Injectable()
export class ApiKeyStoreLifecycle implements OnApplicationShutdown {
  constructor(
    @Inject(API_KEY_STORE) private readonly store: ApiKeyStore,
    @Inject(RATE_LIMITER) private readonly limiter: RateLimiter & { close?(): Promise<void> },
  ) {}
  async onApplicationShutdown(): Promise<void> {
    await this.limiter.close?.();
    await this.store.close();
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
      imports: [multer, queryPath, SourcesModule],
      controllers: [RegistryMessageController, DocumentsController, QueryController, HealthController, AdminController, SessionController, SourcesController, OverviewController, DocumentChunksController],
      providers: [
        OverviewSampler,
        queryTranslatorProvider,
        QueryTranslatorWarmUp,
        // Tenants and access: API keys (RAG_API_KEYS and the key store under RAG_DATA_DIR), forwarded JWTs, per-key
        // rate limits and route scopes, enforced by one global guard (routes opt out with @Public()).
        // The key store and the rate limits are shared by every gateway replica when RAG_DATABASE_URL names PostgreSQL.
        { provide: API_KEY_STORE, useFactory: (c: AppConfig) => createApiKeyStore(c), inject: [CONFIG] },
        ApiKeyStoreLifecycle,
        { provide: AUTH, useFactory: (c: AppConfig, store: ApiKeyStore) => new Authenticator(c, store), inject: [CONFIG, API_KEY_STORE] },
        {
          provide: RATE_LIMITER,
          useFactory: async (c: AppConfig): Promise<RateLimiter> =>
            (await createSharedRateLimiter(c)) ?? new TokenBucketLimiter({ rps: c.RAG_RATE_LIMIT_RPS, burst: c.RAG_RATE_LIMIT_BURST }),
          inject: [CONFIG],
        },
        { provide: APP_GUARD, useClass: AuthGuard },
        {
          provide: DocumentService,
          useFactory: (r: Registry, b: Bus, c: AppConfig) => new DocumentService(r, b, c.RAG_MAX_BODY_BYTES, { relayClaimBytes: c.RAG_OUTBOX_CLAIM_BYTES }),
          inject: [REGISTRY, BUS, CONFIG],
        },
        {
          provide: QueryOrchestrator,
          useFactory: (e: QueryEmbeddingCall, r: RetrieveCall, rr: RerankCall, g: GenerateCall, c: AppConfig, llm: Llm | null, translator: QueryTranslator | null) =>
            new QueryOrchestrator(
              e,
              r,
              rr,
              g,
              {
                topK: c.RAG_TOP_K,
                candidates: c.RAG_CANDIDATES,
                deadlineMs: c.RAG_DEADLINE_MS,
                rrfK: c.RAG_RRF_K,
                // agentic multi-hop and corrective retrieval (issue 16 items 3-4)
                agent: c.RAG_AGENT,
                agentMaxSteps: c.RAG_AGENT_MAX_STEPS,
                agentTimeoutMs: c.RAG_LLM_TIMEOUT_MS,
                corrective: c.RAG_CORRECTIVE === 'on',
              },
              new QueryRewriter(llm, { expansion: c.RAG_QUERY_EXPANSION, count: c.RAG_QUERY_EXPANSIONS, timeoutMs: c.RAG_LLM_TIMEOUT_MS }),
              llm ?? null,
              translator,
            ),
          inject: [QUERY_EMBEDDING, RETRIEVE_CALL, RERANK_CALL, GENERATE_CALL, CONFIG, { token: LLM, optional: true }, QUERY_TRANSLATOR],
        },
      ],
      exports: [DocumentService, QueryOrchestrator, QUERY_TRANSLATOR],
    };
  }
}
