import { context, trace } from '@opentelemetry/api';
import { pino, type Logger as PinoLogger } from 'pino';

/**
 * Structured JSON-lines logging on pino: one object per line on stderr (`ts`, `level`, `component`, `msg`, fields),
 * level from RAG_LOG_LEVEL (or `setLogLevel`). A line written inside a span carries its `trace_id` and `span_id`
 * (pino's `mixin`), so logs and traces of one request or ingestion join up. `Logger` keeps the platform's small API
 * (`new Logger('component').info(msg, fields)`) over one root pino logger; `NestLogger` (./nest-logger.ts) routes
 * Nest's own lines through the same root.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error', 'silent'];

const isLogLevel = (v: unknown): v is LogLevel => typeof v === 'string' && (LOG_LEVELS as readonly string[]).includes(v);

/**
 * The level RAG_LOG_LEVEL names. An unknown value logs at `info` here (the logger exists before the configuration
 * is read); loadConfig then refuses it with the list of valid levels, so the process does not start on a typo.
 */
export const logLevelFromEnv = (env: NodeJS.ProcessEnv = process.env): LogLevel => {
  const raw = env.RAG_LOG_LEVEL?.trim().toLowerCase();
  return isLogLevel(raw) ? raw : 'info';
};

/** Error values become `{name, message}` (their own fields are not enumerable; stacks may hold user data). */
function plainErrors(fields: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const key in fields) {
    const value = fields[key];
    if (value instanceof Error) {
      out ??= { ...fields };
      out[key] = { name: value.name, message: value.message };
    }
  }
  return out ?? fields;
}

function traceIds(): Record<string, string> {
  const sc = trace.getSpanContext(context.active());
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/**
 * The process's root pino logger. Its destination looks `process.stderr.write` up on every line (rather than pino's
 * own file-descriptor writer), so lines keep their order with everything else the process writes to stderr and tests
 * can capture them by spying on process.stderr.
 */
export const rootLogger: PinoLogger = pino(
  {
    level: logLevelFromEnv(),
    base: undefined, // no pid/hostname on every line: the collector's resource attributes say where a line came from
    messageKey: 'msg',
    timestamp: () => `,"ts":"${new Date().toISOString()}"`,
    formatters: { level: (label) => ({ level: label }), log: plainErrors },
    mixin: traceIds,
  },
  { write: (line: string) => process.stderr.write(line) },
);

/** Sets the level of every Logger (pino children without a level of their own follow their parent's). */
export function setLogLevel(level: LogLevel): void {
  if (!isLogLevel(level)) throw new Error(`log level ${String(level)} is not one of ${LOG_LEVELS.join(', ')}`);
  rootLogger.level = level;
}

export const logLevel = (): LogLevel => rootLogger.level as LogLevel;

export class Logger {
  private readonly out: PinoLogger;

  constructor(private readonly component: string) {
    this.out = rootLogger.child({ component });
  }

  child(component: string): Logger {
    return new Logger(`${this.component}.${component}`);
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.out.debug(fields ?? {}, msg);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.out.info(fields ?? {}, msg);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.out.warn(fields ?? {}, msg);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.out.error(fields ?? {}, msg);
  }
}
