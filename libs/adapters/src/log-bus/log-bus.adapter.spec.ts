import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics, setLogLevel } from '@rag/platform';
import { NonRetryableError } from '@rag/ports';
import type { BusMessage } from '@rag/ports';
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

  it('lets the event loop turn while consumers work through a backlog whose handlers never wait on I/O', async () => {
    // Handlers that resolve in microtasks (synchronous work underneath, like SQLite or the hashing embedder) must not
    // chain the whole backlog past the loop's timers and I/O (an HTTP request or health check would wait for all of it).
    const bus = open();
    const total = 400;
    let handled = 0;
    let handledWhenTimerFired = -1;
    await bus.subscribe({
      group: 'g',
      topic: Topic.Chunks,
      stage: 'busy',
      handler: async () => {
        const until = performance.now() + 0.5; // half a millisecond of synchronous work per message
        while (performance.now() < until);
        handled++;
      },
    });
    await bus.publish(
      Topic.Chunks,
      Array.from({ length: total }, (_, n) => ({ key: `doc-${n}`, value: { n } })),
    );
    await bus.start();
    await new Promise<void>((resolve) =>
      setTimeout(() => {
        handledWhenTimerFired = handled;
        resolve();
      }, 5),
    );
    await bus.drain(20_000);
    expect(handled).toBe(total);
    // The 5 ms timer fired long before the ≈ 200 ms of handler work was done.
    expect(handledWhenTimerFired).toBeGreaterThanOrEqual(0);
    expect(handledWhenTimerFired).toBeLessThan(total / 2);
    await bus.close();
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

  describe('retention and compaction', () => {
    const MB = 1024 * 1024;
    const HOUR = 3_600_000;
    /** bus.db, its WAL and any payload files beside it, read from the file system (whatever the implementation). */
    const onDisk = () => {
      const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);
      const file = join(dir, 'bus.db');
      let blobs = 0;
      for (const name of readdirSync(dir)) {
        const p = join(dir, name);
        if (name.startsWith('bus.db') && statSync(p).isDirectory()) for (const f of readdirSync(p)) blobs += size(join(p, f));
      }
      return { db: size(file) + size(`${file}-wal`), blobs, total: size(file) + size(`${file}-wal`) + blobs };
    };
    const bigText = (bytes: number, seed = 'lorem ipsum ') => seed.repeat(Math.ceil(bytes / seed.length)).slice(0, bytes);
    /** A consumer group that records what it got. */
    const recorder = async (bus: SqliteLogBus, group: string, topic: Topic, into: BusMessage[], gate?: Promise<void>) =>
      bus.subscribe({
        group,
        topic,
        stage: group,
        handler: async (m) => {
          if (gate) await gate;
          into.push(m);
        },
      });

    it('after a 10 MB message is consumed by every group and compaction runs, bus.db and its payload files go back near the empty size', async () => {
      const bus = open({ compactIntervalMs: 0 });
      const a: BusMessage[] = [];
      const b: BusMessage[] = [];
      await recorder(bus, 'a', Topic.Documents, a);
      await recorder(bus, 'b', Topic.Documents, b);
      await bus.start();
      await bus.publish(Topic.Documents, [{ key: 'seed', value: { n: 0 } }]);
      await bus.drain(10_000);
      bus.compact();
      const empty = onDisk().total;

      const text = bigText(10 * MB);
      await bus.publish(Topic.Documents, [{ key: 'upload:1', value: { text } }]);
      await bus.drain(30_000);
      // Each reader got the very value that was published.
      expect((a[1]!.value as { text: string }).text === text).toBe(true);
      expect((b[1]!.value as { text: string }).text === text).toBe(true);
      expect(onDisk().total).toBeGreaterThan(10 * MB);

      expect(bus.compact()).toBe(1);
      const after = onDisk();
      expect(after.blobs).toBe(0);
      expect(after.total).toBeLessThan(empty + 512 * 1024);
      await bus.close();
    });

    it('gives back the space of many smaller (inline) messages once they are consumed', async () => {
      const bus = open({ compactIntervalMs: 0 });
      await countingConsumer(bus, 'chunker', () => undefined);
      const empty = onDisk().total;
      // 40 × 200 KiB: under the inline threshold, so they live in bus.db itself.
      await bus.publish(
        Topic.Documents,
        [...Array(40).keys()].map((n) => ({ key: `doc-${n}`, value: { text: bigText(200 * 1024, `m${n} `) } })),
      );
      await bus.drain(30_000);
      expect(onDisk().db).toBeGreaterThan(6 * MB);
      expect(bus.compact()).toBe(40);
      // What is left is the WAL, cut back to its 1 MiB limit.
      expect(onDisk().total).toBeLessThan(empty + 1.5 * MB);
      await bus.close();
    });

    it('keeps every message (and its payload file) a registered group has not committed yet', async () => {
      const bus = open({ compactIntervalMs: 0 });
      const fast: BusMessage[] = [];
      const slow: BusMessage[] = [];
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      await recorder(bus, 'fast', Topic.Chunks, fast);
      await recorder(bus, 'slow', Topic.Chunks, slow, gate);
      await bus.start();
      const big = bigText(1 * MB);
      await bus.publish(Topic.Chunks, [
        { key: 'doc', value: { n: 0, big } },
        { key: 'doc', value: { n: 1 } },
        { key: 'doc', value: { n: 2 } },
      ]);
      await vi.waitFor(() => expect(fast).toHaveLength(3));
      expect(bus.compact()).toBe(0); // 'slow' is still on the first one
      expect(onDisk().blobs).toBeGreaterThan(MB - 1);
      release();
      await bus.drain(10_000);
      expect(slow.map((m) => (m.value as { n: number }).n)).toEqual([0, 1, 2]);
      expect((slow[0]!.value as { big: string }).big === big).toBe(true);
      expect(bus.compact()).toBe(3);
      expect(onDisk().blobs).toBe(0);
      await bus.close();
    });

    it('resumes correctly after compaction and a restart: offsets continue, nothing is delivered twice or skipped', async () => {
      const first = open({ compactIntervalMs: 0 });
      const before: BusMessage[] = [];
      await recorder(first, 'g', Topic.SourceEvents, before);
      await first.start();
      await first.publish(Topic.SourceEvents, [0, 1, 2].map((n) => ({ key: 'same-doc', value: { n, big: n === 1 ? bigText(400 * 1024) : '' } })));
      await first.drain(10_000);
      expect(first.compact()).toBe(3);
      await first.close();

      const second = open({ compactIntervalMs: 0 });
      const after: BusMessage[] = [];
      await recorder(second, 'g', Topic.SourceEvents, after);
      await second.start();
      await second.publish(Topic.SourceEvents, [3, 4].map((n) => ({ key: 'same-doc', value: { n } })));
      await second.drain(10_000);
      expect(after.map((m) => (m.value as { n: number }).n)).toEqual([3, 4]);
      expect(after.map((m) => m.offset)).toEqual([4, 5]); // the head survived the compaction
      expect(await second.lag()).toEqual([{ group: 'g', topic: Topic.SourceEvents, lag: 0 }]);
      await second.close();
    });

    it('an idle bus reads no message rows when it polls', async () => {
      // Count every statement execution that reads the message table, whatever its name in the schema.
      const probe = new Database(':memory:');
      const proto = Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<'all' | 'get' | 'iterate', (...a: unknown[]) => unknown>;
      probe.close();
      let reads = 0;
      const spies = (['all', 'get', 'iterate'] as const).map((m) => {
        const original = proto[m];
        return vi.spyOn(proto, m).mockImplementation(function (this: { source: string }, ...args: unknown[]) {
          if (/FROM\s+bus_(messages|log)\b/i.test(this.source)) reads++;
          return original.apply(this, args);
        });
      });
      try {
        const bus = open({ pollMs: 5, compactIntervalMs: 0 });
        const got: BusMessage[] = [];
        for (const g of ['a', 'b', 'c']) await recorder(bus, g, Topic.Chunks, got);
        await bus.start();
        await bus.publish(Topic.Chunks, [{ key: 'k', value: { n: 1 } }]);
        await bus.drain(10_000);
        expect(got).toHaveLength(3);
        reads = 0;
        await new Promise((r) => setTimeout(r, 300)); // dozens of poll rounds over 4 partitions × 3 groups
        expect(reads).toBe(0);
        await bus.close();
      } finally {
        for (const s of spies) s.mockRestore();
      }
    });

    it('still notices messages another process appended to the shared file', async () => {
      const consumer = open({ compactIntervalMs: 0 });
      const got: BusMessage[] = [];
      await recorder(consumer, 'g', Topic.Documents, got);
      await consumer.start();
      const producer = open({ compactIntervalMs: 0 }); // a second connection, as another process has
      await producer.publish(Topic.Documents, [
        { key: 'x', value: { n: 1 } },
        { key: 'x', value: { n: 2, big: bigText(300 * 1024) } },
      ]);
      await vi.waitFor(() => expect(got).toHaveLength(2), { timeout: 10_000 });
      expect((got[1]!.value as { big: string }).big).toHaveLength(300 * 1024);
      await producer.close();
      await consumer.close();
    });

    it('keeps dead letters for inspection, then removes them by age and by size', async () => {
      let now = 1_000_000;
      const bus = open({ compactIntervalMs: 0, clock: () => now, dlqRetentionMs: 24 * HOUR, dlqRetentionBytes: 10_000 });
      // No DLQ consumer at all: dead letters are still kept for dlqRetentionMs.
      await bus.publish(Topic.Dlq, [{ key: 'd1', value: { reason: 'one' } }]);
      now += HOUR;
      await bus.publish(Topic.Dlq, [{ key: 'd2', value: { reason: 'two' } }]);
      expect(bus.compact()).toBe(0);
      expect(bus.deadLetters().map((d) => d.key)).toEqual(['d1', 'd2']);
      now += 23.5 * HOUR; // d1 is 24.5 h old, d2 23.5 h
      expect(bus.compact()).toBe(1);
      expect(bus.deadLetters().map((d) => d.key)).toEqual(['d2']);
      // Size: 5 × ~3 KB over a 10 KB budget: the oldest go first.
      now += HOUR;
      for (let i = 0; i < 5; i++) {
        now += 1;
        await bus.publish(Topic.Dlq, [{ key: `s${i}`, value: { pad: bigText(3000) } }]);
      }
      bus.compact();
      expect(bus.deadLetters().map((d) => d.key)).toEqual(['s2', 's3', 's4']);
      await bus.close();
    });

    it('does not drop dead letters a registered DLQ group has not consumed, however old', async () => {
      let now = 1_000_000;
      const bus = open({ compactIntervalMs: 0, clock: () => now, dlqRetentionMs: HOUR, dlqRetentionBytes: 1, groupExpiryMs: 0 });
      await bus.subscribe({ group: 'registry-dlq', topic: Topic.Dlq, stage: 'registry', handler: async () => undefined }); // never started
      await bus.publish(Topic.Dlq, [{ key: 'd', value: {} }]);
      now += 100 * HOUR;
      expect(bus.compact()).toBe(0);
      expect(bus.deadLetters()).toHaveLength(1);
      await bus.close();
    });

    it('keeps messages of a topic no group is registered for until the retention time, then removes them', async () => {
      let now = 1_000_000;
      const bus = open({ compactIntervalMs: 0, clock: () => now, retentionMs: 48 * HOUR });
      await bus.publish(Topic.IndexEvents, [{ key: 'k1', value: {} }]);
      await bus.publish(Topic.Chunks, [{ key: 'k2', value: { big: bigText(400 * 1024) } }]);
      now += 47 * HOUR;
      expect(bus.compact()).toBe(0);
      // A group that first subscribes within the retention still gets what was published before it existed.
      const got: BusMessage[] = [];
      await recorder(bus, 'late', Topic.IndexEvents, got);
      await bus.start();
      await bus.drain(10_000);
      expect(got.map((m) => m.key)).toEqual(['k1']);
      now += 2 * HOUR;
      // k1: consumed by its one registered group; k2: nobody registered for Chunks and it is 49 h old.
      expect(bus.compact()).toBe(2);
      expect(onDisk().blobs).toBe(0);
      await bus.close();
    });

    it('drops a registered group no process has run for the expiry time, so it no longer holds the log', async () => {
      let now = 1_000_000;
      const gone = open({ compactIntervalMs: 0, clock: () => now });
      await gone.subscribe({ group: 'renamed-stage', topic: Topic.Documents, stage: 'old', handler: async () => undefined });
      await gone.close(); // registered, never consumed, never comes back

      const bus = open({ compactIntervalMs: 0, clock: () => now, groupExpiryMs: 24 * HOUR });
      const got: BusMessage[] = [];
      await recorder(bus, 'chunker', Topic.Documents, got);
      await bus.start();
      await bus.publish(Topic.Documents, [{ key: 'k', value: {} }]);
      await bus.drain(10_000);
      expect(bus.compact()).toBe(0); // 'renamed-stage' is still a member
      now += 12 * HOUR;
      expect(bus.compact()).toBe(0);
      now += 13 * HOUR; // 25 h since 'renamed-stage' was last seen; 'chunker' is kept alive by its running process
      expect(bus.compact()).toBe(1);
      expect((await bus.lag()).map((l) => l.group)).toEqual(['chunker']);
      await bus.publish(Topic.Documents, [{ key: 'k', value: { n: 2 } }]);
      await bus.drain(10_000);
      expect(got).toHaveLength(2);
      await bus.close();
    });

    it('dead-letters a message whose payload file was removed, and the partition moves on', async () => {
      const bus = open({ compactIntervalMs: 0 });
      const got: BusMessage[] = [];
      await recorder(bus, 'g', Topic.Documents, got);
      await bus.publish(Topic.Documents, [
        { key: 'doc', value: { big: bigText(300 * 1024) } },
        { key: 'doc', value: { n: 2 } },
      ]);
      const blobDir = join(dir, 'bus.db.blobs');
      for (const f of readdirSync(blobDir)) unlinkSync(join(blobDir, f));
      await bus.start();
      await bus.drain(10_000);
      expect(got.map((m) => m.value)).toEqual([{ n: 2 }]);
      const dlq = bus.deadLetters();
      expect(dlq).toHaveLength(1);
      expect(dlq[0]!.headers[DLQ_HEADERS.reason]).toMatch(/payload file .* unreadable/);
      await bus.close();
    });

    it('dead-letters a large message with its whole payload', async () => {
      const bus = open({ compactIntervalMs: 0, maxAttempts: 1 });
      await countingConsumer(bus, 'chunker', () => {
        throw new Error('boom');
      });
      const big = bigText(2 * MB);
      await bus.publish(Topic.Documents, [{ key: 'k', value: { big } }]);
      await bus.drain(10_000);
      expect(bus.compact()).toBe(1); // the original is gone, the dead letter (same payload file) stays
      expect((bus.deadLetters()[0]!.value as { big: string }).big === big).toBe(true);
      await bus.close();
    });

    it('moves a bus.db of the old format (every value inline) to the compacted one and delivers what was not consumed', async () => {
      const file = join(dir, 'bus.db');
      const legacy = new Database(file);
      legacy.pragma('journal_mode = WAL');
      legacy.exec(`
        CREATE TABLE bus_messages (topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
          key TEXT NOT NULL, value TEXT NOT NULL, headers TEXT NOT NULL, ts INTEGER NOT NULL,
          PRIMARY KEY (topic, partition, offset)) WITHOUT ROWID;
        CREATE TABLE bus_offsets (grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, committed INTEGER NOT NULL,
          PRIMARY KEY (grp, topic, partition)) WITHOUT ROWID;
        CREATE TABLE bus_heads (topic TEXT NOT NULL, partition INTEGER NOT NULL, head INTEGER NOT NULL,
          PRIMARY KEY (topic, partition)) WITHOUT ROWID;`);
      const probe = new SqliteLogBus({ path: ':memory:', partitions: 4 });
      const p = probe.partitionFor('doc');
      await probe.close();
      const ins = legacy.prepare('INSERT INTO bus_messages VALUES (?, ?, ?, ?, ?, ?, ?)');
      for (let o = 1; o <= 4; o++) ins.run(Topic.Documents, p, o, 'doc', JSON.stringify({ n: o, text: bigText(3 * MB, `v${o} `) }), '{}', Date.now());
      legacy.prepare('INSERT INTO bus_heads VALUES (?, ?, 4)').run(Topic.Documents, p);
      for (let q = 0; q < 4; q++) legacy.prepare('INSERT INTO bus_offsets VALUES (?, ?, ?, ?)').run('g', Topic.Documents, q, q === p ? 2 : 0);
      legacy.close();
      expect(onDisk().db).toBeGreaterThan(12 * MB);

      const bus = open({ compactIntervalMs: 0 });
      expect(onDisk().total).toBeLessThan(7 * MB); // the two consumed 3 MB messages are gone already
      const got: BusMessage[] = [];
      await recorder(bus, 'g', Topic.Documents, got);
      await bus.start();
      await bus.drain(10_000);
      expect(got.map((m) => [(m.value as { n: number }).n, m.offset])).toEqual([
        [3, 3],
        [4, 4],
      ]);
      expect((got[0]!.value as { text: string }).text === bigText(3 * MB, 'v3 ')).toBe(true);
      expect(bus.compact()).toBe(2);
      expect(onDisk().total).toBeLessThan(1 * MB);
      await bus.close();
    });

    it('reports the log size and retained messages as metrics', async () => {
      const bus = open({ compactIntervalMs: 0 });
      await bus.publish(Topic.IndexEvents, [
        { key: 'a', value: { big: bigText(300 * 1024) } },
        { key: 'b', value: {} },
        { key: 'c', value: {} },
      ]);
      bus.compact();
      const messages = await metrics.busLogMessages.get();
      expect(messages.values.find((v) => v.labels.topic === Topic.IndexEvents)?.value).toBe(3);
      const bytes = await metrics.busLogBytes.get();
      expect(bytes.values.find((v) => v.labels.part === 'blobs')?.value).toBeGreaterThanOrEqual(300 * 1024);
      expect(bytes.values.find((v) => v.labels.part === 'db')?.value).toBeGreaterThan(0);
      await bus.close();
    });
  });
});

describe('SqliteLogBus batch delivery (batchDocs, a subscription with a batch handler)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'bus-batch-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const open = () => new SqliteLogBus({ path: join(dir, 'bus.db'), partitions: 1, retryBaseMs: 1, pollMs: 20, logger: new Logger('t'), batchDocs: 8 });

  it('hands a run of distinct keys to one call; a message failing in it is delivered alone; a repeated key starts the next run', async () => {
    const bus = open();
    await bus.publish(Topic.Chunks, ['a', 'b', 'c', 'a'].map((key, n) => ({ key, value: { n } })));
    const runs: string[][] = [];
    const alone: string[] = [];
    await bus.subscribe({
      group: 'g',
      topic: Topic.Chunks,
      stage: 'indexer',
      handler: async (m) => void alone.push(`${m.key}${(m.value as { n: number }).n}`),
      batchHandler: async (msgs) => {
        runs.push(msgs.map((m) => m.key));
        return msgs.map((m) => (m.key === 'b' ? new Error('bulk write refused b') : undefined));
      },
    });
    await bus.start();
    await bus.drain(10_000);
    expect(runs).toEqual([['a', 'b', 'c']]);
    // b alone after the failed run, then the repeated a (a run of one goes to the single handler).
    expect(alone).toEqual(['b1', 'a3']);
    expect((await bus.lag()).every((l) => l.lag === 0)).toBe(true);
    await bus.close();
  });

  it('commits a run only after it was handled: a bus closed mid-run delivers the whole run again after a restart', async () => {
    const first = open();
    await first.publish(Topic.Chunks, ['a', 'b', 'c'].map((key) => ({ key, value: {} })));
    let release!: () => void;
    const entered = new Promise<void>((r) => {
      release = r;
    });
    let proceed!: () => void;
    const gate = new Promise<void>((r) => (proceed = r));
    await first.subscribe({
      group: 'g',
      topic: Topic.Chunks,
      stage: 'indexer',
      handler: async () => undefined,
      batchHandler: async (msgs) => {
        release();
        await gate;
        return msgs.map(() => undefined);
      },
    });
    await first.start();
    await entered;
    const closing = first.close();
    proceed();
    await closing;

    const second = open();
    const redelivered: string[][] = [];
    await second.subscribe({ group: 'g', topic: Topic.Chunks, stage: 'indexer', handler: async () => undefined, batchHandler: async (msgs) => (redelivered.push(msgs.map((m) => m.key)), msgs.map(() => undefined)) });
    await second.start();
    await second.drain(10_000);
    expect(redelivered).toEqual([['a', 'b', 'c']]);
    await second.close();
  });
});
