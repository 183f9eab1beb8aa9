import { Module } from '@nestjs/common';
import { EmbeddingService } from '@rag/application';
import { EMBEDDER, type Embedder } from '@rag/ports';
import { QUERY_EMBEDDING } from '../core/tokens';
import { EmbedderMessageController } from './embedder.message.controller';

/** embedder: rag.chunks.v1 → vectors on rag.chunks.embedded.v1; also embeds queries. */
@Module({
  controllers: [EmbedderMessageController],
  providers: [
    { provide: QUERY_EMBEDDING, useFactory: (e: Embedder) => new EmbeddingService(e), inject: [EMBEDDER] },
  ],
  exports: [QUERY_EMBEDDING],
})
export class EmbedderModule {}
