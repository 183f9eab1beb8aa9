/*
 * Test-only: the delivery contract every bus keeps (the embedded SQLite log and Kafka), as one suite that runs
 * against each of them: log-bus.contract.spec.ts and kafka-bus.contract.spec.ts (npm test; Kafka over the in-memory
 * kafkajs stand-in) and test/infra/kafka-bus.contract.infra.spec.ts (the real broker).
 */
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { AppError } from '@rag/platform';
import { NonRetryableError, type BusMessage, type MessageBroker, type SubscribeOptions } from '@rag/ports';

export interface ContractPolicy {
  maxAttempts?: number;
  transientRetryMs?: number;
}

export interface BusContractTarget {
  /**
   * A fresh, isolated log (a new SQLite file; a new topic prefix on a cluster). Every bus opened from one log shares
   * it, as processes share a bus file or a cluster. Small backoffs, so retries take milliseconds.
   */
  log(): { open(policy?: ContractPolicy): MessageBroker };
  /** A consumer-group name of this run (a real broker outlives a run and its groups). */
  group(name: string): string;
  /** Longest a drain may take (a real broker needs seconds to balance a group). */
  drainMs: number;
}

const gate = () => {
  let open!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  return { open, wait };
};

const valueN = (m: BusMessage) => (m.value as { n: number }).n;

export function busContract(name: string, target: BusContractTarget): void {
  describe(`${name}: the bus contract`, () => {
    const opened: MessageBroker[] = [];
    const open = (log: ReturnType<BusContractTarget['log']>, policy?: ContractPolicy) => {
      const bus = log.open(policy);
      opened.push(bus);
      return bus;
    };
    const sub = (bus: MessageBroker, group: string, topic: Topic, handler: SubscribeOptions['handler'], stage = group) =>
      bus.subscribe({ group: target.group(group), topic, stage, handler });
    afterEach(async () => {
      for (const b of opened.splice(0)) await b.close().catch(() => undefined);
    });

    it('delivers every message to every group, each key in publish order, with key, value and headers as published', async () => {
      const bus = open(target.log());
      const seen: Record<string, Record<string, number[]>> = { a: {}, b: {} };
      const headers: string[] = [];
      for (const g of ['a', 'b'] as const) {
        await sub(bus, `order-${g}`, Topic.Chunks, async (m) => {
          expect(m.topic).toBe(Topic.Chunks);
          if (g === 'a') headers.push(m.headers['x-own']!);
          (seen[g]![m.key] ??= []).push(valueN(m));
        });
      }
      await bus.start();
      const keys = ['doc-1', 'doc-2', 'doc-3'];
      const msgs = [];
      for (let n = 0; n < 20; n++) for (const key of keys) msgs.push({ key, value: { n }, headers: { 'x-own': `h${n}` } });
      await bus.publish(Topic.Chunks, msgs);
      await bus.drain(target.drainMs);
      for (const g of ['a', 'b']) for (const key of keys) expect(seen[g]![key]).toEqual([...Array(20).keys()]);
      expect(headers).toHaveLength(60);
      expect(new Set(headers).size).toBe(20);
      const lag = (await bus.lag()).filter((l) => l.topic === Topic.Chunks && l.group.startsWith(target.group('order-')));
      expect(lag.map((l) => l.lag)).toEqual([0, 0]);
    });

    it('counts a message as consumed only once its handler resolved: lag and drain wait for it', async () => {
      const bus = open(target.log());
      const release = gate();
      const entered = gate();
      await sub(bus, 'slow', Topic.Documents, async () => {
        entered.open();
        await release.wait;
      });
      await bus.start();
      await bus.publish(Topic.Documents, [{ key: 'd1', value: { n: 1 } }]);
      await entered.wait;
      expect((await bus.lag()).find((l) => l.group === target.group('slow'))!.lag).toBe(1);
      await expect(bus.drain(50)).rejects.toThrow(/did not drain/);
      release.open();
      await bus.drain(target.drainMs);
      expect((await bus.lag()).find((l) => l.group === target.group('slow'))!.lag).toBe(0);
    });

    it('redelivers, to the next consumer of the group, what a closed one had not committed — and nothing it had', async () => {
      const log = target.log();
      const first = open(log);
      const handled: number[] = [];
      const entered = gate();
      const release = gate();
      await sub(first, 'redeliver', Topic.ChunksEmbedded, async (m) => {
        if (valueN(m) === 3) {
          entered.open();
          await release.wait;
          throw new Error('killed mid-message');
        }
        handled.push(valueN(m));
      });
      await first.start();
      await first.publish(Topic.ChunksEmbedded, [...Array(6).keys()].map((n) => ({ key: 'same-doc', value: { n } })));
      await entered.wait;
      const closing = first.close();
      release.open();
      await closing;
      expect(handled).toEqual([0, 1, 2]);

      const second = open(log);
      const again: number[] = [];
      const dead: BusMessage[] = [];
      await sub(second, 'redeliver', Topic.ChunksEmbedded, async (m) => void again.push(valueN(m)));
      await sub(second, 'redeliver-dlq', Topic.Dlq, async (m) => void dead.push(m));
      await second.start();
      await second.drain(target.drainMs);
      expect(again).toEqual([3, 4, 5]);
      expect(dead).toEqual([]);
    });

    it('retries a failing message with its attempt number, then dead-letters it with reason, stage, original topic and attempts, and the partition moves on', async () => {
      const bus = open(target.log(), { maxAttempts: 3 });
      const attempts: number[] = [];
      const after: number[] = [];
      const dead: BusMessage[] = [];
      await sub(
        bus,
        'retry',
        Topic.Documents,
        async (m) => {
          if (valueN(m) === 1) {
            attempts.push(m.attempt);
            throw new Error('cannot chunk 1');
          }
          after.push(valueN(m));
        },
        'chunker',
      );
      await sub(bus, 'retry-dlq', Topic.Dlq, async (m) => void dead.push(m));
      await bus.start();
      await bus.publish(Topic.Documents, [
        { key: 'doc-x', value: { n: 1 }, headers: { 'x-own': 'kept' } },
        { key: 'doc-x', value: { n: 2 } },
      ]);
      await bus.drain(target.drainMs);
      expect(attempts).toEqual([1, 2, 3]);
      expect(after).toEqual([2]);
      expect(dead).toHaveLength(1);
      expect(dead[0]!.key).toBe('doc-x');
      expect(dead[0]!.value).toEqual({ n: 1 });
      expect(dead[0]!.headers).toMatchObject({
        'x-own': 'kept',
        [DLQ_HEADERS.reason]: 'cannot chunk 1',
        [DLQ_HEADERS.stage]: 'chunker',
        [DLQ_HEADERS.originalTopic]: Topic.Documents,
        // where it was, to replay or inspect it from there
        [DLQ_HEADERS.originalPartition]: expect.stringMatching(/^\d+$/),
        [DLQ_HEADERS.originalOffset]: expect.stringMatching(/^\d+$/),
        [DLQ_HEADERS.attempts]: '3',
      });
    });

    it('dead-letters a NonRetryableError at once', async () => {
      const bus = open(target.log(), { maxAttempts: 5 });
      let calls = 0;
      const dead: BusMessage[] = [];
      await sub(
        bus,
        'invalid',
        Topic.SourceEvents,
        async () => {
          calls++;
          throw new NonRetryableError('invalid source event');
        },
        'loader',
      );
      await sub(bus, 'invalid-dlq', Topic.Dlq, async (m) => void dead.push(m));
      await bus.start();
      await bus.publish(Topic.SourceEvents, [{ key: 'upload:1', value: { nonsense: true } }]);
      await bus.drain(target.drainMs);
      expect(calls).toBe(1);
      expect(dead.map((d) => [d.headers[DLQ_HEADERS.reason], d.headers[DLQ_HEADERS.stage], d.headers[DLQ_HEADERS.attempts]])).toEqual([
        ['invalid source event', 'loader', '1'],
      ]);
    });

    it('holds a partition through a store outage (transient errors do not count against maxAttempts) and resumes in order', async () => {
      const bus = open(target.log(), { maxAttempts: 2, transientRetryMs: 600_000 });
      let outage = 6;
      const done: number[] = [];
      const dead: BusMessage[] = [];
      await sub(bus, 'outage', Topic.ChunksEmbedded, async (m) => {
        if (valueN(m) === 1 && outage > 0) {
          outage--;
          throw new AppError('unavailable', 'vector store unavailable');
        }
        done.push(valueN(m));
      });
      await sub(bus, 'outage-dlq', Topic.Dlq, async (m) => void dead.push(m));
      await bus.start();
      await bus.publish(Topic.ChunksEmbedded, [1, 2, 3].map((n) => ({ key: 'doc-o', value: { n } })));
      await bus.drain(target.drainMs);
      expect(outage).toBe(0);
      expect(done).toEqual([1, 2, 3]);
      expect(dead).toEqual([]);
    });

    it('dead-letters a transient failure that outlasts the hold', async () => {
      const bus = open(target.log(), { maxAttempts: 50, transientRetryMs: 1 });
      const dead: BusMessage[] = [];
      await sub(
        bus,
        'long-outage',
        Topic.ChunksEmbedded,
        async () => {
          throw new AppError('unavailable', 'vector store unavailable');
        },
        'indexer',
      );
      await sub(bus, 'long-outage-dlq', Topic.Dlq, async (m) => void dead.push(m));
      await bus.start();
      await bus.publish(Topic.ChunksEmbedded, [{ key: 'doc-l', value: { n: 1 } }]);
      await bus.drain(target.drainMs);
      expect(dead.map((d) => [d.headers[DLQ_HEADERS.reason], d.headers[DLQ_HEADERS.stage]])).toEqual([['vector store unavailable', 'indexer']]);
    });

    it('refuses to publish once closed', async () => {
      const bus = open(target.log());
      await bus.start();
      await bus.close();
      await expect(bus.publish(Topic.Chunks, [{ key: 'k', value: { n: 1 } }])).rejects.toThrow(/closed/);
    });
  });
}
