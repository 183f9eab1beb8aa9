import type { Topic } from '@rag/contracts';
import { extractTraceContext, inSpan, inStage, metrics, SpanKind, timeStage, type Attributes, type StageName } from '@rag/platform';
import type { Bus, BusMessage } from '@rag/ports';

/** The pipeline stage (span name and `rag_stage_duration_seconds` label) of each consumer group. */
const STAGE_OF: Record<string, StageName> = { loader: 'load', chunker: 'chunk', embedder: 'embed', indexer: 'index' };

/**
 * Subscribes a stage handler to its topic under the stage's consumer group. Each delivery runs in a CONSUMER span
 * whose parent is the trace context carried in the message headers (so one document's ingestion is one trace from
 * the gateway through every stage and process) and is timed into the stage histogram; outcomes are counted.
 * Groups that are not pipeline stages (the gateway's `registry` projection) get a span and a histogram label of
 * their own name. (The Kafka transport of distributed mode calls the same handlers.)
 */
export async function subscribeStage(bus: Bus, group: string, topic: Topic, handle: (m: BusMessage) => Promise<void>): Promise<void> {
  const stage = STAGE_OF[group];
  await bus.subscribe({
    group,
    topic,
    stage: group,
    handler: async (msg) => {
      const attributes: Attributes = {
        'messaging.operation.type': 'process',
        'messaging.destination.name': topic,
        'messaging.consumer.group.name': group,
        'messaging.destination.partition.id': String(msg.partition),
        'messaging.kafka.offset': msg.offset,
        'rag.document_id': msg.key,
        'rag.attempt': msg.attempt,
      };
      const opts = { kind: SpanKind.CONSUMER, parent: extractTraceContext(msg.headers) };
      try {
        if (stage) await inStage(stage, attributes, () => handle(msg), opts);
        else await timeStage(group, () => inSpan(group, attributes, () => handle(msg), opts));
        metrics.messages.inc({ stage: group, topic, outcome: 'ok' });
      } catch (e) {
        metrics.messages.inc({ stage: group, topic, outcome: 'error' });
        throw e;
      }
    },
  });
}
