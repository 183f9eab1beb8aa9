import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { ClientGrpcProxy } from '@nestjs/microservices';
import { firstValueFrom, type Observable } from 'rxjs';
import { QueryOrchestrator, type RetrieveCall, type RetrieveRequest } from '@rag/application';
import type { RagV1, ScoredChunk } from '@rag/contracts';
import { AppError, setLogLevel } from '@rag/platform';
import { checkHealth, createLocalQueryPath, freePort, scriptedLlm, serveGrpc, watchHealth, type TestGrpcServer } from './grpc-test-fixtures';
import { createGrpcClient, GrpcGenerateClient, GrpcQueryEmbeddingClient, GrpcRerankClient, GrpcRetrieveClient } from './query-path.grpc.client';

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

/** ClientGrpc proxies opened by a test, closed after it. */
const opened: ClientGrpcProxy[] = [];
const grpcClient = (address: string): ClientGrpcProxy => {
  const c = createGrpcClient(address);
  opened.push(c);
  return c;
};
afterEach(() => {
  for (const c of opened.splice(0)) c.close();
});

/** A raw generated-interface call (no mapping, no validation on the client side): the server's status as the error. */
function rawCall<Res>(start: () => Observable<Res>): Promise<ServiceError> {
  return firstValueFrom(start()).then(
    () => Promise.reject(new Error('expected an error')),
    (err: ServiceError) => err,
  );
}

describe('query path over gRPC (real Transport.GRPC servers around the real local services, ClientGrpc clients)', () => {
  let local: Awaited<ReturnType<typeof createLocalQueryPath>>;
  let servers: Record<'embedder' | 'retriever' | 'reranker' | 'generator', TestGrpcServer>;
  let clients: { embedding: GrpcQueryEmbeddingClient; retrieve: GrpcRetrieveClient; rerank: GrpcRerankClient; generate: GrpcGenerateClient };
  const proxies: ClientGrpcProxy[] = [];
  const client = (address: string) => {
    const c = createGrpcClient(address);
    proxies.push(c);
    return c;
  };

  beforeAll(async () => {
    local = await createLocalQueryPath();
    servers = {
      embedder: await serveGrpc('embedder', local.embedder),
      retriever: await serveGrpc('retriever', local.retriever),
      reranker: await serveGrpc('reranker', local.reranker),
      generator: await serveGrpc('generator', local.generator),
    };
    clients = {
      embedding: new GrpcQueryEmbeddingClient(client(servers.embedder.address), 5_000),
      retrieve: new GrpcRetrieveClient(client(servers.retriever.address), 5_000),
      rerank: new GrpcRerankClient(client(servers.reranker.address), 5_000, false),
      generate: new GrpcGenerateClient(client(servers.generator.address), 5_000),
    };
  });

  afterAll(async () => {
    for (const c of proxies) c.close();
    for (const s of Object.values(servers ?? {})) await s.close();
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
    // The verified statements cross the wire too (GenerateChunk.statements).
    expect(a.statements.length).toBeGreaterThan(0);
    expect(a.statements).toEqual(b.statements);
    expect(a.citations[0]?.document_id).toBe('wing');
    expect(a.degraded.sort()).toEqual(b.degraded.sort());
    const refused = await overGrpc.answer({ question: 'Who won the football world cup in 2010?' }, scope);
    expect(refused.refused).toBe(true);
  });

  it('reranks (pass-through and degraded without a reranker) and learns availability from the server', async () => {
    const { results } = await local.retriever.retrieve({ ...baseRetrieve, mode: 'keyword' });
    // configured as if the deployment had a reranker; the server says it has none
    const client = new GrpcRerankClient(grpcClient(servers.reranker.address), 5_000, true);
    expect(client.available).toBe(true);
    const r = await client.rerank('supersonic flow', results, 2);
    expect(r.results).toEqual(contract(results.slice(0, 2)));
    expect(r.degraded).toEqual(['reranker']);
    expect(client.available).toBe(false);
  });

  it('streams Generate deltas in order and ends with the final outcome and the evidence', async () => {
    const llm = scriptedLlm(['Crossflow ', 'vortices ', 'destabilise it [1].']);
    const withLlm = await createLocalQueryPath({ llm });
    const server = await serveGrpc('generator', withLlm.generator);
    const client = new GrpcGenerateClient(grpcClient(server.address), 5_000);
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
      expect(remote.statements).toEqual([expect.objectContaining({ text: 'Crossflow vortices destabilise it.', source_ids: [1] })]);
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
      await server.close();
      await withLlm.close();
    }
  });

  it('rejects bad filters, a bad mode and a missing scope with INVALID_ARGUMENT (invalid_request on the client)', async () => {
    const raw = grpcClient(servers.retriever.address).getService<RagV1.RetrieverClient>('Retriever');
    const base: RagV1.RetrieveRequest = { query: 'q', vector: [], top_k: 5, candidates: 10, filters_json: '', mode: 'hybrid', scope: { tenant: 'default', principals: [], unrestricted: true } };
    const call = (req: Partial<RagV1.RetrieveRequest>) => rawCall(() => raw.retrieve({ ...base, ...req }, new Metadata()));
    {
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
    }
  });

  it('rejects an empty Embed request with INVALID_ARGUMENT', async () => {
    const raw = grpcClient(servers.embedder.address).getService<RagV1.EmbedderClient>('Embedder');
    const err = await rawCall(() => raw.embed({ texts: [], input_type: 'query' }));
    expect(err.code).toBe(status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/texts must not be empty/);
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
    const server = await serveGrpc('retriever', slowRetriever(2_000, seen));
    const client = new GrpcRetrieveClient(grpcClient(server.address), 150);
    try {
      const started = Date.now();
      await expectAppError(client.retrieve(baseRetrieve), 'deadline_exceeded');
      expect(Date.now() - started).toBeLessThan(1_500);
      await vi.waitFor(() => expect(seen.aborted).toBe(true));
    } finally {
      await server.close();
    }
  });

  it("cancels the call when the caller's AbortSignal fires", async () => {
    const seen = { aborted: false };
    const server = await serveGrpc('retriever', slowRetriever(2_000, seen));
    const client = new GrpcRetrieveClient(grpcClient(server.address), 10_000);
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
      await server.close();
    }
  });

  it('reports unavailable when the server is down, for unary and streaming calls', async () => {
    const port = await freePort();
    const down = grpcClient(`127.0.0.1:${port}`);
    await expectAppError(new GrpcRetrieveClient(down, 3_000).retrieve(baseRetrieve), 'unavailable');
    await expectAppError(new GrpcGenerateClient(down, 3_000).generate('q', []), 'unavailable');
    await expectAppError(new GrpcQueryEmbeddingClient(down, 3_000).embedQuery('q'), 'unavailable');
  });

  it('keeps the server-side AppError code (not_found, internal) across the wire', async () => {
    let error: unknown = new AppError('not_found', 'no such index');
    const failing: RetrieveCall = { retrieve: async () => Promise.reject(error) };
    const server = await serveGrpc('retriever', failing);
    const client = new GrpcRetrieveClient(grpcClient(server.address), 5_000);
    try {
      const e = await expectAppError(client.retrieve(baseRetrieve), 'not_found');
      expect(e.message).toMatch(/no such index/);
      error = new Error('disk on fire');
      await expectAppError(client.retrieve(baseRetrieve), 'internal');
      error = new AppError('unavailable', 'opensearch is down');
      await expectAppError(client.retrieve(baseRetrieve), 'unavailable');
    } finally {
      await server.close();
    }
  });

  it('on shutdown: health turns NOT_SERVING first, the in-flight call still answers, then the port closes', async () => {
    let release!: () => void;
    const seen = { started: false };
    const held: RetrieveCall = {
      retrieve: () =>
        new Promise((resolve) => {
          seen.started = true;
          release = () => resolve({ results: [], degraded: ['keyword'], timings_ms: {} });
        }),
    };
    const server = await serveGrpc('retriever', held);
    const watch = watchHealth(server.address, 'rag.v1.Retriever');
    try {
      await vi.waitFor(() => expect(watch.statuses).toEqual(['SERVING']));
      const inFlight = new GrpcRetrieveClient(grpcClient(server.address), 10_000).retrieve(baseRetrieve);
      await vi.waitFor(() => expect(seen.started).toBe(true));
      const drained = server.health.drain(2_000);
      await vi.waitFor(() => expect(watch.statuses).toEqual(['SERVING', 'NOT_SERVING']));
      release();
      expect((await inFlight).degraded).toEqual(['keyword']);
      watch.close();
      await drained;
      await expect(checkHealth(server.address, '', 500)).rejects.toBeDefined();
    } finally {
      watch.close();
      await server.close();
    }
  });

  it('on shutdown: a call still running when the configured grace ends is cancelled, and the server stops', async () => {
    let started = false;
    const stuck: RetrieveCall = {
      retrieve: () => {
        started = true;
        return new Promise(() => undefined); // a call that would outlive any grace (a slow LLM answer)
      },
    };
    const server = await serveGrpc('retriever', stuck, { drainGraceMs: 200 }); // RAG_GRPC_SHUTDOWN_GRACE_MS
    try {
      const inFlight = new GrpcRetrieveClient(grpcClient(server.address), 30_000).retrieve(baseRetrieve).then(
        () => 'answered',
        (e: unknown) => e,
      );
      await vi.waitFor(() => expect(started).toBe(true));
      await server.health.beforeApplicationShutdown(); // what Nest calls on SIGTERM, with the configured grace
      expect(await inFlight).toBeInstanceOf(Error);
      await expect(checkHealth(server.address, '', 500)).rejects.toBeDefined();
    } finally {
      await server.close();
    }
  });

  it("follows the process's readiness: NOT_SERVING while a dependency is down, SERVING again once it is back", async () => {
    const state = { ok: true };
    const server = await serveGrpc('retriever', { retrieve: async () => ({ results: [], degraded: [], timings_ms: {} }) }, { readiness: { readiness: async () => state }, pollMs: 20 });
    const watch = watchHealth(server.address, 'rag.v1.Retriever');
    try {
      await vi.waitFor(() => expect(watch.statuses).toEqual(['SERVING']));
      state.ok = false; // e.g. OpenSearch stopped: /readyz answers 503
      await vi.waitFor(() => expect(watch.statuses).toEqual(['SERVING', 'NOT_SERVING']));
      expect(await checkHealth(server.address)).toBe('NOT_SERVING');
      state.ok = true;
      await vi.waitFor(() => expect(watch.statuses).toEqual(['SERVING', 'NOT_SERVING', 'SERVING']));
      expect(await checkHealth(server.address, 'rag.v1.Retriever')).toBe('SERVING');
    } finally {
      watch.close();
      await server.close();
    }
  });

  it('spreads calls round-robin over every address of one target and keeps answering when a replica dies', async () => {
    const served = { a: 0, b: 0 };
    const replica = (name: 'a' | 'b'): RetrieveCall => ({
      retrieve: async () => {
        served[name] += 1;
        return { results: [], degraded: [], timings_ms: { [name]: 1 } };
      },
    });
    const a = await serveGrpc('retriever', replica('a'));
    const b = await serveGrpc('retriever', replica('b'));
    try {
      // one name, two addresses (as a headless Service's DNS name resolves to every pod)
      const client = new GrpcRetrieveClient(grpcClient(`ipv4:${a.address},${b.address}`), 5_000);
      for (let i = 0; i < 20; i++) await client.retrieve(baseRetrieve);
      expect(served.a + served.b).toBe(20);
      expect(served.a).toBeGreaterThan(0);
      expect(served.b).toBeGreaterThan(0);
      await a.close();
      const before = { ...served };
      for (let i = 0; i < 20; i++) expect((await client.retrieve(baseRetrieve)).timings_ms).toEqual({ b: 1 });
      expect(served).toEqual({ a: before.a, b: before.b + 20 });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('turns a server that stops mid-stream into an error, not a truncated answer', async () => {
    const server = await serveGrpc('generator', {
      generate: async (_q, _s, onDelta) => {
        onDelta?.('partial ');
        throw new AppError('unavailable', 'llm gone');
      },
    });
    const client = new GrpcGenerateClient(grpcClient(server.address), 5_000);
    try {
      const deltas: string[] = [];
      await expectAppError(
        client.generate('q', [], (d) => deltas.push(d)),
        'unavailable',
      );
      expect(deltas).toEqual(['partial ']);
    } finally {
      await server.close();
    }
  });
});
