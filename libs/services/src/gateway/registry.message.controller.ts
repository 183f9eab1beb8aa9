import { Controller, Inject } from '@nestjs/common';
import { EventPattern, Payload } from '@nestjs/microservices';
import { BUS_TRANSPORT } from '@rag/adapters';
import { DeadLetterProjector, StatusProjector } from '@rag/application';
import { Topic } from '@rag/contracts';
import { REGISTRY, type BatchOutcome, type BusMessage, type Registry } from '@rag/ports';

/** The gateway's bus handlers: the registry's status projection and the dead-letter projection. */
@Controller()
export class RegistryMessageController {
  private readonly status: StatusProjector;
  private readonly deadLetters: DeadLetterProjector;
  constructor(@Inject(REGISTRY) registry: Registry) {
    this.status = new StatusProjector(registry);
    this.deadLetters = new DeadLetterProjector(registry);
  }

  /** A batch of status events per call (distinct documents), applied in one registry transaction. */
  @EventPattern(Topic.IndexEvents, BUS_TRANSPORT, { group: 'registry', batch: true })
  projectStatus(@Payload() msgs: BusMessage[]): Promise<BatchOutcome[]> {
    return this.status.handleBatch(msgs);
  }

  /** A dead-lettered message marks its document `failed` with the stage and reason. */
  @EventPattern(Topic.Dlq, BUS_TRANSPORT, { group: 'registry-dlq' })
  projectDeadLetter(@Payload() msg: BusMessage): Promise<void> {
    return this.deadLetters.handle(msg);
  }
}
