import type { LoggerService } from '@nestjs/common';
import { Logger } from './logger';

/**
 * Nest's own logs (bootstrap, module init, route mapping, unhandled exceptions) through the platform's pino logger,
 * so they are JSON lines with the same level, `trace_id` and `span_id` as every other line. Every bootstrap passes it
 * as `logger` to NestFactory.create / createApplicationContext (from the first line, so nothing needs buffering).
 *
 * Levels: Nest's `log` and `verbose` lines are framework chatter ("Mapped {/v1/query, POST} route", "… dependencies
 * initialized"), logged at `debug` (the services used to print only Nest's warnings and errors); `warn`/`error` stay,
 * `fatal` is an `error` line with `fatal: true`.
 */
export class NestLogger implements LoggerService {
  private readonly loggers = new Map<string, Logger>();

  private logger(nestContext: string | undefined): Logger {
    const component = nestContext ? `nest.${nestContext}` : 'nest';
    let found = this.loggers.get(component);
    if (!found) this.loggers.set(component, (found = new Logger(component)));
    return found;
  }

  log(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params, true);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params, true, { fatal: true });
  }

  /**
   * Nest's calling convention (its ConsoleLogger's): the last string parameter is the context (the class that logs);
   * an error's first string parameter before it is a stack. Other parameters are kept under `params`.
   */
  private write(level: 'debug' | 'warn' | 'error', message: unknown, params: unknown[], isError = false, extra: Record<string, unknown> = {}): void {
    const rest = [...params];
    const nestContext = rest.length > 0 && typeof rest[rest.length - 1] === 'string' && (!isError || rest.length > 1 || !looksLikeStack(rest[0])) ? (rest.pop() as string) : undefined;
    const fields: Record<string, unknown> = { ...extra };
    if (isError && typeof rest[0] === 'string' && looksLikeStack(rest[0])) fields.stack = rest.shift();
    if (rest.length > 0 && rest.some((p) => p !== undefined)) fields.params = rest;
    let msg: string;
    if (message instanceof Error) {
      msg = message.message;
      fields.error = message;
      if (isError && !fields.stack && message.stack) fields.stack = message.stack;
    } else if (typeof message === 'string') {
      msg = message;
    } else {
      msg = typeof message === 'object' && message !== null ? JSON.stringify(message) : String(message);
    }
    this.logger(nestContext)[level](msg, fields);
  }
}

const looksLikeStack = (v: unknown): boolean => typeof v === 'string' && /\n\s+at /.test(v);

/** The Nest logger every bootstrap hands to NestFactory (one per process is enough; it holds no state but a cache). */
export const nestLogger = new NestLogger();
