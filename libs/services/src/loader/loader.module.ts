import { Inject, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { LoaderStage } from '@rag/application';
import { Topic } from '@rag/contracts';
import { BUS, type Bus } from '@rag/ports';
import { subscribeStage } from '../core/bus-consumer';

@Injectable()
export class LoaderConsumer implements OnModuleInit {
  constructor(@Inject(BUS) private readonly bus: Bus) {}
  async onModuleInit(): Promise<void> {
    const stage = new LoaderStage(this.bus);
    await subscribeStage(this.bus, 'loader', Topic.SourceEvents, (m) => stage.handle(m));
  }
}

/** loader: rag.source.events.v1 → structured documents on rag.documents.v1. */
@Module({ providers: [LoaderConsumer] })
export class LoaderModule {}
