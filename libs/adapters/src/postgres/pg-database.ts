import pg from 'pg';
import { AppError, Logger } from '@rag/platform';
import { migrate, type Migration, MIGRATIONS } from './migrations';

/**
 * One node-postgres Pool per (URL, schema) and process, shared by every PostgreSQL adapter of that process (registry,
 * API keys, source state, rate limits) and reference-counted: the last `release()` ends the pool. Migrations run once
 * per pool, before the first adapter gets it (under an advisory lock, so replicas starting together apply each
 * version exactly once; see migrations.ts).
 */
export interface PgDatabaseOptions {
  /** postgres:// URL. */
  url: string;
  /** Most connections of this process's pool (default 10). */
  poolMax?: number;
  /** Schema to use (search_path), created when missing; default the server's (public). Tests use one per case. */
  schema?: string;
  logger?: Logger;
  /** The migrations to apply (tests pass a longer list to simulate newer code). */
  migrations?: readonly Migration[];
  /** Per-statement limit, ms (default 30 s): a hung server fails a call instead of hanging the caller. */
  statementTimeoutMs?: number;
  /** How long to wait for a connection (default 10 s). */
  connectTimeoutMs?: number;
}

/** int8 (bigint: counts, epoch-ms, serial ids) as a JS number: every value stored here is far below 2^53. */
const TYPES = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

export type Queryable = Pick<pg.PoolClient, 'query'>;

export class PgDatabase {
  private refs = 1;
  private ended = false;

  private constructor(
    readonly pool: pg.Pool,
    readonly key: string,
    private readonly log: Logger,
  ) {}

  static connectionConfig(opts: PgDatabaseOptions): pg.PoolConfig {
    if (opts.schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(opts.schema)) throw new Error(`invalid schema name: ${opts.schema}`);
    const settings = [`-c statement_timeout=${opts.statementTimeoutMs ?? 30_000}`];
    if (opts.schema) settings.push(`-c search_path=${opts.schema}`);
    return {
      connectionString: opts.url,
      max: opts.poolMax ?? 10,
      connectionTimeoutMillis: opts.connectTimeoutMs ?? 10_000,
      idleTimeoutMillis: 30_000,
      keepAlive: true,
      options: settings.join(' '),
      types: TYPES,
      application_name: 'rag',
    };
  }

  /** Opens (or shares) the pool for these options and applies the migrations. */
  static async open(opts: PgDatabaseOptions): Promise<PgDatabase> {
    const key = `${opts.url}\u0000${opts.schema ?? ''}`;
    const existing = OPEN.get(key);
    if (existing) {
      const db = await existing;
      db.refs++;
      return db;
    }
    const opening = (async () => {
      const log = opts.logger ?? new Logger('postgres');
      const pool = new pg.Pool(PgDatabase.connectionConfig(opts));
      // An idle client's error (the server restarted, a connection was terminated) must not crash the process: the
      // pool drops that client and the next query opens a new connection.
      pool.on('error', (e) => log.warn('idle PostgreSQL connection failed', { error: e.message }));
      try {
        if (opts.schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${opts.schema}`);
        await migrate(pool, opts.migrations ?? MIGRATIONS, log);
      } catch (e) {
        await pool.end().catch(() => undefined);
        throw asUnavailable(e);
      }
      return new PgDatabase(pool, key, log);
    })();
    OPEN.set(key, opening);
    try {
      return await opening;
    } catch (e) {
      OPEN.delete(key);
      throw e;
    }
  }

  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<pg.QueryResult<R>> {
    return this.pool.query<R>(sql, params).catch((e: unknown) => {
      throw asUnavailable(e);
    });
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED; the adapters take row locks or advisory transaction locks where
   * SQLite serializes with BEGIN IMMEDIATE). Rolls back on any throw. A serialization failure or deadlock (40001,
   * 40P01) is retried a few times.
   */
  async transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.pool.connect().catch((e: unknown) => {
        throw asUnavailable(e);
      });
      let broken = false;
      // A checked-out client has no pool listener: its connection dying would otherwise be an uncaught 'error'.
      const onError = (e: Error) => {
        broken = true;
        this.log.warn('PostgreSQL connection failed during a transaction', { error: e.message });
      };
      client.on('error', onError);
      let begun = false;
      try {
        await client.query('BEGIN');
        begun = true;
        const out = await fn(client);
        await client.query('COMMIT');
        return out;
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {
          broken = true;
        });
        const code = (e as { code?: string }).code;
        if ((code === '40001' || code === '40P01') && attempt < 5) continue;
        const mapped = asUnavailable(e);
        // A pooled connection that died while idle (a failover, a network blip) fails at BEGIN: nothing ran, so
        // take a fresh connection once more.
        if (!begun && mapped instanceof AppError && mapped.code === 'unavailable' && attempt < 2) {
          broken = true;
          continue;
        }
        throw mapped;
      } finally {
        client.removeListener('error', onError);
        client.release(broken);
      }
    }
  }

  /** Drops this holder's reference; the pool ends with the last one. */
  async release(): Promise<void> {
    if (this.ended || --this.refs > 0) return;
    this.ended = true;
    OPEN.delete(this.key);
    await this.pool.end();
  }
}

const OPEN = new Map<string, Promise<PgDatabase>>();

/** Node socket errors of a server that is down, restarting or unreachable. */
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * The database being unreachable (down, restarting, failing over, out of connections, a statement past its timeout)
 * is an outage, not a bad message: it becomes AppError `unavailable` (503 at the API; the bus holds the message for
 * RAG_BUS_TRANSIENT_RETRY_S instead of dead-lettering it). Other errors (constraint violations, bugs) pass unchanged.
 * SQLSTATE classes: 08 connection exception, 57P01-57P03 shutdown/cannot connect now, 53300 too many connections,
 * 57014 statement timeout, 25006 read-only transaction (a standby after a failover, until the pool reconnects).
 */
export function asUnavailable(e: unknown): unknown {
  if (e instanceof AppError) return e;
  const err = e as { code?: unknown; message?: unknown };
  const code = typeof err?.code === 'string' ? err.code : '';
  const message = typeof err?.message === 'string' ? err.message : String(e);
  const outage =
    NET_CODES.has(code) ||
    code.startsWith('08') ||
    ['57P01', '57P02', '57P03', '53300', '57014', '25006'].includes(code) ||
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed/i.test(message);
  return outage ? new AppError('unavailable', `PostgreSQL unavailable: ${message}`, { code: code || undefined }) : e;
}

/** Replaces NUL characters, which PostgreSQL text cannot hold (SQLite can): free text keeps its length and the rest. */
export const pgText = (s: string | null | undefined): string | null => (s == null ? null : s.includes('\u0000') ? s.replace(/\u0000/g, '\uFFFD') : s);
