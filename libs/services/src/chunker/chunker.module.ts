import { Module } from '@nestjs/common';
import { ChunkerMessageController } from './chunker.message.controller';

/** chunker: rag.documents.v1 → parent/child chunks on rag.chunks.v1. */
@Module({ controllers: [ChunkerMessageController] })
export class ChunkerModule {}
export { contextualizerFor } from './chunker.message.controller';
