import { Inject, Injectable, Module, type OnApplicationBootstrap } from '@nestjs/common';
import { RetrieverService } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { KEYWORD_INDEX, REGISTRY, VECTOR_STORE, type KeywordIndex, type Registry, type VectorStore } from '@rag/ports';
import { CONFIG, RETRIEVE_CALL } from '../core/tokens';

/**
 * Before the process serves: the keyword index warms what its first searches would read cold (the embedded index's
 * worker term caches, from the terms searched before the last stop), for at most RAG_KEYWORD_WARMUP_MS. Here, in the
 * module of the process that searches — an indexer holding the same index does not warm it.
 */
@Injectable()
class KeywordWarmUp implements OnApplicationBootstrap {
  constructor(
    @Inject(KEYWORD_INDEX) private readonly keywords: KeywordIndex,
    @Inject(CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.config.RAG_KEYWORD_WARMUP_MS > 0) await this.keywords.warmUp?.(this.config.RAG_KEYWORD_WARMUP_MS);
  }
}

/** retriever: dense ∥ keyword search, RRF, version fence, parent expansion. */
@Module({
  providers: [
    KeywordWarmUp,
    {
      provide: RETRIEVE_CALL,
      useFactory: (v: VectorStore, k: KeywordIndex, r: Registry, c: AppConfig) =>
        new RetrieverService(v, k, r, { fusion: c.RAG_FUSION, rrfK: c.RAG_RRF_K, denseWeight: c.RAG_DENSE_WEIGHT, keywordWeight: c.RAG_KEYWORD_WEIGHT }),
      inject: [VECTOR_STORE, KEYWORD_INDEX, REGISTRY, CONFIG],
    },
  ],
  exports: [RETRIEVE_CALL],
})
export class RetrieverModule {}
