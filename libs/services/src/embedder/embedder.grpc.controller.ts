import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Controller, Inject, UseFilters } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { RagV1 } from '@rag/contracts';
import { inStage } from '@rag/platform';
import { EMBEDDER, type Embedder } from '@rag/ports';
import { GrpcErrorFilter } from '../grpc/grpc-errors';
import { embedRequestFromWire } from '../grpc/grpc-mapping';

/** Embedder.Embed over the Embedder port (query or passage texts, batched). */
@Controller()
@UseFilters(GrpcErrorFilter)
export class EmbedderGrpcController implements RagV1.EmbedderController {
  constructor(@Inject(EMBEDDER) private readonly embedder: Embedder) {}

  @GrpcMethod('Embedder', 'Embed')
  async embed(request: RagV1.EmbedRequest, _metadata?: Metadata, _call?: ServerUnaryCall<RagV1.EmbedRequest, RagV1.EmbedResponse>): Promise<RagV1.EmbedResponse> {
    const { texts, inputType } = embedRequestFromWire(request);
    const { modelId, dim } = this.embedder;
    // The Embedder port is served as is: a query embedding is the `query-embed` stage, passages are `embed`.
    const attributes = { 'rag.embedding.model': modelId, 'rag.embedding.dim': dim, 'rag.texts': texts.length };
    const vectors = await inStage(inputType === 'query' ? 'query-embed' : 'embed', attributes, () => this.embedder.embed(texts, inputType));
    return { model: modelId, dim, embeddings: vectors.map((v) => ({ values: Array.from(v) })) };
  }
}
