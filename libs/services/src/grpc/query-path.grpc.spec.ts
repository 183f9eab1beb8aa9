import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { QueryOrchestrator, type RetrieveCall, type RetrieveRequest } from '@rag/application';
import { RagV1, type ScoredChunk } from '@rag/contracts';
import { AppError, setLogLevel } from '@rag/platform';
import { checkHealth } from './health';
import { createLocalQueryPath, freePort, scriptedLlm } from './grpc-test-fixtures';
import { queryPathBinding, startGrpcServer, type RunningGrpcServer } from './grpc-server';
import { GrpcGenerateClient, GrpcQueryEmbeddingClient, GrpcRerankClient, GrpcRetrieveClient } from './query-path.grpc.client';

setLogLevel('silent');

const scope = { tenant: 'default' };
const baseRetrieve: RetrieveRequest = { query: 'supersonic flow', top_k: 5, candidates: 20, mode: 'hybrid', scope };

/** The ScoredChunk contract only (the local retriever also leaks its internal `parent_id`, which is not on the wire). */
const contract = (chunks: ScoredChunk[]): ScoredChunk[] =>
  chunks.map(({ chunk_id, document_id, title, text, score, parent_text, source_url, heading_path }) => ({
    chunk_id,
    document_id,
    title,
    text,
    score,
    heading_path,
    ...(parent_text !== undefined ? { parent_text } : {}),
    ...(source_url !== undefined ? { source_url } : {}),
  }));

async function expectAppError(p: Promise<unknown>, code: string): Promise<AppError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(AppError);
  expect((e as AppError).code).toBe(code);
  return e as AppError;
}

describe('query path over gRPC (real grpc-js servers around the real local services)', () => {
  let local: Awaited<ReturnType<typeof createLocalQueryPath>>;
  let servers: Record<'embedder' | 'retriever' | 'reranker' | 'generator', RunningGrpcServer>;
  let clients: { embedding: GrpcQueryEmbeddingClient; retrieve: GrpcRetrieveClient; rerank: GrpcRerankClient; generate: GrpcGenerateClient };

  beforeAll(async () => {
    local = await createLocalQueryPath();
    const serve = (b: ReturnType<typeof queryPathBinding>) => startGrpcServer({ host: '127.0.0.1', port: 0, services: [b] });
    servers = {
      embedder: await serve(queryPathBinding('embedder', local.embedder)),
      retriever: await serve(queryPathBinding('retriever', local.retriever)),
      reranker: await serve(queryPathBinding('reranker', local.reranker)),
      generator: await serve(queryPathBinding('generator', local.generator)),
    };
    clients = {
      embedding: new GrpcQueryEmbeddingClient({ address: servers.embedder.address, deadlineMs: 5_000 }),
      retrieve: new GrpcRetrieveClient({ address: servers.retriever.address, deadlineMs: 5_000 }),
      rerank: new GrpcRerankClient({ address: servers.reranker.address, deadlineMs: 5_000, available: false }),
      generate: new GrpcGenerateClient({ address: servers.generator.address, deadlineMs: 5_000 }),
    };
  });

  afterAll(async () => {
    for (const c of Object.values(clients ?? {})) c.close();
    for (const s of Object.values(servers ?? {})) await s.close(100);
    await local?.close();
  });

  it('embeds a query exactly as the local embedder does', async () => {
    const remote = await clients.embedding.embedQuery('oblique shocks');
    const [direct] = await local.embedder.embed(['oblique shocks'], 'query');
    expect(remote).toBeInstanceOf(Float32Array);
    expect(Array.from(remote)).toEqual(Array.from(direct!));
  });

  it('retrieves the same results as the local retriever, with filters and scope carried over', async () => {
    const vector = await local.embedding.embedQuery('supersonic flow');
    const req = { ...baseRetrieve, vector };
    const remote = await clients.retrieve.retrieve(req);
    const direct = await local.retriever.retrieve(req);
    expect(remote.results).toEqual(contract(direct.results));
    expect(remote.degraded).toEqual(direct.degraded);
    expect(Object.keys(remote.timings_ms).sort()).toEqual(Object.keys(direct.timings_ms).sort());

    const filtered = await clients.retrieve.retrieve({ ...req, filters: { team: 'structures' } });
    expect(filtered.results.map((r) => r.document_id)).toEqual(['flutter']);
    const otherTenant = await clients.retrieve.retrieve({ ...req, scope: { tenant: 'nobody' } });
    expect(otherTenant.results).toEqual([]);
    const noPrincipals = await clients.retrieve.retrieve({ ...req, scope: { tenant: 'default', principals: ['group:none'] } });
    const directNoPrincipals = await local.retriever.retrieve({ ...req, scope: { tenant: 'default', principals: ['group:none'] } });
    expect(noPrincipals.results).toEqual(contract(directNoPrincipals.results));
    const keywordOnly = await clients.retrieve.retrieve({ ...baseRetrieve, mode: 'keyword' });
    expect(keywordOnly.degraded).toEqual([]);
    expect(keywordOnly.results.length).toBeGreaterThan(0);
  });

  it('answers through QueryOrchestrator over gRPC exactly as over local calls', async () => {
    const opts = { topK: 3, candidates: 20, deadlineMs: 5_000 };
    const overGrpc = new QueryOrchestrator(clients.embedding, clients.retrieve, clients.rerank, clients.generate, opts);
    const direct = new QueryOrchestrator(local.embedding, local.retriever, local.reranker, local.generator, opts);
    const q = { question: 'What makes the boundary layer on a swept wing unstable?' };
    const a = await overGrpc.answer(q, scope);
    const b = await direct.answer(q, scope);
    expect(a.answer).toBe(b.answer);
    expect(a.refused).toBe(false);
    expect(a.citations).toEqual(b.citations);
    expect(a.citations[0]?.document_id).toBe('wing');
    expect(a.degraded.sort()).toEqual(b.degraded.sort());
    const refused = await overGrpc.answer({ question: 'Who won the football world cup in 2010?' }, scope);
    expect(refused.refused).toBe(true);
  });

  it('reranks (pass-through and degraded without a reranker) and learns availability from the server', async () => {
    const { results } = await local.retriever.retrieve({ ...baseRetrieve, mode: 'keyword' });
    // configured as if the deployment had a reranker; the server says it has none
    const client = new GrpcRerankClient({ address: servers.reranker.address, deadlineMs: 5_000, available: true });
    try {
      expect(client.available).toBe(true);
      const r = await client.rerank('supersonic flow', results, 2);
      expect(r.results).toEqual(contract(results.slice(0, 2)));
      expect(r.degraded).toEqual(['reranker']);
      expect(client.available).toBe(false);
    } finally {
      client.close();
    }
  });

  it('streams Generate deltas in order and ends with the final outcome and the evidence', async () => {
    const llm = scriptedLlm(['Crossflow ', 'vortices ', 'destabilise it [1].']);
    const withLlm = await createLocalQueryPath({ llm });
    const server = await startGrpcServer({ host: '127.0.0.1', port: 0, services: [queryPathBinding('generator', withLlm.generator)] });
    const client = new GrpcGenerateClient({ address: server.address, deadlineMs: 5_000 });
    try {
      const { results } = await withLlm.retriever.retrieve({ ...baseRetrieve, query: 'swept wing boundary layer crossflow', mode: 'keyword' });
      const deltas: string[] = [];
      const question = 'What makes the boundary layer on a swept wing unstable?';
      const remote = await client.generate(question, results, (d) => deltas.push(d));
      const direct = await withLlm.generator.generate(question, results);
      expect(deltas).toEqual(['Crossflow ', 'vortices ', 'destabilise it [1].']);
      expect(remote).toEqual(direct);
      expect(remote.answer).toBe('Crossflow vortices destabilise it [1].');
      expect(remote.cited_refs).toEqual([1]);
      expect(remote.evidence).toBeGreaterThan(0);
      // extractive (no LLM) and refusal paths through the default server
      const extractive: string[] = [];
      const ex = await clients.generate.generate(question, results, (d) => extractive.push(d));
      expect(ex.refused).toBe(false);
      expect(extractive.join('')).toBe(ex.answer);
      const refusal = await clients.generate.generate('Who won the football world cup in 2010?', results);
      expect(refusal.refused).toBe(true);
      expect(refusal.cited_refs).toEqual([]);
    } finally {
      client.close();
      await server.close(100);
      await withLlm.close();
    }
  });

  it('rejects bad filters, a bad mode and a missing scope with INVALID_ARGUMENT (invalid_request on the client)', async () => {
    const raw = new RagV1.RetrieverClient(servers.retriever.address, credentials.createInsecure());
    const call = (req: Partial<RagV1.RetrieveRequest>) =>
      new Promise<ServiceError>((resolve, reject) =>
        raw.retrieve(
          RagV1.RetrieveRequest.fromPartial({ query: 'q', top_k: 5, candidates: 10, mode: 'hybrid', scope: { tenant: 'default', unrestricted: true }, ...req }),
          new Metadata(),
          { deadline: Date.now() + 5_000 },
          (err) => (err ? resolve(err) : reject(new Error('expected an error'))),
        ),
      );
    try {
      for (const bad of [
        { filters_json: 'not json' },
        { filters_json: '{"bad key!": 1}' },
        { filters_json: '{"team": {"gte": "x"}}' },
        { filters_json: '{"tenant": "b"}' },
        { mode: 'semantic' },
        { scope: undefined },
        { top_k: 0 },
      ]) {
        const err = await call(bad);
        expect(err.code, JSON.stringify(bad)).toBe(status.INVALID_ARGUMENT);
      }
      expect((await call({ filters_json: 'not json' })).details).toMatch(/filters_json/);
      const e = await expectAppError(clients.retrieve.retrieve({ ...baseRetrieve, filters: { 'bad key!': 'x' } }), 'invalid_request');
      expect(e.message).toMatch(/bad key!/);
    } finally {
      raw.close();
    }
  });

  it('rejects an empty Embed request with INVALID_ARGUMENT', async () => {
    const raw = new RagV1.EmbedderClient(servers.embedder.address, credentials.createInsecure());
    try {
      const err = await new Promise<ServiceError | null>((resolve) => raw.embed({ texts: [], input_type: 'query' }, (e) => resolve(e)));
      expect(err?.code).toBe(status.INVALID_ARGUMENT);
    } finally {
      raw.close();
    }
  });

  it('serves grpc.health.v1 for the server and each service', async () => {
    expect(await checkHealth(servers.retriever.address)).toBe('SERVING');
    expect(await checkHealth(servers.retriever.address, 'rag.v1.Retriever')).toBe('SERVING');
    await expect(checkHealth(servers.retriever.address, 'rag.v1.Nope')).rejects.toMatchObject({ code: status.NOT_FOUND });
  });
});

describe('gRPC failures as AppErrors', () => {
  const slowRetriever = (ms: number, seen: { aborted: boolean }): RetrieveCall => ({
    retrieve: (_req, signal) =>
      new Promise((resolve) => {
        const t = setTimeout(() => resolve({ results: [], degraded: [], timings_ms: {} }), ms);
        signal?.addEventListener('abort', () => {
          seen.aborted = true;
          clearTimeout(t);
        });
      }),
  });

  it('reports deadline_exceeded when the call outlives its deadline, and the server sees the cancellation', async () => {
    const seen = { aborted: false };
    const server = await startGrpcServer({ host: '127.0.0.1', port: 0, services: [queryPathBinding('retriever', slowRetriever(2_000, seen))] });
    const client = new GrpcRetrieveClient({ address: server.address, deadlineMs: 150 });
    try {
      const started = Date.now();
      await expectAppError(client.retrieve(baseRetrieve), 'deadline_exceeded');
      expect(Date.now() - started).toBeLessThan(1_500);
      await vi.waitFor(() => expect(seen.aborted).toBe(true));
    } finally {
      client.close();
      await server.close(100);
    }
  });

  it("cancels the call when the caller's AbortSignal fires", async () => {
    const seen = { aborted: false };
    const server = await startGrpcServer({ host: '127.0.0.1', port: 0, services: [queryPathBinding('retriever', slowRetriever(2_000, seen))] });
    const client = new GrpcRetrieveClient({ address: server.address, deadlineMs: 10_000 });
    try {
      const ac = new AbortController();
      setTimeout(() => ac.abort(new AppError('deadline_exceeded', 'retrieval did not finish within 100 ms')), 100);
      const e = await expectAppError(client.retrieve(baseRetrieve, ac.signal), 'deadline_exceeded');
      expect(e.message).toMatch(/within 100 ms/);
      await vi.waitFor(() => expect(seen.aborted).toBe(true));
      const pre = new AbortController();
      pre.abort();
      await expectAppError(client.retrieve(baseRetrieve, pre.signal), 'deadline_exceeded');
    } finally {
      client.close();
      await server.close(100);
    }
  });

  it('reports unavailable when the server is down, for unary and streaming calls', async () => {
    const port = await freePort();
    const retrieve = new GrpcRetrieveClient({ address: `127.0.0.1:${port}`, deadlineMs: 3_000 });
    const generate = new GrpcGenerateClient({ address: `127.0.0.1:${port}`, deadlineMs: 3_000 });
    const embed = new GrpcQueryEmbeddingClient({ address: `127.0.0.1:${port}`, deadlineMs: 3_000 });
    try {
      await expectAppError(retrieve.retrieve(baseRetrieve), 'unavailable');
      await expectAppError(generate.generate('q', []), 'unavailable');
      await expectAppError(embed.embedQuery('q'), 'unavailable');
    } finally {
      retrieve.close();
      generate.close();
      embed.close();
    }
  });

  it('keeps the server-side AppError code (not_found, internal) across the wire', async () => {
    let error: unknown = new AppError('not_found', 'no such index');
    const failing: RetrieveCall = { retrieve: async () => Promise.reject(error) };
    const server = await startGrpcServer({ host: '127.0.0.1', port: 0, services: [queryPathBinding('retriever', failing)] });
    const client = new GrpcRetrieveClient({ address: server.address, deadlineMs: 5_000 });
    try {
      const e = await expectAppError(client.retrieve(baseRetrieve), 'not_found');
      expect(e.message).toMatch(/no such index/);
      error = new Error('disk on fire');
      await expectAppError(client.retrieve(baseRetrieve), 'internal');
      error = new AppError('unavailable', 'opensearch is down');
      await expectAppError(client.retrieve(baseRetrieve), 'unavailable');
    } finally {
      client.close();
      await server.close(100);
    }
  });

  it('turns a server that stops mid-stream into an error, not a truncated answer', async () => {
    const server = await startGrpcServer({
      host: '127.0.0.1',
      port: 0,
      services: [
        queryPathBinding('generator', {
          generate: async (_q, _s, onDelta) => {
            onDelta?.('partial ');
            throw new AppError('unavailable', 'llm gone');
          },
        }),
      ],
    });
    const client = new GrpcGenerateClient({ address: server.address, deadlineMs: 5_000 });
    try {
      const deltas: string[] = [];
      await expectAppError(
        client.generate('q', [], (d) => deltas.push(d)),
        'unavailable',
      );
      expect(deltas).toEqual(['partial ']);
    } finally {
      client.close();
      await server.close(100);
    }
  });
});
