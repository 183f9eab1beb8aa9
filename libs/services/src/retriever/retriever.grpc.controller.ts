import type { Metadata, ServerUnaryCall } from '@grpc/grpc-js';
import { Controller, Inject, UseFilters } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import type { RetrieveCall } from '@rag/application';
import type { RagV1 } from '@rag/contracts';
import { RETRIEVE_CALL } from '../core/tokens';
import { GrpcErrorFilter } from '../grpc/grpc-errors';
import { retrievalToWire, retrieveRequestFromWire } from '../grpc/grpc-mapping';
import { callSignal } from '../grpc/grpc-server';

/** Retriever.Retrieve over the retriever service (filters validated with FiltersSchema); the caller's cancel aborts it. */
@Controller()
@UseFilters(GrpcErrorFilter)
export class RetrieverGrpcController implements RagV1.RetrieverController {
  constructor(@Inject(RETRIEVE_CALL) private readonly retriever: RetrieveCall) {}

  @GrpcMethod('Retriever', 'Retrieve')
  async retrieve(request: RagV1.RetrieveRequest, _metadata?: Metadata, call?: ServerUnaryCall<RagV1.RetrieveRequest, RagV1.RetrieveResponse>): Promise<RagV1.RetrieveResponse> {
    const req = retrieveRequestFromWire(request);
    return retrievalToWire(await this.retriever.retrieve(req, callSignal(call, 'retrieve')));
  }
}
