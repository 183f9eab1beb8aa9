/**
 * The embedded log bus carries the publishing span's W3C trace context in the message headers by hand (the consuming
 * stage continues the trace); on Kafka that is @opentelemetry/instrumentation-kafkajs's job (its `send` span writes
 * the headers; test/infra/tracing.infra.spec.ts proves the trace across processes), so KafkaBus adds none itself —
 * except for messages that carry their own `traceContext` (a batch stage's one publish of many documents' messages),
 * which get a `send` span each under their own context (the last case).
 * Both keep headers the publisher set, and the gauge rag_kafka_consumer_lag gets a series per partition of this
 * process's own groups.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Topic } from '@rag/contracts';
import { inSpan, Logger, metrics, setLogLevel, startSpan, startTracing } from '@rag/platform';
import type { BusMessage, MessageBroker } from '@rag/ports';
import { SqliteLogBus } from '../log-bus/log-bus.adapter';
import { FakeKafka } from './fake-kafka';
import { KafkaBus } from './kafka-bus.adapter';

setLogLevel('silent');
startTracing('bus-test', { env: {} });

const dir = mkdtempSync(join(tmpdir(), 'bus-trace-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const buses: [string, () => MessageBroker, boolean][] = [
  ['KafkaBus', () => new KafkaBus({ brokers: ['unused:9092'], kafka: new FakeKafka(), partitions: 2, retryBaseMs: 1, logger: new Logger('t') }), false],
  ['SqliteLogBus', () => new SqliteLogBus({ path: join(dir, `bus-${Date.now()}.db`), partitions: 2, retryBaseMs: 1, pollMs: 20, logger: new Logger('t') }), true],
];

describe.each(buses)('%s trace context', (_name, open, byHand) => {
  it(`${byHand ? 'puts' : 'leaves to the instrumentation'} the publishing span’s traceparent in the headers, keeps the publisher’s own headers, reports lag per partition`, async () => {
    const bus = open();
    const seen: BusMessage[] = [];
    await bus.subscribe({ group: 'g-trace', topic: Topic.Chunks, stage: 'g-trace', handler: async (m) => void seen.push(m) });
    await bus.start();
    let traceId = '';
    await inSpan('publisher', {}, async (span) => {
      traceId = span.spanContext().traceId;
      await bus.publish(Topic.Chunks, [{ key: 'doc-1', value: { n: 1 } }]);
      await bus.publish(Topic.Chunks, [{ key: 'doc-2', value: { n: 2 }, headers: { traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`, 'x-own': 'kept' } }]);
    });
    await bus.publish(Topic.Chunks, [{ key: 'doc-3', value: { n: 3 } }]);
    await bus.drain(10_000);
    const byKey = Object.fromEntries(seen.map((m) => [m.key, m.headers]));
    if (byHand) expect(byKey['doc-1']!.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-0[01]$`));
    else expect(byKey['doc-1']!.traceparent).toBeUndefined(); // no kafkajs instrumentation around the in-memory stand-in
    expect(byKey['doc-2']).toMatchObject({ traceparent: `00-${'1'.repeat(32)}-${'2'.repeat(16)}-01`, 'x-own': 'kept' });
    expect(byKey['doc-3']!.traceparent).toBeUndefined();
    await bus.lag();
    const lag = (await metrics.consumerLag.get()).values.filter((v) => v.labels.group === 'g-trace' && v.labels.topic === Topic.Chunks);
    expect(lag.map((v) => v.labels.partition).sort()).toEqual(['0', '1']);
    expect(lag.every((v) => v.value === 0)).toBe(true);
    await bus.close();
  });

  it('one publish of messages from different traces (a batch stage): each message continues its own traceContext', async () => {
    const bus = open();
    const seen: BusMessage[] = [];
    await bus.subscribe({ group: 'g-trace-batch', topic: Topic.Chunks, stage: 'g-trace-batch', handler: async (m) => void seen.push(m) });
    await bus.start();
    const docs = ['a', 'b', 'c'].map((key) => ({ key, ...startSpan(`stage ${key}`, {}) }));
    await inSpan('batch', {}, () => bus.publish(Topic.Chunks, docs.map((d) => ({ key: d.key, value: { n: d.key }, traceContext: d.context }))));
    await bus.drain(10_000);
    for (const d of docs) {
      const header = seen.find((m) => m.key === d.key)!.headers.traceparent;
      // Its own document's trace, whatever span was active at the publish (on Kafka: under a `send` span made for it).
      expect(header, d.key).toMatch(new RegExp(`^00-${d.span.spanContext().traceId}-[0-9a-f]{16}-0[01]$`));
      if (byHand) expect(header).toContain(d.span.spanContext().spanId);
      d.span.end();
    }
    expect(new Set(seen.map((m) => m.headers.traceparent!.split('-')[1])).size).toBe(3);
    await bus.close();
  });
});
