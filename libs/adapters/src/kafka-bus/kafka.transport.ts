import type { Consumer, ConsumerConfig, EachBatchPayload, KafkaMessage, RetryOptions } from 'kafkajs';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics } from '@rag/platform';
import type { Bus, BusMessage, SubscribeOptions } from '@rag/ports';
import { BusServer } from '../bus-delivery/bus-server';
import { deliverWithRetries, type BusRetryPolicy, type DeliveryOutcome } from '../bus-delivery/deliver-with-retries';
import { decodeHeaders, decodeValue, nextOffset } from './delivery';

export type KafkaConsumerLike = Pick<Consumer, 'connect' | 'disconnect' | 'subscribe' | 'run' | 'commitOffsets'>;

/** What the transport needs of its bus: topic names on the cluster, the topics, and the producer for dead letters. */
export interface KafkaTransportHost extends Pick<Bus, 'subscribe' | 'start'> {
  physical(topic: Topic): string;
  /** The consumer group's name on the cluster (the topic prefix applies to groups too). */
  physicalGroup(group: string): string;
  logicalTopic(physical: string): Topic | undefined;
  ensureTopics(): Promise<void>;
  sendDeadLetter(record: { key: Buffer | null; value: Buffer | null; headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> }): Promise<void>;
  consumer(config: ConsumerConfig): KafkaConsumerLike;
}

export interface KafkaTransportOptions {
  partitions: number;
  policy: BusRetryPolicy;
  sessionTimeoutMs: number;
  heartbeatIntervalMs: number;
  fetchMaxWaitMs: number;
  /**
   * Most messages of one partition handed to a subscription's batch handler at once (RAG_INGEST_BATCH_DOCS; 1 turns
   * the bulk path off). Subscriptions without a batch handler get one message at a time whatever this says.
   */
  batchDocs?: number;
  /** Most bytes one fetch returns per partition (kafkajs `maxBytesPerPartition`): an upper bound on a batch's size. */
  fetchMaxBytesPerPartition?: number;
  retry?: RetryOptions;
  logger: Logger;
}

interface GroupState {
  group: string;
  subs: Map<Topic, SubscribeOptions>;
  consumer?: KafkaConsumerLike;
}

/**
 * The Kafka transport strategy of distributed mode (a Nest `CustomTransportStrategy` over kafkajs): every
 * `@EventPattern(Topic.X, { group })` handler runs in a Kafka consumer group of that name, with the semantics of the
 * embedded log bus. It is the only place Kafka is consumed (KafkaBus.subscribe registers here too).
 *
 * - Kafka's default (murmur2) partitioner maps a key to one partition, and kafkajs hands a partition's messages to
 *   `eachBatch` in offset order. The batch is cut into runs of consecutive messages with distinct keys (at most
 *   `batchDocs`); a run goes to the subscription's batch handler in one call (bulk embedding and bulk writes across
 *   documents), or message by message to a subscription without one. A run ends at the first repeated key, so two
 *   messages of one key are never in flight together: per-key order.
 * - One consumer group per stage, auto-commit off: a run's last offset is committed only after every message of the
 *   run was handled (or reached the DLQ), so a crash mid-run redelivers the whole run — at-least-once, and the
 *   stages' idempotent handling keeps a redelivery from duplicating anything.
 * - A message that failed within a run is then delivered alone, under the full policy (the batch call is a fast path
 *   and does not count as an attempt: a failure of the shared bulk write must not dead-letter its innocent
 *   neighbours, and a message that fails validation fails again at once on its own).
 * - A failing handler is retried inside `eachBatch` (deliverWithRetries, the policy both buses share) with
 *   exponential backoff, never by restarting the consumer; a store or service outage is held for `transientRetryMs`
 *   (the partition waits and loses nothing), other failures `maxAttempts` times; then the original bytes go to
 *   `rag.dlq.v1` with reason, stage, original topic and attempts in headers, and the partition moves on.
 *
 * Written on kafkajs rather than as a subclass of Nest's ServerKafka because ServerKafka runs one consumer group
 * per server, commits through its own (auto-commit or per-handler) logic and has no retry, hold or DLQ: every
 * semantic above would have to be overridden anyway.
 */
export class KafkaTransport extends BusServer {
  /**
   * From the message headers, as on the log bus: the kafkajs instrumentation's `send` span wrote its traceparent into
   * them. (Under `eachMessage` the instrumentation also made a per-message `process` span the active context; under
   * `eachBatch` its per-message spans are not active, so each stage span continues straight from the `send` span.)
   */
  protected override readonly traceFrom = 'headers' as const;
  private readonly groups = new Map<string, GroupState>();
  private readonly inflight = new Set<string>();
  private readonly wakers = new Set<() => void>();
  private readonly log: Logger;
  private started = false;
  private closing = false;
  private closed?: Promise<void>;

  constructor(
    private readonly host: KafkaTransportHost,
    private readonly opts: KafkaTransportOptions,
  ) {
    super(host);
    this.log = opts.logger;
  }

  /** Registers a subscription; once started, (re)launches its group's consumer. */
  async consume(sub: SubscribeOptions): Promise<void> {
    if (this.closing) throw new Error('bus is closed');
    let state = this.groups.get(sub.group);
    if (!state) {
      state = { group: sub.group, subs: new Map() };
      this.groups.set(sub.group, state);
    }
    if (state.subs.has(sub.topic)) throw new Error(`consumer group ${sub.group} is already subscribed to ${sub.topic}`);
    state.subs.set(sub.topic, sub);
    if (!this.started) return;
    await this.host.ensureTopics();
    // A kafkajs consumer cannot add topics while running: restart this group's consumer with the new set.
    if (state.consumer) {
      const old = state.consumer;
      state.consumer = undefined;
      await old.disconnect();
    }
    await this.launch(state);
  }

  /** Launches a consumer for every group registered so far. On failure, leaves the transport startable again. */
  async startConsumers(): Promise<void> {
    if (this.started) return;
    if (this.closing) throw new Error('bus is closed');
    this.started = true;
    try {
      for (const state of this.groups.values()) await this.launch(state);
    } catch (e) {
      // A supervisor may retry once the broker is back.
      this.started = false;
      const consumers = [...this.groups.values()].map((g) => g.consumer).filter((c): c is KafkaConsumerLike => c !== undefined);
      for (const g of this.groups.values()) g.consumer = undefined;
      await Promise.allSettled(consumers.map((c) => c.disconnect()));
      throw e;
    }
  }

  /** The groups of this process and their topics (lag, drain). */
  subscribedGroups(): { group: string; topics: Topic[] }[] {
    return [...this.groups.values()].map((g) => ({ group: g.group, topics: [...g.subs.keys()] }));
  }

  hasGroup(group: string): boolean {
    return this.groups.has(group);
  }

  /** Messages being handled right now (drain waits for none). */
  get busy(): number {
    return this.inflight.size;
  }

  private async launch(state: GroupState): Promise<void> {
    if (this.closing) return;
    const consumer = this.host.consumer({
      groupId: this.host.physicalGroup(state.group),
      sessionTimeout: this.opts.sessionTimeoutMs,
      heartbeatInterval: this.opts.heartbeatIntervalMs,
      maxWaitTimeInMs: this.opts.fetchMaxWaitMs,
      ...(this.opts.fetchMaxBytesPerPartition ? { maxBytesPerPartition: this.opts.fetchMaxBytesPerPartition } : {}),
      allowAutoTopicCreation: false,
      ...(this.opts.retry ? { retry: this.opts.retry } : {}),
    });
    state.consumer = consumer;
    await consumer.connect();
    // From the beginning: a stage that joins for the first time still sees everything published before it.
    await consumer.subscribe({ topics: [...state.subs.keys()].map((t) => this.host.physical(t)), fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      // Offsets are resolved run by run below; an aborted run leaves its messages to be fetched again.
      eachBatchAutoResolve: false,
      partitionsConsumedConcurrently: Math.max(1, this.opts.partitions),
      eachBatch: (payload) => this.onBatch(state, consumer, payload),
    });
    this.log.debug('consumer started', { group: state.group, topics: [...state.subs.keys()] });
  }

  /** Sleeps between attempts; ends early when the transport closes. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakers.add(done);
    });
  }

  private async onBatch(state: GroupState, consumer: KafkaConsumerLike, p: EachBatchPayload): Promise<void> {
    // Once closing, nothing more is handled or committed: what was not committed is delivered again later.
    if (this.closing || state.consumer !== consumer) return;
    const { batch } = p;
    const topic = this.host.logicalTopic(batch.topic);
    const sub = topic ? state.subs.get(topic) : undefined;
    if (!topic || !sub) {
      this.log.warn('messages of an unsubscribed topic skipped', { group: state.group, topic: batch.topic, partition: batch.partition, messages: batch.messages.length });
      if (batch.messages.length) p.resolveOffset(batch.lastOffset());
      return;
    }
    const slot = `${state.group}/${batch.topic}/${batch.partition}`;
    this.inflight.add(slot);
    // kafkajs heartbeats only between batches; keep the member alive through a slow handler or a backoff.
    const keepAlive = setInterval(() => void p.heartbeat().catch(() => undefined), this.opts.heartbeatIntervalMs);
    keepAlive.unref();
    const max = sub.batchHandler ? Math.max(1, this.opts.batchDocs ?? 1) : 1;
    try {
      const messages = batch.messages;
      for (let i = 0; i < messages.length; ) {
        // A rebalance took the partition (stale) or the consumer stops: leave the rest to whoever fetches it next.
        if (this.closing || state.consumer !== consumer || !p.isRunning() || p.isStale()) return;
        const run: KafkaMessage[] = [];
        const keys = new Set<string>();
        while (i < messages.length && run.length < max) {
          const key = messages[i]!.key?.toString('utf8') ?? '';
          if (keys.has(key)) break;
          keys.add(key);
          run.push(messages[i]!);
          i++;
        }
        if (!(await this.deliverRun(sub, topic, batch.partition, run))) return;
        const last = run[run.length - 1]!.offset;
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: nextOffset(last) }]);
        p.resolveOffset(last);
      }
    } finally {
      clearInterval(keepAlive);
      this.inflight.delete(slot);
    }
  }

  /** Handles a run of distinct-key messages; false when the transport closed before every one was handled. */
  private async deliverRun(sub: SubscribeOptions, topic: Topic, partition: number, run: KafkaMessage[]): Promise<boolean> {
    let alone = run;
    if (sub.batchHandler && run.length > 1) {
      let outcomes: (Error | undefined)[];
      try {
        outcomes = await sub.batchHandler(run.map((m) => ({ ...this.toBusMessage(topic, partition, m), attempt: 1 })));
        if (outcomes.length !== run.length) throw new Error(`batch handler returned ${outcomes.length} outcomes for ${run.length} messages`);
      } catch (e) {
        outcomes = run.map(() => (e instanceof Error ? e : new Error(String(e))));
      }
      if (this.closing) return false;
      alone = run.filter((_, j) => outcomes[j] !== undefined);
      if (alone.length) {
        this.log.warn('messages failed in a batch, delivering them alone', {
          stage: sub.stage,
          topic,
          partition,
          failed: alone.length,
          batch: run.length,
          error: outcomes.find((o) => o !== undefined)?.message,
        });
      }
    }
    // Distinct keys: the messages delivered alone may run at once (each retries and backs off on its own).
    const done = await Promise.all(alone.map((m) => this.deliverOne(sub, topic, partition, m)));
    return done.every(Boolean);
  }

  private toBusMessage(topic: Topic, partition: number, m: KafkaMessage): Omit<BusMessage, 'attempt'> {
    return { topic, partition, offset: Number(m.offset), key: m.key?.toString('utf8') ?? '', value: decodeValue(m.value), headers: decodeHeaders(m.headers) };
  }

  /** One message under the full retry policy; false when aborted by closing (neither handled nor dead-lettered). */
  private async deliverOne(sub: SubscribeOptions, topic: Topic, partition: number, m: KafkaMessage): Promise<boolean> {
    const msg = this.toBusMessage(topic, partition, m);
    const outcome = await deliverWithRetries(sub.handler, msg, this.opts.policy, {
      sleep: (ms) => this.sleep(ms),
      isClosing: () => this.closing,
      onRetry: (attempt, delay, reason) =>
        this.log.warn('handler failed, retrying', { stage: sub.stage, topic, key: msg.key, attempt, delay_ms: delay, error: reason }),
    });
    if (outcome.kind === 'aborted') return false;
    if (outcome.kind === 'dead') await this.deadLetter(sub, partition, m, msg.key, outcome);
    return true;
  }

  private async deadLetter(sub: SubscribeOptions, partition: number, m: KafkaMessage, key: string, outcome: Extract<DeliveryOutcome, { kind: 'dead' }>): Promise<void> {
    this.log.error('message sent to the dead-letter topic', {
      stage: sub.stage,
      topic: sub.topic,
      key,
      partition,
      offset: m.offset,
      attempts: outcome.attempts,
      error: outcome.reason,
    });
    await this.host.sendDeadLetter({
      key: m.key,
      // The original bytes, untouched: an operator can replay them as they were.
      value: m.value,
      headers: {
        ...(m.headers ?? {}),
        [DLQ_HEADERS.reason]: outcome.reason.slice(0, 2000),
        [DLQ_HEADERS.stage]: sub.stage,
        [DLQ_HEADERS.originalTopic]: sub.topic,
        [DLQ_HEADERS.originalPartition]: String(partition),
        [DLQ_HEADERS.originalOffset]: m.offset,
        [DLQ_HEADERS.attempts]: String(outcome.attempts),
      },
    });
    metrics.dlq.inc({ stage: sub.stage, topic: sub.topic });
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * Stops consuming: wakes every backoff, then disconnects the consumers (which waits for their in-flight
   * eachBatch); nothing after it is handled or committed. Nest calls it when the application closes, before the
   * stores; KafkaBus.close calls it too (idempotent).
   */
  override close(): Promise<void> {
    this.closed ??= this.stop();
    return this.closed;
  }

  private async stop(): Promise<void> {
    this.closing = true;
    for (const wake of [...this.wakers]) wake();
    const consumers = [...this.groups.values()].map((g) => g.consumer).filter((c): c is KafkaConsumerLike => c !== undefined);
    const results = await Promise.allSettled(consumers.map((c) => c.disconnect()));
    for (const r of results) if (r.status === 'rejected') this.log.warn('consumer disconnect failed', { error: String(r.reason) });
  }
}
