import {
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Admin,
  type Consumer,
  type ConsumerConfig,
  type EachMessagePayload,
  type LogEntry,
  type Producer,
  type ProducerConfig,
  type RetryOptions,
} from 'kafkajs';
import { ALL_TOPICS, DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics, traceHeaders } from '@rag/platform';
import type { Bus, OutgoingMessage, SubscribeOptions } from '@rag/ports';
import { deliverWithRetries, type BusRetryPolicy, type DeliveryOutcome } from '../bus-delivery';
import { decodeHeaders, decodeValue, nextOffset, partitionLag } from './delivery';

/** The parts of kafkajs the bus uses (a kafkajs `Kafka` instance satisfies it; tests may pass an in-memory fake). */
export type KafkaProducerLike = Pick<Producer, 'connect' | 'disconnect' | 'send'>;
export type KafkaConsumerLike = Pick<Consumer, 'connect' | 'disconnect' | 'subscribe' | 'run' | 'commitOffsets'>;
export type KafkaAdminLike = Pick<Admin, 'connect' | 'disconnect' | 'listTopics' | 'createTopics' | 'fetchTopicOffsets' | 'fetchOffsets' | 'listGroups'>;
export interface KafkaLike {
  producer(config?: ProducerConfig): KafkaProducerLike;
  consumer(config: ConsumerConfig): KafkaConsumerLike;
  admin(): KafkaAdminLike;
}

export interface KafkaBusOptions {
  /** `host:port` of the bootstrap brokers. */
  brokers: string[];
  clientId?: string;
  /** Partitions of each topic created on start (existing topics are left as they are). */
  partitions?: number;
  replicationFactor?: number;
  /** Deliveries of one message before it goes to the DLQ. */
  maxAttempts?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** How long a store/service outage (AppError unavailable / deadline_exceeded) is retried before the DLQ (default 5 min; see BusRetryPolicy). */
  transientRetryMs?: number;
  /** Prepended to every topic name on the cluster (e.g. `staging.`); messages and DLQ headers carry the logical name. */
  topicPrefix?: string;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Longest a fetch waits on the broker for new messages (latency of an idle consumer). */
  fetchMaxWaitMs?: number;
  connectionTimeoutMs?: number;
  /** A publish that the (idempotent, infinitely retrying) producer has not acknowledged by then is rejected. */
  publishTimeoutMs?: number;
  /** kafkajs retries of connection and admin requests. */
  retry?: RetryOptions;
  /** kafkajs log level routed to `logger` (default WARN). */
  kafkaLogLevel?: 'error' | 'warn' | 'info' | 'debug';
  logger?: Logger;
  /** Injected client (tests); by default a kafkajs `Kafka` on `brokers`. */
  kafka?: KafkaLike;
}

interface GroupState {
  group: string;
  subs: Map<Topic, SubscribeOptions>;
  consumer?: KafkaConsumerLike;
}

const KAFKA_LEVELS = { error: KafkaLogLevel.ERROR, warn: KafkaLogLevel.WARN, info: KafkaLogLevel.INFO, debug: KafkaLogLevel.DEBUG } as const;

/** Routes kafkajs log entries to our JSON logger. */
export function kafkaLogCreator(log: Logger): () => (entry: LogEntry) => void {
  return () =>
    ({ namespace, level, log: entry }) => {
      const { message, timestamp: _timestamp, logger: _logger, ...extra } = entry as { message: string; timestamp: string; logger?: unknown } & Record<string, unknown>;
      const fields = { kafka: namespace, ...extra };
      // kafkajs logs every error response of a request at ERROR, including ones it retries or hands back to the
      // caller (NOT_LEADER right after a topic is created, TOPIC_ALREADY_EXISTS): those are debug noise here.
      // Failures it is about to retry (they carry retryCount) are warnings; a final failure reaches the caller.
      if (namespace === 'Connection' && message.startsWith('Response ')) log.debug(message, fields);
      else if (level <= KafkaLogLevel.ERROR && extra.retryCount === undefined) log.error(message, fields);
      else if (level <= KafkaLogLevel.WARN) log.warn(message, fields);
      else if (level === KafkaLogLevel.INFO) log.info(message, fields);
      else log.debug(message, fields);
    };
}

/**
 * The distributed-mode bus over Kafka (kafkajs), with the semantics of the embedded log bus:
 *
 * - Messages are keyed by `document_id`; Kafka's default (murmur2) partitioner maps a key to one partition, and
 *   kafkajs hands a partition's messages to `eachMessage` one at a time: per-key order.
 * - One Kafka consumer group per stage (`SubscribeOptions.group`), auto-commit off: the offset is committed only
 *   after the handler resolved (or the message reached the DLQ), so a crash redelivers — at-least-once.
 * - A failing handler is retried inside `eachMessage` with exponential backoff (never by restarting the
 *   consumer); a store or service outage is retried for `transientRetryMs` (the partition waits and loses nothing),
 *   other failures `maxAttempts` times; then the original message goes to `rag.dlq.v1` with reason, stage, original topic and attempts in
 *   headers, and the partition moves on. A NonRetryableError goes to the DLQ at once.
 * - The producer is idempotent with acks=all; the topics of the design are created on start (idempotent).
 */
export class KafkaBus implements Bus {
  private readonly kafka: KafkaLike;
  private readonly log: Logger;
  private readonly partitions: number;
  private readonly replicationFactor: number;
  private readonly policy: BusRetryPolicy;
  private readonly prefix: string;
  private readonly sessionTimeoutMs: number;
  private readonly heartbeatIntervalMs: number;
  private readonly fetchMaxWaitMs: number;
  private readonly publishTimeoutMs: number;
  private readonly retry: RetryOptions | undefined;
  private readonly logical = new Map<string, Topic>();
  private readonly groups = new Map<string, GroupState>();
  private readonly inflight = new Set<string>();
  private readonly wakers = new Set<() => void>();
  private producer?: Promise<KafkaProducerLike>;
  private admin?: Promise<KafkaAdminLike>;
  private topicsReady?: Promise<void>;
  private started = false;
  private closing = false;
  private closed = false;

  constructor(opts: KafkaBusOptions) {
    if (!opts.kafka && opts.brokers.length === 0) throw new Error('KafkaBus needs at least one broker');
    this.log = opts.logger ?? new Logger('kafka-bus');
    this.partitions = opts.partitions ?? 4;
    this.replicationFactor = opts.replicationFactor ?? 1;
    this.policy = {
      maxAttempts: Math.max(1, opts.maxAttempts ?? 5),
      retryBaseMs: opts.retryBaseMs ?? 200,
      retryMaxMs: opts.retryMaxMs ?? 10_000,
      transientRetryMs: opts.transientRetryMs ?? 300_000,
    };
    this.prefix = opts.topicPrefix ?? '';
    this.sessionTimeoutMs = opts.sessionTimeoutMs ?? 30_000;
    this.heartbeatIntervalMs = opts.heartbeatIntervalMs ?? 3_000;
    this.fetchMaxWaitMs = opts.fetchMaxWaitMs ?? 250;
    this.publishTimeoutMs = opts.publishTimeoutMs ?? 30_000;
    this.retry = opts.retry;
    for (const t of ALL_TOPICS) this.logical.set(this.physical(t), t);
    this.kafka =
      opts.kafka ??
      new Kafka({
        clientId: opts.clientId ?? 'rag',
        brokers: opts.brokers,
        connectionTimeout: opts.connectionTimeoutMs ?? 3_000,
        logLevel: KAFKA_LEVELS[opts.kafkaLogLevel ?? 'warn'],
        logCreator: kafkaLogCreator(this.log.child('kafkajs')),
        ...(opts.retry ? { retry: opts.retry } : {}),
      });
  }

  /** The topic's name on the cluster. */
  physical(topic: Topic): string {
    return this.prefix + topic;
  }

  private ensureAdmin(): Promise<KafkaAdminLike> {
    this.admin ??= (async () => {
      const admin = this.kafka.admin();
      await admin.connect();
      return admin;
    })().catch((e: unknown) => {
      this.admin = undefined;
      throw e;
    });
    return this.admin;
  }

  private ensureProducer(): Promise<KafkaProducerLike> {
    this.producer ??= (async () => {
      // maxInFlightRequests 1: kafkajs's idempotent producer keeps per-partition order only with one request in flight.
      const producer = this.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        createPartitioner: Partitioners.DefaultPartitioner,
      });
      await producer.connect();
      return producer;
    })().catch((e: unknown) => {
      this.producer = undefined;
      throw e;
    });
    return this.producer;
  }

  /** Creates the topics of the design (every Topic) with the configured partitions; existing ones are kept. */
  ensureTopics(): Promise<void> {
    this.topicsReady ??= (async () => {
      const admin = await this.ensureAdmin();
      const existing = new Set(await admin.listTopics());
      const missing = ALL_TOPICS.map((t) => this.physical(t)).filter((t) => !existing.has(t));
      if (missing.length === 0) return;
      // Another process may create them at the same moment: kafkajs answers false when they already exist.
      const created = await admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((topic) => ({ topic, numPartitions: this.partitions, replicationFactor: this.replicationFactor })),
      });
      this.log.info(created ? 'topics created' : 'topics already exist', { topics: missing, partitions: this.partitions });
    })().catch((e: unknown) => {
      this.topicsReady = undefined;
      throw e;
    });
    return this.topicsReady;
  }

  async publish(topic: Topic, messages: OutgoingMessage[]): Promise<void> {
    if (this.closing) throw new Error('bus is closed');
    if (messages.length === 0) return;
    await this.ensureTopics();
    const producer = await this.ensureProducer();
    // W3C trace context of the publishing span (traceparent): the consuming stage continues the same trace.
    const trace = traceHeaders();
    const send = producer.send({
      topic: this.physical(topic),
      acks: -1,
      messages: messages.map((m) => ({ key: m.key, value: JSON.stringify(m.value ?? null), headers: { ...trace, ...(m.headers ?? {}) } })),
    });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        send,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`kafka did not acknowledge ${messages.length} message(s) on ${topic} within ${this.publishTimeoutMs} ms`)), this.publishTimeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  async subscribe(opts: SubscribeOptions): Promise<void> {
    if (this.closing) throw new Error('bus is closed');
    let state = this.groups.get(opts.group);
    if (!state) {
      state = { group: opts.group, subs: new Map() };
      this.groups.set(opts.group, state);
    }
    if (state.subs.has(opts.topic)) throw new Error(`consumer group ${opts.group} is already subscribed to ${opts.topic}`);
    state.subs.set(opts.topic, opts);
    if (!this.started) return;
    await this.ensureTopics();
    // A kafkajs consumer cannot add topics while running: restart this group's consumer with the new set.
    if (state.consumer) {
      const old = state.consumer;
      state.consumer = undefined;
      await old.disconnect();
    }
    await this.launch(state);
  }

  async start(): Promise<void> {
    if (this.started) return;
    if (this.closing) throw new Error('bus is closed');
    this.started = true;
    try {
      await this.ensureTopics();
      await this.ensureProducer();
      for (const state of this.groups.values()) await this.launch(state);
    } catch (e) {
      // Leave the bus startable again (a supervisor may retry once the broker is back).
      this.started = false;
      const consumers = [...this.groups.values()].map((g) => g.consumer).filter((c): c is KafkaConsumerLike => c !== undefined);
      for (const g of this.groups.values()) g.consumer = undefined;
      await Promise.allSettled(consumers.map((c) => c.disconnect()));
      throw e;
    }
  }

  private async launch(state: GroupState): Promise<void> {
    if (this.closing) return;
    const consumer = this.kafka.consumer({
      groupId: state.group,
      sessionTimeout: this.sessionTimeoutMs,
      heartbeatInterval: this.heartbeatIntervalMs,
      maxWaitTimeInMs: this.fetchMaxWaitMs,
      allowAutoTopicCreation: false,
      ...(this.retry ? { retry: this.retry } : {}),
    });
    state.consumer = consumer;
    await consumer.connect();
    // From the beginning: a stage that joins for the first time still sees everything published before it.
    await consumer.subscribe({ topics: [...state.subs.keys()].map((t) => this.physical(t)), fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      partitionsConsumedConcurrently: Math.max(1, this.partitions),
      eachMessage: (payload) => this.onMessage(state, consumer, payload),
    });
    this.log.debug('consumer started', { group: state.group, topics: [...state.subs.keys()] });
  }

  private sleep(ms: number): Promise<void> {
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
    const topic = this.logical.get(p.topic);
    const sub = topic ? state.subs.get(topic) : undefined;
    if (!topic || !sub) {
      this.log.warn('message of an unsubscribed topic skipped', { group: state.group, topic: p.topic, partition: p.partition });
      return;
    }
    const slot = `${state.group}/${p.topic}/${p.partition}`;
    this.inflight.add(slot);
    // kafkajs heartbeats only between messages; keep the member alive through a slow handler or a backoff.
    const keepAlive = setInterval(() => void p.heartbeat().catch(() => undefined), this.heartbeatIntervalMs);
    keepAlive.unref();
    const key = p.message.key?.toString('utf8') ?? '';
    try {
      const outcome = await deliverWithRetries(
        sub.handler,
        { topic, partition: p.partition, offset: Number(p.message.offset), key, value: decodeValue(p.message.value), headers: decodeHeaders(p.message.headers) },
        this.policy,
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
    const producer = await this.ensureProducer();
    await producer.send({
      topic: this.physical(Topic.Dlq),
      acks: -1,
      messages: [
        {
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
        },
      ],
    });
    metrics.dlq.inc({ stage: sub.stage, topic: sub.topic });
  }

  /** Admin reads right after topics are created may meet NOT_LEADER/LEADER_NOT_AVAILABLE for a moment: retry briefly. */
  private async adminRead<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await fn();
      } catch (e) {
        const retriable = (e as { retriable?: unknown }).retriable === true;
        if (!retriable || i >= tries || this.closing) throw e;
        await this.sleep(100 * i);
      }
    }
  }

  /** Lag of the given groups on their topics (or, for groups of other processes, on every topic they committed on). */
  private async lagOf(groups: { group: string; topics: Topic[] | null }[]): Promise<{ group: string; topic: Topic; lag: number }[]> {
    const admin = await this.ensureAdmin();
    const watermarks = new Map<Topic, Promise<{ partition: number; high: string; low: string }[]>>();
    const marksOf = (t: Topic) => {
      let m = watermarks.get(t);
      if (!m) {
        m = this.adminRead(() => admin.fetchTopicOffsets(this.physical(t)));
        watermarks.set(t, m);
      }
      return m;
    };
    const out: { group: string; topic: Topic; lag: number }[] = [];
    for (const { group, topics } of groups) {
      const wanted = topics ?? ALL_TOPICS.filter((t) => t !== Topic.Dlq);
      const committed = await this.adminRead(() => admin.fetchOffsets({ groupId: group, topics: wanted.map((t) => this.physical(t)) }));
      for (const entry of committed) {
        const topic = this.logical.get(entry.topic);
        if (!topic) continue;
        // Other processes' groups count only on topics they consume (have committed on).
        if (topics === null && !entry.partitions.some((p) => BigInt(p.offset) >= 0n)) continue;
        const marks = await marksOf(topic);
        let lag = 0;
        for (const m of marks) {
          const c = entry.partitions.find((p) => p.partition === m.partition);
          const behind = partitionLag({ high: m.high, low: m.low, committed: c ? c.offset : null });
          lag += behind;
          // This process's own groups only, so that two services never report the same series.
          if (topics !== null) metrics.consumerLag.set({ group, topic, partition: String(m.partition) }, behind);
        }
        out.push({ group, topic, lag });
      }
    }
    return out;
  }

  private subscribedGroups(): { group: string; topics: Topic[] }[] {
    return [...this.groups.values()].map((g) => ({ group: g.group, topics: [...g.subs.keys()] }));
  }

  async lag(): Promise<{ group: string; topic: Topic; lag: number }[]> {
    await this.ensureTopics();
    const own = this.subscribedGroups();
    const admin = await this.ensureAdmin();
    const listed = await this.adminRead(() => admin.listGroups());
    const others = listed.groups
      .filter((g) => g.protocolType === 'consumer' && !this.groups.has(g.groupId))
      .map((g) => ({ group: g.groupId, topics: null }));
    return this.lagOf([...own, ...others]);
  }

  async drain(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let quietRounds = 0;
    let lagging: { group: string; topic: Topic; lag: number }[] = [];
    let failure: unknown;
    while (quietRounds < 3) {
      failure = undefined;
      if (this.groups.size > 0) {
        try {
          await this.ensureTopics();
          lagging = (await this.lagOf(this.subscribedGroups())).filter((l) => l.lag > 0);
        } catch (e) {
          // A broker hiccup is not the end of a drain: look again until the deadline.
          failure = e;
        }
      }
      if (failure === undefined && lagging.length === 0 && this.inflight.size === 0) quietRounds++;
      else quietRounds = 0;
      if (Date.now() > deadline) {
        const why = failure !== undefined ? `last error: ${failure instanceof Error ? failure.message : String(failure)}` : JSON.stringify(lagging);
        throw new Error(`bus did not drain within ${timeoutMs} ms: ${why}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async close(): Promise<void> {
    if (this.closed || this.closing) return;
    this.closing = true;
    for (const wake of [...this.wakers]) wake();
    // Disconnecting a consumer waits for its in-flight eachMessage; nothing after it is handled or committed.
    const consumers = [...this.groups.values()].map((g) => g.consumer).filter((c): c is KafkaConsumerLike => c !== undefined);
    const results = await Promise.allSettled(consumers.map((c) => c.disconnect()));
    for (const r of results) if (r.status === 'rejected') this.log.warn('consumer disconnect failed', { error: String(r.reason) });
    for (const [name, part] of [
      ['producer', this.producer],
      ['admin', this.admin],
    ] as const) {
      if (!part) continue;
      try {
        await (await part).disconnect();
      } catch (e) {
        this.log.warn(`${name} disconnect failed`, { error: String(e) });
      }
    }
    this.closed = true;
  }
}
