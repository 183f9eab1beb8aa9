import { Metadata, status, type ServiceError, type StatusObject } from '@grpc/grpc-js';
import { Catch, type RpcExceptionFilter } from '@nestjs/common';
import { throwError, type Observable } from 'rxjs';
import { ZodError } from 'zod';
import { AppError, Logger, type ErrorCode } from '@rag/platform';

/** Trailer carrying the AppError code, so a client restores the exact code (gRPC statuses are coarser). */
export const ERROR_CODE_TRAILER = 'x-rag-error-code';

const TO_GRPC: Record<ErrorCode, status> = {
  invalid_request: status.INVALID_ARGUMENT,
  unsupported_media_type: status.INVALID_ARGUMENT,
  payload_too_large: status.RESOURCE_EXHAUSTED,
  not_found: status.NOT_FOUND,
  unauthorized: status.UNAUTHENTICATED,
  forbidden: status.PERMISSION_DENIED,
  rate_limited: status.RESOURCE_EXHAUSTED,
  conflict: status.ALREADY_EXISTS,
  unavailable: status.UNAVAILABLE,
  deadline_exceeded: status.DEADLINE_EXCEEDED,
  internal: status.INTERNAL,
};

const FROM_GRPC: Partial<Record<status, ErrorCode>> = {
  [status.INVALID_ARGUMENT]: 'invalid_request',
  [status.OUT_OF_RANGE]: 'invalid_request',
  [status.FAILED_PRECONDITION]: 'invalid_request',
  [status.NOT_FOUND]: 'not_found',
  [status.UNAUTHENTICATED]: 'unauthorized',
  [status.PERMISSION_DENIED]: 'forbidden',
  [status.RESOURCE_EXHAUSTED]: 'rate_limited',
  [status.ALREADY_EXISTS]: 'conflict',
  [status.ABORTED]: 'conflict',
  [status.UNAVAILABLE]: 'unavailable',
  [status.DEADLINE_EXCEEDED]: 'deadline_exceeded',
};

const ERROR_CODES = new Set<string>(Object.keys(TO_GRPC));
const isErrorCode = (v: string): v is ErrorCode => ERROR_CODES.has(v);

export const grpcStatusOf = (code: ErrorCode): status => TO_GRPC[code];

/** Server side: any thrown value as a gRPC status; AppError codes map to their status, validation to INVALID_ARGUMENT. */
export function toGrpcStatus(e: unknown): Partial<StatusObject> & { code: status; details: string; metadata: Metadata } {
  const metadata = new Metadata();
  let code: ErrorCode;
  let details: string;
  if (e instanceof AppError) {
    code = e.code;
    details = e.message;
  } else if (e instanceof ZodError) {
    code = 'invalid_request';
    details = e.issues.map((i) => `${i.path.join('.') || 'request'}: ${i.message}`).join('; ');
  } else {
    code = 'internal';
    details = e instanceof Error ? e.message : String(e);
  }
  metadata.set(ERROR_CODE_TRAILER, code);
  return { code: TO_GRPC[code], details, metadata };
}

export const isServiceError = (e: unknown): e is ServiceError =>
  e instanceof Error && typeof (e as Partial<ServiceError>).code === 'number' && (e as Partial<ServiceError>).metadata instanceof Metadata;

/**
 * Client side: a failed call as an AppError the gateway maps to HTTP (UNAVAILABLE → 503 `unavailable`,
 * DEADLINE_EXCEEDED → 504 `deadline_exceeded`, INVALID_ARGUMENT → 400 `invalid_request`, …). The server's own code
 * from the trailer wins when present.
 */
export function fromGrpcError(e: unknown, what: string): AppError {
  if (e instanceof AppError) return e;
  if (!isServiceError(e)) return new AppError('internal', `${what}: ${e instanceof Error ? e.message : String(e)}`);
  const trailer = e.metadata.get(ERROR_CODE_TRAILER)[0];
  const fromTrailer = typeof trailer === 'string' && isErrorCode(trailer) ? trailer : undefined;
  const code = fromTrailer ?? FROM_GRPC[e.code as status] ?? 'internal';
  return new AppError(code, `${what}: ${e.details || e.message}`, { grpc_status: status[e.code] ?? e.code });
}

const log = new Logger('grpc');

/**
 * The exception filter of the query-path gRPC controllers: whatever a handler throws (or its Observable errors with)
 * leaves as a gRPC status — Transport.GRPC hands the object to grpc-js, so code, details and the code trailer reach
 * the client. Without it Nest's default RPC filter would answer every failure as UNKNOWN "Internal server error".
 */
@Catch()
export class GrpcErrorFilter implements RpcExceptionFilter<unknown> {
  catch(e: unknown): Observable<never> {
    const st = toGrpcStatus(e);
    if (st.code === status.INTERNAL) log.error('rpc failed', { error: e });
    else log.debug('rpc rejected', { code: status[st.code], details: st.details });
    return throwError(() => st);
  }
}
