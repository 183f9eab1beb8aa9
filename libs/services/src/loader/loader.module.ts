import { Module } from '@nestjs/common';
import { createDocumentParser, createSourceConnectors } from '@rag/adapters';
import type { AppConfig } from '@rag/platform';
import { DOCUMENT_PARSER, SOURCE_CONNECTORS } from '@rag/ports';
import { CONFIG } from '../core/tokens';
import { LoaderMessageController } from './loader.message.controller';

/** loader: rag.source.events.v1 → structured documents on rag.documents.v1 (Confluence/Notion pages fetched by their connectors). */
@Module({
  controllers: [LoaderMessageController],
  providers: [
    { provide: SOURCE_CONNECTORS, useFactory: (c: AppConfig) => createSourceConnectors(c), inject: [CONFIG] },
    { provide: DOCUMENT_PARSER, useFactory: (c: AppConfig) => createDocumentParser(c), inject: [CONFIG] },
  ],
})
export class LoaderModule {}
