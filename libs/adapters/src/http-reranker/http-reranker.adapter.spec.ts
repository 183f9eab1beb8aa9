import type { ScoredChunk } from '@rag/contracts';
import { AppError } from '@rag/platform';
import { type RecordedRequest, type Reply, type TestServer, startTestServer } from '../http-embedder/test-server';
import { HttpReranker, type RerankFlavor } from './http-reranker.adapter';

function chunk(id: string, text: string): ScoredChunk {
  return { chunk_id: `${id}#v1#0`, document_id: id, title: `T ${id}`, text, score: 0.01, heading_path: [] };
}
const CANDIDATES = [chunk('a', 'apples'), chunk('b', 'password reset steps'), chunk('c', 'password rules'), chunk('d', 'lunch menu')];
/** The fake services score by how many query words a text contains, plus a little for shorter texts. */
const relevance = (query: string, text: string) => query.split(' ').filter((w) => text.includes(w)).length + 1 / (1 + text.length);

function tei(req: RecordedRequest): Reply {
  const body = req.body as { query: string; texts: string[] };
  const results = body.texts.map((t, index) => ({ index, score: relevance(body.query, t) }));
  return { json: results.sort((x, y) => y.score - x.score) }; // TEI answers best first
}

function cohereLike(req: RecordedRequest): Reply {
  const body = req.body as { query: string; documents: string[]; top_n: number };
  const results = body.documents
    .map((t, index) => ({ index, relevance_score: relevance(body.query, t) / 3 }))
    .sort((x, y) => y.relevance_score - x.relevance_score)
    .slice(0, body.top_n);
  return { json: { id: 'r1', results, meta: { billed_units: { search_units: 1 } } } };
}

describe('HttpReranker', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('speaks TEI: POST /rerank {query, texts} → [{index, score}]', async () => {
    server = await startTestServer(tei);
    const r = new HttpReranker({ baseUrl: server.url }); // tei is the default flavor
    const out = await r.rerank('password reset', CANDIDATES, 2);

    expect(r.id).toBe('http-reranker:tei');
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0].path).toBe('/rerank');
    expect(server.requests[0].body).toMatchObject({ query: 'password reset', texts: ['apples', 'password reset steps', 'password rules', 'lunch menu'] });
    expect(out.map((c) => c.document_id)).toEqual(['b', 'c']);
    expect(out[0].score).toBeCloseTo(relevance('password reset', 'password reset steps'), 10);
    expect(out[0]).toMatchObject({ chunk_id: 'b#v1#0', title: 'T b', text: 'password reset steps' });
  });

  it('splits TEI requests at teiBatchSize and merges by global index', async () => {
    server = await startTestServer(tei);
    const r = new HttpReranker({ flavor: 'tei', baseUrl: server.url, teiBatchSize: 3 });
    const out = await r.rerank('password reset', CANDIDATES, 4);
    expect(server.requests.map((q) => (q.body as { texts: string[] }).texts.length)).toEqual([3, 1]);
    expect(out.map((c) => c.document_id)).toEqual(['b', 'c', 'a', 'd']);
  });

  it.each<[RerankFlavor, string]>([
    ['cohere', 'rerank-english-v3.0'],
    ['jina', 'jina-reranker-v2-base-multilingual'],
  ])('speaks %s: POST /v1/rerank {model, query, documents, top_n} → {results:[{index, relevance_score}]}', async (flavor, model) => {
    server = await startTestServer(cohereLike);
    const r = new HttpReranker({ flavor, baseUrl: `${server.url}/v1`, model, apiKey: 'key-1' });
    const out = await r.rerank('password reset', CANDIDATES, 3);

    expect(r.id).toBe(`http-reranker:${flavor}:${model}`);
    const req = server.requests[0];
    expect(req.path).toBe('/v1/rerank');
    expect(req.headers.authorization).toBe('Bearer key-1');
    expect(req.body).toMatchObject({ model, query: 'password reset', documents: CANDIDATES.map((c) => c.text), top_n: 3 });
    expect(out.map((c) => c.document_id)).toEqual(['b', 'c', 'a']);
    expect(out[0].score).toBeCloseTo(relevance('password reset', 'password reset steps') / 3, 10);
  });

  it('adds the title when asked', async () => {
    server = await startTestServer(tei);
    await new HttpReranker({ flavor: 'tei', baseUrl: server.url, includeTitle: true }).rerank('q', [chunk('a', 'body')], 1);
    expect((server.requests[0].body as { texts: string[] }).texts).toEqual(['T a\nbody']);
  });

  it('sends nothing for no candidates or topN 0', async () => {
    server = await startTestServer(tei);
    const r = new HttpReranker({ flavor: 'tei', baseUrl: server.url });
    expect(await r.rerank('q', [], 5)).toEqual([]);
    expect(await r.rerank('q', CANDIDATES, 0)).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('times out a slow service with deadline_exceeded', async () => {
    server = await startTestServer((req) => ({ ...tei(req), delayMs: 2000 }));
    const r = new HttpReranker({ flavor: 'tei', baseUrl: server.url, timeoutMs: 100, maxRetries: 0 });
    const t0 = Date.now();
    const err = await r.rerank('q', CANDIDATES, 2).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('deadline_exceeded');
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('retries a 503 once by default, then succeeds', async () => {
    server = await startTestServer((req, n) => (n === 1 ? { status: 503, headers: { 'retry-after': '0' }, text: 'loading model' } : cohereLike(req)));
    const r = new HttpReranker({ flavor: 'jina', baseUrl: server.url, model: 'm' });
    expect(await r.rerank('password', CANDIDATES, 1)).toHaveLength(1);
    expect(server.requests).toHaveLength(2);
  });

  it('rejects an unexpected answer shape or an out-of-range index', async () => {
    server = await startTestServer((_req, n) => (n === 1 ? { json: { results: [{ index: 0, score: 1 }] } } : { json: { results: [{ index: 9, relevance_score: 1 }] } }));
    const r = new HttpReranker({ flavor: 'cohere', baseUrl: server.url, model: 'm', maxRetries: 0 });
    await expect(r.rerank('q', CANDIDATES, 2)).rejects.toThrow(/unexpected shape \(want \{results:\[\{index, relevance_score\}\]\}\)/);
    await expect(r.rerank('q', CANDIDATES, 2)).rejects.toThrow(/returned index 9 for 4 texts/);
  });

  it('validates its options', () => {
    expect(() => new HttpReranker({ flavor: 'cohere', baseUrl: 'http://127.0.0.1:1' })).toThrow(/needs a model/);
    expect(() => new HttpReranker({ flavor: 'voyage' as RerankFlavor, baseUrl: 'http://127.0.0.1:1' })).toThrow(/unknown rerank flavor voyage/);
  });
});
