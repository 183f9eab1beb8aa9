import type { Topic, SourceEvent } from '@rag/contracts';
import type { Bus, OutgoingMessage } from '@rag/ports';

/**
 * A bus that records what is published and consumes nothing; `failNext` publishes fail (a bus outage, or — with
 * `Infinity` — a process that dies right after the registry commit, before any publish).
 */
export class RecordingBus implements Bus {
  readonly published: { topic: Topic; key: string; value: SourceEvent }[] = [];
  constructor(public failNext = 0) {}
  async publish(topic: Topic, messages: OutgoingMessage[]): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--;
      throw new Error('bus unavailable (the process died before publishing)');
    }
    for (const m of messages) this.published.push({ topic, key: m.key, value: m.value as SourceEvent });
  }
  async subscribe(): Promise<void> {}
  async start(): Promise<void> {}
  async drain(): Promise<void> {}
  async lag() {
    return [];
  }
  async close(): Promise<void> {}
}
