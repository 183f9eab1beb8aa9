import type { Consumer, ConsumerConfig, EachMessagePayload, RetryOptions } from 'kafkajs';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics } from '@rag/platform';
import type { Bus, SubscribeOptions } from '@rag/ports';
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
 *   `eachMessage` one at a time: per-key order.
 * - One consumer group per stage, auto-commit off: the offset is committed only after the handler resolved (or the
 *   message reached the DLQ), so a crash redelivers — at-least-once.
 * - A failing handler is retried inside `eachMessage` (deliverWithRetries, the policy both buses share) with
 *   exponential backoff, never by restarting the consumer; a store or service outage is held for `transientRetryMs`
 *   (the partition waits and loses nothing), other failures `maxAttempts` times; then the original bytes go to
 *   `rag.dlq.v1` with reason, stage, original topic and attempts in headers, and the partition moves on.
 *
 * Written on kafkajs rather than as a subclass of Nest's ServerKafka because ServerKafka runs one consumer group
 * per server, commits through its own (auto-commit or per-handler) logic and has no retry, hold or DLQ: every
 * semantic above would have to be overridden anyway.
 */
export class KafkaTransport extends BusServer {
  /** kafkajs's instrumentation extracted the publisher's context and runs eachMessage in its `process` span. */
  protected override readonly traceFrom = 'active' as const;
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
      allowAutoTopicCreation: false,
      ...(this.opts.retry ? { retry: this.opts.retry } : {}),
    });
    state.consumer = consumer;
    await consumer.connect();
    // From the beginning: a stage that joins for the first time still sees everything published before it.
    await consumer.subscribe({ topics: [...state.subs.keys()].map((t) => this.host.physical(t)), fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: Math.max(1, this.opts.partitions),
      eachMessage: (payload) => this.onMessage(state, consumer, payload),
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

  private async onMessage(state: GroupState, consumer: KafkaConsumerLike, p: EachMessagePayload): Promise<void> {
    // Once closing, nothing more is handled or committed: what was not committed is delivered again later.
    if (this.closing || state.consumer !== consumer) return;
    const topic = this.host.logicalTopic(p.topic);
    const sub = topic ? state.subs.get(topic) : undefined;
    if (!topic || !sub) {
      this.log.warn('message of an unsubscribed topic skipped', { group: state.group, topic: p.topic, partition: p.partition });
      return;
    }
    const slot = `${state.group}/${p.topic}/${p.partition}`;
    this.inflight.add(slot);
    // kafkajs heartbeats only between messages; keep the member alive through a slow handler or a backoff.
    const keepAlive = setInterval(() => void p.heartbeat().catch(() => undefined), this.opts.heartbeatIntervalMs);
    keepAlive.unref();
    const key = p.message.key?.toString('utf8') ?? '';
    try {
      const outcome = await deliverWithRetries(
        sub.handler,
        { topic, partition: p.partition, offset: Number(p.message.offset), key, value: decodeValue(p.message.value), headers: decodeHeaders(p.message.headers) },
        this.opts.policy,
        {
          sleep: (ms) => this.sleep(ms),
          isClosing: () => this.closing,
          onRetry: (attempt, delay, reason) =>
            this.log.warn('handler failed, retrying', { stage: sub.stage, topic, key, attempt, delay_ms: delay, error: reason }),
        },
      );
      if (outcome.kind === 'aborted') return;
      if (outcome.kind === 'dead') await this.deadLetter(sub, p, key, outcome);
      await consumer.commitOffsets([{ topic: p.topic, partition: p.partition, offset: nextOffset(p.message.offset) }]);
    } finally {
      clearInterval(keepAlive);
      this.inflight.delete(slot);
    }
  }

  private async deadLetter(sub: SubscribeOptions, p: EachMessagePayload, key: string, outcome: Extract<DeliveryOutcome, { kind: 'dead' }>): Promise<void> {
    this.log.error('message sent to the dead-letter topic', {
      stage: sub.stage,
      topic: sub.topic,
      key,
      partition: p.partition,
      offset: p.message.offset,
      attempts: outcome.attempts,
      error: outcome.reason,
    });
    await this.host.sendDeadLetter({
      key: p.message.key,
      // The original bytes, untouched: an operator can replay them as they were.
      value: p.message.value,
      headers: {
        ...(p.message.headers ?? {}),
        [DLQ_HEADERS.reason]: outcome.reason.slice(0, 2000),
        [DLQ_HEADERS.stage]: sub.stage,
        [DLQ_HEADERS.originalTopic]: sub.topic,
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
   * eachMessage); nothing after it is handled or committed. Nest calls it when the application closes, before the
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
