import { Gauge } from 'prom-client';
import { metricsRegistry } from '../telemetry/metrics';

/**
 * Parts of this process that failed in a way only a restart repairs — e.g. the ONNX worker thread, which ONNX
 * Runtime's Node binding cannot be loaded into a second time. `/healthz` (the liveness probe) answers 503 naming them,
 * so the orchestrator restarts the process instead of leaving it up and failing every request that needs the part
 * (an embedder that fails every passage would retry, then dead-letter, every document it is given).
 */
const broken = new Map<string, string>();

const gauge = new Gauge({
  name: 'rag_unrecoverable',
  help: 'Parts of this process that failed in a way only a restart repairs (1); /healthz answers 503 while any is set',
  labelNames: ['part'] as const,
  registers: [metricsRegistry],
});

/** Marks a part of this process as needing a restart (the first reason is kept). */
export function markUnrecoverable(part: string, reason: string): void {
  if (broken.has(part)) return;
  broken.set(part, reason);
  gauge.set({ part }, 1);
}

/** The parts marked so far, with their reasons. */
export function unrecoverableParts(): { part: string; reason: string }[] {
  return [...broken].map(([part, reason]) => ({ part, reason }));
}

/** The body and status of GET /healthz: 200 `ok`, or 503 `restart_required` naming every part that needs a restart. */
export function livenessResponse(): { code: 200 | 503; body: Record<string, unknown> } {
  const parts = unrecoverableParts();
  return parts.length === 0 ? { code: 200, body: { status: 'ok' } } : { code: 503, body: { status: 'restart_required', unrecoverable: parts } };
}

/** Tests only: forgets every mark. */
export function resetUnrecoverableForTests(): void {
  for (const part of broken.keys()) gauge.remove({ part });
  broken.clear();
}
