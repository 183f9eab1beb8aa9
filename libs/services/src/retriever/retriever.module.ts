import { Module } from '@nestjs/common';
import { RetrieverService } from '@rag/application';
import type { AppConfig } from '@rag/platform';
import { KEYWORD_INDEX, REGISTRY, VECTOR_STORE, type KeywordIndex, type Registry, type VectorStore } from '@rag/ports';
import { CONFIG, RETRIEVE_CALL } from '../core/tokens';

/** retriever: dense ∥ keyword search, RRF, version fence, parent expansion. */
@Module({
  providers: [
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
