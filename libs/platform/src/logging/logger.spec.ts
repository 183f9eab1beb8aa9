import { Logger, setLogLevel } from './logger';
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

  it('drops lines under the level', async () => {
    setLogLevel('warn');
    const lines = await capture(() => new Logger('test').info('quiet'));
    setLogLevel('info');
    expect(lines).toHaveLength(0);
  });
});
