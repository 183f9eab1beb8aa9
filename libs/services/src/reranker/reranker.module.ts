import { Module } from '@nestjs/common';
import { RerankerService } from '@rag/application';
import { RERANKER, type Reranker } from '@rag/ports';
import { RERANK_CALL } from '../core/tokens';

/** reranker: orders the fused candidates (passes them through, degraded, when none is configured). */
@Module({
  providers: [{ provide: RERANK_CALL, useFactory: (r: Reranker | null) => new RerankerService(r), inject: [RERANKER] }],
  exports: [RERANK_CALL],
})
export class RerankerModule {}
