// Shutdown with HTTP requests in flight: the embedded server (startEmbeddedServer, as `rag start` runs it) drains its
// HTTP server before the stores close (http-drain.ts), and `rag start` runs one shutdown per process
// (handleShutdownSignals). The slow requests are real ones the client holds back: a document upload whose JSON body
// is sent in two parts, and a request whose head is sent in two parts — nothing on the server side is stubbed.
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Controller, Get, Global, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig, setLogLevel } from '@rag/platform';
import { API_KEY_STORE, type ApiKeyStore } from '@rag/ports';
import { createEmbeddedContext, handleShutdownSignals, startEmbeddedServer } from './embedded';
import { issueApiKey } from './gateway/auth';
import { CONFIG } from './core/tokens';
import { HttpDrain, HttpDrainModule } from './http-drain';

setLogLevel('error');

type Started = Awaited<ReturnType<typeof startEmbeddedServer>>;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The embedded server on a loopback port, keys required (so every request reads the API key store), and an API key. */
async function start(env: Record<string, string> = {}): Promise<{ s: Started; key: string; events: string[]; port: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'rag-drain-'));
  dirs.push(dataDir);
  const config = loadConfig({ RAG_EMBEDDER: 'hashing', RAG_AUTH: 'required', RAG_RECONCILE_INTERVAL_S: '0', ...env, RAG_DATA_DIR: dataDir, RAG_PORT: '0', RAG_HOST: '127.0.0.1' });
  // No process signal handlers: the test closes the server itself, as `rag start`'s one handler does.
  const s = await startEmbeddedServer(config, 'test', { shutdownHooks: false });
  const store = s.app.get<ApiKeyStore>(API_KEY_STORE, { strict: false });
  const { key } = await issueApiKey(store, { tenant: 'default', scopes: ['ingest', 'query'] });
  // When the stores close, in order with when the server finished writing each response.
  const events: string[] = [];
  s.app.getHttpServer().on('request', (req: IncomingMessage, res: ServerResponse) => res.once('finish', () => events.push(`response ${req.method} ${req.url}`)));
  for (const [name, target] of [
    ['registry', s.registry],
    ['api key store', store],
  ] as const) {
    const close = target.close.bind(target);
    target.close = async () => {
      events.push(`${name} closed`);
      await close();
    };
  }
  return { s, key, events, port: Number(new URL(s.url).port) };
}

const drainOf = (s: Started) => s.app.get(HttpDrain, { strict: false });

async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** POST /v1/documents with the first half of its JSON body sent; `finish()` sends the rest. */
function slowUpload(port: number, key: string, id: string) {
  const body = Buffer.from(JSON.stringify({ id, title: id, text: `${id}: the boundary layer thickness on a flat plate grows with the square root of the distance.` }));
  const req = request({
    host: '127.0.0.1',
    port,
    method: 'POST',
    path: '/v1/documents',
    agent: false,
    headers: { 'content-type': 'application/json', 'content-length': body.length, authorization: `Bearer ${key}`, connection: 'keep-alive' },
  });
  const response = new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>((resolve, reject) => {
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
      res.on('error', reject);
    });
  });
  response.catch(() => undefined); // awaited by the test; never an unhandled rejection meanwhile
  req.write(body.subarray(0, body.length >> 1));
  req.flushHeaders();
  return { response, finish: () => req.end(body.subarray(body.length >> 1)) };
}

/** A raw connection that has sent a request's head up to (not including) its final blank line. */
async function partialHead(port: number, lines: string[]): Promise<{ socket: Socket; finish(): Promise<{ head: string; closed: Promise<void> }> }> {
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((r, j) => socket.once('connect', r).once('error', j));
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(lines.map((l) => `${l}\r\n`).join(''));
  return {
    socket,
    async finish() {
      socket.write('\r\n');
      await until(() => /\r\n\r\n/.test(received), 'the response head');
      return { head: received.slice(0, received.indexOf('\r\n\r\n')).toLowerCase(), closed };
    },
  };
}

describe('HTTP drain at shutdown (embedded server)', () => {
  it('answers a request in flight when shutdown begins (2xx, not 500), refuses new connections, and closes the stores after it', async () => {
    const { s, key, events, port } = await start();
    const drain = drainOf(s);
    const upload = slowUpload(port, key, 'in-flight');
    await until(() => drain.inFlightCount === 1, 'the upload to reach the server');

    const closing = s.close().then(() => events.push('shutdown done'));
    await until(() => !s.app.getHttpServer().listening, 'the server to stop listening');
    // No new connections once the drain began.
    await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
    expect(events).toEqual([]); // nothing closed under the request

    upload.finish();
    const r = await upload.response;
    expect(r.status, r.body).toBe(202);
    expect(r.headers.connection).toBe('close');
    await closing;
    expect(events).toEqual(['response POST /v1/documents', 'api key store closed', 'registry closed', 'shutdown done']);
  }, 30_000);

  it('serves a request that arrives during the drain on a connection opened before it, with Connection: close, and readiness says shutting down', async () => {
    const { s, key, events, port } = await start();
    const drain = drainOf(s);
    const list = await partialHead(port, ['GET /v1/documents HTTP/1.1', 'Host: 127.0.0.1', `Authorization: Bearer ${key}`]);
    const ready = await partialHead(port, ['GET /readyz HTTP/1.1', 'Host: 127.0.0.1']);
    await new Promise((r) => setTimeout(r, 50)); // both heads parsed as far as they go

    const closing = s.close();
    await until(() => !s.app.getHttpServer().listening, 'the server to stop listening');
    await new Promise((r) => setTimeout(r, 50)); // the idle connections are gone by now; these two are not idle
    expect(drain.inFlightCount).toBe(0); // neither request had arrived when the drain began

    const a = await list.finish();
    expect(a.head).toMatch(/^http\/1\.1 200 /);
    expect(a.head).toContain('connection: close');
    await a.closed; // the server ends the connection after the response
    const b = await ready.finish();
    expect(b.head).toMatch(/^http\/1\.1 503 /);
    expect(b.head).toContain('connection: close');
    await b.closed;

    await closing;
    expect(events).toContain('registry closed');
  }, 30_000);

  it('cuts a request that outlives RAG_SHUTDOWN_GRACE_MS, and the shutdown still completes', async () => {
    const { s, key, events, port } = await start({ RAG_SHUTDOWN_GRACE_MS: '300' });
    const drain = drainOf(s);
    const upload = slowUpload(port, key, 'never-finished'); // the rest of its body never comes
    await until(() => drain.inFlightCount === 1, 'the upload to reach the server');

    const started = Date.now();
    await s.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(5_000);
    await expect(upload.response).rejects.toThrow(); // its connection was cut (socket hang up / reset)
    expect(events).toEqual(expect.arrayContaining(['registry closed', 'api key store closed']));
  }, 30_000);

  it('startEmbeddedServer without shutdown hooks installs no signal handler (so `rag start` has exactly one)', async () => {
    const before = process.listenerCount('SIGTERM');
    const { s } = await start();
    expect(process.listenerCount('SIGTERM')).toBe(before);
    await s.close();
  }, 30_000);

  it('createEmbeddedContext (no HTTP server) still shuts down and closes the stores', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'rag-drain-ctx-'));
    dirs.push(dataDir);
    const h = await createEmbeddedContext(loadConfig({ RAG_EMBEDDER: 'hashing', RAG_RECONCILE_INTERVAL_S: '0', RAG_DATA_DIR: dataDir }));
    await h.registry.countByStatus();
    await h.close();
    await expect(h.registry.countByStatus()).rejects.toThrow(/closed/i);
  }, 30_000);
});

describe('HttpDrain: handlers of requests whose client went away', () => {
  // A component test of the drain in a minimal Nest application: one route whose handler waits for the test (as a
  // keyword search waits for a worker, or a call for an LLM), and a store that closes at onApplicationShutdown as
  // CoreLifecycle's do. The client sends the request and leaves; nothing is left for the HTTP layer to wait for.
  const events: string[] = [];
  let release: () => void = () => undefined;
  let entered: () => void = () => undefined;

  @Controller()
  class SlowController {
    @Get('slow')
    async slow(): Promise<{ ok: boolean }> {
      events.push('handler started');
      entered();
      await new Promise<void>((r) => (release = r));
      events.push('handler done');
      return { ok: true };
    }
  }

  @Injectable()
  class Store implements OnApplicationShutdown {
    onApplicationShutdown(): void {
      events.push('store closed');
    }
  }

  async function app(graceMs: number) {
    @Global()
    @Module({ providers: [{ provide: CONFIG, useValue: { RAG_SHUTDOWN_GRACE_MS: graceMs } }], exports: [CONFIG] })
    class ConfigModule {}
    @Module({ imports: [ConfigModule, HttpDrainModule], controllers: [SlowController], providers: [Store] })
    class TestRoot {}
    const a = await NestFactory.create(TestRoot, { logger: false });
    await a.listen(0, '127.0.0.1');
    return { a, port: (a.getHttpServer().address() as { port: number }).port };
  }

  async function abandonedRequest(port: number): Promise<void> {
    const started = new Promise<void>((r) => (entered = r));
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((r, j) => socket.once('connect', r).once('error', j));
    socket.write('GET /slow HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await started;
    socket.destroy(); // the client leaves (a timeout, a cancelled call, a load generator stopping)
    await new Promise((r) => setTimeout(r, 50));
  }

  it('waits for them before the stores close', async () => {
    events.length = 0;
    const { a, port } = await app(10_000);
    await abandonedRequest(port);
    const closing = a.close().then(() => events.push('shutdown done'));
    await new Promise((r) => setTimeout(r, 200));
    expect(events).toEqual(['handler started']); // the store is still open: the handler still runs
    release();
    await closing;
    expect(events).toEqual(['handler started', 'handler done', 'store closed', 'shutdown done']);
  }, 30_000);

  it('within the grace only: a handler still running past it does not hold the shutdown', async () => {
    events.length = 0;
    const { a, port } = await app(300);
    await abandonedRequest(port);
    await a.close();
    expect(events).toEqual(['handler started', 'store closed']);
    release();
  }, 30_000);
});

describe('handleShutdownSignals (`rag start`)', () => {
  function fakeProcess() {
    const proc = new EventEmitter() as EventEmitter & { exit: (code: number) => void; exits: number[] };
    proc.exits = [];
    proc.exit = (code: number) => void proc.exits.push(code);
    return proc;
  }

  it('runs one shutdown for two signals; the second exits at once (128 + signal number) after `force`', async () => {
    const proc = fakeProcess();
    let shutdowns = 0;
    let release!: () => void;
    const forced: string[] = [];
    const lines: string[] = [];
    handleShutdownSignals({
      shutdown: () => {
        shutdowns++;
        return new Promise<void>((r) => (release = r));
      },
      force: () => forced.push('unlock'),
      proc: proc as unknown as NodeJS.Process,
      write: (l) => lines.push(l),
    });
    proc.emit('SIGTERM', 'SIGTERM');
    expect(shutdowns).toBe(1);
    expect(proc.exits).toEqual([]); // still draining
    proc.emit('SIGINT', 'SIGINT');
    expect(shutdowns).toBe(1); // no second, concurrent shutdown
    expect(forced).toEqual(['unlock']);
    expect(proc.exits).toEqual([130]);
    expect(lines.join('')).toMatch(/SIGINT received again, exiting now/);
    release();
    await new Promise((r) => setImmediate(r));
    expect(proc.exits).toEqual([130, 0]);
  });

  it('exits 0 after the shutdown, 1 when it fails', async () => {
    const ok = fakeProcess();
    handleShutdownSignals({ shutdown: async () => undefined, proc: ok as unknown as NodeJS.Process, write: () => undefined });
    ok.emit('SIGHUP', 'SIGHUP');
    await new Promise((r) => setImmediate(r));
    expect(ok.exits).toEqual([0]);

    const failing = fakeProcess();
    const forced: string[] = [];
    handleShutdownSignals({
      shutdown: async () => {
        throw new Error('boom');
      },
      force: () => forced.push('unlock'),
      proc: failing as unknown as NodeJS.Process,
      write: () => undefined,
    });
    failing.emit('SIGTERM', 'SIGTERM');
    await new Promise((r) => setImmediate(r));
    expect(failing.exits).toEqual([1]);
    expect(forced).toEqual(['unlock']);
  });
});
