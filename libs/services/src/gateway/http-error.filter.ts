import { ArgumentsHost, Catch, HttpException, type ExceptionFilter } from '@nestjs/common';
import type { Response } from 'express';
import { StoreCorruptError, isCorruptionCode } from '@rag/adapters';
import { AppError, HTTP_STATUS, Logger } from '@rag/platform';
import type { ApiErrorBody } from '@rag/contracts';

const CODE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'unavailable',
  504: 'deadline_exceeded',
};

/** Every error leaves as JSON `{error:{code, message, details?}}` with the right status; the server keeps serving. */
@Catch()
export class HttpErrorFilter implements ExceptionFilter {
  private readonly log = new Logger('gateway');

  catch(exception: unknown, host: ArgumentsHost): void {
    const res = host.switchToHttp().getResponse<Response>();
    const [status, body] = this.map(exception);
    if (status >= 500) this.log.error('request failed', { status, error: exception });
    if (res.headersSent) {
      res.end();
      return;
    }
    res.status(status).json(body);
  }

  private map(e: unknown): [number, ApiErrorBody] {
    // A damaged store file (SQLITE_CORRUPT, SQLITE_NOTADB): 503 naming the file, not a 500. The SQLite opener turns
    // these into StoreCorruptError; a bare SQLite error of such a code (from a handle it did not open) still maps here.
    if (e instanceof StoreCorruptError) {
      return [503, { error: { code: 'store_corrupt', message: e.message, details: { store: e.file, sqlite_code: e.sqliteCode } } }];
    }
    const sqliteCode = (e as { code?: unknown } | null)?.code;
    if (e instanceof Error && isCorruptionCode(sqliteCode)) {
      return [503, { error: { code: 'store_corrupt', message: `a store file is damaged (${sqliteCode}: ${e.message})`, details: { sqlite_code: sqliteCode } } }];
    }
    if (e instanceof AppError) {
      return [HTTP_STATUS[e.code], { error: { code: e.code, message: e.message, ...(e.details !== undefined ? { details: e.details } : {}) } }];
    }
    if (e instanceof HttpException) {
      const status = e.getStatus();
      const r = e.getResponse();
      let message = typeof r === 'string' ? r : ((r as { message?: unknown }).message ?? e.message);
      if (Array.isArray(message)) message = message.join('; ');
      if (status === 413) message = `request body is too large: ${String(message)}`;
      return [status, { error: { code: CODE_BY_STATUS[status] ?? (status >= 500 ? 'internal' : 'invalid_request'), message: String(message) } }];
    }
    // body-parser errors (malformed JSON, too large) carry a status and a type.
    const be = e as { status?: number; type?: string; message?: string };
    if (typeof be?.status === 'number' && be.status >= 400 && be.status < 500) {
      const message =
        be.type === 'entity.parse.failed'
          ? `malformed JSON body: ${be.message ?? ''}`
          : be.type === 'entity.too.large'
            ? `request body is larger than the limit`
            : (be.message ?? 'bad request');
      return [be.status, { error: { code: CODE_BY_STATUS[be.status] ?? 'invalid_request', message } }];
    }
    return [500, { error: { code: 'internal', message: 'internal error' } }];
  }
}
