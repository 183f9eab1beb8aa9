import 'reflect-metadata';
import { Controller, Get, Module, type DynamicModule, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Response } from 'express';
import { Res } from '@nestjs/common';
import { ConfigError, Logger, loadConfig, metricsRegistry, type AppConfig } from '@rag/platform';
import { CoreModule, type Part } from './core/core.module';
import { Public } from './gateway/auth.guard';
import { configureHttp } from './gateway/http';

@Controller()
@Public()
class ServiceHealthController {
  @Get('healthz')
  healthz() {
    return { status: 'ok' };
  }
  @Get('readyz')
  readyz() {
    return { status: 'ready' };
  }
  @Get('metrics')
  async metrics(@Res() res: Response) {
    res.setHeader('Content-Type', metricsRegistry.contentType);
    res.send(await metricsRegistry.metrics());
  }
}

@Module({ controllers: [ServiceHealthController] })
class ServiceHealthModule {}

/**
 * Runs one service as its own process: its module, the adapters it needs, and HTTP for /healthz, /readyz and
 * /metrics on RAG_PORT. Stages share the bus and stores configured for the deployment.
 */
export async function runStandalone(
  name: string,
  modules: (Type | DynamicModule)[],
  parts: Part[],
  opts: { config?: AppConfig; gatewayHttp?: boolean } = {},
): Promise<void> {
  const log = new Logger(name);
  let cfg: AppConfig;
  try {
    cfg = opts.config ?? loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${name}: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const app = await NestFactory.create(
    { module: class StandaloneRoot {}, imports: [CoreModule.forRoot(cfg, parts), ...modules, ServiceHealthModule] },
    { logger: ['error', 'warn'], bodyParser: !opts.gatewayHttp },
  );
  if (opts.gatewayHttp) configureHttp(app, cfg, process.env.npm_package_version ?? '0.1.0');
  app.enableShutdownHooks();
  await app.listen(cfg.RAG_PORT, cfg.RAG_HOST);
  log.info('service started', { service: name, port: cfg.RAG_PORT });
}
