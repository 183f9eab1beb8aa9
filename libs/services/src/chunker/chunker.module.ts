import { Module, type OnModuleInit } from '@nestjs/common';
import { countTokens } from '@rag/domain';
import { ChunkerMessageController } from './chunker.message.controller';

/** chunker: rag.documents.v1 → parent/child chunks on rag.chunks.v1. */
@Module({ controllers: [ChunkerMessageController] })
export class ChunkerModule implements OnModuleInit {
  /**
   * Builds the token counter's cl100k tables at start-up (js-tiktoken decodes its bundled ranks on first use: ≈ 0.5–0.8 s
   * of one synchronous step on 2 shared cores), so that the first document does not hold the event loop that long
   * while the process is already serving (measured: the largest event-loop stall of an ingestion after start).
   */
  onModuleInit(): void {
    countTokens('warm up');
  }
}
export { contextualizerFor } from './chunker.message.controller';
