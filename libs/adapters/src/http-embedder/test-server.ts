/** For specs only: a scripted HTTP server on 127.0.0.1 that records requests and answers with a handler. */
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: unknown;
}

export interface Reply {
  status?: number;
  headers?: Record<string, string>;
  json?: unknown;
  text?: string;
  /** Wait this long before answering (to trigger client timeouts). */
  delayMs?: number;
}

export interface TestServer {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

export async function startTestServer(handler: (req: RecordedRequest, n: number) => Reply | Promise<Reply>): Promise<TestServer> {
  const requests: RecordedRequest[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: unknown = raw;
      try {
        body = raw ? (JSON.parse(raw) as unknown) : undefined;
      } catch {
        /* keep the raw text */
      }
      const rec: RecordedRequest = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body };
      requests.push(rec);
      void Promise.resolve(handler(rec, requests.length)).then((reply) => {
        const send = () => {
          if (res.destroyed) return;
          const payload = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.text ?? '');
          res.writeHead(reply.status ?? 200, {
            'content-type': reply.json !== undefined ? 'application/json' : 'text/plain',
            ...reply.headers,
          });
          res.end(payload);
        };
        if (reply.delayMs) {
          const t = setTimeout(() => {
            timers.delete(t);
            send();
          }, reply.delayMs);
          timers.add(t);
        } else send();
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearTimeout(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
