export { HttpEmbedder, type HttpEmbedderOptions } from './http-embedder.adapter';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './http-client';
