/**
 * Distributed tracing for real: the eight services (separate processes over Kafka, gRPC, Milvus and OpenSearch; start
 * the servers first with `npm run infra:up`) export their spans over OTLP/HTTP (JSON) to a receiver in this test
 * (./otlp-receiver.ts decodes the documented OTLP JSON). One ingestion must be one trace from the gateway through
 * Kafka to the loader, chunker, embedder and indexer; one query one trace from the gateway through gRPC to the
 * embedder, retriever, reranker and generator, each stage span parent-linked to the previous process's span through
 * exactly the transport spans of the OpenTelemetry instrumentations that carry the context (kafkajs: `send <topic>`
 * in the publisher, `process <topic>` in the consumer; grpc: the CLIENT span in the caller, the SERVER span in the
 * service) — no hand-made propagation, and nothing else in between. (One exception, made for bulk ingestion: a batch
 * stage publishes the messages of many documents in one Kafka send, and KafkaBus then makes each message's
 * `send <topic>` PRODUCER span itself, with the instrumentation's name and kind, under that document's own context,
 * because the instrumentation would parent them all on one; the chain checked here is the same.)
 */
import { call, env, GATEWAY, useDistributedPlatform, waitAll } from './distributed-harness';
import { OtlpReceiver, renderTree, type ReceivedSpan } from './otlp-receiver';

// Ports: the harness uses GATEWAY..GATEWAY+14; the receiver sits above them (+20).
const receiver = new OtlpReceiver(GATEWAY + 20);
env.OTEL_TRACES_EXPORTER = 'otlp';
env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.endpoint;
env.OTEL_BSP_SCHEDULE_DELAY = '200';

const KEYS = ['rag.document_id', 'rag.tenant', 'rag.chunks', 'rag.vectors', 'rag.index.type', 'rag.embedding.model', 'rag.hits', 'rag.candidates', 'rag.refused', 'rag.degraded', 'rpc.method', 'messaging.destination.name'];

function byName(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name);
  expect(found.map((s) => s.name), `exactly one ${name} span in ${spans.map((s) => s.name).join(',')}`).toEqual([name]);
  return found[0]!;
}
function expectChild(child: ReceivedSpan, parent: ReceivedSpan): void {
  expect(child.parentSpanId, `${child.service}:${child.name} is a child of ${parent.service}:${parent.name}`).toBe(parent.spanId);
}
// OTLP span kinds.
const KIND = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
/** The spans between `child` and its ancestor `ancestor`, top-down, as `service KIND name`; fails when it is none. */
function between(child: ReceivedSpan, ancestor: ReceivedSpan, spans: ReceivedSpan[]): string[] {
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const path: string[] = [];
  for (let s = byId.get(child.parentSpanId ?? ''); s !== ancestor; s = byId.get(s.parentSpanId ?? '')) {
    if (!s) throw new Error(`${ancestor.service}:${ancestor.name} is not an ancestor of ${child.service}:${child.name} (spans above it: ${path.join(' > ') || 'none'})`);
    path.unshift(`${s.service} ${KIND[s.kind]} ${s.name}`);
  }
  return path;
}
/** `child` runs in another process under `parent` through Kafka: the kafkajs instrumentation's spans only. */
function expectKafkaHop(child: ReceivedSpan, parent: ReceivedSpan, topic: string, spans: ReceivedSpan[]): void {
  const name = `${env.RAG_KAFKA_TOPIC_PREFIX ?? ''}${topic}`; // the harness's per-run topic prefix
  const send = `${parent.service} PRODUCER send ${name}`;
  // `process <topic>` is there when the consumer runs the stage inside the instrumentation's eachMessage span.
  expect([[send], [send, `${child.service} CONSUMER process ${name}`]]).toContainEqual(between(child, parent, spans));
}
/** `stage` (in `service`) runs under `caller` through one gRPC call: the grpc instrumentation's CLIENT and SERVER spans. */
function expectGrpcHop(stage: ReceivedSpan, caller: ReceivedSpan, rpc: string, service: string, spans: ReceivedSpan[]): void {
  expect(between(stage, caller, spans)).toEqual([`${caller.service} CLIENT grpc.${rpc}`, `${service} SERVER grpc.${rpc}`]);
}

describe('distributed tracing: one ingestion and one query are each one trace across processes', () => {
  beforeAll(() => receiver.start());
  useDistributedPlatform();
  afterAll(() => receiver.close());

  it('traces an ingestion through Kafka: gateway → load → chunk → embed → index → index-dense, index-keyword', { timeout: 120_000 }, async () => {
    const r = await call('POST', '/v1/documents', {
      id: 'trace-ingest-1',
      title: 'Flutter report',
      text: 'Flutter report.\n\nThe tailplane flutter margin was measured at Mach 0.8 in the transonic tunnel zorblax.',
    });
    expect(r.status).toBe(202);
    await waitAll(['trace-ingest-1'], 'indexed');
    let gateway: ReceivedSpan | undefined;
    for (let i = 0; i < 100 && !gateway; i++) {
      gateway = receiver.spans.find((s) => s.name === 'gateway' && s.attributes['url.path'] === '/v1/documents' && s.attributes['http.request.method'] === 'POST');
      if (!gateway) await new Promise((res) => setTimeout(res, 100));
    }
    expect(gateway, 'the gateway exported its request span').toBeDefined();
    const spans = await receiver.waitFor(gateway!.traceId, ['load', 'chunk', 'embed', 'index', 'index-dense', 'index-keyword']);
    console.log(`ingestion trace ${gateway!.traceId}:\n${renderTree(spans, KEYS)}`);
    expect(gateway!.parentSpanId).toBeUndefined();
    expect(gateway!.scope, 'the HTTP instrumentation opened the gateway span').toBe('@opentelemetry/instrumentation-http');
    const load = byName(spans, 'load');
    const chunk = byName(spans, 'chunk');
    const embed = byName(spans, 'embed');
    const index = byName(spans, 'index');
    expectKafkaHop(load, gateway!, 'rag.source.events.v1', spans);
    expectKafkaHop(chunk, load, 'rag.documents.v1', spans);
    expectKafkaHop(embed, chunk, 'rag.chunks.v1', spans);
    expectKafkaHop(index, embed, 'rag.chunks.embedded.v1', spans);
    expectChild(byName(spans, 'index-dense'), index);
    expectChild(byName(spans, 'index-keyword'), index);
    expect([gateway!, load, chunk, embed, index].map((s) => s.service)).toEqual(['rag-gateway', 'rag-loader', 'rag-chunker', 'rag-embedder', 'rag-indexer']);
    expect(byName(spans, 'index-dense').attributes['rag.index.type']).toBe('MilvusVectorStore');
    expect(byName(spans, 'index-keyword').attributes['rag.index.type']).toBe('OpenSearchKeywordIndex');
    expect(load.attributes).toMatchObject({ 'rag.document_id': 'trace-ingest-1', 'rag.tenant': 'default' });
    expect(JSON.stringify(spans.map((s) => s.attributes))).not.toContain('zorblax');
    expect(receiver.errors).toEqual([]);
  });

  it('traces a query through gRPC: gateway → query → query-embed, retrieve (dense, keyword, fuse), rerank, generate', { timeout: 60_000 }, async () => {
    const q = await call<{ trace_id: string; refused: boolean }>('POST', '/v1/query', { question: 'At which Mach number was the tailplane flutter margin measured?', rerank: true });
    expect(q.status).toBe(200);
    expect(q.body.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const stages = ['gateway', 'query', 'query-embed', 'retrieve', 'retrieve-dense', 'retrieve-keyword', 'fuse', 'rerank', 'generate'];
    const spans = await receiver.waitFor(q.body.trace_id, stages);
    console.log(`query trace ${q.body.trace_id}:\n${renderTree(spans, KEYS)}`);
    const gateway = byName(spans, 'gateway');
    const query = byName(spans, 'query');
    expect(gateway.parentSpanId).toBeUndefined();
    expect(gateway.scope).toBe('@opentelemetry/instrumentation-http');
    expectChild(query, gateway);
    // Each remote stage: the gateway's CLIENT span for the RPC (child of `query`), the service's SERVER span, the
    // service's stage span under it.
    const remote: [string, string, string][] = [
      ['rag.v1.Embedder/Embed', 'query-embed', 'rag-embedder'],
      ['rag.v1.Retriever/Retrieve', 'retrieve', 'rag-retriever'],
      ['rag.v1.Reranker/Rerank', 'rerank', 'rag-reranker'],
      ['rag.v1.Generator/Generate', 'generate', 'rag-generator'],
    ];
    for (const [rpc, stage, service] of remote) {
      const server = byName(spans, stage);
      expectGrpcHop(server, query, rpc, service, spans);
      expect(server.service).toBe(service);
    }
    const retrieve = byName(spans, 'retrieve');
    for (const name of ['retrieve-dense', 'retrieve-keyword', 'fuse']) {
      expectChild(byName(spans, name), retrieve);
      expect(byName(spans, name).service).toBe('rag-retriever');
    }
    expect(byName(spans, 'retrieve-dense').attributes['rag.index.type']).toBe('MilvusVectorStore');
    expect(byName(spans, 'retrieve-keyword').attributes['rag.index.type']).toBe('OpenSearchKeywordIndex');
    expect(query.attributes).toMatchObject({ 'rag.tenant': 'default', 'rag.refused': q.body.refused });
    expect(receiver.errors).toEqual([]);
  });
});
