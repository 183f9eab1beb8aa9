/**
 * Reliability of the distributed shape: a stage killed with SIGKILL mid-ingestion, and each store stopped and
 * restarted under live queries. Not part of CI yet (see the README: known to fail, under investigation).
 */
import { call, doc, milvus, opensearch, servers, services, startService, useDistributedPlatform, waitAll, waitHealthy } from '../infra/distributed-harness';

describe('distributed mode reliability', () => {
  useDistributedPlatform();

  it('indexes every one of 500 documents exactly once when the embedder is killed with SIGKILL mid-ingestion', async () => {
    const ids = Array.from({ length: 500 }, (_, i) => `bulk-${i}`);
    for (let i = 0; i < 500; i += 100) {
      const r = await call<{ accepted: unknown[] }>('POST', '/v1/documents:batch', { documents: ids.slice(i, i + 100).map((id, j) => ({ ...doc(i + j + 100), id })) });
      expect(r.body.accepted).toHaveLength(100);
    }
    const emb = services.find((s) => s.name === 'embedder')!;
    await new Promise((r) => setTimeout(r, 1500));
    emb.proc!.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1000));
    startService(emb);
    await waitHealthy(emb.port);
    await waitAll(ids, 'indexed', 300_000);

    let registryChunks = 0;
    for (const id of ids) registryChunks += (await call<{ chunks: number }>('GET', `/v1/documents/${id}`)).body.chunks;
    let milvusChunks = 0;
    let keywordChunks = 0;
    for (const id of ids) {
      milvusChunks += await milvus.count(id);
      keywordChunks += await opensearch.count(id);
    }
    expect(registryChunks).toBeGreaterThanOrEqual(500);
    expect(milvusChunks).toBe(registryChunks);
    expect(keywordChunks).toBe(registryChunks);
  }, 400_000);

  it('answers from one store, degraded, while the other is stopped, and whole again once it is back', async () => {
    const ask = () =>
      call<{ refused: boolean; degraded: string[]; citations: { document_id: string }[] }>('POST', '/v1/query', { question: 'Which Mach number was model number 1 tested at?' });

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
