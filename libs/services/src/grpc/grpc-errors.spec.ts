import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { z } from 'zod';
import { AppError, HTTP_STATUS, type ErrorCode } from '@rag/platform';
import { ERROR_CODE_TRAILER, fromGrpcError, grpcStatusOf, toGrpcStatus } from './grpc-errors';

const serviceError = (code: status, details: string, trailer?: string): ServiceError => {
  const metadata = new Metadata();
  if (trailer) metadata.set(ERROR_CODE_TRAILER, trailer);
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata });
};

describe('gRPC error mapping', () => {
  it('maps server-side AppError codes to statuses and carries the code in a trailer', () => {
    const cases: [ErrorCode, status][] = [
      ['invalid_request', status.INVALID_ARGUMENT],
      ['not_found', status.NOT_FOUND],
      ['unavailable', status.UNAVAILABLE],
      ['deadline_exceeded', status.DEADLINE_EXCEEDED],
      ['rate_limited', status.RESOURCE_EXHAUSTED],
      ['unauthorized', status.UNAUTHENTICATED],
      ['forbidden', status.PERMISSION_DENIED],
      ['internal', status.INTERNAL],
    ];
    for (const [code, st] of cases) {
      const s = toGrpcStatus(new AppError(code, 'why'));
      expect(s.code).toBe(st);
      expect(s.details).toBe('why');
      expect(s.metadata.get(ERROR_CODE_TRAILER)).toEqual([code]);
      expect(grpcStatusOf(code)).toBe(st);
    }
    expect(toGrpcStatus(new Error('boom')).code).toBe(status.INTERNAL);
    const zod = z.object({ a: z.string() }).safeParse({ a: 1 });
    expect(toGrpcStatus(zod.error).code).toBe(status.INVALID_ARGUMENT);
  });

  it('maps client-side statuses to AppError codes the gateway turns into HTTP errors', () => {
    const cases: [status, ErrorCode, number][] = [
      [status.UNAVAILABLE, 'unavailable', 503],
      [status.DEADLINE_EXCEEDED, 'deadline_exceeded', 504],
      [status.INVALID_ARGUMENT, 'invalid_request', 400],
      [status.NOT_FOUND, 'not_found', 404],
      [status.UNKNOWN, 'internal', 500],
      [status.CANCELLED, 'internal', 500],
    ];
    for (const [st, code, http] of cases) {
      const e = fromGrpcError(serviceError(st, 'details'), 'retriever.Retrieve');
      expect(e).toBeInstanceOf(AppError);
      expect(e.code).toBe(code);
      expect(HTTP_STATUS[e.code]).toBe(http);
      expect(e.message).toBe('retriever.Retrieve: details');
    }
  });

  it("prefers the server's own code from the trailer and ignores unknown ones", () => {
    expect(fromGrpcError(serviceError(status.RESOURCE_EXHAUSTED, 'too big', 'payload_too_large'), 'x').code).toBe('payload_too_large');
    expect(fromGrpcError(serviceError(status.UNAVAILABLE, 'down', 'made_up'), 'x').code).toBe('unavailable');
    expect(fromGrpcError(new Error('weird'), 'x').code).toBe('internal');
    const own = new AppError('conflict', 'kept');
    expect(fromGrpcError(own, 'x')).toBe(own);
  });
});
