import type { BusMessage, MessageHandler } from '@rag/ports';
import { NonRetryableError } from '@rag/ports';

/*
 * The retry policy of both buses (the embedded SQLite log and Kafka): one implementation, so a message is retried,
 * held for a transient outage or dead-lettered by the same rules whichever bus carries it.
 */

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
 * Runs a handler on one message with the bus's retry policy — shared by the embedded log bus and Kafka: retry with
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
