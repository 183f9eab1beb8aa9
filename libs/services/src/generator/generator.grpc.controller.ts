import type { Metadata, ServerWritableStream } from '@grpc/grpc-js';
import { Controller, Inject, UseFilters } from '@nestjs/common';
import { GrpcMethod } from '@nestjs/microservices';
import { Observable } from 'rxjs';
import type { GenerateCall } from '@rag/application';
import type { RagV1 } from '@rag/contracts';
import { GENERATE_CALL } from '../core/tokens';
import { GrpcErrorFilter } from '../grpc/grpc-errors';
import { generateRequestFromWire } from '../grpc/grpc-mapping';
import { callSignal } from '../grpc/grpc-server';

const delta = (text: string): RagV1.GenerateChunk => ({ delta: text, done: false, refused: false, cited_refs: [], degraded: [], answer: '', evidence: 0, statements: [] });

/**
 * Generator.Generate (server streaming): answer deltas as they are produced, then one final chunk (done=true) with
 * the outcome, the refusal gate's evidence and the verified statements. The stream is an Observable Transport.GRPC writes with backpressure;
 * the caller going away (cancel, deadline) unsubscribes it and aborts the generation.
 */
@Controller()
@UseFilters(GrpcErrorFilter)
export class GeneratorGrpcController implements RagV1.GeneratorController {
  constructor(@Inject(GENERATE_CALL) private readonly generator: GenerateCall) {}

  @GrpcMethod('Generator', 'Generate')
  generate(request: RagV1.GenerateRequest, _metadata?: Metadata, call?: ServerWritableStream<RagV1.GenerateRequest, RagV1.GenerateChunk>): Observable<RagV1.GenerateChunk> {
    const { question, sources } = generateRequestFromWire(request);
    return new Observable<RagV1.GenerateChunk>((out) => {
      const signal = callSignal(call, 'generate');
      let open = true;
      this.generator
        .generate(question, sources, (text) => open && text && out.next(delta(text)), signal)
        .then(
          (r) => {
            out.next({ delta: '', done: true, refused: r.refused, cited_refs: r.cited_refs, degraded: r.degraded, answer: r.answer, evidence: r.evidence, statements: r.statements });
            out.complete();
          },
          (e: unknown) => out.error(e),
        );
      return () => {
        open = false;
      };
    });
  }
}
