import { Inject, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { ChunkerStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, type Bus } from '@rag/ports';
import { subscribeStage } from '../core/bus-consumer';
import { CONFIG } from '../core/tokens';

@Injectable()
export class ChunkerConsumer implements OnModuleInit {
  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(CONFIG) private readonly config: AppConfig,
  ) {}
  async onModuleInit(): Promise<void> {
    const stage = new ChunkerStage(
      this.bus,
      {
        chunkTokens: this.config.RAG_CHUNK_TOKENS,
        overlapTokens: this.config.RAG_CHUNK_OVERLAP_TOKENS,
        parentTokens: this.config.RAG_PARENT_CHUNK_TOKENS,
      },
      this.config.RAG_MAX_CHUNKS_PER_DOCUMENT,
    );
    await subscribeStage(this.bus, 'chunker', Topic.Documents, (m) => stage.handle(m));
  }
}

/** chunker: rag.documents.v1 → parent/child chunks on rag.chunks.v1. */
@Module({ providers: [ChunkerConsumer] })
export class ChunkerModule {}
