import type { RateLimit } from '@rag/contracts';
import type { RateDecision, RateLimiter } from '@rag/ports';

export type { RateDecision };

interface Bucket {
  tokens: number;
  at: number;
  rps: number;
  burst: number;
}

/**
 * Per-key token buckets: a key may spend `burst` requests at once, refilled at `rps` per second.
 *
 * Hand-written rather than a library: it is a dozen lines of arithmetic over a Map, and the libraries available
 * (express-rate-limit, @nestjs/throttler) count fixed windows per client address, not buckets per API key with
 * per-key limits. The buckets live in this gateway process: used when there is no shared database (one gateway);
 * with RAG_DATABASE_URL every replica uses PgRateLimiter (libs/adapters/src/postgres), one bucket per key for all.
 */
export class TokenBucketLimiter implements RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly defaults: { rps: number; burst: number },
    private readonly now: () => number = () => performance.now(),
    private readonly maxBuckets = 100_000,
  ) {}

  /** Takes one token from `key`'s bucket. A limit of 0 rps (the default or the key's own) means unlimited. */
  take(key: string, own?: RateLimit): RateDecision | null {
    const limit = own ?? this.defaults;
    if (!(limit.rps > 0)) return null;
    const t = this.now();
    let b = this.buckets.get(key);
    if (!b || b.rps !== limit.rps || b.burst !== limit.burst) {
      b = { tokens: limit.burst, at: t, rps: limit.rps, burst: limit.burst };
      if (this.buckets.size >= this.maxBuckets) this.prune(t);
    } else {
      b.tokens = Math.min(b.burst, b.tokens + ((t - b.at) / 1000) * b.rps);
      b.at = t;
    }
    // Map order = least recently used first (delete + set moves a key to the end).
    this.buckets.delete(key);
    this.buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return { allowed: true, retryAfterS: 0, remaining: Math.floor(b.tokens), limit };
    }
    return { allowed: false, retryAfterS: Math.max(1, Math.ceil((1 - b.tokens) / b.rps)), remaining: 0, limit };
  }

  /** Drops full buckets (they carry no state a fresh one would not have), then the least recently used. */
  private prune(t: number): void {
    for (const [k, b] of this.buckets) if (b.tokens + ((t - b.at) / 1000) * b.rps >= b.burst) this.buckets.delete(k);
    for (const k of this.buckets.keys()) {
      if (this.buckets.size < this.maxBuckets * 0.9) break;
      this.buckets.delete(k);
    }
  }

  get size(): number {
    return this.buckets.size;
  }
}
