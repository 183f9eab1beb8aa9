import { context, trace } from '@opentelemetry/api';

/**
 * Structured JSON-lines logger (one object per line on stderr), levels from RAG_LOG_LEVEL. A line written inside a
 * span carries its `trace_id` and `span_id`, so logs and traces of one request or ingestion join up.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error' | 'silent';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

let globalLevel: LogLevel = (process.env.RAG_LOG_LEVEL as LogLevel) in ORDER ? (process.env.RAG_LOG_LEVEL as LogLevel) : 'info';

export function setLogLevel(level: LogLevel): void {
  globalLevel = level;
}

export class Logger {
  constructor(private readonly component: string) {}

  child(component: string): Logger {
    return new Logger(`${this.component}.${component}`);
  }

  private write(level: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>): void {
    if (ORDER[level] < ORDER[globalLevel]) return;
    const sc = trace.getSpanContext(context.active());
    const ids = sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
    const line = { ts: new Date().toISOString(), level, component: this.component, msg, ...ids, ...fields };
    process.stderr.write(JSON.stringify(line, errorReplacer) + '\n');
  }

  debug(msg: string, fields?: Record<string, unknown>): void {
    this.write('debug', msg, fields);
  }
  info(msg: string, fields?: Record<string, unknown>): void {
    this.write('info', msg, fields);
  }
  warn(msg: string, fields?: Record<string, unknown>): void {
    this.write('warn', msg, fields);
  }
  error(msg: string, fields?: Record<string, unknown>): void {
    this.write('error', msg, fields);
  }
}

function errorReplacer(_key: string, value: unknown): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  return value;
}
