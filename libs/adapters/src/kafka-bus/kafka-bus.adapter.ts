import {
  ConfigResourceTypes,
  Kafka,
  Partitioners,
  logLevel as KafkaLogLevel,
  type Admin,
  type ConsumerConfig,
  type LogEntry,
  type Producer,
  type ProducerConfig,
  type RetryOptions,
} from 'kafkajs';
import { ALL_TOPICS, DLQ_HEADERS, messageVersion, Topic } from '@rag/contracts';
import { failSpan, injectTraceContext, Logger, metrics, SpanKind, startSpan, tracingHandle, withTracingSuppressed, type Context, type Span } from '@rag/platform';
import { MessageTooLargeError, type MessageBroker, type OutgoingMessage, type SubscribeOptions } from '@rag/ports';
import type { BusRetryPolicy } from '../bus-delivery/deliver-with-retries';
import { partitionLag } from './delivery';
import { KafkaTransport, type KafkaConsumerLike, type KafkaTransportHost } from './kafka.transport';

export type { KafkaConsumerLike } from './kafka.transport';

/** The parts of kafkajs the bus uses (a kafkajs `Kafka` instance satisfies it; tests may pass an in-memory fake). */
export type KafkaProducerLike = Pick<Producer, 'connect' | 'disconnect' | 'send'>;
export type KafkaAdminLike = Pick<Admin, 'connect' | 'disconnect' | 'listTopics' | 'createTopics' | 'fetchTopicOffsets' | 'fetchOffsets' | 'listGroups'> &
  Partial<Pick<Admin, 'describeConfigs'>>;
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
  /** Most messages of a partition one batch handler call gets (bulk ingestion; default 64, 1 = one at a time). */
  batchDocs?: number;
  /** Most bytes a fetch returns per partition (default 8 MiB); a larger message is still returned whole (KIP-74). */
  fetchMaxBytesPerPartition?: number;
  /**
   * Largest record batch a topic takes (`max.message.bytes`, set on the topics this bus creates; default 32 MiB,
   * RAG_KAFKA_MAX_MESSAGE_BYTES). A publish is split into sends that stay under the smaller of this and what each
   * topic really accepts (read at start), and a message larger than that is left out with a MessageTooLargeError.
   */
  maxMessageBytes?: number;
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

/** Default `max.message.bytes` of the topics this bus creates (the factory passes room for the largest upload). */
export const DEFAULT_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;
/** A record batch's header (61 bytes) and a margin for the PRODUCER span's traceparent header added at send. */
const BATCH_OVERHEAD_BYTES = 61 + 128;
/**
 * What the dead-letter topic takes beyond the other topics' `max.message.bytes`: a message dead-lettered as it was
 * (up to that limit) plus the DLQ headers (a reason of up to 2,000 characters, stage, topic, partition, offset).
 */
const DLQ_HEADROOM_BYTES = 1024 * 1024;

type DeadLetterRecord = Parameters<KafkaTransportHost['sendDeadLetter']>[0];

/** The broker refused a record batch over `max.message.bytes` (kafkajs wraps the protocol error in retry errors). */
function isMessageTooLarge(e: unknown, depth = 0): boolean {
  if (typeof e !== 'object' || e === null || depth > 4) return false;
  const x = e as { type?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown };
  if (x.type === 'MESSAGE_TOO_LARGE') return true;
  return [x.cause, x.originalError, ...(Array.isArray(x.errors) ? x.errors : [])].some((c) => isMessageTooLarge(c, depth + 1));
}

/**
 * The dead-letter record for a message too large for the DLQ topic: the headers, and in place of the value the
 * document's version (read from the original, so the dead-letter projection still marks that version failed).
 */
function standInDeadLetter(r: DeadLetterRecord, bytes: number, physical: string, limit?: number): DeadLetterRecord {
  let version: number | undefined;
  try {
    version = messageVersion(JSON.parse(r.value?.toString('utf8') ?? 'null'));
  } catch {
    /* not JSON: no version to carry */
  }
  const h = r.headers;
  const where = `${String(h[DLQ_HEADERS.originalTopic])} partition ${String(h[DLQ_HEADERS.originalPartition])} offset ${String(h[DLQ_HEADERS.originalOffset])}`;
  return {
    key: r.key,
    value: Buffer.from(JSON.stringify(version !== undefined ? { version } : {})),
    headers: {
      ...h,
      [DLQ_HEADERS.valueOmitted]: `${bytes} bytes, larger than ${physical} accepts${limit !== undefined ? ` (max.message.bytes ${limit})` : ''}; the original stays at ${where} while that topic's retention keeps it`,
    },
  };
}

type Bytes = string | Buffer;

/**
 * An upper bound of one record's bytes in a batch (v2 format: varint lengths, attributes, deltas, headers): a record
 * this bus encodes (strings) or one it forwards as it came (a dead letter: buffers, a header may repeat).
 */
function recordBytes(r: { key: Bytes | null; value: Bytes | null; headers: Record<string, Bytes | Bytes[] | undefined> }): number {
  const len = (x: Bytes | null) => (x === null ? 0 : typeof x === 'string' ? Buffer.byteLength(x) : x.byteLength);
  let n = 24 + len(r.key) + len(r.value);
  for (const [k, v] of Object.entries(r.headers)) {
    for (const x of Array.isArray(v) ? v : v === undefined ? [] : [v]) n += 10 + Buffer.byteLength(k) + len(x);
  }
  return n;
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
 * The distributed-mode bus over Kafka (kafkajs), with the semantics of the embedded log bus. This class is the
 * producer and admin side: topics of the design created on start (idempotent), an idempotent producer with acks=all
 * (messages keyed by `document_id`), lag and drain. Consuming — consumer groups, per-key order, commit after the
 * effect, retries, the outage hold, the DLQ — is the Nest transport strategy {@link KafkaTransport} (`transport`),
 * which `subscribe` registers with as well.
 */
export class KafkaBus implements MessageBroker {
  private readonly kafka: KafkaLike;
  private readonly log: Logger;
  private readonly partitions: number;
  private readonly replicationFactor: number;
  private readonly prefix: string;
  private readonly publishTimeoutMs: number;
  private readonly maxMessageBytes: number;
  /** What each physical topic accepts (`max.message.bytes` read at start), where it is below `maxMessageBytes`. */
  private readonly topicLimits = new Map<string, number>();
  private readonly logical = new Map<string, Topic>();
  /** The Nest transport strategy that consumes for this bus (connect it with `connectMicroservice({ strategy })`). */
  readonly transport: KafkaTransport;
  private producer?: Promise<KafkaProducerLike>;
  private admin?: Promise<KafkaAdminLike>;
  private topicsReady?: Promise<void>;
  private started = false;
  private closingBus = false;
  private closed = false;

  constructor(opts: KafkaBusOptions) {
    if (!opts.kafka && opts.brokers.length === 0) throw new Error('KafkaBus needs at least one broker');
    this.log = opts.logger ?? new Logger('kafka-bus');
    this.partitions = opts.partitions ?? 4;
    this.replicationFactor = opts.replicationFactor ?? 1;
    const policy: BusRetryPolicy = {
      maxAttempts: Math.max(1, opts.maxAttempts ?? 5),
      retryBaseMs: opts.retryBaseMs ?? 200,
      retryMaxMs: opts.retryMaxMs ?? 10_000,
      transientRetryMs: opts.transientRetryMs ?? 300_000,
    };
    this.prefix = opts.topicPrefix ?? '';
    this.publishTimeoutMs = opts.publishTimeoutMs ?? 30_000;
    this.maxMessageBytes = opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
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
    this.transport = new KafkaTransport(
      {
        subscribe: (sub) => this.subscribe(sub),
        start: () => this.start(),
        physical: (t) => this.physical(t),
        physicalGroup: (g) => this.physicalGroup(g),
        logicalTopic: (name) => this.logical.get(name),
        ensureTopics: () => this.ensureTopics(),
        consumer: (config: ConsumerConfig) => this.kafka.consumer(config),
        sendDeadLetter: (record) => this.sendDeadLetter(record),
      },
      {
        partitions: this.partitions,
        policy,
        sessionTimeoutMs: opts.sessionTimeoutMs ?? 30_000,
        heartbeatIntervalMs: opts.heartbeatIntervalMs ?? 3_000,
        fetchMaxWaitMs: opts.fetchMaxWaitMs ?? 250,
        batchDocs: opts.batchDocs ?? 64,
        fetchMaxBytesPerPartition: opts.fetchMaxBytesPerPartition ?? 8 * 1024 * 1024,
        ...(opts.retry ? { retry: opts.retry } : {}),
        logger: this.log,
      },
    );
  }

  /** Closing the bus, or (admin retries) its transport: Nest closes the transport first when the application stops. */
  private get closing(): boolean {
    return this.closingBus || this.transport.isClosing;
  }

  /** The topic's name on the cluster. */
  physical(topic: Topic): string {
    return this.prefix + topic;
  }

  /**
   * A consumer group's name on the cluster: prefixed like the topics, so two deployments (or test runs) with different
   * RAG_KAFKA_TOPIC_PREFIX on one cluster never join each other's groups (a shared `loader` group subscribed to two
   * prefixes' topics stalled ingestion in a two-run smoke test). Metrics keep the stage's own name.
   */
  physicalGroup(group: string): string {
    return this.prefix + group;
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

  /**
   * Creates the topics of the design (every Topic) with the configured partitions and `max.message.bytes`; existing
   * ones are kept as they are, and what each accepts is read so publishes stay under it.
   */
  ensureTopics(): Promise<void> {
    this.topicsReady ??= (async () => {
      const admin = await this.ensureAdmin();
      const existing = new Set(await admin.listTopics());
      const missing = ALL_TOPICS.map((t) => this.physical(t)).filter((t) => !existing.has(t));
      if (missing.length > 0) {
        // Another process may create them at the same moment: kafkajs answers false when they already exist.
        const created = await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((topic) => ({
            topic,
            numPartitions: this.partitions,
            replicationFactor: this.replicationFactor,
            configEntries: [{ name: 'max.message.bytes', value: String(this.wantedMessageBytes(topic)) }],
          })),
        });
        this.log.info(created ? 'topics created' : 'topics already exist', {
          topics: missing,
          partitions: this.partitions,
          max_message_bytes: this.maxMessageBytes,
          dlq_max_message_bytes: this.wantedMessageBytes(this.physical(Topic.Dlq)),
        });
      }
      await this.readTopicLimits(admin);
    })().catch((e: unknown) => {
      this.topicsReady = undefined;
      throw e;
    });
    return this.topicsReady;
  }

  /**
   * Reads `max.message.bytes` of the topics (a topic created before this setting, or by an operator, keeps the
   * broker's default — 1 MiB — unless changed): a topic that takes less than `maxMessageBytes` gets its own, smaller
   * limit here, with a warning that says how to raise it. Without DescribeConfigs (an ACL, a fake) the configured value
   * is assumed, and a broker that refuses a send still fails it with its MESSAGE_TOO_LARGE.
   */
  private async readTopicLimits(admin: KafkaAdminLike): Promise<void> {
    if (!admin.describeConfigs) return;
    const names = ALL_TOPICS.map((t) => this.physical(t));
    let described: Awaited<ReturnType<Admin['describeConfigs']>>;
    try {
      described = await this.adminRead(() =>
        admin.describeConfigs!({ includeSynonyms: false, resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['max.message.bytes'] })) }),
      );
    } catch (e) {
      this.log.warn('could not read the topics\' max.message.bytes; assuming RAG_KAFKA_MAX_MESSAGE_BYTES', { error: e instanceof Error ? e.message : String(e), assumed: this.maxMessageBytes });
      return;
    }
    for (const r of described.resources) {
      const value = Number(r.configEntries.find((c) => c.configName === 'max.message.bytes')?.configValue);
      const wanted = this.wantedMessageBytes(r.resourceName);
      if (!Number.isFinite(value) || value <= 0 || value >= wanted) continue;
      this.topicLimits.set(r.resourceName, value);
      const dlq = r.resourceName === this.physical(Topic.Dlq);
      this.log.warn(
        dlq
          ? 'the dead-letter topic accepts smaller messages than the others: larger failed messages are dead-lettered without their value'
          : 'topic accepts smaller messages than RAG_KAFKA_MAX_MESSAGE_BYTES: larger uploads and documents will fail with a reason',
        {
          topic: r.resourceName,
          max_message_bytes: value,
          wanted,
          fix: `kafka-configs.sh --bootstrap-server <broker> --alter --entity-type topics --entity-name ${r.resourceName} --add-config max.message.bytes=${wanted}`,
        },
      );
    }
  }

  /** `max.message.bytes` this bus gives a topic it creates: the configured limit, and headroom for the DLQ's headers. */
  private wantedMessageBytes(physical: string): number {
    return physical === this.physical(Topic.Dlq) ? this.maxMessageBytes + DLQ_HEADROOM_BYTES : this.maxMessageBytes;
  }

  /** The largest record batch one send may put on `physical`. */
  private maxBatchBytes(physical: string): number {
    return Math.min(this.wantedMessageBytes(physical), this.topicLimits.get(physical) ?? Infinity);
  }

  /**
   * Dead-letters one record as it was, or — when it is larger than the DLQ topic takes (a DLQ made before the topics
   * got their size, or by an operator, keeps Kafka's 1 MiB) — a stand-in without the value ({@link standInDeadLetter}).
   * A refused send used to fail the consumer's batch, which then redelivered, failed and dead-lettered the same message
   * again: the partition never moved on.
   */
  private async sendDeadLetter(record: DeadLetterRecord): Promise<void> {
    const producer = await this.ensureProducer();
    const physical = this.physical(Topic.Dlq);
    const limit = this.maxBatchBytes(physical);
    const bytes = recordBytes(record);
    const send = (r: DeadLetterRecord) => producer.send({ topic: physical, acks: -1, messages: [r] });
    if (bytes + BATCH_OVERHEAD_BYTES > limit) {
      this.log.warn('dead-lettered message too large for the dead-letter topic: sent without its value', { key: record.key?.toString('utf8'), bytes, max_message_bytes: limit });
      await send(standInDeadLetter(record, bytes, physical, limit));
      return;
    }
    try {
      await send(record);
    } catch (e) {
      // The broker's own limit is smaller than the one read at start (changed since, or not readable then).
      if (!isMessageTooLarge(e)) throw e;
      this.log.warn('the dead-letter topic refused a message as too large: sent without its value', { key: record.key?.toString('utf8'), bytes });
      await send(standInDeadLetter(record, bytes, physical));
    }
  }

  async publish(topic: Topic, messages: OutgoingMessage[]): Promise<void> {
    // Publishing still works while only the consumers stopped (an outbox's last relay during shutdown).
    if (this.closingBus) throw new Error('bus is closed');
    if (messages.length === 0) return;
    await this.ensureTopics();
    const producer = await this.ensureProducer();
    const physical = this.physical(topic);
    const all = messages.map((m) => ({ key: m.key, value: JSON.stringify(m.value ?? null), headers: { ...(m.headers ?? {}) } }));
    // Kafka checks `max.message.bytes` against a partition's record batch, and kafkajs puts all of a send's messages
    // for one partition in one batch: 64 documents' embedded chunks (bulk ingestion) easily passed the 1 MiB default
    // and the broker refused the whole send. So the messages go in consecutive sends of at most the limit in total
    // (over all partitions: an upper bound for each partition's batch); usually that is one send. A message larger
    // than the limit by itself is left out (the rest still go) and reported by key: no later attempt can send it.
    const limit = this.maxBatchBytes(physical);
    const tooLarge: { index: number; key: string; bytes: number }[] = [];
    const sends: number[][] = [];
    let current: number[] = [];
    let currentBytes = BATCH_OVERHEAD_BYTES;
    for (const [i, r] of all.entries()) {
      const bytes = recordBytes(r);
      if (bytes + BATCH_OVERHEAD_BYTES > limit) {
        tooLarge.push({ index: i, key: r.key, bytes });
        continue;
      }
      if (current.length > 0 && currentBytes + bytes > limit) {
        sends.push(current);
        current = [];
        currentBytes = BATCH_OVERHEAD_BYTES;
      }
      current.push(i);
      currentBytes += bytes;
    }
    if (current.length > 0) sends.push(current);
    for (const indexes of sends) {
      await this.send(
        producer,
        topic,
        physical,
        indexes.map((i) => all[i]!),
        indexes.map((i) => messages[i]!),
      );
    }
    if (tooLarge.length > 0) {
      const biggest = Math.max(...tooLarge.map((t) => t.bytes));
      throw new MessageTooLargeError(
        tooLarge.map((t) => t.index),
        tooLarge.map((t) => t.key),
        `${tooLarge.length === 1 ? `message ${tooLarge[0]!.key} is` : `${tooLarge.length} messages (largest ${biggest} bytes) are`} larger than topic ${physical} accepts ` +
          `(${biggest} bytes > max.message.bytes ${limit}): raise RAG_KAFKA_MAX_MESSAGE_BYTES and the topic's max.message.bytes, or make the document smaller (RAG_MAX_BODY_BYTES, RAG_MAX_CHUNKS_PER_DOCUMENT)`,
      );
    }
  }

  /** One producer send of `records` (the encoded `messages`), traced, under the publish timeout. */
  private async send(
    producer: KafkaProducerLike,
    topic: Topic,
    physical: string,
    records: { key: string; value: string; headers: Record<string, string> }[],
    messages: OutgoingMessage[],
  ): Promise<void> {
    // Normally no hand-made trace context: @opentelemetry/instrumentation-kafkajs (registered by startTracing) opens a
    // `send <topic>` span around this send and writes its traceparent into every message's headers; the consumer's
    // stage span continues from it. But it parents every message of one send on the context active at the send, so a
    // batch stage publishing one message per document (each in its own trace) had to make one send per message,
    // and with maxInFlightRequests 1 those sends queue one behind the other: measured on bench ingest (500 Cranfield
    // documents, hashing embedder) 60.8 docs/s traced vs 99.8 with tracing off, where the same messages go in one
    // send. DEVIATION from "only the instrumentations' transport spans" (test/infra/tracing.infra.spec.ts's premise):
    // messages that carry their own `traceContext` get a `send <topic>` PRODUCER span each, made here with the
    // instrumentation's name, kind and attributes under their own context, its traceparent in their headers, and
    // the one send runs with tracing suppressed so the instrumentation neither opens its spans nor overwrites them.
    const own = tracingHandle() !== undefined && messages.some((m) => m.traceContext !== undefined);
    const spans: Span[] = own ? messages.map((m, i) => this.sendSpan(physical, records[i]!, m.traceContext as Context | undefined)) : [];
    const send = own
      ? withTracingSuppressed(() => producer.send({ topic: physical, acks: -1, messages: records }))
      : producer.send({ topic: physical, acks: -1, messages: records });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        send,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`kafka did not acknowledge ${messages.length} message(s) on ${topic} within ${this.publishTimeoutMs} ms`)), this.publishTimeoutMs);
        }),
      ]);
    } catch (e) {
      for (const span of spans) failSpan(span, e);
      throw e;
    } finally {
      clearTimeout(timer);
      for (const span of spans) span.end();
    }
  }

  /** The PRODUCER span of one message of a batch send, as instrumentation-kafkajs names it, under `parent` (else the active context). */
  private sendSpan(physical: string, record: { key: string; headers: Record<string, string> }, parent: Context | undefined): Span {
    const { span, context } = startSpan(
      `send ${physical}`,
      { 'messaging.system': 'kafka', 'messaging.destination.name': physical, 'messaging.kafka.message.key': record.key, 'messaging.operation.name': 'send', 'messaging.operation.type': 'send' },
      { kind: SpanKind.PRODUCER, ...(parent ? { parent } : {}) },
    );
    injectTraceContext(record.headers, context);
    return span;
  }

  subscribe(opts: SubscribeOptions): Promise<void> {
    return this.transport.consume(opts);
  }

  async start(): Promise<void> {
    if (this.started) return;
    if (this.closing) throw new Error('bus is closed');
    this.started = true;
    try {
      await this.ensureTopics();
      await this.ensureProducer();
      await this.transport.startConsumers();
    } catch (e) {
      // Leave the bus startable again (a supervisor may retry once the broker is back).
      this.started = false;
      throw e;
    }
  }

  /** Admin reads right after topics are created may meet NOT_LEADER/LEADER_NOT_AVAILABLE for a moment: retry briefly. */
  private async adminRead<T>(fn: () => Promise<T>, tries = 5): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await fn();
      } catch (e) {
        const retriable = (e as { retriable?: unknown }).retriable === true;
        if (!retriable || i >= tries || this.closing) throw e;
        await this.transport.sleep(100 * i);
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
      const committed = await this.adminRead(() => admin.fetchOffsets({ groupId: this.physicalGroup(group), topics: wanted.map((t) => this.physical(t)) }));
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
    return this.transport.subscribedGroups();
  }

  async lag(): Promise<{ group: string; topic: Topic; lag: number }[]> {
    // A closed bus is not connected, whatever a kafkajs admin that reconnects on demand would still answer (readiness).
    if (this.closingBus || this.closed) throw new Error('bus is closed');
    await this.ensureTopics();
    const own = this.subscribedGroups();
    const admin = await this.ensureAdmin();
    const listed = await this.adminRead(() => admin.listGroups());
    // Other processes' groups of this deployment: those under our prefix (another prefix is another deployment).
    const others = listed.groups
      .filter((g) => g.protocolType === 'consumer' && g.groupId.startsWith(this.prefix))
      .map((g) => g.groupId.slice(this.prefix.length))
      .filter((group) => !this.transport.hasGroup(group))
      .map((group) => ({ group, topics: null }));
    return this.lagOf([...own, ...others]);
  }

  async drain(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let quietRounds = 0;
    let lagging: { group: string; topic: Topic; lag: number }[] = [];
    let failure: unknown;
    while (quietRounds < 3) {
      failure = undefined;
      if (this.subscribedGroups().length > 0) {
        try {
          await this.ensureTopics();
          lagging = (await this.lagOf(this.subscribedGroups())).filter((l) => l.lag > 0);
        } catch (e) {
          // A broker hiccup is not the end of a drain: look again until the deadline.
          failure = e;
        }
      }
      if (failure === undefined && lagging.length === 0 && this.transport.busy === 0) quietRounds++;
      else quietRounds = 0;
      if (Date.now() > deadline) {
        const why = failure !== undefined ? `last error: ${failure instanceof Error ? failure.message : String(failure)}` : JSON.stringify(lagging);
        throw new Error(`bus did not drain within ${timeoutMs} ms: ${why}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async close(): Promise<void> {
    if (this.closed || this.closingBus) return;
    this.closingBus = true;
    // Consumers first (their in-flight eachMessage may still dead-letter through the producer), then the clients.
    await this.transport.close();
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
