import { Catch, type ArgumentsHost, type RpcExceptionFilter } from '@nestjs/common';
import { BaseRpcContext, Server, type CustomTransportStrategy, type MessageHandler } from '@nestjs/microservices';
import { isObservable, lastValueFrom, throwError, type Observable } from 'rxjs';
import { ALL_TOPICS, type Topic } from '@rag/contracts';
import { extractTraceContext, inSpan, inStage, metrics, SpanKind, timeStage, type Attributes, type StageName } from '@rag/platform';
import type { BatchOutcome, Bus, BusMessage, MessageHandler as BusHandler, SubscribeOptions } from '@rag/ports';

/** The pipeline stage (span name and `rag_stage_duration_seconds` label) of each consumer group. */
const STAGE_OF: Record<string, StageName> = { loader: 'load', chunker: 'chunk', embedder: 'embed', indexer: 'index' };

/** What `@EventPattern(topic, BUS_TRANSPORT, extras)` carries for the bus: the consumer group the handler runs in. */
export interface BusPatternExtras {
  /** Consumer group (one per stage); each group gets every message of the topic once (at least once). */
  group: string;
  /**
   * The handler takes `BusMessage[]` and resolves to one BatchOutcome per message (bulk ingestion): a bus that reads
   * batches (Kafka) hands it up to its batch size of distinct-key messages at once; the embedded log bus and every
   * retry hand it one. Such a handler opens its own per-message stage spans (it knows which work is whose), so the
   * transport only counts its outcomes.
   */
  batch?: boolean;
}

/** The context of one delivery (`@Ctx() ctx: BusContext`): the message with its partition, offset, headers and attempt. */
export class BusContext extends BaseRpcContext<[BusMessage]> {
  getMessage(): BusMessage {
    return this.args[0];
  }
}

/**
 * Each delivery of a stage runs in a CONSUMER span whose parent is the trace context carried in the message headers
 * (the embedded log bus writes it by hand: no instrumentation exists for it; on Kafka the kafkajs instrumentation's
 * `send <topic>` span wrote them): one document's ingestion is one
 * trace from the gateway through every stage and process. Each delivery is timed into the
 * stage histogram (`rag_stage_duration_seconds`); outcomes are counted in `rag_bus_messages_total`. Groups that are
 * not pipeline stages (the gateway's `registry` projection) get a span and a histogram label of their own name.
 */
export function withDeliveryTelemetry(group: string, topic: Topic, handle: BusHandler, traceFrom: 'headers' | 'active' = 'headers'): BusHandler {
  const stage = STAGE_OF[group];
  return async (msg) => {
    const attributes: Attributes = {
      'messaging.operation.type': 'process',
      'messaging.destination.name': topic,
      'messaging.consumer.group.name': group,
      'messaging.destination.partition.id': String(msg.partition),
      'messaging.kafka.offset': msg.offset,
      'rag.document_id': msg.key,
      'rag.attempt': msg.attempt,
    };
    // 'active': the transport's instrumentation already continued the trace (Kafka: kafkajs's `process` span).
    const opts = { kind: SpanKind.CONSUMER, ...(traceFrom === 'headers' ? { parent: extractTraceContext(msg.headers) } : {}) };
    try {
      if (stage) await inStage(stage, attributes, () => handle(msg), opts);
      else await timeStage(group, () => inSpan(group, attributes, () => handle(msg), opts));
      metrics.messages.inc({ stage: group, topic, outcome: 'ok' });
    } catch (e) {
      metrics.messages.inc({ stage: group, topic, outcome: 'error' });
      throw e;
    }
  };
}

/**
 * Nest's default RPC exception filter replaces every error by `{status:'error', message:'Internal server error'}`.
 * The bus decides on the original error (a NonRetryableError goes to the DLQ at once, an `unavailable` store is held,
 * the reason lands in the DLQ headers), so the microservice that carries the bus passes errors through unchanged
 * (`useGlobalFilters(new PassBusErrorsThrough())`; connectBusTransport does it).
 */
@Catch()
export class PassBusErrorsThrough implements RpcExceptionFilter<unknown> {
  catch(exception: unknown, _host: ArgumentsHost): Observable<never> {
    return throwError(() => exception);
  }
}

const TOPICS = new Set<string>(ALL_TOPICS);

/**
 * The transport id of the bus: `@EventPattern(Topic.X, BUS_TRANSPORT, { group })` binds a handler to the bus only,
 * so a process that also serves gRPC (the embedder) keeps its bus handlers and its @GrpcMethod handlers apart.
 */
export const BUS_TRANSPORT = Symbol('rag-bus');

/**
 * The bus as a Nest transport strategy: every `@EventPattern(Topic.X, BUS_TRANSPORT, { group })` handler of the application is
 * subscribed to its topic under its consumer group, then the bus starts. Delivery semantics (per-key order, commit
 * after the handler resolved, bounded retries with backoff, the transient-outage hold, the DLQ) are the bus's:
 * the embedded log bus's consume loops, or Kafka's consumers in {@link KafkaTransport} (which extends this class).
 * The same controllers therefore run in both modes. Request-response patterns are refused: the bus carries events.
 */
export class BusServer extends Server implements CustomTransportStrategy {
  private listening?: Promise<void>;
  private readonly subscribed = new Set<string>();
  private subs?: SubscribeOptions[];
  constructor(protected readonly bus: Pick<Bus, 'subscribe' | 'start'>) {
    super();
    this.transportId = BUS_TRANSPORT;
  }

  /** The subscriptions the registered handlers ask for (one per handler; Nest chains handlers of one pattern). */
  subscriptions(): SubscribeOptions[] {
    this.subs ??= this.collect();
    return this.subs;
  }

  private collect(): SubscribeOptions[] {
    const found: { pattern: string; handler: MessageHandler; group: string; batch: boolean }[] = [];
    for (const [pattern, head] of this.getHandlers()) {
      for (let h: MessageHandler | undefined = head; h; h = h.next) {
        if (!h.isEventHandler) throw new Error(`bus pattern ${pattern}: the bus carries events only (use @EventPattern, not @MessagePattern)`);
        if (!TOPICS.has(pattern)) throw new Error(`bus pattern ${pattern} is not a topic (one of ${ALL_TOPICS.join(', ')})`);
        const group = (h.extras as Partial<BusPatternExtras> | undefined)?.group;
        if (typeof group !== 'string' || group.length === 0) throw new Error(`@EventPattern(${pattern}) needs its consumer group: @EventPattern(topic, BUS_TRANSPORT, { group: '<stage>' })`);
        found.push({ pattern, handler: h, group, batch: (h.extras as Partial<BusPatternExtras> | undefined)?.batch === true });
      }
    }
    // Each handler runs in its own group with its own retries: unchain them (Nest would fork-join the chain).
    for (const f of found) f.handler.next = undefined;
    return found.map(({ pattern, handler, group, batch }): SubscribeOptions => {
      const topic = pattern as Topic;
      if (!batch) return { group, topic, stage: group, handler: withDeliveryTelemetry(group, topic, (msg) => this.invoke(handler, msg), this.traceFrom) };
      const batchHandler = async (msgs: BusMessage[]): Promise<BatchOutcome[]> => {
        const outcomes = await this.invokeBatch(handler, msgs);
        for (const o of outcomes) metrics.messages.inc({ stage: group, topic, outcome: o === undefined ? 'ok' : 'error' });
        return outcomes;
      };
      return {
        group,
        topic,
        stage: group,
        batchHandler,
        handler: async (msg) => {
          const [outcome] = await batchHandler([msg]);
          if (outcome !== undefined) throw outcome;
        },
      };
    });
  }

  /** Runs a batch handler (Nest pipeline included) and checks it answered one outcome per message. */
  private async invokeBatch(handler: MessageHandler, msgs: BusMessage[]): Promise<BatchOutcome[]> {
    let result: unknown = await handler(msgs, new BusContext([msgs[0]!]));
    if (isObservable(result)) result = await lastValueFrom(result, { defaultValue: undefined });
    if (!Array.isArray(result) || result.length !== msgs.length || result.some((o) => o !== undefined && !(o instanceof Error))) {
      throw new Error(`a batch bus handler must resolve to one Error-or-undefined per message (${msgs.length})`);
    }
    return result as BatchOutcome[];
  }

  /** Where a delivery's trace continues from: the message headers (the log bus propagates by hand). */
  protected readonly traceFrom: 'headers' | 'active' = 'headers';

  /** Runs a Nest handler (guards, interceptors, pipes, filters included) and resolves or rejects with its outcome. */
  private async invoke(handler: MessageHandler, msg: BusMessage): Promise<void> {
    const result: unknown = await handler(msg, new BusContext([msg]));
    if (isObservable(result)) await lastValueFrom(result, { defaultValue: undefined });
  }

  /** Subscribes every handler, then starts the bus. Idempotent: `app.startAllMicroservices()` may run it again. */
  async listen(callback: (err?: unknown) => void): Promise<void> {
    this.listening ??= (async () => {
      for (const sub of this.subscriptions()) {
        const id = `${sub.group}\0${sub.topic}`;
        if (this.subscribed.has(id)) continue; // subscribed by an earlier try that failed later
        await this.bus.subscribe(sub);
        this.subscribed.add(id);
      }
      await this.bus.start();
    })().catch((e: unknown) => {
      this.listening = undefined; // a failed start (the broker down) may be retried
      throw e;
    });
    try {
      await this.listening;
    } catch (e) {
      callback(e);
      return;
    }
    callback();
  }

  /** Called when the application closes, before its stores: stops consuming (Kafka); the log bus ends with the bus itself. */
  async close(): Promise<void> {}

  on(): never {
    throw new Error('the bus transport emits no events');
  }

  unwrap<T>(): T {
    return this.bus as T;
  }
}
