import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, setLogLevel } from '@rag/platform';
import { NonRetryableError } from '@rag/ports';
import { SqliteLogBus } from './log-bus.adapter';

setLogLevel('silent');

describe('SqliteLogBus', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bus-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const open = (extra: Partial<ConstructorParameters<typeof SqliteLogBus>[0]> = {}) =>
    new SqliteLogBus({ path: join(dir, 'bus.db'), partitions: 4, retryBaseMs: 1, pollMs: 20, logger: new Logger('t'), ...extra });

  /** One consumer group on rag.documents.v1 whose handler counts its calls; returns the running count. */
  const countingConsumer = async (bus: SqliteLogBus, stage: string, fail: (call: number) => void) => {
    const state = { calls: 0 };
    await bus.subscribe({ group: 'g', topic: Topic.Documents, stage, handler: async () => fail(++state.calls) });
    await bus.start();
    return state;
  };

  it('keeps per-key order and delivers every message to every group', async () => {
    const bus = open();
    const seen: Record<string, Record<string, number[]>> = { a: {}, b: {} };
    for (const g of ['a', 'b'] as const) {
      await bus.subscribe({
        group: g,
        topic: Topic.Chunks,
        stage: g,
        handler: async (m) => {
          const v = m.value as { n: number };
          // a random small delay interleaves partitions but must never reorder one key
          await new Promise((r) => setTimeout(r, Math.random() * 2));
          (seen[g]![m.key] ??= []).push(v.n);
        },
      });
    }
    await bus.start();
    const msgs = [];
    for (let n = 0; n < 50; n++) for (const key of ['doc-1', 'doc-2', 'doc-3']) msgs.push({ key, value: { n } });
    await bus.publish(Topic.Chunks, msgs);
    await bus.drain(10_000);
    for (const g of ['a', 'b']) {
      for (const key of ['doc-1', 'doc-2', 'doc-3']) expect(seen[g]![key]).toEqual([...Array(50).keys()]);
    }
    expect((await bus.lag()).every((l) => l.lag === 0)).toBe(true);
    await bus.close();
  });

  it('retries a failing handler with backoff and then moves the message to the DLQ with reason and stage', async () => {
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
    await bus.publish(Topic.Documents, [
      { key: 'bad', value: { x: 1 } },
      { key: 'bad', value: { x: 2 } },
    ]);
    await bus.publish(Topic.Documents, [{ key: 'good', value: {} }]);
    await bus.drain(10_000);
    expect(calls).toBe(6);
    expect(after).toEqual(['good']);
    const dlq = bus.deadLetters();
    expect(dlq).toHaveLength(2);
    expect(dlq[0]!.headers[DLQ_HEADERS.reason]).toBe('boom');
    expect(dlq[0]!.headers[DLQ_HEADERS.stage]).toBe('chunker');
    expect(dlq[0]!.headers[DLQ_HEADERS.originalTopic]).toBe(Topic.Documents);
    expect(dlq[0]!.headers[DLQ_HEADERS.attempts]).toBe('3');
    expect(dlq.map((d) => d.value)).toEqual([{ x: 1 }, { x: 2 }]);
    await bus.close();
  });

  it('sends a non-retryable failure to the DLQ at once', async () => {
    const bus = open({ maxAttempts: 5 });
    const c = await countingConsumer(bus, 'chunker', () => {
      throw new NonRetryableError('invalid payload: document_id is required');
    });
    await bus.publish(Topic.Documents, [{ key: 'k', value: {} }]);
    await bus.drain(10_000);
    expect(c.calls).toBe(1);
    expect(bus.deadLetters()[0]!.headers[DLQ_HEADERS.reason]).toContain('document_id is required');
    expect(bus.deadLetters()[0]!.headers[DLQ_HEADERS.attempts]).toBe('1'); // what really happened, not maxAttempts
    await bus.close();
  });

  it('holds a message through a transient store outage instead of dead-lettering it (same policy as Kafka)', async () => {
    const bus = open({ maxAttempts: 2, retryBaseMs: 5, retryMaxMs: 5, transientRetryMs: 60_000 });
    // Down for 6 deliveries — three times maxAttempts — then back.
    const c = await countingConsumer(bus, 'indexer', (call) => {
      if (call <= 6) throw Object.assign(new Error('opensearch unavailable'), { code: 'unavailable' });
    });
    await bus.publish(Topic.Documents, [{ key: 'k', value: {} }]);
    await bus.drain(10_000);
    expect(c.calls).toBe(7);
    expect(bus.deadLetters()).toEqual([]);
    await bus.close();
  });

  it('stops retrying at once when closed and leaves the message for redelivery', async () => {
    const bus = open({ maxAttempts: 5, retryBaseMs: 60_000, retryMaxMs: 60_000 });
    const c = await countingConsumer(bus, 'chunker', () => {
      throw new Error('boom');
    });
    await bus.publish(Topic.Documents, [{ key: 'k', value: {} }]);
    await vi.waitFor(() => expect(c.calls).toBe(1));
    const t0 = Date.now();
    await bus.close(); // the 60 s backoff must not hold the close
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(c.calls).toBe(1);
  });

  it('redelivers uncommitted messages after a restart and never loses accepted ones', async () => {
    const first = open({ maxAttempts: 1000, retryBaseMs: 5, retryMaxMs: 5 });
    const done: number[] = [];
    let crash = true;
    await first.subscribe({
      group: 'g',
      topic: Topic.SourceEvents,
      stage: 'loader',
      handler: async (m) => {
        const n = (m.value as { n: number }).n;
        if (n === 3 && crash) throw new Error('simulated crash before commit');
        done.push(n);
      },
    });
    await first.start();
    await first.publish(
      Topic.SourceEvents,
      [0, 1, 2, 3, 4].map((n) => ({ key: 'same-doc', value: { n } })),
    );
    await new Promise((r) => setTimeout(r, 100));
    await first.close(); // "process dies" while message 3 is failing
    expect(done).toEqual([0, 1, 2]);

    crash = false;
    const second = open();
    await second.subscribe({
      group: 'g',
      topic: Topic.SourceEvents,
      stage: 'loader',
      handler: async (m) => {
        done.push((m.value as { n: number }).n);
      },
    });
    await second.start();
    await second.drain(10_000);
    expect(done).toEqual([0, 1, 2, 3, 4]);
    expect(second.compact()).toBe(5);
    await second.close();
  });
});
