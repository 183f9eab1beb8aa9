import pg from 'pg';
import { Logger } from '@rag/platform';
import type { LeaderElection } from '@rag/ports';
import { PgDatabase, type PgDatabaseOptions } from './pg-database';

/**
 * Leader election over a PostgreSQL session advisory lock: every replica runs one; the one whose dedicated connection
 * holds `pg_try_advisory_lock(7263, hashtext(name))` is the leader, the others retry every `pollMs`.
 *
 * - The lock lives as long as the leader's connection: when the leader process dies (kill -9 included) the kernel
 *   closes its socket, the server ends the session and frees the lock, and a follower takes it on its next poll
 *   (takeover ≤ pollMs after the server notices).
 * - A leader that is cut off (network partition, its backend terminated, the server restarted) must stop acting: it
 *   checks its connection every `pollMs` with a query bounded by `checkTimeoutMs` and steps down on any failure, so it
 *   stops within pollMs + checkTimeoutMs. The server side of a silently dropped connection is found by TCP keepalives
 *   set on the session (idle 10 s, interval 5 s, 3 probes: ≈25 s), which is longer than the leader's step-down bound,
 *   so two leaders never act at once in the partition case either.
 * - The work guarded by it must still be idempotent (the reconciler is: admissions are deduplicated and ordered).
 */
export interface PgLeaderElectionOptions extends Pick<PgDatabaseOptions, 'url' | 'schema' | 'connectTimeoutMs'> {
  /** What is being led (one lock per name), e.g. `reconciler`. */
  name: string;
  /** How often a follower tries to take the lock and a leader checks it still holds it (default 2 s). */
  pollMs?: number;
  /** Limit of the leader's connection check (default min(pollMs, 5 s)). */
  checkTimeoutMs?: number;
  logger?: Logger;
  /** Called on every change of leadership (true: this replica became the leader). */
  onChange?: (leader: boolean) => void;
}

export const LEADER_LOCK_CLASS = 7263;

export class PgLeaderElection implements LeaderElection {
  private client: pg.Client | undefined;
  private leader = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private readonly pollMs: number;
  private readonly checkTimeoutMs: number;
  private readonly log: Logger;

  constructor(private readonly opts: PgLeaderElectionOptions) {
    this.pollMs = opts.pollMs ?? 2_000;
    this.checkTimeoutMs = opts.checkTimeoutMs ?? Math.min(this.pollMs, 5_000);
    this.log = opts.logger ?? new Logger('leader');
  }

  /** Starts campaigning; resolves after the first attempt (so a lone replica is the leader when it resolves). */
  async start(): Promise<void> {
    this.stopped = false;
    await this.step();
    this.schedule();
  }

  isLeader(): boolean {
    return this.leader;
  }

  /** Runs one campaign or check now (tests, and `start`). */
  step(): Promise<void> {
    this.running = this.running.then(() => this.campaign());
    return this.running;
  }

  async close(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
    this.setLeader(false);
    const c = this.client;
    this.client = undefined;
    // Ending the session frees the lock at once: a follower takes over on its next poll.
    await c?.end().catch(() => undefined);
  }

  // ---------------------------------------------------------------------------------------------

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.step().finally(() => this.schedule());
    }, this.pollMs);
    this.timer.unref();
  }

  private async campaign(): Promise<void> {
    if (this.stopped) return;
    try {
      const c = await this.connection();
      if (this.leader) {
        await withTimeout(c.query('SELECT 1'), this.checkTimeoutMs);
        return;
      }
      const { rows } = await withTimeout(
        c.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1, hashtext($2)) AS ok', [LEADER_LOCK_CLASS, this.opts.name]),
        this.checkTimeoutMs,
      );
      this.setLeader(rows[0]?.ok === true);
    } catch (e) {
      if (this.leader) this.log.warn('lost the leader lock connection: stepping down', { name: this.opts.name, error: (e as Error).message });
      this.dropConnection();
    }
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const cfg = PgDatabase.connectionConfig({ url: this.opts.url, schema: this.opts.schema, connectTimeoutMs: this.opts.connectTimeoutMs ?? this.checkTimeoutMs });
    const c = new pg.Client({
      ...cfg,
      options: `${cfg.options ?? ''} -c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3`,
    });
    // A terminated backend or a restarted server: step down at once, reconnect on the next poll.
    c.on('error', (e) => {
      if (this.client === c) {
        if (this.leader) this.log.warn('leader lock connection failed: stepping down', { name: this.opts.name, error: e.message });
        this.dropConnection();
      }
    });
    c.on('end', () => {
      if (this.client === c) this.dropConnection();
    });
    try {
      await c.connect();
    } catch (e) {
      await c.end().catch(() => undefined);
      throw e;
    }
    this.client = c;
    return c;
  }

  private dropConnection(): void {
    const c = this.client;
    this.client = undefined;
    this.setLeader(false);
    void c?.end().catch(() => undefined);
  }

  private setLeader(v: boolean): void {
    if (this.leader === v) return;
    this.leader = v;
    this.log.info(v ? 'became the leader' : 'is no longer the leader', { name: this.opts.name });
    this.opts.onChange?.(v);
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      t = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(t));
}
