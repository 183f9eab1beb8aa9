/**
 * Log line throughput: `npx vitest bench --run libs/platform/src/logging`. The pino-backed Logger against the
 * hand-written JSON.stringify logger it replaced (inlined below as the baseline), outside and inside a span (the
 * trace_id/span_id lookup), side by side in one process so that their ratio is meaningful on a noisy host. Lines go
 * to a counting sink instead of stderr.
 */
import { context, trace } from '@opentelemetry/api';
import { bench, describe } from 'vitest';
import { inSpan, startTracing } from '../telemetry/tracing';
import { Logger, setLogLevel } from './logger';

startTracing('logger-bench', { env: {} });
setLogLevel('info');

// Counts what was written (so the serialized lines are used) instead of writing to stderr.
let bytes = 0;
const sink = (line: string) => {
  bytes += line.length;
  return bytes > 0;
};

/** The previous logger's write path (libs/platform/src/logging/logger.ts before pino), for the baseline only. */
function baselineInfo(component: string, msg: string, fields?: Record<string, unknown>): void {
  const sc = trace.getSpanContext(context.active());
  const ids = sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
  const line = { ts: new Date().toISOString(), level: 'info', component, msg, ...ids, ...fields };
  sink(JSON.stringify(line, (_k, v: unknown) => (v instanceof Error ? { name: v.name, message: v.message } : v)) + '\n');
}

const LINES = 1000;
const fields = (i: number) => ({ document_id: 'upload:7f3c', chunks: i, took_ms: 1.5 });
const log = new Logger('bench');

function withSink(fn: () => void): void {
  const write = process.stderr.write;
  process.stderr.write = sink as typeof process.stderr.write;
  try {
    fn();
  } finally {
    process.stderr.write = write;
  }
}

describe(`${LINES} log lines`, () => {
  bench('pino Logger', () => withSink(() => {
    for (let i = 0; i < LINES; i++) log.info('chunk indexed', fields(i));
  }));
  bench('baseline (JSON.stringify)', () => {
    for (let i = 0; i < LINES; i++) baselineInfo('bench', 'chunk indexed', fields(i));
  });
});

describe(`${LINES} log lines inside a span`, () => {
  const inside = (fn: () => void) => () => void inSpan('load', {}, async () => fn());
  bench('pino Logger', inside(() => withSink(() => {
    for (let i = 0; i < LINES; i++) log.info('chunk indexed', fields(i));
  })));
  bench('baseline (JSON.stringify)', inside(() => {
    for (let i = 0; i < LINES; i++) baselineInfo('bench', 'chunk indexed', fields(i));
  }));
});

describe('log lines under the level', () => {
  bench('pino Logger: debug at info', () => {
    for (let i = 0; i < LINES; i++) log.debug('dropped', fields(i));
  });
});
