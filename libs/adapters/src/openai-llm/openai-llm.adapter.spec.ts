import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AppError, metrics } from '@rag/platform';
import type { ChatMessage, LlmUsage } from '@rag/ports';
import { OpenAiCompatibleLlm, OpenAiLlmError } from './openai-llm.adapter';

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: Record<string, unknown>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, seen: Seen) => void | Promise<void>;

let server: Server | undefined;
let seen: Seen[] = [];
let closed: Promise<void>[] = [];

async function serve(handler: Handler): Promise<string> {
  seen = [];
  closed = [];
  server = createServer((req, res) => {
    closed.push(new Promise((resolve) => res.on('close', () => resolve())));
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const s: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: raw ? (JSON.parse(raw) as Record<string, unknown>) : {} };
      seen.push(s);
      void handler(req, res, s);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}/v1`;
}

afterEach(async () => {
  if (!server) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server!.close(() => resolve()));
  server = undefined;
});

const messages: ChatMessage[] = [
  { role: 'system', content: 'Answer from the sources.' },
  { role: 'user', content: '升力是什么？' },
];

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const piece of it) out.push(piece);
  return out;
}

const sse = (obj: unknown) => `data: ${JSON.stringify(obj)}\n\n`;
const delta = (content: string, finish: string | null = null) => sse({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content }, finish_reason: finish }] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function writeInPieces(res: ServerResponse, payload: Buffer, sizes: number[]): Promise<void> {
  let at = 0;
  let i = 0;
  while (at < payload.length) {
    const size = sizes[i++ % sizes.length]!;
    res.write(payload.subarray(at, at + size));
    at += size;
    await sleep(1);
  }
  res.end();
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error('expected a rejection');
}

describe('OpenAiCompatibleLlm.stream', () => {
  it('streams the SSE wire format split at odd byte boundaries, with usage, and sends the documented request', async () => {
    const payload = Buffer.from(
      ': keep-alive\r\n\r\n' +
        sse({ choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] }).replace(/\n/g, '\r\n') +
        delta('升力是') +
        delta('垂直于来流的力 [1]') +
        delta('。 Lift ⟂ flow.') +
        delta('', 'stop') +
        sse({ choices: [], usage: { prompt_tokens: 42, completion_tokens: 7, total_tokens: 49 } }) +
        'data: [DONE]\n\n',
      'utf8',
    );
    const baseUrl = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // 1, 2, 5, 3 and 7 bytes: multi-byte UTF-8 characters, "data:" prefixes and CRLFs get split.
      await writeInPieces(res, payload, [1, 2, 5, 3, 7]);
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl: `${baseUrl}/`, apiKey: 'sk-test', model: 'm-1', timeoutMs: 2000 });
    const usages: LlmUsage[] = [];
    const pieces = await collect(llm.stream(messages, { maxTokens: 64, temperature: 0.1, onUsage: (u) => usages.push(u) }));

    expect(pieces.join('')).toBe('升力是垂直于来流的力 [1]。 Lift ⟂ flow.');
    expect(pieces.every((p) => p.length > 0)).toBe(true);
    expect(usages).toEqual([{ prompt_tokens: 42, completion_tokens: 7 }]);
    // Counted into rag_llm_tokens_total{kind,model}.
    const tokens = (await metrics.llmTokens.get()).values.filter((v) => v.labels.model === 'm-1');
    expect(tokens.map((v) => [v.labels.kind, v.value]).sort()).toEqual([
      ['completion', 7],
      ['prompt', 42],
    ]);
    expect(llm.id).toBe('openai:m-1');
    const req = seen[0]!;
    expect(req.method).toBe('POST');
    expect(req.url).toBe('/v1/chat/completions');
    expect(req.headers['authorization']).toBe('Bearer sk-test');
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.body).toEqual({
      model: 'm-1',
      messages,
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 64,
      temperature: 0.1,
    });
  });

  it('does not send an authorization header without a key', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(delta('ok', 'stop') + 'data: [DONE]\n\n');
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm', streamUsage: false });
    expect(await collect(llm.stream(messages, {}))).toEqual(['ok']);
    expect(seen[0]!.headers['authorization']).toBeUndefined();
    expect(seen[0]!.body).not.toHaveProperty('stream_options');
    expect(seen[0]!.body).not.toHaveProperty('max_tokens');
  });

  it('reports HTTP errors with the status and the provider message', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error' } }));
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, apiKey: 'sk-secret', model: 'm' });
    const e = await rejection(collect(llm.stream(messages, {})));
    expect(e).toBeInstanceOf(OpenAiLlmError);
    expect(e).toBeInstanceOf(AppError);
    const err = e as OpenAiLlmError;
    expect(err.code).toBe('unavailable');
    expect(err.status).toBe(500);
    expect(err.providerMessage).toBe('The server had an error while processing your request.');
    expect(err.message).toContain('HTTP 500');
    expect(err.message).toContain('The server had an error while processing your request.');
    expect(err.message).not.toContain('sk-secret');
  });

  it('maps 429 to rate_limited and reads plain-text and vLLM-style error bodies', async () => {
    let status = 429;
    const baseUrl = await serve((_req, res) => {
      if (status === 429) {
        res.writeHead(429, { 'content-type': 'text/plain' });
        res.end('slow down');
      } else {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ object: 'error', message: 'The model `m` does not exist.', code: 404 }));
      }
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    const a = (await rejection(collect(llm.stream(messages, {})))) as OpenAiLlmError;
    expect([a.code, a.status, a.providerMessage]).toEqual(['rate_limited', 429, 'slow down']);
    status = 404;
    const b = (await rejection(llm.complete(messages, {}))) as OpenAiLlmError;
    expect([b.code, b.status, b.providerMessage]).toEqual(['unavailable', 404, 'The model `m` does not exist.']);
  });

  it('times out when the server never answers', async () => {
    const baseUrl = await serve(() => {
      /* hang: never write a response */
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm', timeoutMs: 150 });
    const started = Date.now();
    const e = (await rejection(collect(llm.stream(messages, {})))) as OpenAiLlmError;
    expect(e).toBeInstanceOf(OpenAiLlmError);
    expect(e.code).toBe('deadline_exceeded');
    expect(e.message).toMatch(/timed out.*150 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
    const c = (await rejection(llm.complete(messages, {}))) as OpenAiLlmError;
    expect(c.code).toBe('deadline_exceeded');
  });

  it('times out when a stream stalls midway, after yielding what came', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(delta('first '));
      /* then silence */
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm', timeoutMs: 200 });
    const got: string[] = [];
    const e = await rejection(
      (async () => {
        for await (const p of llm.stream(messages, {})) got.push(p);
      })(),
    );
    expect(got).toEqual(['first ']);
    expect((e as OpenAiLlmError).code).toBe('deadline_exceeded');
  });

  it('uses an idle timeout: a long stream that keeps flowing is not cut', async () => {
    const baseUrl = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 6; i++) {
        res.write(delta(`${i}`));
        await sleep(60);
      }
      res.end(delta('', 'stop') + 'data: [DONE]\n\n');
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm', timeoutMs: 250 });
    expect((await collect(llm.stream(messages, {}))).join('')).toBe('012345');
  });

  it("rethrows the caller's abort reason, not a timeout", async () => {
    const baseUrl = await serve(() => {
      /* hang */
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm', timeoutMs: 5000 });
    const ac = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => ac.abort(reason), 50);
    expect(await rejection(collect(llm.stream(messages, { signal: ac.signal })))).toBe(reason);
    const pre = new AbortController();
    pre.abort(reason);
    expect(await rejection(llm.complete(messages, { signal: pre.signal }))).toBe(reason);
  });

  it('fails a stream that ends before [DONE] or a finish_reason', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(delta('cut off'));
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    const e = (await rejection(collect(llm.stream(messages, {})))) as OpenAiLlmError;
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/ended before completion/);
  });

  it('accepts a finish_reason without [DONE], and several JSON objects in one event', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' });
      res.end(`data: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'a' } }] })}\ndata: ${JSON.stringify({ choices: [{ index: 0, delta: { content: 'b' }, finish_reason: 'length' }] })}\n\n`);
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    expect((await collect(llm.stream(messages, {}))).join('')).toBe('ab');
  });

  it('throws an error event sent inside the stream', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(delta('par') + sse({ error: { message: 'model overloaded', code: 503 } }));
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    const e = (await rejection(collect(llm.stream(messages, {})))) as OpenAiLlmError;
    expect(e.message).toContain('model overloaded');
    expect(e.providerMessage).toBe('model overloaded');
  });

  it('retries once without stream_options when the server rejects it, and stops sending it', async () => {
    const baseUrl = await serve((_req, res, s) => {
      if ('stream_options' in s.body) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: "Unrecognized request argument supplied: stream_options" } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(delta('fine', 'stop') + 'data: [DONE]\n\n');
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    expect(await collect(llm.stream(messages, {}))).toEqual(['fine']);
    expect(await collect(llm.stream(messages, {}))).toEqual(['fine']);
    expect(seen.map((s) => 'stream_options' in s.body)).toEqual([true, false, false]);
  });

  it('accepts a server that ignores stream:true and answers with JSON', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: 'whole answer' }, finish_reason: 'stop' }], usage: { prompt_tokens: 3, completion_tokens: 2 } }));
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    const usages: LlmUsage[] = [];
    expect(await collect(llm.stream(messages, { onUsage: (u) => usages.push(u) }))).toEqual(['whole answer']);
    expect(usages).toEqual([{ prompt_tokens: 3, completion_tokens: 2 }]);
  });

  it('closes the connection when the consumer stops early', async () => {
    const baseUrl = await serve(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < 100 && !res.destroyed; i++) {
        res.write(delta(`${i} `));
        await sleep(20);
      }
      res.end('data: [DONE]\n\n');
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    for await (const piece of llm.stream(messages, {})) {
      expect(piece).toBe('0 ');
      break;
    }
    await expect(Promise.race([closed[0]!.then(() => 'closed'), sleep(1500).then(() => 'still open')])).resolves.toBe('closed');
  });

  it('reports a refused connection as unavailable', async () => {
    const baseUrl = await serve(() => undefined);
    server!.close();
    await sleep(20);
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm', timeoutMs: 2000 });
    const e = (await rejection(collect(llm.stream(messages, {})))) as OpenAiLlmError;
    expect(e).toBeInstanceOf(OpenAiLlmError);
    expect(e.code).toBe('unavailable');
    expect(e.message).toContain('/v1/chat/completions');
  });
});

describe('OpenAiCompatibleLlm.complete', () => {
  it('returns the text and usage of a non-streaming completion', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: 'x',
          object: 'chat.completion',
          choices: [{ index: 0, message: { role: 'assistant', content: 'Lift is perpendicular to the flow [1].' }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 10, completion_tokens: 9, total_tokens: 19 },
        }),
      );
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, apiKey: 'k', model: 'm', headers: { 'x-extra': 'yes' } });
    expect(await llm.complete(messages, { maxTokens: 5 })).toEqual({
      text: 'Lift is perpendicular to the flow [1].',
      usage: { prompt_tokens: 10, completion_tokens: 9 },
    });
    expect(seen[0]!.body).toEqual({ model: 'm', messages, stream: false, max_tokens: 5 });
    expect(seen[0]!.headers['x-extra']).toBe('yes');
    expect(seen[0]!.headers['authorization']).toBe('Bearer k');
  });

  it('omits usage when absent and treats null content as empty', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: null } }] }));
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    expect(await llm.complete(messages, {})).toEqual({ text: '' });
  });

  it('rejects a response that is not a completion', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html>login</html>');
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    const e = (await rejection(llm.complete(messages, {}))) as OpenAiLlmError;
    expect(e.code).toBe('unavailable');
    expect(e.message).toMatch(/not JSON/);
  });

  it('maps a 500 with a JSON error body', async () => {
    const baseUrl = await serve((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'boom' } }));
    });
    const llm = new OpenAiCompatibleLlm({ baseUrl, model: 'm' });
    const e = (await rejection(llm.complete(messages, {}))) as OpenAiLlmError;
    expect([e.code, e.status, e.providerMessage]).toEqual(['unavailable', 500, 'boom']);
  });
});

describe('OpenAiCompatibleLlm options', () => {
  it('validates the base URL, model and timeout', () => {
    expect(() => new OpenAiCompatibleLlm({ baseUrl: 'not a url', model: 'm' })).toThrow(AppError);
    expect(() => new OpenAiCompatibleLlm({ baseUrl: 'ftp://h/v1', model: 'm' })).toThrow(/http/);
    expect(() => new OpenAiCompatibleLlm({ baseUrl: 'http://h/v1', model: '' })).toThrow(/model/);
    expect(() => new OpenAiCompatibleLlm({ baseUrl: 'http://h/v1', model: 'm', timeoutMs: 0 })).toThrow(/timeout/);
  });
});
