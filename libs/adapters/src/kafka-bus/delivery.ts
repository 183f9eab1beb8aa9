import type { BusMessage, MessageHandler } from '@rag/ports';
import { NonRetryableError } from '@rag/ports';

export interface BusRetryPolicy {
  /** Deliveries of one message before it goes to the DLQ (1 = no retry). */
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /**
   * How long a message whose handler keeps failing with a *transient* error (a store or service unavailable or
   * past its deadline: AppError `unavailable` / `deadline_exceeded`) is retried before it goes to the DLQ; such
   * failures do not count against `maxAttempts`. A store outage shorter than this loses nothing: the partition
   * waits, then resumes in order. 0 treats them like any other failure.
   */
  transientRetryMs?: number;
}

/** Exponential backoff before delivery `attempt + 1`: base · 2^(attempt−1), capped. */
export function backoffMs(attempt: number, policy: Pick<BusRetryPolicy, 'retryBaseMs' | 'retryMaxMs'>): number {
  return Math.min(policy.retryMaxMs, policy.retryBaseMs * 2 ** Math.max(0, attempt - 1));
}

export type DeliveryOutcome =
  /** The handler resolved: commit. */
  | { kind: 'done'; attempts: number }
  /** Failed validation (NonRetryableError) or kept failing: dead-letter it, then commit. */
  | { kind: 'dead'; attempts: number; reason: string; nonRetryable: boolean }
  /** The bus is closing: neither commit nor dead-letter, so the message is delivered again (at-least-once). */
  | { kind: 'aborted'; attempts: number };

export interface DeliveryHooks {
  /** Sleeps between attempts; resolves early when the bus closes. */
  sleep(ms: number): Promise<void>;
  isClosing(): boolean;
  /** Clock for the transient-retry budget (tests). */
  now?(): number;
  onRetry?(attempt: number, delayMs: number, reason: string): void;
}

export const isNonRetryable = (e: unknown): boolean =>
  e instanceof NonRetryableError || (e instanceof Error && (e as Error & { code?: unknown }).code === 'NON_RETRYABLE');

/** A store or service that is down or slow, not a problem of the message itself. */
export const isTransient = (e: unknown): boolean => {
  const code = e instanceof Error ? (e as Error & { code?: unknown }).code : undefined;
  return code === 'unavailable' || code === 'deadline_exceeded';
};

const reasonOf = (e: unknown): string => (e instanceof Error ? e.message : String(e));

/**
 * Runs a handler on one message with the bus's retry policy — the same rules as the embedded log bus: retry with
 * exponential backoff up to `maxAttempts`, a NonRetryableError goes to the DLQ at once, and closing the bus stops
 * retrying without committing.
 */
export async function deliverWithRetries(
  handler: MessageHandler,
  message: Omit<BusMessage, 'attempt'>,
  policy: BusRetryPolicy,
  hooks: DeliveryHooks,
): Promise<DeliveryOutcome> {
  let reason = 'unknown error';
  let counted = 0; // failures that count against maxAttempts
  let transientSince: number | undefined;
  const now = hooks.now ?? Date.now;
  for (let attempt = 1; ; attempt++) {
    if (hooks.isClosing()) return { kind: 'aborted', attempts: attempt - 1 };
    try {
      await handler({ ...message, attempt });
      return { kind: 'done', attempts: attempt };
    } catch (e) {
      reason = reasonOf(e);
      if (hooks.isClosing()) return { kind: 'aborted', attempts: attempt };
      if (isNonRetryable(e)) return { kind: 'dead', attempts: attempt, reason, nonRetryable: true };
      const transient = isTransient(e) && (policy.transientRetryMs ?? 0) > 0;
      if (transient) {
        transientSince ??= now();
        if (now() - transientSince >= policy.transientRetryMs!) return { kind: 'dead', attempts: attempt, reason, nonRetryable: false };
      } else {
        transientSince = undefined;
        counted++;
        if (counted >= policy.maxAttempts) return { kind: 'dead', attempts: attempt, reason, nonRetryable: false };
      }
      const delay = backoffMs(attempt, policy);
      hooks.onRetry?.(attempt, delay, reason);
      await hooks.sleep(delay);
    }
  }
}

/** Kafka header values (Buffer, string or arrays of them) as plain strings; the last value wins for repeated headers. */
export function decodeHeaders(headers: Record<string, Buffer | string | (Buffer | string)[] | undefined> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    if (v === undefined) continue;
    const last = Array.isArray(v) ? v[v.length - 1] : v;
    if (last === undefined) continue;
    out[k] = typeof last === 'string' ? last : last.toString('utf8');
  }
  return out;
}

/** A message value as JSON, or the raw text when it is not JSON (the handler's validation then rejects it). */
export function decodeValue(value: Buffer | null): unknown {
  if (value === null) return null;
  const text = value.toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The offset to commit after `offset` was handled (Kafka commits the next offset to read). */
export const nextOffset = (offset: string): string => (BigInt(offset) + 1n).toString();

/**
 * Unconsumed messages of one partition: high watermark minus the committed offset; a group that never committed
 * starts at the low watermark (consumers subscribe from the beginning).
 */
export function partitionLag(p: { high: string; low: string; committed: string | null }): number {
  const high = BigInt(p.high);
  const low = BigInt(p.low);
  const committed = p.committed === null || BigInt(p.committed) < 0n ? low : BigInt(p.committed);
  const start = committed < low ? low : committed;
  return Number(high > start ? high - start : 0n);
}
