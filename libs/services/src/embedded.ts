import 'reflect-metadata';
import { existsSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { Module, type DynamicModule, type INestApplicationContext, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { connectBusTransport, prepareModels } from '@rag/adapters';
import { DocumentService, QueryOrchestrator, type StoreIntegrityService } from '@rag/application';
import { type AppConfig, Logger, nestLogger, shutdownTracing, startTracing, loadConfigOrExit } from '@rag/platform';
import { BUS, REGISTRY, type Bus, type Registry } from '@rag/ports';
import { ChunkerModule } from './chunker/chunker.module';
import { CoreModule } from './core/core.module';
import { EmbedderModule } from './embedder/embedder.module';
import { GatewayModule } from './gateway/gateway.module';
import { configureHttp } from './gateway/http';
import { GeneratorModule } from './generator/generator.module';
import { IndexerModule } from './indexer/indexer.module';
import { LoaderModule } from './loader/loader.module';
import { RerankerModule } from './reranker/reranker.module';
import { RetrieverModule } from './retriever/retriever.module';
import { keepConnectionsAlive } from './http-keepalive';
import { HttpDrainModule } from './http-drain';
import { prepareModelsOrExit } from './core/prepare-models';
import { IntegrityModule, checkStoresAtStartup, startOrExit } from './core/integrity';

/** The query path as direct in-process calls. */
@Module({
  imports: [EmbedderModule, RetrieverModule, RerankerModule, GeneratorModule],
  exports: [EmbedderModule, RetrieverModule, RerankerModule, GeneratorModule],
})
export class LocalQueryPathModule {}

/** All eight services in one process over the embedded bus and on-disk stores. */
export function embeddedModule(config: AppConfig, integrity?: StoreIntegrityService): DynamicModule {
  return {
    module: class EmbeddedRootModule {},
    imports: [
      ...(integrity ? [IntegrityModule.forRoot(integrity)] : []),
      CoreModule.forRoot(config),
      HttpDrainModule, // the HTTP drain on shutdown, before the stores close (a no-op without a listening server)
      LoaderModule,
      ChunkerModule,
      EmbedderModule,
      IndexerModule,
      LocalQueryPathModule,
      GatewayModule.register(LocalQueryPathModule),
    ],
  };
}

export interface EmbeddedHandles {
  context: INestApplicationContext;
  documents: DocumentService;
  query: QueryOrchestrator;
  bus: Bus;
  registry: Registry;
  close(): Promise<void>;
}

function handles(context: INestApplicationContext): EmbeddedHandles {
  return {
    context,
    documents: context.get(DocumentService, { strict: false }),
    query: context.get(QueryOrchestrator, { strict: false }),
    bus: context.get<Bus>(BUS, { strict: false }),
    registry: context.get<Registry>(REGISTRY, { strict: false }),
    close: () => context.close(),
  };
}

/** Embedded platform without HTTP (CLI ingest/ask/eval, tests). */
export async function createEmbeddedContext(config: AppConfig): Promise<EmbeddedHandles> {
  await prepareModels(config); // a missing model fails here with one clear AppError, not inside dependency injection
  const integrity = await checkStoresAtStartup(config); // so does a damaged store file or a lost registry
  // An application (never listening on HTTP) rather than a bare context: the stages consume through the bus transport,
  // a Nest microservice, which only an application can connect.
  // No keyword warm-up: these are one-shot commands (ingest, ask, eval), whose few searches cost less than warming.
  const context = await NestFactory.create(embeddedModule({ ...config, RAG_KEYWORD_WARMUP_MS: 0 }, integrity), { logger: nestLogger, abortOnError: false, bodyParser: false });
  context.enableShutdownHooks(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']);
  await context.init();
  await connectBusTransport(context);
  return handles(context);
}

/** Not Nest's default list: it includes SIGSEGV/SIGBUS, where a native crash must end the process, not start a JS shutdown. */
export const SHUTDOWN_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];

export interface EmbeddedServerOptions {
  /**
   * Nest's own signal handling (each of SHUTDOWN_SIGNALS runs `app.close()`); default true, for library and test use.
   * `rag start` (runEmbedded) passes false and handles the signals itself: two handlers would run two concurrent
   * shutdowns, and the second, finding the HTTP server already closing, would close the stores under the requests
   * the first is still draining.
   */
  shutdownHooks?: boolean;
}

/** Embedded platform serving the gateway API on RAG_HOST:RAG_PORT. */
export async function startEmbeddedServer(
  config: AppConfig,
  version = '0.1.0',
  opts: EmbeddedServerOptions = {},
): Promise<EmbeddedHandles & { app: INestApplication; url: string }> {
  const log = new Logger('embedded');
  // Before any adapter opens a store: a damaged file or a lost registry refuses the start with one line per problem.
  const integrity = await checkStoresAtStartup(config);
  const app = await NestFactory.create(embeddedModule(config, integrity), { bodyParser: false, logger: nestLogger, abortOnError: false });
  configureHttp(app, config, version);
  if (opts.shutdownHooks ?? true) app.enableShutdownHooks(SHUTDOWN_SIGNALS);
  await app.init();
  await connectBusTransport(app);
  await app.listen(config.RAG_PORT, config.RAG_HOST);
  keepConnectionsAlive(app.getHttpServer());
  const addr = app.getHttpServer().address() as { port: number };
  const url = `http://${config.RAG_HOST.includes(':') ? `[${config.RAG_HOST}]` : config.RAG_HOST}:${addr.port}`;
  log.info('gateway listening', { url, data_dir: config.dataDir, embedder: config.RAG_EMBEDDER });
  return { ...handles(app), app, url };
}

/** Refuses a second embedded process on the same data folder (its in-memory HNSW graph would diverge). */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const lock = join(dataDir, 'embedded.lock');
  if (existsSync(lock)) {
    const pid = Number(readFileSync(lock, 'utf8').trim());
    let alive = false;
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid) {
      try {
        process.kill(pid, 0);
        alive = true;
      } catch {
        alive = false;
      }
    }
    if (alive) {
      throw new Error(
        `another embedded instance (pid ${pid}) is using ${dataDir}; stop it, talk to it over HTTP, or set RAG_DATA_DIR to another folder`,
      );
    }
  }
  writeFileSync(lock, String(process.pid));
  return () => {
    try {
      if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
    } catch {
      /* already gone */
    }
  };
}

/** `npm start` / `rag start`: the whole platform in one process, serving the gateway API. */
export async function runEmbedded(config?: AppConfig): Promise<void> {
  // Normally started first by the main (apps/embedded, the CLI); idempotent.
  startTracing('embedded');
  const cfg = config ?? loadConfigOrExit('rag');
  const started = Date.now();
  await prepareModelsOrExit(cfg, 'rag');
  const unlock = lockDataDir(cfg.dataDir);
  const server = await startOrExit('rag', () => startEmbeddedServer(cfg, process.env.npm_package_version ?? '0.1.0', { shutdownHooks: false }), unlock);
  // The one shutdown: app.close() drains HTTP (http-drain.ts, RAG_SHUTDOWN_GRACE_MS), then closes the stores.
  handleShutdownSignals({
    shutdown: async () => {
      await server.close();
      unlock();
      await shutdownTracing();
    },
    force: unlock,
  });
  process.stdout.write(
    `\nRAG platform (embedded) ready in ${((Date.now() - started) / 1000).toFixed(1)} s\n` +
      `  console     ${server.url}/\n  API docs    ${server.url}/docs\n  data        ${cfg.dataDir}\n` +
      `  embedder    ${cfg.RAG_EMBEDDER}${cfg.RAG_EMBEDDER === 'onnx' ? ` (${cfg.RAG_EMBEDDING_MODEL})` : ''} · reranker ${cfg.RAG_RERANKER} · llm ${cfg.RAG_LLM}\n\n`,
  );
}

/** What handleShutdownSignals acts on (the process by default; a stand-in in tests). */
export interface ShutdownSignalOptions {
  /** The whole shutdown; the process exits 0 after it (1 when it throws). */
  shutdown: (signal: NodeJS.Signals) => Promise<void>;
  /** Run before a forced exit (e.g. remove the data folder's lock). */
  force?: () => void;
  signals?: NodeJS.Signals[];
  proc?: Pick<NodeJS.Process, 'on' | 'removeListener' | 'exit'>;
  write?: (line: string) => void;
}

/**
 * Exactly one shutdown per process: the first of `signals` starts `shutdown` and exits when it is done; another
 * signal while it runs (a second Ctrl-C, an impatient supervisor) exits at once, with 128 + the signal's number, as
 * users expect — the stores are SQLite in WAL mode, which a crash leaves consistent. Returns what removes the handlers.
 */
export function handleShutdownSignals(opts: ShutdownSignalOptions): () => void {
  const proc = opts.proc ?? process;
  const write = opts.write ?? ((line: string) => void process.stderr.write(line));
  const signals = opts.signals ?? SHUTDOWN_SIGNALS;
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      write(`rag: ${signal} received again, exiting now without waiting for the shutdown\n`);
      opts.force?.();
      proc.exit(128 + (constants.signals[signal] ?? 0));
      return;
    }
    stopping = true;
    write(`\nrag: ${signal} received, shutting down (requests in flight are answered first; ${signal === 'SIGINT' ? 'Ctrl-C' : 'a second signal'} again exits at once)…\n`);
    opts.shutdown(signal).then(
      () => proc.exit(0),
      (e: unknown) => {
        write(`rag: shutdown failed: ${e instanceof Error ? e.message : String(e)}\n`);
        opts.force?.();
        proc.exit(1);
      },
    );
  };
  for (const signal of signals) proc.on(signal, onSignal);
  return () => {
    for (const signal of signals) proc.removeListener(signal, onSignal);
  };
}
