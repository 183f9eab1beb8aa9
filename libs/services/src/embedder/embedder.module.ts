import { Inject, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { EmbedderStage, EmbeddingService } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, EMBEDDER, type Bus, type Embedder } from '@rag/ports';
import { subscribeStage } from '../core/bus-consumer';
import { CONFIG, QUERY_EMBEDDING } from '../core/tokens';

@Injectable()
export class EmbedderConsumer implements OnModuleInit {
  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(EMBEDDER) private readonly embedder: Embedder,
    @Inject(CONFIG) private readonly config: AppConfig,
  ) {}
  async onModuleInit(): Promise<void> {
    const stage = new EmbedderStage(this.bus, this.embedder, this.config.RAG_EMBEDDING_BATCH);
    await subscribeStage(this.bus, 'embedder', Topic.Chunks, (m) => stage.handle(m));
  }
}

/** embedder: rag.chunks.v1 → vectors on rag.chunks.embedded.v1; also embeds queries. */
@Module({
  providers: [
    EmbedderConsumer,
    { provide: QUERY_EMBEDDING, useFactory: (e: Embedder) => new EmbeddingService(e), inject: [EMBEDDER] },
  ],
  exports: [QUERY_EMBEDDING],
})
export class EmbedderModule {}
