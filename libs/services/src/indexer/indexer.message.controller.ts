import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { BUS_TRANSPORT } from '@rag/adapters';
import { IndexerStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import { BUS, EMBEDDING_SPACE, KEYWORD_INDEX, REGISTRY, VECTOR_STORE, type Bus, type BatchOutcome, type BusMessage, type EmbeddingSpace, type KeywordIndex, type Registry, type VectorStore } from '@rag/ports';

/** indexer's bus handler: rag.chunks.embedded.v1 (consumer group `indexer`) → IndexerStage, a batch of messages per call (bulk ingestion). */
@Controller()
export class IndexerMessageController {
  private readonly stage: IndexerStage;
  constructor(
    @Inject(BUS) bus: Bus,
    @Inject(REGISTRY) registry: Registry,
    @Inject(VECTOR_STORE) vectors: VectorStore,
    @Inject(KEYWORD_INDEX) keywords: KeywordIndex,
    @Inject(EMBEDDING_SPACE) space: EmbeddingSpace,
  ) {
    this.stage = new IndexerStage(bus, registry, vectors, keywords, space.modelId);
  }

  @EventPattern(Topic.ChunksEmbedded, BUS_TRANSPORT, { group: 'indexer', batch: true })
  handle(@Payload() msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return this.stage.handleBatch(msgs);
  }
}
