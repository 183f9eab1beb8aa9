/**
 * Reliability of the distributed shape: a stage killed with SIGKILL mid-ingestion, and each store stopped and
 * restarted under live queries.
 */
import { call, doc, milvus, opensearch, servers, services, startService, useDistributedPlatform, waitAll, waitHealthy } from '../infra/distributed-harness';

describe('distributed mode reliability', () => {
  useDistributedPlatform();

  /** 500 documents through the batch API, the stage killed with SIGKILL while they flow, restarted, then counted. */
  async function ingestThroughAKill(stage: 'embedder' | 'indexer', prefix: string): Promise<void> {
    const before = { milvus: await milvus.count(), keyword: await opensearch.count() };
    const ids = Array.from({ length: 500 }, (_, i) => `${prefix}-${i}`);
    for (let i = 0; i < 500; i += 100) {
      const r = await call<{ accepted: unknown[] }>('POST', '/v1/documents:batch', { documents: ids.slice(i, i + 100).map((id, j) => ({ ...doc(i + j + 1000), id })) });
      expect(r.body.accepted).toHaveLength(100);
    }
    const svc = services.find((s) => s.name === stage)!;
    // Kill once the stage is demonstrably mid-stream: some documents indexed, most not.
    const deadline = Date.now() + 120_000;
    for (;;) {
      const first = await call<{ status: string }>('GET', `/v1/documents/${ids[0]}`);
      const last = await call<{ status: string }>('GET', `/v1/documents/${ids[499]}`);
      if (first.body.status === 'indexed' || Date.now() > deadline) {
        expect(last.body.status).not.toBe('indexed');
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    svc.proc!.kill('SIGKILL');
    await new Promise((r) => svc.proc!.once('exit', r));
    startService(svc);
    await waitHealthy(svc.port);
    await waitAll(ids, 'indexed', 600_000);

    let registryChunks = 0;
    for (const id of ids) {
      const r = await call<{ chunks: number; version: number }>('GET', `/v1/documents/${id}`);
      expect(r.body.version).toBe(1); // accepted once: nothing was re-submitted or re-versioned
      registryChunks += r.body.chunks;
    }
    expect(registryChunks).toBeGreaterThanOrEqual(500);
    // Exactly once in both stores: the rows added equal the registry's chunks (a duplicate or a loss would show).
    expect((await milvus.count()) - before.milvus).toBe(registryChunks);
    expect((await opensearch.count()) - before.keyword).toBe(registryChunks);
  }

  it('indexes every one of 500 documents exactly once when the embedder is killed with SIGKILL mid-ingestion', async () => {
    await ingestThroughAKill('embedder', 'kill-embedder');
  }, 900_000);

  it('indexes every one of 500 documents exactly once when the indexer is killed with SIGKILL mid-ingestion', async () => {
    await ingestThroughAKill('indexer', 'kill-indexer');
  }, 900_000);

  it('loses nothing when the keyword index is stopped mid-ingestion: the partition waits and resumes once it is back', async () => {
    const before = { milvus: await milvus.count(), keyword: await opensearch.count() };
    const ids = Array.from({ length: 100 }, (_, i) => `outage-ingest-${i}`);
    servers('stop', 'opensearch');
    try {
      const r = await call<{ accepted: unknown[] }>('POST', '/v1/documents:batch', { documents: ids.map((id, j) => ({ ...doc(j + 3000), id })) });
      expect(r.body.accepted).toHaveLength(100);
      // Longer than the bounded retries (5 attempts, 100 ms base backoff here) would take to dead-letter everything.
      await new Promise((res) => setTimeout(res, 15_000));
      const mid = await call<{ status: string }>('GET', `/v1/documents/${ids[0]}`);
      expect(mid.body.status).not.toBe('failed');
    } finally {
      servers('start', 'opensearch');
    }
    await waitAll(ids, 'indexed', 300_000);
    let registryChunks = 0;
    for (const id of ids) registryChunks += (await call<{ chunks: number }>('GET', `/v1/documents/${id}`)).body.chunks;
    expect((await milvus.count()) - before.milvus).toBe(registryChunks);
    expect((await opensearch.count()) - before.keyword).toBe(registryChunks);
  }, 600_000);

  it('answers from one store, degraded, while the other is stopped, and whole again once it is back', async () => {
    const ask = () =>
      call<{ refused: boolean; degraded: string[]; citations: { document_id: string }[] }>('POST', '/v1/query', { question: 'Which Mach number was model number 1 tested at?' });

    const d = doc(1);
    expect((await call('POST', '/v1/documents', d)).status).toBe(202);
    await waitAll([d.id], 'indexed');
    const healthy = await ask();
    expect(healthy.body.degraded).toEqual([]);
    expect(healthy.body.citations[0]!.document_id).toBe(d.id);

    servers('stop', 'milvus');
    try {
      const a = await ask();
      expect(a.status).toBe(200);
      expect(a.body.degraded).toContain('dense');
      expect(a.body.citations[0]!.document_id).toBe('doc-1');
    } finally {
      servers('start', 'milvus');
    }
    const deadline = Date.now() + 90_000;
    let whole = await ask();
    while (whole.body.degraded.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 2000));
      whole = await ask();
    }
    expect(whole.body.degraded).toEqual([]);

    servers('stop', 'opensearch');
    try {
      const b = await ask();
      expect(b.status).toBe(200);
      expect(b.body.degraded).toContain('keyword');
      expect(b.body.citations.length).toBeGreaterThan(0);
    } finally {
      servers('start', 'opensearch');
    }
    const deadline2 = Date.now() + 90_000;
    let whole2 = await ask();
    while (whole2.body.degraded.length && Date.now() < deadline2) {
      await new Promise((r) => setTimeout(r, 2000));
      whole2 = await ask();
    }
    expect(whole2.body.degraded).toEqual([]);
  }, 400_000);
});
