import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { KafkaBus, type KafkaBusOptions } from '../../libs/adapters/src/kafka-bus';
import { ALL_TOPICS, DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, setLogLevel } from '@rag/platform';
import { MessageTooLargeError, NonRetryableError, type BusMessage } from '@rag/ports';

/*
 * KafkaBus against a real broker (RAG_KAFKA_BROKERS, default 127.0.0.1:9092). Start one first:
 *   bash deploy/local/servers.sh start kafka
 * Every test works on its own topics (a unique prefix) and deletes them afterwards.
 */

setLogLevel('error');
const brokers = (process.env.RAG_KAFKA_BROKERS ?? '127.0.0.1:9092').split(',').map((b) => b.trim());
const run = randomBytes(4).toString('hex');
const prefixes: string[] = [];
const buses: KafkaBus[] = [];
let n = 0;

function newPrefix(): string {
  const p = `it-${run}-${++n}.`;
  prefixes.push(p);
  return p;
}

function open(prefix: string, extra: Partial<KafkaBusOptions> = {}): KafkaBus {
  const bus = new KafkaBus({
    brokers,
    clientId: `rag-infra-${run}`,
    topicPrefix: prefix,
    partitions: 4,
    retryBaseMs: 20,
    retryMaxMs: 100,
    heartbeatIntervalMs: 500,
    sessionTimeoutMs: 10_000,
    logger: new Logger('kafka-it'),
    ...extra,
  });
  buses.push(bus);
  return bus;
}

const admin = new Kafka({ brokers, clientId: `rag-infra-admin-${run}`, logLevel: logLevel.NOTHING }).admin();

beforeAll(async () => {
  try {
    await admin.connect();
  } catch (e) {
    throw new Error(`no Kafka broker at ${brokers.join(',')} (${e instanceof Error ? e.message : String(e)}): start one with \`bash deploy/local/servers.sh start kafka\``);
  }
});

afterAll(async () => {
  for (const b of buses) await b.close().catch(() => undefined);
  const topics = (await admin.listTopics()).filter((t) => prefixes.some((p) => t.startsWith(p)));
  if (topics.length) await admin.deleteTopics({ topics }).catch(() => undefined);
  const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => g.startsWith(`it-${run}`));
  if (groups.length) await admin.deleteGroups(groups).catch(() => undefined);
  await admin.disconnect();
});

const gate = () => {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { wait: p, open };
};

/** A started bus (one partition, topics at 8 MiB) whose loader fails the message keyed `corrupt` as non-retryable; a DLQ reader. */
async function loaderFailing(prefix: string, name: string, reason: string): Promise<{ bus: KafkaBus; handled: string[]; dead: BusMessage[] }> {
  const bus = open(prefix, { partitions: 1, maxMessageBytes: 8 * 1024 * 1024 });
  const handled: string[] = [];
  const dead: BusMessage[] = [];
  await bus.subscribe({
    group: `it-${run}-loader-${name}`,
    topic: Topic.SourceEvents,
    stage: 'loader',
    handler: async (m) => {
      if (m.key === 'corrupt') throw new NonRetryableError(reason);
      handled.push(m.key);
    },
  });
  await bus.subscribe({ group: `it-${run}-dlq-${name}`, topic: Topic.Dlq, stage: 'dlq-reader', handler: async (m) => void dead.push(m) });
  await bus.start();
  return { bus, handled, dead };
}

describe('KafkaBus on a real broker', () => {
  it('creates the topics of the design with the configured partitions, idempotently', async () => {
    const prefix = newPrefix();
    await open(prefix, { partitions: 3 }).start();
    await open(prefix, { partitions: 3 }).start();
    const meta = await admin.fetchTopicMetadata({ topics: ALL_TOPICS.map((t) => prefix + t) });
    expect(meta.topics.map((t) => [t.name, t.partitions.length]).sort()).toEqual(ALL_TOPICS.map((t) => [prefix + t, 3]).sort());
  });

  it('carries messages and bulk sends past the broker\'s 1 MiB default: topics made with max.message.bytes, sends split under it', async () => {
    const prefix = newPrefix();
    const bus = open(prefix, { partitions: 2, maxMessageBytes: 8 * 1024 * 1024 });
    const sizes = new Map<string, number>();
    await bus.subscribe({ group: `it-${run}-large`, topic: Topic.Chunks, stage: 'embedder', handler: async (m) => void sizes.set(m.key, (m.value as { pad: string }).pad.length) });
    await bus.start();
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: `${prefix}${Topic.Chunks}`, configNames: ['max.message.bytes'] }] });
    expect(described.resources[0]!.configEntries.find((c) => c.configName === 'max.message.bytes')?.configValue).toBe(String(8 * 1024 * 1024));
    // Twelve 700 KB documents (a bulk run of large embedded events: 8.4 MB in all, ≈ 4 MB a partition) and one
    // 5 MB upload: before, the broker refused any partition batch over 1 MiB (MESSAGE_TOO_LARGE).
    const messages = [...Array(12).keys()].map((i) => ({ key: `doc-${i}`, value: { pad: 'x'.repeat(700_000) } }));
    messages.push({ key: 'upload', value: { pad: 'u'.repeat(5_000_000) } });
    await bus.publish(Topic.Chunks, messages);
    await bus.drain(60_000);
    expect(new Map([...sizes].sort())).toEqual(new Map(messages.map((m) => [m.key, m.value.pad.length] as const).sort()));
  });

  it('keeps to a smaller max.message.bytes of an existing topic and names the one message it cannot send', async () => {
    const prefix = newPrefix();
    // Topics made before the platform set the limit (or by an operator): the broker's 1 MiB.
    await admin.createTopics({
      waitForLeaders: true,
      topics: ALL_TOPICS.map((t) => ({ topic: prefix + t, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: String(1024 * 1024) }] })),
    });
    const bus = open(prefix, { maxMessageBytes: 8 * 1024 * 1024 });
    const seen: string[] = [];
    await bus.subscribe({ group: `it-${run}-limit`, topic: Topic.Chunks, stage: 'embedder', handler: async (m) => void seen.push(m.key) });
    await bus.start();
    const err = await bus
      .publish(Topic.Chunks, [
        { key: 'a', value: { pad: 'a'.repeat(400_000) } },
        { key: 'too-big', value: { pad: 'b'.repeat(1_500_000) } },
        { key: 'c', value: { pad: 'c'.repeat(400_000) } },
        { key: 'd', value: { pad: 'd'.repeat(400_000) } },
      ])
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(MessageTooLargeError);
    expect((err as MessageTooLargeError).keys).toEqual(['too-big']);
    expect((err as Error).message).toMatch(/max\.message\.bytes 1048576/);
    await bus.drain(60_000);
    // One partition, three 400 KB messages: more than 1 MiB together, so two sends; all three arrived, in order.
    expect(seen).toEqual(['a', 'c', 'd']);
  });

  it('dead-letters a message too large for an older 1 MiB DLQ topic without its value, keeps its version, and moves on', async () => {
    const prefix = newPrefix();
    // A DLQ made before the topics got their size (Kafka's 1 MiB); the other topics the bus makes, at 8 MiB.
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: prefix + Topic.Dlq, numPartitions: 1, configEntries: [{ name: 'max.message.bytes', value: String(1024 * 1024) }] }] });
    const { bus, handled, dead } = await loaderFailing(prefix, 'big', 'the PDF could not be parsed');
    await bus.publish(Topic.SourceEvents, [
      { key: 'corrupt', value: { version: 7, content_base64: 'A'.repeat(1_500_000) } },
      { key: 'next', value: { version: 1 } },
    ]);
    await bus.drain(60_000);
    // Before: the DLQ refused the 1.5 MB record, the batch failed and came back, and 'next' was never handled.
    expect(handled).toEqual(['next']);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.key).toBe('corrupt');
    expect(dead[0]!.value).toEqual({ version: 7 });
    expect(dead[0]!.headers).toMatchObject({
      [DLQ_HEADERS.reason]: 'the PDF could not be parsed',
      [DLQ_HEADERS.stage]: 'loader',
      [DLQ_HEADERS.originalTopic]: Topic.SourceEvents,
      [DLQ_HEADERS.originalPartition]: '0',
      [DLQ_HEADERS.originalOffset]: '0',
      [DLQ_HEADERS.valueOmitted]: expect.stringMatching(/^15\d{5} bytes, larger than .*rag\.dlq\.v1 accepts \(max\.message\.bytes 1048576\); the original stays at rag\.source\.events\.v1 partition 0 offset 0/),
    });
  });

  it('dead-letters without the value when the broker refuses the record as too large (the DLQ limit lowered after start)', async () => {
    const prefix = newPrefix();
    const { bus, handled, dead } = await loaderFailing(prefix, 'lowered', 'unreadable');
    await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: prefix + Topic.Dlq, configEntries: [{ name: 'max.message.bytes', value: String(1024 * 1024) }] }] });
    await bus.publish(Topic.SourceEvents, [
      { key: 'corrupt', value: { document: { version: 3 }, pad: 'B'.repeat(1_500_000) } },
      { key: 'next', value: { version: 1 } },
    ]);
    await bus.drain(60_000);
    expect(handled).toEqual(['next']);
    expect(dead.map((d) => [d.key, d.value])).toEqual([['corrupt', { version: 3 }]]);
    expect(dead[0]!.headers[DLQ_HEADERS.valueOmitted]).toMatch(/^15\d{5} bytes, larger than .*rag\.dlq\.v1 accepts; the original stays at rag\.source\.events\.v1 partition 0 offset 0/);
  });

  it('creates the DLQ with room for a dead-lettered message of the largest size and its headers', async () => {
    const prefix = newPrefix();
    const bus = open(prefix, { partitions: 1, maxMessageBytes: 2 * 1024 * 1024 });
    const dead: BusMessage[] = [];
    await bus.subscribe({ group: `it-${run}-loader-max`, topic: Topic.SourceEvents, stage: 'loader', handler: async () => { throw new NonRetryableError('x'.repeat(5000)); } });
    await bus.subscribe({ group: `it-${run}-dlq-max`, topic: Topic.Dlq, stage: 'dlq-reader', handler: async (m) => void dead.push(m) });
    await bus.start();
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: prefix + Topic.Dlq, configNames: ['max.message.bytes'] }] });
    expect(described.resources[0]!.configEntries.find((c) => c.configName === 'max.message.bytes')?.configValue).toBe(String(3 * 1024 * 1024));
    // just under the source topic's limit: dead-lettered whole, with its headers
    const pad = 'p'.repeat(2 * 1024 * 1024 - 2_000);
    await bus.publish(Topic.SourceEvents, [{ key: 'at-limit', value: { version: 2, pad } }]);
    await bus.drain(60_000);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.value).toEqual({ version: 2, pad });
    expect(dead[0]!.headers[DLQ_HEADERS.valueOmitted]).toBeUndefined();
  });

  it('keeps per-key order across partitions, one message at a time per partition, for every group', async () => {
    const prefix = newPrefix();
    const bus = open(prefix);
    const groups = [`it-${run}-order-a`, `it-${run}-order-b`];
    const seen = new Map<string, Map<string, number[]>>(groups.map((g) => [g, new Map()]));
    const partitionsSeen = new Set<number>();
    const busy = new Set<string>();
    let overlap = false;
    for (const group of groups) {
      await bus.subscribe({
        group,
        topic: Topic.Chunks,
        stage: 'embedder',
        handler: async (m: BusMessage) => {
          const slot = `${group}/${m.partition}`;
          if (busy.has(slot)) overlap = true;
          busy.add(slot);
          partitionsSeen.add(m.partition);
          await new Promise((r) => setTimeout(r, Math.random() * 3));
          const perKey = seen.get(group)!;
          perKey.set(m.key, [...(perKey.get(m.key) ?? []), (m.value as { n: number }).n]);
          busy.delete(slot);
        },
      });
    }
    await bus.start();
    const keys = [...Array(8).keys()].map((k) => `doc-${k}`);
    for (let i = 0; i < 40; i += 10) {
      const batch = [];
      for (let j = i; j < i + 10; j++) for (const key of keys) batch.push({ key, value: { n: j } });
      await bus.publish(Topic.Chunks, batch);
    }
    await bus.drain(60_000);
    for (const group of groups) for (const key of keys) expect(seen.get(group)!.get(key)).toEqual([...Array(40).keys()]);
    expect(partitionsSeen.size).toBeGreaterThan(1);
    expect(overlap).toBe(false);
    const lag = (await bus.lag()).filter((l) => groups.includes(l.group));
    expect(lag.map((l) => l.lag)).toEqual([0, 0]);
  });

  it('retries with backoff, then dead-letters with reason, stage, original topic and attempts headers, and moves on', async () => {
    const prefix = newPrefix();
    const bus = open(prefix, { maxAttempts: 3 });
    const attempts: number[] = [];
    const after: string[] = [];
    const dead: BusMessage[] = [];
    await bus.subscribe({
      group: `it-${run}-chunker`,
      topic: Topic.Documents,
      stage: 'chunker',
      handler: async (m) => {
        const v = m.value as { ok: boolean; n: number };
        if (!v.ok) {
          attempts.push(m.attempt);
          throw new Error(`cannot chunk ${v.n}`);
        }
        after.push(`${m.key}:${v.n}`);
      },
    });
    await bus.subscribe({ group: `it-${run}-dlq`, topic: Topic.Dlq, stage: 'dlq-reader', handler: async (m) => void dead.push(m) });
    await bus.start();
    await bus.publish(Topic.Documents, [
      { key: 'doc-x', value: { ok: false, n: 1 }, headers: { 'x-trace-id': 'abc' } },
      { key: 'doc-x', value: { ok: true, n: 2 } },
    ]);
    await bus.drain(60_000);
    expect(attempts).toEqual([1, 2, 3]);
    expect(after).toEqual(['doc-x:2']);
    expect(dead).toHaveLength(1);
    expect(dead[0]!.key).toBe('doc-x');
    expect(dead[0]!.value).toEqual({ ok: false, n: 1 });
    expect(dead[0]!.headers).toMatchObject({
      'x-trace-id': 'abc',
      [DLQ_HEADERS.reason]: 'cannot chunk 1',
      [DLQ_HEADERS.stage]: 'chunker',
      [DLQ_HEADERS.originalTopic]: Topic.Documents,
      [DLQ_HEADERS.attempts]: '3',
    });
  });

  it('sends a NonRetryableError to the DLQ at once', async () => {
    const prefix = newPrefix();
    const bus = open(prefix, { maxAttempts: 5 });
    let calls = 0;
    const dead: BusMessage[] = [];
    await bus.subscribe({
      group: `it-${run}-loader`,
      topic: Topic.SourceEvents,
      stage: 'loader',
      handler: async () => {
        calls++;
        throw new NonRetryableError('invalid source event');
      },
    });
    await bus.subscribe({ group: `it-${run}-dlq2`, topic: Topic.Dlq, stage: 'dlq-reader', handler: async (m) => void dead.push(m) });
    await bus.start();
    await bus.publish(Topic.SourceEvents, [{ key: 'upload:1', value: { nonsense: true } }]);
    await bus.drain(60_000);
    expect(calls).toBe(1);
    expect(dead.map((d) => [d.headers[DLQ_HEADERS.reason], d.headers[DLQ_HEADERS.attempts], d.headers[DLQ_HEADERS.stage]])).toEqual([
      ['invalid source event', '1', 'loader'],
    ]);
  });

  it('redelivers what a closed consumer had not committed (at-least-once) and nothing it had', async () => {
    const prefix = newPrefix();
    const group = `it-${run}-redeliver`;
    const first = open(prefix);
    const handled: number[] = [];
    const entered = gate();
    const release = gate();
    await first.subscribe({
      group,
      topic: Topic.ChunksEmbedded,
      stage: 'indexer',
      handler: async (m) => {
        const v = (m.value as { n: number }).n;
        if (v === 3) {
          entered.open();
          await release.wait;
          throw new Error('killed mid-message');
        }
        handled.push(v);
      },
    });
    await first.start();
    await first.publish(
      Topic.ChunksEmbedded,
      [...Array(8).keys()].map((v) => ({ key: 'doc-same', value: { n: v } })),
    );
    await entered.wait;
    const closing = first.close();
    release.open();
    await closing;
    expect(handled).toEqual([0, 1, 2]);

    const second = open(prefix);
    const again: number[] = [];
    await second.subscribe({ group, topic: Topic.ChunksEmbedded, stage: 'indexer', handler: async (m) => void again.push((m.value as { n: number }).n) });
    await second.start();
    await second.drain(60_000);
    expect(again).toEqual([3, 4, 5, 6, 7]);
  });

  // Bulk ingestion (issue 13 item 6): the eachBatch path of KafkaTransport.
  it('hands a batch handler runs of distinct keys, several messages per call, in per-key order, each message once', async () => {
    const prefix = newPrefix();
    const bus = open(prefix, { batchDocs: 16 });
    const calls: string[][] = [];
    const seen: string[] = [];
    const single: string[] = [];
    await bus.subscribe({
      group: `it-${run}-batch`,
      topic: Topic.Chunks,
      stage: 'embedder',
      handler: async (m) => void single.push(m.key),
      batchHandler: async (msgs) => {
        calls.push(msgs.map((m) => m.key));
        for (const m of msgs) seen.push(`${m.key}:${(m.value as { v: number }).v}`);
        return msgs.map(() => undefined);
      },
    });
    // Published before the consumers start, so the first fetch of each partition finds many messages.
    const keys = [...Array(24).keys()].map((i) => `doc-${i}`);
    await bus.publish(Topic.Chunks, [...keys.map((key) => ({ key, value: { v: 1 } })), ...keys.map((key) => ({ key, value: { v: 2 } }))]);
    await bus.start();
    await bus.drain(60_000);
    expect(seen).toHaveLength(48);
    expect(new Set(seen).size).toBe(48);
    expect(single).toEqual([]);
    expect(Math.max(...calls.map((c) => c.length)), `calls: ${JSON.stringify(calls)}`).toBeGreaterThan(1);
    for (const c of calls) {
      expect(new Set(c).size, 'no key twice in one call').toBe(c.length);
      expect(c.length).toBeLessThanOrEqual(16);
    }
    for (const key of keys) expect(seen.filter((x) => x.startsWith(`${key}:`))).toEqual([`${key}:1`, `${key}:2`]);
    expect((await bus.lag()).filter((l) => l.group === `it-${run}-batch`).every((l) => l.lag === 0)).toBe(true);
  });

  it('delivers the messages that failed in a batch alone under the policy: the others are not redelivered', async () => {
    const prefix = newPrefix();
    const bus = open(prefix, { maxAttempts: 3, partitions: 1, batchDocs: 10 });
    const batched: string[] = [];
    const alone: string[] = [];
    const dead: BusMessage[] = [];
    let flaky = 0;
    await bus.subscribe({
      group: `it-${run}-batch-fail`,
      topic: Topic.ChunksEmbedded,
      stage: 'indexer',
      batchHandler: async (msgs) => {
        batched.push(...msgs.map((m) => m.key));
        return msgs.map((m) => (m.key === 'bad' ? new NonRetryableError('invalid event') : m.key === 'flaky' ? new Error('store hiccup') : undefined));
      },
      handler: async (m) => {
        alone.push(`${m.key}@${m.attempt}`);
        if (m.key === 'bad') throw new NonRetryableError('invalid event');
        if (m.key === 'flaky' && ++flaky < 2) throw new Error('store hiccup');
      },
    });
    await bus.subscribe({ group: `it-${run}-dlq3`, topic: Topic.Dlq, stage: 'dlq-reader', handler: async (m) => void dead.push(m) });
    await bus.publish(Topic.ChunksEmbedded, ['a', 'bad', 'b', 'flaky', 'c'].map((key) => ({ key, value: { key } })));
    await bus.start();
    await bus.drain(60_000);
    expect(batched.filter((k) => k !== 'bad' && k !== 'flaky').sort()).toEqual(['a', 'b', 'c']);
    // The batch call is not an attempt: the non-retryable message fails once alone, the flaky one succeeds on its second.
    expect(alone.sort()).toEqual(['bad@1', 'flaky@1', 'flaky@2']);
    expect(dead.map((d) => [d.key, d.headers[DLQ_HEADERS.reason], d.headers[DLQ_HEADERS.attempts], d.headers[DLQ_HEADERS.stage]])).toEqual([['bad', 'invalid event', '1', 'indexer']]);
  });

  it('redelivers the whole uncommitted run after a crash mid-batch, and nothing of the runs committed before', async () => {
    const prefix = newPrefix();
    const group = `it-${run}-batch-crash`;
    const first = open(prefix, { partitions: 1, batchDocs: 3 });
    const handled: number[] = [];
    const entered = gate();
    const release = gate();
    await first.subscribe({
      group,
      topic: Topic.ChunksEmbedded,
      stage: 'indexer',
      handler: async () => {
        throw new Error('not expected: every call is a batch');
      },
      batchHandler: async (msgs) => {
        const ns = msgs.map((m) => (m.value as { n: number }).n);
        if (ns.includes(4)) {
          entered.open();
          await release.wait;
          return msgs.map(() => new Error('killed mid-batch'));
        }
        handled.push(...ns);
        return msgs.map(() => undefined);
      },
    });
    await first.publish(
      Topic.ChunksEmbedded,
      [...Array(9).keys()].map((n) => ({ key: `doc-${n}`, value: { n } })),
    );
    await first.start();
    await entered.wait;
    const closing = first.close();
    release.open();
    await closing;
    expect(handled).toEqual([0, 1, 2]);

    const second = open(prefix, { partitions: 1, batchDocs: 100 });
    const again: number[] = [];
    await second.subscribe({
      group,
      topic: Topic.ChunksEmbedded,
      stage: 'indexer',
      handler: async (m) => void again.push((m.value as { n: number }).n),
      batchHandler: async (msgs) => {
        again.push(...msgs.map((m) => (m.value as { n: number }).n));
        return msgs.map(() => undefined);
      },
    });
    await second.start();
    await second.drain(60_000);
    expect(again).toEqual([3, 4, 5, 6, 7, 8]);
  });

  it('reports lag until handlers resolve, drains, and sees the groups of other processes', async () => {
    const prefix = newPrefix();
    const group = `it-${run}-lagger`;
    const consumer = open(prefix);
    const release = gate();
    const done: number[] = [];
    await consumer.subscribe({
      group,
      topic: Topic.IndexEvents,
      stage: 'registry',
      handler: async (m) => {
        await release.wait;
        done.push((m.value as { n: number }).n);
      },
    });
    await consumer.start();
    const producer = open(prefix);
    await producer.publish(
      Topic.IndexEvents,
      [...Array(5).keys()].map((v) => ({ key: `doc-${v}`, value: { n: v } })),
    );
    await expect(consumer.drain(1_500)).rejects.toThrow(/did not drain/);
    const before = (await consumer.lag()).find((l) => l.group === group && l.topic === Topic.IndexEvents);
    expect(before?.lag).toBe(5);
    release.open();
    await consumer.drain(60_000);
    expect(done.sort()).toEqual([0, 1, 2, 3, 4]);
    // the producer-only bus (another process) sees the consumer's group, now caught up
    const seenElsewhere = (await producer.lag()).find((l) => l.group === group && l.topic === Topic.IndexEvents);
    expect(seenElsewhere).toEqual({ group, topic: Topic.IndexEvents, lag: 0 });
  });
});
