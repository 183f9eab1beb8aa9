import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { BUS_TRANSPORT } from '@rag/adapters';
import { EmbedderStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, EMBEDDER, type Bus, type BatchOutcome, type BusMessage, type Embedder } from '@rag/ports';
import { CONFIG } from '../core/tokens';

/** embedder's bus handler: rag.chunks.v1 (consumer group `embedder`) → EmbedderStage, a batch of messages per call (bulk ingestion). */
@Controller()
export class EmbedderMessageController {
  private readonly stage: EmbedderStage;
  constructor(@Inject(BUS) bus: Bus, @Inject(EMBEDDER) embedder: Embedder, @Inject(CONFIG) config: AppConfig) {
    this.stage = new EmbedderStage(bus, embedder, config.RAG_EMBEDDING_BATCH, config.RAG_BUS_VECTOR_ENCODING);
  }

  @EventPattern(Topic.Chunks, BUS_TRANSPORT, { group: 'embedder', batch: true })
  handle(@Payload() msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return this.stage.handleBatch(msgs);
  }
}
