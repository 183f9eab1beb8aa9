import { statSync } from 'node:fs';
import { Global, Module, type DynamicModule } from '@nestjs/common';
import { createStoreInspector, embeddingSpace } from '@rag/adapters';
import { StoreIntegrityService, type IntegrityProblem } from '@rag/application';
import { AppError, type AppConfig, Logger } from '@rag/platform';

/** The embedded stores failed their start-up check: one line per problem, each naming its file. */
export class StoreIntegrityError extends AppError {
  constructor(readonly problems: IntegrityProblem[]) {
    super('unavailable', problems.map((p) => p.message).join('\n'), { problems });
    this.name = 'StoreIntegrityError';
  }
}

/**
 * Checks every embedded store file before any adapter opens it (SQLite quick_check per RAG_INTEGRITY_CHECK, expected
 * schema, registry vs index counts) and throws a StoreIntegrityError when one is damaged or the registry is empty
 * beside a populated index; returns the service that keeps answering readiness afterwards.
 */
export async function checkStoresAtStartup(config: AppConfig): Promise<StoreIntegrityService> {
  const log = new Logger('integrity');
  const space = config.RAG_VECTOR_STORE === 'embedded' ? await embeddingSpace(config) : null;
  const inspector = createStoreInspector(config, space);
  if (config.RAG_INTEGRITY_CHECK !== 'off') {
    // At a million chunks the files hold ≈ 8 GB and the check takes tens of seconds: say so before it starts.
    const bytes = inspector.targets.reduce((n, t) => n + (statSync(t.file, { throwIfNoEntry: false })?.size ?? 0), 0);
    if (bytes >= 256 * 2 ** 20) log.info('checking stores', { mode: config.RAG_INTEGRITY_CHECK, files: inspector.targets.length, mb: Math.round(bytes / 2 ** 20) });
  }
  const service = new StoreIntegrityService(inspector, {
    mode: config.RAG_INTEGRITY_CHECK,
    allowEmptyRegistry: config.RAG_ALLOW_EMPTY_REGISTRY,
  });
  const report = await service.check();
  for (const w of report.warnings) log.warn('store check', { warning: w });
  if (!report.ok) throw new StoreIntegrityError(report.problems);
  log.info('stores checked', { mode: report.mode, ms: report.ms });
  return service;
}

/** Makes the start-up integrity service available to the health controller. */
@Global()
@Module({})
export class IntegrityModule {
  static forRoot(service: StoreIntegrityService): DynamicModule {
    return { module: IntegrityModule, global: true, providers: [{ provide: StoreIntegrityService, useValue: service }], exports: [StoreIntegrityService] };
  }
}

/**
 * Runs `start` and ends the process on an expected start-up failure (a damaged store, a lost registry: an AppError)
 * with one `name: …` line per problem and exit code 2, instead of an unhandled rejection and its stack trace.
 */
export async function startOrExit<T>(name: string, start: () => Promise<T>, cleanup?: () => void): Promise<T> {
  try {
    return await start();
  } catch (e) {
    if (e instanceof AppError) {
      for (const line of e.message.split('\n')) process.stderr.write(`${name}: ${line}\n`);
      cleanup?.();
      process.exit(2);
    }
    throw e;
  }
}
