import { ALL_TOPICS, DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, setLogLevel } from '@rag/platform';
import { decodeHeaders } from './delivery';
import { FakeKafka } from './fake-kafka';
import { logLevel } from 'kafkajs';
import { MessageTooLargeError, NonRetryableError } from '@rag/ports';
import { KafkaBus, kafkaLogCreator, type KafkaBusOptions } from './kafka-bus.adapter';

setLogLevel('silent');

describe('KafkaBus (over an in-memory kafkajs stand-in): what is Kafka-specific', () => {
  let kafka: FakeKafka;
  beforeEach(() => {
    kafka = new FakeKafka();
  });
  const open = (extra: Partial<KafkaBusOptions> = {}) =>
    new KafkaBus({ brokers: ['unused:9092'], kafka, partitions: 3, retryBaseMs: 1, retryMaxMs: 5, logger: new Logger('t'), ...extra });

  it('creates every topic of the design on start, idempotently, with the prefix', async () => {
    const a = open({ topicPrefix: 'test.' });
    await a.start();
    const b = open({ topicPrefix: 'test.' });
    await b.start();
    expect([...kafka.logs.keys()].sort()).toEqual(ALL_TOPICS.map((t) => `test.${t}`).sort());
    expect(kafka.logs.get('test.rag.chunks.v1')).toHaveLength(3);
    await a.close();
    await b.close();
  });

  it('prefixes consumer groups like topics, so deployments with different prefixes never share a group', async () => {
    const run = async (prefix: string) => {
      const bus = open({ topicPrefix: prefix });
      const seen: number[] = [];
      await bus.subscribe({ group: 'loader', topic: Topic.Chunks, stage: 'loader', handler: async (m) => void seen.push((m.value as { n: number }).n) });
      await bus.start();
      await bus.publish(Topic.Chunks, [{ key: 'doc-1', value: { n: 1 } }]);
      await bus.drain(10_000);
      return { bus, seen };
    };
    const a = await run('a.');
    const b = await run('b.');
    expect([...kafka.groups].sort()).toEqual(['a.loader', 'b.loader']);
    expect(a.seen).toEqual([1]);
    expect(b.seen).toEqual([1]);
    // Lag is reported under the stage's own group name, and only for this deployment's groups.
    expect((await a.bus.lag()).filter((l) => l.topic === Topic.Chunks).map((l) => [l.group, l.lag])).toEqual([['loader', 0]]);
    await a.bus.close();
    await b.bus.close();
  });

  it('splits a publish into sends under max.message.bytes and leaves out only a message larger than it, by key', async () => {
    const bus = open({ maxMessageBytes: 10_000 });
    await bus.start();
    const pad = (n: number) => 'x'.repeat(n);
    const before = kafka.sends;
    // 3 KB each: three fit in one 10 kB batch with their overhead, the fourth starts a second send.
    await bus.publish(Topic.Chunks, [1, 2, 3, 4, 5].map((n) => ({ key: `d${n}`, value: { n, pad: pad(3000) } })));
    expect(kafka.sends - before).toBe(2);
    const err = await bus
      .publish(Topic.Chunks, [
        { key: 'small-a', value: { n: 6 } },
        { key: 'huge', value: { n: 7, pad: pad(20_000) } },
        { key: 'small-b', value: { n: 8 } },
      ])
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(MessageTooLargeError);
    expect(err).toBeInstanceOf(NonRetryableError);
    expect((err as MessageTooLargeError).keys).toEqual(['huge']);
    expect((err as MessageTooLargeError).indexes).toEqual([1]);
    expect((err as Error).message).toMatch(/message huge is larger than topic rag\.chunks\.v1 accepts \(\d+ bytes > max\.message\.bytes 10000\)/);
    // Everything else went out, in order.
    const sent = kafka.messages('rag.chunks.v1').map((m) => m.key!.toString());
    expect(sent.sort()).toEqual(['d1', 'd2', 'd3', 'd4', 'd5', 'small-a', 'small-b']);
    await bus.close();
  });

  it('publishes JSON keyed by document id and delivers in per-key order to every group', async () => {
    const bus = open();
    const seen: Record<string, Record<string, number[]>> = { a: {}, b: {} };
    for (const g of ['a', 'b'] as const) {
      await bus.subscribe({
        group: g,
        topic: Topic.Chunks,
        stage: g,
        handler: async (m) => {
          await new Promise((r) => setTimeout(r, Math.random() * 2));
          expect(m.topic).toBe(Topic.Chunks);
          expect(m.headers['x-trace']).toBe('t1');
          (seen[g]![m.key] ??= []).push((m.value as { n: number }).n);
        },
      });
    }
    await bus.start();
    const msgs = [];
    for (let n = 0; n < 30; n++) for (const key of ['doc-1', 'doc-2', 'doc-3', 'doc-4']) msgs.push({ key, value: { n }, headers: { 'x-trace': 't1' } });
    await bus.publish(Topic.Chunks, msgs);
    await bus.drain(10_000);
    for (const g of ['a', 'b']) for (const key of ['doc-1', 'doc-2', 'doc-3', 'doc-4']) expect(seen[g]![key]).toEqual([...Array(30).keys()]);
    expect(JSON.parse(kafka.messages('rag.chunks.v1')[0]!.value!.toString())).toEqual({ n: 0 });
    const lag = await bus.lag();
    expect(lag.filter((l) => l.topic === Topic.Chunks).map((l) => [l.group, l.lag])).toEqual([
      ['a', 0],
      ['b', 0],
    ]);
    await bus.close();
  });

  it('commits only after the handler resolved and reports lag until then', async () => {
    const bus = open();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    await bus.subscribe({ group: 'slow', topic: Topic.Documents, stage: 'chunker', handler: () => gate });
    await bus.start();
    await bus.publish(Topic.Documents, [{ key: 'd1', value: {} }]);
    await new Promise((r) => setTimeout(r, 30));
    expect([...kafka.committed.values()]).toEqual([]);
    expect((await bus.lag()).find((l) => l.group === 'slow')!.lag).toBe(1);
    await expect(bus.drain(100)).rejects.toThrow(/did not drain/);
    release();
    await bus.drain(5_000);
    expect([...kafka.committed.entries()]).toEqual([[`slow|rag.documents.v1|${kafka.partitionFor('rag.documents.v1', 'd1')}`, 1]]);
    await bus.close();
  });

  it('retries, then moves the message to the DLQ with reason, stage, original topic and attempts, and moves on', async () => {
    const bus = open({ maxAttempts: 3 });
    let calls = 0;
    const after: string[] = [];
    await bus.subscribe({
      group: 'g',
      topic: Topic.Documents,
      stage: 'chunker',
      handler: async (m) => {
        if (m.key === 'bad') {
          calls++;
          throw new Error('boom');
        }
        after.push(m.key);
      },
    });
    await bus.start();
    await bus.publish(Topic.Documents, [{ key: 'bad', value: { x: 1 }, headers: { 'x-orig': 'kept' } }]);
    await bus.publish(Topic.Documents, [{ key: 'good', value: {} }]);
    await bus.drain(10_000);
    expect(calls).toBe(3);
    expect(after).toEqual(['good']);
    const dlq = kafka.messages('rag.dlq.v1');
    expect(dlq).toHaveLength(1);
    expect(dlq[0]!.key!.toString()).toBe('bad');
    expect(JSON.parse(dlq[0]!.value!.toString())).toEqual({ x: 1 });
    expect(decodeHeaders(dlq[0]!.headers)).toEqual({
      'x-orig': 'kept',
      [DLQ_HEADERS.reason]: 'boom',
      [DLQ_HEADERS.stage]: 'chunker',
      [DLQ_HEADERS.originalTopic]: Topic.Documents,
      [DLQ_HEADERS.originalPartition]: expect.stringMatching(/^[0-3]$/),
      [DLQ_HEADERS.originalOffset]: '0',
      [DLQ_HEADERS.attempts]: '3',
    });
    await bus.close();
  });

  // NonRetryableError → DLQ at once, redelivery of what a closed consumer had not committed, the outage hold: the
  // bus contract (../bus-contract), run against this stand-in, the log bus and the real broker.

  it('adds a topic to a running group by restarting its consumer', async () => {
    const bus = open();
    const got: string[] = [];
    await bus.subscribe({ group: 'g', topic: Topic.Chunks, stage: 's', handler: async (m) => void got.push(`${m.topic}:${m.key}`) });
    await bus.start();
    await bus.publish(Topic.Chunks, [{ key: 'a', value: 1 }]);
    await bus.drain(5_000);
    await bus.subscribe({ group: 'g', topic: Topic.IndexEvents, stage: 's', handler: async (m) => void got.push(`${m.topic}:${m.key}`) });
    await bus.publish(Topic.IndexEvents, [{ key: 'b', value: 2 }]);
    await bus.drain(5_000);
    expect(got).toEqual(['rag.chunks.v1:a', 'rag.index.events.v1:b']);
    await expect(bus.subscribe({ group: 'g', topic: Topic.Chunks, stage: 's', handler: async () => undefined })).rejects.toThrow(/already subscribed/);
    await bus.close();
  });

  it('reports lag of groups of other processes too, and refuses to publish once closed', async () => {
    const producerSide = open();
    await producerSide.start();
    await producerSide.publish(Topic.Chunks, [
      { key: 'a', value: 1 },
      { key: 'b', value: 2 },
    ]);
    // another process's group committed one of the two messages
    kafka.groups.add('embedder');
    kafka.committed.set(`embedder|rag.chunks.v1|${kafka.partitionFor('rag.chunks.v1', 'a')}`, 1);
    const lag = await producerSide.lag();
    expect(lag).toEqual([{ group: 'embedder', topic: Topic.Chunks, lag: 1 }]);
    await producerSide.close();
    await expect(producerSide.publish(Topic.Chunks, [{ key: 'c', value: 3 }])).rejects.toThrow(/closed/);
  });

  it('does not commit when the dead-letter write fails, so the message comes back', async () => {
    const bus = open({ maxAttempts: 1 });
    let calls = 0;
    await bus.subscribe({
      group: 'g',
      topic: Topic.Documents,
      stage: 'chunker',
      handler: async () => {
        calls++;
        if (calls === 1) kafka.failSends = 1; // the DLQ send after this failure fails once
        throw new Error('bad');
      },
    });
    await bus.start();
    await bus.publish(Topic.Documents, [{ key: 'k', value: {} }]);
    await bus.drain(5_000);
    expect(calls).toBe(2);
    expect(kafka.messages('rag.dlq.v1')).toHaveLength(1);
    await bus.close();
  });
});

describe('kafkajs logs', () => {
  it('go to our logger, with retried and per-request errors demoted', () => {
    const calls: string[] = [];
    class Capture extends Logger {
      override error(msg: string): void {
        calls.push(`error:${msg}`);
      }
      override warn(msg: string): void {
        calls.push(`warn:${msg}`);
      }
      override info(msg: string): void {
        calls.push(`info:${msg}`);
      }
      override debug(msg: string): void {
        calls.push(`debug:${msg}`);
      }
    }
    const log = new Capture('k');
    const write = kafkaLogCreator(log)();
    const entry = (namespace: string, level: logLevel, message: string, extra: Record<string, unknown> = {}) =>
      write({ namespace, level, label: 'x', log: { timestamp: 't', message, ...extra } });
    entry('Consumer', logLevel.ERROR, 'Crash');
    entry('Producer', logLevel.ERROR, 'Failed to send messages', { retryCount: 0 });
    entry('Connection', logLevel.ERROR, 'Response CreateTopics(key: 19, version: 3)');
    entry('Cluster', logLevel.WARN, 'slow');
    entry('Consumer', logLevel.INFO, 'joined');
    expect(calls).toEqual(['error:Crash', 'warn:Failed to send messages', 'debug:Response CreateTopics(key: 19, version: 3)', 'warn:slow', 'info:joined']);
  });
});

describe('KafkaBus against no broker', () => {
  it('fails start() with the connection error instead of hanging', async () => {
    const bus = new KafkaBus({
      brokers: ['127.0.0.1:1'],
      connectionTimeoutMs: 200,
      retry: { retries: 0, initialRetryTime: 50 },
      kafkaLogLevel: 'error',
      logger: new Logger('t'),
    });
    await expect(bus.start()).rejects.toThrow();
    await bus.close();
  });
});
