import type { ConsumerConfig, ConsumerRunConfig, ConsumerSubscribeTopic, ConsumerSubscribeTopics, IHeaders, ProducerRecord, RecordMetadata } from 'kafkajs';
import type { KafkaAdminLike, KafkaConsumerLike, KafkaLike, KafkaProducerLike } from './kafka-bus.adapter';

/**
 * Test-only: an in-memory stand-in for the few kafkajs calls KafkaBus makes — partitioned logs, committed offsets
 * per group, one member per group (it owns every partition), messages handed to `eachMessage` one at a time per
 * partition, or to `eachBatch` up to `fetchBatch` at a time (resolved offsets move the position, as in kafkajs). It checks the adapter's own logic; the real broker is exercised by test/infra/kafka-bus.infra.spec.ts.
 */
export interface StoredMessage {
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

const toBuffer = (v: Buffer | string | null | undefined): Buffer | null => (v === null || v === undefined ? null : Buffer.isBuffer(v) ? v : Buffer.from(v));

export class FakeKafka implements KafkaLike {
  readonly logs = new Map<string, StoredMessage[][]>();
  readonly committed = new Map<string, number>();
  readonly groups = new Set<string>();
  sends = 0;
  /** Set to make the next sends fail. */
  failSends = 0;
  /** Most messages one `eachBatch` call gets. */
  fetchBatch = 50;

  partitionFor(topic: string, key: string): number {
    const parts = this.logs.get(topic)!.length;
    let h = 0;
    for (let i = 0; i < key.length; i++) h = (Math.imul(h, 31) + key.charCodeAt(i)) | 0;
    return Math.abs(h) % parts;
  }

  messages(topic: string): StoredMessage[] {
    return (this.logs.get(topic) ?? []).flat();
  }

  producer(): KafkaProducerLike {
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      send: async (record: ProducerRecord): Promise<RecordMetadata[]> => {
        this.sends++;
        if (this.failSends > 0) {
          this.failSends--;
          throw new Error('broker unavailable');
        }
        const log = this.logs.get(record.topic);
        if (!log) throw new Error(`This server does not host this topic-partition: ${record.topic}`);
        return record.messages.map((m) => {
          const key = m.key === undefined || m.key === null ? null : Buffer.isBuffer(m.key) ? m.key : Buffer.from(m.key);
          const partition = this.partitionFor(record.topic, key?.toString() ?? '');
          const headers: IHeaders = {};
          for (const [k, v] of Object.entries(m.headers ?? {})) if (v !== undefined) headers[k] = Array.isArray(v) ? v.map((x) => toBuffer(x)!) : toBuffer(v)!;
          log[partition]!.push({ key, value: toBuffer(m.value), headers });
          return { topicName: record.topic, partition, errorCode: 0, baseOffset: String(log[partition]!.length - 1) };
        });
      },
    };
  }

  consumer(config: ConsumerConfig): KafkaConsumerLike {
    const group = config.groupId;
    this.groups.add(group);
    let topics: string[] = [];
    let running = false;
    const loops: Promise<void>[] = [];
    return {
      connect: async () => undefined,
      subscribe: async (s: ConsumerSubscribeTopics | ConsumerSubscribeTopic) => {
        topics = 'topics' in s ? s.topics.map(String) : [String(s.topic)];
      },
      commitOffsets: async (offsets) => {
        for (const o of offsets) this.committed.set(`${group}|${o.topic}|${o.partition}`, Number(o.offset));
      },
      run: async (run?: ConsumerRunConfig) => {
        running = true;
        const each = run!.eachMessage;
        const eachBatch = run!.eachBatch;
        for (const topic of topics) {
          const parts = this.logs.get(topic)?.length ?? 0;
          for (let partition = 0; partition < parts; partition++) {
            loops.push(
              (async () => {
                let position = this.committed.get(`${group}|${topic}|${partition}`) ?? 0;
                while (running) {
                  const log = this.logs.get(topic)![partition]!;
                  if (position >= log.length) {
                    await new Promise((r) => setTimeout(r, 2));
                    continue;
                  }
                  if (eachBatch) {
                    const from = position;
                    const slice = log.slice(from, from + this.fetchBatch);
                    const messages = slice.map((m, j) => ({ key: m.key, value: m.value, headers: m.headers, offset: String(from + j), timestamp: String(Date.now()), attributes: 0 }));
                    let resolved = -1;
                    try {
                      await eachBatch({
                        batch: {
                          topic,
                          partition,
                          highWatermark: String(log.length),
                          messages,
                          isEmpty: () => messages.length === 0,
                          firstOffset: () => messages[0]?.offset ?? null,
                          lastOffset: () => messages[messages.length - 1]!.offset,
                          offsetLag: () => String(log.length - 1 - (from + messages.length - 1)),
                          offsetLagLow: () => String(log.length - 1 - from),
                        },
                        resolveOffset: (o: string) => {
                          resolved = Math.max(resolved, Number(o));
                        },
                        heartbeat: async () => undefined,
                        pause: () => () => undefined,
                        commitOffsetsIfNecessary: async () => undefined,
                        uncommittedOffsets: () => ({ topics: [] }),
                        isRunning: () => running,
                        isStale: () => false,
                      });
                      // The next fetch starts after the last resolved offset (nothing resolved: the same batch again).
                      if (resolved >= from) position = resolved + 1;
                      else await new Promise((r) => setTimeout(r, 2));
                    } catch {
                      position = this.committed.get(`${group}|${topic}|${partition}`) ?? 0;
                      await new Promise((r) => setTimeout(r, 5));
                    }
                    continue;
                  }
                  const m = log[position]!;
                  try {
                    await each!({
                      topic,
                      partition,
                      message: { key: m.key, value: m.value, headers: m.headers, offset: String(position), timestamp: String(Date.now()), attributes: 0 },
                      heartbeat: async () => undefined,
                      pause: () => () => undefined,
                    });
                    position++;
                  } catch {
                    // kafkajs re-fetches from the last committed offset after a failed eachMessage.
                    position = this.committed.get(`${group}|${topic}|${partition}`) ?? 0;
                    await new Promise((r) => setTimeout(r, 5));
                  }
                }
              })(),
            );
          }
        }
      },
      disconnect: async () => {
        running = false;
        await Promise.all(loops);
      },
    };
  }

  admin(): KafkaAdminLike {
    return {
      connect: async () => undefined,
      disconnect: async () => undefined,
      listTopics: async () => [...this.logs.keys()],
      createTopics: async ({ topics }) => {
        let created = false;
        for (const t of topics) {
          if (this.logs.has(t.topic)) continue;
          this.logs.set(
            t.topic,
            Array.from({ length: t.numPartitions ?? 1 }, () => []),
          );
          created = true;
        }
        return created;
      },
      fetchTopicOffsets: async (topic) =>
        (this.logs.get(topic) ?? []).map((log, partition) => ({ partition, offset: String(log.length), high: String(log.length), low: '0' })),
      fetchOffsets: async ({ groupId, topics }) =>
        (topics ?? []).map((topic) => ({
          topic,
          partitions: (this.logs.get(topic) ?? []).map((_, partition) => ({
            partition,
            offset: String(this.committed.get(`${groupId}|${topic}|${partition}`) ?? -1),
            metadata: null,
          })),
        })),
      listGroups: async () => ({ groups: [...this.groups].map((groupId) => ({ groupId, protocolType: 'consumer' })) }),
    };
  }
}
