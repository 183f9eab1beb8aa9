import { createServer, type IncomingMessage, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { api, removeDir, startServer, waitForStatus, type Server } from './harness';

/**
 * A local stand-in for an OpenAI-compatible provider (the one boundary we cannot reach from here), speaking the
 * documented chat-completions wire format, streaming included.
 */
class FakeProvider {
  readonly requests: { system: string; user: string; stream: boolean }[] = [];
  failAnswers = false;
  private server?: HttpServer;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server!.close(() => r()));
  }

  private async handle(req: IncomingMessage, res: import('node:http').ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    const parsed = JSON.parse(body) as { messages: { role: string; content: string }[]; stream?: boolean };
    const system = parsed.messages.find((m) => m.role === 'system')?.content ?? '';
    const user = parsed.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    this.requests.push({ system, user, stream: Boolean(parsed.stream) });
    let text: string;
    if (system.includes('alternative phrasings')) text = '1. swept wing crossflow instability\n2. leading edge vortices on swept wings';
    else if (system.includes('could appear in a document')) text = 'Crossflow vortices near the leading edge destabilise the swept-wing boundary layer.';
    else {
      if (this.failAnswers) {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { message: 'model overloaded', type: 'server_error' } }));
        return;
      }
      text = 'Crossflow vortices near the leading edge make it unstable [1].';
    }
    if (!parsed.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const piece of text.match(/.{1,7}/gs) ?? []) {
      res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`);
    }
    res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  }
}

describe('with an OpenAI-compatible LLM configured', () => {
  const provider = new FakeProvider();
  let server: Server;

  beforeAll(async () => {
    const baseUrl = await provider.start();
    server = await startServer(undefined, {
      RAG_LLM: 'openai',
      RAG_LLM_BASE_URL: baseUrl,
      RAG_LLM_MODEL: 'test-model',
      RAG_QUERY_EXPANSION: 'multi+hyde',
      RAG_LLM_TIMEOUT_MS: '5000',
    });
    await api(server, 'POST', '/v1/documents', {
      id: 'wing',
      text: 'Swept wings.\n\nCrossflow vortices make the boundary layer on a swept wing unstable near the leading edge.',
    });
    await api(server, 'POST', '/v1/documents', { id: 'heat', text: 'Heat shields.\n\nAblative heat shields absorb heat by pyrolysis.' });
    await waitForStatus(server, 'wing');
    await waitForStatus(server, 'heat');
  });
  afterAll(async () => {
    await server?.stop();
    removeDir(server.dataDir);
    await provider.stop();
  });

  it('expands the query, uses HyDE for dense search, and streams the LLM answer with its citation', async () => {
    const r = await api<{ answer: string; refused: boolean; citations: { ref: number; document_id: string }[]; degraded: string[]; timings_ms: Record<string, number> }>(
      server,
      'POST',
      '/v1/query',
      { question: 'What makes the boundary layer on a swept wing unstable?' },
    );
    expect(r.status).toBe(200);
    expect(r.body.answer).toBe('Crossflow vortices near the leading edge make it unstable [1].');
    expect(r.body.refused).toBe(false);
    expect(r.body.citations).toEqual([expect.objectContaining({ ref: 1, document_id: 'wing' })]);
    expect(r.body.degraded).toEqual([]);
    expect(r.body.timings_ms.rewrite).toBeGreaterThanOrEqual(0);
    const kinds = provider.requests.map((q) => (q.system.includes('alternative') ? 'multi' : q.system.includes('could appear') ? 'hyde' : 'answer'));
    expect(kinds.sort()).toEqual(['answer', 'hyde', 'multi']);
    const answerPrompt = provider.requests.find((q) => !q.system.includes('alternative') && !q.system.includes('could appear'))!;
    expect(answerPrompt.stream).toBe(true);
    expect(answerPrompt.user).toContain('[1]');
  });

  it('falls back to the extractive answer and reports llm degraded when the provider fails', async () => {
    provider.failAnswers = true;
    try {
      const r = await api<{ answer: string; citations: { document_id: string }[]; degraded: string[] }>(server, 'POST', '/v1/query', {
        question: 'How do ablative heat shields absorb heat?',
      });
      expect(r.status).toBe(200);
      expect(r.body.degraded).toContain('llm');
      // The fake provider's expansions are about swept wings whatever the question, so only check the evidence used.
      expect(r.body.answer).toMatch(/pyrolysis[^[]*\[\d\]/);
      expect(r.body.citations.map((c) => c.document_id)).toContain('heat');
    } finally {
      provider.failAnswers = false;
    }
  });
});
