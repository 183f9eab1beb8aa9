import type { Topic } from '@rag/contracts';
import { metrics, timeStage } from '@rag/platform';
import type { Bus, BusMessage } from '@rag/ports';

/**
 * Subscribes a stage handler to its topic under the stage's consumer group, timing each message into the stage
 * histogram and counting outcomes. (The Kafka transport of distributed mode calls the same handlers.)
 */
export async function subscribeStage(bus: Bus, stage: string, topic: Topic, handle: (m: BusMessage) => Promise<void>): Promise<void> {
  await bus.subscribe({
    group: stage,
    topic,
    stage,
    handler: async (msg) => {
      try {
        await timeStage(stage, () => handle(msg));
        metrics.messages.inc({ stage, topic, outcome: 'ok' });
      } catch (e) {
        metrics.messages.inc({ stage, topic, outcome: 'error' });
        throw e;
      }
    },
  });
}
