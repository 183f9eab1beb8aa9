import { Inject, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { IndexerStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import { BUS, EMBEDDING_SPACE, KEYWORD_INDEX, REGISTRY, VECTOR_STORE, type Bus, type EmbeddingSpace, type KeywordIndex, type Registry, type VectorStore } from '@rag/ports';
import { subscribeStage } from '../core/bus-consumer';

@Injectable()
export class IndexerConsumer implements OnModuleInit {
  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(REGISTRY) private readonly registry: Registry,
    @Inject(VECTOR_STORE) private readonly vectors: VectorStore,
    @Inject(KEYWORD_INDEX) private readonly keywords: KeywordIndex,
    @Inject(EMBEDDING_SPACE) private readonly space: EmbeddingSpace,
  ) {}
  async onModuleInit(): Promise<void> {
    const stage = new IndexerStage(this.bus, this.registry, this.vectors, this.keywords, this.space.modelId);
    await subscribeStage(this.bus, 'indexer', Topic.ChunksEmbedded, (m) => stage.handle(m));
  }
}

/** indexer: rag.chunks.embedded.v1 → vector store + keyword index + registry; status on rag.index.events.v1. */
@Module({ providers: [IndexerConsumer] })
export class IndexerModule {}
