import type { Topic, SourceEvent } from '@rag/contracts';
import { MessageTooLargeError, type Bus, type OutgoingMessage } from '@rag/ports';

/**
 * A bus that records what is published and consumes nothing; `failNext` publishes fail (a bus outage, or — with
 * `Infinity` — a process that dies right after the registry commit, before any publish).
 */
export class RecordingBus implements Bus {
  readonly published: { topic: Topic; key: string; value: SourceEvent }[] = [];
  /** The JSON bytes of each publish call's values (the call's share of a relay's claim). */
  readonly callBytes: number[] = [];
  /** Like a Kafka topic's max.message.bytes as KafkaBus applies it: larger values are left out, the rest published. */
  maxValueBytes = Infinity;
  constructor(public failNext = 0) {}
  async publish(topic: Topic, messages: OutgoingMessage[]): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('bus unavailable (the process died before publishing)');
    }
    const tooLarge: number[] = [];
    this.callBytes.push(messages.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m.value)), 0));
    for (const [i, m] of messages.entries()) {
      if (Buffer.byteLength(JSON.stringify(m.value)) > this.maxValueBytes) tooLarge.push(i);
      else this.published.push({ topic, key: m.key, value: m.value as SourceEvent });
    }
    if (tooLarge.length) {
      throw new MessageTooLargeError(
        tooLarge,
        tooLarge.map((i) => messages[i]!.key),
        `${tooLarge.length} message(s) larger than the topic accepts`,
      );
    }
  }
  async subscribe(): Promise<void> {}
  async start(): Promise<void> {}
  async drain(): Promise<void> {}
  async lag() {
    return [];
  }
  async close(): Promise<void> {}
}
