import { ClientProxy, type ReadPacket, type WritePacket } from '@nestjs/microservices';
import { TOPIC_SCHEMAS, type Topic, type TopicValue } from '@rag/contracts';
import { NonRetryableError, type Bus, type MessageBroker, type OutgoingMessage, type SubscribeOptions } from '@rag/ports';

/**
 * Checks outgoing messages against their topic's zod schema (the same schema the consuming stage parses with):
 * a stage that would emit an invalid event fails here, with the reason, instead of poisoning the next stage.
 * A NonRetryableError, so the message being handled goes to the DLQ at once (retrying would build the same event).
 */
export function validateOutgoing(topic: Topic, messages: readonly OutgoingMessage[]): void {
  const schema = TOPIC_SCHEMAS[topic];
  if (!schema) throw new NonRetryableError(`cannot publish to ${String(topic)}: not a topic`);
  for (const [i, m] of messages.entries()) {
    if (typeof m.key !== 'string') throw new NonRetryableError(`refusing to publish message ${i} on ${topic}: the key must be a string`);
    const r = schema.safeParse(m.value);
    if (r.success) continue;
    const problems = r.error.issues
      .slice(0, 5)
      .map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`)
      .join('; ');
    throw new NonRetryableError(`refusing to publish an invalid ${topic} message (key ${m.key}): ${problems}`);
  }
}

/**
 * The bus the services get (BUS): the broker (embedded log or Kafka) with every published value validated against
 * its topic's schema on the way out, as consumers validate on the way in. Everything else is the broker's.
 */
export class ValidatingBus implements Bus {
  constructor(readonly broker: MessageBroker) {}
  async publish<T extends Topic>(topic: T, messages: OutgoingMessage<TopicValue<T>>[]): Promise<void> {
    validateOutgoing(topic, messages);
    await this.broker.publish(topic, messages);
  }
  subscribe(opts: SubscribeOptions): Promise<void> {
    return this.broker.subscribe(opts);
  }
  start(): Promise<void> {
    return this.broker.start();
  }
  drain(timeoutMs?: number): Promise<void> {
    return this.broker.drain(timeoutMs);
  }
  lag(): ReturnType<Bus['lag']> {
    return this.broker.lag();
  }
  close(): Promise<void> {
    return this.broker.close();
  }
}

/**
 * The bus as a Nest ClientProxy (`client.emit(Topic.X, { key, value, headers? })`), for Nest-side callers that
 * expect one: events only, validated like ValidatingBus. (The application's stages publish through the `Bus` port,
 * which keeps libs/application free of Nest; both end in the same broker publish.)
 */
export class BusClient extends ClientProxy {
  private readonly bus: ValidatingBus;
  constructor(bus: MessageBroker) {
    super();
    this.bus = bus instanceof ValidatingBus ? bus : new ValidatingBus(bus);
  }
  async connect(): Promise<void> {}
  /** The broker belongs to the bus's owner (CoreModule closes it after the consumers). */
  async close(): Promise<void> {}
  unwrap<T>(): T {
    return this.bus.broker as T;
  }
  protected publish(packet: ReadPacket, callback: (packet: WritePacket) => void): () => void {
    callback({ err: new Error(`the bus carries events only: use emit(${String(packet.pattern)}, message), not send()`), isDisposed: true });
    return () => undefined;
  }
  protected async dispatchEvent<T = unknown>(packet: ReadPacket<OutgoingMessage>): Promise<T> {
    const topic = this.normalizePattern(packet.pattern) as Topic;
    await this.bus.publish(topic, [packet.data as OutgoingMessage<TopicValue<Topic>>]);
    return undefined as T;
  }
}
