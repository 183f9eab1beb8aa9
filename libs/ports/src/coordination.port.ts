import type { RateLimit } from '@rag/contracts';

/**
 * Leadership of a singleton job (the source reconciler) among the replicas of a service: exactly one replica's
 * `isLeader()` is true at a time (at most one; none briefly while a dead leader's lock is being freed).
 */
export interface LeaderElection {
  /** Starts campaigning; resolves after the first attempt. */
  start(): Promise<void>;
  isLeader(): boolean;
  /** Steps down (another replica takes over) and stops. */
  close(): Promise<void>;
}
export const LEADER_ELECTION = Symbol('LEADER_ELECTION');

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds until a request would be allowed (for `Retry-After`); 0 when allowed. */
  retryAfterS: number;
  /** Tokens left after this request (rounded down). */
  remaining: number;
  limit: RateLimit;
}

/** Per-key token buckets; `null` when the limit (the key's own, else the default) is unlimited (0 rps). */
export interface RateLimiter {
  take(key: string, own?: RateLimit): RateDecision | null | Promise<RateDecision | null>;
}
