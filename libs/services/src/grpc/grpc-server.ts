import type { Server } from '@grpc/grpc-js';
import { Injectable, type BeforeApplicationShutdown, type INestApplication } from '@nestjs/common';
import { Transport, type GrpcOptions } from '@nestjs/microservices';
import { HealthImplementation, type ServingStatus } from 'grpc-health-check';
import { GRPC_LOADER_OPTIONS, RAG_GRPC_PACKAGE, RAG_GRPC_SERVICES, RAG_PROTO_PATH, type QueryPathService } from '@rag/contracts';
import { AppError, Logger, type AppConfig } from '@rag/platform';

/** Largest message either side accepts (a Retrieve response carries up to RAG_CANDIDATES chunks with parent text). */
export const GRPC_MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** What the health state follows (the process's ReadinessService: bus, stores, model — core/readiness.ts). */
export interface ReadinessSource {
  readiness(): Promise<{ ok: boolean }>;
}

/** How often the gRPC health state re-reads readiness (each read is bounded by the readiness checks' own timeout). */
export const GRPC_HEALTH_POLL_MS = 5_000;
/** Default of RAG_GRPC_SHUTDOWN_GRACE_MS. */
export const GRPC_DRAIN_GRACE_MS = 5_000;

/**
 * grpc.health.v1 of one query-path server (the maintained grpc-health-check implementation: Check and Watch, for
 * Kubernetes grpc probes and grpc_health_probe), for '' and the service's full name: SERVING from the start of the
 * server, then — given a readiness source — SERVING only while the process is ready (re-read every `pollMs`), so a
 * retriever whose store is down says NOT_SERVING as its /readyz says 503; on shutdown NOT_SERVING first, then the
 * server drains its in-flight calls.
 */
@Injectable()
export class GrpcHealth implements BeforeApplicationShutdown {
  private readonly log = new Logger('grpc');
  readonly implementation: HealthImplementation;
  private server?: Server;
  private drained?: Promise<void>;
  private poll?: NodeJS.Timeout;
  private current: ServingStatus = 'SERVING';

  constructor(
    readonly serviceName: string,
    private readonly readiness?: ReadinessSource,
    private readonly pollMs = GRPC_HEALTH_POLL_MS,
    /** How long in-flight calls may finish on shutdown before they are cancelled (RAG_GRPC_SHUTDOWN_GRACE_MS). */
    private readonly drainGraceMs = GRPC_DRAIN_GRACE_MS,
  ) {
    this.implementation = new HealthImplementation({ '': 'SERVING', [serviceName]: 'SERVING' });
  }

  /** Transport.GRPC's onLoadPackageDefinition hook: adds the health service to the grpc-js server Nest created. */
  attach(server: Server): void {
    this.implementation.addToServer(server);
    this.server = server;
    if (this.readiness && !this.poll) {
      this.poll = setInterval(() => void this.refresh(), this.pollMs);
      this.poll.unref();
      void this.refresh();
    }
  }

  /** Re-reads readiness: SERVING when ready, NOT_SERVING when not (or when the read fails). */
  async refresh(): Promise<void> {
    if (!this.readiness || this.drained) return;
    let next: ServingStatus;
    try {
      next = (await this.readiness.readiness()).ok ? 'SERVING' : 'NOT_SERVING';
    } catch {
      next = 'NOT_SERVING';
    }
    if (this.drained || next === this.current) return;
    this.log.warn(`gRPC health ${next}`, { service: this.serviceName });
    this.set(next);
  }

  set(status: ServingStatus): void {
    this.current = status;
    for (const name of ['', this.serviceName]) this.implementation.setStatus(name, status);
  }

  /** Health → NOT_SERVING, then up to `graceMs` for in-flight calls before they are cancelled (before the stores close). */
  drain(graceMs = this.drainGraceMs): Promise<void> {
    clearInterval(this.poll);
    const server = this.server;
    if (!server) return Promise.resolve();
    this.drained ??= new Promise<void>((resolve) => {
      this.set('NOT_SERVING');
      const force = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, graceMs);
      server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    }).then(() => this.log.info('gRPC server stopped', { service: this.serviceName }));
    return this.drained;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.drain();
  }
}

/** Transport.GRPC options of one query-path service on RAG_HOST:RAG_GRPC_PORT, rag.proto loaded as the contracts say. */
export function grpcServerOptions(config: Pick<AppConfig, 'RAG_HOST' | 'RAG_GRPC_PORT'>, health: GrpcHealth): GrpcOptions {
  const host = config.RAG_HOST.includes(':') && !config.RAG_HOST.startsWith('[') ? `[${config.RAG_HOST}]` : config.RAG_HOST;
  return {
    transport: Transport.GRPC,
    options: {
      package: RAG_GRPC_PACKAGE,
      protoPath: RAG_PROTO_PATH,
      loader: GRPC_LOADER_OPTIONS,
      url: `${host}:${config.RAG_GRPC_PORT}`,
      maxReceiveMessageLength: GRPC_MAX_MESSAGE_BYTES,
      maxSendMessageLength: GRPC_MAX_MESSAGE_BYTES,
      onLoadPackageDefinition: (_pkg: unknown, server: Server) => health.attach(server),
    },
  };
}

/**
 * Connects Transport.GRPC serving the app's gRPC controllers (GrpcServerModule.forService) on RAG_GRPC_PORT; nothing
 * when the port is 0. Returns the address, or undefined. The caller starts it with `app.startAllMicroservices()` —
 * once, after every transport of the process is connected (a second call would listen twice).
 */
export function connectGrpcMicroservice(app: INestApplication, config: AppConfig, service: QueryPathService): string | undefined {
  const log = new Logger('grpc');
  const name = RAG_GRPC_SERVICES[service];
  if (config.RAG_GRPC_PORT === 0) {
    log.info('RAG_GRPC_PORT is 0: not serving gRPC', { service: name });
    return undefined;
  }
  const options = grpcServerOptions(config, app.get(GrpcHealth, { strict: false }));
  app.connectMicroservice<GrpcOptions>(options, { inheritAppConfig: true });
  log.info('gRPC server configured', { address: options.options.url, service: name });
  return options.options.url;
}

/** Aborted when the caller cancels or its deadline passes (grpc-js emits `cancelled`), so the local service stops. */
export function callSignal(call: { cancelled: boolean; once(event: 'cancelled', fn: () => void): unknown } | undefined, method: string): AbortSignal {
  const ac = new AbortController();
  const abort = () => ac.abort(new AppError('deadline_exceeded', `${method} cancelled by the caller or its deadline`));
  if (call?.cancelled) abort();
  else call?.once('cancelled', abort);
  return ac.signal;
}
