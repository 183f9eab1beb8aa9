import { Injectable, Module, Logger as NestCommonLogger, type OnModuleInit } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Logger, logLevel, logLevelFromEnv, setLogLevel } from './logger';
import { nestLogger } from './nest-logger';
import { inSpan, startTracing } from '../telemetry/tracing';

startTracing('logger-test', { env: {} });

function capture(fn: () => void | Promise<void>): Promise<Record<string, unknown>[]> {
  const lines: string[] = [];
  const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  });
  return Promise.resolve(fn())
    .finally(() => spy.mockRestore())
    .then(() => lines.map((l) => JSON.parse(l) as Record<string, unknown>));
}

describe('Logger', () => {
  beforeAll(() => setLogLevel('info'));

  it('writes one JSON object per line, with the trace and span of the active span', async () => {
    const log = new Logger('test');
    let traceId = '';
    const lines = await capture(async () => {
      log.info('outside');
      await inSpan('load', {}, async (span) => {
        traceId = span.spanContext().traceId;
        log.warn('inside', { document_id: 'd1' });
      });
    });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 'info', component: 'test', msg: 'outside' });
    expect(lines[0]).not.toHaveProperty('trace_id');
    expect(lines[1]).toMatchObject({ level: 'warn', msg: 'inside', document_id: 'd1', trace_id: traceId });
    expect(lines[1]!.span_id).toMatch(/^[0-9a-f]{16}$/);
  });

  it('keeps the line format: ts as ISO time, level names, child components, no pid/hostname', async () => {
    const [line] = await capture(() => new Logger('bus').child('kafkajs').error('broker down', { attempt: 2 }));
    expect(Object.keys(line!).sort()).toEqual(['attempt', 'component', 'level', 'msg', 'ts']);
    expect(line).toMatchObject({ level: 'error', component: 'bus.kafkajs', msg: 'broker down', attempt: 2 });
    expect(new Date(line!.ts as string).toISOString()).toBe(line!.ts);
  });

  it('writes errors in fields as {name, message}', async () => {
    const [line] = await capture(() => new Logger('test').warn('failed', { error: new TypeError('bad input'), stage: 'load' }));
    expect(line).toMatchObject({ error: { name: 'TypeError', message: 'bad input' }, stage: 'load' });
  });

  it('drops lines under the level', async () => {
    setLogLevel('warn');
    const lines = await capture(() => new Logger('test').info('quiet'));
    setLogLevel('info');
    expect(lines).toHaveLength(0);
  });

  it('applies a level change to loggers that already wrote lines (module-level loggers)', async () => {
    const early = new Logger('early');
    const before = await capture(() => early.debug('hidden at info'));
    setLogLevel('debug');
    const during = await capture(() => early.debug('shown at debug'));
    setLogLevel('silent');
    const silent = await capture(() => early.error('nothing at silent'));
    setLogLevel('info');
    expect(before).toHaveLength(0);
    expect(during).toMatchObject([{ level: 'debug', msg: 'shown at debug', component: 'early' }]);
    expect(silent).toHaveLength(0);
    expect(logLevel()).toBe('info');
  });

  it('reads RAG_LOG_LEVEL and refuses unknown levels in setLogLevel', () => {
    expect(logLevelFromEnv({ RAG_LOG_LEVEL: 'debug' })).toBe('debug');
    expect(logLevelFromEnv({ RAG_LOG_LEVEL: ' WARN ' })).toBe('warn');
    expect(logLevelFromEnv({})).toBe('info');
    // The configuration refuses it (loadConfig); the logger, created before, logs at info meanwhile.
    expect(logLevelFromEnv({ RAG_LOG_LEVEL: 'verbose' })).toBe('info');
    expect(() => setLogLevel('loud' as never)).toThrow(/loud is not one of debug, info, warn, error, silent/);
    expect(logLevel()).toBe('info');
  });
});

@Injectable()
class Probe implements OnModuleInit {
  private readonly log = new NestCommonLogger('Probe');
  onModuleInit(): void {
    this.log.warn('cache is cold');
    this.log.log('warming up');
    this.log.error('warm-up failed', new Error('disk full').stack);
    this.log.error(new RangeError('out of range'));
  }
}
@Module({ providers: [Probe] })
class ProbeModule {}

describe('NestLogger (Nest’s own logs through pino)', () => {
  const boot = () =>
    capture(async () => {
      const app = await NestFactory.createApplicationContext(ProbeModule, { logger: nestLogger, abortOnError: false });
      await app.close();
    });

  it('writes Nest’s warnings and errors as JSON lines of the `nest.<context>` component; its chatter only at debug', async () => {
    setLogLevel('info');
    const lines = await boot();
    expect(lines.map((l) => [l.level, l.component, l.msg])).toEqual([
      ['warn', 'nest.Probe', 'cache is cold'],
      ['error', 'nest.Probe', 'warm-up failed'],
      ['error', 'nest.Probe', 'out of range'],
    ]);
    expect(lines[1]!.stack).toMatch(/^Error: disk full\n\s+at /);
    expect(lines[2]).toMatchObject({ error: { name: 'RangeError', message: 'out of range' } });
  });

  it('passes Nest’s bootstrap lines (`log`) at debug', async () => {
    setLogLevel('debug');
    const lines = await boot();
    setLogLevel('info');
    expect(lines).toContainEqual(expect.objectContaining({ level: 'debug', component: 'nest.Probe', msg: 'warming up' }));
    expect(lines.some((l) => l.component === 'nest.InstanceLoader' && l.level === 'debug')).toBe(true);
  });
});
