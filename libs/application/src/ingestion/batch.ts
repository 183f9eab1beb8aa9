import type { Topic, TopicValue } from '@rag/contracts';
import type { z } from 'zod';
import { failSpan, metrics, SpanKind, startSpan, extractTraceContext, tracingHandle, type Attributes, type Context, type Span, type StageName } from '@rag/platform';
import { MessageTooLargeError, type BatchOutcome, type Bus, type BusMessage, type OutgoingMessage } from '@rag/ports';
import { parseMessage } from './validate';

/*
 * Bulk ingestion (issue 13 item 6): a stage's batch handler gets several messages with distinct keys at once (Kafka
 * eachBatch, runs of the embedded log bus; one at a time for every retry), does the shared work once (one embedder
 * call over all the chunks, one vector upsert, one keyword bulk, one registry transaction) and reports one outcome
 * per message. Tracing stays per document: each message gets its own stage span, parented on the trace context its
 * headers carry (a document's ingestion is still one trace), and a shared bulk write gets one child span per
 * document that it served.
 */

/** One message of a batch with its stage span; `failed` is set when the message's own work failed. */
export interface BatchItem {
  index: number;
  msg: BusMessage;
  span: Span;
  /** The message's trace context with its stage span: child spans and published messages continue from it. */
  context: Context;
  failed?: Error;
}

export const asError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/**
 * Runs a batch handler body with one `stage` span per message (kind CONSUMER, as the bus's delivery span is for a
 * single-message handler) and one `rag_stage_duration_seconds{stage}` observation per call. The body marks the
 * messages whose work failed (`item.failed`); a throw fails all of them. Resolves to the outcomes in message order.
 * `registry` is the gateway's status projection, timed under its group's name as the single-message path does.
 */
export async function runBatch(stage: StageName | 'registry', group: string, msgs: BusMessage[], body: (items: BatchItem[]) => Promise<void>): Promise<BatchOutcome[]> {
  const end = metrics.stageLatency.startTimer({ stage });
  const items: BatchItem[] = msgs.map((msg, index) => {
    const attributes: Attributes = {
      'messaging.operation.type': 'process',
      'messaging.destination.name': msg.topic,
      'messaging.consumer.group.name': group,
      'messaging.destination.partition.id': String(msg.partition),
      'messaging.kafka.offset': msg.offset,
      'rag.document_id': msg.key,
      'rag.attempt': msg.attempt,
      'rag.batch.messages': msgs.length,
    };
    const { span, context } = startSpan(stage, attributes, { kind: SpanKind.CONSUMER, parent: extractTraceContext(msg.headers) });
    return { index, msg, span, context };
  });
  try {
    await body(items);
  } catch (e) {
    for (const item of items) item.failed ??= asError(e);
  } finally {
    end();
  }
  for (const item of items) {
    if (item.failed) failSpan(item.span, item.failed);
    item.span.end();
  }
  return items.map((i) => i.failed);
}

/**
 * The body every batch stage shares: each message parsed with `schema` (an invalid one fails alone, see
 * {@link parseItems}), the valid ones split into parts of distinct documents ({@link distinctParts}), and `handlePart`
 * called for each part in turn, inside {@link runBatch}.
 */
export function runParts<S extends z.ZodType>(
  stage: StageName | 'registry',
  group: string,
  msgs: BusMessage[],
  parse: { schema: S; what: string; documentIdOf: (event: z.infer<S>) => string },
  handlePart: (part: { item: BatchItem; event: z.infer<S> }[]) => Promise<void>,
): Promise<BatchOutcome[]> {
  return runBatch(stage, group, msgs, async (items) => {
    for (const part of distinctParts(parseItems(items, parse.schema, parse.what), (p) => parse.documentIdOf(p.event))) await handlePart(part);
  });
}

/** One message through a stage's batch handler (a batch of one; the embedded log bus's retries, tests): its failure is thrown. */
export async function handleAlone(handleBatch: (msgs: BusMessage[]) => Promise<BatchOutcome[]>, msg: BusMessage): Promise<void> {
  const [outcome] = await handleBatch([msg]);
  if (outcome) throw outcome;
}

/** The document a pipeline event is about: a delete names it, an upsert carries it. */
export function eventDocumentId(event: { op: 'delete'; document_id: string } | { op: 'upsert'; document: { document_id: string } }): string {
  return event.op === 'delete' ? event.document_id : event.document.document_id;
}

/**
 * Parses every item's message value with `schema` (the stages' edge validation, {@link parseMessage}): the valid ones
 * come back with their event, in message order; an invalid one is marked failed (a NonRetryableError naming `what`
 * and the problems, so the bus dead-letters it alone) and left out.
 */
export function parseItems<S extends z.ZodType>(items: BatchItem[], schema: S, what: string): { item: BatchItem; event: z.infer<S> }[] {
  const parsed: { item: BatchItem; event: z.infer<S> }[] = [];
  for (const item of items) {
    try {
      parsed.push({ item, event: parseMessage(schema, item.msg.value, what) });
    } catch (e) {
      item.failed = asError(e);
    }
  }
  return parsed;
}

/**
 * Runs one shared operation (a bulk write) with a span named `name` under each item it serves, timed once into the
 * stage histogram. A failure fails every span and is rethrown (the caller marks the items).
 */
export async function inSpans<T>(name: StageName, served: { item: BatchItem; attributes: Attributes }[], fn: () => Promise<T>): Promise<T> {
  const spans = served.map((s) => startSpan(name, { ...s.attributes, 'rag.batch.documents': served.length }, { parent: s.item.context }).span);
  const end = metrics.stageLatency.startTimer({ stage: name });
  try {
    return await fn();
  } catch (e) {
    for (const span of spans) failSpan(span, e);
    throw e;
  } finally {
    end();
    for (const span of spans) span.end();
  }
}

/**
 * Publishes one outgoing message per item, all in one publish (one Kafka produce request, one log-bus transaction),
 * in message order. Each message carries its item's trace context (`traceContext`), so the bus parents it on its own
 * document's trace: one send no longer puts every document's next stage under one document's trace (which is why
 * this used to make one send per item when tracing was on; those sends queued one behind the other on the Kafka
 * producer). A failed publish marks every item it carried.
 */
export async function publishEach<T extends Topic>(bus: Bus, topic: T, out: { item: BatchItem; message: OutgoingMessage<TopicValue<T>> }[]): Promise<void> {
  if (out.length === 0) return;
  out = [...out].sort((a, b) => a.item.index - b.item.index); // in message order
  const traced = tracingHandle() !== undefined;
  try {
    await bus.publish(
      topic,
      out.map((o) => (traced ? { ...o.message, traceContext: o.item.context } : o.message)),
    );
  } catch (e) {
    // Kafka left out only the messages too large for the topic (the rest were published): only their items fail,
    // non-retryably, so the document is dead-lettered with the reason instead of taking the batch down with it.
    if (e instanceof MessageTooLargeError) {
      for (const i of e.indexes) out[i]!.item.failed ??= e;
      return;
    }
    for (const o of out) o.item.failed ??= asError(e);
  }
}

/**
 * Splits items so that no document id repeats within a part (the Kafka transport never mixes two messages of one key
 * in a call, and every producer keys by document id; this guards a foreign producer that does not): parts run in
 * order, so two events of one document are still handled one after the other.
 */
export function distinctParts<T>(items: T[], idOf: (item: T) => string): T[][] {
  const parts: T[][] = [];
  const seen: Set<string>[] = [];
  for (const item of items) {
    const id = idOf(item);
    let p = 0;
    // After the last part that already holds this id, so the document's events keep their order.
    for (let k = parts.length - 1; k >= 0; k--) {
      if (seen[k]!.has(id)) {
        p = k + 1;
        break;
      }
    }
    if (p === parts.length) {
      parts.push([]);
      seen.push(new Set());
    }
    parts[p]!.push(item);
    seen[p]!.add(id);
  }
  return parts;
}
