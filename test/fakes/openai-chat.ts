import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One chat-completions request as the stand-in received it. */
export interface ChatCall {
  system: string;
  /** The last user message. */
  user: string;
  stream: boolean;
  headers: IncomingHttpHeaders;
}

/** A reply: text (streamed in small pieces when the request asked for a stream), or an HTTP error in the provider's error shape. */
export type ChatReply = string | { status: number; message: string };

/**
 * A local stand-in for an OpenAI-compatible provider (a hosted LLM is the one boundary we cannot reach from here),
 * speaking the documented chat-completions wire format: `chat.completion` JSON, or with `stream: true` the
 * `chat.completion.chunk` server-sent events ending in `data: [DONE]`; errors as `{error: {message, type}}`. Each
 * suite's subclass decides the reply from what the platform sent, as a real model's output depends on its prompt.
 */
export abstract class OpenAiChatStandIn {
  private server?: HttpServer;

  protected abstract reply(call: ChatCall): ChatReply;

  /** Listens on a loopback port; resolves to the base URL (…/v1) for RAG_LLM_BASE_URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    return new Promise((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let body = '';
    for await (const chunk of req) body += chunk;
    const parsed = JSON.parse(body) as { messages: { role: string; content: string }[]; stream?: boolean };
    const call: ChatCall = {
      system: parsed.messages.find((m) => m.role === 'system')?.content ?? '',
      user: parsed.messages.filter((m) => m.role === 'user').at(-1)?.content ?? '',
      stream: Boolean(parsed.stream),
      headers: req.headers,
    };
    const reply = this.reply(call);
    if (typeof reply !== 'string') {
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: reply.message, type: 'server_error' } }));
      return;
    }
    if (!call.stream) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }] }));
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (delta: object, finish: string | null) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    for (const piece of reply.match(/.{1,7}/gs) ?? []) res.write(event({ content: piece }, null));
    res.write(event({}, 'stop'));
    res.end('data: [DONE]\n\n');
  }
}
