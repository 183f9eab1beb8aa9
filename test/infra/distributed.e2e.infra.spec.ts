/**
 * The production shape for real: eight service processes talking over Kafka and gRPC to real Kafka, Milvus and
 * OpenSearch servers (start them first: `npm run infra:up`): ingest through the gateway, query through the gRPC
 * chain, update, delete, and a poison message.
 */
import { Kafka, logLevel } from 'kafkajs';
import { DLQ_HEADERS, Topic } from '@rag/contracts';
import { call, doc, milvus, opensearch, run, useDistributedPlatform, waitAll } from './distributed-harness';

describe('distributed mode: eight processes over Kafka, gRPC, Milvus and OpenSearch', () => {
  useDistributedPlatform();

  it('ingests through the gateway and Kafka into Milvus and OpenSearch, answers over gRPC, updates and deletes', { timeout: 240_000 }, async () => {
    const r = await call<{ accepted: unknown[] }>('POST', '/v1/documents:batch', { documents: [1, 2, 3].map(doc) });
    expect(r.body.accepted).toHaveLength(3);
    await waitAll(['doc-1', 'doc-2', 'doc-3'], 'indexed');
    const q = await call<{ refused: boolean; citations: { document_id: string; chunk_id: string }[]; degraded: string[] }>('POST', '/v1/query', {
      question: 'Which Mach number was model number 2 tested at?',
    });
    expect(q.status).toBe(200);
    expect(q.body.refused).toBe(false);
    expect(q.body.degraded).toEqual([]);
    expect(q.body.citations[0]!.document_id).toBe('doc-2');

    await call('POST', '/v1/documents', { id: 'doc-2', text: 'Wind tunnel report 2.\n\nThe model number 2 was rebuilt with a swept wing and retested at Mach 3.5.' });
    await waitAll(['doc-2'], 'indexed');
    const v = await call<{ version: number }>('GET', '/v1/documents/doc-2');
    expect(v.body.version).toBe(2);
    const after = await call<{ results: { chunk_id: string; document_id: string }[] }>('POST', '/v1/retrieve', { query: 'model number 2 swept wing retested', top_k: 10 });
    const doc2 = after.body.results.filter((x) => x.document_id === 'doc-2');
    expect(doc2.length).toBeGreaterThan(0);
    expect(doc2.every((x) => x.chunk_id.startsWith('doc-2#v2#'))).toBe(true);

    expect((await call('DELETE', '/v1/documents/doc-3')).status).toBe(202);
    await waitAll(['doc-3'], 'deleted');
    const gone = await call<{ results: { document_id: string }[] }>('POST', '/v1/retrieve', { query: 'model number 3 wind tunnel report', top_k: 10 });
    expect(gone.body.results.map((x) => x.document_id)).not.toContain('doc-3');
    expect(await milvus.count('doc-3')).toBe(0);
    expect(await opensearch.count('doc-3')).toBe(0);

    const bad = await call<{ error: { code: string } }>('POST', '/v1/query', { question: 'x', filters: { year: { gte: 'soon' } } });
    expect(bad.status).toBe(400);
  });

  it('ingests an upload larger than the broker default message size (1 MiB) end to end', { timeout: 180_000 }, async () => {
    // ≈ 1.6 MB of text: its source event and its embedded-chunks event (≈ 2,000 chunks with vectors) are each well
    // past 1 MiB. Before the topics were made with max.message.bytes, the outbox relay retried the source event
    // forever and every later upload waited behind it.
    const paragraphs = [...Array(14_000).keys()].map((i) => `Section ${i}. The inspection log records routine pressure readings for bay ${i % 97} and valve ${i % 13}, all within tolerance.`);
    paragraphs.push('The final entry says the auxiliary turbine was replaced with a quieter titanium impeller in the last week.');
    const text = paragraphs.join('\n\n');
    expect(Buffer.byteLength(text)).toBeGreaterThan(1_500_000);
    expect((await call('POST', '/v1/documents', { id: 'big-upload', text })).status).toBe(202);
    await call('POST', '/v1/documents', doc(901));
    await waitAll(['big-upload', 'doc-901'], 'indexed');
    expect(await opensearch.count('big-upload')).toBeGreaterThan(1000);
    // Its last chunk is searchable. "indexed" means both stores hold it durably; searches see it after their next
    // refresh (OpenSearch) / consistency window (Milvus), so ask again for a few seconds rather than once.
    const found = async () => {
      const r = await call<{ results: { document_id: string; text: string }[] }>('POST', '/v1/retrieve', { query: 'auxiliary turbine replaced titanium impeller', top_k: 5 });
      return r.body.results.some((x) => x.document_id === 'big-upload' && x.text.includes('titanium impeller'));
    };
    const deadline = Date.now() + 20_000;
    while (!(await found()) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 500));
    expect(await found()).toBe(true);
  });

  it('sends a poison message to the DLQ with its reason and keeps the pipeline moving', { timeout: 120_000 }, async () => {
    const kafka = new Kafka({ clientId: `${run}-test`, brokers: ['127.0.0.1:9092'], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: `${run}.${Topic.Documents}`, messages: [{ key: 'poison', value: JSON.stringify({ op: 'upsert', document: { nope: 1 } }) }] });
    await producer.disconnect();
    await call('POST', '/v1/documents', doc(900));
    await waitAll(['doc-900'], 'indexed');

    const consumer = kafka.consumer({ groupId: `${run}-dlq-reader` });
    await consumer.connect();
    await consumer.subscribe({ topic: `${run}.${Topic.Dlq}`, fromBeginning: true });
    const seen = await new Promise<Record<string, string>>((resolveSeen, reject) => {
      const t = setTimeout(() => reject(new Error('no DLQ message')), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          if (message.key?.toString() !== 'poison') return;
          clearTimeout(t);
          resolveSeen(Object.fromEntries(Object.entries(message.headers ?? {}).map(([k, v]) => [k, String(v)])));
        },
      });
    });
    await consumer.disconnect();
    expect(seen[DLQ_HEADERS.stage]).toBe('chunker');
    expect(seen[DLQ_HEADERS.reason]).toMatch(/invalid document event/);
  });
});
