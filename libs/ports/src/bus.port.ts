import type { Topic, TopicValue } from '@rag/contracts';

export type Headers = Record<string, string>;

export interface BusMessage {
  topic: Topic;
  partition: number;
  offset: number;
  key: string;
  value: unknown;
  headers: Headers;
  /** 1 on first delivery. */
  attempt: number;
}

export interface OutgoingMessage<V = unknown> {
  key: string;
  value: V;
  headers?: Headers;
  /**
   * The trace context (an OpenTelemetry `Context`, from @rag/platform) this message continues, when the messages of
   * one publish belong to different traces (a batch stage publishing one message per document): the bus then parents
   * each message's trace on its own context instead of the context active at the publish. Opaque here.
   */
  traceContext?: unknown;
}

export type MessageHandler = (msg: BusMessage) => Promise<void>;

/**
 * What a batch handler reports for each message of a batch, in order: `undefined` = handled; an error = that message
 * alone failed (the bus retries it alone, by the same policy, then dead-letters it; the others are not redelivered).
 */
export type BatchOutcome = Error | undefined;
/** Handles several messages of one topic at once (distinct keys, so no per-key order is at stake within a call). */
export type BatchMessageHandler = (msgs: BusMessage[]) => Promise<BatchOutcome[]>;

export interface SubscribeOptions {
  /** Consumer group; each group gets every message once (at least once). */
  group: string;
  topic: Topic;
  /** Name of the stage, recorded on DLQ messages. */
  stage: string;
  handler: MessageHandler;
  /**
   * Optional bulk path: a bus that reads messages in batches (Kafka `eachBatch`) hands up to its batch size of them,
   * with distinct keys, to one call; buses that deliver one at a time (the embedded log) use `handler`, as do retries.
   */
  batchHandler?: BatchMessageHandler;
}

/**
 * Kafka semantics: per-key ordering (a key always maps to one partition, consumed sequentially per group),
 * at-least-once delivery (offsets committed only after the handler resolves), bounded retries with backoff,
 * then the dead-letter topic with the reason and stage in headers; the partition moves on.
 */
export interface Bus {
  /**
   * Typed: a value that is not its topic's event is a compile error. The bus the services get (ValidatingBus) also
   * checks every value against the topic's zod schema before it leaves (an invalid one is a NonRetryableError).
   * The broker adapters themselves carry any value (a foreign producer's or a replayed message reaches consumers,
   * whose own validation dead-letters it).
   */
  publish<T extends Topic>(topic: T, messages: OutgoingMessage<TopicValue<T>>[]): Promise<void>;
  subscribe(opts: SubscribeOptions): Promise<void>;
  start(): Promise<void>;
  /** Waits until every subscribed group has consumed everything published so far (tests, CLI). */
  drain(timeoutMs?: number): Promise<void>;
  /** Unconsumed messages per group/topic. */
  lag(): Promise<{ group: string; topic: Topic; lag: number }[]>;
  close(): Promise<void>;
}

/**
 * A broker adapter (the embedded log, Kafka): a Bus that carries any value — bus mechanics, replays and foreign
 * producers' messages are not the application's events. The services get it wrapped in a ValidatingBus.
 */
export interface MessageBroker extends Omit<Bus, 'publish'> {
  publish(topic: Topic, messages: OutgoingMessage[]): Promise<void>;
}
export const BUS = Symbol('BUS');

/** Thrown by a handler to send a message straight to the DLQ without retries (e.g. it fails validation). */
export class NonRetryableError extends Error {
  readonly code = 'NON_RETRYABLE';
}

/**
 * A publish that left out the messages larger than the broker accepts on the topic (Kafka's `max.message.bytes`); the
 * others were published. `indexes` are the left-out messages' positions in the publish call, `keys` their keys.
 * Non-retryable: the same message is as large next time.
 */
export class MessageTooLargeError extends NonRetryableError {
  constructor(
    readonly indexes: readonly number[],
    readonly keys: readonly string[],
    message: string,
  ) {
    super(message);
    this.name = 'MessageTooLargeError';
  }
}
