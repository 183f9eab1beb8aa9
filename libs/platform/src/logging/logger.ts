/** Structured JSON-lines logger (one object per line on stderr), levels from RAG_LOG_LEVEL. */
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
    const line = { ts: new Date().toISOString(), level, component: this.component, msg, ...fields };
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
