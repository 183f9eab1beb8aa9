import type { RateLimit } from '@rag/contracts';
import { Logger } from '@rag/platform';
import type { RateDecision, RateLimiter } from '@rag/ports';
import { PgDatabase, type PgDatabaseOptions } from './pg-database';

/**
 * Token buckets shared by every gateway replica, one row per API key in `rate_buckets`: N gateways together allow the
 * configured rate, not N times it. Each `take` is one atomic statement (INSERT … ON CONFLICT DO UPDATE takes the row
 * lock, so concurrent takes on one key serialize), refilled on the database's clock (replicas' clocks may differ).
 *
 * PostgreSQL rather than Redis: it is already the shared state of the distributed mode (no second server to run,
 * back up and secure), and a take is one single-row upsert into an UNLOGGED table (no WAL flush; migration 2),
 * below a millisecond on loopback, far below a request's own cost; Redis would win only at rates where one row's lock becomes the bottleneck (thousands of requests per
 * second on ONE key), which per-key limits of a RAG API do not reach.
 *
 * One row per API key (bounded by the keys that exist). When the database cannot be reached the request is let through (logged, at most once a minute): a rate limit is
 * a fairness guard, and the keys themselves are checked against the same database, so an outage is not an opening.
 */
export interface PgRateLimiterOptions extends PgDatabaseOptions {
  /** Applied to keys without their own limit. */
  defaults: RateLimit;
}

export class PgRateLimiter implements RateLimiter {
  private closed = false;
  private lastWarn = 0;
  private readonly log: Logger;

  private constructor(
    private readonly db: PgDatabase,
    private readonly defaults: RateLimit,
    logger?: Logger,
  ) {
    this.log = logger ?? new Logger('rate-limit');
  }

  static async open(opts: PgRateLimiterOptions): Promise<PgRateLimiter> {
    return new PgRateLimiter(await PgDatabase.open(opts), opts.defaults, opts.logger);
  }

  async take(key: string, own?: RateLimit): Promise<RateDecision | null> {
    if (this.closed) throw new Error('PgRateLimiter is closed');
    const limit = own ?? this.defaults;
    if (!(limit.rps > 0)) return null;
    // refill = min(burst, tokens + elapsed × rps) for a bucket with the same limit, else a full new bucket.
    // One clock reading per statement (the CTE, carried as excluded.at): clock_timestamp() read in each of the three
    // uses of `refill` could pass 1 token in `allowed` after failing it in `tokens` — a take allowed without spending a
    // token (seen in CI: 33 allowed where 1 + 20 × 1.55 s permits 32). The reading is taken before the row lock is
    // waited for, so a take that waited may carry an older time than the row's: elapsed is clamped at 0 and `at` never
    // moves back, so the time credited in total never exceeds the real span between the first and last take.
    const refill = `CASE WHEN b.rps = excluded.rps AND b.burst = excluded.burst
                      THEN LEAST(b.burst::float8, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM excluded.at - b.at)) * b.rps)
                      ELSE excluded.burst::float8 END`;
    try {
      const { rows } = await this.db.query<{ tokens: number; allowed: boolean }>(
        `WITH now AS (SELECT clock_timestamp() AS t)
         INSERT INTO rate_buckets AS b (key, rps, burst, tokens, at, allowed)
         SELECT $1, $2::float8, $3::int, $3::int - 1, now.t, true FROM now
         ON CONFLICT (key) DO UPDATE SET
           tokens = CASE WHEN ${refill} >= 1 THEN ${refill} - 1 ELSE ${refill} END,
           allowed = ${refill} >= 1,
           rps = excluded.rps, burst = excluded.burst, at = GREATEST(b.at, excluded.at)
         RETURNING tokens, allowed`,
        [key, limit.rps, limit.burst],
      );
      const { tokens, allowed } = rows[0]!;
      if (allowed) return { allowed: true, retryAfterS: 0, remaining: Math.floor(tokens), limit };
      return { allowed: false, retryAfterS: Math.max(1, Math.ceil((1 - tokens) / limit.rps)), remaining: 0, limit };
    } catch (e) {
      const now = Date.now();
      if (now - this.lastWarn > 60_000) {
        this.lastWarn = now;
        this.log.warn('shared rate limit unavailable (PostgreSQL): letting requests through', { error: (e as Error).message });
      }
      return null;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.release();
  }
}
