import { Controller, Inject, type OnModuleDestroy } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { BUS_TRANSPORT } from '@rag/adapters';
import { LoaderStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import { BUS, DOCUMENT_PARSER, SOURCE_CONNECTORS, type BatchOutcome, type Bus, type BusMessage, type DocumentParser, type SourceConnector } from '@rag/ports';

/** loader's bus handler: rag.source.events.v1 (consumer group `loader`) → LoaderStage, a batch of messages per call (bulk ingestion). */
@Controller()
export class LoaderMessageController implements OnModuleDestroy {
  private readonly stage: LoaderStage;
  constructor(
    @Inject(BUS) bus: Bus,
    @Inject(SOURCE_CONNECTORS) connectors: SourceConnector[],
    @Inject(DOCUMENT_PARSER) private readonly parser: DocumentParser,
  ) {
    this.stage = new LoaderStage(bus, connectors, parser);
  }

  @EventPattern(Topic.SourceEvents, BUS_TRANSPORT, { group: 'loader', batch: true })
  handle(@Payload() msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return this.stage.handleBatch(msgs);
  }

  async onModuleDestroy(): Promise<void> {
    await this.parser.close();
  }
}
