export { SourceHttpClient, type SourceHttpOptions, type HttpOutcome } from './source-http.client';
