import { Module } from '@nestjs/common';
import { IndexerMessageController } from './indexer.message.controller';

/** indexer: rag.chunks.embedded.v1 → vector store + keyword index + registry; status on rag.index.events.v1. */
@Module({ controllers: [IndexerMessageController] })
export class IndexerModule {}
