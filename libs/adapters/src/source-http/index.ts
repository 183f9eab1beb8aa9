export { SourceHttpClient, retryAfterMs, type SourceHttpOptions, type HttpOutcome } from './source-http.client';
