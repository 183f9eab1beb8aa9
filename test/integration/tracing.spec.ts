/**
 * Embedded mode produces the same spans as the distributed services: one ingestion is one trace from the gateway's
 * request through load → chunk → embed → index (index-dense, index-keyword) over the in-process log bus (trace
 * context in the message headers), and one query is one trace gateway → query → query-embed, retrieve
 * (retrieve-dense, retrieve-keyword, fuse), rerank, generate, whose id is the answer's `trace_id`. Spans go to an
 * in-memory exporter of the real OpenTelemetry SDK started the way every main starts it: before the platform is
 * loaded, so the HTTP instrumentation opens the gateway's SERVER span (named `gateway` by the gateway).
 */
import { availableParallelism } from 'node:os';
import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { metricsRegistry, startTracing } from '@rag/platform';
import type { Server } from '../e2e/harness';
import { OpenAiChatStandIn, type ChatCall, type ChatReply } from '../fakes/openai-chat';

const exporter = new InMemorySpanExporter();
startTracing('embedded-test', { spanProcessors: [new SimpleSpanProcessor(exporter)], env: {} });
// Loaded in beforeAll (a static import would run before startTracing): Nest, Express and http are then required
// after the SDK started, as in every main.
let harness: typeof import('../e2e/harness');
const HTTP_INSTRUMENTATION = '@opentelemetry/instrumentation-http';

const SECRET_SENTENCE = 'The flutter margin of the tailplane was zorblax seven';

let server: Server;
beforeAll(async () => {
  harness = await import('../e2e/harness');
  server = await harness.startServer();
}, 60_000);
afterAll(async () => {
  await server?.stop();
  if (server) harness.removeDir(server.dataDir);
});

const spansOf = (traceId: string) => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
function one(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name), `exactly one ${name} span`).toEqual([name]);
  return found[0]!;
}
const isChild = (child: ReadableSpan, parent: ReadableSpan) => parentOf(child) === parent.spanContext().spanId;

async function waitForSpans(traceId: string, names: string[], timeoutMs = 10_000): Promise<ReadableSpan[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const spans = spansOf(traceId);
    if (names.every((n) => spans.some((s) => s.name === n))) return spans;
    if (Date.now() > deadline) throw new Error(`trace ${traceId} has ${spans.map((s) => s.name).join(', ')}; wanted ${names.join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('tracing in embedded mode', () => {
  it('makes one ingestion one trace across the bus: gateway → load → chunk → embed → index → index-dense, index-keyword', async () => {
    const r = await harness.api(server, 'POST', '/v1/documents', {
      id: 'trace-doc-1',
      title: 'Tailplane flutter',
      text: `Flutter report.\n\n${SECRET_SENTENCE}. The test ran at Mach 0.8 in the transonic tunnel.`,
    });
    expect(r.status).toBe(202);
    await harness.waitForStatus(server, 'trace-doc-1', 'indexed');
    // Polled like the others: the SDK's span processor exports a span only once the resource's asynchronous
    // attributes (host/process detectors) have settled, which under load can come after the 202 was read.
    const findGateway = () =>
      exporter.getFinishedSpans().find((s) => s.name === 'gateway' && s.attributes['url.path'] === '/v1/documents' && s.attributes['http.request.method'] === 'POST');
    const deadline = Date.now() + 10_000;
    while (!findGateway() && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    const gateway = findGateway();
    expect(gateway).toBeDefined();
    const spans = await waitForSpans(gateway!.spanContext().traceId, ['load', 'chunk', 'embed', 'index', 'index-dense', 'index-keyword']);
    expect(parentOf(gateway!)).toBeUndefined();
    expect(gateway!.instrumentationScope.name).toBe(HTTP_INSTRUMENTATION);
    const load = one(spans, 'load');
    const chunk = one(spans, 'chunk');
    const embed = one(spans, 'embed');
    const index = one(spans, 'index');
    expect(isChild(load, gateway!)).toBe(true);
    expect(isChild(chunk, load)).toBe(true);
    expect(isChild(embed, chunk)).toBe(true);
    expect(isChild(index, embed)).toBe(true);
    expect(isChild(one(spans, 'index-dense'), index)).toBe(true);
    expect(isChild(one(spans, 'index-keyword'), index)).toBe(true);
    // The registry's status projection joins the same trace (processing from load, indexed from index).
    expect(spans.filter((s) => s.name === 'registry').map((s) => parentOf(s)).sort()).toEqual([load.spanContext().spanId, index.spanContext().spanId].sort());
    // Useful attributes, never the text.
    expect(load.attributes).toMatchObject({ 'rag.tenant': 'default', 'rag.document_id': 'trace-doc-1', 'rag.version': 1, 'messaging.destination.name': 'rag.source.events.v1' });
    expect(chunk.attributes['rag.chunks']).toBeGreaterThan(0);
    expect(embed.attributes['rag.embedding.model']).toMatch(/hashing/);
    expect(one(spans, 'index-dense').attributes['rag.index.type']).toBe('EmbeddedHnswVectorStore');
    // the embedded keyword index, wrapped for its searches on a worker where the default gives it one (RAG_QUERY_WORKERS)
    expect(one(spans, 'index-keyword').attributes['rag.index.type']).toBe(availableParallelism() >= 2 ? 'OffloadedKeywordIndex' : 'EmbeddedBm25KeywordIndex');
    const everything = JSON.stringify(spans.map((s) => [s.attributes, s.events.map((e) => e.attributes)]));
    expect(everything).not.toContain('zorblax');
  });

  it('makes one query one trace whose id is the answer trace_id, with a span per query stage', async () => {
    const r = await harness.api<{ trace_id: string; refused: boolean }>(server, 'POST', '/v1/query', { question: 'At which Mach number did the flutter test run?', rerank: true });
    expect(r.status).toBe(200);
    expect(r.body.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const spans = await waitForSpans(r.body.trace_id, ['gateway', 'query', 'query-embed', 'retrieve', 'retrieve-dense', 'retrieve-keyword', 'fuse', 'rerank', 'generate']);
    const gateway = one(spans, 'gateway');
    const query = one(spans, 'query');
    const retrieve = one(spans, 'retrieve');
    expect(parentOf(gateway)).toBeUndefined();
    expect(gateway.instrumentationScope.name).toBe(HTTP_INSTRUMENTATION);
    expect(gateway.kind).toBe(SpanKind.SERVER);
    expect(gateway.attributes).toMatchObject({ 'http.route': '/v1/query', 'http.response.status_code': 200, 'rag.tenant': 'default' });
    expect(isChild(query, gateway)).toBe(true);
    for (const name of ['query-embed', 'retrieve', 'rerank', 'generate']) expect(isChild(one(spans, name), query), name).toBe(true);
    for (const name of ['retrieve-dense', 'retrieve-keyword', 'fuse']) expect(isChild(one(spans, name), retrieve), name).toBe(true);
    expect(query.attributes).toMatchObject({ 'rag.tenant': 'default', 'rag.mode': 'hybrid', 'rag.rerank': true, 'rag.refused': r.body.refused });
    expect(one(spans, 'retrieve-dense').attributes['rag.index.type']).toBe('EmbeddedHnswVectorStore');
    expect(one(spans, 'rerank').attributes['rag.degraded']).toBe('reranker');
    expect(one(spans, 'generate').attributes['rag.llm.model']).toBe('extractive');
    // Each stage span is also an observation of rag_stage_duration_seconds{stage}.
    const text = await metricsRegistry.metrics();
    for (const stage of ['gateway', 'query', 'query-embed', 'retrieve', 'retrieve-dense', 'retrieve-keyword', 'fuse', 'rerank', 'generate', 'load', 'chunk', 'embed', 'index', 'index-dense', 'index-keyword']) {
      expect(text).toMatch(new RegExp(`rag_stage_duration_seconds_count\\{stage="${stage}"\\} [1-9]`));
    }
  });

  it('continues a caller’s W3C trace context on the gateway', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const r = await harness.api<{ trace_id: string }>(server, 'POST', '/v1/retrieve', { query: 'flutter Mach' }, { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    expect(r.status).toBe(200);
    expect(r.body.trace_id).toBe(traceId);
    const spans = await waitForSpans(traceId, ['gateway', 'retrieve']);
    expect(parentOf(one(spans, 'gateway'))).toBe('00f067aa0ba902b7');
  });
});

/**
 * Outgoing `fetch` (undici) is traced too: the OpenAI-compatible LLM call made while answering is a CLIENT span in
 * the query's trace, under `generate`, and the provider receives the trace context in `traceparent`. The provider is
 * a local stand-in speaking the chat-completions streaming wire format (a hosted LLM is the boundary we cannot reach).
 */
describe('tracing of outgoing fetch calls', () => {
  const seen: string[] = [];
  const provider = new (class extends OpenAiChatStandIn {
    protected reply({ headers }: ChatCall): ChatReply {
      seen.push(String(headers.traceparent ?? ''));
      return 'The flutter margin was seven [1].';
    }
  })();
  let llmServer: Server;
  beforeAll(async () => {
    const base = await provider.start();
    llmServer = await harness.startServer(undefined, { RAG_LLM: 'openai', RAG_LLM_BASE_URL: base, RAG_LLM_MODEL: 'stand-in' });
    const put = await harness.api(llmServer, 'POST', '/v1/documents', { id: 'flutter', title: 'Flutter', text: `${SECRET_SENTENCE}. The tailplane flutter test ran at Mach 0.9 in the tunnel.` });
    expect(put.status).toBeLessThan(300);
    await harness.waitForStatus(llmServer, 'flutter', 'indexed');
  }, 60_000);
  afterAll(async () => {
    await llmServer?.stop();
    if (llmServer) harness.removeDir(llmServer.dataDir);
    await provider.stop();
  });

  it('puts the LLM call in the query trace as a CLIENT span under generate, with traceparent on the wire', async () => {
    const r = await harness.api<{ trace_id: string; refused: boolean }>(llmServer, 'POST', '/v1/query', { question: 'What was the flutter margin of the tailplane?' });
    expect(r.status).toBe(200);
    expect(r.body.refused).toBe(false);
    const spans = await waitForSpans(r.body.trace_id, ['gateway', 'query', 'generate']);
    const generate = one(spans, 'generate');
    const deadline = Date.now() + 10_000;
    let client: ReadableSpan | undefined;
    while (!client && Date.now() < deadline) {
      client = spansOf(r.body.trace_id).find((s) => s.instrumentationScope.name === '@opentelemetry/instrumentation-undici');
      if (!client) await new Promise((res) => setTimeout(res, 50));
    }
    expect(client, 'an undici CLIENT span in the query trace').toBeDefined();
    expect(client!.kind).toBe(SpanKind.CLIENT);
    // Under generate (directly or through the LLM adapter's own span).
    const byId = new Map(spansOf(r.body.trace_id).map((s) => [s.spanContext().spanId, s]));
    const ancestors: string[] = [];
    for (let p = parentOf(client!); p && !ancestors.includes(p); p = byId.get(p) && parentOf(byId.get(p)!)) ancestors.push(p);
    expect(ancestors).toContain(generate.spanContext().spanId);
    expect(seen.some((tp) => tp.includes(r.body.trace_id)), `traceparent carried trace ${r.body.trace_id}: ${seen.join(' ')}`).toBe(true);
  });
});
