import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { Logger, metrics, traceHeaders, type Context } from '@rag/platform';
import type { Headers, MessageBroker, OutgoingMessage, SubscribeOptions } from '@rag/ports';
import { deliverWithRetries } from '../bus-delivery';
import { openSqlite } from '../sqlite/open-sqlite';
import { yieldToLoop } from '../sqlite/write-runs';

const HOUR_MS = 3_600_000;

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
  /** How often idle consumers look for messages published by other processes (a change-counter check, no row read). */
  pollMs?: number;
  logger?: Logger;
  /** SQLite `synchronous` (default NORMAL: survives a killed process; FULL also survives power loss). */
  synchronous?: 'NORMAL' | 'FULL';
  /**
   * A message whose serialised value is larger than this (bytes, default 256 KiB) is stored by reference: the value
   * goes to a content-addressed file in `<path>.blobs/`, the log row keeps its sha256. ':memory:' keeps all inline.
   */
  inlineMaxBytes?: number;
  /** How often the log is compacted (ms, default 15 s); 0 = only when compact() is called. */
  compactIntervalMs?: number;
  /** Messages of a topic partition no group is registered for are kept this long (ms, default 7 days), like Kafka's retention.ms. */
  retentionMs?: number;
  /** Dead letters are kept this long after every registered DLQ group consumed them (ms, default 7 days)… */
  dlqRetentionMs?: number;
  /** …and the DLQ is cut (oldest consumed first) when its payloads exceed this many bytes (default 256 MiB). */
  dlqRetentionBytes?: number;
  /**
   * A group no process has run for this long (ms, default 7 days, Kafka's offsets.retention.minutes) is dropped from
   * this bus file, so an abandoned group cannot hold the log forever; 0 = groups never expire.
   */
  groupExpiryMs?: number;
  /** Wall clock for message timestamps, retention and group expiry (tests). */
  clock?: () => number;
  /**
   * Messages handed at once to a subscription with a batch handler (consecutive messages of a partition with distinct
   * keys, committed together after all were handled; RAG_INGEST_BATCH_DOCS). Default 1: one at a time.
   */
  batchDocs?: number;
}

interface Row {
  offset: number;
  key: string;
  value: string | null;
  blob: string | null;
  headers: string;
}

interface Consumer extends SubscribeOptions {
  partitions: number[];
  running: Set<number>;
}

const BLOB_NAME = /^[0-9a-f]{64}$/;

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
 * Retention (compact(), run every `compactIntervalMs`):
 * - The groups that count for a topic partition are the ones *registered in this bus file*: a group is registered
 *   by its first subscribe (from any process sharing the file) and stays a member while it holds a committed offset
 *   there. A message is removed once every registered group has committed past it. A group that never subscribed
 *   does not hold anything back (it starts from the oldest retained message when it first subscribes), and a
 *   registered group no process has run for `groupExpiryMs` is dropped, as Kafka expires the offsets of a dead group.
 * - A partition with no registered group keeps its messages for `retentionMs` (Kafka's time retention).
 * - The DLQ keeps dead letters for inspection: `dlqRetentionMs` after every registered DLQ group (if any) consumed
 *   them, and at most `dlqRetentionBytes` of payload (oldest consumed ones go first).
 * - A value over `inlineMaxBytes` lives in a content-addressed file beside the database (written under the write
 *   lock, before its row commits) and is deleted with the last row that refers to it; readers get the same value.
 *   Files rather than a side table: a file is written once (a SQLite row is written to the WAL, then again to the
 *   database) and freed by unlink, so bus.db stays small and needs no VACUUM to give space back.
 * - The database uses incremental auto_vacuum: after a compaction frees more than 1 MiB of pages they go back to the
 *   file system at a cost proportional to the freed pages (a full VACUUM would rewrite the whole file). An older
 *   bus.db is converted (and its inline messages moved out) once, on open.
 *
 * Idle consumers read no message rows: the head of every partition is held in memory (updated by this process's
 * publishes, which wake the consumers at once), and the poll only compares SQLite's change counter
 * (`PRAGMA data_version`), re-reading the small head table when another process committed something.
 *
 * Written here rather than taken from a library because no maintained npm package offers a durable,
 * partitioned, consumer-group log inside one process; Kafka itself is the distributed-mode adapter.
 */
export class SqliteLogBus implements MessageBroker {
  private readonly db: Database.Database;
  private readonly partitions: number;
  private readonly maxAttempts: number;
  private readonly retryBaseMs: number;
  private readonly retryMaxMs: number;
  private readonly transientRetryMs: number;
  private readonly pollMs: number;
  private readonly batchDocs: number;
  private readonly log: Logger;
  private readonly durable: boolean;
  private readonly blobDir?: string;
  private readonly inlineMaxBytes: number;
  private readonly compactIntervalMs: number;
  private readonly retentionMs: number;
  private readonly dlqRetentionMs: number;
  private readonly dlqRetentionBytes: number;
  private readonly groupExpiryMs: number;
  private readonly clock: () => number;
  private readonly consumers: Consumer[] = [];
  private readonly wake = new EventEmitter();
  /** Newest offset of every partition ("topic\0partition"), as far as this process knows. */
  private readonly heads = new Map<string, number>();
  private dataVersion = 0;
  private started = false;
  private closed = false;
  private readonly loops: Promise<void>[] = [];
  private pollTimer?: NodeJS.Timeout;
  private compactTimer?: NodeJS.Timeout;
  private readonly inflight = new Set<string>();
  private readonly stmt: {
    head: Database.Statement;
    setHead: Database.Statement;
    insert: Database.Statement;
    next: Database.Statement;
    committed: Database.Statement;
    commit: Database.Statement;
    heads: Database.Statement;
    blobUsed: Database.Statement;
  };

  constructor(opts: LogBusOptions) {
    this.partitions = opts.partitions ?? 4;
    this.maxAttempts = opts.maxAttempts ?? 5;
    this.retryBaseMs = opts.retryBaseMs ?? 200;
    this.retryMaxMs = opts.retryMaxMs ?? 10_000;
    this.transientRetryMs = opts.transientRetryMs ?? 0;
    this.pollMs = opts.pollMs ?? 250;
    this.batchDocs = Math.max(1, Math.floor(opts.batchDocs ?? 1));
    this.log = opts.logger ?? new Logger('bus');
    this.durable = opts.synchronous === 'FULL';
    this.inlineMaxBytes = opts.inlineMaxBytes ?? 256 * 1024;
    this.compactIntervalMs = opts.compactIntervalMs ?? 15_000;
    this.retentionMs = opts.retentionMs ?? 168 * HOUR_MS;
    this.dlqRetentionMs = opts.dlqRetentionMs ?? 168 * HOUR_MS;
    this.dlqRetentionBytes = opts.dlqRetentionBytes ?? 256 * 1024 * 1024;
    this.groupExpiryMs = opts.groupExpiryMs ?? 168 * HOUR_MS;
    this.clock = opts.clock ?? Date.now;
    if (opts.path !== ':memory:') {
      this.blobDir = `${opts.path}.blobs`;
      mkdirSync(this.blobDir, { recursive: true });
    }
    this.wake.setMaxListeners(0);

    this.db = openSqlite(opts.path, opts.synchronous ?? 'NORMAL');
    try {
      this.prepareSchema();
    } catch (e) {
      this.db.close();
      throw e;
    }
    this.stmt = {
      head: this.db.prepare('SELECT head FROM bus_heads WHERE topic = ? AND partition = ?').pluck(),
      setHead: this.db.prepare(
        'INSERT INTO bus_heads (topic, partition, head) VALUES (?, ?, ?) ON CONFLICT(topic, partition) DO UPDATE SET head = excluded.head',
      ),
      insert: this.db.prepare(
        'INSERT INTO bus_log (topic, partition, offset, key, value, blob, bytes, headers, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      next: this.db.prepare(
        'SELECT offset, key, value, blob, headers FROM bus_log WHERE topic = ? AND partition = ? AND offset > ? ORDER BY offset LIMIT 64',
      ),
      committed: this.db.prepare('SELECT committed FROM bus_offsets WHERE grp = ? AND topic = ? AND partition = ?').pluck(),
      // An upsert, so a commit also re-registers a group whose row was expired meanwhile.
      commit: this.db.prepare(
        `INSERT INTO bus_offsets (grp, topic, partition, committed, last_seen) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT(grp, topic, partition) DO UPDATE SET committed = excluded.committed, last_seen = excluded.last_seen`,
      ),
      heads: this.db.prepare('SELECT topic, partition, head FROM bus_heads'),
      blobUsed: this.db.prepare('SELECT 1 FROM bus_log WHERE blob = ? LIMIT 1').pluck(),
    };
    this.refreshHeads();
    this.dataVersion = this.db.pragma('data_version', { simple: true }) as number;
  }

  private prepareSchema(): void {
    // The WAL is cut back to 1 MiB after a checkpoint instead of keeping its largest size forever.
    this.db.pragma('journal_size_limit = 1048576');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS bus_log (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, offset INTEGER NOT NULL,
        key TEXT NOT NULL, value TEXT, blob TEXT, bytes INTEGER NOT NULL, headers TEXT NOT NULL, ts INTEGER NOT NULL);
      CREATE UNIQUE INDEX IF NOT EXISTS bus_log_position ON bus_log (topic, partition, offset);
      CREATE INDEX IF NOT EXISTS bus_log_blob ON bus_log (blob) WHERE blob IS NOT NULL;
      CREATE TABLE IF NOT EXISTS bus_offsets (
        grp TEXT NOT NULL, topic TEXT NOT NULL, partition INTEGER NOT NULL, committed INTEGER NOT NULL,
        last_seen INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (grp, topic, partition)) WITHOUT ROWID;
      CREATE TABLE IF NOT EXISTS bus_heads (
        topic TEXT NOT NULL, partition INTEGER NOT NULL, head INTEGER NOT NULL,
        PRIMARY KEY (topic, partition)) WITHOUT ROWID;
    `);
    const migrated = this.db.transaction(() => this.migrateLegacy()).immediate();
    // Incremental auto_vacuum can only be switched on by one VACUUM (instant on a new file; once for an older one).
    if (migrated || this.db.pragma('auto_vacuum', { simple: true }) !== 2) {
      this.db.pragma('auto_vacuum = INCREMENTAL');
      this.db.exec('VACUUM');
      // VACUUM wrote the new file into the WAL: copy it back now so bus.db itself shrinks (once, at open).
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    }
  }

  /**
   * Files written before compaction existed: `bus_offsets` gains `last_seen`, and `bus_messages` (a WITHOUT ROWID
   * table holding every value inline, whose seeks read a large row in full) is moved into `bus_log`, its consumed
   * messages dropped and large values moved out to files. Runs under the write lock; returns whether it moved rows.
   */
  private migrateLegacy(): boolean {
    const cols = this.db.prepare("SELECT name FROM pragma_table_info('bus_offsets')").pluck().all() as string[];
    if (!cols.includes('last_seen')) {
      this.db.exec('ALTER TABLE bus_offsets ADD COLUMN last_seen INTEGER NOT NULL DEFAULT 0');
      this.db.prepare('UPDATE bus_offsets SET last_seen = ?').run(this.clock());
    }
    if (!this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'bus_messages'").get()) return false;
    this.db
      .prepare(
        `DELETE FROM bus_messages WHERE topic != ? AND offset <= (
           SELECT MIN(o.committed) FROM bus_offsets o WHERE o.topic = bus_messages.topic AND o.partition = bus_messages.partition)`,
      )
      .run(Topic.Dlq);
    const batch = this.db.prepare(
      `SELECT topic, partition, offset, key, value, headers, ts FROM bus_messages
       WHERE (topic, partition, offset) > (?, ?, ?) ORDER BY topic, partition, offset LIMIT 16`,
    );
    const insert = this.db.prepare(
      'INSERT OR IGNORE INTO bus_log (topic, partition, offset, key, value, blob, bytes, headers, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    let last: [string, number, number] = ['', -1, -1];
    let moved = 0;
    for (;;) {
      const rows = batch.all(...last) as { topic: string; partition: number; offset: number; key: string; value: string; headers: string; ts: number }[];
      if (rows.length === 0) break;
      for (const r of rows) {
        const stored = this.store(r.value);
        insert.run(r.topic, r.partition, r.offset, r.key, stored.value, stored.blob, stored.bytes, r.headers, r.ts);
        last = [r.topic, r.partition, r.offset];
        moved++;
      }
    }
    this.db.exec('DROP TABLE bus_messages');
    this.log.info('bus log migrated to the compacted format', { messages: moved });
    return true;
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

  private blobPath(hash: string): string {
    return join(this.blobDir!, hash);
  }

  /** How a serialised value is kept: inline, or (over the threshold) in a content-addressed file. Call under the write lock. */
  private store(json: string): { value: string | null; blob: string | null; bytes: number } {
    const bytes = Buffer.byteLength(json);
    if (!this.blobDir || bytes <= this.inlineMaxBytes) return { value: json, blob: null, bytes };
    const hash = createHash('sha256').update(json).digest('hex');
    const file = this.blobPath(hash);
    // Under the write lock, so a compaction (which deletes files under the same lock) cannot remove it before our row commits.
    if (!existsSync(file)) {
      const tmp = `${file}.tmp`;
      writeFileSync(tmp, json);
      if (this.durable) {
        const fd = openSync(tmp, 'r');
        try {
          fsyncSync(fd);
        } finally {
          closeSync(fd);
        }
      }
      renameSync(tmp, file);
    }
    return { value: null, blob: hash, bytes };
  }

  async publish(topic: Topic, messages: OutgoingMessage[]): Promise<void> {
    if (this.closed) throw new Error('bus is closed');
    if (messages.length === 0) return;
    const now = this.clock();
    // W3C trace context of the publishing span (traceparent), as on Kafka: the consuming stage continues the trace.
    // A message with its own traceContext (a batch stage's message of one document) carries that trace instead.
    const trace = traceHeaders();
    const encoded = messages.map((m) => {
      const json = JSON.stringify(m.value) as string | undefined;
      if (json === undefined) throw new Error(`message ${m.key} on ${topic}: the value is not JSON-serialisable`);
      const own = m.traceContext !== undefined ? traceHeaders(m.traceContext as Context) : trace;
      return { key: m.key, json, headers: JSON.stringify({ ...own, ...(m.headers ?? {}) }) };
    });
    const advanced = new Map<number, number>();
    const tx = this.db.transaction(() => {
      for (const m of encoded) {
        const p = this.partitionFor(m.key);
        const next = ((this.stmt.head.get(topic, p) as number | undefined) ?? 0) + 1;
        const stored = this.store(m.json);
        this.stmt.insert.run(topic, p, next, m.key, stored.value, stored.blob, stored.bytes, m.headers, now);
        this.stmt.setHead.run(topic, p, next);
        advanced.set(p, next);
      }
    });
    tx.immediate();
    for (const [p, head] of advanced) this.noteHead(topic, p, head);
    this.wake.emit(topic);
  }

  private noteHead(topic: string, partition: number, head: number): boolean {
    const k = `${topic}\0${partition}`;
    if ((this.heads.get(k) ?? 0) >= head) return false;
    this.heads.set(k, head);
    return true;
  }

  /** Reads the (small) head table and wakes the topics another process appended to. */
  private refreshHeads(): void {
    const woken = new Set<string>();
    for (const r of this.stmt.heads.all() as { topic: string; partition: number; head: number }[]) {
      if (this.noteHead(r.topic, r.partition, r.head)) woken.add(r.topic);
    }
    for (const t of woken) this.wake.emit(t);
  }

  /** The idle poll: compares SQLite's change counter, which moves only when another connection committed. */
  private poll(): void {
    if (this.closed) return;
    try {
      const v = this.db.pragma('data_version', { simple: true }) as number;
      if (v === this.dataVersion) return;
      this.dataVersion = v;
      this.refreshHeads();
    } catch (e) {
      this.log.warn('bus poll failed', { error: e instanceof Error ? e.message : String(e) });
    }
  }

  async subscribe(opts: SubscribeOptions): Promise<void> {
    const consumer: Consumer = { ...opts, partitions: [...Array(this.partitions).keys()], running: new Set() };
    this.consumers.push(consumer);
    const init = this.db.prepare(
      `INSERT INTO bus_offsets (grp, topic, partition, committed, last_seen) VALUES (?, ?, ?, 0, ?)
       ON CONFLICT(grp, topic, partition) DO UPDATE SET last_seen = excluded.last_seen`,
    );
    const now = this.clock();
    this.db.transaction(() => {
      for (const p of consumer.partitions) init.run(opts.group, opts.topic, p, now);
    })();
    if (this.started) this.launch(consumer);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    for (const c of this.consumers) this.launch(c);
    // Messages appended by other processes sharing the file are noticed by polling the change counter.
    this.pollTimer = setInterval(() => this.poll(), this.pollMs);
    this.pollTimer.unref();
    if (this.compactIntervalMs > 0) {
      this.compactTimer = setInterval(() => this.compactQuietly(), this.compactIntervalMs);
      this.compactTimer.unref();
    }
  }

  private launch(c: Consumer): void {
    for (const p of c.partitions) this.loops.push(this.consumeLoop(c, p));
  }

  private committed(group: string, topic: Topic, partition: number): number {
    return (this.stmt.committed.get(group, topic, partition) as number | undefined) ?? 0;
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
    const slot = `${c.group}/${c.topic}/${partition}`;
    const headKey = `${c.topic}\0${partition}`;
    let committed = this.committed(c.group, c.topic, partition);
    while (!this.closed) {
      const head = this.heads.get(headKey) ?? 0;
      if (head <= committed) {
        // Nothing new: no SQL at all until a publish (here or, via poll(), elsewhere) moves the head.
        await this.waitFor(this.pollMs * 4, [c.topic, 'close']);
        continue;
      }
      // Never behind what this loop already committed, even if the row was expired and re-registered meanwhile.
      committed = Math.max(committed, this.committed(c.group, c.topic, partition));
      if (head <= committed) continue;
      const rows = this.stmt.next.all(c.topic, partition, committed) as Row[];
      if (rows.length === 0) {
        // The head moved but the messages are gone (removed by retention while the group was not registered).
        this.log.warn('messages removed before this group read them; moving to the head', { group: c.group, topic: c.topic, partition, from: committed, to: head });
        this.stmt.commit.run(c.group, c.topic, partition, head, this.clock());
        committed = head;
        continue;
      }
      // Runs of consecutive messages with distinct keys (one message unless the subscription has a batch handler):
      // the run's offset is committed once every message of it was handled or dead-lettered, so a crash mid-run
      // delivers the run again (the stages are idempotent), as KafkaTransport does with eachBatch.
      const max = c.batchHandler ? this.batchDocs : 1;
      for (let i = 0; i < rows.length; ) {
        if (this.closed) return;
        const run: Row[] = [];
        const keys = new Set<string>();
        while (i < rows.length && run.length < max && !keys.has(rows[i]!.key)) {
          keys.add(rows[i]!.key);
          run.push(rows[i]!);
          i++;
        }
        this.inflight.add(slot);
        try {
          if (run.length === 1) await this.deliver(c, partition, run[0]!);
          else await this.deliverRun(c, partition, run);
          const last = run[run.length - 1]!.offset;
          this.stmt.commit.run(c.group, c.topic, partition, last, this.clock());
          committed = last;
        } finally {
          this.inflight.delete(slot);
        }
        // Let the event loop turn between runs. A handler whose work is synchronous underneath (SQLite, the hashing
        // embedder) resolves in microtasks, and so does the next run after it: without this, the consumers of a busy
        // bus chained run after run without the loop ever reaching its I/O phase — an HTTP request or a health check
        // arriving during an ingestion waited for seconds (max 2–3 s measured with the hashing embedder; a timer set
        // before the ingestion never fired during it). One setImmediate per run costs microseconds.
        await yieldToLoop();
      }
    }
  }

  /** A row's headers and value (read from its payload file when stored by reference), or why it cannot be read. */
  private async decode(row: Row): Promise<{ headers: Headers; value: unknown; unreadable?: string }> {
    const headers = JSON.parse(row.headers) as Headers;
    let raw = row.value;
    if (row.blob !== null) {
      try {
        raw = await readFile(this.blobPath(row.blob), 'utf8');
      } catch (e) {
        return { headers, value: { missing_payload: row.blob }, unreadable: `payload file ${row.blob} unreadable: ${e instanceof Error ? e.message : String(e)}` };
      }
    }
    try {
      return { headers, value: JSON.parse(raw ?? 'null') };
    } catch {
      return { headers, value: raw };
    }
  }

  /**
   * A run of distinct-key messages to the subscription's batch handler in one call; each message it reports failed
   * (and one whose payload cannot be read) is then delivered alone under the full retry/DLQ policy (the batch call
   * does not count as an attempt), so one bad document neither blocks nor dead-letters the others.
   */
  private async deliverRun(c: Consumer, partition: number, run: Row[]): Promise<void> {
    const decoded = await Promise.all(run.map((row) => this.decode(row)));
    const readable = run.map((row, j) => ({ row, d: decoded[j]! })).filter((x) => x.d.unreadable === undefined);
    let outcomes: (Error | undefined)[];
    try {
      outcomes = await c.batchHandler!(readable.map(({ row, d }) => ({ topic: c.topic, partition, offset: row.offset, key: row.key, value: d.value, headers: d.headers, attempt: 1 })));
      if (outcomes.length !== readable.length) throw new Error(`batch handler returned ${outcomes.length} outcomes for ${readable.length} messages`);
    } catch (e) {
      outcomes = readable.map(() => (e instanceof Error ? e : new Error(String(e))));
    }
    if (this.closed) throw new Error('bus closing; run left for redelivery');
    const failed = new Set(readable.filter((_, j) => outcomes[j] !== undefined).map((x) => x.row.offset));
    const alone = run.filter((row, j) => decoded[j]!.unreadable !== undefined || failed.has(row.offset));
    if (failed.size) {
      this.log.warn('messages failed in a batch, delivering them alone', { stage: c.stage, topic: c.topic, partition, failed: failed.size, batch: run.length, error: outcomes.find((o) => o !== undefined)?.message });
    }
    for (const row of alone) await this.deliver(c, partition, row);
  }

  private async deliver(c: Consumer, partition: number, row: Row): Promise<void> {
    const { headers, value, unreadable } = await this.decode(row);
    if (unreadable !== undefined) {
      // Someone removed the payload file: the message cannot be delivered; the partition must still move on.
      await this.deadLetter(c, partition, row, value, headers, unreadable, 0);
      return;
    }
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
    await this.deadLetter(c, partition, row, value, headers, outcome.reason, outcome.attempts);
  }

  private async deadLetter(c: Consumer, partition: number, row: Row, value: unknown, headers: Headers, reason: string, attempts: number): Promise<void> {
    const key = row.key;
    this.log.error('message sent to the dead-letter topic', { stage: c.stage, topic: c.topic, key, error: reason });
    await this.publish(Topic.Dlq, [
      {
        key,
        value,
        headers: {
          ...headers,
          [DLQ_HEADERS.reason]: reason.slice(0, 2000),
          [DLQ_HEADERS.stage]: c.stage,
          [DLQ_HEADERS.originalTopic]: c.topic,
          [DLQ_HEADERS.originalPartition]: String(partition),
          [DLQ_HEADERS.originalOffset]: String(row.offset),
          [DLQ_HEADERS.attempts]: String(attempts),
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

  /** Messages on the DLQ (oldest first), for operators and tests. */
  deadLetters(limit = 100): { key: string; value: unknown; headers: Headers }[] {
    const rows = this.db
      .prepare('SELECT key, value, blob, headers FROM bus_log WHERE topic = ? ORDER BY ts, partition, offset LIMIT ?')
      .all(Topic.Dlq, limit) as Row[];
    return rows.map((r) => {
      let value: unknown = null;
      try {
        value = JSON.parse(r.blob !== null ? readFileSync(this.blobPath(r.blob), 'utf8') : (r.value ?? 'null')) as unknown;
      } catch {
        value = r.blob !== null ? { missing_payload: r.blob } : r.value;
      }
      return { key: r.key, value, headers: JSON.parse(r.headers) as Headers };
    });
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

  private compactQuietly(): void {
    if (this.closed) return;
    try {
      this.compact();
    } catch (e) {
      // e.g. SQLITE_BUSY while another process holds the file for long: the next round tries again.
      this.log.warn('bus compaction failed', { error: e instanceof Error ? e.message : String(e) });
    }
  }

  /**
   * Applies the retention rules (see the class comment) under one write transaction, deletes payload files no row
   * refers to any more, gives freed pages back to the file system and updates the size metrics. Returns how many
   * messages were removed.
   */
  compact(): number {
    const now = this.clock();
    const removed = this.db
      .transaction(() => {
        this.touchOwnGroups(now);
        this.expireGroups(now);
        const floors = new Map<string, number>();
        for (const r of this.db.prepare('SELECT topic, partition, MIN(committed) AS floor FROM bus_offsets GROUP BY topic, partition').all() as {
          topic: string;
          partition: number;
          floor: number;
        }[]) {
          floors.set(`${r.topic}\0${r.partition}`, r.floor);
        }
        const consumed = this.db.prepare('DELETE FROM bus_log WHERE topic = ? AND partition = ? AND offset <= ?');
        const expired = this.db.prepare('DELETE FROM bus_log WHERE topic = ? AND partition = ? AND ts < ?');
        const dlqExpired = this.db.prepare('DELETE FROM bus_log WHERE topic = ? AND partition = ? AND offset <= ? AND ts < ?');
        let n = 0;
        for (const h of this.stmt.heads.all() as { topic: string; partition: number; head: number }[]) {
          const floor = floors.get(`${h.topic}\0${h.partition}`);
          if (h.topic === Topic.Dlq) n += dlqExpired.run(h.topic, h.partition, floor ?? h.head, now - this.dlqRetentionMs).changes;
          else if (floor === undefined) n += expired.run(h.topic, h.partition, now - this.retentionMs).changes;
          else n += consumed.run(h.topic, h.partition, floor).changes;
        }
        n += this.trimDlq(floors);
        this.sweepBlobs();
        return n;
      })
      .immediate();
    this.reclaimSpace();
    this.updateMetrics();
    if (removed > 0) this.log.debug('bus log compacted', { removed });
    return removed;
  }

  /** This process's running groups are alive: their registration does not expire. */
  private touchOwnGroups(now: number): void {
    if (!this.started) return;
    const touch = this.db.prepare('UPDATE bus_offsets SET last_seen = ? WHERE grp = ? AND topic = ?');
    for (const c of this.consumers) touch.run(now, c.group, c.topic);
  }

  private expireGroups(now: number): void {
    if (this.groupExpiryMs <= 0) return;
    const cutoff = now - this.groupExpiryMs;
    const gone = this.db.prepare('SELECT DISTINCT grp, topic FROM bus_offsets WHERE last_seen < ?').all(cutoff) as { grp: string; topic: string }[];
    if (gone.length === 0) return;
    this.db.prepare('DELETE FROM bus_offsets WHERE last_seen < ?').run(cutoff);
    this.log.warn('consumer groups not run for a long time no longer hold the bus log', { groups: gone, expiry_h: this.groupExpiryMs / HOUR_MS });
  }

  /** Keeps the DLQ's payload under dlqRetentionBytes, removing the oldest dead letters every DLQ group has consumed. */
  private trimDlq(floors: Map<string, number>): number {
    let total = (this.db.prepare('SELECT COALESCE(SUM(bytes), 0) FROM bus_log WHERE topic = ?').pluck().get(Topic.Dlq) as number) ?? 0;
    if (total <= this.dlqRetentionBytes) return 0;
    const oldest = this.db
      .prepare('SELECT partition, offset, bytes FROM bus_log WHERE topic = ? ORDER BY ts, partition, offset')
      .all(Topic.Dlq) as { partition: number; offset: number; bytes: number }[];
    const del = this.db.prepare('DELETE FROM bus_log WHERE topic = ? AND partition = ? AND offset = ?');
    let n = 0;
    for (const r of oldest) {
      if (total <= this.dlqRetentionBytes) break;
      const floor = floors.get(`${Topic.Dlq}\0${r.partition}`);
      if (floor !== undefined && r.offset > floor) continue; // a DLQ group has not seen it yet
      n += del.run(Topic.Dlq, r.partition, r.offset).changes;
      total -= r.bytes;
    }
    return n;
  }

  /**
   * Deletes payload files no row refers to (those of removed messages, and any left by a publish that died before
   * its commit). Runs under the write lock, so no publish is between writing a file and committing its row.
   */
  private sweepBlobs(): void {
    if (!this.blobDir) return;
    for (const name of readdirSync(this.blobDir)) {
      if (BLOB_NAME.test(name) && this.stmt.blobUsed.get(name) !== undefined) continue;
      try {
        unlinkSync(join(this.blobDir, name));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
  }

  /** Incremental auto_vacuum: frees pages only when more than 1 MiB is free, then a passive checkpoint shrinks the file. */
  private reclaimSpace(): void {
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    if (free * pageSize <= 1024 * 1024) return;
    this.db.pragma('incremental_vacuum');
    this.db.pragma('wal_checkpoint(PASSIVE)');
  }

  /** rag_bus_log_bytes (the database, its WAL, the payload files) and rag_bus_log_messages (by topic). */
  private updateMetrics(): void {
    const sizes = this.diskBytes();
    metrics.busLogBytes.set({ part: 'db' }, sizes.db);
    metrics.busLogBytes.set({ part: 'wal' }, sizes.wal);
    metrics.busLogBytes.set({ part: 'blobs' }, sizes.blobs);
    const oldest = this.db.prepare('SELECT MIN(offset) FROM bus_log WHERE topic = ? AND partition = ?').pluck();
    const perTopic = new Map<string, number>();
    for (const h of this.stmt.heads.all() as { topic: string; partition: number; head: number }[]) {
      const first = oldest.get(h.topic, h.partition) as number | null;
      // Offsets are contiguous from the oldest retained one to the head (compaction only removes a prefix).
      perTopic.set(h.topic, (perTopic.get(h.topic) ?? 0) + (first === null ? 0 : h.head - first + 1));
    }
    for (const [topic, n] of perTopic) metrics.busLogMessages.set({ topic }, n);
  }

  /** Bytes on disk: the SQLite file, its WAL and the payload files (for the metric, operators and tests). */
  diskBytes(): { db: number; wal: number; blobs: number } {
    const name = this.db.name;
    const size = (p: string) => {
      try {
        return statSync(p).size;
      } catch {
        return 0;
      }
    };
    if (name === ':memory:' || !this.blobDir) return { db: 0, wal: 0, blobs: 0 };
    let blobs = 0;
    for (const f of readdirSync(this.blobDir)) blobs += size(join(this.blobDir, f));
    return { db: size(name), wal: size(`${name}-wal`), blobs };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.compactTimer) clearInterval(this.compactTimer);
    this.wake.emit('close');
    await Promise.allSettled(this.loops);
    this.db.close();
  }
}
