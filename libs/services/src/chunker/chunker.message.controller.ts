import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { BUS_TRANSPORT } from '@rag/adapters';
import { ChunkerStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, type Bus, type BusMessage } from '@rag/ports';
import { CONFIG } from '../core/tokens';

/** chunker's bus handler: rag.documents.v1 (consumer group `chunker`) → ChunkerStage. */
@Controller()
export class ChunkerMessageController {
  private readonly stage: ChunkerStage;
  constructor(@Inject(BUS) bus: Bus, @Inject(CONFIG) config: AppConfig) {
    this.stage = new ChunkerStage(
      bus,
      { chunkTokens: config.RAG_CHUNK_TOKENS, overlapTokens: config.RAG_CHUNK_OVERLAP_TOKENS, parentTokens: config.RAG_PARENT_CHUNK_TOKENS },
      config.RAG_MAX_CHUNKS_PER_DOCUMENT,
    );
  }

  @EventPattern(Topic.Documents, BUS_TRANSPORT, { group: 'chunker' })
  handle(@Payload() msg: BusMessage): Promise<void> {
    return this.stage.handle(msg);
  }
}
