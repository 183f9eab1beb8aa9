import type { Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import {
  Global,
  Inject,
  Injectable,
  Module,
  type BeforeApplicationShutdown,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { APP_INTERCEPTOR, HttpAdapterHost } from '@nestjs/core';
import { finalize, type Observable } from 'rxjs';
import { Logger, type AppConfig } from '@rag/platform';
import { CONFIG } from './core/tokens';

/**
 * Graceful stop of one Node HTTP server, so that a request being served when the process is told to stop is answered
 * before the stores it uses close. Node's `server.close()` alone is not that: it stops accepting connections but keeps
 * serving every keep-alive connection already open (we keep them 65 s, http-keepalive.ts) for as long as clients use
 * them, and Nest's dispose waits for none of it. `drain(graceMs)`:
 *
 * 1. stops accepting connections (`server.close()`) and closes the idle keep-alive ones (`closeIdleConnections()`);
 * 2. answers what is in flight — and any request that still arrives on a connection open at that moment — with
 *    `Connection: close`, so each such connection ends after its response (a response whose headers had gone out
 *    before the drain ends its connection once it finishes);
 * 3. resolves when the last connection has closed, or after `graceMs`, when the connections still open are cut
 *    (`closeAllConnections()`, logged with how many requests were cut).
 *
 * Same idea and style as the gRPC drain (GrpcHealth.drain, grpc/grpc-server.ts).
 */
export class HttpServerDrain {
  private readonly log = new Logger('http');
  /** Responses not yet closed: the requests in flight. */
  private readonly inFlight = new Set<ServerResponse>();
  private drained?: Promise<{ cut: number }>;

  constructor(private readonly server: Server) {
    // Prepended, so it runs before Express: the header is set before any route can start the response.
    server.prependListener('request', (_req, res: ServerResponse) => this.track(res));
  }

  /** True once the drain began (readiness answers `shutting down` from then on). */
  get draining(): boolean {
    return this.drained !== undefined;
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  /** Idempotent: every caller gets the same drain; resolves with the number of requests cut at the grace's end. */
  drain(graceMs: number): Promise<{ cut: number }> {
    this.drained ??= this.stop(graceMs);
    return this.drained;
  }

  private track(res: ServerResponse): void {
    this.inFlight.add(res);
    res.once('close', () => this.inFlight.delete(res));
    if (this.drained) closeAfter(res);
  }

  private stop(graceMs: number): Promise<{ cut: number }> {
    // Never listened (createEmbeddedContext's application), or already closed: nothing to drain.
    if (!this.server.listening) return Promise.resolve({ cut: 0 });
    const started = Date.now();
    for (const res of this.inFlight) closeAfter(res);
    this.log.info('HTTP draining: no new connections; answering the requests in flight', { in_flight: this.inFlight.size, grace_ms: graceMs });
    return new Promise((resolve) => {
      let cut = 0;
      const force = setTimeout(() => {
        cut = this.inFlight.size;
        if (cut > 0) this.log.warn('HTTP shutdown grace over: cutting the requests still in flight', { cut, grace_ms: graceMs });
        this.server.closeAllConnections();
      }, graceMs);
      // Called once every connection has closed (at the latest just after closeAllConnections).
      this.server.close(() => {
        clearTimeout(force);
        this.log.info('HTTP server stopped', { ms: Date.now() - started, cut });
        resolve({ cut });
      });
      this.server.closeIdleConnections();
    });
  }
}

/** Makes the connection of a response in flight end after it. */
function closeAfter(res: ServerResponse): void {
  if (!res.headersSent) {
    // Node then ends the connection once the response is written, and the client knows not to reuse it.
    res.setHeader('Connection', 'close');
    return;
  }
  // Headers already out saying keep-alive: end the connection (after what was written) once the response finishes.
  // The socket is taken now: Node detaches it from the response on `finish`.
  const socket: Socket | null = res.socket;
  if (!socket) return;
  if (res.writableFinished) socket.end();
  else res.once('finish', () => socket.end());
}

/**
 * Counts the HTTP route handlers still running. A request whose client went away (a timeout, a cancelled call, a load
 * generator stopping) has no connection left for the drain to wait for, but its handler still runs — a keyword search
 * waiting for a worker, a registry write — and would meet the stores closed under it ("keyword index was closed during
 * a search", "SqliteRegistry is closed" in the logs of a stop right after a load test). The drain also waits for these.
 */
@Injectable()
export class HandlersInFlight implements NestInterceptor {
  private running = 0;
  private idle: Array<() => void> = [];

  get count(): number {
    return this.running;
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle(); // bus and gRPC handlers drain with their own transports
    this.running++;
    return next.handle().pipe(
      finalize(() => {
        if (--this.running === 0) for (const resolve of this.idle.splice(0)) resolve();
      }),
    );
  }

  /** Resolves when no handler runs (at once if none does), or after `ms`, with whether they all finished. */
  settled(ms: number): Promise<boolean> {
    if (this.running === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idle = this.idle.filter((f) => f !== done);
        resolve(false);
      }, ms);
      this.idle.push(done);
    });
  }
}

/**
 * The application's HTTP drain, run when Nest shuts down: beforeApplicationShutdown runs after the modules' onModuleDestroy
 * and before dispose and onApplicationShutdown, where CoreLifecycle (core.module.ts) and the gateway close the bus,
 * the stores and the API key store — so they close only once the HTTP server has answered or cut every request.
 * The grace is RAG_SHUTDOWN_GRACE_MS.
 */
@Injectable()
export class HttpDrain implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private drainer?: HttpServerDrain;

  private readonly log = new Logger('http');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    @Inject(CONFIG) private readonly config: AppConfig,
    private readonly handlers: HandlersInFlight,
  ) {}

  /** Before listen (Nest bootstraps in init, which listen runs first), after the application created its server. */
  onApplicationBootstrap(): void {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (server && !this.drainer) this.drainer = new HttpServerDrain(server);
  }

  get draining(): boolean {
    return this.drainer?.draining ?? false;
  }

  get inFlightCount(): number {
    return this.drainer?.inFlightCount ?? 0;
  }

  async beforeApplicationShutdown(): Promise<void> {
    const started = Date.now();
    const grace = this.config.RAG_SHUTDOWN_GRACE_MS;
    await this.drainer?.drain(grace);
    // then the handlers of requests whose clients left, within what is left of the grace
    const running = this.handlers.count;
    if (running > 0 && !(await this.handlers.settled(Math.max(0, grace - (Date.now() - started))))) {
      this.log.warn('HTTP shutdown grace over: request handlers still running (their clients had gone)', { running: this.handlers.count, grace_ms: grace });
    }
  }
}

/** HttpDrain for the whole application (global, so readiness can read `draining` wherever it is answered). */
@Global()
@Module({ providers: [HandlersInFlight, { provide: APP_INTERCEPTOR, useExisting: HandlersInFlight }, HttpDrain], exports: [HttpDrain] })
export class HttpDrainModule {}
