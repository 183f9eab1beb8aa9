import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One chat-completions request as the stand-in received it. */
export interface ChatRequest {
  kind: 'plan' | 'rewrite' | 'answer' | 'other';
  system: string;
  user: string;
  stream: boolean;
}

/** A scripted reply: text (streamed when asked), or an HTTP error in the provider's error shape. */
export type Reply = string | { status: number; message: string };

/**
 * A stand-in for an OpenAI-compatible provider (the boundary we cannot reach from here) speaking the documented
 * chat-completions wire format, streaming (`data:` chunks, `[DONE]`) included. Each test sets `script`, which reads
 * the request (the system prompt tells the planner, the corrective rewrite and the answer apart) and returns the
 * reply, so that what the "model" writes depends on what the platform showed it, as with a real model.
 */
export class LlmStandIn {
  readonly requests: ChatRequest[] = [];
  script: (r: ChatRequest) => Reply = () => '';
  private server?: HttpServer;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server!.close(() => r()));
  }

  of(kind: ChatRequest['kind']): ChatRequest[] {
    return this.requests.filter((r) => r.kind === kind);
  }

  reset(): void {
    this.requests.length = 0;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    const parsed = JSON.parse(body) as { messages: { role: string; content: string }[]; stream?: boolean };
    const system = parsed.messages.find((m) => m.role === 'system')?.content ?? '';
    const user = parsed.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '';
    const kind: ChatRequest['kind'] = system.includes('You plan the retrieval steps')
      ? 'plan'
      : system.includes('ONE better search query')
        ? 'rewrite'
        : /\[1\]/.test(user)
          ? 'answer'
          : 'other';
    const r: ChatRequest = { kind, system, user, stream: Boolean(parsed.stream) };
    this.requests.push(r);
    const reply = this.script(r);
    if (typeof reply !== 'string') {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: reply.message, type: 'server_error' } }));
      return;
    }
    if (!parsed.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const piece of reply.match(/.{1,7}/gs) ?? []) {
      res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: piece }, finish_reason: null }] })}\n\n`);
    }
    res.write(`data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  }
}

/** The refs [n] of the answer prompt's sources whose text contains `needle`. */
export function refsContaining(user: string, needle: string): number[] {
  const refs: number[] = [];
  for (const m of user.matchAll(/<source id="(\d+)">([\s\S]*?)<\/source>/g)) if (m[2]!.includes(needle)) refs.push(Number(m[1]));
  return [...new Set(refs)];
}
