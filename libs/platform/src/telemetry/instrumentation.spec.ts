/**
 * The maintained OpenTelemetry instrumentations are registered by startTracing: an HTTP server and Express loaded
 * after it (as every main loads them) get SERVER spans that continue the caller's W3C context, Express's matched
 * route, no span for probes, and `adoptServerSpan` names the span last (the gateway's `gateway` stage span).
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { activeTraceId, adoptServerSpan, inSpan, isUntracedHttpPath, startTracing } from './tracing';

const exporter = new InMemorySpanExporter();
const handle = startTracing('instrumentation-test', { spanProcessors: [new SimpleSpanProcessor(exporter)], env: {} });

// Required (not imported) after the SDK started, the way the services' CommonJS build loads them.
const require = createRequire(__filename);
const http = require('node:http') as typeof import('node:http');
const express = require('express') as typeof import('express');
const grpc = require('@grpc/grpc-js') as typeof import('@grpc/grpc-js');

const seen: { path: string; traceId: string | undefined; adopted: boolean }[] = [];
const app = express();
app.get('/v1/things/:id', (req, res) => {
  const adopted = req.query.adopt === '1' ? adoptServerSpan(req, (span) => span.updateName('gateway').setAttribute('rag.tenant', 't1')) : undefined;
  seen.push({ path: req.path, traceId: activeTraceId(), adopted: adopted !== undefined });
  res.json({ ok: true });
});
app.get('/healthz', (req, res) => {
  seen.push({ path: req.path, traceId: activeTraceId(), adopted: adoptServerSpan(req, () => undefined) !== undefined });
  res.json({ ok: true });
});
const server = http.createServer(app);
let base = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
// fetch is undici (not the http module), so the test's own requests add no client spans.
const get = (path: string) => fetch(base + path, { headers: { traceparent: `00-${TRACE}-${PARENT}-01` } }).then((r) => r.status);

async function serverSpans(count: number): Promise<ReadableSpan[]> {
  // The span ends on the response's `close`, which may come after the client read the body.
  for (let i = 0; i < 200; i++) {
    const spans = exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-http');
    if (spans.length >= count) return spans;
    await new Promise((r) => setTimeout(r, 10));
  }
  return exporter.getFinishedSpans();
}

describe('auto-instrumentation', () => {
  beforeEach(() => {
    exporter.reset();
    seen.length = 0;
  });

  it('registers the http, express, grpc, kafkajs, pg and undici (fetch) instrumentations', () => {
    expect([...handle.instrumentations].sort()).toEqual(
      ['@opentelemetry/instrumentation-express', '@opentelemetry/instrumentation-grpc', '@opentelemetry/instrumentation-http', '@opentelemetry/instrumentation-kafkajs', '@opentelemetry/instrumentation-pg', '@opentelemetry/instrumentation-undici'].sort(),
    );
  });

  it('opens a SERVER span per request that continues the caller’s trace, named after the Express route', async () => {
    expect(await get('/v1/things/42')).toBe(200);
    const [span, ...more] = await serverSpans(1);
    expect(more).toEqual([]);
    expect(span!.name).toBe('GET /v1/things/:id');
    expect(span!.kind).toBe(SpanKind.SERVER);
    expect(span!.spanContext().traceId).toBe(TRACE);
    expect(span!.parentSpanContext?.spanId).toBe(PARENT);
    expect(span!.attributes).toMatchObject({ 'http.route': '/v1/things/:id', 'http.request.method': 'GET', 'url.path': '/v1/things/42', 'http.response.status_code': 200 });
    // The handler runs inside it (trace_id in answers = the request's trace).
    expect(seen).toEqual([{ path: '/v1/things/42', traceId: TRACE, adopted: false }]);
  });

  it('lets the handler adopt the span and name it last (after the instrumentation’s route name)', async () => {
    expect(await get('/v1/things/7?adopt=1')).toBe(200);
    const [span] = await serverSpans(1);
    expect(seen[0]).toMatchObject({ adopted: true, traceId: TRACE });
    expect(span!.name).toBe('gateway');
    expect(span!.attributes['rag.tenant']).toBe('t1');
    expect(span!.attributes['http.route']).toBe('/v1/things/:id');
  });

  it('does not trace probes and scrapes', async () => {
    expect(isUntracedHttpPath('/readyz?verbose=1')).toBe(true);
    expect(isUntracedHttpPath('/v1/query')).toBe(false);
    expect(await get('/healthz')).toBe(200);
    expect(await get('/v1/things/1')).toBe(200);
    const spans = await serverSpans(1);
    expect(spans.map((s) => s.attributes['url.path'])).toEqual(['/v1/things/1']);
    expect(seen.find((s) => s.path === '/healthz')).toEqual({ path: '/healthz', traceId: undefined, adopted: false });
  });
});

describe('gRPC auto-instrumentation', () => {
  // Two unary methods over raw bytes: one of ours, and the health service's Check (ignored: probes).
  const unary = (path: string) => ({
    path,
    requestStream: false,
    responseStream: false,
    requestSerialize: (b: Buffer) => b,
    requestDeserialize: (b: Buffer) => b,
    responseSerialize: (b: Buffer) => b,
    responseDeserialize: (b: Buffer) => b,
  });
  const echo = { Echo: unary('/test.v1.Echo/Echo') };
  const health = { Check: unary('/grpc.health.v1.Health/Check') };
  const handled: (string | undefined)[] = [];
  const server = new grpc.Server();
  const reply = (call: { request: Buffer }, done: (e: null, b: Buffer) => void) => {
    handled.push(activeTraceId());
    done(null, call.request);
  };
  server.addService(echo, { Echo: reply });
  server.addService(health, { Check: reply });
  let address = '';
  beforeAll(async () => {
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());
  beforeEach(() => {
    exporter.reset();
    handled.length = 0;
  });

  function call(def: Record<string, ReturnType<typeof unary>>, method: string): Promise<Buffer> {
    const Client = grpc.makeGenericClientConstructor(def, 'Test');
    const client = new Client(address, grpc.credentials.createInsecure()) as unknown as Record<string, (b: Buffer, cb: (e: Error | null, r: Buffer) => void) => void> & { close(): void };
    return new Promise<Buffer>((resolve, reject) => client[method]!(Buffer.from('hi'), (e, r) => (e ? reject(e) : resolve(r)))).finally(() => client.close());
  }
  const grpcSpans = () => exporter.getFinishedSpans().filter((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-grpc');

  it('carries the trace over a call: CLIENT span under the caller’s span, SERVER span under it, the handler inside', async () => {
    let traceId = '';
    let callerSpanId = '';
    await inSpan('query', {}, async (span) => {
      traceId = span.spanContext().traceId;
      callerSpanId = span.spanContext().spanId;
      expect((await call(echo, 'Echo')).toString()).toBe('hi');
    });
    for (let i = 0; i < 200 && grpcSpans().length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    const spans = grpcSpans();
    const client = spans.find((s) => s.kind === SpanKind.CLIENT);
    const serverSpan = spans.find((s) => s.kind === SpanKind.SERVER);
    expect(client?.name).toBe('grpc.test.v1.Echo/Echo');
    expect(client?.spanContext().traceId).toBe(traceId);
    expect(client?.parentSpanContext?.spanId).toBe(callerSpanId);
    expect(serverSpan?.name).toBe('grpc.test.v1.Echo/Echo');
    expect(serverSpan?.parentSpanContext?.spanId).toBe(client?.spanContext().spanId);
    expect(handled).toEqual([traceId]);
  });

  it('does not trace health checks', async () => {
    await inSpan('readyz', {}, async () => {
      await call(health, 'Check');
    });
    await call(echo, 'Echo');
    for (let i = 0; i < 200 && grpcSpans().length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    expect(grpcSpans().map((s) => s.name)).toEqual(['grpc.test.v1.Echo/Echo', 'grpc.test.v1.Echo/Echo']);
  });
});
