import { Logger, metrics, metricsRegistry } from '@rag/platform';
import type { Bus, Registry } from '@rag/ports';

const log = new Logger('metrics');

/** Longest a scrape waits for the bus's lag (a broker that is down must not hang /metrics). */
const LAG_TIMEOUT_MS = 2_000;

/**
 * The Prometheus text of this process's registry for GET /metrics. Gauges that are read rather than counted are
 * refreshed first: consumer lag per group/topic/partition (the bus adapters set rag_kafka_consumer_lag for this
 * process's own groups while computing it) and, where the registry is at hand (the gateway), documents by status and
 * the outbox's backlog.
 */
export async function renderMetrics(parts: { bus?: Bus | null; registry?: Registry | null }): Promise<string> {
  const refresh: Promise<unknown>[] = [];
  if (parts.bus) refresh.push(withTimeout(parts.bus.lag(), 'consumer lag'));
  if (parts.registry) {
    refresh.push(
      withTimeout(parts.registry.countByStatus(), 'documents by status').then((counts) => {
        for (const [status, n] of Object.entries(counts)) metrics.documents.set({ status }, n);
      }),
    );
    if (parts.registry.outboxStats) {
      refresh.push(
        withTimeout(parts.registry.outboxStats(), 'outbox').then((o) => {
          metrics.outboxMessages.set(o.messages);
          metrics.outboxBytes.set(o.bytes);
          const oldest = o.oldest_created_at === null ? NaN : Date.parse(o.oldest_created_at);
          metrics.outboxOldestAge.set(Number.isFinite(oldest) ? Math.max(0, (Date.now() - oldest) / 1000) : 0);
        }),
      );
    }
  }
  const results = await Promise.allSettled(refresh);
  for (const r of results) if (r.status === 'rejected') log.warn('metric refresh failed; serving the last values', { error: String(r.reason) });
  return metricsRegistry.metrics();
}

/** `p`, or a rejection naming `what` once LAG_TIMEOUT_MS passed (a store or broker that is down must not hang the caller). */
export function withTimeout<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} not read within ${LAG_TIMEOUT_MS} ms`)), LAG_TIMEOUT_MS);
    }),
  ]).finally(() => clearTimeout(timer));
}
