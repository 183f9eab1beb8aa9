import { Inject, Injectable, Module, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { createDocumentParser, createSourceConnectors } from '@rag/adapters';
import { LoaderStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import type { AppConfig } from '@rag/platform';
import { BUS, DOCUMENT_PARSER, SOURCE_CONNECTORS, type Bus, type DocumentParser, type SourceConnector } from '@rag/ports';
import { subscribeStage } from '../core/bus-consumer';
import { CONFIG } from '../core/tokens';

@Injectable()
export class LoaderConsumer implements OnModuleInit, OnModuleDestroy {
  constructor(
    @Inject(BUS) private readonly bus: Bus,
    @Inject(SOURCE_CONNECTORS) private readonly connectors: SourceConnector[],
    @Inject(DOCUMENT_PARSER) private readonly parser: DocumentParser,
  ) {}
  async onModuleInit(): Promise<void> {
    const stage = new LoaderStage(this.bus, this.connectors, this.parser);
    await subscribeStage(this.bus, 'loader', Topic.SourceEvents, (m) => stage.handle(m));
  }
  async onModuleDestroy(): Promise<void> {
    await this.parser.close();
  }
}

/** loader: rag.source.events.v1 → structured documents on rag.documents.v1 (Confluence/Notion pages fetched by their connectors). */
@Module({
  providers: [
    LoaderConsumer,
    { provide: SOURCE_CONNECTORS, useFactory: (c: AppConfig) => createSourceConnectors(c), inject: [CONFIG] },
    { provide: DOCUMENT_PARSER, useFactory: (c: AppConfig) => createDocumentParser(c), inject: [CONFIG] },
  ],
})
export class LoaderModule {}
