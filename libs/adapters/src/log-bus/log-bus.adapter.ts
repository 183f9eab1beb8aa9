import { EventEmitter } from 'node:events';
import Database from 'better-sqlite3';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics, traceHeaders } from '@rag/platform';
import type { Bus, Headers, OutgoingMessage, SubscribeOptions } from '@rag/ports';
import { deliverWithRetries } from '../bus-delivery';
import { openSqlite } from '../sqlite/open-sqlite';

export interface LogBusOptions {
  /** SQLite file holding the log, or ':memory:' (tests). Several processes may share one file. */
  path: string;
  partitions?: number;
  /** Deliveries of one message before it goes to the DLQ. */
  maxAttempts?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** How long a transient failure (a store down or past its deadline) is retried before the DLQ; 0 = like any failure. */
  transientRetryMs?: number;
  /** How often idle consumers look for messages published by other processes. */
  pollMs?: number;
  logger?: Logger;
  /** SQLite `synchronous` (default NORMAL: survives a killed process; FULL also survives power loss). */
  synchronous?: 'NORMAL' | 'FULL';
}

interface Row {
  offset: number;
  key: string;
  value: string;
  headers: string;
}

interface Consumer extends SubscribeOptions {
  partitions: number[];
  running: Set<number>;
}

/**
 * The embedded, in-process bus: a durable, partitioned append-only log in SQLite with Kafka's semantics.
 *
 * - A key always maps to the same partition and each group consumes a partition sequentially: per-key order.
 * - A group's offset is committed only after its handler resolved (the effect is durable): at-least-once,
 *   and a crash or restart resumes from the last committed offset, so nothing accepted is lost.
 * - A failing message is retried by the same policy as the Kafka bus (deliverWithRetries): exponential backoff up
 *   to `maxAttempts`, a transient store outage held for `transientRetryMs`, a NonRetryableError at once; then it is
 *   written to `rag.dlq.v1` with the reason, stage, original topic and attempts in headers, and the partition moves on.
 *
 * Written here rather than taken from a library because no maintained npm package offers a durable,
 * partitioned, consumer-group log inside one process; Kafka itself is the distributed-mode adapter.
 */
export class SqliteLogBus implements Bus {
  private readonly db: Database.Database;
  private readonly partitions: number;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly transientRetryMs: number;
  private readonly pollMs: number;
  private readonly log: Logger;
  private readonly consumers: Consumer[] = [];
  private readonly wake = new EventEmitter();
  private started = false;
  private closed = false;
  private readonly loops: Promise<void>[] = [];
  private pollTimer?: NodeJS.Timeout;
  private readonly inflight = new Set<string>();

  constructor(opts: LogBusOptions) {
    this.db = openSqlite(opts.path, opts.synchronous ?? 'NORMAL');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS bus_messages (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
        key TEXT NOT NULL, value TEXT NOT NULL, headers TEXT NOT NULL, ts INTEGER NOT NULL,
        PRIMARY KEY (topic, partition, offset)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS bus_offsets (
        grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, committed INTEGER NOT NULL,
        PRIMARY KEY (grp, topic, partition)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS bus_heads (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, head INTEGER NOT NULL,
        PRIMARY KEY (topic, partition)) WITHOUT ROWID;
    `);
    this.partitions = opts.partitions ?? 4;
    this.maxAttempts = opts.maxAttempts ?? 5;
    this.retryBaseMs = opts.retryBaseMs ?? 200;
    this.retryMaxMs = opts.retryMaxMs ?? 10_000;
    this.transientRetryMs = opts.transientRetryMs ?? 0;
    this.pollMs = opts.pollMs ?? 250;
    this.log = opts.logger ?? new Logger('bus');
    this.wake.setMaxListeners(0);
  }

  partitionFor(key: string): number {
    // FNV-1a: stable across processes and restarts.
    let h = 0x811c9dc5;
    for (let i = 0; i < key.length; i++) {
      h ^= key.charCodeAt(i);
      h = Math.imul(h, 0x01000193);
    }
    return (h >>> 0) % this.partitions;
  }

  async publish(topic: Topic, messages: OutgoingMessage[]): Promise<void> {
    if (this.closed) throw new Error('bus is closed');
    if (messages.length === 0) return;
    const head = this.db.prepare('SELECT head FROM bus_heads WHERE topic = ? AND partition = ?').pluck();
    const setHead = this.db.prepare(
      'INSERT INTO bus_heads (topic, partition, head) VALUES (?, ?, ?) ON CONFLICT(topic, partition) DO UPDATE SET head = excluded.head',
    );
    const insert = this.db.prepare(
      'INSERT INTO bus_messages (topic, partition, offset, key, value, headers, ts) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    const now = Date.now();
    // W3C trace context of the publishing span (traceparent), as on Kafka: the consuming stage continues the trace.
    const trace = traceHeaders();
    const tx = this.db.transaction(() => {
      for (const m of messages) {
        const p = this.partitionFor(m.key);
        const next = ((head.get(topic, p) as number | undefined) ?? 0) + 1;
        insert.run(topic, p, next, m.key, JSON.stringify(m.value), JSON.stringify({ ...trace, ...(m.headers ?? {}) }), now);
        setHead.run(topic, p, next);
      }
    });
    tx.immediate();
    this.wake.emit(topic);
  }

  async subscribe(opts: SubscribeOptions): Promise<void> {
    const consumer: Consumer = { ...opts, partitions: [...Array(this.partitions).keys()], running: new Set() };
    this.consumers.push(consumer);
    const init = this.db.prepare('INSERT OR IGNORE INTO bus_offsets (grp, topic, partition, committed) VALUES (?, ?, ?, 0)');
    for (const p of consumer.partitions) init.run(opts.group, opts.topic, p);
    if (this.started) this.launch(consumer);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const c of this.consumers) this.launch(c);
    // Messages appended by other processes sharing the file are noticed by polling.
    this.pollTimer = setInterval(() => {
      for (const t of new Set(this.consumers.map((c) => c.topic))) this.wake.emit(t);
    }, this.pollMs);
    this.pollTimer.unref();
  }

  private launch(c: Consumer): void {
    for (const p of c.partitions) this.loops.push(this.consumeLoop(c, p));
  }

  private committed(group: string, topic: Topic, partition: number): number {
    return (
      (this.db
        .prepare('SELECT committed FROM bus_offsets WHERE grp = ? AND topic = ? AND partition = ?')
        .pluck()
        .get(group, topic, partition) as number | undefined) ?? 0
    );
  }

  /** Resolves after `ms`, or earlier on any of `events` (a new message on a topic, the bus closing). */
  private waitFor(ms: number, events: string[]): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        for (const e of events) this.wake.off(e, done);
        resolve();
      };
      const t = setTimeout(done, ms);
      for (const e of events) this.wake.once(e, done);
    });
  }

  private async consumeLoop(c: Consumer, partition: number): Promise<void> {
    const next = this.db.prepare(
      'SELECT offset, key, value, headers FROM bus_messages WHERE topic = ? AND partition = ? AND offset > ? ORDER BY offset LIMIT 64',
    );
    const commit = this.db.prepare('UPDATE bus_offsets SET committed = ? WHERE grp = ? AND topic = ? AND partition = ?');
    const slot = `${c.group}/${c.topic}/${partition}`;
    while (!this.closed) {
      const rows = next.all(c.topic, partition, this.committed(c.group, c.topic, partition)) as Row[];
      if (rows.length === 0) {
        await this.waitFor(this.pollMs * 4, [c.topic, 'close']);
        continue;
      }
      for (const row of rows) {
        if (this.closed) return;
        this.inflight.add(slot);
        try {
          await this.deliver(c, partition, row);
          commit.run(row.offset, c.group, c.topic, partition);
        } finally {
          this.inflight.delete(slot);
        }
      }
    }
  }

  private async deliver(c: Consumer, partition: number, row: Row): Promise<void> {
    let value: unknown;
    try {
      value = JSON.parse(row.value);
    } catch {
      value = row.value;
    }
    const headers = JSON.parse(row.headers) as Headers;
    const outcome = await deliverWithRetries(
      c.handler,
      { topic: c.topic, partition, offset: row.offset, key: row.key, value, headers },
      { maxAttempts: this.maxAttempts, retryBaseMs: this.retryBaseMs, retryMaxMs: this.retryMaxMs, transientRetryMs: this.transientRetryMs },
      {
        sleep: (ms) => this.waitFor(ms, ['close']), // a retry pause ends when the bus closes
        isClosing: () => this.closed,
        onRetry: (attempt, delay, error) => this.log.warn('handler failed, retrying', { stage: c.stage, topic: c.topic, key: row.key, attempt, delay_ms: delay, error }),
      },
    );
    if (outcome.kind === 'done') return;
    // Closing: neither commit nor dead-letter; the message is delivered again after a restart (at-least-once).
    if (outcome.kind === 'aborted') throw new Error('bus closing; message left for redelivery');
    const lastError = outcome.reason;
    this.log.error('message sent to the dead-letter topic', { stage: c.stage, topic: c.topic, key: row.key, error: lastError });
    await this.publish(Topic.Dlq, [
      {
        key: row.key,
        value,
        headers: {
          ...headers,
          [DLQ_HEADERS.reason]: lastError.slice(0, 2000),
          [DLQ_HEADERS.stage]: c.stage,
          [DLQ_HEADERS.originalTopic]: c.topic,
          [DLQ_HEADERS.attempts]: String(outcome.attempts),
        },
      },
    ]);
    metrics.dlq.inc({ stage: c.stage, topic: c.topic });
  }

  async lag(): Promise<{ group: string; topic: Topic; lag: number }[]> {
    const rows = this.db
      .prepare(
        `SELECT o.grp AS grp, o.topic AS topic, o.partition AS partition, COALESCE(h.head, 0) - o.committed AS lag
         FROM bus_offsets o LEFT JOIN bus_heads h ON h.topic = o.topic AND h.partition = o.partition`,
      )
      .all() as { grp: string; topic: Topic; partition: number; lag: number }[];
    const own = new Set(this.consumers.map((c) => `${c.group}\0${c.topic}`));
    const sums = new Map<string, { group: string; topic: Topic; lag: number }>();
    for (const r of rows) {
      const behind = Math.max(0, r.lag);
      // rag_kafka_consumer_lag for this process's own groups (several processes may share the log).
      if (own.has(`${r.grp}\0${r.topic}`)) metrics.consumerLag.set({ group: r.grp, topic: r.topic, partition: String(r.partition) }, behind);
      const k = `${r.grp}\0${r.topic}`;
      const s = sums.get(k) ?? { group: r.grp, topic: r.topic, lag: 0 };
      s.lag += behind;
      sums.set(k, s);
    }
    return [...sums.values()];
  }

  /** Messages on the DLQ (newest last), for operators and tests. */
  deadLetters(limit = 100): { key: string; value: unknown; headers: Headers }[] {
    const rows = this.db
      .prepare('SELECT key, value, headers FROM bus_messages WHERE topic = ? ORDER BY ts, partition, offset LIMIT ?')
      .all(Topic.Dlq, limit) as Row[];
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as unknown, headers: JSON.parse(r.headers) as Headers }));
  }

  async drain(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let quietRounds = 0;
    while (quietRounds < 3) {
      const lagging = (await this.lag()).filter((l) => this.consumers.some((c) => c.group === l.group && c.topic === l.topic) && l.lag > 0);
      if (lagging.length === 0 && this.inflight.size === 0) quietRounds++;
      else quietRounds = 0;
      if (Date.now() > deadline) {
        throw new Error(`bus did not drain within ${timeoutMs} ms: ${JSON.stringify(lagging)}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Removes messages every registered group has consumed; returns how many were removed. */
  compact(): number {
    const r = this.db
      .prepare(
        `DELETE FROM bus_messages WHERE topic != ? AND offset <= (
           SELECT MIN(o.committed) FROM bus_offsets o WHERE o.topic = bus_messages.topic AND o.partition = bus_messages.partition)`,
      )
      .run(Topic.Dlq);
    return r.changes;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.wake.emit('close');
    await Promise.allSettled(this.loops);
    this.db.close();
  }
}
