import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: unknown;
}
export type FakeHandler = (req: FakeRequest) => { status: number; body?: unknown; headers?: Record<string, string> };

/** A tiny JSON HTTP server for the fakes of SaaS boundaries (loopback, ephemeral port unless one is given). */
export async function startJsonServer(handler: FakeHandler, port = 0): Promise<{ url: string; server: Server; close(): Promise<void> }> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://fake');
      let body: unknown;
      try {
        body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      } catch {
        body = undefined;
      }
      let out: ReturnType<FakeHandler>;
      try {
        out = handler({ method: req.method ?? 'GET', path: u.pathname, query: u.searchParams, headers: req.headers, body });
      } catch (e) {
        out = { status: 500, body: { message: String(e) } };
      }
      res.writeHead(out.status, { 'content-type': 'application/json', ...(out.headers ?? {}) });
      res.end(out.body === undefined ? '' : JSON.stringify(out.body));
    });
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const { port: p } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${p}`,
    server,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Rate-limit injection shared by the fakes: the next `n` API calls answer 429 with `Retry-After: seconds`. */
export class Throttle {
  private pending = 0;
  private retryAfter = '1';
  served429 = 0;
  throttleNext(n: number, retryAfterS = 1): void {
    this.pending = n;
    this.retryAfter = String(retryAfterS);
  }
  take(): string | null {
    if (this.pending <= 0) return null;
    this.pending--;
    this.served429++;
    return this.retryAfter;
  }
}
