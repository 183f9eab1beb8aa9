import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Controller, Inject, UseFilters } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { RerankCall } from '@rag/application';
import type { RagV1 } from '@rag/contracts';
import { RERANK_CALL } from '../core/tokens';
import { GrpcErrorFilter } from '../grpc/grpc-errors';
import { rerankRequestFromWire, toWireChunk } from '../grpc/grpc-mapping';
import { callSignal } from '../grpc/grpc-server';

/** Reranker.Rerank over the reranker service; each answer says whether a reranker is configured (`reranker_available`). */
@Controller()
@UseFilters(GrpcErrorFilter)
export class RerankerGrpcController implements RagV1.RerankerController {
  constructor(@Inject(RERANK_CALL) private readonly reranker: RerankCall) {}

  @GrpcMethod('Reranker', 'Rerank')
  async rerank(request: RagV1.RerankRequest, _metadata?: Metadata, call?: ServerUnaryCall<RagV1.RerankRequest, RagV1.RerankResponse>): Promise<RagV1.RerankResponse> {
    const { query, candidates, topN } = rerankRequestFromWire(request);
    const r = await this.reranker.rerank(query, candidates, topN, callSignal(call, 'rerank'));
    return { results: r.results.map(toWireChunk), degraded: r.degraded, reranker_available: this.reranker.available };
  }
}
