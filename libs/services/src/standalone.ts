import 'reflect-metadata';
import { Injectable, Module, type DynamicModule, type OnApplicationShutdown, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger, nestLogger, shutdownTracing, startTracing, type AppConfig, loadConfigOrExit } from '@rag/platform';
import type { QueryPathService } from '@rag/contracts';
import { connectBusTransport } from '@rag/adapters';
import { CoreModule, type Part } from './core/core.module';
import { connectGrpcMicroservice } from './grpc/grpc-server';
import { prepareModelsOrExit } from './core/prepare-models';
import { HealthEndpointsModule } from './core/health-endpoints';
import { configureHttp } from './gateway/http';
import { keepConnectionsAlive } from './http-keepalive';
import { HttpDrainModule } from './http-drain';

/** Exports the spans still buffered when the service stops (after the bus and stores closed). */
@Injectable()
class TracingShutdown implements OnApplicationShutdown {
  async onApplicationShutdown(): Promise<void> {
    await shutdownTracing();
  }
}

@Module({ imports: [HealthEndpointsModule], providers: [TracingShutdown] })
class ServiceHealthModule {}

/**
 * Runs one service as its own process: its module, the adapters it needs, and HTTP for /healthz, /readyz and
 * /metrics on RAG_PORT. Stages share the bus and stores configured for the deployment.
 */
export async function runStandalone(
  name: string,
  modules: (Type | DynamicModule)[],
  parts: Part[],
  opts: { config?: AppConfig; gatewayHttp?: boolean; grpc?: QueryPathService } = {},
): Promise<void> {
  // Normally started first by the service's main (apps/*/src/tracing.ts); idempotent.
  startTracing(name);
  const log = new Logger(name);
  const cfg = opts.config ?? loadConfigOrExit(name);
  if (parts.includes('embedder') || parts.includes('vectors')) await prepareModelsOrExit(cfg, name);
  const app = await NestFactory.create(
    // HttpDrainModule: on shutdown the HTTP server (the gateway's API, or /healthz /readyz /metrics) drains before the stores close.
    { module: class StandaloneRoot {}, imports: [CoreModule.forRoot(cfg, parts), HttpDrainModule, ...modules, ServiceHealthModule] },
    { logger: nestLogger, bodyParser: !opts.gatewayHttp },
  );
  if (opts.gatewayHttp) configureHttp(app, cfg, process.env.npm_package_version ?? '0.1.0');
  app.enableShutdownHooks(['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT']); // not Nest's default list: it includes SIGSEGV/SIGBUS, where a native crash must end the process, not start a JS shutdown
  // The query-path services also serve their GrpcServerModule controllers through Transport.GRPC on RAG_GRPC_PORT.
  if (opts.grpc) connectGrpcMicroservice(app, cfg, opts.grpc);
  await app.startAllMicroservices(); // every connected transport, once
  if (parts.includes('bus')) {
    // The stage's *.message.controller.ts handlers consume through the bus transport, once every module is initialised.
    await app.init();
    await connectBusTransport(app);
  }
  await app.listen(cfg.RAG_PORT, cfg.RAG_HOST);
  keepConnectionsAlive(app.getHttpServer());
  log.info('service started', { service: name, port: cfg.RAG_PORT });
}
